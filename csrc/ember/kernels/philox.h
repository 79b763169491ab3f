// Philox4x32-10, the counter-based engine every random op draws from. Self-contained
// (only <cstdint> and the host/device macro), so that the kernels ember.compile generates
// include it too and draw exactly the numbers eager's kernels draw (Note [Fused dropout]
// in python/ember/_compile/_codegen.py).
#pragma once
#include <cstdint>
#include <type_traits>
#if defined(__AVX512F__) && !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
#include <immintrin.h>
#define EMBER_PHILOX_AVX512 1
#endif

#include "ember/core/half.h"

namespace ember {

// Note [Philox streams]
// Every random op draws from Philox4x32-10, a counter-based engine: block
// `c` of the stream for key `seed` is philox(seed, c), four independent 32-bit
// words computed without any sequential state. An op reserves a range of
// blocks from its Generator (advancing the generator's offset), and element i
// of the (logically contiguous) output reads block `offset + i / per_block`,
// lane `i % per_block`. So the samples depend only on (seed, offset, i):
// never on the thread count, the chunking, or the device. The CUDA kernels
// use the same functions (EMBER_HOST_DEVICE) and the same layout.
namespace philox {

struct Block {
  uint32_t w[4];
};

/// Philox4x32-10's round multipliers and key increments (Random123's constants), shared by
/// block() and the CPU's vector form (backends/cpu/random_vec.cpp, Note [Vector Philox]).
constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
constexpr int kRounds = 10;

/// The 4 words of block `counter` of the stream keyed by `seed`.
EMBER_HOST_DEVICE inline Block block(uint64_t seed, uint64_t counter) {
  uint32_t c0 = uint32_t(counter), c1 = uint32_t(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int r = 0; r < kRounds; ++r) {
    uint64_t p0 = uint64_t(kMul0) * c0;
    uint64_t p1 = uint64_t(kMul1) * c2;
    uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0;
    uint32_t n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    c1 = uint32_t(p1);
    c3 = uint32_t(p0);
    c0 = n0;
    c2 = n2;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return Block{{c0, c1, c2, c3}};
}

/// Bernoulli element `i` of a fill that reserved blocks from `offset` on (two elements a
/// block, Note [Philox streams]): 1 when its 53-bit uniform (x >> 11) * 2^-53 is below p,
/// tested as (x >> 11) < threshold with threshold = ceil(p * 2^53), exactly.
EMBER_HOST_DEVICE inline bool bernoulli53(uint64_t seed, uint64_t offset, int64_t i,
                                          uint64_t threshold) {
  const Block k = block(seed, offset + uint64_t(i >> 1));
  const uint32_t lo = (i & 1) ? k.w[2] : k.w[0], hi = (i & 1) ? k.w[3] : k.w[1];
  return (((uint64_t(hi) << 32) | lo) >> 11) < threshold;
}

#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
/// m[k] = bernoulli53(seed, offset, i0 + k, threshold) ? one : zero for k in [0, n): the
/// draws of a run of elements at once, each block computed once for its two elements
/// (sixteen blocks a vector with AVX-512). For the CPU kernels ember.compile generates.
template <typename T>
inline void bernoulli53_fill(uint64_t seed, uint64_t offset, int64_t i0, int64_t n,
                             uint64_t threshold, T one, T zero, T* m) {
  int64_t k = 0;
  if (threshold >> 53) {  // p = 1: every draw is below it (and th below would not fit 32 bits)
    for (; k < n; ++k) m[k] = one;
    return;
  }
  if (n > 0 && (i0 & 1)) {  // the odd half of a block
    m[0] = bernoulli53(seed, offset, i0, threshold) ? one : zero;
    k = 1;
  }
#if defined(EMBER_PHILOX_AVX512)
#if defined(__GNUC__) && !defined(__clang__)
  // GCC 12's AVX-512 intrinsics pass an undefined vector through, which trips this warning
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
  // 32-bit lanes; a word product's high half is two pmuludq (even, odd lanes) blended.
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i m0 = _mm512_set1_epi32(int(kMul0)), m1 = _mm512_set1_epi32(int(kMul1));
  const __m512i th = _mm512_set1_epi32(int(uint32_t(threshold >> 21)));
  const __m512i tl = _mm512_set1_epi32(int(uint32_t(threshold & ((1u << 21) - 1))));
  // a * b (b a broadcast word) as high and low words: pmuludq of the even lanes and of the
  // odd lanes shifted down, their halves blended back into place
  auto mul = [](__m512i a, __m512i b, __m512i& hi, __m512i& lo) {
    const __m512i even = _mm512_mul_epu32(a, b),
                  odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), b);
    hi = _mm512_mask_blend_epi32(__mmask16(0xAAAA), _mm512_srli_epi64(even, 32), odd);
    lo = _mm512_mask_blend_epi32(__mmask16(0xAAAA), even, _mm512_slli_epi64(odd, 32));
  };
  // (hi:lo) >> 11 < threshold  <=>  hi < th, or hi == th and lo >> 11 < tl
  auto keep = [&](__m512i lo, __m512i hi) {
    return __mmask16(
        _mm512_cmplt_epu32_mask(hi, th) |
        (_mm512_cmpeq_epi32_mask(hi, th) & _mm512_cmplt_epu32_mask(_mm512_srli_epi32(lo, 11), tl)));
  };
  auto store = [&](int64_t at, uint32_t bits) {
    if constexpr (std::is_same<T, float>::value) {
      const __m512 a = _mm512_set1_ps(one), z = _mm512_set1_ps(zero);
      _mm512_storeu_ps(m + at, _mm512_mask_blend_ps(__mmask16(bits), z, a));
      _mm512_storeu_ps(m + at + 16, _mm512_mask_blend_ps(__mmask16(bits >> 16), z, a));
    } else if constexpr (std::is_same<T, double>::value) {
      const __m512d a = _mm512_set1_pd(one), z = _mm512_set1_pd(zero);
      for (int q = 0; q < 4; ++q)
        _mm512_storeu_pd(m + at + 8 * q, _mm512_mask_blend_pd(__mmask8(bits >> (8 * q)), z, a));
    } else {
      for (int j = 0; j < 32; ++j) m[at + j] = ((bits >> j) & 1) ? one : zero;
    }
  };
  auto spread = [](uint32_t x) {  // bit j to bit 2j
    x = (x | (x << 8)) & 0x00FF00FFu;
    x = (x | (x << 4)) & 0x0F0F0F0Fu;
    x = (x | (x << 2)) & 0x33333333u;
    return (x | (x << 1)) & 0x55555555u;
  };
  constexpr int S = 2;  // independent sets of 16 blocks a step: the rounds are a latency chain
  for (; k + 32 * S <= n; k += 32 * S) {
    __m512i c0[S], c1[S], c2[S], c3[S];
    for (int q = 0; q < S; ++q) {
      const uint64_t base = offset + uint64_t((i0 + k) >> 1) + uint64_t(16 * q);
      const __m512i hi = _mm512_set1_epi32(int(uint32_t(base >> 32)));
      c0[q] = _mm512_add_epi32(_mm512_set1_epi32(int(uint32_t(base))), lane);
      c1[q] = _mm512_mask_add_epi32(hi, _mm512_cmplt_epu32_mask(c0[q], lane), hi,
                                    _mm512_set1_epi32(1));  // the carry out of the low word
      c2[q] = c3[q] = _mm512_setzero_si512();
    }
    uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
    for (int r = 0; r < kRounds; ++r) {
      const __m512i kk0 = _mm512_set1_epi32(int(k0)), kk1 = _mm512_set1_epi32(int(k1));
      for (int q = 0; q < S; ++q) {
        __m512i h0, l0, h1, l1;
        mul(c0[q], m0, h0, l0);
        mul(c2[q], m1, h1, l1);
        c0[q] = _mm512_ternarylogic_epi32(h1, c1[q], kk0, 0x96);
        c2[q] = _mm512_ternarylogic_epi32(h0, c3[q], kk1, 0x96);
        c1[q] = l1;
        c3[q] = l0;
      }
      k0 += kWeyl0;
      k1 += kWeyl1;
    }
    for (int q = 0; q < S; ++q)  // element 2j's bit from lane j of (c0, c1), 2j + 1's of (c2, c3)
      store(k + 32 * q, spread(keep(c0[q], c1[q])) | (spread(keep(c2[q], c3[q])) << 1));
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif
  for (; k + 2 <= n; k += 2) {
    const Block b = block(seed, offset + uint64_t((i0 + k) >> 1));
    m[k] = ((((uint64_t(b.w[1]) << 32) | b.w[0]) >> 11) < threshold) ? one : zero;
    m[k + 1] = ((((uint64_t(b.w[3]) << 32) | b.w[2]) >> 11) < threshold) ? one : zero;
  }
  if (k < n) m[k] = bernoulli53(seed, offset, i0 + k, threshold) ? one : zero;
}
#endif

}  // namespace philox
}  // namespace ember
