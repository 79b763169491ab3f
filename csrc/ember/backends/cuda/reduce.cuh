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

// Note [Split CUDA reductions]
// One block per output starves the GPU when there are few outputs: a full sum of 64M floats
// ran on one block at 5 GB/s. And when the kept dim is the contiguous one (a sum over the
// batch dim of [N, C], as a bias gradient is), a block per output reads a strided column.
// So run_reduce picks one of three shapes:
//  * rows (the kernel above): enough outputs to fill the GPU;
//  * split rows: few outputs with long rows; grid (splits, K), each block reducing a chunk of
//    its row into partial[s * K + k], then reduce_partials_kernel combines the chunks in
//    order and stores;
//  * columns: the innermost kept dim has stride 1 and the innermost reduced one does not;
//    one thread per output (neighbouring threads read neighbouring addresses), the reduced
//    positions split over gridDim.y when the outputs alone cannot fill the GPU.
// The split depends only on the shape and the device's multiprocessor count, so results stay
// deterministic run to run.
template <typename T, typename Op>
__global__ void reduce_rows_split_kernel(const T* __restrict__ in, ReduceGeom g, Op op,
                                         typename Op::acc_t* __restrict__ partial, int64_t chunk) {
  using A = typename Op::acc_t;
  __shared__ double2 raw[(32 * sizeof(A) + sizeof(double2) - 1) / sizeof(double2)];
  A* smem = reinterpret_cast<A*>(raw);
  const int64_t k = blockIdx.y;
  const int64_t r0 = int64_t(blockIdx.x) * chunk, r1 = min(g.R, r0 + chunk);
  const T* base = in + g.kept_offset(k);
  A acc = op.init();
  for (int64_t r = r0 + threadIdx.x; r < r1; r += blockDim.x)
    acc = op.step(acc, base[g.red_offset(r)], r);
  acc = block_reduce(acc, op, smem);
  if (threadIdx.x == 0) partial[int64_t(blockIdx.x) * g.K + k] = acc;
}

template <typename T, typename Op>
__global__ void reduce_cols_kernel(const T* __restrict__ in, ReduceGeom g, Op op,
                                   typename Op::acc_t* __restrict__ partial, int64_t chunk) {
  using A = typename Op::acc_t;
  const int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= g.K) return;
  const int64_t r0 = int64_t(blockIdx.y) * chunk, r1 = min(g.R, r0 + chunk);
  const T* base = in + g.kept_offset(k);
  A acc = op.init();
  for (int64_t r = r0; r < r1; ++r) acc = op.step(acc, base[g.red_offset(r)], r);
  if (gridDim.y == 1)
    op.store(acc, k);
  else
    partial[int64_t(blockIdx.y) * g.K + k] = acc;
}

template <typename Op>
__global__ void reduce_partials_kernel(const typename Op::acc_t* __restrict__ partial, int64_t K,
                                       int splits, Op op) {
  const int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= K) return;
  typename Op::acc_t acc = partial[k];
  for (int s = 1; s < splits; ++s) acc = op.combine(acc, partial[int64_t(s) * K + k]);
  op.store(acc, k);
}

/// Runs the reduction `op` of `in` (element type T) over `mask` on the current stream
/// (Note [CUDA reductions], Note [Split CUDA reductions]).
template <typename T, typename Op>
void run_reduce(const Tensor& in, const Shape& mask, const Op& op) {
  using A = typename Op::acc_t;
  const ReduceGeom g = make_reduce_geom(in, mask);
  if (g.K == 0) return;
  const T* src = reinterpret_cast<const T*>(in.data_ptr());
  cudaStream_t stream = current_stream();
  const int64_t target_threads = int64_t(multiprocessor_count()) * 2048;
  auto cdiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  auto finish = [&](const Tensor& ws, int splits) {
    reduce_partials_kernel<Op><<<unsigned(cdiv(g.K, 256)), 256, 0, stream>>>(
        reinterpret_cast<const A*>(ws.data_ptr()), g.K, splits, op);
    EMBER_CUDA_CHECK(cudaGetLastError());
  };
  const bool kept_inner =
      g.nkept > 0 && g.kstride[g.nkept - 1] == 1 && g.R > 1 && g.rstride[g.nred - 1] != 1;
  if (kept_inner) {
    // columns: splits so that K * splits threads fill the GPU, each summing >= 32 positions
    int64_t splits = std::min<int64_t>({cdiv(target_threads, g.K), cdiv(g.R, 32), 65535});
    splits = std::max<int64_t>(splits, 1);
    const int64_t chunk = cdiv(g.R, splits);
    splits = cdiv(g.R, chunk);
    Tensor ws;
    if (splits > 1)
      ws = empty(Shape{int64_t(splits * g.K * int64_t(sizeof(A)))}, DType::UInt8, in.device());
    const dim3 grid(unsigned(cdiv(g.K, 256)), unsigned(splits));
    reduce_cols_kernel<T, Op><<<grid, 256, 0, stream>>>(
        src, g, op, splits > 1 ? reinterpret_cast<A*>(ws.data_ptr()) : nullptr, chunk);
    EMBER_CUDA_CHECK(cudaGetLastError());
    if (splits > 1) finish(ws, int(splits));
    return;
  }
  int threads = 512;
  if (g.R < 512) threads = int(std::max<int64_t>(32, (g.R + 31) / 32 * 32));
  const int64_t target_blocks = target_threads / 512;
  if (g.K < target_blocks && g.K <= 65535 && g.R >= 8192) {
    // split rows: enough blocks to fill the GPU, each reducing >= 4096 positions
    int64_t splits = std::min<int64_t>(cdiv(target_blocks, g.K), cdiv(g.R, 4096));
    const int64_t chunk = cdiv(g.R, splits);
    splits = cdiv(g.R, chunk);
    Tensor ws = empty(Shape{int64_t(splits * g.K * int64_t(sizeof(A)))}, DType::UInt8, in.device());
    reduce_rows_split_kernel<T, Op><<<dim3(unsigned(splits), unsigned(g.K)), 512, 0, stream>>>(
        src, g, op, reinterpret_cast<A*>(ws.data_ptr()), chunk);
    EMBER_CUDA_CHECK(cudaGetLastError());
    finish(ws, int(splits));
    return;
  }
  const unsigned blocks = unsigned(std::min<int64_t>(g.K, int64_t(1) << 20));
  reduce_rows_kernel<T, Op><<<blocks, threads, 0, stream>>>(src, g, op);
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
