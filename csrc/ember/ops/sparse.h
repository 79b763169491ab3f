// Sparse COO front-ends (Note [Sparse COO tensors] in core/sparse.h): construction and
// the parts (ops/sparse.cpp), conversions and structural ops (ops/sparse_convert.cpp) and
// the math (ops/sparse_math.cpp). Ops that also take strided tensors (add, mul, mm,
// transpose, index_select, ...) test layout() in their own front-ends and call these.
#pragma once
#include <optional>

#include "ember/core/sparse.h"
#include "ember/kernels/elementwise.h"
#include "ember/kernels/stubs/sparse.h"

namespace ember {

// ---- construction and parts (ops/sparse.cpp) ----

/// ember.sparse_coo_tensor(indices, values, size, dtype=, device=, check_invariants=,
/// is_coalesced=): `indices` is converted to int64; without `size` the sparse sizes are
/// max index + 1 and the dense sizes the values'. Checks as PyTorch's (shapes always; index
/// bounds and the is_coalesced claim when check_invariants). Differentiable in `values`.
Tensor sparse_coo_tensor(const Tensor& indices, const Tensor& values,
                         const std::optional<Shape>& size, std::optional<DType> dtype = {},
                         std::optional<Device> device = {},
                         std::optional<bool> check_invariants = {},
                         std::optional<bool> is_coalesced = {});
/// The checks of sparse_coo_tensor with check_invariants=True (index bounds, the claim).
void validate_sparse_coo_args(const Tensor& indices, const Tensor& values, const Shape& size,
                              std::optional<bool> is_coalesced);
/// A sparse tensor of `sizes` from trusted parts: no checks; differentiable in `values`
/// (SparseCooTensorWithDimsAndTensorsBackward0).
Tensor sparse_from_parts(const Tensor& indices, const Tensor& values, const Shape& sizes,
                         bool coalesced);
/// An empty (nnz = 0) sparse tensor of `sizes` with `sparse_dim` sparse dims.
Tensor sparse_zeros(const Shape& sizes, int64_t sparse_dim, DType dtype, Device device);

/// _indices() / _values(): the stored tensors (not differentiable, as PyTorch's).
Tensor sparse_indices_raw(const Tensor& t);
Tensor sparse_values_raw(const Tensor& t);
/// indices() / values(): raise on an uncoalesced tensor; values() is differentiable
/// (ValuesBackward0).
Tensor sparse_indices(const Tensor& t);
Tensor sparse_values(const Tensor& t);
/// The stored values as a differentiable function of the tensor (any coalescedness): the
/// building block of the composite sparse ops, used on coalesced tensors.
Tensor sparse_values_grad(const Tensor& t);
int64_t sparse_nnz(const Tensor& t);
int64_t sparse_dim(const Tensor& t);  // t.dim() for a strided tensor, as PyTorch
int64_t dense_dim(const Tensor& t);   // 0 for a strided tensor
bool is_coalesced(const Tensor& t);   // raises for a strided tensor
const Tensor& set_coalesced_(const Tensor& t, bool coalesced);  // _coalesced_

/// coalesce(): unique sorted indices, duplicates summed (CoalesceBackward0); returns `t`
/// itself when already coalesced.
Tensor coalesce(const Tensor& t);

/// The row-major linear index of each column of `indices` ([S, nnz]) in `sizes`' first S
/// dims, as an int64 [nnz] tensor.
Tensor linear_indices(const Tensor& indices, const Shape& sizes);
/// The entries of `src` (strided or sparse, shaped like the tensor `indices` index) at
/// `indices` ([S, n]): [n, dense sizes...], zero where a sparse `src` has no entry.
/// Differentiable in `src`.
Tensor sparse_gather(const Tensor& src, const Tensor& indices, int64_t sparse_dim);

// ---- conversions and structural ops (ops/sparse_convert.cpp) ----

/// to_dense(dtype=None, masked_grad=True) (ToDenseBackward0).
Tensor sparse_to_dense(const Tensor& t, std::optional<DType> dtype = {}, bool masked_grad = true);
/// Tensor.to_sparse(sparse_dim=None) of a strided tensor (ToSparseBackward0); a sparse
/// tensor with the same sparse_dim is returned as is.
Tensor to_sparse(const Tensor& t, std::optional<int64_t> sparse_dim = {});
/// self.sparse_mask(mask): self's values at mask's indices (SparseMaskBackward0).
Tensor sparse_mask(const Tensor& self, const Tensor& mask);
/// The sparse cases of transpose/t, narrow_copy, index_select, clone, to(dtype/device).
Tensor sparse_transpose(const Tensor& t, int64_t d0, int64_t d1);
Tensor sparse_narrow_copy(const Tensor& t, int64_t dim, int64_t start, int64_t length);
Tensor sparse_index_select(const Tensor& t, int64_t dim, const Tensor& index);
Tensor sparse_clone(const Tensor& t);
Tensor sparse_to(const Tensor& t, DType dtype, Device device, bool copy);
/// zero_() of a sparse tensor: nnz becomes 0.
const Tensor& sparse_zero_(const Tensor& t);
/// copy_ into a sparse tensor (from a sparse one, as PyTorch; else PyTorch's error).
const Tensor& sparse_copy_(const Tensor& dst, const Tensor& src);
/// Replaces a sparse tensor's parts by `src`'s (the in-place ops' write-back).
void sparse_assign_(const Tensor& dst, const Tensor& src);

// ---- math (ops/sparse_math.cpp) ----

/// The elementwise ops with a sparse operand: add/sub (sparse + sparse -> sparse,
/// sparse + strided -> strided), mul (by a number, a same-shape strided tensor, a sparse
/// tensor), div by a number or 0-d tensor, neg. Other ops raise naming op and layout.
Tensor sparse_binary(BinaryOp op, const Tensor& a, const Tensor& b);
Tensor sparse_add(const Tensor& a, const Tensor& b, Scalar alpha);
Tensor sparse_unary(UnaryOp op, const Tensor& a);
/// In-place a op= b where a or b is sparse: sparse a gets new parts, strided a is updated.
const Tensor& sparse_binary_(BinaryOp op, const Tensor& a, const Tensor& b, Scalar alpha);

/// S @ D (S sparse 2-d, D strided 2-d) -> strided. `masked_grad`: S's gradient is
/// sparse on S's pattern (torch.sparse.mm, SparseAddmmBackward0), else strided, as
/// torch.mm's (MmBackward0).
Tensor sparse_dense_mm(const Tensor& s, const Tensor& d, bool masked_grad);
/// beta * input + alpha * (S @ D) (torch.sparse.addmm when masked_grad, else addmm).
Tensor sparse_dense_addmm(const Tensor& input, const Tensor& s, const Tensor& d, Scalar beta,
                          Scalar alpha, bool masked_grad);
/// S1 @ S2, both sparse 2-d -> sparse (coalesced).
/// torch.sparse.addmm: sparse_dense_addmm with the sparse operand's gradient on its pattern.
Tensor sparse_addmm(const Tensor& input, const Tensor& mat1, const Tensor& mat2, Scalar beta,
                    Scalar alpha);
Tensor sparse_sparse_mm(const Tensor& a, const Tensor& b);
/// ember.sparse.mm: sparse @ strided or sparse @ sparse.
Tensor sparse_mm(const Tensor& a, const Tensor& b);
/// The product A @ B^T sampled at `indices` ([2, nnz]): [nnz] (differentiable in A and B).
Tensor sampled_mm(const Tensor& a, const Tensor& b, const Tensor& indices);

/// ember.sparse.sum(input, dim=None, dtype=None): strided when every sparse dim is summed,
/// else sparse (coalesced).
Tensor sparse_sum(const Tensor& t, const std::optional<Shape>& dims, std::optional<DType> dtype);
/// Tensor.sum(dim, keepdim=True) of a sparse tensor: the reduced dims kept with size 1 (a
/// reduced sparse dim keeps index 0), strided when every sparse dim is reduced, as PyTorch.
Tensor sparse_sum_keepdim(const Tensor& t, const std::optional<Shape>& dims,
                          std::optional<DType> dtype);
/// ember.sparse.softmax / log_softmax: over the specified entries along `dim`
/// (unspecified entries count as -inf); same pattern as the coalesced input.
Tensor sparse_softmax(const Tensor& t, int64_t dim, std::optional<DType> dtype, bool log);

/// Raises PyTorch's NotImplementedError for `op` on a sparse argument.
[[noreturn]] void raise_sparse_unsupported(const char* op, const Tensor& t);

}  // namespace ember
