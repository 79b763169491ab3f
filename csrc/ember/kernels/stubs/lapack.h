// Kernel slots of the LAPACK primitives behind ember.linalg (front-ends in
// ops/linalg_lapack.cpp and ops/linalg_decompositions.cpp; CPU kernels in
// backends/cpu/lapack_kernels.cpp, CUDA kernels in backends/cuda/linalg.cu).
// Backend-neutral: backends include this, never ops/linalg_lapack.h.
#pragma once
#include <cstdint>

#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"

namespace ember {

// Note [Batched LAPACK stubs]
// Every kernel takes the whole batch. A batch of `batch` column-major matrices is one
// contiguous float32 or float64 tensor (what lapack_detail::colmajor returns: shape
// (..., cols, rows)) in which matrix i starts at element i * stride, with leading
// dimension `rows` (stride = rows * cols unless a kernel says otherwise). Pivots are
// LAPACK's 1-based int32, `info` one int32 per matrix (LAPACK's: 0 on success, > 0 for a
// singular / not positive-definite / unconverged matrix), every tensor contiguous and on
// the same device. Kernels never raise for info > 0: they write it into `info`, and the
// front-end reads `info` once (one host copy on CUDA) to raise its LinAlgError. Callers
// skip empty problems (a dimension of 0 or batch 0), so kernels see sizes >= 1.

/// LU with partial pivoting of each n x n matrix (getrf): LU in place, ipiv (batch, n).
using GetrfKernel = void (*)(const Tensor& a, const Tensor& ipiv, const Tensor& info, int64_t batch,
                             int64_t n);
extern DispatchStub<GetrfKernel> getrf_stub;
/// b <- op(A)^{-1} b from getrf's factors (getrs): lu (batch, n, n), ipiv (batch, n),
/// b n x nrhs column-major; trans: solve with A^T.
using GetrsKernel = void (*)(const Tensor& lu, const Tensor& ipiv, const Tensor& b, int64_t batch,
                             int64_t n, int64_t nrhs, bool trans);
extern DispatchStub<GetrsKernel> getrs_stub;
/// b <- A^{-1} b for triangular A (trtrs, no transpose): the `upper` or lower triangle of
/// each n x n matrix of a, with a unit diagonal when `unit`; b n x nrhs column-major.
using TrtrsKernel = void (*)(const Tensor& a, const Tensor& b, int64_t batch, int64_t n,
                             int64_t nrhs, bool upper, bool unit);
extern DispatchStub<TrtrsKernel> trtrs_stub;
/// Cholesky factor L (lower, potrf 'L') of each n x n matrix in place; the strict upper
/// triangle is left as it was.
using PotrfKernel = void (*)(const Tensor& a, const Tensor& info, int64_t batch, int64_t n);
extern DispatchStub<PotrfKernel> potrf_stub;
/// SVD of each m x n matrix (a is destroyed): s (batch, min(m, n)) descending; with jobz
/// 'S' (reduced) or 'A' (full) u holds U (m x ucols, ld m) and vt holds V^T (vrows x n,
/// ld vrows), ucols = vrows = min(m, n) for 'S', m and n for 'A'; 'N': values only, u
/// and vt undefined.
using GesddKernel = void (*)(const Tensor& a, const Tensor& s, const Tensor& u, const Tensor& vt,
                             const Tensor& info, int64_t batch, int64_t m, int64_t n, char jobz);
extern DispatchStub<GesddKernel> gesdd_stub;
/// Eigenvalues w (batch, n), ascending, of each symmetric n x n matrix read from its
/// `uplo` ('L' or 'U') triangle; with `vectors` the orthonormal eigenvectors overwrite a
/// (column j for w[j]), else a is destroyed.
using SyevdKernel = void (*)(const Tensor& a, const Tensor& w, const Tensor& info, int64_t batch,
                             int64_t n, bool vectors, char uplo);
extern DispatchStub<SyevdKernel> syevd_stub;
/// Householder QR (geqrf) of the m x n matrix at a + i * a_stride (ld m; a_stride >= m * n):
/// R above the diagonal, the reflectors below; tau (k = min(m, n) of them) at tau + i *
/// tau_stride.
using GeqrfKernel = void (*)(const Tensor& a, const Tensor& tau, int64_t batch, int64_t m,
                             int64_t n, int64_t a_stride, int64_t tau_stride);
extern DispatchStub<GeqrfKernel> geqrf_stub;
/// The first n columns of Q from geqrf's k reflectors (orgqr), in place over the m x n
/// matrix at a + i * a_stride (ld m; m >= n >= k).
using OrgqrKernel = void (*)(const Tensor& a, const Tensor& tau, int64_t batch, int64_t m,
                             int64_t n, int64_t k, int64_t a_stride, int64_t tau_stride);
extern DispatchStub<OrgqrKernel> orgqr_stub;
/// The determinant from getrf's output (not a LAPACK routine: the reduction over the
/// diagonal that follows it): sign, log|det| and det (each (batch,), a's dtype) of each
/// n x n matrix; info > 0 gives sign 0, log|det| -inf, det 0. Accumulates in double.
using LuDetKernel = void (*)(const Tensor& lu, const Tensor& ipiv, const Tensor& info,
                             const Tensor& sign, const Tensor& logabs, const Tensor& det,
                             int64_t batch, int64_t n);
extern DispatchStub<LuDetKernel> lu_det_stub;

}  // namespace ember
