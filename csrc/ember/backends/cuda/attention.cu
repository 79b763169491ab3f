// CUDA kernels of scaled_dot_product_attention's fused path, sdpa_fwd and sdpa_bwd
// (kernels/stubs/nn_attention.h): flash-attention style, the L x S score matrix is never
// formed. The CPU kernels (backends/cpu/nn_attention.cpp) define the results; only float32
// and float64 reach the stubs (16-bit inputs run on float copies in ops/nn_attention.cpp),
// and everything computes in the tensor's dtype, as the CPU.
//
// Note [CUDA flash attention]
// Tiles are 32 x 32: a block of 256 threads (8 warps) owns 32 rows of a tile, warp w rows
// w, w + 8, w + 16, w + 24, and lane l holds the tile's column l. So a row of scores lives
// in one warp: its max and sum are warp shuffles, and the row's probabilities reach the
// product with V through shuffles, no shared memory and no block barrier.
//  * Scores (dot_tile): the row and column operands are staged through shared memory in
//    chunks of 32 of the head dim ([32][33], padded against bank conflicts), so any head
//    dim works; the queries are multiplied by the scale when they are staged, as the CPU
//    multiplies q by the scale before the dot products.
//  * Products (acc_tile): acc[r][e] = acc[r][e] * alpha[r] + sum_c coef[r][c] * M[c][e],
//    M staged in chunks of 32 columns. The accumulators are the block's rows of the
//    output, in dynamic shared memory when they fit (H100: up to ~220 KB a block), else
//    in the output tensor itself (it has the accumulator's type, T): every element is
//    read and written by one thread only, so both are race-free.
//  * Forward: a block per (batch * head, 32 queries); key tiles streamed with the online
//    softmax (running max m and sum l per row, rescale by exp(m_old - m_new)); out = o / l
//    and lse = m + log(l); rows with no finite score get out 0 and lse -inf (as the CPU).
//  * Backward (FlashAttention-2, deterministic, no atomics): D_i = dO_i . O_i (one warp
//    a row), then one kernel per query tile for dQ (loops over key tiles) and one per key
//    tile of a (batch, kv head) for dK and dV (loops over the group's query heads and the
//    query tiles), each recomputing P = exp(s - lse) and dS = P * (dP - D) (with dropout,
//    P * Z and P * (Z dP - D): Note [Fused attention dropout]; Z is SdpaDropout's hash of
//    the same (seed, offset, batch * head, row, column) as on the CPU).
// Masks are read through their strides (expanded dims have stride 0); causal masks key
// j > query i. The kernels take the tensors on the current device and stream.
#include <cuda_runtime.h>

#include <cmath>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/backends/cuda/cuda_check.h"
#include "ember/kernels/registration.h"
#include "ember/kernels/stubs/nn_attention.h"

namespace ember::cuda {
namespace {

constexpr int kT = 32;             // rows and columns of a tile (a warp's width)
constexpr int kWarps = 8;          // warps of a block
constexpr int kBlk = kWarps * 32;  // threads of a block
constexpr int kRpw = kT / kWarps;  // rows of a tile per warp
constexpr int kLd = kT + 1;        // leading dim of a staged [32][32] chunk
constexpr unsigned kFull = 0xffffffffu;

__device__ __forceinline__ float exp_(float x) { return expf(x); }
__device__ __forceinline__ double exp_(double x) { return exp(x); }
__device__ __forceinline__ float log_(float x) { return logf(x); }
__device__ __forceinline__ double log_(double x) { return log(x); }

template <typename T>
__device__ __forceinline__ T ninf() {
  return -T(INFINITY);
}

// The largest of the warp's values, NaN skipped (fmax), to every lane.
template <typename T>
__device__ __forceinline__ T warp_max(T v) {
  for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_xor_sync(kFull, v, o));
  return v;
}
template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  return v;
}

// A matrix read through element strides: (r, c) at p[r * rs + c * cs], rows < n valid.
template <typename T>
struct Mat {
  const T* p;
  int64_t rs, cs, n;
};

// Stages chunk [32 rows][32 cols from c0] of m (times sc) into s, zero outside (rows >= m.n,
// cols >= D). Consecutive threads read consecutive columns (coalesced when cs is 1).
template <typename T>
__device__ __forceinline__ void stage(T* s, const Mat<T>& m, int64_t c0, int64_t D, T sc) {
  for (int idx = threadIdx.x; idx < kT * kT; idx += kBlk) {
    const int r = idx / kT, c = idx % kT;
    T x = T(0);
    if (r < m.n && c0 + c < D) x = m.p[r * m.rs + (c0 + c) * m.cs] * sc;
    s[r * kLd + c] = x;
  }
}

// acc[k] += sum_{d < D} (a[w + 8k][d] * asc) * (b[lane][d] * bsc). Every thread of the
// block calls it (barriers inside).
template <typename T>
__device__ __forceinline__ void dot_tile(T (&acc)[kRpw], const Mat<T>& a, T asc, const Mat<T>& b,
                                         T bsc, int64_t D, T* sa, T* sb) {
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int64_t d0 = 0; d0 < D; d0 += kT) {
    __syncthreads();  // the previous chunk (or product) is read by everyone
    stage(sa, a, d0, D, asc);
    stage(sb, b, d0, D, bsc);
    __syncthreads();
    const int nd = int(D - d0 < kT ? D - d0 : kT);
    for (int d = 0; d < nd; ++d) {
      const T bv = sb[lane * kLd + d];
#pragma unroll
      for (int k = 0; k < kRpw; ++k) acc[k] += sa[(w + kWarps * k) * kLd + d] * bv;
    }
  }
}

// For the rows w + 8k with act[k]: acc[row][e] = acc[row][e] * alpha[k] + sum_c coef_c * m[c][e]
// for e < D, coef_c being lane c's coef[k]; acc rows have leading dim ld. Every thread of the
// block calls it.
template <typename T>
__device__ __forceinline__ void acc_tile(T* acc, int64_t ld, const T (&coef)[kRpw],
                                         const T (&alpha)[kRpw], const bool (&act)[kRpw],
                                         const Mat<T>& m, T msc, int64_t D, T* sb) {
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int64_t e0 = 0; e0 < D; e0 += kT) {
    __syncthreads();
    stage(sb, m, e0, D, msc);
    __syncthreads();
    const int64_t e = e0 + lane;
#pragma unroll
    for (int k = 0; k < kRpw; ++k) {
      if (!act[k]) continue;  // uniform over the warp: the row is the warp's
      T o = T(0);
#pragma unroll 8
      for (int c = 0; c < kT; ++c) o += __shfl_sync(kFull, coef[k], c) * sb[c * kLd + lane];
      if (e < D) {
        T* pa = acc + int64_t(w + kWarps * k) * ld + e;
        *pa = *pa * alpha[k] + o;
      }
    }
  }
}

struct Geo {
  int64_t s0, s1, s2, s3;
};
Geo geo(const Tensor& t) {
  return {t.strides()[0], t.strides()[1], t.strides()[2], t.strides()[3]};
}

template <typename T>
struct Params {
  const T *q, *k, *v, *mask, *out, *lse, *dout, *D;
  T *o, *l, *dq, *dk, *dv;
  Geo gq, gk, gv, gm;
  int64_t Hq, Hk, L, S, E, Ev, group, tiles;
  bool causal, smem_acc;
  T scale;
  SdpaDropout drop;
};

// The score's mask and causal -inf (query i, key j of batch b, head h).
template <typename T>
__device__ __forceinline__ T masked(const Params<T>& p, T x, int64_t b, int64_t h, int64_t i,
                                    int64_t j) {
  if (p.mask) x += p.mask[b * p.gm.s0 + h * p.gm.s1 + i * p.gm.s2 + j * p.gm.s3];
  if (p.causal && j > i) x = ninf<T>();
  return x;
}

template <typename T>
__global__ void __launch_bounds__(kBlk) fwd_kernel(Params<T> p) {
  extern __shared__ __align__(16) unsigned char dyn[];
  __shared__ T sa[kT * kLd], sb[kT * kLd];
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t bh = blockIdx.x / p.tiles, i0 = (blockIdx.x % p.tiles) * kT;
  const int64_t b = bh / p.Hq, h = bh % p.Hq, hk = h / p.group;
  const int64_t nq = p.L - i0 < kT ? p.L - i0 : kT, Ev = p.Ev;
  T* acc = p.smem_acc ? reinterpret_cast<T*>(dyn) : p.o + (bh * p.L + i0) * Ev;
  const Mat<T> qm{p.q + b * p.gq.s0 + h * p.gq.s1 + i0 * p.gq.s2, p.gq.s2, p.gq.s3, nq};
  const T* kb = p.k + b * p.gk.s0 + hk * p.gk.s1;
  const T* vb = p.v + b * p.gv.s0 + hk * p.gv.s1;
  const T sc = T(1.0 / (1.0 - p.drop.p));
  bool live[kRpw];
  T m[kRpw], l[kRpw];
  uint32_t rk[kRpw];
#pragma unroll
  for (int k = 0; k < kRpw; ++k) {
    const int r = w + kWarps * k;
    live[k] = r < nq;
    m[k] = ninf<T>();
    l[k] = T(0);
    rk[k] = p.drop.on() ? p.drop.row(bh, i0 + r) : 0u;
    if (live[k])
      for (int64_t e = lane; e < Ev; e += 32) acc[r * Ev + e] = T(0);
  }
  const int64_t jend = p.causal ? (p.S < i0 + nq ? p.S : i0 + nq) : p.S;
  for (int64_t j0 = 0; j0 < jend; j0 += kT) {
    const int64_t nb = jend - j0 < kT ? jend - j0 : kT, j = j0 + lane;
    T s[kRpw] = {};
    dot_tile(s, qm, p.scale, Mat<T>{kb + j0 * p.gk.s2, p.gk.s2, p.gk.s3, nb}, T(1), p.E, sa, sb);
    T pc[kRpw], alpha[kRpw];
    bool act[kRpw];
#pragma unroll
    for (int k = 0; k < kRpw; ++k) {
      pc[k] = T(0);
      alpha[k] = T(1);
      act[k] = false;
      if (!live[k]) continue;
      const int64_t i = i0 + w + kWarps * k;
      const T x = lane < nb ? masked(p, s[k], b, h, i, j) : ninf<T>();
      const T bm = warp_max(x);
      if (bm == ninf<T>()) continue;  // nothing in this tile for the row
      if (bm > m[k]) {
        alpha[k] = m[k] == ninf<T>() ? T(0) : exp_(m[k] - bm);
        l[k] *= alpha[k];
        m[k] = bm;
      }
      T e = exp_(x - m[k]);
      l[k] += warp_sum(e);
      if (p.drop.on()) e = SdpaDropout::keep(rk[k], j, p.drop.threshold) ? e * sc : T(0);
      pc[k] = e;
      act[k] = true;
    }
    acc_tile(acc, Ev, pc, alpha, act, Mat<T>{vb + j0 * p.gv.s2, p.gv.s2, p.gv.s3, nb}, T(1), Ev,
             sb);
  }
#pragma unroll
  for (int k = 0; k < kRpw; ++k) {
    if (!live[k]) continue;
    const int r = w + kWarps * k;
    const int64_t row = bh * p.L + i0 + r;
    const bool empty_row = l[k] == T(0);
    const T inv = empty_row ? T(0) : T(1) / l[k];
    for (int64_t e = lane; e < Ev; e += 32)
      p.o[row * Ev + e] = empty_row ? T(0) : acc[r * Ev + e] * inv;
    if (lane == 0) p.l[row] = empty_row ? ninf<T>() : m[k] + log_(l[k]);
  }
}

// D[row] = dO[row] . O[row], one warp a row.
template <typename T>
__global__ void __launch_bounds__(kBlk)
    rowdot_kernel(const T* __restrict__ dout, const T* __restrict__ out, T* __restrict__ D,
                  int64_t rows, int64_t Ev) {
  const int lane = threadIdx.x % 32;
  const int64_t step = int64_t(gridDim.x) * kWarps;
  for (int64_t r = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32; r < rows; r += step) {
    T acc = T(0);
    for (int64_t e = lane; e < Ev; e += 32) acc += dout[r * Ev + e] * out[r * Ev + e];
    acc = warp_sum(acc);
    if (lane == 0) D[r] = acc;
  }
}

// dQ of 32 queries of one (batch, head): dQ = scale * sum_j dS[i, j] K[j].
template <typename T>
__global__ void __launch_bounds__(kBlk) dq_kernel(Params<T> p) {
  extern __shared__ __align__(16) unsigned char dyn[];
  __shared__ T sa[kT * kLd], sb[kT * kLd];
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t bh = blockIdx.x / p.tiles, i0 = (blockIdx.x % p.tiles) * kT;
  const int64_t b = bh / p.Hq, h = bh % p.Hq, hk = h / p.group;
  const int64_t nq = p.L - i0 < kT ? p.L - i0 : kT, E = p.E;
  T* acc = p.smem_acc ? reinterpret_cast<T*>(dyn) : p.dq + (bh * p.L + i0) * E;
  const Mat<T> qm{p.q + b * p.gq.s0 + h * p.gq.s1 + i0 * p.gq.s2, p.gq.s2, p.gq.s3, nq};
  const Mat<T> dom{p.dout + (bh * p.L + i0) * p.Ev, p.Ev, 1, nq};
  const T* kb = p.k + b * p.gk.s0 + hk * p.gk.s1;
  const T* vb = p.v + b * p.gv.s0 + hk * p.gv.s1;
  const T sc = T(1.0 / (1.0 - p.drop.p));
  bool live[kRpw];
  T li[kRpw], Di[kRpw], ones[kRpw];
  uint32_t rk[kRpw];
#pragma unroll
  for (int k = 0; k < kRpw; ++k) {
    const int r = w + kWarps * k;
    live[k] = r < nq;
    const int64_t row = bh * p.L + i0 + r;
    li[k] = live[k] ? p.lse[row] : ninf<T>();
    Di[k] = live[k] ? p.D[row] : T(0);
    ones[k] = T(1);
    rk[k] = p.drop.on() ? p.drop.row(bh, i0 + r) : 0u;
    if (live[k])
      for (int64_t e = lane; e < E; e += 32) acc[r * E + e] = T(0);
  }
  const int64_t jend = p.causal ? (p.S < i0 + nq ? p.S : i0 + nq) : p.S;
  for (int64_t j0 = 0; j0 < jend; j0 += kT) {
    const int64_t nb = jend - j0 < kT ? jend - j0 : kT, j = j0 + lane;
    T s[kRpw] = {}, dp[kRpw] = {};
    dot_tile(s, qm, p.scale, Mat<T>{kb + j0 * p.gk.s2, p.gk.s2, p.gk.s3, nb}, T(1), E, sa, sb);
    dot_tile(dp, dom, T(1), Mat<T>{vb + j0 * p.gv.s2, p.gv.s2, p.gv.s3, nb}, T(1), p.Ev, sa, sb);
    T ds[kRpw];
    bool act[kRpw];
#pragma unroll
    for (int k = 0; k < kRpw; ++k) {
      ds[k] = T(0);
      act[k] = live[k] && li[k] != ninf<T>();
      if (!act[k] || lane >= nb) continue;
      const int64_t i = i0 + w + kWarps * k;
      const T pr = exp_(masked(p, s[k], b, h, i, j) - li[k]);
      if (p.drop.on()) {
        const T z = SdpaDropout::keep(rk[k], j, p.drop.threshold) ? sc : T(0);
        ds[k] = pr * (z * dp[k] - Di[k]);
      } else {
        ds[k] = pr * (dp[k] - Di[k]);
      }
    }
    acc_tile(acc, E, ds, ones, act, Mat<T>{kb + j0 * p.gk.s2, p.gk.s2, p.gk.s3, nb}, T(1), E, sb);
  }
#pragma unroll
  for (int k = 0; k < kRpw; ++k) {
    if (!live[k]) continue;
    const int r = w + kWarps * k;
    T* out = p.dq + (bh * p.L + i0 + r) * E;
    for (int64_t e = lane; e < E; e += 32) out[e] = acc[r * E + e] * p.scale;
  }
}

// dK and dV of 32 keys of one (batch, kv head), over the group's query heads:
// dV[j] = sum_i P[i, j] Z[i, j] dO[i],  dK[j] = sum_i dS[i, j] (Q[i] * scale).
template <typename T>
__global__ void __launch_bounds__(kBlk) dkv_kernel(Params<T> p) {
  extern __shared__ __align__(16) unsigned char dyn[];
  __shared__ T sa[kT * kLd], sb[kT * kLd];
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t bhk = blockIdx.x / p.tiles, j0 = (blockIdx.x % p.tiles) * kT;
  const int64_t b = bhk / p.Hk, hk = bhk % p.Hk;
  const int64_t nk = p.S - j0 < kT ? p.S - j0 : kT, E = p.E, Ev = p.Ev;
  T* dk = p.smem_acc ? reinterpret_cast<T*>(dyn) : p.dk + (bhk * p.S + j0) * E;
  T* dv = p.smem_acc ? reinterpret_cast<T*>(dyn) + kT * E : p.dv + (bhk * p.S + j0) * Ev;
  const Mat<T> km{p.k + b * p.gk.s0 + hk * p.gk.s1 + j0 * p.gk.s2, p.gk.s2, p.gk.s3, nk};
  const Mat<T> vm{p.v + b * p.gv.s0 + hk * p.gv.s1 + j0 * p.gv.s2, p.gv.s2, p.gv.s3, nk};
  const T sc = T(1.0 / (1.0 - p.drop.p));
  bool live[kRpw];
  T ones[kRpw];
#pragma unroll
  for (int k = 0; k < kRpw; ++k) {
    const int r = w + kWarps * k;
    live[k] = r < nk;
    ones[k] = T(1);
    if (live[k]) {
      for (int64_t e = lane; e < E; e += 32) dk[r * E + e] = T(0);
      for (int64_t e = lane; e < Ev; e += 32) dv[r * Ev + e] = T(0);
    }
  }
  // causal: queries i < j0 see none of these keys
  const int64_t istart = p.causal ? j0 : 0;
  for (int64_t h = hk * p.group; h < (hk + 1) * p.group; ++h) {
    const int64_t bh = b * p.Hq + h;
    for (int64_t i0 = istart; i0 < p.L; i0 += kT) {
      const int64_t nq = p.L - i0 < kT ? p.L - i0 : kT, i = i0 + lane;
      const Mat<T> qm{p.q + b * p.gq.s0 + h * p.gq.s1 + i0 * p.gq.s2, p.gq.s2, p.gq.s3, nq};
      const Mat<T> dom{p.dout + (bh * p.L + i0) * Ev, Ev, 1, nq};
      T s[kRpw] = {}, dp[kRpw] = {};
      dot_tile(s, km, T(1), qm, p.scale, E, sa, sb);
      dot_tile(dp, vm, T(1), dom, T(1), Ev, sa, sb);
      // lane i's query: its lse, D and dropout row key
      const bool qlive = lane < nq;
      const T li = qlive ? p.lse[bh * p.L + i] : ninf<T>();
      const T Di = qlive ? p.D[bh * p.L + i] : T(0);
      const uint32_t rk = p.drop.on() && qlive ? p.drop.row(bh, i) : 0u;
      T pz[kRpw], ds[kRpw];
      bool act[kRpw];
#pragma unroll
      for (int k = 0; k < kRpw; ++k) {
        pz[k] = ds[k] = T(0);
        act[k] = live[k];
        if (!live[k] || li == ninf<T>()) continue;  // (li is -inf for lanes past nq)
        const int64_t j = j0 + w + kWarps * k;
        const T pr = exp_(masked(p, s[k], b, h, i, j) - li);
        if (p.drop.on()) {
          const T z = SdpaDropout::keep(rk, j, p.drop.threshold) ? sc : T(0);
          pz[k] = pr * z;
          ds[k] = pr * (z * dp[k] - Di);
        } else {
          pz[k] = pr;
          ds[k] = pr * (dp[k] - Di);
        }
      }
      acc_tile(dv, Ev, pz, ones, act, dom, T(1), Ev, sb);
      acc_tile(dk, E, ds, ones, act, qm, p.scale, E, sb);
    }
  }
  if (!p.smem_acc) return;
#pragma unroll
  for (int k = 0; k < kRpw; ++k) {
    if (!live[k]) continue;
    const int r = w + kWarps * k;
    T* ok = p.dk + (bhk * p.S + j0 + r) * E;
    T* ov = p.dv + (bhk * p.S + j0 + r) * Ev;
    for (int64_t e = lane; e < E; e += 32) ok[e] = dk[r * E + e];
    for (int64_t e = lane; e < Ev; e += 32) ov[e] = dv[r * Ev + e];
  }
}

// Whether `bytes` of accumulators fit in a block's dynamic shared memory next to the staged
// chunks; if so, lets `kernel` use them.
template <typename K>
bool smem_fits(K kernel, size_t bytes, size_t static_bytes) {
  int dev = 0, optin = 0;
  EMBER_CUDA_CHECK(cudaGetDevice(&dev));
  EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  if (bytes + static_bytes + 1024 > size_t(optin)) return false;
  if (bytes > 48 * 1024 - static_bytes)
    EMBER_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  return true;
}

template <typename T, typename A>
Params<T> params_of(const A& a) {
  Params<T> p{};
  p.q = a.q.template data<T>();
  p.k = a.k.template data<T>();
  p.v = a.v.template data<T>();
  p.mask = a.mask.defined() ? a.mask.template data<T>() : nullptr;
  p.gq = geo(a.q);
  p.gk = geo(a.k);
  p.gv = geo(a.v);
  p.gm = a.mask.defined() ? geo(a.mask) : Geo{0, 0, 0, 0};
  p.Hq = a.q.size(1);
  p.Hk = a.k.size(1);
  p.L = a.q.size(2);
  p.S = a.k.size(2);
  p.E = a.q.size(3);
  p.Ev = a.v.size(3);
  p.group = p.Hq / p.Hk;
  p.causal = a.causal;
  p.scale = T(a.scale);
  p.drop = a.dropout;
  return p;
}

unsigned blocks_of(int64_t n) {
  EMBER_CHECK(n <= int64_t(0x7fffffff), "scaled_dot_product_attention: too many tiles (", n, ")");
  return unsigned(n);
}

constexpr size_t kStatic = 2;  // staged chunks per block

template <typename T>
void fwd(const SdpaFwdArgs& a) {
  Params<T> p = params_of<T>(a);
  p.o = a.out.data<T>();
  p.l = a.lse.data<T>();
  const int64_t B = a.q.size(0);
  p.tiles = (p.L + kT - 1) / kT;
  const size_t st = kStatic * kT * kLd * sizeof(T), bytes = size_t(kT * p.Ev) * sizeof(T);
  p.smem_acc = smem_fits(fwd_kernel<T>, bytes, st);
  const unsigned grid = blocks_of(B * p.Hq * p.tiles);
  fwd_kernel<T><<<grid, kBlk, p.smem_acc ? bytes : 0, current_stream()>>>(p);
  EMBER_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void bwd(const SdpaBwdArgs& a) {
  Params<T> p = params_of<T>(a);
  const int64_t B = a.q.size(0), rows = B * p.Hq * p.L;
  p.out = a.out.data<T>();
  p.lse = a.lse.data<T>();
  p.dout = a.dout.data<T>();
  p.dq = a.dq.data<T>();
  p.dk = a.dk.data<T>();
  p.dv = a.dv.data<T>();
  Tensor D = empty({rows}, a.q.dtype(), a.q.device());
  p.D = D.data<T>();
  cudaStream_t stream = current_stream();
  const int64_t rblocks = (rows + kWarps - 1) / kWarps;
  rowdot_kernel<T><<<unsigned(rblocks < 65536 ? rblocks : 65536), kBlk, 0, stream>>>(
      p.dout, p.out, D.data<T>(), rows, p.Ev);
  EMBER_CUDA_CHECK(cudaGetLastError());
  const size_t st = kStatic * kT * kLd * sizeof(T);

  Params<T> pq = p;
  pq.tiles = (p.L + kT - 1) / kT;
  const size_t qbytes = size_t(kT * p.E) * sizeof(T);
  pq.smem_acc = smem_fits(dq_kernel<T>, qbytes, st);
  dq_kernel<T><<<blocks_of(B * p.Hq * pq.tiles), kBlk, pq.smem_acc ? qbytes : 0, stream>>>(pq);
  EMBER_CUDA_CHECK(cudaGetLastError());

  Params<T> pk = p;
  pk.tiles = (p.S + kT - 1) / kT;
  const size_t kbytes = size_t(kT * (p.E + p.Ev)) * sizeof(T);
  pk.smem_acc = smem_fits(dkv_kernel<T>, kbytes, st);
  dkv_kernel<T><<<blocks_of(B * p.Hk * pk.tiles), kBlk, pk.smem_acc ? kbytes : 0, stream>>>(pk);
  EMBER_CUDA_CHECK(cudaGetLastError());
}

void fwd_entry(const SdpaFwdArgs& a) {
  if (a.q.dtype() == DType::Float64) return fwd<double>(a);
  EMBER_CHECK(a.q.dtype() == DType::Float32, "scaled_dot_product_attention: unsupported dtype ",
              dtype_name(a.q.dtype()));
  fwd<float>(a);
}

void bwd_entry(const SdpaBwdArgs& a) {
  if (a.q.dtype() == DType::Float64) return bwd<double>(a);
  EMBER_CHECK(a.q.dtype() == DType::Float32, "scaled_dot_product_attention: unsupported dtype ",
              dtype_name(a.q.dtype()));
  bwd<float>(a);
}

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, attention) {
  sdpa_fwd_stub.fns[int(DeviceType::CUDA)] = &fwd_entry;
  sdpa_bwd_stub.fns[int(DeviceType::CUDA)] = &bwd_entry;
}

}  // namespace ember::cuda
