// Kernel slots of the matrix products, tril/triu and trace (front-ends in ops/linalg.cpp).
// Backend-neutral: backends include this, never ops/linalg.h.
#pragma once
#include <algorithm>
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
inline MatrixLayout matrix_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  MatrixLayout l;
  if ((cs == 1 || cols <= 1) && (rows <= 1 || rs >= std::max<int64_t>(1, cols))) {
    l.ok = true;
    l.trans = false;
    l.ld = rows <= 1 ? std::max<int64_t>(1, cols) : rs;
  } else if ((rs == 1 || rows <= 1) && (cols <= 1 || cs >= std::max<int64_t>(1, rows))) {
    l.ok = true;
    l.trans = true;
    l.ld = cols <= 1 ? std::max<int64_t>(1, rows) : cs;
  }
  return l;
}

/// c[batch..] = beta * c + alpha * (a[batch..] @ b[batch..]) for every batch index.
/// a: [batch..., m, k], b: [batch..., k, n], c: [batch..., m, n], all one dtype (not bool),
/// with equal batch sizes (a and b may broadcast by stride 0), BLAS-friendly last two dims,
/// k > 0, and c neither overlapping itself nor a or b. With beta == 0, c is not read.
using GemmKernel = void (*)(const Tensor& c, const Tensor& a, const Tensor& b, Scalar beta,
                            Scalar alpha);
extern DispatchStub<GemmKernel> gemm_stub;
/// c (m x n, row-major) = alpha * a @ b + bias, the bias (n, contiguous) added to every
/// row in the GEMM's epilogue (cuBLASLt on CUDA: no separate broadcast copy). Returns false
/// when it cannot (no slot filled, an unsupported dtype or layout): the caller then copies
/// the bias into c and runs gemm_stub with beta = 1. Only CUDA fills it.
using GemmBiasKernel = bool (*)(const Tensor& c, const Tensor& a, const Tensor& b,
                                const Tensor& bias, Scalar alpha);
extern DispatchStub<GemmBiasKernel> gemm_bias_stub;

/// Largest m, n and k that small_gemm_stub takes (Note [Small GEMM]).
constexpr int64_t kSmallGemmMax = 64;
/// c = alpha * op(a) @ op(b) + beta * c for one float32 or float64 (`dt`) matrix with
/// m, n, k in [1, kSmallGemmMax]: op(a) is a (m x k, row stride lda) or, with ta, the
/// transpose of the k x m a; likewise b (k x n, ldb) and tb; c is m x n, row stride ldc.
/// With beta == 0, c is not read. The BLAS path of gemm_stub calls it instead of the BLAS.
using SmallGemmKernel = void (*)(DType dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                                 double alpha, const void* a, int64_t lda, const void* b,
                                 int64_t ldb, double beta, void* c, int64_t ldc);
extern DispatchStub<SmallGemmKernel> small_gemm_stub;

/// c (m x n, row stride ldc) = alpha * a @ b^T + beta * c for one float32 or float64 (`dt`)
/// matrix, where a is m x k and b is n x k, both row-major with unit column stride (row
/// strides lda, ldb): every element of c is the dot product of two contiguous rows, which
/// is Linear's forward layout (x @ weight^T). With beta == 0, c is not read. The BLAS path
/// of gemm_stub calls it where skinny_gemm_pays (Note [Skinny GEMM] in small_gemm.cpp).
using SkinnyGemmKernel = void (*)(DType dt, int64_t m, int64_t n, int64_t k, double alpha,
                                  const void* a, int64_t lda, const void* b, int64_t ldb,
                                  double beta, void* c, int64_t ldc);
extern DispatchStub<SkinnyGemmKernel> skinny_gemm_stub;
/// Where skinny_gemm_stub beats the BLAS's packed kernels (measured against OpenBLAS at one
/// thread; Note [Skinny GEMM]): a few rows against a long k.
inline bool skinny_gemm_pays(int64_t m, int64_t k) {
  return m >= 2 && ((m <= 4 && k >= 128) || (m <= 8 && k >= 256));
}

/// out <- tril(in, diagonal) (upper = false) or triu(in, diagonal); equal shapes, >= 2-D;
/// out may be in itself (in-place).
using TrilTriuKernel = void (*)(const Tensor& out, const Tensor& in, bool upper, int64_t diagonal);
extern DispatchStub<TrilTriuKernel> tril_triu_stub;

/// out (0-d) <- sum of the 1-D `diag`, accumulated in double (floating) or int64.
using TraceKernel = void (*)(const Tensor& out, const Tensor& diag);
extern DispatchStub<TraceKernel> trace_stub;

}  // namespace ember
