// Vectorizable building blocks of the nn CPU kernels: a branch-free float exp the
// compiler turns into SIMD code (std::exp stays a scalar libm call), and row
// reductions over kLanes independent accumulators so the adds and maxes vectorize
// without -ffast-math (see Note [Accurate float sums] for the same idea in reductions).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ember/backends/cpu/capability.h"

// One copy per compiled CPU capability (capability.h), as loops.h: the activation kernels
// are compiled per instruction set, and a helper shared across those copies would be
// merged by the linker into one, possibly built for an instruction set the CPU lacks.
// The float math is forced inline: out of line (as GCC left it in the large activation
// switch) every element pays a call and the loops do not vectorize.
#define EMBER_VEC_INLINE inline __attribute__((always_inline))

namespace ember::cpu {
inline namespace EMBER_CPU_NS {
namespace vec {

constexpr int kLanes = 16;

/// exp(x - fx ln 2) for |x - fx ln 2| <= ln 2 / 2 (fx = round(x / ln 2)): Cephes expf's
/// two-part reduction and polynomial, the core of exp_normal_f and exp_f.
EMBER_VEC_INLINE float exp_reduced_f(float x, float fx) {
  const float r = (x - fx * 0.693359375f) + fx * 2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  return y * r * r + r + 1.0f;
}

/// exp(x) for float within ~2 ulp (Cephes expf) where the result is a normal float: for
/// x in [-87.34, 88.37] (clamped outside, so 1.2e-38 below). No NaN, subnormal or overflow
/// handling: the core of exp_f, and what erf_f needs for exp(-x^2).
EMBER_VEC_INLINE float exp_normal_f(float x) {
  const float lo = -87.3365478515625f, hi = 88.3762626647949f;
  const float xc = std::min(hi, std::max(lo, x));  // NaN -> lo: no NaN reaches the int cast
  // Round to nearest by adding and subtracting 1.5 * 2^23 (|x * log2(e)| < 128 after
  // the clamp): plain float adds, so it vectorizes on every instruction set.
  const float fx = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float y = exp_reduced_f(xc, fx);
  const uint32_t bits = uint32_t(int32_t(fx) + 127) << 23;  // unsigned: no UB shift
  float p2;
  std::memcpy(&p2, &bits, sizeof(p2));
  return y * p2;
}

/// exp(x) for float within ~2 ulp (Cephes expf) over the whole float range, NaN for NaN:
/// subnormal results below -87.34 (0 below -103.97) and inf past 88.72, as libm's.
/// x = k ln 2 + r, and 2^k is applied as two factors 2^(k/2) and 2^(k - k/2), each a
/// normal float for every k of the clamped range [-150, 128]: the product overflows or
/// rounds into the subnormals by itself, so there is no separate branch for either (the
/// first version scaled by 2^+-64 on both sides and selected among three results).
/// Branch-free, so loops calling it vectorize.
EMBER_VEC_INLINE float exp_f(float x) {
  const float xc = std::min(89.0f, std::max(-104.0f, x));  // NaN -> -104: no NaN to the int cast
  const float fx = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round(x / ln 2)
  const float y = exp_reduced_f(xc, fx);
  const int32_t k = int32_t(fx), k1 = k >> 1, k2 = k - k1;  // k1, k2 in [-75, 64]
  const uint32_t b1 = uint32_t(k1 + 127) << 23, b2 = uint32_t(k2 + 127) << 23;
  float p1, p2;
  std::memcpy(&p1, &b1, sizeof(p1));
  std::memcpy(&p2, &b2, sizeof(p2));
  const float res = (y * p1) * p2;
  return x != x ? x : res;
}

/// expm1(x) for float within ~2 ulp: the Taylor series to x^11 for |x| < 1 (its remainder is
/// below 2e-9 of the result there, and there is no cancellation), exp(x) - 1 outside, where
/// the subtraction loses under 2 ulp. Branch-free; NaN for NaN.
EMBER_VEC_INLINE float expm1_f(float x) {
  float p = 1.0f / 39916800.0f;  // 1/11!
  p = p * x + 1.0f / 3628800.0f;
  p = p * x + 1.0f / 362880.0f;
  p = p * x + 1.0f / 40320.0f;
  p = p * x + 1.0f / 5040.0f;
  p = p * x + 1.0f / 720.0f;
  p = p * x + 1.0f / 120.0f;
  p = p * x + 1.0f / 24.0f;
  p = p * x + 1.0f / 6.0f;
  p = p * x + 0.5f;
  const float small = (p * x) * x + x;
  const float big = exp_f(x) - 1.0f;
  return std::fabs(x) < 1.0f ? small : big;
}

/// exp in the compute type: the vectorizable float version, libm for double.
template <typename A>
EMBER_VEC_INLINE A exp(A x) {
  if constexpr (std::is_same<A, float>::value)
    return exp_f(x);
  else
    return std::exp(x);
}

/// log(x) for float within ~1 ulp (Cephes logf) for finite x > 0 (no denormals);
/// -inf at 0, NaN below 0 or for NaN, inf at inf. Branch-free.
EMBER_VEC_INLINE float log_f(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  float e = float(int32_t((bits >> 23) & 0xffu) - 126);
  const uint32_t mb = (bits & 0x807fffffu) | 0x3f000000u;  // mantissa in [0.5, 1)
  float m;
  std::memcpy(&m, &mb, sizeof(m));
  const bool small = m < 0.707106781186547524f;
  e = small ? e - 1.0f : e;
  m = small ? m + m - 1.0f : m - 1.0f;
  const float z = m * m;
  float y = 7.0376836292E-2f;
  y = y * m - 1.1514610310E-1f;
  y = y * m + 1.1676998740E-1f;
  y = y * m - 1.2420140846E-1f;
  y = y * m + 1.4249322787E-1f;
  y = y * m - 1.6668057665E-1f;
  y = y * m + 2.0000714765E-1f;
  y = y * m - 2.4999993993E-1f;
  y = y * m + 3.3333331174E-1f;
  y = y * m * z;
  y += -2.12194440e-4f * e;
  y += -0.5f * z;
  const float r = m + y + 0.693359375f * e;
  const float inf = std::numeric_limits<float>::infinity();
  // One compare (NaN fails x >= 0): a combined condition (`||` or `|` of two compares)
  // mixes mask widths and keeps a caller's loop scalar.
  const float res = x == 0 ? -inf : (x == inf ? inf : r);
  return x >= 0 ? res : std::numeric_limits<float>::quiet_NaN();
}

/// log1p(x) for float, x >= -1: log(u) * x / (u - 1) with u = 1 + x corrects the
/// rounding of 1 + x (Goldberg); exact x where u rounds to 1. Branch-free.
EMBER_VEC_INLINE float log1p_f(float x) {
  const float u = 1.0f + x;
  const float d = u - 1.0f;
  const float r = log_f(u) * (x / (d == 0.0f ? 1.0f : d));
  return d == 0.0f ? x : (u == std::numeric_limits<float>::infinity() ? u : r);
}

/// tanh(x) for float within a few ulp: Cephes' odd polynomial below |x| = 0.625,
/// 1 - 2 / (exp(2|x|) + 1) with the sign above. Branch-free; NaN for NaN.
EMBER_VEC_INLINE float tanh_f(float x) {
  const float ax = std::fabs(x);
  const float z = x * x;
  float p = -5.70498872745E-3f;
  p = p * z + 2.06390887954E-2f;
  p = p * z - 5.37397155531E-2f;
  p = p * z + 1.33314422036E-1f;
  p = p * z - 3.33332819422E-1f;
  const float small = p * z * x + x;
  const float big = 1.0f - 2.0f / (exp_f(2.0f * ax) + 1.0f);
  return ax < 0.625f ? small : std::copysign(big, x);
}

/// erfc(z) for z >= 0 given g = exp(-z^2), to ~1.5e-7 absolute (Abramowitz-Stegun 7.1.26,
/// as PyTorch's vectorized float erf): the core of erf_f and normal_tail_f.
EMBER_VEC_INLINE float erfc_given_gauss_f(float z, float g) {
  const float t = 1.0f / (0.3275911f * z + 1.0f);
  float r = 1.061405429f;
  r = r * t - 1.453152027f;
  r = r * t + 1.421413741f;
  r = r * t - 0.284496736f;
  r = r * t + 0.254829592f;
  return r * t * g;
}

/// erf(x) for float to ~1.5e-7 absolute. Branch-free; NaN for NaN.
EMBER_VEC_INLINE float erf_f(float x) {
  const float ax = std::fabs(x);
  const float v = 1.0f - erfc_given_gauss_f(ax, exp_normal_f(-x * x));  // erf is 1 below 1.2e-38
  return x != x ? x : std::copysign(v, x);
}

/// The standard normal distribution's mass beyond |x|, 0.5 erfc(|x| / sqrt 2), to ~1e-7
/// absolute, and the Gaussian exp(-x^2 / 2) in `g`. gelu's cdf is 1 - tail (x >= 0) or tail
/// (x < 0): no 1 + erf(x) cancellation for x < 0 and no copysign, and its derivative's pdf
/// reuses `g` instead of a second exp.
EMBER_VEC_INLINE float normal_tail_f(float x, float& g) {
  const float az = std::fabs(x) * 0.70710678118654752f;
  g = az < 9.3f ? exp_normal_f(-az * az) : 0.0f;  // exactly 0 where exp(-az^2) < 1.7e-38
  return 0.5f * erfc_given_gauss_f(az, g);
}

/// The compute-type versions: the vectorizable float ones, libm for double.
#define EMBER_VEC_COMPUTE_TYPE(name)             \
  template <typename A>                          \
  EMBER_VEC_INLINE A name(A x) {                 \
    if constexpr (std::is_same<A, float>::value) \
      return name##_f(x);                        \
    else                                         \
      return std::name(x);                       \
  }
EMBER_VEC_COMPUTE_TYPE(log1p)
EMBER_VEC_COMPUTE_TYPE(expm1)
EMBER_VEC_COMPUTE_TYPE(tanh)
EMBER_VEC_COMPUTE_TYPE(erf)
#undef EMBER_VEC_COMPUTE_TYPE

/// max over n values of f(i) (A = the compute type); -inf for n == 0.
template <typename A, typename F>
inline A max_of(int64_t n, F f) {
  A acc[kLanes];
  for (int k = 0; k < kLanes; ++k) acc[k] = -std::numeric_limits<A>::infinity();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) {
      const A v = f(i + k);
      acc[k] = acc[k] < v ? v : acc[k];
    }
  A m = -std::numeric_limits<A>::infinity();
  for (int k = 0; k < kLanes; ++k) m = m < acc[k] ? acc[k] : m;
  for (; i < n; ++i) {
    const A v = f(i);
    m = m < v ? v : m;
  }
  return m;
}

/// sum over n values of f(i), accumulated in S over kLanes lanes.
template <typename S, typename F>
inline S sum_of(int64_t n, F f) {
  S acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] += S(f(i + k));
  S s = 0;
  for (; i < n; ++i) s += S(f(i));
  for (int k = 0; k < kLanes; ++k) s += acc[k];
  return s;
}

}  // namespace vec
}  // namespace EMBER_CPU_NS
}  // namespace ember::cpu
