// The random fills that run on vectors of Philox blocks (Note [Vector Philox]), compiled
// once per CPU capability (Note [CPU capability dispatch] in CMakeLists.txt). The other
// random kernels are in random_kernels.cpp, compiled once: their floating-point arithmetic
// must stay uncontracted to match the CUDA kernels bit for bit.
//
// Note [Vector Philox]
// bernoulli_(p), dropout's mask, drew each pair of elements from one Philox4x32-10 block
// computed in scalar code: about 6 ns an element, no faster than PyTorch's. The ten
// rounds are the same multiplies, xors and adds for every block, so kBlocks consecutive
// blocks run as one vector per word: 64-bit lanes hold the 32-bit words, and the 32x32 ->
// 64-bit multiply is pmuludq, which reads each lane's low half. The scalar test u < p,
// with u = (x >> 11) * 2^-53 exact (x the block's two words as 64 bits), is the integer
// test (x >> 11) < ceil(p * 2^53), so every value equals the scalar kernel's and the CUDA
// kernel's (Note [Philox streams]): the stream layout (two elements a block) is unchanged.
#include <cmath>
#include <cstdint>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "ember/backends/cpu/capability.h"
#include "ember/core/parallel.h"
#include "ember/kernels/stubs/random.h"

namespace ember::cpu {
inline namespace EMBER_CPU_NS {
namespace {

constexpr int kBlocks = kVecBytes / 8;  // Philox blocks per vector
typedef uint64_t U __attribute__((vector_size(kVecBytes)));

/// Lane-wise (a & 0xffffffff) * (k & 0xffffffff), as 64-bit products.
inline U mul_lo32(U a, U k) {
#if defined(__AVX512F__)
  return (U)_mm512_mul_epu32((__m512i)a, (__m512i)k);
#elif defined(__AVX2__)
  return (U)_mm256_mul_epu32((__m256i)a, (__m256i)k);
#elif defined(__SSE2__)
  return (U)_mm_mul_epu32((__m128i)a, (__m128i)k);
#else
  return (a & 0xffffffffu) * (k & 0xffffffffu);
#endif
}

/// Words w[0..4) of blocks counter, counter + 1, ..., counter + kBlocks - 1 of the stream
/// keyed by seed (lane j: block counter + j), as philox::block computes them one at a time.
inline void philox_blocks(uint64_t seed, uint64_t counter, U (&w)[4]) {
  const U low = U{} + 0xffffffffu;
  U ctr = U{} + counter;
  for (int j = 0; j < kBlocks; ++j) ctr[j] += uint64_t(j);
  U c0 = ctr & low, c1 = ctr >> 32, c2 = U{}, c3 = U{};
  const U m0 = U{} + philox::kMul0, m1 = U{} + philox::kMul1;
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int r = 0; r < philox::kRounds; ++r) {
    const U p0 = mul_lo32(c0, m0), p1 = mul_lo32(c2, m1);
    const U n0 = (p1 >> 32) ^ c1 ^ uint64_t(k0);
    const U n2 = (p0 >> 32) ^ c3 ^ uint64_t(k1);
    c1 = p1 & low;
    c3 = p0 & low;
    c0 = n0;
    c2 = n2;
    k0 += philox::kWeyl0;
    k1 += philox::kWeyl1;
  }
  w[0] = c0;
  w[1] = c1;
  w[2] = c2;
  w[3] = c3;
}

void bernoulli_scalar_kernel(const Tensor& out, const RandomArgs& a) {
  // p in [0, 1] (checked by the front end): p * 2^53 is exact and at most 2^53.
  const uint64_t threshold = uint64_t(std::ceil(a.a * 9007199254740992.0));
  dispatch_all(out.dtype(), "bernoulli_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T vals[2] = {T(0.0f), T(1.0f)};
    T* o = out.data<T>();
    const int64_t n = out.numel(), nb = (n + 1) / 2;
    parallel_for(0, nb, kGrainSize / 2, [&](int64_t b0, int64_t b1) {
      int64_t b = b0;
      for (; b + kBlocks <= b1; b += kBlocks) {
        U w[4];
        philox_blocks(a.seed, a.offset + uint64_t(b), w);
        const U first = ((w[1] << 32) | w[0]) >> 11, second = ((w[3] << 32) | w[2]) >> 11;
        for (int j = 0; j < kBlocks; ++j) {
          const int64_t i = 2 * (b + j);
          o[i] = vals[first[j] < threshold];
          if (i + 1 < n) o[i + 1] = vals[second[j] < threshold];
        }
      }
      for (; b < b1; ++b) {
        const philox::Block k = philox::block(a.seed, a.offset + uint64_t(b));
        for (int l = 0; l < 2 && 2 * b + l < n; ++l) {
          const uint64_t x = (uint64_t(k.w[2 * l + 1]) << 32) | k.w[2 * l];
          o[2 * b + l] = vals[(x >> 11) < threshold];
        }
      }
    });
  });
}

EMBER_REGISTER_CPU_KERNELS(random_vec) {
  random_stubs[int(Dist::Bernoulli)].fns[int(DeviceType::CPU)] = &bernoulli_scalar_kernel;
}

}  // namespace
}  // namespace EMBER_CPU_NS
}  // namespace ember::cpu
