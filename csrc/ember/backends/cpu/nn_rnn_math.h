// Branch-free exp, sigmoid and tanh for the recurrent and attention kernels:
// written so the compiler vectorizes the loops that call them (libm's expf is
// a scalar call). float: nn_vec.h's exp_f (Cephes' polynomial, ~2 ulp over the whole
// range: subnormal below -87.3, 0 for -inf, +inf above 88.7).
// double keeps std::exp (float64 results must be exact to gradcheck).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "ember/backends/cpu/nn_vec.h"

// One copy per compiled CPU capability, as nn_vec.h: out-of-line copies of these inline
// functions must not be merged across the capability builds of the including kernels.
namespace ember::cpu {
inline namespace EMBER_CPU_NS {
namespace nnmath {

inline float exp_f(float x) { return vec::exp_f(x); }

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

}  // namespace nnmath
}  // namespace EMBER_CPU_NS
}  // namespace ember::cpu
