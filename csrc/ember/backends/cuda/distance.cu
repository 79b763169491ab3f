// CUDA kernels of cdist (kernels/stubs/distance.h), in float32 or float64 as the CPU's.
//  * cdist_stub (the direct p-norm kernel): a block of 16x16 threads computes a 32x32 tile of
//    out[b] (2x2 outputs per thread), walking the features in slices of kSliceK: the slice of
//    32 rows of x1 and the slice of 32 columns of x2t are staged in shared memory with
//    coalesced loads, and every output folds its differences in feature order 0..M-1, the
//    CPU's order, with the CPU's rule per p (0: count of nonzero differences, NaN-propagating;
//    1: sum |d|; 2: sqrt of sum d^2; inf: max |d| as std::max, which skips NaN; otherwise
//    (sum |d|^p)^(1/p)). nvcc may contract d * d + acc into an FMA, so results may differ
//    from the CPU's in the last bit.
//  * euclidean_finish_stub: the squared row norms of x1 and x2 (one warp per row, summed in
//    double and rounded to the dtype, as the CPU), then one grid-stride pass
//    out <- sqrt(max(|x1_i|^2 + |x2_j|^2 - 2 out, 0)) with the CPU's rounding (no FMA, which
//    would change the result of the cancellation for near points).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/backends/cuda/cuda_check.h"
#include "ember/backends/cuda/loops.cuh"
#include "ember/kernels/distance_math.h"
#include "ember/kernels/registration.h"
#include "ember/kernels/stubs/distance.h"

namespace ember::cuda {
namespace {

constexpr int kTileThreads = 16;         // threads per tile side
constexpr int kTile = 2 * kTileThreads;  // outputs per tile side
constexpr int kSliceK = 16;              // features staged per step

// out (B, P, R) <- dist(x1[b, i], x2t[b, :, j]); grid.x: column tiles, grid.y: (batch, row
// tile) pairs, strided.
template <typename Op, typename T>
__global__ void __launch_bounds__(kTileThreads* kTileThreads)
    cdist_kernel_(T* __restrict__ out, const T* __restrict__ x1, const T* __restrict__ x2t,
                  int64_t B, int64_t P, int64_t M, int64_t R, T p) {
  __shared__ T xs[kTile][kSliceK + 1];  // x1 rows of the tile, one slice of features
  __shared__ T ys[kSliceK][kTile];      // x2t columns of the tile, the same slice
  const int tx = int(threadIdx.x), ty = int(threadIdx.y);
  const int tid = ty * kTileThreads + tx;
  const int64_t ptiles = (P + kTile - 1) / kTile;
  const int64_t j0 = int64_t(blockIdx.x) * kTile;
  for (int64_t bt = blockIdx.y; bt < B * ptiles; bt += gridDim.y) {
    const int64_t b = bt / ptiles, i0 = (bt % ptiles) * kTile;
    const T* a = x1 + b * P * M;
    const T* c = x2t + b * M * R;
    T acc[2][2] = {{T(0), T(0)}, {T(0), T(0)}};
    for (int64_t k0 = 0; k0 < M; k0 += kSliceK) {
      for (int e = tid; e < kTile * kSliceK; e += kTileThreads * kTileThreads) {
        const int r = e / kSliceK, kk = e % kSliceK;  // x1: consecutive features of a row
        const int64_t i = i0 + r, k = k0 + kk;
        xs[r][kk] = (i < P && k < M) ? a[i * M + k] : T(0);
        const int kr = e / kTile, jc = e % kTile;  // x2t: consecutive columns of a feature
        const int64_t kc = k0 + kr, j = j0 + jc;
        ys[kr][jc] = (kc < M && j < R) ? c[kc * R + j] : T(0);
      }
      __syncthreads();
      const int kn = M - k0 < kSliceK ? int(M - k0) : kSliceK;
      for (int kk = 0; kk < kn; ++kk) {
        const T a0 = xs[ty][kk], a1 = xs[ty + kTileThreads][kk];
        const T c0 = ys[kk][tx], c1 = ys[kk][tx + kTileThreads];
        acc[0][0] = Op::step(acc[0][0], a0 - c0, p);
        acc[0][1] = Op::step(acc[0][1], a0 - c1, p);
        acc[1][0] = Op::step(acc[1][0], a1 - c0, p);
        acc[1][1] = Op::step(acc[1][1], a1 - c1, p);
      }
      __syncthreads();
    }
    for (int u = 0; u < 2; ++u) {
      const int64_t i = i0 + ty + u * kTileThreads;
      if (i >= P) continue;
      for (int v = 0; v < 2; ++v) {
        const int64_t j = j0 + tx + v * kTileThreads;
        if (j < R) out[(b * P + i) * R + j] = Op::finish(acc[u][v], p);
      }
    }
  }
}

template <typename Op, typename T>
void cdist_typed(const Tensor& out, const Tensor& x1, const Tensor& x2t, T p) {
  const int64_t B = x1.sizes()[0], P = x1.sizes()[1], M = x1.sizes()[2], R = x2t.sizes()[2];
  if (B == 0 || P == 0 || R == 0) return;
  const int64_t ctiles = (R + kTile - 1) / kTile, ptiles = (P + kTile - 1) / kTile;
  EMBER_CHECK(ctiles < (int64_t(1) << 31), "cdist (CUDA): too many columns (", R, ")");
  const dim3 grid(unsigned(ctiles), unsigned(std::min<int64_t>(B * ptiles, 65535)));
  const dim3 block(kTileThreads, kTileThreads);
  cdist_kernel_<Op, T><<<grid, block, 0, current_stream()>>>(
      reinterpret_cast<T*>(out.data_ptr()), reinterpret_cast<const T*>(x1.data_ptr()),
      reinterpret_cast<const T*>(x2t.data_ptr()), B, P, M, R, p);
  EMBER_CUDA_CHECK(cudaGetLastError());
}

void cdist_kernel(const Tensor& out, const Tensor& x1, const Tensor& x2t, double p) {
  EMBER_CHECK(out.is_contiguous() && x1.is_contiguous() && x2t.is_contiguous(),
              "cdist (CUDA): expected contiguous operands");
  distance_math::with_rule(p, out.dtype() == DType::Float64, [&](auto rule, auto t) {
    using T = decltype(t);
    cdist_typed<decltype(rule), T>(out, x1, x2t, T(p));
  });
}

// dst[r] <- sum_k x[r, k]^2 (in double, rounded to T) for the rows of x1 (r < rows1) and then
// of x2; one warp per row.
template <typename T>
__global__ void row_norms_kernel(T* __restrict__ n1, T* __restrict__ n2, const T* __restrict__ x1,
                                 const T* __restrict__ x2, int64_t rows1, int64_t rows2,
                                 int64_t M) {
  const int lane = int(threadIdx.x) & 31;
  const int64_t warps = (int64_t(blockDim.x) * gridDim.x) >> 5;
  for (int64_t w = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; w < rows1 + rows2;
       w += warps) {
    const bool first = w < rows1;
    const T* row = first ? x1 + w * M : x2 + (w - rows1) * M;
    double s = 0;
    for (int64_t k = lane; k < M; k += 32) s += double(row[k]) * double(row[k]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
    if (lane == 0) (first ? n1[w] : n2[w - rows1]) = T(s);
  }
}

__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }

template <typename T>
__global__ void euclidean_finish_kernel_(T* __restrict__ out, const T* __restrict__ n1,
                                         const T* __restrict__ n2, int64_t P, int64_t R,
                                         int64_t total) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < total; idx += step) {
    const int64_t r = idx / R, j = idx % R;
    const T d2 = sub_rn(add_rn(n1[r], n2[(r / P) * R + j]), mul_rn(T(2), out[idx]));
    out[idx] = std::sqrt(d2 < T(0) ? T(0) : d2);  // std::max(d2, 0): NaN stays NaN
  }
}

template <typename T>
void euclidean_typed(const Tensor& out, const Tensor& x1, const Tensor& x2) {
  const int64_t B = x1.sizes()[0], P = x1.sizes()[1], M = x1.sizes()[2], R = x2.sizes()[1];
  const int64_t total = B * P * R;
  if (total == 0) return;
  const Device dev = out.device();
  Tensor n1 = empty(Shape{B * P}, out.dtype(), dev), n2 = empty(Shape{B * R}, out.dtype(), dev);
  const cudaStream_t stream = current_stream();
  const int64_t rows = B * P + B * R;
  const unsigned nb = unsigned(std::min<int64_t>((rows * 32 + kThreads - 1) / kThreads, 1 << 16));
  row_norms_kernel<T><<<nb, kThreads, 0, stream>>>(
      reinterpret_cast<T*>(n1.data_ptr()), reinterpret_cast<T*>(n2.data_ptr()),
      reinterpret_cast<const T*>(x1.data_ptr()), reinterpret_cast<const T*>(x2.data_ptr()), B * P,
      B * R, M);
  EMBER_CUDA_CHECK(cudaGetLastError());
  euclidean_finish_kernel_<T><<<grid_for(total), kThreads, 0, stream>>>(
      reinterpret_cast<T*>(out.data_ptr()), reinterpret_cast<const T*>(n1.data_ptr()),
      reinterpret_cast<const T*>(n2.data_ptr()), P, R, total);
  EMBER_CUDA_CHECK(cudaGetLastError());
}

void euclidean_finish_kernel(const Tensor& out, const Tensor& x1, const Tensor& x2) {
  EMBER_CHECK(out.is_contiguous() && x1.is_contiguous() && x2.is_contiguous(),
              "cdist (CUDA): expected contiguous operands");
  if (out.dtype() == DType::Float64)
    euclidean_typed<double>(out, x1, x2);
  else
    euclidean_typed<float>(out, x1, x2);
}

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, distance) {
  constexpr int cuda = int(DeviceType::CUDA);
  cdist_stub.fns[cuda] = &cdist_kernel;
  euclidean_finish_stub.fns[cuda] = &euclidean_finish_kernel;
}

}  // namespace ember::cuda
