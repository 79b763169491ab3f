// Joining and rearranging ops: cat/stack and friends, flip, roll, repeat, tile,
// repeat_interleave. Every result is a new contiguous tensor.
#pragma once
#include <optional>
#include <vector>

#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/stubs/join.h"

namespace ember {

// The kernel interface (types, stubs): kernels/stubs/join.h.

/// Concatenates along `dim`; dtypes promote, 1-d empty inputs are skipped (PyTorch legacy).
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
/// Joins equally sized tensors along a new dimension `dim`.
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
/// cat along dim 1 (dim 0 for 1-d inputs) after atleast_1d.
Tensor hstack(const std::vector<Tensor>& tensors);
/// cat along dim 0 after atleast_2d (row_stack is the same op).
Tensor vstack(const std::vector<Tensor>& tensors);
/// cat along dim 2 after atleast_3d.
Tensor dstack(const std::vector<Tensor>& tensors);
/// hstack after turning 0-d and 1-d inputs into columns.
Tensor column_stack(const std::vector<Tensor>& tensors);

/// Views with at least 1, 2 or 3 dims (new leading / trailing size-1 dims as NumPy).
Tensor atleast_1d(const Tensor& a);
Tensor atleast_2d(const Tensor& a);
Tensor atleast_3d(const Tensor& a);

/// Reverses the order of elements along each of `dims` (a copy, like PyTorch).
Tensor flip(const Tensor& a, const Shape& dims);
/// flip(a, {1}) for a >= 2-d tensor.
Tensor fliplr(const Tensor& a);
/// flip(a, {0}) for a >= 1-d tensor.
Tensor flipud(const Tensor& a);
/// Rolls elements by shifts[i] along dims[i]; with no dims, rolls the flattened tensor.
Tensor roll(const Tensor& a, const Shape& shifts, const Shape& dims);
/// Tiles `a` repeats[i] times along each dim (repeats may add leading dims).
Tensor repeat(const Tensor& a, const Shape& repeats);
/// repeat with `reps` padded with leading ones to a.dim().
Tensor tile(const Tensor& a, const Shape& reps);
/// Repeats each element (dim = nullopt: of the flattened tensor) `repeats` times.
Tensor repeat_interleave(const Tensor& a, int64_t repeats, std::optional<int64_t> dim);
/// Repeats slice i along dim `repeats[i]` times (repeats: int32/int64, 0-d or 1-d).
Tensor repeat_interleave(const Tensor& a, const Tensor& repeats, std::optional<int64_t> dim);
/// The index form: [0]*r0 + [1]*r1 + ... for a 1-d integer `repeats`.
Tensor repeat_interleave(const Tensor& repeats);

/// Select slices `index` (validated by the caller) of `a` along `dim`; used by unique(dim=).
Tensor take_along_dim_rows(const Tensor& a, int64_t dim, const std::vector<int64_t>& index);
/// The values of an integer tensor (any device, dtype and strides) as host int64s.
std::vector<int64_t> to_int64_vector(const Tensor& t);
/// A 1-d int64 tensor holding `v`, on `device`.
Tensor int64_tensor(const std::vector<int64_t>& v, Device device);

}  // namespace ember
