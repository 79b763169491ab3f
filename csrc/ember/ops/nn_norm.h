// Normalization front-ends. batch_norm (per-channel statistics) and the row
// normalizations layer_norm / group_norm / instance_norm run fused kernels and
// record one node each with a named backward (derivatives/nn_norm.cpp).
#pragma once
#include <optional>

#include "ember/core/tensor.h"

namespace ember {

using OptTensor = std::optional<Tensor>;

/// x (N, C, ...). training: normalizes with the batch statistics and, when given,
/// updates running_mean/var in place with `momentum` (the module passes
/// 1 / num_batches_tracked for a cumulative average). Eval: the running statistics.
Tensor batch_norm(const Tensor& x, const OptTensor& running_mean, const OptTensor& running_var,
                  const OptTensor& weight, const OptTensor& bias, bool training, double momentum,
                  double eps);
/// Normalizes over the trailing dims `normalized_shape`.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const OptTensor& weight,
                  const OptTensor& bias, double eps);
/// x (N, C, ...) in `groups` groups of channels.
Tensor group_norm(const Tensor& x, int64_t groups, const OptTensor& weight, const OptTensor& bias,
                  double eps);
/// Per-(sample, channel) statistics (use_input_stats) or the running ones.
Tensor instance_norm(const Tensor& x, const OptTensor& running_mean, const OptTensor& running_var,
                     const OptTensor& weight, const OptTensor& bias, bool use_input_stats,
                     double momentum, double eps);

}  // namespace ember
