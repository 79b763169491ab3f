// nn front-ends that fit no other family: linear / bilinear (through the BLAS),
// dropout (ember's Philox generator), embedding, one_hot and the distance helpers.
#pragma once
#include <optional>
#include <string>

#include "ember/core/tensor.h"
#include "ember/ops/random.h"

namespace ember {

/// x @ weight.T + bias for x (..., in), weight (out, in): one addmm over the flattened
/// leading dims.
Tensor linear(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias);
/// y[..., o] = x1[..., i] W[o, i, j] x2[..., j] + b[o].
Tensor bilinear(const Tensor& x1, const Tensor& x2, const Tensor& weight,
                const std::optional<Tensor>& bias);

/// Zeroes elements with probability p and scales the rest by 1 / (1 - p). `feature`
/// drops whole channels (noise shaped (N, C, 1, ...)); `alpha` keeps SELU's mean and
/// variance (alpha_dropout). Returns x itself when not training or p == 0.
Tensor dropout(const Tensor& x, double p, bool train, bool feature = false, bool alpha = false,
               const Generator& gen = nullptr);

/// weight[indices] with PyTorch's embedding gradient (padding_idx rows get none;
/// scale_grad_by_freq divides by the index counts in the batch). `sparse`: the weight's
/// gradient is a sparse COO tensor with one entry (a row) per looked-up index.
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx = -1,
                 bool scale_grad_by_freq = false, bool sparse = false);
/// Rescales (in place, no autograd) the rows of weight used by `indices` whose
/// norm_type-norm exceeds max_norm.
const Tensor& embedding_renorm_(const Tensor& weight, const Tensor& indices, double max_norm,
                                double norm_type);
/// int64 one-hot encoding with num_classes (-1: max + 1) as the new last dim.
Tensor one_hot(const Tensor& t, int64_t num_classes = -1);
/// p-norm distances between the rows of x (N, M): the upper triangle, (N*(N-1)/2).
Tensor pdist(const Tensor& x, double p = 2);
/// p-norm distances between the rows of x1 (..., P, M) and x2 (..., R, M).
/// compute_mode: "use_mm_for_euclid_dist_if_necessary" (matrix products for p = 2 when
/// P or R > 25), "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist".
Tensor cdist(const Tensor& x1, const Tensor& x2, double p = 2,
             const std::string& compute_mode = "use_mm_for_euclid_dist_if_necessary");

}  // namespace ember
