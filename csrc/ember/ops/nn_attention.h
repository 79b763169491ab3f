// scaled_dot_product_attention: a fused flash-style kernel (no L x S matrix is
// kept: the backward recomputes it from the per-row logsumexp) and the
// composite math form. See Note [Flash attention on the CPU] in
// backends/cpu/nn_attention.cpp.
#pragma once
#include "ember/core/tensor.h"
#include "ember/kernels/stubs/nn_attention.h"

namespace ember {

/// q [B, Hq, L, E], k [B, Hk, S, E], v [B, Hk, S, Ev] with Hq % Hk == 0 (grouped-query
/// attention when Hk < Hq); mask: undefined, bool (true = attend) or float (added),
/// broadcastable to [B, Hq, L, S]. Rows that attend to nothing give 0. Records
/// ScaledDotProductFlashAttentionForCpuBackward0 (the mask gets no gradient). Dropout with
/// 0 <= dropout_p < 1 is fused (Note [Fused attention dropout]).
Tensor sdpa_flash(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                  bool is_causal, double scale, double dropout_p = 0.0);

/// The scaled keep mask Z [B, H, L, S] (keep / (1 - p), else 0) that a fused call with this
/// dropout draws; `reserve` takes the generator block a sdpa_flash call would.
Tensor sdpa_dropout_mask(const SdpaDropout& d, int64_t B, int64_t H, int64_t L, int64_t S,
                         DType dtype);
/// The SdpaDropout the next fused call with `p` will use (reserves its generator block).
SdpaDropout sdpa_reserve_dropout(double p);

/// The same written with ember ops (softmax(q k^T * scale + mask) v), with dropout
/// when dropout_p > 0; differentiable in every input including a float mask.
Tensor sdpa_math(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                 bool is_causal, double scale, double dropout_p);

/// The mask as an additive float tensor of `dtype` (bool: 0 / -inf).
Tensor sdpa_float_mask(const Tensor& mask, DType dtype);

}  // namespace ember
