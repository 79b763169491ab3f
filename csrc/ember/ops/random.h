// Random numbers: the Philox4x32-10 engine, the Generator (seed + counter
// offset) and the C++ API of every sampling op.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "ember/core/half.h"
#include "ember/core/scalar.h"
#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/stubs/random.h"

namespace ember {

// Philox (Note [Philox streams]): kernels/stubs/random.h.

/// A source of random numbers: a seed and a counter offset into its Philox
/// stream (see Note [Philox streams]). Thread-safe.
class GeneratorImpl {
 public:
  explicit GeneratorImpl(Device device = Device(), uint64_t seed = 67280421310721ull)
      : device_(device), seed_(seed) {}

  Device device() const { return device_; }
  /// Restarts the stream from `seed`.
  void manual_seed(uint64_t seed);
  /// Seeds from a nondeterministic source; returns the new seed.
  uint64_t seed();
  uint64_t initial_seed() const;
  /// Reserves `nblocks` Philox blocks; returns the (seed, first block) to use.
  std::pair<uint64_t, uint64_t> reserve(uint64_t nblocks);
  /// The state as 16 bytes (seed, offset; little-endian) and back.
  void get_state(uint8_t out[16]) const;
  void set_state(const uint8_t in[16]);
  uint64_t offset() const;

 private:
  Device device_;
  mutable std::mutex mu_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};
using Generator = std::shared_ptr<GeneratorImpl>;

/// The process-wide CPU generator (what ember.manual_seed seeds).
const Generator& default_generator();
/// `gen` when given (checked to match `device`'s type), else the default generator.
GeneratorImpl& pick_generator(const Generator& gen, Device device, const char* op);

// RandomArgs, Dist and the kernel stubs: kernels/stubs/random.h.
/// Philox blocks one fill of `numel` elements of `dtype` with `dist` consumes.
uint64_t random_blocks_needed(Dist dist, DType dtype, int64_t numel, uint64_t range = 1);

// ---- in-place fills (bump the version; any strides) ------------------------------------
/// Uniform on [from, to). Floating dtypes only.
const Tensor& uniform_(const Tensor& self, double from = 0, double to = 1,
                       const Generator& gen = nullptr);
/// Normal(mean, std). Floating dtypes only; std >= 0.
const Tensor& normal_(const Tensor& self, double mean = 0, double std = 1,
                      const Generator& gen = nullptr);
/// Integers uniform on [from, to); to = nullopt means up to the dtype's largest value
/// (for floats: 2^mantissa). `random_()` is random_(self, 0, nullopt).
const Tensor& random_(const Tensor& self, int64_t from, std::optional<int64_t> to,
                      const Generator& gen = nullptr);
/// Each element becomes 1 with probability p, else 0.
const Tensor& bernoulli_(const Tensor& self, double p, const Generator& gen = nullptr);
/// Each element becomes 1 with probability p[i] (p broadcast to self).
const Tensor& bernoulli_(const Tensor& self, const Tensor& p, const Generator& gen = nullptr);
/// Exponential(lambd): -log(1 - u) / lambd. Floating dtypes only; lambd > 0.
const Tensor& exponential_(const Tensor& self, double lambd = 1, const Generator& gen = nullptr);

// ---- sampling factories ----------------------------------------------------------------
Tensor rand(const Shape& size, DType dtype, Device device = Device(),
            const Generator& gen = nullptr);
Tensor randn(const Shape& size, DType dtype, Device device = Device(),
             const Generator& gen = nullptr);
/// Integers uniform on [low, high).
Tensor randint(int64_t low, int64_t high, const Shape& size, DType dtype, Device device = Device(),
               const Generator& gen = nullptr);
/// A random permutation of 0..n-1.
Tensor randperm(int64_t n, DType dtype, Device device = Device(), const Generator& gen = nullptr);
/// normal(mean, std) with tensor mean and/or std, broadcast; the result is a floating dtype.
Tensor normal(const Tensor& mean, const Tensor& std, const Generator& gen = nullptr);
/// A tensor of 0/1 of p's dtype, 1 with probability p[i].
Tensor bernoulli(const Tensor& p, const Generator& gen = nullptr);
/// Samples `num_samples` category indices per row of a 1-D or 2-D weight tensor.
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false,
                   const Generator& gen = nullptr);

}  // namespace ember
