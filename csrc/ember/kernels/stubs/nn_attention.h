// Kernel stubs of scaled_dot_product_attention's fused (flash-style) path
// (ops/nn_attention.cpp, backends/cpu/nn_attention.cpp).
#pragma once
#include <algorithm>
#include <cstdint>

#include "ember/core/half.h"  // EMBER_HOST_DEVICE
#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"

namespace ember {

// Note [Fused attention dropout]
// Dropout on the attention weights, inside the fused kernels: the forward multiplies each
// probability P[i, j] by Z[i, j] = keep / (1 - p) before it meets V, and the backward, which
// recomputes P from the logsumexp, needs the same Z again. So Z is never drawn from a stream
// or stored: it is a hash of (seed, offset, batch*head, row, column), recomputed wherever it is
// needed (lowbias32 finalizers, well mixed in every bit; host and device functions, so the
// CUDA kernels draw the same Z as the CPU's). The forward reserves one block of the default
// generator per call, so calls differ and ember.manual_seed repeats them.
// sdpa_dropout_mask materializes the same Z, for the double backward and the tests. The
// backward with Z (D_i = rowsum(dO * O) already holds the dropped output):
//   dV = (P * Z)^T dO,   dS = P * (Z * (dO V^T) - D).
struct SdpaDropout {
  double p = 0;
  uint32_t key = 0, threshold = 0;
  SdpaDropout() = default;
  SdpaDropout(double p_, uint64_t seed, uint64_t offset)
      : p(p_),
        key(mix(uint32_t(seed) ^
                mix(uint32_t(seed >> 32) ^ mix(uint32_t(offset) ^ mix(uint32_t(offset >> 32)))))),
        threshold(uint32_t(std::min(p_ * 4294967296.0, 4294967295.0))) {}
  EMBER_HOST_DEVICE bool on() const { return p > 0; }
  EMBER_HOST_DEVICE static uint32_t mix(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
  }
  /// The key of row i of (batch * heads + head) bh.
  EMBER_HOST_DEVICE uint32_t row(int64_t bh, int64_t i) const {
    return mix(key ^ mix(uint32_t(bh) ^ mix(uint32_t(i) + 0x9e3779b9u)));
  }
  /// Whether column j of the row with key `rk` is kept (probability 1 - p).
  EMBER_HOST_DEVICE static bool keep(uint32_t rk, int64_t j, uint32_t threshold) {
    return mix(rk ^ (uint32_t(j) * 0x85ebca6bu + 0x27d4eb2fu)) >= threshold;
  }
};

/// q [B, Hq, L, E], k [B, Hk, S, E], v [B, Hk, S, Ev] (any strides, Hq a multiple of Hk),
/// mask: undefined or a float tensor of q's dtype expanded to [B, Hq, L, S] (any strides,
/// -inf masks). out [B, Hq, L, Ev] and lse [B, Hq, L] contiguous outputs.
struct SdpaFwdArgs {
  Tensor q, k, v, mask, out, lse;
  bool causal;
  double scale;
  SdpaDropout dropout = {};
};
using SdpaFwdKernel = void (*)(const SdpaFwdArgs&);
extern DispatchStub<SdpaFwdKernel> sdpa_fwd_stub;

/// From the forward's operands, out, lse and dout [B, Hq, L, Ev] (contiguous): dq, dk,
/// dv (contiguous, shapes of q, k, v; fully written).
struct SdpaBwdArgs {
  Tensor q, k, v, mask, out, lse, dout, dq, dk, dv;
  bool causal;
  double scale;
  SdpaDropout dropout = {};
};
using SdpaBwdKernel = void (*)(const SdpaBwdArgs&);
extern DispatchStub<SdpaBwdKernel> sdpa_bwd_stub;

}  // namespace ember
