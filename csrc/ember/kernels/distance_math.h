// The accumulation rules of cdist's direct kernel, written once for the CPU
// (backends/cpu/distance_kernels.cpp) and CUDA (backends/cuda/distance.cu) kernels: per
// order p, `step` folds one feature's difference d into the running value and `finish`
// turns it into the distance. Both devices fold the features in order 0..M-1.
#pragma once
#include <cmath>
#include <type_traits>

#include "ember/core/half.h"

namespace ember::distance_math {

struct PZero {
  template <typename T>
  EMBER_HOST_DEVICE static T step(T acc, T d, T) {
    // PyTorch counts min(ceil(|d|), 1): a NaN difference makes the distance NaN.
    const T one = d != T(0) ? T(1) : T(0);
    return acc + (d == d ? one : d);
  }
  template <typename T>
  EMBER_HOST_DEVICE static T finish(T acc, T) {
    return acc;
  }
};
struct POne {
  template <typename T>
  EMBER_HOST_DEVICE static T step(T acc, T d, T) {
    return acc + std::abs(d);
  }
  template <typename T>
  EMBER_HOST_DEVICE static T finish(T acc, T) {
    return acc;
  }
};
struct PTwo {
  template <typename T>
  EMBER_HOST_DEVICE static T step(T acc, T d, T) {
    return acc + d * d;
  }
  template <typename T>
  EMBER_HOST_DEVICE static T finish(T acc, T) {
    return std::sqrt(acc);
  }
};
struct PInf {
  template <typename T>
  EMBER_HOST_DEVICE static T step(T acc, T d, T) {
    const T a = std::abs(d);
    return acc < a ? a : acc;  // std::max(acc, |d|): a NaN |d| leaves acc
  }
  template <typename T>
  EMBER_HOST_DEVICE static T finish(T acc, T) {
    return acc;
  }
};
struct PGeneral {
  template <typename T>
  EMBER_HOST_DEVICE static T step(T acc, T d, T p) {
    return acc + std::pow(std::abs(d), p);
  }
  template <typename T>
  EMBER_HOST_DEVICE static T finish(T acc, T p) {
    return std::pow(acc, T(1) / p);
  }
};

/// Calls f(Rule{}, T{}) with the rule of order `p` and the compute type of an output of
/// `float64` (double) or float32 (float) (host).
template <typename F>
void with_rule(double p, bool float64, F&& f) {
  auto pick = [&](auto t) {
    if (p == 0)
      f(PZero{}, t);
    else if (p == 1)
      f(POne{}, t);
    else if (p == 2)
      f(PTwo{}, t);
    else if (std::isinf(p))
      f(PInf{}, t);
    else
      f(PGeneral{}, t);
  };
  if (float64)
    pick(double{});
  else
    pick(float{});
}

}  // namespace ember::distance_math
