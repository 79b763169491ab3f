// CUDA loops over a TensorIterator: the CUDA half of the elementwise kernels of
// kernels/elementwise_kernels.h. The functors (kernels/functors.h) and the dtype
// policy per Kind are the CPU's; only the loop is CUDA's (Note [CUDA loops]).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/backends/cuda/cuda_check.h"
#include "ember/kernels/functors.h"
#include "ember/kernels/tensor_iterator.h"

namespace ember::cuda {

// Note [CUDA loops]
// One generic grid-stride kernel per (operand count, body). The iterator's
// reordered and coalesced shape and byte strides (innermost first) are passed by
// value in an OffsetCalc; element i's operand offsets are computed with int64
// arithmetic by peeling the linear index dim by dim. When the iterator has
// coalesced to one dim (every contiguous or scalar-broadcast case), an offset is
// one multiply: the fast path. The body reads and writes through the N operand
// pointers it is handed, and computes in opmath_t (float for 16-bit floats)
// exactly as the CPU loop does.
constexpr int kMaxIterDims = 12;
constexpr int kThreads = 256;

template <int N>
struct OffsetCalc {
  int ndim;
  int64_t sizes[kMaxIterDims];
  int64_t strides[N][kMaxIterDims];
  char* base[N];

  __device__ __forceinline__ void pointers(int64_t linear, char* (&p)[N]) const {
    if (ndim == 1) {
#pragma unroll
      for (int t = 0; t < N; ++t) p[t] = base[t] + linear * strides[t][0];
      return;
    }
#pragma unroll
    for (int t = 0; t < N; ++t) p[t] = base[t];
    for (int d = 0; d < ndim; ++d) {
      const int64_t i = linear % sizes[d];
      linear /= sizes[d];
#pragma unroll
      for (int t = 0; t < N; ++t) p[t] += i * strides[t][d];
    }
  }
};

/// The geometry of `it` for a kernel over its first N operands.
template <int N>
OffsetCalc<N> make_offset_calc(const TensorIterator& it) {
  EMBER_CHECK(it.ntensors() >= N, "CUDA loop: expected ", N, " operands, got ", it.ntensors());
  EMBER_CHECK(it.ndim() <= kMaxIterDims, "CUDA kernels support at most ", kMaxIterDims,
              " non-coalescible dimensions, got ", it.ndim());
  OffsetCalc<N> c{};
  c.ndim = it.ndim();
  for (int d = 0; d < c.ndim; ++d) {
    c.sizes[d] = it.shape()[d];
    for (int t = 0; t < N; ++t) c.strides[t][d] = it.strides(t)[d];
  }
  if (c.ndim == 0) {  // a 0-d iteration: one element at the base pointers
    c.ndim = 1;
    c.sizes[0] = 1;
    for (int t = 0; t < N; ++t) c.strides[t][0] = 0;
  }
  for (int t = 0; t < N; ++t) c.base[t] = it.data(t);
  return c;
}

template <int N, typename Body>
__global__ void __launch_bounds__(kThreads) iter_kernel(OffsetCalc<N> calc, int64_t n, Body body) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    char* p[N];
    calc.pointers(i, p);
    body(p);
  }
}

/// Blocks for a grid-stride loop over n elements (n > 0).
inline unsigned grid_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return unsigned(std::min<int64_t>(b, int64_t(1) << 16));
}

/// Runs body(p) for every element of `it` (p: pointers to its first N operands) on the
/// current stream; returns at once when there is nothing to do. `serial` runs one thread
/// over the elements in iteration order: a deterministic order for bodies that accumulate
/// with atomics (use_deterministic_algorithms), slow, and never the default.
template <int N, typename Body>
void launch_iter(const TensorIterator& it, Body body, bool serial = false) {
  const int64_t n = it.numel();
  if (n == 0) return;
  OffsetCalc<N> calc = make_offset_calc<N>(it);
  iter_kernel<N, Body>
      <<<serial ? 1u : grid_for(n), serial ? 1 : kThreads, 0, current_stream()>>>(calc, n, body);
  EMBER_CUDA_CHECK(cudaGetLastError());
}

template <typename Out, typename In, typename F>
struct UnaryBody {
  F f;
  __device__ __forceinline__ void operator()(char* (&p)[2]) const {
    using M = opmath_t<In>;
    *reinterpret_cast<Out*>(p[0]) = Out(f(M(*reinterpret_cast<const In*>(p[1]))));
  }
};

template <typename Out, typename In, typename F>
struct BinaryBody {
  F f;
  __device__ __forceinline__ void operator()(char* (&p)[3]) const {
    using M = opmath_t<In>;
    *reinterpret_cast<Out*>(p[0]) =
        Out(f(M(*reinterpret_cast<const In*>(p[1])), M(*reinterpret_cast<const In*>(p[2]))));
  }
};

/// The `Loops` the backend-neutral kernels of kernels/elementwise_kernels.h take.
struct CudaLoops {
  template <typename Out, typename In, typename F>
  static void unary(TensorIterator& it, F f) {
    launch_iter<2>(it, UnaryBody<Out, In, F>{f});
  }
  template <typename Out, typename In, typename F>
  static void binary(TensorIterator& it, F f) {
    launch_iter<3>(it, BinaryBody<Out, In, F>{f});
  }
};

}  // namespace ember::cuda
