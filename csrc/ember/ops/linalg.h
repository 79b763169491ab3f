// Linear algebra front-ends: matmul and its special cases (dot, mv, mm, bmm),
// the fused add forms (addmm, baddbmm, addmv), outer, tril/triu and trace.
// Each validates its arguments with PyTorch's messages, allocates the result
// and calls the kernels below through their registry stubs.
#pragma once
#include <optional>

#include "ember/core/scalar.h"
#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/stubs/linalg.h"

namespace ember {

// The kernel interface (types, stubs): kernels/stubs/linalg.h.

// ---- matrix products ---------------------------------------------------------------------

/// torch.matmul: dot (1-D @ 1-D), mv (2-D @ 1-D), vector-matrix (1-D @ 2-D), mm (2-D @ 2-D)
/// and batched products with broadcast batch dims (a 1-D operand gets a dim prepended or
/// appended, removed from the result). Both operands must have the same dtype.
Tensor matmul(const Tensor& a, const Tensor& b);
/// matmul into `out` (same dtype, shape equal to the result's).
Tensor& matmul_out(const Tensor& a, const Tensor& b, const Tensor& out);

/// 2-D @ 2-D.
Tensor mm(const Tensor& a, const Tensor& b);
Tensor& mm_out(const Tensor& a, const Tensor& b, const Tensor& out);
/// 3-D @ 3-D with equal batch sizes (no broadcasting).
Tensor bmm(const Tensor& a, const Tensor& b);
Tensor& bmm_out(const Tensor& a, const Tensor& b, const Tensor& out);
/// 2-D @ 1-D.
Tensor mv(const Tensor& mat, const Tensor& vec);
Tensor& mv_out(const Tensor& mat, const Tensor& vec, const Tensor& out);
/// Inner product of two 1-D tensors of equal size and dtype (0-d result).
Tensor dot(const Tensor& a, const Tensor& b);
Tensor& dot_out(const Tensor& a, const Tensor& b, const Tensor& out);
/// vdot: dot with the first argument conjugated (equal to dot for real dtypes).
Tensor vdot(const Tensor& a, const Tensor& b);

/// beta * input + alpha * (mat1 @ mat2); input broadcasts to the product's shape.
/// With beta == 0, input is ignored (NaN in it does not propagate).
Tensor addmm(const Tensor& input, const Tensor& mat1, const Tensor& mat2, Scalar beta = 1,
             Scalar alpha = 1);
Tensor& addmm_out(const Tensor& input, const Tensor& mat1, const Tensor& mat2, Scalar beta,
                  Scalar alpha, const Tensor& out);
/// input <- beta * input + alpha * (mat1 @ mat2).
Tensor& addmm_(const Tensor& input, const Tensor& mat1, const Tensor& mat2, Scalar beta = 1,
               Scalar alpha = 1);
/// beta * input + alpha * bmm(batch1, batch2).
Tensor baddbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2, Scalar beta = 1,
               Scalar alpha = 1);
Tensor& baddbmm_out(const Tensor& input, const Tensor& batch1, const Tensor& batch2, Scalar beta,
                    Scalar alpha, const Tensor& out);
Tensor& baddbmm_(const Tensor& input, const Tensor& batch1, const Tensor& batch2, Scalar beta = 1,
                 Scalar alpha = 1);
/// beta * input + alpha * (mat @ vec).
Tensor addmv(const Tensor& input, const Tensor& mat, const Tensor& vec, Scalar beta = 1,
             Scalar alpha = 1);
Tensor& addmv_out(const Tensor& input, const Tensor& mat, const Tensor& vec, Scalar beta,
                  Scalar alpha, const Tensor& out);
Tensor& addmv_(const Tensor& input, const Tensor& mat, const Tensor& vec, Scalar beta = 1,
               Scalar alpha = 1);

/// Outer product of two 1-D tensors (with type promotion, like a * b).
Tensor outer(const Tensor& a, const Tensor& b);
Tensor& outer_out(const Tensor& a, const Tensor& b, const Tensor& out);

// ---- triangles and trace --------------------------------------------------------------------

/// Lower triangle of the last two dims: keeps elements with col - row <= diagonal.
Tensor tril(const Tensor& a, int64_t diagonal = 0);
Tensor& tril_out(const Tensor& a, int64_t diagonal, const Tensor& out);
const Tensor& tril_(const Tensor& a, int64_t diagonal = 0);
/// Upper triangle of the last two dims: keeps elements with col - row >= diagonal.
Tensor triu(const Tensor& a, int64_t diagonal = 0);
Tensor& triu_out(const Tensor& a, int64_t diagonal, const Tensor& out);
const Tensor& triu_(const Tensor& a, int64_t diagonal = 0);

/// Sum of the main diagonal of a 2-D tensor; integer and bool inputs give int64.
Tensor trace(const Tensor& a);

}  // namespace ember
