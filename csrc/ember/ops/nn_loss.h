// Loss front-ends. nll_loss and cross_entropy (class indices) are fused row kernels;
// cross_entropy with class probabilities or label smoothing, and the regression and
// binary losses, are composites of the elementwise and reduction ops. CTC is a C++
// dynamic program in log space.
#pragma once
#include <optional>

#include "ember/core/tensor.h"

namespace ember {

/// PyTorch's reduction enum: 0 none, 1 mean, 2 sum.
enum class Reduction : int64_t { None = 0, Mean = 1, Sum = 2 };
Tensor apply_reduction(const Tensor& loss, Reduction r);

/// input (C), (N, C) or (N, C, d1, ...) log-probabilities; target int64 () / (N) /
/// (N, d1, ...).
Tensor nll_loss(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight,
                Reduction reduction, int64_t ignore_index = -100);
/// log_softmax + nll fused (class indices), or the probability form when target is
/// floating with input's shape; label_smoothing in [0, 1].
Tensor cross_entropy(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight,
                     Reduction reduction, int64_t ignore_index = -100, double label_smoothing = 0);

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction r);
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction r);
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction r, double beta);
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction r, double delta);
/// -w * (t log x + (1 - t) log(1 - x)), the logs clamped at -100 as PyTorch.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const std::optional<Tensor>& weight, Reduction r);
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const std::optional<Tensor>& weight,
                                        const std::optional<Tensor>& pos_weight, Reduction r);
/// log_probs (T, N, C) or (T, C); targets (N, S) padded or 1-D concatenated.
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank, Reduction r, bool zero_infinity);

}  // namespace ember
