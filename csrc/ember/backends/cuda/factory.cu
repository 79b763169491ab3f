// CUDA kernels of arange and linspace/logspace (kernels/stubs/factory.h), tril/triu and trace
// (kernels/stubs/linalg.h) and multinomial (kernels/stubs/random.h).
//  * arange / linspace: one grid-stride thread per element with the CPU's formulas
//    (backends/cpu/factory_kernels.cpp); the floating arithmetic is written with the
//    round-to-nearest intrinsics (__dmul_rn, __fadd_rn, ...) so nvcc cannot contract it into
//    FMAs: the values are bitwise the CPU's, except logspace's pow (the GPU's pow may differ
//    from glibc's in the last bit).
//  * tril / triu: one grid-stride thread per element of out over arbitrary strides (batch
//    offsets peeled dim by dim), copying elements as raw 1/2/4/8-byte words like the CPU;
//    out may be in itself (each element is read and written by the same thread).
//  * trace: one block; threads stride over the diagonal, accumulating in double (floating)
//    or wrapping uint64 (integers and bool, stored as int64), then a block reduction.
//  * multinomial: one block per row; see Note [CUDA multinomial].
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cub/device/device_segmented_sort.cuh>
#include <type_traits>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/backends/cuda/cuda_check.h"
#include "ember/backends/cuda/loops.cuh"
#include "ember/backends/cuda/reduce.cuh"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/functors.h"
#include "ember/kernels/registration.h"
#include "ember/kernels/stubs/factory.h"
#include "ember/kernels/stubs/linalg.h"
#include "ember/kernels/stubs/random.h"

namespace ember::cuda {
namespace {

// ---- arange / linspace ----------------------------------------------------------------------

template <typename T>
__device__ __forceinline__ T cast_value(double v) {
  if constexpr (std::is_same<T, bool>::value)
    return v != 0;
  else if constexpr (std::is_same<T, Half>::value || std::is_same<T, BFloat16>::value)
    return T(float(v));
  else if constexpr (std::is_integral<T>::value)
    return static_cast<T>(static_cast<int64_t>(v));
  else
    return static_cast<T>(v);
}

// Correctly rounded arithmetic (never contracted into an FMA), as the CPU computes it.
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }

template <typename T>
__global__ void arange_int_kernel(T* __restrict__ o, int64_t n, int64_t s, int64_t d) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    o[i] = static_cast<T>(int64_t(uint64_t(s) + uint64_t(i) * uint64_t(d)));
}

template <typename T>
__global__ void arange_float_kernel(T* __restrict__ o, int64_t n, double s, double d) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    o[i] = cast_value<T>(add_rn(s, mul_rn(double(i), d)));
}

void arange_kernel(const Tensor& out, Scalar start, Scalar step) {
  EMBER_CHECK(out.is_contiguous(), "arange (CUDA): output must be contiguous");
  const int64_t n = out.numel();
  if (n == 0) return;
  dispatch_all(out.dtype(), "arange", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = reinterpret_cast<T*>(out.data_ptr());
    if constexpr (std::is_integral<T>::value)
      arange_int_kernel<T>
          <<<grid_for(n), kThreads, 0, current_stream()>>>(o, n, start.to_int(), step.to_int());
    else
      arange_float_kernel<T><<<grid_for(n), kThreads, 0, current_stream()>>>(
          o, n, start.to_double(), step.to_double());
    EMBER_CUDA_CHECK(cudaGetLastError());
  });
}

// C is the CPU's computation type: double for integral results, opmath_t otherwise.
template <typename T, typename C>
__global__ void linspace_kernel_(T* __restrict__ o, int64_t steps, C s, C e, C st, bool has_base,
                                 double base) {
  const int64_t half = steps / 2;
  const int64_t stride = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < steps; i += stride) {
    const C v = i < half ? add_rn(s, mul_rn(st, C(i))) : sub_rn(e, mul_rn(st, C(steps - i - 1)));
    double r = has_base ? pow(base, double(v)) : double(v);
    if constexpr (std::is_integral<T>::value) {
      // The GPU's pow is within 2 ulp, glibc's correctly rounded: 3^1 may come out as
      // 2.9999999999999996 here and truncate to 2. A result within 4 ulp of an integer is
      // that integer (what the CPU computes).
      const double k = rint(r);
      if (has_base && fabs(r - k) <= 4 * 2.220446049250313e-16 * fabs(k)) r = k;
    }
    o[i] = cast_value<T>(r);
  }
}

void linspace_kernel(const Tensor& out, double start, double end, std::optional<double> base) {
  EMBER_CHECK(out.is_contiguous(), "linspace (CUDA): output must be contiguous");
  const int64_t steps = out.numel();
  if (steps == 0) return;
  dispatch_all(out.dtype(), "linspace", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = linspace_t<T>;
    const C s = linspace_bound<T>(start);
    C e = linspace_bound<T>(end);
    T* o = reinterpret_cast<T*>(out.data_ptr());
    // steps == 1 writes s alone: a zero step and half == 0 make the kernel compute e - 0 * 0,
    // which is e, not s; so pass e = s for it.
    const C step = steps == 1 ? C(0) : (e - s) / C(steps - 1);
    if (steps == 1) e = s;
    linspace_kernel_<T, C><<<grid_for(steps), kThreads, 0, current_stream()>>>(
        o, steps, s, e, step, base.has_value(), base.value_or(0.0));
    EMBER_CUDA_CHECK(cudaGetLastError());
  });
}

// ---- tril / triu ----------------------------------------------------------------------------

constexpr int kMaxBatchDims = 24;

struct TrilGeom {
  int nbatch;
  int64_t bsize[kMaxBatchDims], ostride[kMaxBatchDims], istride[kMaxBatchDims];
  int64_t m, n, osr, osc, isr, isc;
};

template <typename U>
__global__ void tril_triu_kernel_(U* out, const U* in, TrilGeom g, int64_t total, bool upper,
                                  int64_t diag) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < total; idx += step) {
    const int64_t j = idx % g.n;
    int64_t r = idx / g.n;
    const int64_t i = r % g.m;
    r /= g.m;
    int64_t oo = 0, io = 0;
    for (int d = g.nbatch - 1; d >= 0; --d) {
      const int64_t b = r % g.bsize[d];
      r /= g.bsize[d];
      oo += b * g.ostride[d];
      io += b * g.istride[d];
    }
    // Kept columns: j <= i + diag (tril) or j >= i + diag (triu), as the CPU.
    const bool keep = upper ? (j - i >= diag) : (j - i <= diag);
    out[oo + i * g.osr + j * g.osc] = keep ? in[io + i * g.isr + j * g.isc] : U(0);
  }
}

void tril_triu_kernel(const Tensor& out, const Tensor& in, bool upper, int64_t diagonal) {
  const int64_t nd = out.dim() - 2;
  EMBER_CHECK(nd <= kMaxBatchDims, "tril/triu (CUDA): at most ", kMaxBatchDims, " batch dims, got ",
              nd);
  TrilGeom g{};
  g.nbatch = int(nd);
  for (int64_t d = 0; d < nd; ++d) {
    g.bsize[d] = out.sizes()[d];
    g.ostride[d] = out.strides()[d];
    g.istride[d] = in.strides()[d];
  }
  g.m = out.sizes()[nd];
  g.n = out.sizes()[nd + 1];
  g.osr = out.strides()[nd];
  g.osc = out.strides()[nd + 1];
  g.isr = in.strides()[nd];
  g.isc = in.strides()[nd + 1];
  const int64_t total = out.numel();
  if (total == 0) return;
  // diag is clamped so that j - i (in [-(m-1), n-1]) compares without overflow
  const int64_t diag = std::clamp<int64_t>(diagonal, -g.m - 1, g.n + 1);
  auto run = [&](auto zero) {
    using U = decltype(zero);
    tril_triu_kernel_<U><<<grid_for(total), kThreads, 0, current_stream()>>>(
        reinterpret_cast<U*>(out.data_ptr()), reinterpret_cast<const U*>(in.data_ptr()), g, total,
        upper, diag);
    EMBER_CUDA_CHECK(cudaGetLastError());
  };
  switch (out.element_size()) {
    case 1:
      return run(uint8_t{});
    case 2:
      return run(uint16_t{});
    case 4:
      return run(uint32_t{});
    case 8:
      return run(uint64_t{});
    default:
      EMBER_ERROR("tril/triu: unsupported element size ", out.element_size());
  }
}

// ---- trace ----------------------------------------------------------------------------------

template <typename A>
struct SumOp {
  using acc_t = A;
  __device__ A init() const { return A(0); }
  __device__ A combine(A a, A b) const { return a + b; }
};

template <typename T, typename O, typename A>
__global__ void trace_kernel_(O* out, const T* diag, int64_t n, int64_t s) {
  __shared__ A smem[32];
  A acc = A(0);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    if constexpr (std::is_integral<T>::value)
      acc += A(int64_t(diag[i * s]));
    else
      acc += A(diag[i * s]);
  }
  acc = block_reduce(acc, SumOp<A>{}, smem);
  if (threadIdx.x == 0) {
    if constexpr (std::is_integral<T>::value)
      *out = O(int64_t(acc));
    else
      *out = to_out<O>(acc);
  }
}

void trace_kernel(const Tensor& out, const Tensor& diag) {
  const int64_t n = diag.sizes()[0], s = diag.strides()[0];
  const int threads = n >= 512 ? 512 : int(std::max<int64_t>(32, (n + 31) / 32 * 32));
  dispatch_all(diag.dtype(), "trace", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = reinterpret_cast<const T*>(diag.data_ptr());
    if constexpr (std::is_integral<T>::value)  // bool and integers -> int64, wrapping
      trace_kernel_<T, int64_t, uint64_t><<<1, threads, 0, current_stream()>>>(
          reinterpret_cast<int64_t*>(out.data_ptr()), p, n, s);
    else
      trace_kernel_<T, T, double>
          <<<1, threads, 0, current_stream()>>>(reinterpret_cast<T*>(out.data_ptr()), p, n, s);
    EMBER_CUDA_CHECK(cudaGetLastError());
  });
}

// ---- multinomial ----------------------------------------------------------------------------

// Note [CUDA multinomial]
// The CPU's Philox layout: row r, draw j reads block offset + r * ceil(per_row / 2) + j / 2,
// lane j % 2, one 53-bit double per draw. One block of kRowThreads per row.
//  * The row is validated as the CPU's front-end does (a non-finite or negative element,
//    else a sum <= 0): a bad row records 2 * r (element) or 2 * r + 1 (sum) with atomicMin
//    into a device word, so the host raises the CPU's error for the first bad row. Checking
//    it copies that word back after the kernels (a stream synchronization per call; the
//    op must raise on bad probabilities).
//  * With replacement: the cumulative sums are a chunked scan (thread t sums its contiguous
//    chunk sequentially, thread 0 scans the chunk totals sequentially, then each thread
//    adds its chunk's offset). That is monotone, like the CPU's sequential sums, so a
//    zero-probability category is never drawn, but its rounding may differ from the CPU's
//    in the last bit: a draw that falls within that rounding of a category boundary may
//    pick the neighbour (never for sums that are exact, e.g. integer weights). Each draw
//    x = u * total then binary-searches the row (upper_bound; past the end: the last
//    positive category), as the CPU.
//  * Without replacement: the CPU's exponential race. Keys p_j / E_j (E_j = -log1p(-u_j);
//    -1 for p_j = 0) go through cub's stable segmented sort, descending, with the category
//    indices as values, so equal keys keep the smaller index first, as the CPU's
//    comparator; the first n of each row are the sample. The GPU's log1p may differ from
//    glibc's in the last bit, so near-ties of keys may order differently from the CPU.
constexpr int kRowThreads = 256;

__device__ __forceinline__ double unit_draw(uint64_t seed, uint64_t offset, uint64_t row_blocks,
                                            int64_t r, int64_t j) {
  const philox::Block b = philox::block(seed, offset + uint64_t(r) * row_blocks + uint64_t(j / 2));
  const int l = int(j % 2);
  return philox::to_unit_double(b.w[2 * l], b.w[2 * l + 1]);
}

__device__ __forceinline__ bool bad_prob(double v) { return !(isfinite(v) && v >= 0); }

template <typename A>
struct MaxI64Op {
  using acc_t = A;
  __device__ A init() const { return A(-1); }
  __device__ A combine(A a, A b) const { return a > b ? a : b; }
};
struct OrOp {
  using acc_t = int;
  __device__ int init() const { return 0; }
  __device__ int combine(int a, int b) const { return a | b; }
};

__global__ void __launch_bounds__(kRowThreads)
    multinomial_replacement_kernel(int64_t* __restrict__ out, const double* __restrict__ probs,
                                   double* __restrict__ work, int64_t rows, int64_t k, int64_t n,
                                   uint64_t seed, uint64_t offset, uint64_t row_blocks,
                                   unsigned long long* __restrict__ bad) {
  __shared__ double totals[kRowThreads + 1];
  __shared__ int64_t ismem[32];
  __shared__ int bsmem[32];
  __shared__ int64_t last_pos_s;
  __shared__ int bad_s;
  const int64_t chunk = (k + kRowThreads - 1) / kRowThreads;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const double* p = probs + r * k;
    double* w = work + r * k;
    const int64_t j0 = min(k, int64_t(threadIdx.x) * chunk), j1 = min(k, j0 + chunk);
    double run = 0;
    int64_t last = -1;
    int badv = 0;
    for (int64_t j = j0; j < j1; ++j) {
      const double v = p[j];
      badv |= bad_prob(v) ? 1 : 0;
      run += v;
      w[j] = run;
      if (v > 0) last = j;
    }
    totals[threadIdx.x] = run;
    badv = block_reduce(badv, OrOp{}, bsmem);
    last = block_reduce(last, MaxI64Op<int64_t>{}, ismem);
    __syncthreads();  // every chunk total is in `totals`
    if (threadIdx.x == 0) {
      double acc = 0;  // exclusive scan of the (non-empty) chunk totals, in order
      const int used = chunk == 0 ? 0 : int((k + chunk - 1) / chunk);
      for (int t = 0; t < used; ++t) {
        const double tt = totals[t];
        totals[t] = acc;
        acc += tt;
      }
      totals[kRowThreads] = acc;
      last_pos_s = last < 0 ? 0 : last;
      bad_s = badv;
      if (badv)
        atomicMin(bad, (unsigned long long)(2 * r));
      else if (!(acc > 0))
        atomicMin(bad, (unsigned long long)(2 * r + 1));
    }
    __syncthreads();
    const double total = totals[kRowThreads];
    const bool skip = bad_s || !(total > 0);
    if (!skip) {
      const double off = totals[threadIdx.x];
      if (off != 0)
        for (int64_t j = j0; j < j1; ++j) w[j] = off + w[j];
    }
    __syncthreads();  // the scanned row is read by every thread
    if (!skip) {
      const int64_t last_pos = last_pos_s;
      for (int64_t s = threadIdx.x; s < n; s += blockDim.x) {
        const double x = __dmul_rn(unit_draw(seed, offset, row_blocks, r, s), total);
        int64_t lo = 0, hi = k;  // upper_bound: the first j with w[j] > x
        while (lo < hi) {
          const int64_t mid = lo + (hi - lo) / 2;
          if (w[mid] <= x)
            lo = mid + 1;
          else
            hi = mid;
        }
        out[r * n + s] = lo >= k ? last_pos : lo;
      }
    }
    __syncthreads();  // shared state is rewritten for the next row
  }
}

__global__ void __launch_bounds__(kRowThreads)
    multinomial_keys_kernel(double* __restrict__ keys, int64_t* __restrict__ idx,
                            int64_t* __restrict__ seg, const double* __restrict__ probs,
                            int64_t rows, int64_t k, uint64_t seed, uint64_t offset,
                            uint64_t row_blocks, unsigned long long* __restrict__ bad) {
  __shared__ int bsmem[32];
  __shared__ int psmem[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const double* p = probs + r * k;
    int badv = 0, pos = 0;
    for (int64_t j = threadIdx.x; j < k; j += blockDim.x) {
      const double v = p[j];
      badv |= bad_prob(v) ? 1 : 0;
      pos |= v > 0 ? 1 : 0;
      const double e = -log1p(-unit_draw(seed, offset, row_blocks, r, j));
      keys[r * k + j] = v > 0 ? (e > 0 ? v / e : INFINITY) : -1.0;
      idx[r * k + j] = j;
    }
    badv = block_reduce(badv, OrOp{}, bsmem);
    pos = block_reduce(pos, OrOp{}, psmem);
    if (threadIdx.x == 0) {
      seg[r] = r * k;
      if (r == rows - 1) seg[rows] = rows * k;
      // finite non-negative elements sum to > 0 exactly when one is positive
      if (badv)
        atomicMin(bad, (unsigned long long)(2 * r));
      else if (!pos)
        atomicMin(bad, (unsigned long long)(2 * r + 1));
    }
  }
}

__global__ void take_first_kernel(int64_t* __restrict__ out, const int64_t* __restrict__ sorted,
                                  int64_t rows, int64_t k, int64_t n) {
  const int64_t total = rows * n, step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step)
    out[i] = sorted[(i / n) * k + i % n];
}

void multinomial_kernel(const Tensor& out, const Tensor& probs, bool replacement,
                        const RandomArgs& a) {
  EMBER_CHECK(probs.is_contiguous() && out.is_contiguous() && probs.dtype() == DType::Float64 &&
                  out.dtype() == DType::Int64,
              "multinomial (CUDA): expected contiguous float64 probabilities and int64 output");
  const int64_t k = probs.size(-1);
  const int64_t rows = probs.dim() == 2 ? probs.size(0) : 1;
  const int64_t n = out.size(-1);
  if (rows == 0) return;
  const int64_t per_row = replacement ? n : k;
  const uint64_t row_blocks = uint64_t((per_row + 1) / 2);
  const Device dev = probs.device();
  const cudaStream_t stream = current_stream();
  Tensor bad_t = empty(Shape{1}, DType::Int64, dev);
  auto* bad = reinterpret_cast<unsigned long long*>(bad_t.data_ptr());
  EMBER_CUDA_CHECK(cudaMemsetAsync(bad, 0xff, sizeof(unsigned long long), stream));
  const double* P = reinterpret_cast<const double*>(probs.data_ptr());
  int64_t* O = reinterpret_cast<int64_t*>(out.data_ptr());
  const unsigned blocks = unsigned(std::min<int64_t>(rows, int64_t(1) << 16));
  Tensor keep[6];  // buffers alive until the kernels are queued (the allocator is stream-ordered)
  if (replacement) {
    keep[0] = empty(Shape{std::max<int64_t>(rows * k, 1)}, DType::Float64, dev);
    multinomial_replacement_kernel<<<blocks, kRowThreads, 0, stream>>>(
        O, P, reinterpret_cast<double*>(keep[0].data_ptr()), rows, k, n, a.seed, a.offset,
        row_blocks, bad);
    EMBER_CUDA_CHECK(cudaGetLastError());
  } else {
    // n <= k and k >= 1 here (the front-end checked num_samples <= k and num_samples > 0)
    const int64_t total = rows * k;
    keep[0] = empty(Shape{total}, DType::Float64, dev);  // keys
    keep[1] = empty(Shape{total}, DType::Float64, dev);  // sorted keys
    keep[2] = empty(Shape{total}, DType::Int64, dev);    // indices
    keep[3] = empty(Shape{total}, DType::Int64, dev);    // sorted indices
    keep[4] = empty(Shape{rows + 1}, DType::Int64, dev);
    auto* keys = reinterpret_cast<double*>(keep[0].data_ptr());
    auto* keys_out = reinterpret_cast<double*>(keep[1].data_ptr());
    auto* idx = reinterpret_cast<int64_t*>(keep[2].data_ptr());
    auto* idx_out = reinterpret_cast<int64_t*>(keep[3].data_ptr());
    auto* seg = reinterpret_cast<int64_t*>(keep[4].data_ptr());
    multinomial_keys_kernel<<<blocks, kRowThreads, 0, stream>>>(keys, idx, seg, P, rows, k, a.seed,
                                                                a.offset, row_blocks, bad);
    EMBER_CUDA_CHECK(cudaGetLastError());
    size_t temp_bytes = 0;
    EMBER_CUDA_CHECK(cub::DeviceSegmentedSort::StableSortPairsDescending(
        nullptr, temp_bytes, keys, keys_out, idx, idx_out, total, rows, seg, seg + 1, stream));
    keep[5] = empty(Shape{int64_t(std::max<size_t>(temp_bytes, 1))}, DType::UInt8, dev);
    EMBER_CUDA_CHECK(cub::DeviceSegmentedSort::StableSortPairsDescending(
        keep[5].data_ptr(), temp_bytes, keys, keys_out, idx, idx_out, total, rows, seg, seg + 1,
        stream));
    take_first_kernel<<<grid_for(rows * n), kThreads, 0, stream>>>(O, idx_out, rows, k, n);
    EMBER_CUDA_CHECK(cudaGetLastError());
  }
  unsigned long long first_bad = 0;
  EMBER_CUDA_CHECK(
      cudaMemcpyAsync(&first_bad, bad, sizeof(first_bad), cudaMemcpyDeviceToHost, stream));
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (first_bad != ~0ull) {
    EMBER_CHECK(first_bad % 2 != 0,
                "probability tensor contains either `inf`, `nan` or element < 0");
    EMBER_ERROR("invalid multinomial distribution (sum of probabilities <= 0)");
  }
}

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, factory) {
  constexpr int cuda = int(DeviceType::CUDA);
  arange_stub.fns[cuda] = &arange_kernel;
  linspace_stub.fns[cuda] = &linspace_kernel;
  tril_triu_stub.fns[cuda] = &tril_triu_kernel;
  trace_stub.fns[cuda] = &trace_kernel;
  multinomial_stub.fns[cuda] = &multinomial_kernel;
}

}  // namespace ember::cuda
