// View ops: results share storage with their input; nothing is copied.
#pragma once
#include <optional>
#include <vector>

#include "ember/core/tensor.h"

namespace ember {

/// Resolves a single -1 in `shape` against `numel`; raises "shape '[4, 2]' is invalid for input of size 6".
Shape infer_size(const Shape& shape, int64_t numel);
Tensor view(const Tensor& a, const Shape& shape);
/// A view when the strides allow one, otherwise a contiguous copy.
Tensor reshape(const Tensor& a, const Shape& shape);
/// PyTorch's _unsafe_view: `a`'s data under a new shape, recorded as UnsafeViewBackward0;
/// the result is not a view (no base, its own version counter). For results nothing else
/// sees (reshape's copy, matmul's product).
Tensor unsafe_view(const Tensor& a, const Shape& shape);
Tensor transpose(const Tensor& a, int64_t d0, int64_t d1);
Tensor t(const Tensor& a);
Tensor permute(const Tensor& a, const Shape& dims);
Tensor squeeze(const Tensor& a);
Tensor squeeze(const Tensor& a, const Shape& dims);
Tensor unsqueeze(const Tensor& a, int64_t dim);
Tensor expand(const Tensor& a, const Shape& sizes);  // -1 keeps a size
Tensor narrow(const Tensor& a, int64_t dim, int64_t start, int64_t length);
Tensor select(const Tensor& a, int64_t dim, int64_t index);
/// a[start:end:step] along dim; start/end are clamped as Python slices are.
Tensor slice(const Tensor& a, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
             int64_t step);
Tensor diagonal(const Tensor& a, int64_t offset, int64_t d1, int64_t d2);
std::vector<Tensor> unbind(const Tensor& a, int64_t dim);
std::vector<Tensor> split(const Tensor& a, int64_t split_size, int64_t dim);
std::vector<Tensor> split_with_sizes(const Tensor& a, const Shape& sizes, int64_t dim);
std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim);
Tensor flatten(const Tensor& a, int64_t start, int64_t end);
Tensor unflatten(const Tensor& a, int64_t dim, const Shape& sizes);
Tensor as_strided(const Tensor& a, const Shape& sizes, const Shape& strides,
                  std::optional<int64_t> offset);
Tensor movedim(const Tensor& a, const Shape& src, const Shape& dst);
/// An alias with its own version counter (what `.data` and `detach()` build on).
Tensor alias(const Tensor& a, bool share_version);

}  // namespace ember
