// CUDA kernels of the normalizations (kernels/stubs/nn_norm.h), with the CPU kernels'
// arithmetic (backends/cpu/nn_norm.cpp): statistics accumulated in double, the
// elementwise formulas in opmath_t (float for 16-bit floats) with the CPU's rounding
// (products and sums written with __fmul_rn / __fadd_rn and friends, which nvcc does not
// contract into FMAs, so float32 / float64 results match the CPU's bit for bit up to the
// order of the double sums).
//  * row_norm (layer / group / instance norm): rows of the contiguous (R, L) input, one
//    warp per row when L <= kWarpRowMax (8 rows per block), else one block per row;
//    two passes (mean, then centered squares) as the CPU, then the write pass.
//  * row_norm_backward: gx by the same row layout (two sums per row, then the write);
//    gw / gb, column sums over the rows, deterministically in two kernels: blocks of
//    32 columns x 8 row lanes sum a chunk of rows each into a double partial
//    [chunks, L] (fixed order in shared memory), then one thread per column adds the
//    chunks in order. No atomics: the same result every run.
//  * channel_stats / channel_grad_sums (batch norm): one block per channel striding
//    over the (N, S) positions of the contiguous (N, C, S) input, block reductions in
//    double (reduce.cuh); channel_stats is two-pass like the CPU.
//  * channel_affine: a grid-stride elementwise kernel over (N, C, S), the channel of an
//    element from its flat index (32-bit index math when the tensor allows).
#include <cuda_runtime.h>

#include "ember/backends/cuda/reduce.cuh"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/registration.h"
#include "ember/kernels/stubs/nn_norm.h"

namespace ember::cuda {
namespace {

constexpr int64_t kWarpRowMax = 1024;  // rows up to this length take one warp each
constexpr int kRowsPerBlock = 8;       // warps (rows) per block in the warp layout

// Correctly rounded float / double arithmetic that nvcc never fuses into an FMA (the
// CPU build has none), so the elementwise results round as the CPU's.
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }

struct AddD {
  using acc_t = double;
  __device__ double init() const { return 0.0; }
  __device__ double combine(double a, double b) const { return a + b; }
};
struct AddD2 {
  using acc_t = double2;
  __device__ double2 init() const { return make_double2(0.0, 0.0); }
  __device__ double2 combine(double2 a, double2 b) const {
    return make_double2(a.x + b.x, a.y + b.y);
  }
};

/// The sum of every thread's `v` over the row's threads (the warp, or the whole block),
/// returned to each of them.
template <bool kWarp>
__device__ __forceinline__ double row_sum(double v, double* smem) {
  if constexpr (kWarp) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
  } else {
    v = block_reduce(v, AddD{}, smem);
    __shared__ double result;
    if (threadIdx.x == 0) result = v;
    __syncthreads();
    v = result;
    __syncthreads();  // `result` is rewritten by the next call
    return v;
  }
}

// The row layout: the first row, the row step, the lane and the lane step of this thread.
template <bool kWarp>
struct RowLayout {
  int64_t first, step;
  int lane, lanes;
  __device__ RowLayout() {
    if constexpr (kWarp) {
      const int warps = int(blockDim.x) >> 5;
      first = int64_t(blockIdx.x) * warps + (threadIdx.x >> 5);
      step = int64_t(gridDim.x) * warps;
      lane = int(threadIdx.x) & 31;
      lanes = 32;
    } else {
      first = blockIdx.x;
      step = gridDim.x;
      lane = int(threadIdx.x);
      lanes = int(blockDim.x);
    }
  }
};

template <typename T, bool kWarp>
__global__ void row_norm_kernel(T* __restrict__ y, T* __restrict__ mean, T* __restrict__ rstd,
                                const T* __restrict__ x, const T* __restrict__ w,
                                const T* __restrict__ b, int64_t R, int64_t L, double eps) {
  using A = opmath_t<T>;
  __shared__ double smem[32];
  const RowLayout<kWarp> rl;
  for (int64_t r = rl.first; r < R; r += rl.step) {
    const T* row = x + r * L;
    double s = 0;
    for (int64_t j = rl.lane; j < L; j += rl.lanes) s += double(row[j]);
    const double mu = row_sum<kWarp>(s, smem) / double(L);
    double q = 0;
    for (int64_t j = rl.lane; j < L; j += rl.lanes) {
      const double d = double(row[j]) - mu;
      q += d * d;
    }
    const double rs = 1.0 / sqrt(row_sum<kWarp>(q, smem) / double(L) + eps);
    if (rl.lane == 0) {
      mean[r] = T(mu);
      rstd[r] = T(rs);
    }
    const A amu = A(mu), ars = A(rs);
    T* out = y + r * L;
    for (int64_t j = rl.lane; j < L; j += rl.lanes) {
      A v = mul_rn(sub_rn(A(row[j]), amu), ars);
      if (w) v = mul_rn(v, A(w[j]));
      if (b) v = add_rn(v, A(b[j]));
      out[j] = T(v);
    }
  }
}

// gx[r] = rs * (gh - mean(gh) - xhat * mean(gh * xhat)), gh = g * w (g without w).
template <typename T, bool kWarp>
__global__ void row_norm_bwd_kernel(T* __restrict__ gx, const T* __restrict__ g,
                                    const T* __restrict__ x, const T* __restrict__ mean,
                                    const T* __restrict__ rstd, const T* __restrict__ w, int64_t R,
                                    int64_t L) {
  using A = opmath_t<T>;
  __shared__ double smem[32];
  const RowLayout<kWarp> rl;
  for (int64_t r = rl.first; r < R; r += rl.step) {
    const T* xr = x + r * L;
    const T* gr = g + r * L;
    const A mu = A(mean[r]), rs = A(rstd[r]);
    double sg = 0, sgx = 0;
    for (int64_t j = rl.lane; j < L; j += rl.lanes) {
      const A gh = w ? mul_rn(A(gr[j]), A(w[j])) : A(gr[j]);
      sg += double(gh);
      sgx += double(mul_rn(mul_rn(gh, sub_rn(A(xr[j]), mu)), rs));
    }
    sg = row_sum<kWarp>(sg, smem);
    sgx = row_sum<kWarp>(sgx, smem);
    const A mg = A(sg / double(L)), mgx = A(sgx / double(L));
    T* out = gx + r * L;
    for (int64_t j = rl.lane; j < L; j += rl.lanes) {
      const A gh = w ? mul_rn(A(gr[j]), A(w[j])) : A(gr[j]);
      const A xh = mul_rn(mul_rn(sub_rn(A(xr[j]), mu), rs), mgx);
      out[j] = T(mul_rn(rs, sub_rn(sub_rn(gh, mg), xh)));
    }
  }
}

constexpr int kColTile = 32, kColLanes = 8;

// partial[c, j] (and partial[chunks + c, j]) = the sums over rows of chunk c of
// g * xhat (for gw) and g (for gb), each a double of the opmath value, as the CPU.
template <typename T>
__global__ void row_norm_colsum_kernel(double* __restrict__ partial, const T* __restrict__ g,
                                       const T* __restrict__ x, const T* __restrict__ mean,
                                       const T* __restrict__ rstd, int64_t R, int64_t L,
                                       int64_t chunks) {
  using A = opmath_t<T>;
  __shared__ double sw[kColLanes][kColTile], sb[kColLanes][kColTile];
  const int64_t j = int64_t(blockIdx.x) * kColTile + threadIdx.x;
  for (int64_t c = blockIdx.y; c < chunks; c += gridDim.y) {
    const int64_t r0 = c * R / chunks, r1 = (c + 1) * R / chunks;
    double aw = 0, ab = 0;
    if (j < L) {
      for (int64_t r = r0 + threadIdx.y; r < r1; r += kColLanes) {
        const A mu = A(mean[r]), rs = A(rstd[r]);
        const A gv = A(g[r * L + j]);
        aw += double(mul_rn(mul_rn(gv, sub_rn(A(x[r * L + j]), mu)), rs));
        ab += double(gv);
      }
    }
    sw[threadIdx.y][threadIdx.x] = aw;
    sb[threadIdx.y][threadIdx.x] = ab;
    __syncthreads();
    if (threadIdx.y == 0 && j < L) {
      for (int k = 1; k < kColLanes; ++k) {
        aw += sw[k][threadIdx.x];
        ab += sb[k][threadIdx.x];
      }
      partial[c * L + j] = aw;
      partial[(chunks + c) * L + j] = ab;
    }
    __syncthreads();
  }
}

template <typename T>
__global__ void row_norm_colfinish_kernel(T* __restrict__ gw, T* __restrict__ gb,
                                          const double* __restrict__ partial, int64_t L,
                                          int64_t chunks) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < L; j += step) {
    double aw = 0, ab = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      aw += partial[c * L + j];
      ab += partial[(chunks + c) * L + j];
    }
    if (gw) gw[j] = T(aw);
    if (gb) gb[j] = T(ab);
  }
}

// Per channel c of (N, C, S): threads stride over the (n, s) positions; `f(v, p)` is
// applied to every element pointer p of the channel and accumulates into v.
template <typename T, typename Acc, typename F>
__device__ __forceinline__ void channel_walk(int64_t N, int64_t C, int64_t S, int64_t c, Acc& v,
                                             F f) {
  if (S >= int64_t(blockDim.x)) {
    for (int64_t n = 0; n < N; ++n) {
      const int64_t base = (n * C + c) * S;
      for (int64_t s = threadIdx.x; s < S; s += blockDim.x) f(v, base + s);
    }
  } else {
    const int64_t M = N * S;
    for (int64_t i = threadIdx.x; i < M; i += blockDim.x) {
      const int64_t n = i / S;
      f(v, (n * C + c) * S + (i - n * S));
    }
  }
}

template <typename T>
__global__ void channel_stats_kernel(T* __restrict__ mean, T* __restrict__ var,
                                     const T* __restrict__ x, int64_t N, int64_t C, int64_t S) {
  __shared__ double smem[32];
  __shared__ double mu_s;
  const double count = double(N) * double(S);
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    double s = 0;
    channel_walk<T>(N, C, S, c, s, [&](double& v, int64_t k) { v += double(x[k]); });
    s = block_reduce(s, AddD{}, smem);
    if (threadIdx.x == 0) mu_s = count > 0 ? s / count : 0;
    __syncthreads();
    const double mu = mu_s;
    double q = 0;
    channel_walk<T>(N, C, S, c, q, [&](double& v, int64_t k) {
      const double d = double(x[k]) - mu;
      v += d * d;
    });
    q = block_reduce(q, AddD{}, smem);
    if (threadIdx.x == 0) {
      mean[c] = T(mu);
      var[c] = T(count > 0 ? q / count : 0);
    }
    __syncthreads();  // mu_s is rewritten for the next channel
  }
}

template <typename T>
__global__ void channel_grad_sums_kernel(T* __restrict__ sum_g, T* __restrict__ sum_dot,
                                         const T* __restrict__ g, const T* __restrict__ x,
                                         const T* __restrict__ mean, int64_t N, int64_t C,
                                         int64_t S) {
  __shared__ double2 smem[32];
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    const double mu = double(mean[c]);
    double2 a = make_double2(0.0, 0.0);
    channel_walk<T>(N, C, S, c, a, [&](double2& v, int64_t k) {
      const double gv = double(g[k]);
      v.x += gv;
      v.y += gv * (double(x[k]) - mu);
    });
    a = block_reduce(a, AddD2{}, smem);
    if (threadIdx.x == 0) {
      sum_g[c] = T(a.x);
      sum_dot[c] = T(a.y);
    }
  }
}

template <typename T, typename I>
__global__ void channel_affine_kernel(T* __restrict__ out, const T* __restrict__ p,
                                      const T* __restrict__ a, const T* __restrict__ q,
                                      const T* __restrict__ b, const T* __restrict__ cc, I n, I C,
                                      I S) {
  using A = opmath_t<T>;
  const I step = I(blockDim.x) * I(gridDim.x);
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n; i += step) {
    const I ch = (i / S) % C;
    A v = mul_rn(A(p[i]), A(a[ch]));
    if (q) v = add_rn(v, mul_rn(A(q[i]), A(b[ch])));
    out[i] = T(add_rn(v, A(cc[ch])));
  }
}

int row_threads(int64_t n) {
  return n >= 512 ? 512 : int(std::max<int64_t>(32, (n + 31) / 32 * 32));
}
unsigned capped(int64_t blocks, int64_t cap = int64_t(1) << 20) {
  return unsigned(std::max<int64_t>(1, std::min<int64_t>(blocks, cap)));
}

template <typename T>
const T* cptr(const Tensor& t) {
  return t.defined() ? reinterpret_cast<const T*>(t.data_ptr()) : nullptr;
}
template <typename T>
T* mptr(const Tensor& t) {
  return t.defined() ? reinterpret_cast<T*>(t.data_ptr()) : nullptr;
}

void check_contig(const Tensor& t, int64_t n, const char* op, const char* what) {
  EMBER_CHECK(!t.defined() || (t.is_contiguous() && t.numel() == n), op, " (CUDA): expected ", what,
              " contiguous with ", n, " elements");
}

void row_norm(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
              const Tensor& w, const Tensor& b, double eps) {
  const char* op = "layer_norm";
  const int64_t R = x.sizes()[0], L = x.sizes()[1];
  check_contig(x, R * L, op, "x");
  check_contig(y, R * L, op, "y");
  check_contig(mean, R, op, "mean");
  check_contig(rstd, R, op, "rstd");
  check_contig(w, L, op, "weight");
  check_contig(b, L, op, "bias");
  if (R == 0 || L == 0) return;
  dispatch_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (L <= kWarpRowMax) {
      row_norm_kernel<T, true><<<capped((R + kRowsPerBlock - 1) / kRowsPerBlock),
                                 32 * kRowsPerBlock, 0, current_stream()>>>(
          mptr<T>(y), mptr<T>(mean), mptr<T>(rstd), cptr<T>(x), cptr<T>(w), cptr<T>(b), R, L, eps);
    } else {
      row_norm_kernel<T, false><<<capped(R), row_threads(L), 0, current_stream()>>>(
          mptr<T>(y), mptr<T>(mean), mptr<T>(rstd), cptr<T>(x), cptr<T>(w), cptr<T>(b), R, L, eps);
    }
  });
  EMBER_CUDA_CHECK(cudaGetLastError());
}

void row_norm_backward(const Tensor& gx, const Tensor& gw, const Tensor& gb, const Tensor& g,
                       const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& w) {
  const char* op = "layer_norm_backward";
  const int64_t R = x.sizes()[0], L = x.sizes()[1];
  check_contig(x, R * L, op, "x");
  check_contig(g, R * L, op, "grad");
  check_contig(gx, R * L, op, "grad_input");
  check_contig(mean, R, op, "mean");
  check_contig(rstd, R, op, "rstd");
  check_contig(w, L, op, "weight");
  check_contig(gw, L, op, "grad_weight");
  check_contig(gb, L, op, "grad_bias");
  if (L == 0) return;
  const bool sums = gw.defined() || gb.defined();
  dispatch_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    cudaStream_t stream = current_stream();
    if (gx.defined() && R > 0) {
      if (L <= kWarpRowMax) {
        row_norm_bwd_kernel<T, true>
            <<<capped((R + kRowsPerBlock - 1) / kRowsPerBlock), 32 * kRowsPerBlock, 0, stream>>>(
                mptr<T>(gx), cptr<T>(g), cptr<T>(x), cptr<T>(mean), cptr<T>(rstd), cptr<T>(w), R,
                L);
      } else {
        row_norm_bwd_kernel<T, false><<<capped(R), row_threads(L), 0, stream>>>(
            mptr<T>(gx), cptr<T>(g), cptr<T>(x), cptr<T>(mean), cptr<T>(rstd), cptr<T>(w), R, L);
      }
      EMBER_CUDA_CHECK(cudaGetLastError());
    }
    if (!sums) return;
    // Chunks of at least 32 rows, about 2048 blocks in all (the grid's y is capped too).
    const int64_t tiles = (L + kColTile - 1) / kColTile;
    const int64_t chunks =
        std::max<int64_t>(1, std::min<int64_t>((R + 31) / 32, std::max<int64_t>(1, 2048 / tiles)));
    Tensor partial = empty(Shape{2 * chunks * L}, DType::Float64, x.device());
    double* pp = reinterpret_cast<double*>(partial.data_ptr());
    const dim3 grid(unsigned(tiles), capped(chunks, 65535));
    row_norm_colsum_kernel<T><<<grid, dim3(kColTile, kColLanes), 0, stream>>>(
        pp, cptr<T>(g), cptr<T>(x), cptr<T>(mean), cptr<T>(rstd), R, L, chunks);
    EMBER_CUDA_CHECK(cudaGetLastError());
    row_norm_colfinish_kernel<T>
        <<<capped((L + 255) / 256), 256, 0, stream>>>(mptr<T>(gw), mptr<T>(gb), pp, L, chunks);
    EMBER_CUDA_CHECK(cudaGetLastError());
  });
}

void channel_stats(const Tensor& mean, const Tensor& var, const Tensor& x) {
  const char* op = "batch_norm";
  const int64_t N = x.sizes()[0], C = x.sizes()[1], S = x.sizes()[2];
  check_contig(x, N * C * S, op, "input");
  check_contig(mean, C, op, "mean");
  check_contig(var, C, op, "var");
  if (C == 0) return;
  dispatch_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    channel_stats_kernel<T><<<capped(C), row_threads(N * S), 0, current_stream()>>>(
        mptr<T>(mean), mptr<T>(var), cptr<T>(x), N, C, S);
  });
  EMBER_CUDA_CHECK(cudaGetLastError());
}

void channel_grad_sums(const Tensor& sum_g, const Tensor& sum_dot, const Tensor& g, const Tensor& x,
                       const Tensor& mean) {
  const char* op = "batch_norm_backward";
  const int64_t N = x.sizes()[0], C = x.sizes()[1], S = x.sizes()[2];
  check_contig(x, N * C * S, op, "input");
  check_contig(g, N * C * S, op, "grad");
  check_contig(mean, C, op, "mean");
  check_contig(sum_g, C, op, "sum_g");
  check_contig(sum_dot, C, op, "sum_dot");
  if (C == 0) return;
  dispatch_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    channel_grad_sums_kernel<T><<<capped(C), row_threads(N * S), 0, current_stream()>>>(
        mptr<T>(sum_g), mptr<T>(sum_dot), cptr<T>(g), cptr<T>(x), cptr<T>(mean), N, C, S);
  });
  EMBER_CUDA_CHECK(cudaGetLastError());
}

void channel_affine(const Tensor& out, const Tensor& p, const Tensor& a, const Tensor& q,
                    const Tensor& b, const Tensor& c) {
  const char* op = "batch_norm";
  const int64_t N = p.sizes()[0], C = p.sizes()[1], S = p.sizes()[2];
  const int64_t n = N * C * S;
  check_contig(p, n, op, "input");
  check_contig(out, n, op, "output");
  check_contig(q, n, op, "second input");
  check_contig(a, C, op, "scale");
  check_contig(b, C, op, "second scale");
  check_contig(c, C, op, "shift");
  EMBER_CHECK(!q.defined() || b.defined(), op, " (CUDA): a second input needs its scale");
  if (n == 0) return;
  dispatch_floating(p.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const unsigned blocks = capped((n + 255) / 256, int64_t(1) << 16);
    if (n <= int64_t(INT32_MAX)) {
      channel_affine_kernel<T, uint32_t><<<blocks, 256, 0, current_stream()>>>(
          mptr<T>(out), cptr<T>(p), cptr<T>(a), cptr<T>(q), cptr<T>(b), cptr<T>(c), uint32_t(n),
          uint32_t(C), uint32_t(S));
    } else {
      channel_affine_kernel<T, int64_t><<<blocks, 256, 0, current_stream()>>>(
          mptr<T>(out), cptr<T>(p), cptr<T>(a), cptr<T>(q), cptr<T>(b), cptr<T>(c), n, C, S);
    }
  });
  EMBER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, nn_norm) {
  constexpr int cuda = int(DeviceType::CUDA);
  row_norm_stub.fns[cuda] = &row_norm;
  row_norm_backward_stub.fns[cuda] = &row_norm_backward;
  channel_stats_stub.fns[cuda] = &channel_stats;
  channel_grad_sums_stub.fns[cuda] = &channel_grad_sums;
  channel_affine_stub.fns[cuda] = &channel_affine;
}

}  // namespace ember::cuda
