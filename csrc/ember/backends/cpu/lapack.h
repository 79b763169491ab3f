// The CPU LAPACK, resolved at run time from the same scipy-openblas32 library as
// the BLAS (Note [BLAS loading] in blas.h): its Fortran symbols carry the
// `scipy_` prefix (scipy_dgetrf_ ...). Matrices are column-major, as LAPACK's.
// Each wrapper returns LAPACK's `info` (0 on success) and sizes its own workspace.
#pragma once
#include <cstdint>

namespace ember::cpu::lapack {

/// True when the LAPACK symbols were found.
bool available();
/// Applies ember's thread count (ember.set_num_threads) to the library: the LAPACK
/// routines thread through the same OpenBLAS as the BLAS. Every wrapper calls it.
void sync_threads();

template <typename T>
int getrf(int m, int n, T* a, int lda, int* ipiv);
template <typename T>
int getrs(char trans, int n, int nrhs, const T* a, int lda, const int* ipiv, T* b, int ldb);
template <typename T>
int potrf(char uplo, int n, T* a, int lda);
/// jobz 'S' (reduced) or 'A' (full) or 'N' (values only); `a` is destroyed.
template <typename T>
int gesdd(char jobz, int m, int n, T* a, int lda, T* s, T* u, int ldu, T* vt, int ldvt);
/// gesdd's workspace for one m x n matrix, in T's (LAPACK's own query). A batch of equal
/// matrices queries once and reuses one workspace with the overload below.
template <typename T>
int gesdd_lwork(char jobz, int m, int n);
/// gesdd into the caller's workspace: `work` of gesdd_lwork(jobz, m, n) T's (passed as
/// lwork) and `iwork` of gesdd_liwork(m, n) ints.
template <typename T>
int gesdd(char jobz, int m, int n, T* a, int lda, T* s, T* u, int ldu, T* vt, int ldvt, T* work,
          int lwork, int* iwork);
inline int gesdd_liwork(int m, int n) { return 8 * (m < n ? (m > 0 ? m : 1) : (n > 0 ? n : 1)); }
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
