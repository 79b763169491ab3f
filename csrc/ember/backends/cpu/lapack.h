// The CPU LAPACK, resolved at run time from the same scipy-openblas32 library as
// the BLAS (Note [BLAS loading] in blas.h): its Fortran symbols carry the
// `scipy_` prefix (scipy_dgetrf_ ...). Matrices are column-major, as LAPACK's.
// Each wrapper returns LAPACK's `info` (0 on success) and sizes its own workspace.
#pragma once
#include <cstdint>

namespace ember::cpu::lapack {

/// True when the LAPACK symbols were found.
bool available();

template <typename T>
int getrf(int m, int n, T* a, int lda, int* ipiv);
template <typename T>
int getrs(char trans, int n, int nrhs, const T* a, int lda, const int* ipiv, T* b, int ldb);
template <typename T>
int potrf(char uplo, int n, T* a, int lda);
/// jobz 'S' (reduced) or 'A' (full) or 'N' (values only); `a` is destroyed.
template <typename T>
int gesdd(char jobz, int m, int n, T* a, int lda, T* s, T* u, int ldu, T* vt, int ldvt);
/// jobz 'V' (vectors into `a`) or 'N'.
template <typename T>
int syevd(char jobz, char uplo, int n, T* a, int lda, T* w);
template <typename T>
int geqrf(int m, int n, T* a, int lda, T* tau);
template <typename T>
int orgqr(int m, int n, int k, T* a, int lda, const T* tau);
template <typename T>
int trtrs(char uplo, char trans, char diag, int n, int nrhs, const T* a, int lda, T* b, int ldb);

}  // namespace ember::cpu::lapack
