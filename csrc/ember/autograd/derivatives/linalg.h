// Recording of the linear algebra ops' autograd nodes (ops/linalg.h); the
// formulas live in linalg.cpp. See Note [Recording] and Note [Matmul gradients].
#pragma once
#include <cstdint>

#include "ember/core/scalar.h"
#include "ember/core/tensor.h"

namespace ember::autograd {

// Note [Matmul gradients]
// Every product records one node named as in PyTorch (MmBackward0, BmmBackward0,
// MvBackward0, DotBackward0, AddmmBackward0, ...), whose formula is again a
// product of the same family: for C = alpha * A @ B, dA = alpha * dC @ B^T and
// dB = alpha * A^T @ dC (mv: dA = outer(dC, v), dv = A^T @ dC). matmul is a
// composite under autograd (ops/linalg.cpp): like PyTorch it records these
// primitives plus views (reshape, expand, unsqueeze), so broadcast batch dims
// are summed back by ExpandBackward0 and an N-D @ 2-D product stays one GEMM
// in both directions. The input of the add forms gets beta * grad summed back
// to its (broadcast) shape. Only floating results record (integer tensors can
// never require grad).

/// MmBackward0 for out = mm(a, b).
void record_mm(const Tensor& a, const Tensor& b, const Tensor& out);
/// BmmBackward0 for out = bmm(a, b).
void record_bmm(const Tensor& a, const Tensor& b, const Tensor& out);
/// MvBackward0 for out = mv(mat, vec).
void record_mv(const Tensor& mat, const Tensor& vec, const Tensor& out);
/// DotBackward0 (or VdotBackward0 when `vdot`) for out = dot(a, b).
void record_dot(const Tensor& a, const Tensor& b, const Tensor& out, bool vdot);
/// AddmmBackward0 for out = beta * input + alpha * mat1 @ mat2.
void record_addmm(const Tensor& input, const Tensor& mat1, const Tensor& mat2, Scalar beta,
                  Scalar alpha, const Tensor& out);
/// BaddbmmBackward0 for out = beta * input + alpha * bmm(batch1, batch2).
void record_baddbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2, Scalar beta,
                    Scalar alpha, const Tensor& out);
/// AddmvBackward0 for out = beta * input + alpha * mat @ vec.
void record_addmv(const Tensor& input, const Tensor& mat, const Tensor& vec, Scalar beta,
                  Scalar alpha, const Tensor& out);
/// TrilBackward0 / TriuBackward0: the gradient masked by the same triangle.
void record_tril_triu(const Tensor& input, bool upper, int64_t diagonal, const Tensor& out);
/// TraceBackward0: the 0-d gradient on the main diagonal of a zero matrix.
void record_trace(const Tensor& input, const Tensor& out);

// ---- named backward formulas (ember ops only, so they differentiate again) ----

/// d(alpha * a @ b)/da = alpha * grad @ b^T.
Tensor mm_mat1_backward(const Tensor& grad, const Tensor& b, Scalar alpha);
/// d(alpha * a @ b)/db = alpha * a^T @ grad.
Tensor mm_mat2_backward(const Tensor& grad, const Tensor& a, Scalar alpha);
/// d(alpha * bmm(a, b))/da = alpha * bmm(grad, b^T).
Tensor bmm_batch1_backward(const Tensor& grad, const Tensor& b, Scalar alpha);
/// d(alpha * bmm(a, b))/db = alpha * bmm(a^T, grad).
Tensor bmm_batch2_backward(const Tensor& grad, const Tensor& a, Scalar alpha);
/// TraceBackward0: grad (0-d) on the diagonal of an `rows` x `cols` zero matrix.
Tensor trace_backward(const Tensor& grad, int64_t rows, int64_t cols);

}  // namespace ember::autograd
