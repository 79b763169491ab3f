// CUDA kernels of the fused softmax / log_softmax, forward and backward
// (kernels/stubs/nn_activation.h), computing in opmath_t (float for 16-bit floats)
// as the CPU kernels: a max pass, a sum-of-exponentials pass, a write pass (rows of up to
// 8192 elements keep their values in registers between the passes).
// The input is a contiguous [outer, dim, inner]; a row is (o, j) over the dim.
//  * inner == 1: one block per row (rows are contiguous), block reductions by warp
//    shuffles (reduce.cuh);
//  * inner > 1: one thread per row, so a warp reads 32 neighbouring j: coalesced.
#include <cuda_runtime.h>

#include "ember/backends/cuda/reduce.cuh"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/registration.h"
#include "ember/kernels/stubs/nn_activation.h"

namespace ember::cuda {
namespace {

template <typename A>
struct MaxOp {
  using acc_t = A;
  __device__ A init() const { return -A(INFINITY); }
  __device__ A combine(A a, A b) const { return (b > a || b != b) ? b : a; }
};
template <typename A>
struct AddOp {
  using acc_t = A;
  __device__ A init() const { return A(0); }
  __device__ A combine(A a, A b) const { return a + b; }
};

__device__ __forceinline__ float exp_(float x) { return expf(x); }
__device__ __forceinline__ double exp_(double x) { return exp(x); }
__device__ __forceinline__ float log_(float x) { return logf(x); }
__device__ __forceinline__ double log_(double x) { return log(x); }

/// The block-wide reduction of v, returned to every thread of the block.
template <typename A, typename Op>
__device__ __forceinline__ A block_all(A v, const Op& op, A* smem) {
  v = block_reduce(v, op, smem);
  __shared__ A result;
  if (threadIdx.x == 0) result = v;
  __syncthreads();
  v = result;
  __syncthreads();  // `result` is rewritten by the next call
  return v;
}

// exp(x - m) with m = -inf (an all -inf row) would be NaN: shift by 0 instead, as the CPU.
template <typename A>
__device__ __forceinline__ A shift_of(A m) {
  return (isinf(m) && m < A(0)) ? A(0) : m;
}

template <typename T>
__global__ void softmax_rows_kernel(T* __restrict__ y, const T* __restrict__ x, int64_t rows,
                                    int64_t n, bool log) {
  using A = opmath_t<T>;
  __shared__ A smem[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    A m = -A(INFINITY);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) m = MaxOp<A>{}.combine(m, A(xr[j]));
    const A shift = shift_of(block_all(m, MaxOp<A>{}, smem));
    A s = A(0);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s += exp_(A(xr[j]) - shift);
    const A sum = block_all(s, AddOp<A>{}, smem);
    if (log) {
      const A off = shift + log_(sum);
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x) yr[j] = T(A(xr[j]) - off);
    } else {
      const A inv = A(1) / sum;
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x) yr[j] = T(exp_(A(xr[j]) - shift) * inv);
    }
  }
}

// Rows of up to VPT * blockDim.x elements: each thread keeps its VPT elements (and then their
// exponentials) in registers, so x is read once instead of three times; the arithmetic and its
// order are those of softmax_rows_kernel, so the results are the same bits.
template <typename T, int VPT>
__global__ void softmax_rows_cached_kernel(T* __restrict__ y, const T* __restrict__ x, int64_t rows,
                                           int n, bool log) {
  using A = opmath_t<T>;
  __shared__ A smem[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    A v[VPT];
    A m = -A(INFINITY);
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      const int j = int(threadIdx.x) + i * int(blockDim.x);
      v[i] = j < n ? A(xr[j]) : -A(INFINITY);
      if (j < n) m = MaxOp<A>{}.combine(m, v[i]);
    }
    const A shift = shift_of(block_all(m, MaxOp<A>{}, smem));
    A s = A(0);
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      const int j = int(threadIdx.x) + i * int(blockDim.x);
      if (j < n) {
        const A e = exp_(v[i] - shift);
        s += e;
        if (!log) v[i] = e;
      }
    }
    const A sum = block_all(s, AddOp<A>{}, smem);
    const A off = log ? shift + log_(sum) : A(0), inv = A(1) / sum;
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      const int j = int(threadIdx.x) + i * int(blockDim.x);
      if (j < n) yr[j] = T(log ? v[i] - off : v[i] * inv);
    }
  }
}

template <typename T>
__global__ void softmax_cols_kernel(T* __restrict__ y, const T* __restrict__ x, int64_t outer,
                                    int64_t n, int64_t inner, bool log) {
  using A = opmath_t<T>;
  const int64_t total = outer * inner, step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += step) {
    const int64_t o = t / inner, j = t % inner;
    const T* xc = x + o * n * inner + j;
    T* yc = y + o * n * inner + j;
    A m = -A(INFINITY);
    for (int64_t d = 0; d < n; ++d) m = MaxOp<A>{}.combine(m, A(xc[d * inner]));
    const A shift = shift_of(m);
    A sum = A(0);
    for (int64_t d = 0; d < n; ++d) sum += exp_(A(xc[d * inner]) - shift);
    if (log) {
      const A off = shift + log_(sum);
      for (int64_t d = 0; d < n; ++d) yc[d * inner] = T(A(xc[d * inner]) - off);
    } else {
      const A inv = A(1) / sum;
      for (int64_t d = 0; d < n; ++d) yc[d * inner] = T(exp_(A(xc[d * inner]) - shift) * inv);
    }
  }
}

// gx <- g - exp(y) * sum(g) (log) or y * (g - sum(g * y)).
template <typename T>
__global__ void softmax_bwd_rows_kernel(T* __restrict__ gx, const T* __restrict__ g,
                                        const T* __restrict__ y, int64_t rows, int64_t n,
                                        bool log) {
  using A = opmath_t<T>;
  __shared__ A smem[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* gr = g + r * n;
    const T* yr = y + r * n;
    T* o = gx + r * n;
    A s = A(0);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s += log ? A(gr[j]) : A(gr[j]) * A(yr[j]);
    const A sum = block_all(s, AddOp<A>{}, smem);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
      o[j] = log ? T(A(gr[j]) - exp_(A(yr[j])) * sum) : T(A(yr[j]) * (A(gr[j]) - sum));
  }
}

template <typename T>
__global__ void softmax_bwd_cols_kernel(T* __restrict__ gx, const T* __restrict__ g,
                                        const T* __restrict__ y, int64_t outer, int64_t n,
                                        int64_t inner, bool log) {
  using A = opmath_t<T>;
  const int64_t total = outer * inner, step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += step) {
    const int64_t o = t / inner, j = t % inner;
    const int64_t base = o * n * inner + j;
    A sum = A(0);
    for (int64_t d = 0; d < n; ++d) {
      const int64_t k = base + d * inner;
      sum += log ? A(g[k]) : A(g[k]) * A(y[k]);
    }
    for (int64_t d = 0; d < n; ++d) {
      const int64_t k = base + d * inner;
      gx[k] = log ? T(A(g[k]) - exp_(A(y[k])) * sum) : T(A(y[k]) * (A(g[k]) - sum));
    }
  }
}

int row_threads(int64_t n) {
  return n >= 512 ? 512 : int(std::max<int64_t>(32, (n + 31) / 32 * 32));
}
unsigned capped(int64_t blocks) { return unsigned(std::min<int64_t>(blocks, int64_t(1) << 20)); }

void check_softmax(const Tensor& t, SoftmaxShape s, const char* op) {
  EMBER_CHECK(t.is_contiguous() && t.numel() == s.outer * s.dim * s.inner, op,
              " (CUDA): expected a contiguous tensor of ", s.outer, "x", s.dim, "x", s.inner,
              " elements");
}

void softmax_kernel(const Tensor& out, const Tensor& in, SoftmaxShape s, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  check_softmax(in, s, op);
  check_softmax(out, s, op);
  if (s.outer * s.inner == 0 || s.dim == 0) return;
  dispatch_floating(in.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* y = reinterpret_cast<T*>(out.data_ptr());
    const T* x = reinterpret_cast<const T*>(in.data_ptr());
    if (s.inner == 1) {
      const int threads = row_threads(s.dim);
      const int64_t vpt = (s.dim + threads - 1) / threads;
      auto cached = [&](auto k) {
        k<<<capped(s.outer), threads, 0, current_stream()>>>(y, x, s.outer, int(s.dim), log);
      };
      if (vpt <= 1)
        cached(softmax_rows_cached_kernel<T, 1>);
      else if (vpt <= 2)
        cached(softmax_rows_cached_kernel<T, 2>);
      else if (vpt <= 4)
        cached(softmax_rows_cached_kernel<T, 4>);
      else if (vpt <= 8)
        cached(softmax_rows_cached_kernel<T, 8>);
      else if (vpt <= 16)
        cached(softmax_rows_cached_kernel<T, 16>);
      else
        softmax_rows_kernel<T>
            <<<capped(s.outer), threads, 0, current_stream()>>>(y, x, s.outer, s.dim, log);
    } else {
      const int64_t total = s.outer * s.inner;
      softmax_cols_kernel<T><<<capped((total + 255) / 256), 256, 0, current_stream()>>>(
          y, x, s.outer, s.dim, s.inner, log);
    }
  });
  EMBER_CUDA_CHECK(cudaGetLastError());
}

void softmax_backward_kernel(const Tensor& gx, const Tensor& g, const Tensor& y, SoftmaxShape s,
                             bool log) {
  const char* op = log ? "log_softmax_backward" : "softmax_backward";
  check_softmax(gx, s, op);
  check_softmax(g, s, op);
  check_softmax(y, s, op);
  if (s.outer * s.inner == 0 || s.dim == 0) return;
  dispatch_floating(y.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = reinterpret_cast<T*>(gx.data_ptr());
    const T* gp = reinterpret_cast<const T*>(g.data_ptr());
    const T* yp = reinterpret_cast<const T*>(y.data_ptr());
    if (s.inner == 1) {
      softmax_bwd_rows_kernel<T><<<capped(s.outer), row_threads(s.dim), 0, current_stream()>>>(
          o, gp, yp, s.outer, s.dim, log);
    } else {
      const int64_t total = s.outer * s.inner;
      softmax_bwd_cols_kernel<T><<<capped((total + 255) / 256), 256, 0, current_stream()>>>(
          o, gp, yp, s.outer, s.dim, s.inner, log);
    }
  });
  EMBER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, softmax) {
  constexpr int cuda = int(DeviceType::CUDA);
  softmax_stub.fns[cuda] = &softmax_kernel;
  softmax_backward_stub.fns[cuda] = &softmax_backward_kernel;
}

}  // namespace ember::cuda
