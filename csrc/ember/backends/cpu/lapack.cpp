// LAPACK through dlsym (see backends/cpu/lapack.h).
#include "ember/backends/cpu/lapack.h"

#include <dlfcn.h>

#include <cstddef>
#include <vector>

#include "ember/backends/cpu/blas.h"
#include "ember/core/error.h"

namespace ember::cpu::lapack {
namespace {

// Fortran calling convention: every argument by pointer, and one hidden length
// (size_t) per character argument, appended at the end.
using L = size_t;
template <typename T>
struct Fns {
  void (*getrf)(const int*, const int*, T*, const int*, int*, int*) = nullptr;
  void (*getrs)(const char*, const int*, const int*, const T*, const int*, const int*, T*,
                const int*, int*, L) = nullptr;
  void (*potrf)(const char*, const int*, T*, const int*, int*, L) = nullptr;
  void (*gesdd)(const char*, const int*, const int*, T*, const int*, T*, T*, const int*, T*,
                const int*, T*, const int*, int*, int*, L) = nullptr;
  void (*syevd)(const char*, const char*, const int*, T*, const int*, T*, T*, const int*, int*,
                const int*, int*, L, L) = nullptr;
  void (*geqrf)(const int*, const int*, T*, const int*, T*, T*, const int*, int*) = nullptr;
  void (*orgqr)(const int*, const int*, const int*, T*, const int*, const T*, T*, const int*,
                int*) = nullptr;
  void (*trtrs)(const char*, const char*, const char*, const int*, const int*, const T*, const int*,
                T*, const int*, int*, L, L, L) = nullptr;
};

template <typename F>
void look(F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

template <typename T>
const Fns<T>& fns() {
  static const Fns<T> f = [] {
    Fns<T> r;
    constexpr bool d = sizeof(T) == 8;
    look(r.getrf, d ? "scipy_dgetrf_" : "scipy_sgetrf_");
    look(r.getrs, d ? "scipy_dgetrs_" : "scipy_sgetrs_");
    look(r.potrf, d ? "scipy_dpotrf_" : "scipy_spotrf_");
    look(r.gesdd, d ? "scipy_dgesdd_" : "scipy_sgesdd_");
    look(r.syevd, d ? "scipy_dsyevd_" : "scipy_ssyevd_");
    look(r.geqrf, d ? "scipy_dgeqrf_" : "scipy_sgeqrf_");
    look(r.orgqr, d ? "scipy_dorgqr_" : "scipy_sorgqr_");
    look(r.trtrs, d ? "scipy_dtrtrs_" : "scipy_strtrs_");
    return r;
  }();
  return f;
}

template <typename F>
F need(F f, const char* what) {
  EMBER_CHECK(f, "ember.linalg: LAPACK routine ", what,
              " was not found; ember needs the scipy-openblas32 "
              "package (pip install scipy-openblas32) for its linear-algebra functions");
  return f;
}

}  // namespace

bool available() { return fns<double>().getrf && fns<float>().getrf; }

void sync_threads() { blas::sync_threads(); }

template <typename T>
int getrf(int m, int n, T* a, int lda, int* ipiv) {
  sync_threads();
  int info = 0;
  need(fns<T>().getrf, "getrf")(&m, &n, a, &lda, ipiv, &info);
  return info;
}
template <typename T>
int getrs(char trans, int n, int nrhs, const T* a, int lda, const int* ipiv, T* b, int ldb) {
  int info = 0;
  need(fns<T>().getrs, "getrs")(&trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, &info, 1);
  return info;
}
template <typename T>
int potrf(char uplo, int n, T* a, int lda) {
  sync_threads();
  int info = 0;
  need(fns<T>().potrf, "potrf")(&uplo, &n, a, &lda, &info, 1);
  return info;
}
template <typename T>
int gesdd_lwork(char jobz, int m, int n) {
  auto f = need(fns<T>().gesdd, "gesdd");
  int info = 0, lwork = -1;
  std::vector<int> iwork(static_cast<size_t>(gesdd_liwork(m, n)));
  T q = 0, dummy = 0;
  // Leading dimensions as the real call passes them (the query checks them too).
  const int mn = m < n ? m : n;
  const int lda = m > 1 ? m : 1;
  const int ldvt = jobz == 'A' ? (n > 1 ? n : 1) : jobz == 'S' ? (mn > 1 ? mn : 1) : 1;
  f(&jobz, &m, &n, &dummy, &lda, &dummy, &dummy, &lda, &dummy, &ldvt, &q, &lwork, iwork.data(),
    &info, 1);
  EMBER_CHECK(info == 0, "gesdd workspace query failed (info ", info, ")");
  return int(q) + 1;
}
template <typename T>
int gesdd(char jobz, int m, int n, T* a, int lda, T* s, T* u, int ldu, T* vt, int ldvt, T* work,
          int lwork, int* iwork) {
  sync_threads();
  int info = 0;
  need(fns<T>().gesdd, "gesdd")(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork,
                                &info, 1);
  return info;
}
template <typename T>
int gesdd(char jobz, int m, int n, T* a, int lda, T* s, T* u, int ldu, T* vt, int ldvt) {
  const int lwork = gesdd_lwork<T>(jobz, m, n);
  std::vector<T> work(static_cast<size_t>(lwork));
  std::vector<int> iwork(static_cast<size_t>(gesdd_liwork(m, n)));
  return gesdd<T>(jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work.data(), lwork, iwork.data());
}
template <typename T>
int syevd(char jobz, char uplo, int n, T* a, int lda, T* w) {
  sync_threads();
  auto f = need(fns<T>().syevd, "syevd");
  int info = 0, lwork = -1, liwork = -1, iq = 0;
  T q = 0;
  f(&jobz, &uplo, &n, a, &lda, w, &q, &lwork, &iq, &liwork, &info, 1, 1);
  if (info != 0) return info;
  lwork = int(q) + 1;
  liwork = iq > 1 ? iq : 1;
  std::vector<T> work(static_cast<size_t>(lwork));
  std::vector<int> iwork(static_cast<size_t>(liwork));
  f(&jobz, &uplo, &n, a, &lda, w, work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1);
  return info;
}
template <typename T>
int geqrf(int m, int n, T* a, int lda, T* tau) {
  sync_threads();
  auto f = need(fns<T>().geqrf, "geqrf");
  int info = 0, lwork = -1;
  T q = 0;
  f(&m, &n, a, &lda, tau, &q, &lwork, &info);
  if (info != 0) return info;
  lwork = int(q) > 1 ? int(q) : 1;
  std::vector<T> work(static_cast<size_t>(lwork));
  f(&m, &n, a, &lda, tau, work.data(), &lwork, &info);
  return info;
}
template <typename T>
int orgqr(int m, int n, int k, T* a, int lda, const T* tau) {
  sync_threads();
  auto f = need(fns<T>().orgqr, "orgqr");
  int info = 0, lwork = -1;
  T q = 0;
  f(&m, &n, &k, a, &lda, tau, &q, &lwork, &info);
  if (info != 0) return info;
  lwork = int(q) > 1 ? int(q) : 1;
  std::vector<T> work(static_cast<size_t>(lwork));
  f(&m, &n, &k, a, &lda, tau, work.data(), &lwork, &info);
  return info;
}
template <typename T>
int trtrs(char uplo, char trans, char diag, int n, int nrhs, const T* a, int lda, T* b, int ldb) {
  int info = 0;
  need(fns<T>().trtrs, "trtrs")(&uplo, &trans, &diag, &n, &nrhs, a, &lda, b, &ldb, &info, 1, 1, 1);
  return info;
}

#define EMBER_LAPACK_INST(T)                                                           \
  template int getrf<T>(int, int, T*, int, int*);                                      \
  template int getrs<T>(char, int, int, const T*, int, const int*, T*, int);           \
  template int potrf<T>(char, int, T*, int);                                           \
  template int gesdd<T>(char, int, int, T*, int, T*, T*, int, T*, int);                \
  template int gesdd_lwork<T>(char, int, int);                                         \
  template int gesdd<T>(char, int, int, T*, int, T*, T*, int, T*, int, T*, int, int*); \
  template int syevd<T>(char, char, int, T*, int, T*);                                 \
  template int geqrf<T>(int, int, T*, int, T*);                                        \
  template int orgqr<T>(int, int, int, T*, int, const T*);                             \
  template int trtrs<T>(char, char, char, int, int, const T*, int, T*, int);
EMBER_LAPACK_INST(float)
EMBER_LAPACK_INST(double)
#undef EMBER_LAPACK_INST

}  // namespace ember::cpu::lapack
