// The CPU BLAS, resolved at run time (see Note [BLAS loading] in blas.h).
#include "ember/backends/cpu/blas.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>

#include "ember/core/error.h"
#include "ember/core/parallel.h"

namespace ember::cpu::blas {
namespace {

// CBLAS enums (cblas.h): CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112.
// The enum parameters are passed as int, which is their ABI.
constexpr int kRowMajor = 101;
constexpr int kNoTrans = 111;
constexpr int kTrans = 112;

using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                         float, float*, int);
using DgemmFn = void (*)(int, int, int, int, int, int, double, const double*, int, const double*,
                         int, double, double*, int);
using SgemvFn = void (*)(int, int, int, int, float, const float*, int, const float*, int, float,
                         float*, int);
using DgemvFn = void (*)(int, int, int, int, double, const double*, int, const double*, int, double,
                         double*, int);
using SetThreadsFn = void (*)(int);
using GetThreadsFn = int (*)();
using CorenameFn = char* (*)();

struct Symbols {
  SgemmFn sgemm = nullptr;
  DgemmFn dgemm = nullptr;
  SgemvFn sgemv = nullptr;
  DgemvFn dgemv = nullptr;
  SetThreadsFn set_threads = nullptr;
  GetThreadsFn get_threads = nullptr;
  CorenameFn corename = nullptr;
  bool ok = false;
};

template <typename Fn>
Fn lookup(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

// Resolved once, thread-safely, on first use.
const Symbols& symbols() {
  static const Symbols s = [] {
    Symbols r;
    r.sgemm = lookup<SgemmFn>("scipy_cblas_sgemm");
    r.dgemm = lookup<DgemmFn>("scipy_cblas_dgemm");
    r.sgemv = lookup<SgemvFn>("scipy_cblas_sgemv");
    r.dgemv = lookup<DgemvFn>("scipy_cblas_dgemv");
    r.set_threads = lookup<SetThreadsFn>("scipy_openblas_set_num_threads");
    r.get_threads = lookup<GetThreadsFn>("scipy_openblas_get_num_threads");
    r.corename = lookup<CorenameFn>("scipy_openblas_get_corename");
    r.ok = r.sgemm && r.dgemm && r.sgemv && r.dgemv;
    return r;
  }();
  return s;
}

// The thread count the BLAS was last told; applied lazily so that the hook can
// be installed at static-init time, before the library is necessarily loaded.
std::atomic<int> g_wanted_threads{0};
std::atomic<int> g_applied_threads{0};
std::mutex g_threads_mu;
int g_serial_depth = 0;   // live SerialScopes (guarded by g_threads_mu)
int g_saved_threads = 0;  // the BLAS's thread count before the outermost SerialScope
int g_saved_applied = 0;
std::atomic<bool> g_serial{false};

void apply_threads() {
  int want = g_wanted_threads.load(std::memory_order_relaxed);
  if (want <= 0 || g_serial.load(std::memory_order_acquire) ||
      g_applied_threads.load(std::memory_order_acquire) == want)
    return;
  std::lock_guard<std::mutex> g(g_threads_mu);
  want = g_wanted_threads.load();
  if (g_applied_threads.load() == want || g_serial_depth > 0) return;
  const Symbols& s = symbols();
  if (s.set_threads) s.set_threads(want);
  g_applied_threads.store(want, std::memory_order_release);
}

void threads_hook(int n) { g_wanted_threads.store(n); }

struct HookRegistrar {
  HookRegistrar() { set_blas_threads_hook(&threads_hook); }
} g_hook_registrar;

int as_int(int64_t v) { return int(v); }

std::atomic<bool> g_enabled{true};  // see set_enabled

// Every BLAS call goes through here: never inside a parallel_for body (the
// BLAS has its own threads; see Note [BLAS loading]).
const Symbols& ready() {
  const Symbols& s = symbols();
  EMBER_CHECK(s.ok, "BLAS is not available (scipy-openblas32 was not loaded)");
  EMBER_CHECK(!in_parallel_region(), "internal error: BLAS called inside a parallel region");
  apply_threads();
  return s;
}

const Symbols& ready_serial() {
  const Symbols& s = symbols();
  EMBER_CHECK(s.ok, "BLAS is not available (scipy-openblas32 was not loaded)");
  EMBER_CHECK(g_serial.load(std::memory_order_acquire),
              "internal error: gemm_serial called without a blas::SerialScope");
  return s;
}

}  // namespace

SerialScope::SerialScope() {
  const Symbols& s = symbols();
  std::lock_guard<std::mutex> g(g_threads_mu);
  if (g_serial_depth++ == 0) {
    g_saved_threads = s.get_threads ? s.get_threads() : 0;
    g_saved_applied = g_applied_threads.load();
    if (s.set_threads) s.set_threads(1);
    g_applied_threads.store(1, std::memory_order_release);
    g_serial.store(true, std::memory_order_release);
  }
}

SerialScope::~SerialScope() {
  std::lock_guard<std::mutex> g(g_threads_mu);
  if (--g_serial_depth == 0) {
    const Symbols& s = symbols();
    if (s.set_threads && g_saved_threads > 0) s.set_threads(g_saved_threads);
    g_applied_threads.store(g_saved_applied, std::memory_order_release);
    g_serial.store(false, std::memory_order_release);
  }
}

void gemm_serial(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  ready_serial().sgemm(kRowMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans, as_int(m),
                       as_int(n), as_int(k), alpha, a, as_int(lda), b, as_int(ldb), beta, c,
                       as_int(ldc));
}

void gemm_serial(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                 int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  ready_serial().dgemm(kRowMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans, as_int(m),
                       as_int(n), as_int(k), alpha, a, as_int(lda), b, as_int(ldb), beta, c,
                       as_int(ldc));
}

bool available() { return symbols().ok; }

void sync_threads() { apply_threads(); }
bool enabled() { return g_enabled.load(std::memory_order_relaxed) && available(); }
void set_enabled(bool on) { g_enabled.store(on); }

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  ready().sgemm(kRowMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans, as_int(m), as_int(n),
                as_int(k), alpha, a, as_int(lda), b, as_int(ldb), beta, c, as_int(ldc));
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  ready().dgemm(kRowMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans, as_int(m), as_int(n),
                as_int(k), alpha, a, as_int(lda), b, as_int(ldb), beta, c, as_int(ldc));
}

void gemv(bool trans, int64_t rows, int64_t cols, float alpha, const float* a, int64_t lda,
          const float* x, int64_t incx, float beta, float* y, int64_t incy) {
  ready().sgemv(kRowMajor, trans ? kTrans : kNoTrans, as_int(rows), as_int(cols), alpha, a,
                as_int(lda), x, as_int(incx), beta, y, as_int(incy));
}

void gemv(bool trans, int64_t rows, int64_t cols, double alpha, const double* a, int64_t lda,
          const double* x, int64_t incx, double beta, double* y, int64_t incy) {
  ready().dgemv(kRowMajor, trans ? kTrans : kNoTrans, as_int(rows), as_int(cols), alpha, a,
                as_int(lda), x, as_int(incx), beta, y, as_int(incy));
}

Info info() {
  Info r;
  const Symbols& s = symbols();
  r.available = s.ok;
  r.enabled = enabled();
  if (!s.ok) {
    r.library = "none (C++ fallback kernel)";
    r.threads = get_num_threads();
    return r;
  }
  apply_threads();
  r.library = "scipy-openblas32";
  if (s.corename) {
    const char* name = s.corename();
    r.corename = name ? name : "";
  }
  r.threads = s.get_threads ? s.get_threads() : 0;
  return r;
}

}  // namespace ember::cpu::blas
