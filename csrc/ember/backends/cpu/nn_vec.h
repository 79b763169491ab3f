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

namespace ember::cpu::vec {

constexpr int kLanes = 16;

/// exp(x) for float within ~2 ulp (Cephes expf); 0 below -87.3 (no denormals), inf
/// above 88.37, NaN for NaN. Branch-free, so loops calling it vectorize.
inline float exp_f(float x) {
  const float lo = -87.3365478515625f, hi = 88.3762626647949f;
  const float xc = std::min(hi, std::max(lo, x));  // NaN -> lo: no NaN reaches the int cast
  // Round to nearest by adding and subtracting 1.5 * 2^23 (|x * log2(e)| < 128 after
  // the clamp): plain float adds, so it vectorizes on every instruction set.
  const float fx = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (xc - fx * 0.693359375f) + fx * 2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  const uint32_t bits = uint32_t(int32_t(fx) + 127) << 23;  // unsigned: no UB shift
  float p2;
  std::memcpy(&p2, &bits, sizeof(p2));
  const float v = y * p2;
  return x != x ? x : (x < lo ? 0.0f : (x > hi ? std::numeric_limits<float>::infinity() : v));
}

/// exp in the compute type: the vectorizable float version, libm for double.
template <typename A>
inline A exp(A x) {
  if constexpr (std::is_same<A, float>::value)
    return exp_f(x);
  else
    return std::exp(x);
}

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

}  // namespace ember::cpu::vec
