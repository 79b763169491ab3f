// Helpers shared by ops/index.cpp and ops/index_scatter.cpp (not public API).
#pragma once
#include "ember/core/tensor.h"

namespace ember::index_detail {

/// A view of t's storage (at t's offset) with the given iteration geometry.
Tensor restride(const Tensor& t, const Shape& sizes, const Shape& strides);
/// Validates lo <= idx < size for every entry of `idx` (int64), without writing.
/// Returns false and the first bad index found.
bool index_in_range(const Tensor& idx, int64_t size, bool allow_negative, int64_t* bad);
/// Treats a 0-d tensor as 1-d (PyTorch's ensure_nonempty_dim) for the dim-wise ops.
Tensor as_1d_if_scalar(const Tensor& t);

}  // namespace ember::index_detail
