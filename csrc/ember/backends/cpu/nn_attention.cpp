// CPU kernels of scaled_dot_product_attention's fused path.
//
// Note [Flash attention on the CPU]
// The forward never forms the L x S score matrix. For each (batch, head) (one
// task of the thread pool) it packs K^T [E, S] and V [S, Ev] once, then walks
// every query row over blocks of kBK keys with the online softmax: the block's
// scores s = (q * scale) . K^T (+ mask), the running max m and sum l are
// rescaled when the max grows, and o += exp(s - m) V. The output is o / l and
// the row's logsumexp m + log(l) is the only thing saved for backward. The
// backward (one task per (batch, kv head), so grouped heads that share K and V
// accumulate dK/dV without races) recomputes P = exp(s - lse) block by block
// for kBQ query rows x kBK keys, and with D_i = dO_i . O_i:
//   dV += P^T dO,  dP = dO V^T,  dS = P * (dP - D),  dQ += dS K * scale,
//   dK += dS^T Q * scale.
// Masked scores are -inf; a row whose scores are all -inf has l = 0: its
// output, lse (-inf) and gradients are 0 (PyTorch's CPU flash kernel does the
// same). Head sizes 32/64/128 get compile-time loop bounds so the inner loops
// keep their accumulators in registers.
// See backends/cpu/nn_rnn.cpp: lets GCC vectorize the exp loops.
#pragma GCC optimize("no-trapping-math")
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "ember/backends/cpu/blas.h"
#include "ember/backends/cpu/capability.h"
#include "ember/backends/cpu/nn_rnn_math.h"
#include "ember/backends/cpu/nn_vec.h"
#include "ember/core/parallel.h"
#include "ember/kernels/stubs/nn_attention.h"

#ifdef __AVX__
#include <immintrin.h>
#endif

namespace ember::cpu {
namespace {

constexpr int64_t kBK = 64;  // keys per block
constexpr int64_t kBQ = 32;  // query rows per backward block

struct Geo {  // strides of a 4-D operand, in elements
  int64_t s0, s1, s2, s3;
  explicit Geo(const Tensor& t)
      : s0(t.strides()[0]), s1(t.strides()[1]), s2(t.strides()[2]), s3(t.strides()[3]) {}
};

// dst[r, c] <- src(r, c) for a rows x cols block read through strides.
template <typename T>
void pack(T* dst, const T* src, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[r * cols + c] = src[r * rs + c * cs];
}

// s[j] = sum_d a[d] * bt[d * kBK + j] for j < nb: one row of scores against a
// packed block of kBK keys (bt is the block's [D, kBK] transpose, zero-padded).
template <typename T, int DC>
inline void scores(T* __restrict__ s, const T* __restrict__ a, const T* __restrict__ bt, int64_t D,
                   int64_t nb) {
  const int64_t n = DC ? DC : D;
  T acc[kBK];
  for (int64_t j = 0; j < kBK; ++j) acc[j] = T(0);
  for (int64_t d = 0; d < n; ++d) {
    const T ad = a[d];
    const T* __restrict__ b = bt + d * kBK;
    for (int64_t j = 0; j < kBK; ++j) acc[j] += ad * b[j];
  }
  for (int64_t j = 0; j < nb; ++j) s[j] = acc[j];
}

// o[e] += sum_j p[j] * v[j * n + e] (n = Ev).
template <typename T, int DC>
inline void accumulate_rows(T* __restrict__ o, const T* __restrict__ p, const T* __restrict__ v,
                            int64_t nb, int64_t Ev, int64_t pstride = 1) {
  if constexpr (DC > 0) {
    T acc[DC];
    for (int64_t e = 0; e < DC; ++e) acc[e] = o[e];
    for (int64_t j = 0; j < nb; ++j) {
      const T pj = p[j * pstride];
      const T* __restrict__ vr = v + j * DC;
      for (int64_t e = 0; e < DC; ++e) acc[e] += pj * vr[e];
    }
    for (int64_t e = 0; e < DC; ++e) o[e] = acc[e];
  } else {
    for (int64_t j = 0; j < nb; ++j) {
      const T pj = p[j * pstride];
      const T* __restrict__ vr = v + j * Ev;
      for (int64_t e = 0; e < Ev; ++e) o[e] += pj * vr[e];
    }
  }
}

template <typename T>
inline void exp_shift(T* __restrict__ s, T shift, int64_t nb) {
  for (int64_t j = 0; j < nb; ++j) s[j] = nnmath::exp_(s[j] - shift);
}

// Packs the [S, D] matrix src (strides rs, cs) as blocks of kBK rows, each stored
// transposed [D, kBK] and zero-padded: dst[(jb * D + d) * kBK + jj] = src[jb * kBK + jj, d].
template <typename T>
void pack_blocked_t(T* dst, const T* src, int64_t S, int64_t D, int64_t rs, int64_t cs) {
  const int64_t nblk = (S + kBK - 1) / kBK;
  for (int64_t jb = 0; jb < nblk; ++jb)
    for (int64_t d = 0; d < D; ++d) {
      T* out = dst + (jb * D + d) * kBK;
      for (int64_t jj = 0; jj < kBK; ++jj) {
        const int64_t j = jb * kBK + jj;
        out[jj] = j < S ? src[j * rs + d * cs] : T(0);
      }
    }
}

template <typename T>
inline void add_mask_and_causal(T* s, const T* mrow, int64_t ms3, int64_t j0, int64_t nb,
                                bool causal, int64_t i) {
  if (mrow)
    for (int64_t j = 0; j < nb; ++j) s[j] += mrow[(j0 + j) * ms3];
  if (causal)
    for (int64_t j = 0; j < nb; ++j)
      if (j0 + j > i) s[j] = -std::numeric_limits<T>::infinity();
}

// Multiplies the row's weights s[0, nb) (columns j0...) by Z (Note [Fused attention dropout]).
template <typename T>
inline void drop_row(T* s, const SdpaDropout& d, uint32_t rk, int64_t j0, int64_t nb) {
  const T sc = T(1.0 / (1.0 - d.p));
  const uint32_t th = d.threshold;
  for (int64_t j = 0; j < nb; ++j) s[j] = SdpaDropout::keep(rk, j0 + j, th) ? s[j] * sc : T(0);
}

// The backward's row step with dropout: p = exp(s - lse); P <- p * z; dS <- p * (z * dP - D).
template <typename T>
inline void drop_grad_row(T* pr, T* dsr, const T* dp, T li, T Di, const SdpaDropout& d, uint32_t rk,
                          int64_t j0, int64_t nb) {
  const T sc = T(1.0 / (1.0 - d.p));
  const uint32_t th = d.threshold;
  for (int64_t j = 0; j < nb; ++j) {
    const T p = vec::exp<T>(pr[j] - li);
    const T z = SdpaDropout::keep(rk, j0 + j, th) ? sc : T(0);
    pr[j] = p * z;
    dsr[j] = p * (z * dp[j] - Di);
  }
}

template <typename T, int DC>
void fwd_rows(const SdpaFwdArgs& a) {
  const int64_t B = a.q.size(0), Hq = a.q.size(1), L = a.q.size(2), E = a.q.size(3);
  const int64_t Hk = a.k.size(1), S = a.k.size(2), Ev = a.v.size(3);
  const int64_t group = Hq / Hk;
  const Geo gq(a.q), gk(a.k), gv(a.v);
  const bool has_mask = a.mask.defined();
  const Geo gm = has_mask ? Geo(a.mask) : gq;
  const T scale = T(a.scale);
  const T* qp = a.q.data<T>();
  const T* kp = a.k.data<T>();
  const T* vp = a.v.data<T>();
  const T* mp = has_mask ? a.mask.data<T>() : nullptr;
  T* op = a.out.data<T>();
  T* lp = a.lse.data<T>();
  const T ninf = -std::numeric_limits<T>::infinity();
  const int64_t Sp = (S + kBK - 1) / kBK * kBK;  // padded key count of the packed K^T
  parallel_for(0, B * Hq, 1, [&](int64_t t0, int64_t t1) {
    std::vector<T> kt(static_cast<size_t>(E * Sp), T(0)), vv(static_cast<size_t>(S * Ev));
    std::vector<T> qs(static_cast<size_t>(E)), o(static_cast<size_t>(Ev));
    T s[kBK];
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t b = task / Hq, h = task % Hq, hk = h / group;
      if (h % group == 0 || task == t0) {  // K and V are shared by the group's heads
        pack_blocked_t(kt.data(), kp + b * gk.s0 + hk * gk.s1, S, E, gk.s2, gk.s3);
        pack(vv.data(), vp + b * gv.s0 + hk * gv.s1, S, Ev, gv.s2, gv.s3);
      }
      for (int64_t i = 0; i < L; ++i) {
        const T* qrow = qp + b * gq.s0 + h * gq.s1 + i * gq.s2;
        for (int64_t d = 0; d < E; ++d) qs[size_t(d)] = qrow[d * gq.s3] * scale;
        const T* mrow = has_mask ? mp + b * gm.s0 + h * gm.s1 + i * gm.s2 : nullptr;
        T m = ninf, l = T(0);
        std::fill(o.begin(), o.end(), T(0));
        const int64_t jend = a.causal ? std::min(S, i + 1) : S;
        for (int64_t j0 = 0; j0 < jend; j0 += kBK) {
          const int64_t nb = std::min(kBK, jend - j0);
          scores<T, DC>(s, qs.data(), kt.data() + j0 * E, E, nb);
          add_mask_and_causal(s, mrow, gm.s3, j0, nb, false, i);
          T bm = ninf;
          for (int64_t j = 0; j < nb; ++j) bm = std::max(bm, s[j]);
          if (bm == ninf) continue;
          const T mn = std::max(m, bm);
          if (mn != m) {
            const T alpha = m == ninf ? T(0) : nnmath::exp_(m - mn);
            l *= alpha;
            for (int64_t e = 0; e < Ev; ++e) o[size_t(e)] *= alpha;
            m = mn;
          }
          exp_shift(s, m, nb);
          for (int64_t j = 0; j < nb; ++j) l += s[j];
          if (a.dropout.on()) drop_row(s, a.dropout, a.dropout.row(b * Hq + h, i), j0, nb);
          accumulate_rows<T, DC>(o.data(), s, vv.data() + j0 * Ev, nb, Ev);
        }
        T* orow = op + ((b * Hq + h) * L + i) * Ev;
        if (l == T(0)) {
          for (int64_t e = 0; e < Ev; ++e) orow[e] = T(0);
          lp[(b * Hq + h) * L + i] = ninf;
        } else {
          const T inv = T(1) / l;
          for (int64_t e = 0; e < Ev; ++e) orow[e] = o[size_t(e)] * inv;
          lp[(b * Hq + h) * L + i] = m + std::log(l);
        }
      }
    }
  });
}

template <typename T, int DC>
void bwd_rows(const SdpaBwdArgs& a) {
  const int64_t B = a.q.size(0), Hq = a.q.size(1), L = a.q.size(2), E = a.q.size(3);
  const int64_t Hk = a.k.size(1), S = a.k.size(2), Ev = a.v.size(3);
  const int64_t group = Hq / Hk;
  const Geo gq(a.q), gk(a.k), gv(a.v);
  const bool has_mask = a.mask.defined();
  const Geo gm = has_mask ? Geo(a.mask) : gq;
  const T scale = T(a.scale);
  const T* qp = a.q.data<T>();
  const T* kp = a.k.data<T>();
  const T* vp = a.v.data<T>();
  const T* mp = has_mask ? a.mask.data<T>() : nullptr;
  const T* op = a.out.data<T>();
  const T* lp = a.lse.data<T>();
  const T* gop = a.dout.data<T>();
  T* dqp = a.dq.data<T>();
  T* dkp = a.dk.data<T>();
  T* dvp = a.dv.data<T>();
  const T ninf = -std::numeric_limits<T>::infinity();
  const int64_t Sp = (S + kBK - 1) / kBK * kBK;
  parallel_for(0, B * Hk, 1, [&](int64_t t0, int64_t t1) {
    auto buf = [](int64_t n) { return std::vector<T>(static_cast<size_t>(n), T(0)); };
    std::vector<T> kt = buf(E * Sp), vt = buf(Ev * Sp), kk = buf(S * E), dk = buf(S * E),
                   dv = buf(S * Ev), qs = buf(kBQ * E), dq = buf(kBQ * E), P = buf(kBQ * kBK),
                   dS = buf(kBQ * kBK), Dv = buf(kBQ), lse = buf(kBQ);
    T dp[kBK];
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t b = task / Hk, hk = task % Hk;
      const T* kb = kp + b * gk.s0 + hk * gk.s1;
      const T* vb = vp + b * gv.s0 + hk * gv.s1;
      pack_blocked_t(kt.data(), kb, S, E, gk.s2, gk.s3);
      pack_blocked_t(vt.data(), vb, S, Ev, gv.s2, gv.s3);
      pack(kk.data(), kb, S, E, gk.s2, gk.s3);
      std::fill(dk.begin(), dk.end(), T(0));
      std::fill(dv.begin(), dv.end(), T(0));
      for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
        const int64_t bh = b * Hq + h;
        for (int64_t i0 = 0; i0 < L; i0 += kBQ) {
          const int64_t nq = std::min(kBQ, L - i0);
          for (int64_t ii = 0; ii < nq; ++ii) {
            const int64_t i = i0 + ii;
            const T* qrow = qp + b * gq.s0 + h * gq.s1 + i * gq.s2;
            for (int64_t d = 0; d < E; ++d) qs[size_t(ii * E + d)] = qrow[d * gq.s3] * scale;
            const T* orow = op + (bh * L + i) * Ev;
            const T* grow = gop + (bh * L + i) * Ev;
            T acc = T(0);
            for (int64_t e = 0; e < Ev; ++e) acc += orow[e] * grow[e];
            Dv[size_t(ii)] = acc;
            lse[size_t(ii)] = lp[bh * L + i];
          }
          std::fill(dq.begin(), dq.end(), T(0));
          const int64_t jend = a.causal ? std::min(S, i0 + nq) : S;
          for (int64_t j0 = 0; j0 < jend; j0 += kBK) {
            const int64_t nb = std::min(kBK, jend - j0);
            for (int64_t ii = 0; ii < nq; ++ii) {
              const int64_t i = i0 + ii;
              T* pr = P.data() + ii * kBK;
              T* dsr = dS.data() + ii * kBK;
              const T li = lse[size_t(ii)];
              if (li == ninf) {
                for (int64_t j = 0; j < nb; ++j) pr[j] = dsr[j] = T(0);
                continue;
              }
              scores<T, DC>(pr, qs.data() + ii * E, kt.data() + j0 * E, E, nb);
              const T* mrow = has_mask ? mp + b * gm.s0 + h * gm.s1 + i * gm.s2 : nullptr;
              add_mask_and_causal(pr, mrow, gm.s3, j0, nb, a.causal, i);
              scores<T, DC>(dp, gop + (bh * L + i) * Ev, vt.data() + j0 * Ev, Ev, nb);
              const T Di = Dv[size_t(ii)];
              if (a.dropout.on()) {
                drop_grad_row(pr, dsr, dp, li, Di, a.dropout, a.dropout.row(bh, i), j0, nb);
                continue;
              }
              exp_shift(pr, li, nb);
              for (int64_t j = 0; j < nb; ++j) dsr[j] = pr[j] * (dp[j] - Di);
            }
            // dV[j] += sum_i P[i, j] dO[i];  dK[j] += sum_i dS[i, j] qs[i]
            const T* dob = gop + (bh * L + i0) * Ev;
            for (int64_t j = 0; j < nb; ++j) {
              accumulate_rows<T, DC>(dv.data() + (j0 + j) * Ev, P.data() + j, dob, nq, Ev, kBK);
              accumulate_rows<T, DC>(dk.data() + (j0 + j) * E, dS.data() + j, qs.data(), nq, E,
                                     kBK);
            }
            // dQ[i] += sum_j dS[i, j] K[j]
            for (int64_t ii = 0; ii < nq; ++ii)
              accumulate_rows<T, DC>(dq.data() + ii * E, dS.data() + ii * kBK, kk.data() + j0 * E,
                                     nb, E);
          }
          for (int64_t ii = 0; ii < nq; ++ii) {
            T* out = dqp + (bh * L + i0 + ii) * E;
            for (int64_t d = 0; d < E; ++d) out[d] = dq[size_t(ii * E + d)] * scale;
          }
        }
      }
      T* dko = dkp + (b * Hk + hk) * S * E;
      T* dvo = dvp + (b * Hk + hk) * S * Ev;
      std::copy(dk.begin(), dk.end(), dko);
      std::copy(dv.begin(), dv.end(), dvo);
    }
  });
}

// ---- the BLAS path: Note [Flash attention with tiled GEMMs] ----------------------------------
//
// The same algorithm as above, but every product is a GEMM on a tile, done by the
// BLAS single-threaded from the pool's workers (Note [BLAS inside parallel_for]).
// Forward: one task per (batch, head, block of kTQ query rows); keys in chunks of
// at most kTK with the online softmax across chunks (one chunk when S <= kTK):
//   St = (Q_blk * scale) K_chunk^T,  P = exp(St - m),  O_acc = alpha * O_acc + P V_chunk.
// Backward: one task per (batch, kv head) (dK and dV of a task are its own), per
// query block and key chunk, recomputing P = exp(St - lse):
//   dV += P^T dO,  dP = dO V^T,  dS = P * (dP - D),  dQ += dS K,  dK += dS^T (Q * scale).
// query rows per forward tile: OpenBLAS packs a tile's K and V chunks on every call,
// so taller tiles pack them less often (64 -> 128: the packing routines' share of
// B8 H8 L512 D64 fwd+bwd 10.9% -> 9.9%); the score tile, 128 x 512 floats, stays in L2
constexpr int64_t kTQ = 128;
constexpr int64_t kTQB = 128;  // query rows per backward tile
constexpr int64_t kTK = 1024;  // most keys per chunk

// A row-major [rows, cols] operand for the BLAS: the tensor's memory when its
// columns are unit-stride, else a packed copy in `buf`.
template <typename T>
const T* operand(const T* src, int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                 std::vector<T>& buf, int64_t* ld) {
  if ((cs == 1 || cols == 1) && rs >= cols && rs <= blas::kMaxDim) {
    *ld = std::max<int64_t>(rs, 1);
    return src;
  }
  buf.resize(static_cast<size_t>(rows * cols));
  pack(buf.data(), src, rows, cols, rs, cs);
  *ld = std::max<int64_t>(cols, 1);
  return buf.data();
}

// Adds the mask and the causal -inf to a tile row of scores for query i, keys j0.. j0 + nb.
template <typename T>
inline void mask_row(T* s, const T* mrow, int64_t ms3, int64_t j0, int64_t nb, bool causal,
                     int64_t i) {
  if (mrow)
    for (int64_t j = 0; j < nb; ++j) s[j] += mrow[(j0 + j) * ms3];
  if (causal)
    for (int64_t j = std::max<int64_t>(0, i - j0 + 1); j < nb; ++j)
      s[j] = -std::numeric_limits<T>::infinity();
}

// The largest of s[0 .. n), NaNs skipped (-inf when n is 0 or all are NaN), as
// vec::max_of. GCC leaves vec::max_of's compare-and-select loop scalar (a chain of
// ucomiss: a fifth of the forward's own time at L512); vmaxps keeps the same
// semantics (it returns its second operand, the running max, when the value is a NaN).
template <typename T>
inline T row_max(const T* s, int64_t n) {
#ifdef __AVX__
  if constexpr (std::is_same<T, float>::value) {
    __m256 m0 = _mm256_set1_ps(-std::numeric_limits<float>::infinity()), m1 = m0;
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
      m0 = _mm256_max_ps(_mm256_loadu_ps(s + j), m0);
      m1 = _mm256_max_ps(_mm256_loadu_ps(s + j + 8), m1);
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, _mm256_max_ps(m0, m1));
    float m = -std::numeric_limits<float>::infinity();
    for (int k = 0; k < 8; ++k) m = m < lanes[k] ? lanes[k] : m;
    for (; j < n; ++j) m = m < s[j] ? s[j] : m;
    return m;
  }
#endif
  return vec::max_of<T>(n, [&](int64_t j) { return s[j]; });
}

// s[j] <- exp(s[j] - m) for j < n; returns their sum (over kLanes lanes, so that
// the exp and the sum run as one vectorized pass over the row).
template <typename T>
inline T exp_shift_sum(T* __restrict__ s, int64_t n, T m) {
  T acc[vec::kLanes] = {};
  int64_t j = 0;
  for (; j + vec::kLanes <= n; j += vec::kLanes)
    for (int k = 0; k < vec::kLanes; ++k) {
      const T e = vec::exp<T>(s[j + k] - m);
      s[j + k] = e;
      acc[k] += e;
    }
  T r = T(0);
  for (; j < n; ++j) {
    const T e = vec::exp<T>(s[j] - m);
    s[j] = e;
    r += e;
  }
  for (int k = 0; k < vec::kLanes; ++k) r += acc[k];
  return r;
}

// What the forward and backward tile loops share: sizes, strides and operand
// pointers, and the set-up of one tile (its scaled query rows, the (batch, kv head)'s
// K and V as BLAS operands, the masked score block).
template <typename T>
struct Tiles {
  int64_t B, Hq, L, E, Hk, S, Ev, group;
  Geo gq, gk, gv, gm;
  bool has_mask, causal;
  T scale;
  const T* qp;
  const T* kp;
  const T* vp;
  const T* mp;

  template <typename Args>
  explicit Tiles(const Args& a)
      : B(a.q.size(0)),
        Hq(a.q.size(1)),
        L(a.q.size(2)),
        E(a.q.size(3)),
        Hk(a.k.size(1)),
        S(a.k.size(2)),
        Ev(a.v.size(3)),
        group(Hq / Hk),
        gq(a.q),
        gk(a.k),
        gv(a.v),
        gm(a.mask.defined() ? a.mask : a.q),
        has_mask(a.mask.defined()),
        causal(a.causal),
        scale(T(a.scale)),
        qp(a.q.template data<T>()),
        kp(a.k.template data<T>()),
        vp(a.v.template data<T>()),
        mp(has_mask ? a.mask.template data<T>() : nullptr) {}

  // qs [nq, E] <- rows i0 .. i0 + nq of the queries of (b, h), times the scale.
  void load_q(T* qs, int64_t b, int64_t h, int64_t i0, int64_t nq) const {
    for (int64_t ii = 0; ii < nq; ++ii) {
      const T* qrow = qp + b * gq.s0 + h * gq.s1 + (i0 + ii) * gq.s2;
      for (int64_t d = 0; d < E; ++d) qs[ii * E + d] = qrow[d * gq.s3] * scale;
    }
  }

  // K [S, E] and V [S, Ev] of (b, hk) as row-major BLAS operands (ldk, ldv).
  void load_kv(int64_t b, int64_t hk, std::vector<T>& kbuf, std::vector<T>& vbuf, const T*& K,
               int64_t& ldk, const T*& V, int64_t& ldv) const {
    K = operand(kp + b * gk.s0 + hk * gk.s1, S, E, gk.s2, gk.s3, kbuf, &ldk);
    V = operand(vp + b * gv.s0 + hk * gv.s1, S, Ev, gv.s2, gv.s3, vbuf, &ldv);
  }

  // The keys (exclusive end) that query rows i0 .. i0 + nq attend to.
  int64_t key_end(int64_t i0, int64_t nq) const { return causal ? std::min(S, i0 + nq) : S; }

  // st [nq, nb] <- qs K[j0 .. j0 + nb]^T plus the mask and the causal -inf, for the
  // query rows i0 .. i0 + nq of (b, h).
  void scores(T* st, const T* qs, const T* K, int64_t ldk, int64_t b, int64_t h, int64_t i0,
              int64_t nq, int64_t j0, int64_t nb) const {
    blas::gemm_serial(false, true, nq, nb, E, T(1), qs, E, K + j0 * ldk, ldk, T(0), st, nb);
    if (!has_mask && !causal) return;
    for (int64_t ii = 0; ii < nq; ++ii) {
      const int64_t i = i0 + ii;
      mask_row(st + ii * nb, has_mask ? mp + b * gm.s0 + h * gm.s1 + i * gm.s2 : nullptr, gm.s3, j0,
               nb, causal, i);
    }
  }
};

template <typename T>
void fwd_tiled(const SdpaFwdArgs& a) {
  const Tiles<T> tl(a);
  const int64_t Hq = tl.Hq, L = tl.L, E = tl.E, Hk = tl.Hk, Ev = tl.Ev;
  T* op = a.out.data<T>();
  T* lp = a.lse.data<T>();
  const T ninf = -std::numeric_limits<T>::infinity();
  const int64_t TK = std::min(tl.S, kTK), nqb = (L + kTQ - 1) / kTQ;
  blas::SerialScope serial;
  parallel_for(0, tl.B * Hq * nqb, 1, [&](int64_t t0, int64_t t1) {
    auto buf = [](int64_t n) { return std::vector<T>(static_cast<size_t>(n)); };
    std::vector<T> qs = buf(kTQ * E), st = buf(kTQ * TK), o = buf(kTQ * Ev), mx = buf(kTQ),
                   l = buf(kTQ), kbuf, vbuf;
    int64_t cached = -1;
    const T* K = nullptr;
    const T* V = nullptr;
    int64_t ldk = 0, ldv = 0;
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t bh = task / nqb, i0 = (task % nqb) * kTQ, nq = std::min(kTQ, L - i0);
      const int64_t b = bh / Hq, h = bh % Hq, hk = h / tl.group;
      if (b * Hk + hk != cached) {  // tasks of one (batch, kv head) share K and V
        cached = b * Hk + hk;
        tl.load_kv(b, hk, kbuf, vbuf, K, ldk, V, ldv);
      }
      tl.load_q(qs.data(), b, h, i0, nq);
      std::fill(mx.begin(), mx.begin() + nq, ninf);
      std::fill(l.begin(), l.begin() + nq, T(0));
      std::fill(o.begin(), o.begin() + nq * Ev, T(0));
      const int64_t jend = tl.key_end(i0, nq);
      for (int64_t j0 = 0; j0 < jend; j0 += TK) {
        const int64_t nb = std::min(TK, jend - j0);
        tl.scores(st.data(), qs.data(), K, ldk, b, h, i0, nq, j0, nb);
        // the online softmax: a larger row max rescales the row's sum and output so far
        for (int64_t ii = 0; ii < nq; ++ii) {
          T* s = st.data() + ii * nb;
          const T bm = row_max(s, nb);
          if (bm == ninf) {
            std::fill(s, s + nb, T(0));
            continue;
          }
          T& m = mx[size_t(ii)];
          if (bm > m) {
            if (m != ninf) {
              const T alpha = nnmath::exp_(m - bm);
              l[size_t(ii)] *= alpha;
              T* orow = o.data() + ii * Ev;
              for (int64_t e = 0; e < Ev; ++e) orow[e] *= alpha;
            }
            m = bm;
          }
          l[size_t(ii)] += exp_shift_sum(s, nb, m);
          if (a.dropout.on()) drop_row(s, a.dropout, a.dropout.row(bh, i0 + ii), j0, nb);
        }
        blas::gemm_serial(false, false, nq, Ev, nb, T(1), st.data(), nb, V + j0 * ldv, ldv, T(1),
                          o.data(), Ev);
      }
      for (int64_t ii = 0; ii < nq; ++ii) {
        const int64_t i = i0 + ii;
        T* orow = op + (bh * L + i) * Ev;
        const T li = l[size_t(ii)];
        if (li == T(0)) {
          for (int64_t e = 0; e < Ev; ++e) orow[e] = T(0);
          lp[bh * L + i] = ninf;
        } else {
          const T inv = T(1) / li;
          for (int64_t e = 0; e < Ev; ++e) orow[e] = o[size_t(ii * Ev + e)] * inv;
          lp[bh * L + i] = mx[size_t(ii)] + std::log(li);
        }
      }
    }
  });
}

template <typename T>
void bwd_tiled(const SdpaBwdArgs& a) {
  const Tiles<T> tl(a);
  const int64_t Hq = tl.Hq, L = tl.L, E = tl.E, Hk = tl.Hk, S = tl.S, Ev = tl.Ev;
  const T* op = a.out.data<T>();
  const T* lp = a.lse.data<T>();
  const T* gop = a.dout.data<T>();
  T* dqp = a.dq.data<T>();
  T* dkp = a.dk.data<T>();
  T* dvp = a.dv.data<T>();
  const T ninf = -std::numeric_limits<T>::infinity();
  const int64_t TK = std::min(S, kTK);
  blas::SerialScope serial;
  parallel_for(0, tl.B * Hk, 1, [&](int64_t t0, int64_t t1) {
    auto buf = [](int64_t n) { return std::vector<T>(static_cast<size_t>(n)); };
    std::vector<T> qs = buf(kTQB * E), dq = buf(kTQB * E), P = buf(kTQB * TK), dS = buf(kTQB * TK),
                   Dv = buf(kTQB), lse = buf(kTQB), kbuf, vbuf;
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t b = task / Hk, hk = task % Hk;
      int64_t ldk = 0, ldv = 0;
      const T* K = nullptr;
      const T* V = nullptr;
      tl.load_kv(b, hk, kbuf, vbuf, K, ldk, V, ldv);
      T* dk = dkp + (b * Hk + hk) * S * E;
      T* dv = dvp + (b * Hk + hk) * S * Ev;
      std::fill(dk, dk + S * E, T(0));
      std::fill(dv, dv + S * Ev, T(0));
      for (int64_t h = hk * tl.group; h < (hk + 1) * tl.group; ++h) {
        const int64_t bh = b * Hq + h;
        for (int64_t i0 = 0; i0 < L; i0 += kTQB) {
          const int64_t nq = std::min(kTQB, L - i0);
          tl.load_q(qs.data(), b, h, i0, nq);
          for (int64_t ii = 0; ii < nq; ++ii) {
            const int64_t i = i0 + ii;
            const T* orow = op + (bh * L + i) * Ev;
            const T* grow = gop + (bh * L + i) * Ev;
            Dv[size_t(ii)] = vec::sum_of<T>(Ev, [&](int64_t e) { return orow[e] * grow[e]; });
            lse[size_t(ii)] = lp[bh * L + i];
          }
          std::fill(dq.begin(), dq.begin() + nq * E, T(0));
          const T* dO = gop + (bh * L + i0) * Ev;
          const int64_t jend = tl.key_end(i0, nq);
          for (int64_t j0 = 0; j0 < jend; j0 += TK) {
            const int64_t nb = std::min(TK, jend - j0);
            tl.scores(P.data(), qs.data(), K, ldk, b, h, i0, nq, j0, nb);
            blas::gemm_serial(false, true, nq, nb, Ev, T(1), dO, Ev, V + j0 * ldv, ldv, T(0),
                              dS.data(), nb);
            for (int64_t ii = 0; ii < nq; ++ii) {
              T* pr = P.data() + ii * nb;
              T* dsr = dS.data() + ii * nb;
              const T li = lse[size_t(ii)];
              if (li == ninf) {
                std::fill(pr, pr + nb, T(0));
                std::fill(dsr, dsr + nb, T(0));
                continue;
              }
              const T Di = Dv[size_t(ii)];
              if (a.dropout.on()) {
                drop_grad_row(pr, dsr, dsr, li, Di, a.dropout, a.dropout.row(bh, i0 + ii), j0, nb);
                continue;
              }
              for (int64_t j = 0; j < nb; ++j) {
                const T p = vec::exp<T>(pr[j] - li);
                pr[j] = p;
                dsr[j] = p * (dsr[j] - Di);
              }
            }
            blas::gemm_serial(true, false, nb, Ev, nq, T(1), P.data(), nb, dO, Ev, T(1),
                              dv + j0 * Ev, Ev);
            blas::gemm_serial(false, false, nq, E, nb, T(1), dS.data(), nb, K + j0 * ldk, ldk, T(1),
                              dq.data(), E);
            blas::gemm_serial(true, false, nb, E, nq, T(1), dS.data(), nb, qs.data(), E, T(1),
                              dk + j0 * E, E);
          }
          for (int64_t ii = 0; ii < nq; ++ii) {
            T* out = dqp + (bh * L + i0 + ii) * E;
            for (int64_t d = 0; d < E; ++d) out[d] = dq[size_t(ii * E + d)] * tl.scale;
          }
        }
      }
    }
  });
}

// The tiled path needs the BLAS and sizes its 32-bit integers take.
bool use_tiled(const Tensor& q, const Tensor& k, const Tensor& v) {
  const int64_t lim = blas::kMaxDim;
  return blas::enabled() && q.size(3) <= lim && v.size(3) <= lim && k.size(2) <= lim &&
         q.size(2) <= lim && q.size(3) > 0 && v.size(3) > 0;
}

template <typename T, typename F32, typename F64, typename F128, typename FN>
void by_head_size(int64_t E, int64_t Ev, F32 f32, F64 f64, F128 f128, FN fn) {
  if (E == Ev && E == 64) return f64();
  if (E == Ev && E == 32) return f32();
  if (E == Ev && E == 128) return f128();
  fn();
}

void fwd_kernel(const SdpaFwdArgs& a) {
  const int64_t E = a.q.size(3), Ev = a.v.size(3);
  const bool tiled = use_tiled(a.q, a.k, a.v);
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (tiled) return fwd_tiled<T>(a);
    by_head_size<T>(
        E, Ev, [&] { fwd_rows<T, 32>(a); }, [&] { fwd_rows<T, 64>(a); },
        [&] { fwd_rows<T, 128>(a); }, [&] { fwd_rows<T, 0>(a); });
  };
  if (a.q.dtype() == DType::Float64) return run(TypeTag<double>{});
  EMBER_CHECK(a.q.dtype() == DType::Float32, "scaled_dot_product_attention: unsupported dtype ",
              dtype_name(a.q.dtype()));
  run(TypeTag<float>{});
}

void bwd_kernel(const SdpaBwdArgs& a) {
  const int64_t E = a.q.size(3), Ev = a.v.size(3);
  const bool tiled = use_tiled(a.q, a.k, a.v);
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (tiled) return bwd_tiled<T>(a);
    by_head_size<T>(
        E, Ev, [&] { bwd_rows<T, 32>(a); }, [&] { bwd_rows<T, 64>(a); },
        [&] { bwd_rows<T, 128>(a); }, [&] { bwd_rows<T, 0>(a); });
  };
  if (a.q.dtype() == DType::Float64) return run(TypeTag<double>{});
  run(TypeTag<float>{});
}

EMBER_REGISTER_CPU_KERNELS(nn_attention) {
  sdpa_fwd_stub.fns[int(DeviceType::CPU)] = &fwd_kernel;
  sdpa_bwd_stub.fns[int(DeviceType::CPU)] = &bwd_kernel;
}

}  // namespace
}  // namespace ember::cpu
