// ember.linalg through LAPACK (the stubs of kernels/stubs/lapack.h: backends/cpu/lapack.h
// on the CPU, cuSOLVER on CUDA): factorizations and
// solvers with PyTorch's semantics, batching over leading dims, and PyTorch's
// derivative formulas (written with ember ops, so they differentiate again).
#pragma once
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ember/core/error.h"
#include "ember/core/tensor.h"

namespace ember {

/// torch.linalg.LinAlgError: a singular or non-positive-definite input. A RuntimeError in Python.
class LinAlgError : public Error {
 public:
  explicit LinAlgError(const std::string& msg) : Error(ErrorKind::Runtime, msg) {}
};

Tensor linalg_solve(const Tensor& A, const Tensor& B, bool left = true);
Tensor linalg_solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left = true,
                               bool unitriangular = false);
Tensor linalg_inv(const Tensor& A);
/// (inverse, info): info > 0 marks singular matrices instead of raising when !check_errors.
std::pair<Tensor, Tensor> linalg_inv_ex(const Tensor& A, bool check_errors);
Tensor linalg_det(const Tensor& A);
/// (sign, log|det|).
std::pair<Tensor, Tensor> linalg_slogdet(const Tensor& A);
Tensor logdet(const Tensor& A);
Tensor linalg_cholesky(const Tensor& A, bool upper = false);
std::pair<Tensor, Tensor> linalg_cholesky_ex(const Tensor& A, bool upper, bool check_errors);
/// (U, S, Vh); full_matrices=false gives the reduced factors.
std::tuple<Tensor, Tensor, Tensor> linalg_svd(const Tensor& A, bool full_matrices);
Tensor linalg_svdvals(const Tensor& A);
/// (eigenvalues ascending, eigenvectors); `uplo` 'L' or 'U' picks the triangle read.
std::pair<Tensor, Tensor> linalg_eigh(const Tensor& A, const std::string& uplo);
Tensor linalg_eigvalsh(const Tensor& A, const std::string& uplo);
/// mode "reduced", "complete" or "r".
std::pair<Tensor, Tensor> linalg_qr(const Tensor& A, const std::string& mode);
/// LAPACK's geqrf (PyTorch's torch.geqrf): (a, tau) with R on and above a's diagonal and
/// the Householder vectors (implicit leading 1) below it. Not differentiable.
std::pair<Tensor, Tensor> geqrf(const Tensor& A);

/// (LU, pivots): LAPACK's packed LU factors and 1-based int32 pivots (PyTorch's lu_factor).
std::pair<Tensor, Tensor> linalg_lu_factor(const Tensor& A);
/// X with A X = B (or A^T X = B with adjoint) from lu_factor's output.
Tensor linalg_lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool adjoint);

// Composites of the above.
Tensor linalg_pinv(const Tensor& A, double rtol, bool hermitian);
Tensor linalg_matrix_rank(const Tensor& A, double rtol, bool hermitian);
/// ord: "fro", "nuc", or a number (2, -2, 1, -1, inf, -inf) given as double.
Tensor linalg_matrix_norm(const Tensor& A, const std::string& ord_str, double ord, bool keepdim);
Tensor linalg_cond(const Tensor& A, const std::string& ord_str, double ord);
/// Least squares: the minimum-norm solution X of A X = B (by the pseudo-inverse).
Tensor linalg_lstsq(const Tensor& A, const Tensor& B);
Tensor linalg_multi_dot(const std::vector<Tensor>& ts);
Tensor linalg_vecdot(const Tensor& x, const Tensor& y, int64_t dim);

}  // namespace ember
