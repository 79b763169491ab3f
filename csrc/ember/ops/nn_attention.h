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
/// ScaledDotProductFlashAttentionForCpuBackward0 (the mask gets no gradient).
Tensor sdpa_flash(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                  bool is_causal, double scale);

/// The same written with ember ops (softmax(q k^T * scale + mask) v), with dropout
/// when dropout_p > 0; differentiable in every input including a float mask.
Tensor sdpa_math(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                 bool is_causal, double scale, double dropout_p);

/// The mask as an additive float tensor of `dtype` (bool: 0 / -inf).
Tensor sdpa_float_mask(const Tensor& mask, DType dtype);

}  // namespace ember
