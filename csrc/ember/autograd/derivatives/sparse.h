// Derivatives of the sparse COO ops (ops/sparse*.cpp): the record_* calls the front-ends
// make under a RecordScope, with PyTorch's node names. The formulas are ember ops that
// take strided or sparse gradients (Note [Sparse gradients] in ops/sparse_math.cpp).
#pragma once
#include <cstdint>

#include "ember/core/scalar.h"
#include "ember/core/tensor.h"

namespace ember::autograd {

/// sparse_from_parts: SparseCooTensorWithDimsAndTensorsBackward0 (values <- the gradient
/// at each entry's index).
void record_sparse_from_parts(const Tensor& indices, const Tensor& values, const Tensor& out);
/// values() of a coalesced tensor: ValuesBackward0 (a sparse gradient on its pattern).
void record_sparse_values(const Tensor& t, const Tensor& values);
/// coalesce: CoalesceBackward0 (the gradient as is: the same dense function).
void record_sparse_coalesce(const Tensor& in, const Tensor& out);
/// to_dense: ToDenseBackward0 (masked_grad: the gradient on the input's coalesced pattern).
void record_sparse_to_dense(const Tensor& in, const Tensor& out, bool masked_grad);
/// to_sparse: ToSparseBackward0/1 (the gradient as a strided tensor).
void record_to_sparse(const Tensor& in, const Tensor& out, bool with_sparse_dim);
/// beta * input + alpha * S @ D: SparseAddmmBackward0 when `masked` (S's gradient sparse on
/// S's pattern, via sampled_mm), else MmBackward0 / AddmmBackward0 (S's gradient strided).
void record_sparse_addmm(const Tensor* input, const Tensor& s, const Tensor& d, const Tensor& out,
                         Scalar beta, Scalar alpha, bool masked);
/// sampled_mm(A, B, indices): gradients through sparse x dense products.
void record_sampled_mm(const Tensor& a, const Tensor& b, const Tensor& indices, const Tensor& out);
/// The linear structural ops on a sparse tensor: the adjoint applied to the gradient.
void record_sparse_transpose(const Tensor& in, const Tensor& out, int64_t d0, int64_t d1);
void record_sparse_narrow_copy(const Tensor& in, const Tensor& out, int64_t dim, int64_t start);
void record_sparse_index_select(const Tensor& in, const Tensor& out, int64_t dim,
                                const Tensor& index);
void record_sparse_clone(const Tensor& in, const Tensor& out);
void record_sparse_to(const Tensor& in, const Tensor& out);

}  // namespace ember::autograd
