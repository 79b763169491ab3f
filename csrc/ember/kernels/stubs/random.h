// Philox (the counter-based engine every random op draws from) and the kernel slots
// of the random fills (front-ends in ops/random.cpp).
// Backend-neutral: backends include this, never ops/random.h.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>

#include "ember/core/half.h"
#include "ember/core/scalar.h"
#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/philox.h"

namespace ember {

// Philox (Note [Philox streams]): kernels/philox.h.
namespace philox {

/// Uniform float in [0, 1) with `bits` random mantissa bits (<= 24).
EMBER_HOST_DEVICE inline float to_unit_float(uint32_t x, int bits = 24) {
  return float(x >> (32 - bits)) * (1.0f / float(uint32_t(1) << bits));
}
/// The random mantissa bits of a uniform draw in T (float16: 11, bfloat16: 8, float: 24),
/// so that every value of the grid [0, 1) in steps of 2^-bits is representable in T.
template <typename T>
constexpr int mantissa_bits() {
  if constexpr (std::is_same<T, Half>::value)
    return 11;
  else if constexpr (std::is_same<T, BFloat16>::value)
    return 8;
  else
    return 24;
}
/// Uniform double in [0, 1) with 53 random bits.
EMBER_HOST_DEVICE inline double to_unit_double(uint32_t lo, uint32_t hi) {
  uint64_t x = (uint64_t(hi) << 32) | lo;
  return double(x >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace philox

/// The parameters of one random fill, handed to a kernel: the stream key and
/// first block reserved for it, plus the distribution's arguments.
struct RandomArgs {
  uint64_t seed = 0, offset = 0;
  double a = 0,
         b = 1;  // uniform [a, b); normal (mean a, std b); bernoulli p = a; exponential lambda = a
  int64_t from = 0;    // random_: values in [from, from + range)
  uint64_t range = 0;  // 0 means the full 2^64 range
};
enum class Dist : int { Uniform, Normal, Random, Bernoulli, Exponential, Count };
/// Kernels fill a contiguous tensor; `blocks_needed` says how many Philox blocks they consume.
using RandomKernel = void (*)(const Tensor& out, const RandomArgs& args);
extern DispatchStub<RandomKernel> random_stubs[int(Dist::Count)];
/// bernoulli with per-element probabilities: out[i] = u_i < p[i] (p contiguous float64, same
/// numel).
extern DispatchStub<void (*)(const Tensor& out, const Tensor& p, const RandomArgs&)>
    bernoulli_tensor_stub;
/// multinomial over the rows of a contiguous float64 [rows, k] matrix into int64 [rows, n].
extern DispatchStub<void (*)(const Tensor& out, const Tensor& probs, bool replacement,
                             const RandomArgs&)>
    multinomial_stub;
/// randperm: out (int64 [n], contiguous) <- a uniform permutation of 0..n-1.
extern DispatchStub<void (*)(const Tensor& out, const RandomArgs&)> randperm_stub;

}  // namespace ember
