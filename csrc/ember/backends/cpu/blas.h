// The one wrapper around the CPU BLAS (PyPI's scipy-openblas32).
//
// Note [BLAS loading]
// ember does not link against the BLAS: python/ember/_blas.py loads
// libscipy_openblas.so with RTLD_GLOBAL before ember._C, and this wrapper looks
// its symbols up with dlsym(RTLD_DEFAULT, ...) once, on first use. When the
// library is not there (a C++-only program, a broken install) every entry
// point reports unavailable and matmul runs the C++ fallback kernel instead.
// The BLAS's own thread count follows ember.set_num_threads (through
// set_blas_threads_hook), and the BLAS is never called from inside a
// parallel_for body, so ember's pool and the BLAS's threads never oversubscribe.
#pragma once
#include <cstdint>
#include <string>

namespace ember::cpu::blas {

/// True when the BLAS library was found (resolves the symbols on first call).
bool available();
/// True when matmul may use the BLAS: available() and not switched off with set_enabled.
bool enabled();
/// Switches the BLAS path off (or back on), e.g. to test the C++ fallback on float32.
void set_enabled(bool on);

/// Largest dimension / leading dimension the BLAS's 32-bit integers can take.
constexpr int64_t kMaxDim = 2147483647;

/// Row-major GEMM: C = alpha * op(A) @ op(B) + beta * C, where op(A) is m x k and
/// op(B) is k x n. `trans_a` means A is stored as its k x m transpose (row-major
/// with leading dimension lda), likewise `trans_b`. With beta == 0, C is not read.
/// Requires available() and all sizes/leading dimensions <= kMaxDim.
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
          const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
          int64_t ldc);

/// Row-major GEMV: y = alpha * op(A) @ x + beta * y, where A is stored rows x cols
/// (row-major, leading dimension lda) and op(A) is A or its transpose. With
/// beta == 0, y is not read.
void gemv(bool trans, int64_t rows, int64_t cols, float alpha, const float* a, int64_t lda,
          const float* x, int64_t incx, float beta, float* y, int64_t incy);
void gemv(bool trans, int64_t rows, int64_t cols, double alpha, const double* a, int64_t lda,
          const double* x, int64_t incx, double beta, double* y, int64_t incy);

/// Applies ember's thread count (set_num_threads) to the library now; the BLAS entry
/// points do it themselves, the LAPACK wrappers (backends/cpu/lapack.h) call this.
void sync_threads();

/// Note [BLAS inside parallel_for]
/// While a SerialScope lives, the BLAS runs single-threaded (its thread count is
/// set to 1 and restored afterwards), and gemm_serial may then be called from
/// parallel_for bodies: kernels that tile work over ember's pool (flash
/// attention's per-(batch, head, block) GEMMs) call the BLAS once per tile from
/// each worker, so the two thread pools never oversubscribe. Construct it outside
/// the parallel region, around the parallel_for.
class SerialScope {
 public:
  SerialScope();
  ~SerialScope();
  SerialScope(const SerialScope&) = delete;
  SerialScope& operator=(const SerialScope&) = delete;
};

/// gemm, callable inside a parallel_for body while a SerialScope is alive.
void gemm_serial(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc);
void gemm_serial(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                 const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
                 int64_t ldc);

/// A one-line description for ember._C._blas_info(): library, core and threads.
struct Info {
  bool available = false;
  bool enabled = false;
  std::string library;   // "scipy-openblas32" or "none (C++ fallback kernel)"
  std::string corename;  // the kernel family OpenBLAS picked, e.g. "SkylakeX"
  int threads = 0;
};
Info info();

}  // namespace ember::cpu::blas
