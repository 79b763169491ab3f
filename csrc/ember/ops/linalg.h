// Linear algebra front-ends: matmul and its special cases (dot, mv, mm, bmm),
// the fused add forms (addmm, baddbmm, addmv), outer, tril/triu and trace.
// Each validates its arguments with PyTorch's messages, allocates the result
// and calls the kernels below through their registry stubs.
#pragma once
#include <optional>

#include "ember/core/scalar.h"
#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"

namespace ember {

// ---- kernels (filled in by backends/cpu/linalg_kernels.cpp) ---------------------------

// Note [Matrix layout]
// The GEMM kernel takes any matrix whose last two dims are "BLAS-friendly":
// row-major (unit column stride, row stride >= cols) or column-major (unit row
// stride, column stride >= rows); a dim of size 1 may have any stride. Such a
// matrix goes to the BLAS as-is, with a transpose flag and leading dimension,
// so A.t() @ B and row slices of a wider matrix are never copied. The front-end
// copies an operand to contiguous only when it is neither (e.g. stepped slices
// in both dims, or expanded inner dims). Batch dims may have any strides,
// including 0 for broadcast operands, which are never materialized.
struct MatrixLayout {
  bool ok = false;     // BLAS-friendly at all
  bool trans = false;  // stored column-major: pass as the transpose of a row-major matrix
  int64_t ld = 1;      // leading dimension in elements
};
/// The BLAS view of a rows x cols matrix with strides (rs, cs); see Note [Matrix layout].
MatrixLayout matrix_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs);

/// c[batch..] = beta * c + alpha * (a[batch..] @ b[batch..]) for every batch index.
/// a: [batch..., m, k], b: [batch..., k, n], c: [batch..., m, n], all one dtype (not bool),
/// with equal batch sizes (a and b may broadcast by stride 0), BLAS-friendly last two dims,
/// k > 0, and c neither overlapping itself nor a or b. With beta == 0, c is not read.
using GemmKernel = void (*)(const Tensor& c, const Tensor& a, const Tensor& b, Scalar beta,
                            Scalar alpha);
extern DispatchStub<GemmKernel> gemm_stub;

/// out <- tril(in, diagonal) (upper = false) or triu(in, diagonal); equal shapes, >= 2-D;
/// out may be in itself (in-place).
using TrilTriuKernel = void (*)(const Tensor& out, const Tensor& in, bool upper, int64_t diagonal);
extern DispatchStub<TrilTriuKernel> tril_triu_stub;

/// out (0-d) <- sum of the 1-D `diag`, accumulated in double (floating) or int64.
using TraceKernel = void (*)(const Tensor& out, const Tensor& diag);
extern DispatchStub<TraceKernel> trace_stub;

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
