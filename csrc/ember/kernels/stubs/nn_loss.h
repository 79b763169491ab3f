// Kernel stubs of the loss family: the fused nll / log_softmax + nll (cross entropy)
// over rows, and the CTC dynamic program.
#pragma once
#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"

namespace ember {

/// Rows of x (M, C) contiguous, target (M) int64 contiguous, weight (C) contiguous or
/// undefined. Writes wt[i] = weight[t_i] (1 without weight; 0 where t_i == ignore_index)
/// and loss[i] = -wt[i] * x[i, t_i] (nll), or, when `lse` is defined (cross entropy),
/// lse[i] = logsumexp(x[i]) and loss[i] = wt[i] * (lse[i] - x[i, t_i]). A target outside
/// [0, C) other than ignore_index raises IndexError "Target t is out of bounds.".
using NllKernel = void (*)(const Tensor& loss, const Tensor& wt, const Tensor& lse, const Tensor& x,
                           const Tensor& target, const Tensor& weight, int64_t ignore_index);
extern DispatchStub<NllKernel> nll_stub;

/// Cross entropy backward: gx[i, j] = coef[i] * (exp(x[i, j] - lse[i]) - [j == t_i]);
/// rows with t_i == ignore_index get 0. All contiguous; coef (M).
using CrossEntropyBackwardKernel = void (*)(const Tensor& gx, const Tensor& coef, const Tensor& x,
                                            const Tensor& lse, const Tensor& target,
                                            int64_t ignore_index);
extern DispatchStub<CrossEntropyBackwardKernel> cross_entropy_backward_stub;

/// nll backward: gx (M, C) contiguous is overwritten with gx[i, t_i] = -coef[i] and 0 elsewhere
/// (a row with t_i == ignore_index is all 0). coef (M) and target (M) contiguous. A backend
/// without it runs the composite (a one-hot select).
using NllBackwardKernel = void (*)(const Tensor& gx, const Tensor& coef, const Tensor& target,
                                   int64_t ignore_index);
extern DispatchStub<NllBackwardKernel> nll_backward_stub;

/// CTC: log_probs (T, N, C) contiguous; the labels of sample n are
/// targets[offsets[n] .. offsets[n] + tgt_lens[n]) of the flat int64 `targets`;
/// in_lens, tgt_lens, offsets int64 (N), all checked by the front-end. Writes nll (N)
/// and the log-space alphas (N, T, 2 * max_target_len + 1).
using CtcKernel = void (*)(const Tensor& nll, const Tensor& alpha, const Tensor& log_probs,
                           const Tensor& targets, const Tensor& offsets, const Tensor& in_lens,
                           const Tensor& tgt_lens, int64_t blank);
extern DispatchStub<CtcKernel> ctc_stub;
/// CTC backward: grad (T, N, C) <- d nll[n] / d log_probs[t, n, c] from the betas computed
/// here and the saved alphas; 0 for samples whose nll is infinite when zero_infinity.
using CtcBackwardKernel = void (*)(const Tensor& grad, const Tensor& log_probs,
                                   const Tensor& targets, const Tensor& offsets,
                                   const Tensor& in_lens, const Tensor& tgt_lens, const Tensor& nll,
                                   const Tensor& alpha, int64_t blank, bool zero_infinity);
extern DispatchStub<CtcBackwardKernel> ctc_backward_stub;

}  // namespace ember
