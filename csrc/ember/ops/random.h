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

/// The 4 words of block `counter` of the stream keyed by `seed`.
EMBER_HOST_DEVICE inline Block block(uint64_t seed, uint64_t counter) {
  uint32_t c0 = uint32_t(counter), c1 = uint32_t(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    uint64_t p0 = uint64_t(0xD2511F53u) * c0;
    uint64_t p1 = uint64_t(0xCD9E8D57u) * c2;
    uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0;
    uint32_t n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    c1 = uint32_t(p1);
    c3 = uint32_t(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return Block{{c0, c1, c2, c3}};
}

/// Uniform float in [0, 1) with `bits` random mantissa bits (<= 24).
EMBER_HOST_DEVICE inline float to_unit_float(uint32_t x, int bits = 24) {
  return float(x >> (32 - bits)) * (1.0f / float(uint32_t(1) << bits));
}
/// Uniform double in [0, 1) with 53 random bits.
EMBER_HOST_DEVICE inline double to_unit_double(uint32_t lo, uint32_t hi) {
  uint64_t x = (uint64_t(hi) << 32) | lo;
  return double(x >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace philox

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
/// Philox blocks one fill of `numel` elements of `dtype` with `dist` consumes.
uint64_t random_blocks_needed(Dist dist, DType dtype, int64_t numel, uint64_t range = 1);
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
