// bernoulli_ with a scalar p (dropout's mask) on vectors of Philox blocks, compiled once per
// CPU capability (Note [CPU capability dispatch] in CMakeLists.txt). The other random kernels
// are in random_kernels.cpp, compiled once: their floating-point arithmetic must stay
// uncontracted to match the CUDA kernels bit for bit.
//
// Note [Vector Philox]
// The ten rounds of Philox4x32-10 are the same multiplies, xors and adds for every block, so
// philox::bernoulli53_fill (kernels/philox.h) runs sixteen consecutive blocks as one vector
// per word (32-bit lanes; a word product's high half from two pmuludq) under AVX-512, and
// block by block elsewhere. The scalar test u < p, with u = (x >> 11) * 2^-53 exact (x a
// block's two words as 64 bits), is the integer test (x >> 11) < ceil(p * 2^53), so every
// value equals the scalar kernel's and the CUDA kernel's (Note [Philox streams]), and the
// kernels ember.compile generates for dropout call the same function.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "ember/backends/cpu/capability.h"
#include "ember/core/parallel.h"
#include "ember/kernels/philox.h"
#include "ember/kernels/stubs/random.h"

namespace ember::cpu {
inline namespace EMBER_CPU_NS {
namespace {

void bernoulli_scalar_kernel(const Tensor& out, const RandomArgs& a) {
  // p in [0, 1] (checked by the front end): p * 2^53 is exact and at most 2^53.
  const uint64_t threshold = uint64_t(std::ceil(a.a * 9007199254740992.0));
  dispatch_all(out.dtype(), "bernoulli_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    parallel_for(0, out.numel(), kGrainSize, [&](int64_t b, int64_t e) {
      if constexpr (std::is_same<T, float>::value || std::is_same<T, double>::value) {
        philox::bernoulli53_fill<T>(a.seed, a.offset, b, e - b, threshold, T(1), T(0), o + b);
      } else {  // through a float run
        constexpr int64_t kRun = 512;
        float buf[kRun];
        for (int64_t c = b; c < e; c += kRun) {
          const int64_t n = std::min(kRun, e - c);
          philox::bernoulli53_fill<float>(a.seed, a.offset, c, n, threshold, 1.0f, 0.0f, buf);
          for (int64_t i = 0; i < n; ++i) o[c + i] = T(buf[i]);
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
