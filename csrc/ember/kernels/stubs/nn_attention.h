// Kernel stubs of scaled_dot_product_attention's fused (flash-style) path
// (ops/nn_attention.cpp, backends/cpu/nn_attention.cpp).
#pragma once
#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"

namespace ember {

/// q [B, Hq, L, E], k [B, Hk, S, E], v [B, Hk, S, Ev] (any strides, Hq a multiple of Hk),
/// mask: undefined or a float tensor of q's dtype expanded to [B, Hq, L, S] (any strides,
/// -inf masks). out [B, Hq, L, Ev] and lse [B, Hq, L] contiguous outputs.
struct SdpaFwdArgs {
  Tensor q, k, v, mask, out, lse;
  bool causal;
  double scale;
};
using SdpaFwdKernel = void (*)(const SdpaFwdArgs&);
extern DispatchStub<SdpaFwdKernel> sdpa_fwd_stub;

/// From the forward's operands, out, lse and dout [B, Hq, L, Ev] (contiguous): dq, dk,
/// dv (contiguous, shapes of q, k, v; fully written).
struct SdpaBwdArgs {
  Tensor q, k, v, mask, out, lse, dout, dq, dk, dv;
  bool causal;
  double scale;
};
using SdpaBwdKernel = void (*)(const SdpaBwdArgs&);
extern DispatchStub<SdpaBwdKernel> sdpa_bwd_stub;

}  // namespace ember
