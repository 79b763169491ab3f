// Direct float32 convolution for small stride-1 convolutions (conv_direct.h).
//
// Note [Direct convolution]
// With few channels (16 -> 16 on 14x14: a [16, 144] x [144, 196] GEMM per image)
// the per-image GEMM is too thin for the BLAS: packing and edge handling cost as
// much as the multiply-adds, and the im2col buffer (9 copies of the image) costs
// on top. For a stride-1 convolution the nine im2col rows of a channel share
// structure: flattening the output positions P = oh * OW + ow, the tap (kh, kw)
// reads image[oh + kh*dh - ph][ow + kw*dw - pw], which is one KW-shifted copy of
// the image, laid out with rows of OW columns,
//   S[c][kw][r][ow] = image[c][r - ph][ow + kw*dw - pw]   (0 outside the image),
// read at the flat offset P + kh*dh*OW. So each image is copied KW times (not
// KH*KW), and every tap of every output position is a contiguous 8-float load.
//   forward   y[o][P]  = bias[o] + sum_{c,kh,kw} w[o][c][kh][kw] S[c][kw][P + kh*dh*OW]
//   input gradient: the same with gy as the image, the weights transposed and
//             flipped, padding (K-1)*d - p (possibly negative) and the input size as output
//   weight gradient  gw[o][c][kh][kw] = sum_{n,P} gy[n][o][P] S_n[c][kw][P + kh*dh*OW]
// The forward tile keeps 4 output channels x 24 positions in 12 AVX2 registers:
// per tap 3 loads of S, 4 weight broadcasts and 12 FMAs (the FMAs, not the loads,
// bound it). The weight-gradient tile keeps 4 output channels x 3 taps of 8-wide
// partial sums in registers over up to 4 whole images (per 8 positions 4 + 3 loads and
// 12 FMAs) and adds them to a per-slab array of partial-sum vectors, reduced at the
// end in a fixed order (the result does not depend on the thread count).
// Positions past OH*OW in the last vector are computed on zeros and never stored;
// each copy has a zeroed tail so those loads stay inside it.
// Compiled for AVX2/FMA with function attributes (the build is not -march=native)
// and taken only when the selected CPU capability is AVX2 or better
// (EMBER_CPU_CAPABILITY=default turns it off); elsewhere the im2col + GEMM path runs.
#include "ember/backends/cpu/conv_direct.h"

#include <algorithm>
#include <atomic>
#include <type_traits>
#include <vector>

#include "ember/backends/cpu/capability.h"
#include "ember/core/parallel.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define EMBER_CONV_DIRECT 1
#endif

namespace ember::cpu {

namespace {
std::atomic<bool> g_direct_enabled{true};
std::atomic<int64_t> g_direct_calls{0};
}  // namespace

void set_conv_direct_enabled(bool on) { g_direct_enabled.store(on); }
bool conv_direct_enabled() { return g_direct_enabled.load(); }
int64_t conv_direct_calls() { return g_direct_calls.load(); }

#ifndef EMBER_CONV_DIRECT

bool conv_direct_forward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, int64_t,
                         const ConvGeom&) {
  return false;
}
bool conv_direct_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                          int64_t, const ConvGeom&) {
  return false;
}

#else

namespace {

constexpr int kMR = 4;  // output channels per register tile (1 where Co < 4)
constexpr int kNV = 3;  // 8-float vectors of output positions per forward tile (6 with 1 channel)
constexpr int kNT = 3;  // taps per weight-gradient tile
constexpr int64_t kSlabs = 16;  // fixed batch slabs of the weight gradient's partial sums
// Images per weight-gradient pass (gw_images): up to kGwImages, their shifted copies
// within kGwFloats floats.
constexpr int64_t kGwImages = 4, kGwFloats = int64_t(1) << 18;
// Where the direct kernels are taken: up to kMaxK = C * KH * KW taps per output and
// kMaxCo output channels; the input gradient (a convolution of gy with Co * KH * KW
// taps) only where Co * KH * KW <= kMaxK as well, else the whole backward takes the
// GEMM path. Measured 2026-11-23 on the shared 2-core AMD EPYC dev box, batch 64,
// 3x3, one thread, process-time medians of 15, direct vs GEMM in ms, forward /
// forward+backward. The box is loaded by other builds: the same case moves by 10-40%
// between runs, so only the large gaps mean something (where the backward is on the
// GEMM in both columns, the fwd+bwd gap beyond the forward's is noise):
//   16->16 14x14 p1 (K 144):  1.30 vs 1.80 / 3.93 vs 8.85
//   16->28 14x14 p1 (K 144):  1.46 vs 2.53 / 8.94 vs 12.59
//   16->64 14x14 p1 (K 144):  3.55 vs 4.20 / 14.52 vs 20.05 (backward on GEMM)
//   8->32 28x28 p1 (K 72):    3.28 vs 6.89 / 16.83 vs 22.37 (backward on GEMM)
//   28->64 14x14 p1 (K 252):  5.70 vs 7.11 / 23.0 vs 24.2 (backward on GEMM)
//   28->64 26x26 p0 (K 252):  17.9 vs 22.4 / 68.5 vs 63.5 (backward on GEMM)
// (These predate the faster shifted copies, unrolled 3x3 taps and multi-image
// weight-gradient passes; the limits were not re-measured after them.)
// Before the input-gradient condition, the direct backward with Co * 9 = 576 taps
// lost there (fwd+bwd 73.0 vs 63.1 ms at 28->64 26x26). Shapes past kMaxK / kMaxCo
// were not measured: the limits are where the measurements stop, not a crossover.
constexpr int64_t kMaxK = 256, kMaxCo = 64;
// Floats of one image's shifted copies (per thread).
constexpr int64_t kBufBudget = int64_t(1) << 20;

// The shifted copies of one image of C channels (Note [Direct convolution]).
struct Shifts {
  int64_t C = 0, IH = 0, IW = 0, OH = 0, OW = 0, KH = 0, KW = 0, dh = 1, dw = 1, ph = 0, pw = 0;
  int64_t R = 0;   // rows of a copy: OH + (KH - 1) * dh
  int64_t Pb = 0;  // floats per copy: R * OW plus a zeroed tail of at least 8, a multiple of 16
  int64_t L() const { return OH * OW; }
  int64_t floats() const { return C * KW * Pb; }
};

// Fills `s` for the given sizes; false when a size is out of the range the kernels
// take (all positive, the buffers within kBufBudget: every product below is bounded).
bool make_shifts(Shifts& s, int64_t C, int64_t IH, int64_t IW, int64_t OH, int64_t OW, int64_t KH,
                 int64_t KW, int64_t dh, int64_t dw, int64_t ph, int64_t pw) {
  constexpr int64_t kDim = int64_t(1) << 20, kSmall = int64_t(1) << 10;
  for (int64_t v : {C, IH, IW, OH, OW})
    if (v <= 0 || v > kDim) return false;
  for (int64_t v : {KH, KW, dh, dw})
    if (v <= 0 || v > kSmall) return false;
  if (ph < -kDim || ph > kDim || pw < -kDim || pw > kDim) return false;
  s = Shifts{C, IH, IW, OH, OW, KH, KW, dh, dw, ph, pw};
  s.R = OH + (KH - 1) * dh;              // < 2^21
  s.Pb = (s.R * OW + 8 + 15) / 16 * 16;  // < 2^42
  if (s.Pb > kBufBudget) return false;
  if (C * KW > kBufBudget / s.Pb) return false;  // C * KW < 2^30, so no overflow
  return true;
}

__attribute__((target("avx2,fma"))) inline __m256i tail_mask(int64_t n) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n)), lane);
}

// buf [C][KW][Pb] <- the shifted copies of the image src [C][IH][IW]. Each row of a
// copy is written as whole vectors of 8 output columns whose lanes outside the image
// are zero (no masked loads or stores: both were slow on AMD Zen 3). A row's last vector spills up
// to 7 floats into the next row, which is written after it (rows in ascending order), and the last
// image row's spill is overwritten by the zeros below the image, written last (Pb >= R * OW + 8
// keeps it inside the copy).
__attribute__((target("avx2,fma"))) void fill_shifts(float* __restrict__ buf,
                                                     const float* __restrict__ src,
                                                     const Shifts& s) {
  const int64_t OW = s.OW, nvr = (OW + 7) / 8;
  const __m256 z = _mm256_setzero_ps();
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i iw = _mm256_set1_epi32(int(s.IW)), neg = _mm256_set1_epi32(-1);
  // the rows r of a copy inside the image: 0 <= r - ph < IH
  const int64_t r0 = std::clamp<int64_t>(s.ph, 0, s.R);
  const int64_t r1 = std::clamp<int64_t>(s.IH + s.ph, r0, s.R);
  if (s.IW >= 8 && nvr <= 8) {
    // Rows of up to 64 columns from images at least 8 wide (the common small case):
    // every vector of a row is one in-row load at a per-(kw, v) column b, its lanes
    // moved by a per-(kw, v) permutation and masked to the in-image columns (all
    // zero for vectors wholly in the padding), with no branches per vector.
    for (int64_t kw = 0; kw < s.KW; ++kw) {
      const int64_t off = kw * s.dw - s.pw;
      int64_t B[8];
      __m256i P[8], M[8];
      for (int64_t v = 0; v < nvr; ++v) {
        const int64_t col = v * 8 + off, b = std::clamp<int64_t>(col, 0, s.IW - 8);
        const __m256i idx = _mm256_add_epi32(lane, _mm256_set1_epi32(int(col)));
        B[v] = b;
        P[v] = _mm256_add_epi32(lane, _mm256_set1_epi32(int(std::clamp<int64_t>(col - b, -8, 8))));
        M[v] = _mm256_and_si256(_mm256_cmpgt_epi32(idx, neg), _mm256_cmpgt_epi32(iw, idx));
      }
      for (int64_t c = 0; c < s.C; ++c) {
        const float* img = src + c * s.IH * s.IW;
        float* d = buf + (c * s.KW + kw) * s.Pb;
        for (int64_t i = 0; i < r0 * OW; i += 8) _mm256_storeu_ps(d + i, z);
        auto rows = [&](auto nv_c) __attribute__((target("avx2,fma"))) {
          // NV > 0: the row's vector count as a constant (P and M stay in registers)
          constexpr int NV = decltype(nv_c)::value;
          const int64_t n = NV > 0 ? NV : nvr;
          for (int64_t r = r0; r < r1; ++r) {
            float* dr = d + r * OW;
            const float* sr = img + (r - s.ph) * s.IW;
#pragma GCC unroll 8
            for (int64_t v = 0; v < n; ++v) {
              const __m256 x = _mm256_permutevar8x32_ps(_mm256_loadu_ps(sr + B[v]), P[v]);
              _mm256_storeu_ps(dr + v * 8, _mm256_and_ps(x, _mm256_castsi256_ps(M[v])));
            }
          }
        };
        switch (nvr) {
          case 1:
            rows(std::integral_constant<int, 1>());
            break;
          case 2:
            rows(std::integral_constant<int, 2>());
            break;
          case 3:
            rows(std::integral_constant<int, 3>());
            break;
          case 4:
            rows(std::integral_constant<int, 4>());
            break;
          default:
            rows(std::integral_constant<int, 0>());
        }
        int64_t i = r1 * OW;
        for (; i + 8 <= s.Pb; i += 8) _mm256_storeu_ps(d + i, z);
        _mm256_storeu_ps(d + s.Pb - 8, z);
      }
    }
    return;
  }
  for (int64_t c = 0; c < s.C; ++c) {
    const float* img = src + c * s.IH * s.IW;
    for (int64_t kw = 0; kw < s.KW; ++kw) {
      float* d = buf + (c * s.KW + kw) * s.Pb;
      const int64_t off = kw * s.dw - s.pw;  // image column of output column ow: ow + off
      for (int64_t i = 0; i < r0 * OW; i += 8) _mm256_storeu_ps(d + i, z);
      for (int64_t r = r0; r < r1; ++r) {
        float* dr = d + r * OW;
        const float* sr = img + (r - s.ph) * s.IW;
        // the image columns col + lane of every vector are in (-2^21, 2^21): int32 is enough
        for (int64_t v = 0, col = off; v < nvr; ++v, col += 8) {
          __m256 x;
          if (col >= 0 && col + 8 <= s.IW) {
            x = _mm256_loadu_ps(sr + col);
          } else if (col + 8 > 0 && col < s.IW) {
            // an edge vector: lane l holds column col + l where that is in the image
            const __m256i idx = _mm256_add_epi32(lane, _mm256_set1_epi32(int(col)));
            const __m256i m =
                _mm256_and_si256(_mm256_cmpgt_epi32(idx, neg), _mm256_cmpgt_epi32(iw, idx));
            if (s.IW >= 8) {
              // (not vmaskmovps: that load took 40% of this loop on AMD Zen 3) an in-row
              // load at b, its lanes moved by col - b and the outside ones zeroed
              const int64_t b = std::clamp<int64_t>(col, 0, s.IW - 8);
              const __m256i p = _mm256_add_epi32(lane, _mm256_set1_epi32(int(col - b)));
              x = _mm256_permutevar8x32_ps(_mm256_loadu_ps(sr + b), p);
              x = _mm256_and_ps(x, _mm256_castsi256_ps(m));
            } else {
              alignas(32) float t[8];
              for (int l = 0; l < 8; ++l) {
                const int64_t cl = col + l;
                t[l] = cl >= 0 && cl < s.IW ? sr[cl] : 0.f;
              }
              x = _mm256_load_ps(t);
            }
          } else {
            x = z;
          }
          _mm256_storeu_ps(dr + v * 8, x);
        }
      }
      // (the last store ends exactly at Pb, a multiple of 8 floats past R * OW + 8)
      int64_t i = r1 * OW;
      for (; i + 8 <= s.Pb; i += 8) _mm256_storeu_ps(d + i, z);
      _mm256_storeu_ps(d + s.Pb - 8, z);
    }
  }
}

// Output channels per forward tile: 4, or 1 for fewer than 4 (no wasted rows).
inline int tile_rows(int64_t Co) { return Co >= kMR ? kMR : 1; }

// Packs weights for the forward tile: wpk [ceil(Co / mr)][C][KH][KW][mr] (rows past
// Co are 0). `wt(o, c, kh, kw)` gives the weight of output channel o, input channel c.
template <typename W>
std::vector<float> pack_weights(int mr, int64_t Co, int64_t C, int64_t KH, int64_t KW, W wt) {
  const int64_t nob = (Co + mr - 1) / mr, per = C * KH * KW;
  std::vector<float> p(static_cast<size_t>(nob * per * mr), 0.f);
  for (int64_t o = 0; o < Co; ++o)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw)
          p[size_t((((o / mr * C + c) * KH + kh) * KW + kw) * mr + o % mr)] = wt(o, c, kh, kw);
  return p;
}

// y rows o0 .. o0 + nrows (row stride L) at positions P0 .. P0 + 8 * NV (those below L)
// <- bias + the taps of the shifted copies `buf` against the packed weights `w` (MR
// per tap). FK > 0: a FK x FK kernel (s.KH == s.KW == FK), its taps unrolled (with a
// run-time 3-tap inner loop the loop overhead per 12 FMAs showed).
template <int MR, int NV, int FK = 0>
__attribute__((target("avx2,fma"))) void fwd_tile(float* __restrict__ y, int64_t L, int nrows,
                                                  const float* __restrict__ buf,
                                                  const float* __restrict__ w,
                                                  const float* __restrict__ bias4, const Shifts& s,
                                                  int64_t P0) {
  __m256 acc[MR][NV];
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m) {
    const __m256 b = _mm256_set1_ps(bias4[m]);
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[m][v] = b;
  }
  const int64_t step = s.dh * s.OW, Pb = s.Pb;
  const int64_t KH = FK > 0 ? FK : s.KH, KW = FK > 0 ? FK : s.KW;
  const float* bc = buf + P0;
  for (int64_t c = 0; c < s.C; ++c, bc += KW * Pb) {
#pragma GCC unroll 8
    for (int64_t kh = 0; kh < KH; ++kh) {
      const float* r = bc + kh * step;
#pragma GCC unroll 8
      for (int64_t kw = 0; kw < KW; ++kw, r += Pb, w += MR) {
        __m256 x[NV];
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) {
          x[v] = _mm256_loadu_ps(r + 8 * v);
          // keep the loaded vector in a register: folded into each FMA's memory operand,
          // the loads (not the FMAs) would bound the loop
          if (MR > 1) asm("" : "+x"(x[v]));
        }
#pragma GCC unroll 8
        for (int m = 0; m < MR; ++m) {
          const __m256 b = _mm256_broadcast_ss(w + m);
#pragma GCC unroll 8
          for (int v = 0; v < NV; ++v) acc[m][v] = _mm256_fmadd_ps(x[v], b, acc[m][v]);
        }
      }
    }
  }
// (a constant trip count: indexed by a run-time row count, acc would live on the
// stack and the FMA loop would store it back on every tap)
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m) {
    if (m >= nrows) break;
    float* yr = y + m * L;
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      const int64_t P = P0 + 8 * v, n = L - P;
      if (n >= 8)
        _mm256_storeu_ps(yr + P, acc[m][v]);
      else if (n > 0) {  // (not vmaskmovps: microcoded stores on AMD Zen)
        alignas(32) float tmp[8];
        _mm256_store_ps(tmp, acc[m][v]);
        for (int64_t k = 0; k < n; ++k) yr[P + k] = tmp[k];
      }
    }
  }
}

// The tiles of rows [ob * MR, ob * MR + nrows) at vectors [v0, v0 + nv) of positions.
template <int FK>
__attribute__((target("avx2,fma"))) void fwd_tiles(float* yo, int64_t L, int nrows, int mr,
                                                   int64_t nv, const float* buf, const float* w,
                                                   const float* b, const Shifts& s, int64_t P0) {
  if (mr == kMR) {
    if (nv == 3)
      fwd_tile<kMR, 3, FK>(yo, L, nrows, buf, w, b, s, P0);
    else if (nv == 2)
      fwd_tile<kMR, 2, FK>(yo, L, nrows, buf, w, b, s, P0);
    else
      fwd_tile<kMR, 1, FK>(yo, L, nrows, buf, w, b, s, P0);
    return;
  }
  switch (nv) {
    case 6:
      return fwd_tile<1, 6, FK>(yo, L, nrows, buf, w, b, s, P0);
    case 5:
      return fwd_tile<1, 5, FK>(yo, L, nrows, buf, w, b, s, P0);
    case 4:
      return fwd_tile<1, 4, FK>(yo, L, nrows, buf, w, b, s, P0);
    case 3:
      return fwd_tile<1, 3, FK>(yo, L, nrows, buf, w, b, s, P0);
    case 2:
      return fwd_tile<1, 2, FK>(yo, L, nrows, buf, w, b, s, P0);
    default:
      return fwd_tile<1, 1, FK>(yo, L, nrows, buf, w, b, s, P0);
  }
}

// y [Co][L] <- one image's convolution from its shifted copies (wpk from
// pack_weights with tile_rows(Co) rows per tile, bpk the bias padded to whole tiles).
template <int FK>
__attribute__((target("avx2,fma"))) void fwd_image_k(float* y, int64_t Co, const float* buf,
                                                     const float* wpk, const float* bpk,
                                                     const Shifts& s) {
  const int mr = tile_rows(Co);
  const int64_t L = s.L(), nvec = (L + 7) / 8, nob = (Co + mr - 1) / mr;
  const int64_t per = s.C * s.KH * s.KW * mr, tnv = mr == 1 ? 2 * kNV : kNV;
  for (int64_t v0 = 0; v0 < nvec;) {
    int64_t nv = std::min<int64_t>(tnv, nvec - v0);
    // 3 + 1 vectors left: two tiles of 2 (a 1-vector tile is 4 FMAs per 5 loads)
    if (mr == kMR && nvec - v0 == kNV + 1) nv = 2;
    const int64_t P0 = v0 * 8;
    for (int64_t ob = 0; ob < nob; ++ob) {
      const int nrows = int(std::min<int64_t>(mr, Co - ob * mr));
      fwd_tiles<FK>(y + ob * mr * L, L, nrows, mr, nv, buf, wpk + ob * per, bpk + ob * mr, s, P0);
    }
    v0 += nv;
  }
}

__attribute__((target("avx2,fma"))) void fwd_image(float* y, int64_t Co, const float* buf,
                                                   const float* wpk, const float* bpk,
                                                   const Shifts& s) {
  if (s.KH == 3 && s.KW == 3) return fwd_image_k<3>(y, Co, buf, wpk, bpk, s);
  fwd_image_k<0>(y, Co, buf, wpk, bpk, s);
}

// The tap offsets of the weight gradient's taps t = (c, kh, kw) in the shifted copies
// (Note [Direct convolution]), ceil(K / kNT) * kNT of them; -1 for the padding taps
// past K (read as zeros).
std::vector<int64_t> tap_offsets(const Shifts& s) {
  const int64_t K = s.C * s.KH * s.KW, Kp = (K + kNT - 1) / kNT * kNT;
  std::vector<int64_t> off(static_cast<size_t>(Kp), -1);
  for (int64_t c = 0; c < s.C; ++c)
    for (int64_t kh = 0; kh < s.KH; ++kh)
      for (int64_t kw = 0; kw < s.KW; ++kw)
        off[size_t((c * s.KH + kh) * s.KW + kw)] = (c * s.KW + kw) * s.Pb + kh * s.dh * s.OW;
  return off;
}

// gwv [ceil(Co / kMR) * kMR][ceil(K / kNT) * kNT][8] += the 8-wide partial sums over
// the positions of `nimg` images of gy[o][P] * tap_t[P] (tap t read from the image's
// shifted copies bufs[i] at toff[t]). Each register tile runs over all the images
// before its sums go back to gwv, so gwv (Co * K * 8 floats, past L1) is read and
// written once per group of images, not per image. gtail[i] holds image i's last
// L % 8 positions of every gy row, zero-padded to 8 (rows past Co zero), so the last
// partial vector needs no masked loads (microcoded on AMD Zen); the taps' lanes past L
// are masked off too (they may read image rows outside the convolution: an inf there
// must not turn 0 * inf into a NaN). `zeros` holds at least ceil(L / 8) * 8 zeros.
__attribute__((target("avx2,fma"))) void gw_images(float* __restrict__ gwv, int64_t Co,
                                                   const float* const* gys,
                                                   const float* const* bufs,
                                                   const float* const* gtails, int nimg,
                                                   const int64_t* toff, const Shifts& s,
                                                   const float* zeros) {
  const int64_t L = s.L(), K = s.C * s.KH * s.KW;
  const int64_t nob = (Co + kMR - 1) / kMR, ntb = (K + kNT - 1) / kNT, Kp = ntb * kNT;
  const int64_t nfull = L / 8, rem = L % 8;
  const __m256 xmask = _mm256_castsi256_ps(tail_mask(rem));
  // output-channel blocks outermost: the block's gy rows of every image (4 rows x
  // nimg) stay in L1 while the taps stream past (tap blocks outermost re-read all of gy,
  // past L1 for several images, once per tap block)
  for (int64_t ob = 0; ob < nob; ++ob) {
    for (int64_t tb = 0; tb < ntb; ++tb) {
      __m256 acc[kMR][kNT];
      float* av = gwv + ((ob * kMR) * Kp + tb * kNT) * 8;
#pragma GCC unroll 8
      for (int m = 0; m < kMR; ++m)
#pragma GCC unroll 8
        for (int j = 0; j < kNT; ++j) acc[m][j] = _mm256_loadu_ps(av + (m * Kp + j) * 8);
      for (int i = 0; i < nimg; ++i) {
        const float* xr[kNT];
#pragma GCC unroll 8
        for (int j = 0; j < kNT; ++j) {
          const int64_t o = toff[tb * kNT + j];
          xr[j] = o >= 0 ? bufs[i] + o : zeros;
        }
        const float* gr[kMR];
#pragma GCC unroll 8
        for (int m = 0; m < kMR; ++m) {
          const int64_t o = ob * kMR + m;
          gr[m] = o < Co ? gys[i] + o * L : zeros;
        }
        for (int64_t q = 0; q < nfull; ++q) {
          const int64_t P = q * 8;
          __m256 x[kNT];
#pragma GCC unroll 8
          for (int j = 0; j < kNT; ++j) {
            x[j] = _mm256_loadu_ps(xr[j] + P);
            asm("" : "+x"(x[j]));
          }
#pragma GCC unroll 8
          for (int m = 0; m < kMR; ++m) {
            // one load of gy per row, kept in a register: folded into the FMAs' memory
            // operands, each row would be loaded kNT times (15 loads per 12 FMAs)
            __m256 g = _mm256_loadu_ps(gr[m] + P);
            asm("" : "+x"(g));
#pragma GCC unroll 8
            for (int j = 0; j < kNT; ++j) acc[m][j] = _mm256_fmadd_ps(g, x[j], acc[m][j]);
          }
        }
        if (rem) {
          const int64_t P = nfull * 8;
          __m256 x[kNT];
#pragma GCC unroll 8
          for (int j = 0; j < kNT; ++j) x[j] = _mm256_and_ps(_mm256_loadu_ps(xr[j] + P), xmask);
          const float* gt = gtails[i] + ob * kMR * 8;
#pragma GCC unroll 8
          for (int m = 0; m < kMR; ++m) {
            const __m256 g = _mm256_loadu_ps(gt + m * 8);
#pragma GCC unroll 8
            for (int j = 0; j < kNT; ++j) acc[m][j] = _mm256_fmadd_ps(g, x[j], acc[m][j]);
          }
        }
      }
#pragma GCC unroll 8
      for (int m = 0; m < kMR; ++m)
#pragma GCC unroll 8
        for (int j = 0; j < kNT; ++j) _mm256_storeu_ps(av + (m * Kp + j) * 8, acc[m][j]);
    }
  }
}

// The direct kernels' conditions that do not depend on which pass runs.
bool common_apply(const Tensor& t, int64_t Co, int64_t groups, const ConvGeom& g) {
  if (!conv_direct_enabled() || t.dtype() != DType::Float32 || groups != 1) return false;
  if (selected_cpu_capability() < CpuCapability::AVX2) return false;
  // 2-d (or 1-d: height 1) and stride 1
  if (g.in[0] != 1 || g.k[0] != 1 || g.out[0] != 1 || g.pad[0] != 0) return false;
  if (g.stride[1] != 1 || g.stride[2] != 1) return false;
  if (Co <= 0 || Co > kMaxCo || g.channels <= 0 || g.channels > kMaxK) return false;
  if (g.k[1] <= 0 || g.k[2] <= 0 || g.k[1] > kMaxK || g.k[2] > kMaxK) return false;
  return g.channels * g.k[1] * g.k[2] <= kMaxK && t.sizes()[0] > 0;
}

// The forward's shifted copies: the image x [C][in] read for output out.
bool fwd_shifts(Shifts& s, const ConvGeom& g) {
  return make_shifts(s, g.channels, g.in[1], g.in[2], g.out[1], g.out[2], g.k[1], g.k[2], g.dil[1],
                     g.dil[2], g.pad[1], g.pad[2]);
}

// The input gradient's shifted copies: the image gy [Co][out] read for output in, with
// the flipped kernel's padding (K - 1) * d - p.
bool bwd_input_shifts(Shifts& s, int64_t Co, const ConvGeom& g) {
  if (g.pad[1] > (int64_t(1) << 20) || g.pad[2] > (int64_t(1) << 20)) return false;
  if (g.dil[1] > 1024 || g.dil[2] > 1024) return false;
  return make_shifts(s, Co, g.out[1], g.out[2], g.in[1], g.in[2], g.k[1], g.k[2], g.dil[1],
                     g.dil[2], (g.k[1] - 1) * g.dil[1] - g.pad[1],
                     (g.k[2] - 1) * g.dil[2] - g.pad[2]);
}

}  // namespace

bool conv_direct_forward(const Tensor& y, const Tensor& x, const Tensor& w, const Tensor& bias,
                         int64_t groups, const ConvGeom& g) {
  const int64_t Co = w.sizes()[0];
  Shifts s;
  if (!common_apply(x, Co, groups, g) || !fwd_shifts(s, g)) return false;
  const int64_t N = x.sizes()[0], C = g.channels, KH = g.k[1], KW = g.k[2];
  const int64_t plane = g.in[1] * g.in[2], L = s.L();
  const float* wp = w.data<float>();
  const std::vector<float> wpk =
      pack_weights(tile_rows(Co), Co, C, KH, KW, [&](int64_t o, int64_t c, int64_t kh, int64_t kw) {
        return wp[((o * C + c) * KH + kh) * KW + kw];
      });
  std::vector<float> bpk(static_cast<size_t>((Co + kMR - 1) / kMR * kMR), 0.f);
  if (bias.defined()) {
    const float* bp = bias.data<float>();
    const int64_t bs = bias.strides()[0];
    for (int64_t o = 0; o < Co; ++o) bpk[size_t(o)] = bp[o * bs];
  }
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  g_direct_calls.fetch_add(1);
  parallel_for(0, N, 1, [&](int64_t n0, int64_t n1) {
    std::vector<float> buf(static_cast<size_t>(s.floats()));
    for (int64_t n = n0; n < n1; ++n) {
      fill_shifts(buf.data(), xp + n * C * plane, s);
      fwd_image(yp + n * Co * L, Co, buf.data(), wpk.data(), bpk.data(), s);
    }
  });
  return true;
}

bool conv_direct_backward(const Tensor& gx, const Tensor& gw, const Tensor& x, const Tensor& w,
                          const Tensor& gy, int64_t groups, const ConvGeom& g) {
  const int64_t Co = gy.sizes()[1];
  if (!gx.defined() && !gw.defined()) return false;
  if (!common_apply(gy, Co, groups, g)) return false;
  Shifts sx, sg;  // the copies of x (weight gradient) and of gy (input gradient)
  if (gw.defined() && !fwd_shifts(sx, g)) return false;
  // the input gradient is a convolution of gy with Co * KH * KW taps per output
  if (gx.defined() && (Co * g.k[1] * g.k[2] > kMaxK || !bwd_input_shifts(sg, Co, g))) return false;
  const int64_t N = gy.sizes()[0], C = g.channels, KH = g.k[1], KW = g.k[2];
  const int64_t plane = g.in[1] * g.in[2], L = g.out[1] * g.out[2], K = C * KH * KW;
  const int64_t Cop = (Co + kMR - 1) / kMR * kMR, Kp = (K + kNT - 1) / kNT * kNT;
  const float* gyp = gy.data<float>();
  // the input gradient: a forward over gy with w transposed and flipped, no bias
  std::vector<float> wtpk, zbias;
  if (gx.defined()) {
    const float* wp = w.data<float>();
    wtpk = pack_weights(tile_rows(C), C, Co, KH, KW,
                        [&](int64_t c, int64_t o, int64_t kh, int64_t kw) {
                          return wp[((o * C + c) * KH + (KH - 1 - kh)) * KW + (KW - 1 - kw)];
                        });
    zbias.assign(static_cast<size_t>((C + kMR - 1) / kMR * kMR), 0.f);
  }
  const float* xp = gw.defined() ? x.data<float>() : nullptr;
  float* gxp = gx.defined() ? gx.data<float>() : nullptr;
  float* gwp = gw.defined() ? gw.data<float>() : nullptr;
  const std::vector<float> zeros(static_cast<size_t>((L + 7) / 8 * 8 + 8), 0.f);
  const int64_t nslab = std::min(N, kSlabs);
  // images per gw_images pass (a function of the sizes only: the sums' order does not
  // depend on the thread count)
  const int64_t gimg = gwp ? std::clamp<int64_t>(kGwFloats / sx.floats(), 1, kGwImages) : 1;
  const std::vector<int64_t> toff = gwp ? tap_offsets(sx) : std::vector<int64_t>();
  const int64_t nfull = L / 8, rem = L % 8;
  // per-slab weight gradients (slab 0 straight into gw), summed in slab order below
  std::vector<float> part(gwp ? static_cast<size_t>((nslab - 1) * Co * K) : 0);
  g_direct_calls.fetch_add(1);
  parallel_for(0, nslab, 1, [&](int64_t s0, int64_t s1) {
    std::vector<float> bufx(gwp ? static_cast<size_t>(gimg * sx.floats()) : 0);
    std::vector<float> tails(gwp ? static_cast<size_t>(gimg * Cop * 8) : 0);
    std::vector<float> bufg(gxp ? static_cast<size_t>(sg.floats()) : 0);
    std::vector<float> gwv(gwp ? static_cast<size_t>(Cop * Kp * 8) : 0);
    const float* gys[kGwImages];
    const float* bufs[kGwImages];
    const float* gtails[kGwImages];
    for (int64_t sl = s0; sl < s1; ++sl) {
      std::fill(gwv.begin(), gwv.end(), 0.f);
      const int64_t n1 = N * (sl + 1) / nslab;
      for (int64_t n0 = N * sl / nslab; n0 < n1; n0 += gimg) {
        const int ni = int(std::min(gimg, n1 - n0));
        if (gwp) {
          for (int i = 0; i < ni; ++i) {
            const int64_t n = n0 + i;
            float* bx = bufx.data() + i * sx.floats();
            float* gt = tails.data() + i * Cop * 8;
            fill_shifts(bx, xp + n * C * plane, sx);
            gys[i] = gyp + n * Co * L;
            bufs[i] = bx;
            gtails[i] = gt;
            std::fill(gt, gt + Cop * 8, 0.f);
            for (int64_t o = 0; o < Co; ++o)
              for (int64_t k = 0; k < rem; ++k) gt[o * 8 + k] = gys[i][o * L + nfull * 8 + k];
          }
          gw_images(gwv.data(), Co, gys, bufs, gtails, ni, toff.data(), sx, zeros.data());
        }
        if (gxp)
          for (int64_t n = n0; n < n0 + ni; ++n) {
            fill_shifts(bufg.data(), gyp + n * Co * L, sg);
            fwd_image(gxp + n * C * plane, C, bufg.data(), wtpk.data(), zbias.data(), sg);
          }
      }
      if (gwp) {
        float* dst = sl == 0 ? gwp : part.data() + (sl - 1) * Co * K;
        for (int64_t o = 0; o < Co; ++o)
          for (int64_t t = 0; t < K; ++t) {
            const float* v = gwv.data() + (o * Kp + t) * 8;
            // a fixed pairwise order
            dst[o * K + t] = ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
          }
      }
    }
  });
  if (gwp)
    for (int64_t sl = 1; sl < nslab; ++sl) {
      const float* src = part.data() + (sl - 1) * Co * K;
      for (int64_t i = 0; i < Co * K; ++i) gwp[i] += src[i];
    }
  return true;
}

#endif  // EMBER_CONV_DIRECT

}  // namespace ember::cpu
