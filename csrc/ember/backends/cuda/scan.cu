// CUDA kernels of the cumulative scans: scan_stub (cumsum / cumprod, in place on the
// contiguous `out`, kernels/stubs/reduce.h) and cummaxmin_stub (cummax / cummin with indices,
// kernels/stubs/surface_scan.h), with the CPU kernels' semantics and accumulators
// (backends/cpu/reduce_stats.cpp, surface_kernels.cpp):
//  * cumsum / cumprod (and logcumsumexp, whose step is a log-add-exp) accumulate in double for
//  float32/float64, in float for the 16-bit
//    floats, in int64 with wrap-around (uint64 arithmetic) for integers and bool, and store
//    every prefix rounded to the output type. The tensor is viewed as [O, L, I] (L: the
//    scanned dim).
//      - I == 1 (the scanned dim is last): rows are contiguous. Rows of up to 16 elements
//        take a thread each (the CPU's serial loop); rows of up to 1024 one warp each (8
//        rows per block), longer rows one 512-thread block each; a row is scanned in chunks
//        of 32 (warp) or 512 (block) consecutive elements, coalesced, by warp shuffles (+ a
//        shared-memory pass over the warp totals), each chunk starting from the previous
//        chunk's last prefix.
//      - I > 1: one thread per (o, i) column runs the CPU's serial loop; neighbouring
//        threads read neighbouring i, so every step is a coalesced row read. With fewer
//        than 2^15 columns (too few threads to hide the serial loop's latency) and
//        columns longer than 16, each column is scanned like a row instead (strided
//        reads, but parallel along the column).
//    The parallel scan adds in a different order than the CPU's serial loop: integer
//    results are identical, floating ones may differ in the last bits of the accumulator.
//  * cummax / cummin: `self` is contiguous with the scanned dim last; the same thread /
//    warp / block row scans over (value, index) pairs with the associative form of the CPU's
//    running update (a NaN sticks at its first index, ties take the later index), so
//    the results are exactly the CPU's.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ember/backends/cuda/loops.cuh"
#include "ember/backends/cuda/reduce.cuh"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/reduce_math.h"
#include "ember/kernels/registration.h"
#include "ember/kernels/stubs/reduce.h"
#include "ember/kernels/stubs/surface_scan.h"

namespace ember::cuda {
namespace {

constexpr int kThreadRowMax = 16;         // rows up to this long: a thread per row
constexpr int kWarpRowMax = 1024;         // rows up to this long: a warp per row
constexpr int kRowBlock = 512;            // threads of the block-per-row kernel
constexpr int64_t kFewColumns = 1 << 15;  // fewer columns (I > 1): scan each in parallel

/// Inclusive scan across the warp (every lane must take part).
template <typename Op, typename A>
__device__ __forceinline__ A warp_scan(A v, const Op& op, int lane) {
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const A o = shfl_up_any(v, off);
    if (lane >= off) v = op.combine(o, v);
  }
  return v;
}

// Row scans. An Op provides (all __device__):
//   using acc_t;  acc_t load(int64_t row, int64_t j);
//   acc_t combine(acc_t earlier, acc_t later);  void store(int64_t row, int64_t j, acc_t)
// combine must be associative. Lanes past the row's end load its last element (a defined
// value) and never store; a chunk's carry is read only when a full chunk precedes.

// Short rows: a thread per row, the CPU's serial loop.
template <typename Op>
__global__ void __launch_bounds__(kThreads)
    scan_rows_thread_kernel(Op op, int64_t rows, int64_t L) {
  using A = typename Op::acc_t;
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; r < rows; r += step) {
    A acc = op.load(r, 0);
    op.store(r, 0, acc);
    for (int64_t j = 1; j < L; ++j) {
      acc = op.combine(acc, op.load(r, j));
      op.store(r, j, acc);
    }
  }
}

template <typename Op>
__global__ void __launch_bounds__(kThreads) scan_rows_warp_kernel(Op op, int64_t rows, int64_t L) {
  using A = typename Op::acc_t;
  const int lane = int(threadIdx.x) & 31;
  const int64_t per_block = blockDim.x / 32;
  const int64_t nwarps = per_block * gridDim.x;
  for (int64_t r = int64_t(blockIdx.x) * per_block + threadIdx.x / 32; r < rows; r += nwarps) {
    A carry{};
    for (int64_t base = 0; base < L; base += 32) {
      const int64_t j = base + lane;
      A v = warp_scan(op.load(r, j < L ? j : L - 1), op, lane);
      if (base > 0) v = op.combine(carry, v);
      if (j < L) op.store(r, j, v);
      carry = shfl_any(v, 31);
    }
  }
}

template <typename Op>
__global__ void __launch_bounds__(kRowBlock)
    scan_rows_block_kernel(Op op, int64_t rows, int64_t L) {
  using A = typename Op::acc_t;
  __shared__ A warp_tot[32];
  __shared__ A carry;
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
  const int nwarps = int(blockDim.x) >> 5;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    for (int64_t base = 0; base < L; base += blockDim.x) {
      const int64_t j = base + threadIdx.x;
      A v = warp_scan(op.load(r, j < L ? j : L - 1), op, lane);
      if (lane == 31) warp_tot[warp] = v;
      __syncthreads();
      if (warp == 0) {
        A t = warp_scan(warp_tot[lane < nwarps ? lane : 0], op, lane);
        if (lane < nwarps) warp_tot[lane] = t;  // inclusive prefix of the warp totals
      }
      __syncthreads();
      if (warp > 0) v = op.combine(warp_tot[warp - 1], v);
      if (base > 0) v = op.combine(carry, v);
      if (j < L) op.store(r, j, v);
      __syncthreads();  // everyone has read carry and warp_tot
      if (int(threadIdx.x) == int(blockDim.x) - 1) carry = v;
      __syncthreads();
    }
  }
}

template <typename Op>
void launch_row_scan(const Op& op, int64_t rows, int64_t L) {
  if (rows == 0 || L == 0) return;
  cudaStream_t s = current_stream();
  if (L <= kThreadRowMax) {
    scan_rows_thread_kernel<Op><<<grid_for(rows), kThreads, 0, s>>>(op, rows, L);
  } else if (L <= kWarpRowMax) {
    const int64_t per_block = kThreads / 32;
    const int64_t blocks = std::min<int64_t>((rows + per_block - 1) / per_block, int64_t(1) << 20);
    scan_rows_warp_kernel<Op><<<unsigned(blocks), kThreads, 0, s>>>(op, rows, L);
  } else {
    const int64_t blocks = std::min<int64_t>(rows, int64_t(1) << 20);
    scan_rows_block_kernel<Op><<<unsigned(blocks), kRowBlock, 0, s>>>(op, rows, L);
  }
  EMBER_CUDA_CHECK(cudaGetLastError());
}

/// Converts an accumulator to the stored type (16-bit floats round from float).
template <typename O, typename A>
__device__ __forceinline__ O store_as(A a) {
  if constexpr (std::is_same<O, Half>::value || std::is_same<O, BFloat16>::value)
    return O(float(a));
  else
    return O(a);
}

// ---- cumsum / cumprod -----------------------------------------------------------------------

/// The CPU's scan accumulator: double for float/double, float for the 16-bit floats,
/// int64 (wrapping) for integers and bool.
template <typename T>
using scan_acc_t =
    std::conditional_t<std::is_floating_point<opmath_t<T>>::value,
                       std::conditional_t<std::is_same<opmath_t<T>, T>::value, double, float>,
                       int64_t>;

/// K: ScanKind (cumsum, cumprod, logcumsumexp). logcumsumexp's step is the CPU's
/// log_add_exp (backends/cpu/reduce_stats.cpp): associative, identity -inf.
template <typename A, int K>
__device__ __forceinline__ A scan_combine(A a, A b) {
  constexpr bool Prod = K == int(ScanKind::Cumprod);
  if constexpr (std::is_integral<A>::value) {
    return Prod ? A(uint64_t(a) * uint64_t(b)) : A(uint64_t(a) + uint64_t(b));
  } else if constexpr (K == int(ScanKind::LogCumSumExp)) {
    if (isnan(a) || isnan(b)) return a + b;
    const A m = a > b ? a : b;
    if (isinf(m)) return m;
    return m + log1p(exp(-fabs(a - b)));
  } else {
    return Prod ? a * b : a + b;
  }
}
template <typename A, int K>
__host__ __device__ __forceinline__ A scan_identity() {
  if constexpr (K == int(ScanKind::LogCumSumExp))
    return -A(HUGE_VAL);  // -inf, without std::numeric_limits in device code
  else
    return A(K == int(ScanKind::Cumprod) ? 1 : 0);
}

// Row r of the [O, L, I] view is column (r / I, r % I); its element j is I apart.
template <typename T, int K>
struct ScanRowOp {
  using acc_t = scan_acc_t<T>;
  T* p;
  int64_t L, I;
  __device__ __forceinline__ int64_t at(int64_t r, int64_t j) const {
    return I == 1 ? r * L + j : (r / I) * L * I + r % I + j * I;
  }
  // Combined with the identity first, as the CPU's serial loop starts from 0 (1): a sum
  // never gives -0.0 there (0.0 + -0.0 == 0.0), so neither may the parallel scan.
  __device__ __forceinline__ acc_t load(int64_t r, int64_t j) const {
    return scan_combine<acc_t, K>(scan_identity<acc_t, K>(), acc_t(opmath_t<T>(p[at(r, j)])));
  }
  __device__ __forceinline__ acc_t combine(acc_t a, acc_t b) const {
    return scan_combine<acc_t, K>(a, b);
  }
  __device__ __forceinline__ void store(int64_t r, int64_t j, acc_t a) const {
    p[at(r, j)] = store_as<T>(a);
  }
};

template <typename T, int K>
__global__ void __launch_bounds__(kThreads)
    scan_cols_kernel(T* __restrict__ p, int64_t O, int64_t L, int64_t I) {
  using A = scan_acc_t<T>;
  const int64_t total = O * I, step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += step) {
    T* col = p + (t / I) * L * I + t % I;
    A acc = scan_identity<A, K>();
    for (int64_t l = 0; l < L; ++l) {
      acc = scan_combine<A, K>(acc, A(opmath_t<T>(col[l * I])));
      col[l * I] = store_as<T>(acc);
    }
  }
}

template <typename T, int K>
void scan_typed(const Tensor& t, int64_t dim) {
  int64_t O = 1, I = 1;
  const int64_t L = t.sizes()[dim];
  for (int64_t d = 0; d < dim; ++d) O *= t.sizes()[d];
  for (int64_t d = dim + 1; d < t.dim(); ++d) I *= t.sizes()[d];
  if (t.numel() == 0) return;
  T* p = reinterpret_cast<T*>(t.data_ptr());
  const int64_t total = O * I;
  // Contiguous rows, or too few columns to keep the GPU busy with a thread each: a
  // (thread / warp / block) scan per row or column. Otherwise a thread per column.
  if (I == 1 || (total < kFewColumns && L > kThreadRowMax)) {
    launch_row_scan(ScanRowOp<T, K>{p, L, I}, total, L);
    return;
  }
  scan_cols_kernel<T, K><<<grid_for(total), kThreads, 0, current_stream()>>>(p, O, L, I);
  EMBER_CUDA_CHECK(cudaGetLastError());
}

void scan_kernel(const ReduceArgs& a) {
  EMBER_CHECK(a.out.is_contiguous(), "cumsum (CUDA): internal error: non-contiguous output");
  const int64_t dim = a.mask[0];
  reduce_math::dispatch_scan(a.kind, a.out.dtype(), [&](auto tag, auto kind) {
    scan_typed<typename decltype(tag)::type, decltype(kind)::value>(a.out, dim);
  });
}

// ---- cummax / cummin --------------------------------------------------------------------------

template <typename C>
__device__ __forceinline__ bool is_nan_(C v) {
  if constexpr (std::is_floating_point<C>::value)
    return v != v;
  else
    return false;
}

template <typename C>
struct ValIdx {
  C v;
  int64_t i;
};

// The CPU's running update `if (!nan(best) && (nan(v) || v >= best)) take v` is the fold of
// combine(earlier, later) below over (value, index) pairs; it picks the maximum of a total
// order (the first NaN above everything, then the value, ties to the later index), so it
// is associative and the parallel scan gives the serial loop's values and indices.
template <typename T, bool Max>
struct CumExtremeOp {
  using C =
      std::conditional_t<std::is_floating_point<T>::value || std::is_integral<T>::value, T, float>;
  using acc_t = ValIdx<C>;
  const T* src;
  T* values;
  int64_t* indices;
  int64_t L;
  __device__ __forceinline__ acc_t load(int64_t r, int64_t j) const {
    return acc_t{C(src[r * L + j]), j};
  }
  __device__ __forceinline__ acc_t combine(acc_t a, acc_t b) const {
    if (is_nan_(a.v)) return a;
    if (is_nan_(b.v)) return b;
    return (Max ? b.v >= a.v : b.v <= a.v) ? b : a;
  }
  __device__ __forceinline__ void store(int64_t r, int64_t j, acc_t a) const {
    values[r * L + j] = T(a.v);
    indices[r * L + j] = a.i;
  }
};

void cummaxmin_kernel(const Tensor& values, const Tensor& indices, const Tensor& self,
                      bool is_max) {
  EMBER_CHECK(self.is_contiguous() && values.is_contiguous() && indices.is_contiguous(),
              "cummax (CUDA): internal error: non-contiguous operands");
  if (self.numel() == 0) return;
  const int64_t n = self.dim() == 0 ? 1 : self.sizes().back(), rows = self.numel() / n;
  dispatch_all(self.dtype(), "cummax", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* s = reinterpret_cast<const T*>(self.data_ptr());
    T* v = reinterpret_cast<T*>(values.data_ptr());
    int64_t* ix = reinterpret_cast<int64_t*>(indices.data_ptr());
    if (is_max)
      launch_row_scan(CumExtremeOp<T, true>{s, v, ix, n}, rows, n);
    else
      launch_row_scan(CumExtremeOp<T, false>{s, v, ix, n}, rows, n);
  });
}

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, scan) {
  constexpr int cuda = int(DeviceType::CUDA);
  scan_stub.fns[cuda] = &scan_kernel;
  cummaxmin_stub.fns[cuda] = &cummaxmin_kernel;
}

}  // namespace ember::cuda
