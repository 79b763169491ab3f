// Indexing ops: Python-style getitem/setitem, advanced indexing (index /
// index_put_), and the dim-wise gather/scatter family. PyTorch semantics.
#pragma once
#include <optional>
#include <vector>

#include "ember/core/scalar.h"
#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/stubs/index.h"
#include "ember/kernels/tensor_iterator.h"

namespace ember {

// Note [Advanced indexing]
// Every advanced index op is reduced to two primitive kernels that work on
// element offsets:
//   gather:  out[i]             = src[i + idx[i] * stride]
//   scatter: dst[i + idx[i] * stride] (+)= src[i]
// where `src`/`dst` is the indexed tensor *restrided* to the iteration shape
// with stride 0 along the indexed dim(s), so `i` only walks the non-indexed
// dims, and `idx` is an int64 tensor broadcast (stride 0) to that shape.
// Several index tensors (x[i, j]) are first folded into one int64 offset
// tensor (sum of idx_k * stride_k, stride 1 in the kernel). All indices are
// validated (and negative ones wrapped where the op allows them) before any
// kernel writes, so a bad index raises IndexError and never touches memory.

/// One entry of an index tuple as Python writes it: x[1, 2:5, None, ..., mask].
struct TensorIndex {
  enum class Kind { Int, Slice, None, Ellipsis, Bool, Tensor };
  Kind kind = Kind::None;
  int64_t value = 0;  // Int; Bool (0/1)
  std::optional<int64_t> start, stop;  // Slice
  int64_t step = 1;  // Slice
  Tensor tensor;  // Tensor (int64/int32 indices or bool/uint8 mask, any shape)

  static TensorIndex integer(int64_t i) { TensorIndex t; t.kind = Kind::Int; t.value = i; return t; }
  static TensorIndex boolean(bool b) { TensorIndex t; t.kind = Kind::Bool; t.value = b; return t; }
  static TensorIndex none() { return TensorIndex(); }
  static TensorIndex ellipsis() { TensorIndex t; t.kind = Kind::Ellipsis; return t; }
  static TensorIndex slice(std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step) {
    TensorIndex t; t.kind = Kind::Slice; t.start = start; t.stop = stop; t.step = step; return t;
  }
  static TensorIndex of(Tensor x) { TensorIndex t; t.kind = Kind::Tensor; t.tensor = std::move(x); return t; }
};

/// `self[indices]`: basic indexing (ints, slices, None, ...) gives a view;
/// any tensor/bool index makes it advanced indexing, which copies.
Tensor index_get(const Tensor& self, const std::vector<TensorIndex>& indices);
/// `self[indices] = value`: copies `value` (broadcast, converted to self's
/// dtype) into the indexed region. Bumps self's version.
void index_set(const Tensor& self, const std::vector<TensorIndex>& indices, const Tensor& value);

/// at::index: advanced indexing with one optional index tensor per leading dim
/// (int64/int32 indices or bool/uint8 masks; a k-dim mask takes one slot and
/// covers k dims). Index tensors broadcast together.
Tensor index(const Tensor& self, const std::vector<std::optional<Tensor>>& indices);
/// self[indices] = values (or += with accumulate, correct for duplicate
/// indices). `values` must have self's dtype and broadcast to the result shape.
const Tensor& index_put_(const Tensor& self, const std::vector<std::optional<Tensor>>& indices,
                         const Tensor& values, bool accumulate = false);
Tensor index_put(const Tensor& self, const std::vector<std::optional<Tensor>>& indices,
                 const Tensor& values, bool accumulate = false);

/// Entries of `self` along `dim` at the positions in the 1-d (or 0-d) `index`.
Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index);
/// out[i][j] = self[index[i][j]][j] (dim 0), output shaped like `index`.
Tensor gather(const Tensor& self, int64_t dim, const Tensor& index);
/// self[index[i][j]][j] = src[i][j] (dim 0); in place, returns self.
const Tensor& scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
const Tensor& scatter_(const Tensor& self, int64_t dim, const Tensor& index, Scalar value);
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, Scalar value);
/// scatter with reduce='add' | 'multiply' (PyTorch's legacy reductions): self's entries at
/// index combine with src (or value); not differentiable (backward raises).
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
               const std::string& reduce);
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, Scalar value,
               const std::string& reduce);
const Tensor& scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                       const std::string& reduce);
const Tensor& scatter_(const Tensor& self, int64_t dim, const Tensor& index, Scalar value,
                       const std::string& reduce);
/// self[index[i][j]][j] += src[i][j] (dim 0); duplicates accumulate.
const Tensor& scatter_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
/// self.select(dim, index[i]) += alpha * source.select(dim, i).
const Tensor& index_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                         Scalar alpha = Scalar(int64_t(1)));
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                 Scalar alpha = Scalar(int64_t(1)));

/// Writes `value` where the bool `mask` (broadcast to self) is true.
const Tensor& masked_fill_(const Tensor& self, const Tensor& mask, Scalar value);
/// Same with a 0-d tensor value.
const Tensor& masked_fill_(const Tensor& self, const Tensor& mask, const Tensor& value);
/// Out of place: self and mask broadcast together.
Tensor masked_fill(const Tensor& self, const Tensor& mask, Scalar value);
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value);
/// The 1-d tensor of self's elements where mask is true (both broadcast).
Tensor masked_select(const Tensor& self, const Tensor& mask);
/// self viewed as 1-d (row-major), indexed by `index`; output shaped like index.
Tensor take(const Tensor& self, const Tensor& index);

/// [n, ndim] int64 coordinates of the nonzero elements, in row-major order.
Tensor nonzero(const Tensor& self);
/// One 1-d int64 tensor per dim (a 0-d input counts as 1-d): what where(cond) returns.
std::vector<Tensor> nonzero_numpy(const Tensor& self);
/// Same as nonzero.
Tensor argwhere(const Tensor& self);

// The kernel interface (types, stubs): kernels/stubs/index.h.

}  // namespace ember
