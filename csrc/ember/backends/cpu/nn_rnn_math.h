// Branch-free exp, sigmoid and tanh for the recurrent and attention kernels:
// written so the compiler vectorizes the loops that call them (libm's expf is
// a scalar call). float: Cephes' polynomial, max relative error ~2 ulp;
// exp(x) is exactly 0 below -87.3 (so exp(-inf) = 0) and +inf above 88.7.
// double keeps std::exp (float64 results must be exact to gradcheck).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace ember::cpu::nnmath {

inline float exp_f(float x) {
  const float hi = 88.7228391f, lo = -87.3365448f;
  float xc = x < lo ? lo : (x > hi ? hi : x);
  float n = std::floor(xc * 1.44269504088896341f + 0.5f);
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t e = (int32_t(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &e, sizeof scale);
  float y = p * scale;
  y = x < lo ? 0.0f : y;
  y = x > hi ? INFINITY : y;
  return y;
}

inline float exp_(float x) { return exp_f(x); }
inline double exp_(double x) { return std::exp(x); }

template <typename T>
inline T sigmoid(T x) {
  return T(1) / (T(1) + exp_(-x));
}

inline float tanh_(float x) {
  // tanh = sign(x) * (1 - 2 / (exp(2|x|) + 1)); small |x| by its odd series to keep
  // the relative error small near 0.
  float ax = x < 0 ? -x : x;
  float e = exp_f(2.0f * ax);
  float big = 1.0f - 2.0f / (e + 1.0f);
  float x2 = ax * ax;
  float small = ax * (1.0f + x2 * (-0.333333333f + x2 * (0.133333333f + x2 * (-0.0539682540f))));
  float t = ax < 0.0625f ? small : big;
  return x < 0 ? -t : t;
}
inline double tanh_(double x) { return std::tanh(x); }

}  // namespace ember::cpu::nnmath
