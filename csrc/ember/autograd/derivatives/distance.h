// Recording of cdist (derivatives/distance.cpp).
#pragma once
#include "ember/core/tensor.h"

namespace ember::autograd {

/// CdistBackward0: the direct p-norm path (and every empty input). The formula is
/// PyTorch's _cdist_backward per p, written with ember ops (differentiable again).
void record_cdist(const Tensor& x1, const Tensor& x2, const Tensor& out, double p);
/// EuclideanDistBackward0: the matrix-product path (p = 2), PyTorch's
/// _euclidean_dist_backward; a zero distance gets a zero gradient.
void record_euclidean_dist(const Tensor& x1, const Tensor& x2, const Tensor& out);

}  // namespace ember::autograd
