// Recording of the fused losses (derivatives/nn_loss.cpp).
#pragma once
#include "ember/core/tensor.h"
#include "ember/ops/nn_loss.h"

namespace ember::autograd {

/// What the nll / cross-entropy backward needs besides the incoming gradient.
struct NllSaved {
  Tensor target;  // (M) int64, contiguous
  Tensor wt;      // (M) per-row weights, 0 for ignored rows
  Tensor lse;     // (M) row logsumexp (cross entropy only)
  Tensor total;   // 0-d sum of wt (mean reduction)
  Reduction reduction = Reduction::Mean;
  int64_t ignore_index = -100;
  bool cross_entropy = false;
};
/// NllLossBackward0 (nll) or CrossEntropyLossBackward0 (fused log_softmax + nll). A
/// `weight` that requires grad gets PyTorch's "derivative for 'weight' is not implemented".
void record_nll(const Tensor& input, const Tensor& weight, const Tensor& out, NllSaved s);
/// CtcLossBackward0.
/// `lp` is log_probs as (T, N, C) contiguous; `out` the per-sample nll (N).
void record_ctc(const Tensor& log_probs, const Tensor& lp, const Tensor& out, const Tensor& targets,
                const Tensor& offsets, const Tensor& in_lens, const Tensor& tgt_lens,
                const Tensor& nll, const Tensor& alpha, int64_t blank, bool zero_infinity);

/// input (C) / (N, C) / (N, C, d...) as contiguous-able rows (M, C) (a view where possible).
Tensor nll_rows(const Tensor& input);
/// The inverse of nll_rows: (M, C) back to `in_sizes`.
Tensor nll_unrows(const Tensor& rows, const Shape& in_sizes);

}  // namespace ember::autograd
