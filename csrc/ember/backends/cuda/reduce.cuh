// The CUDA reduction engine: one block per output element ("row"), the block's
// threads striding over the reduced positions, then a warp-shuffle and
// shared-memory tree. Used by reduce_sum.cu and reduce_minmax.cu.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/backends/cuda/cuda_check.h"
#include "ember/kernels/functors.h"
#include "ember/kernels/stubs/reduce.h"

namespace ember::cuda {

// Note [CUDA reductions]
// The input's dims split into kept dims (one output each) and reduced dims, both
// kept in their original order, size-1 dims dropped, neighbours merged when their
// input strides allow. The outputs of ReduceArgs are fresh contiguous tensors of
// the input's rank with size 1 on the reduced dims, so output k (row-major over
// the kept dims) is at element offset k. Reduced position r is row-major over the
// reduced dims in their original order: the index argmax reports, as on the CPU.
// Block b reduces outputs b, b + gridDim.x, ...; thread t accumulates positions
// t, t + blockDim.x, ... in increasing order, then the block combines the
// accumulators by warp shuffles and a shared-memory stage. The block size depends
// only on the reduced count, so results are deterministic run to run. An Op
// provides (all __device__):
//   using acc_t;  acc_t init();  acc_t step(acc_t, T x, int64_t pos);
//   acc_t combine(acc_t a, acc_t b);  void store(const acc_t&, int64_t k)
// and must make combine order-insensitive where the CPU's result is (argmax picks
// the smallest index among equals by comparing indices, not by order).
constexpr int kMaxReduceDims = 12;

struct ReduceGeom {
  int nkept = 0, nred = 0;
  int64_t ksize[kMaxReduceDims], kstride[kMaxReduceDims];  // kept dims, outer to inner
  int64_t rsize[kMaxReduceDims], rstride[kMaxReduceDims];  // reduced dims, outer to inner
  int64_t K = 1, R = 1;

  __device__ __forceinline__ int64_t kept_offset(int64_t k) const {
    int64_t off = 0;
    for (int d = nkept - 1; d >= 0; --d) {
      off += (k % ksize[d]) * kstride[d];
      k /= ksize[d];
    }
    return off;
  }
  __device__ __forceinline__ int64_t red_offset(int64_t r) const {
    if (nred == 1) return r * rstride[0];
    int64_t off = 0;
    for (int d = nred - 1; d >= 0; --d) {
      off += (r % rsize[d]) * rstride[d];
      r /= rsize[d];
    }
    return off;
  }
};

/// The geometry of reducing `in` over the dims where mask[d] != 0 (Note [CUDA reductions]).
inline ReduceGeom make_reduce_geom(const Tensor& in, const Shape& mask) {
  ReduceGeom g;
  std::vector<int64_t> ks, kst, rs, rst;
  for (int64_t d = 0; d < in.dim(); ++d) {
    const int64_t size = in.sizes()[d], stride = in.strides()[d];
    const bool red = mask[d] != 0;
    (red ? g.R : g.K) *= size;
    if (size == 1) continue;
    auto& sz = red ? rs : ks;
    auto& st = red ? rst : kst;
    if (!sz.empty() && st.back() == stride * size) {  // merge with the outer neighbour
      sz.back() *= size;
      st.back() = stride;
    } else {
      sz.push_back(size);
      st.push_back(stride);
    }
  }
  EMBER_CHECK(ks.size() <= size_t(kMaxReduceDims) && rs.size() <= size_t(kMaxReduceDims),
              "CUDA reductions support at most ", kMaxReduceDims,
              " non-mergeable kept and reduced dims, got ", ks.size(), " and ", rs.size());
  g.nkept = int(ks.size());
  g.nred = int(rs.size());
  for (int i = 0; i < g.nkept; ++i) {
    g.ksize[i] = ks[size_t(i)];
    g.kstride[i] = kst[size_t(i)];
  }
  for (int i = 0; i < g.nred; ++i) {
    g.rsize[i] = rs[size_t(i)];
    g.rstride[i] = rst[size_t(i)];
  }
  if (g.nred == 0) {  // nothing (or only size-1 dims) reduced: one-element rows
    g.nred = 1;
    g.rsize[0] = 1;
    g.rstride[0] = 0;
  }
  return g;
}

/// A warp shuffle of any trivially copyable value, 32 bits at a time: `shfl(word)` is one
/// __shfl_*_sync of a 32-bit word (every lane must take part).
template <typename A, typename Shfl>
__device__ __forceinline__ A shfl_words(const A& v, Shfl shfl) {
  constexpr int W = int((sizeof(A) + 3) / 4);
  unsigned w[W];
  w[W - 1] = 0;
  memcpy(w, &v, sizeof(A));
#pragma unroll
  for (int i = 0; i < W; ++i) w[i] = shfl(w[i]);
  A r;
  memcpy(&r, w, sizeof(A));
  return r;
}
template <typename A>
__device__ __forceinline__ A shfl_down_any(const A& v, int delta) {
  return shfl_words(v, [delta](unsigned x) { return __shfl_down_sync(0xffffffffu, x, delta); });
}
template <typename A>
__device__ __forceinline__ A shfl_up_any(const A& v, int delta) {
  return shfl_words(v, [delta](unsigned x) { return __shfl_up_sync(0xffffffffu, x, delta); });
}
/// A broadcast from `lane`.
template <typename A>
__device__ __forceinline__ A shfl_any(const A& v, int lane) {
  return shfl_words(v, [lane](unsigned x) { return __shfl_sync(0xffffffffu, x, lane); });
}

/// Combines every thread's `v` (blockDim.x a multiple of 32, at most 1024); the result
/// is valid in thread 0. `smem` holds 32 accumulators.
template <typename A, typename Op>
__device__ __forceinline__ A block_reduce(A v, const Op& op, A* smem) {
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
  const int nwarps = int(blockDim.x) >> 5;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    A o = shfl_down_any(v, off);
    if (lane + off < 32) v = op.combine(v, o);
  }
  if (nwarps == 1) return v;
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < nwarps ? smem[lane] : op.init();
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
      A o = shfl_down_any(v, off);
      if (lane + off < 32) v = op.combine(v, o);
    }
  }
  __syncthreads();  // smem is reused by the block's next output
  return v;
}

template <typename T, typename Op>
__global__ void reduce_rows_kernel(const T* __restrict__ in, ReduceGeom g, Op op) {
  using A = typename Op::acc_t;
  __shared__ double2 raw[(32 * sizeof(A) + sizeof(double2) - 1) / sizeof(double2)];
  A* smem = reinterpret_cast<A*>(raw);
  for (int64_t k = blockIdx.x; k < g.K; k += gridDim.x) {
    const T* base = in + g.kept_offset(k);
    A acc = op.init();
    for (int64_t r = threadIdx.x; r < g.R; r += blockDim.x)
      acc = op.step(acc, base[g.red_offset(r)], r);
    acc = block_reduce(acc, op, smem);
    if (threadIdx.x == 0) op.store(acc, k);
  }
}

/// Runs the reduction `op` of `in` (element type T) over `mask` on the current stream.
template <typename T, typename Op>
void run_reduce(const Tensor& in, const Shape& mask, const Op& op) {
  const ReduceGeom g = make_reduce_geom(in, mask);
  if (g.K == 0) return;
  int threads = 512;
  if (g.R < 512) threads = int(std::max<int64_t>(32, (g.R + 31) / 32 * 32));
  const unsigned blocks = unsigned(std::min<int64_t>(g.K, int64_t(1) << 20));
  reduce_rows_kernel<T, Op>
      <<<blocks, threads, 0, current_stream()>>>(reinterpret_cast<const T*>(in.data_ptr()), g, op);
  EMBER_CUDA_CHECK(cudaGetLastError());
}

/// Converts an accumulator to the stored type (16-bit floats round from float).
template <typename O, typename A>
__device__ __forceinline__ O to_out(A a) {
  if constexpr (std::is_same<O, Half>::value || std::is_same<O, BFloat16>::value)
    return O(float(a));
  else
    return O(a);
}

}  // namespace ember::cuda
