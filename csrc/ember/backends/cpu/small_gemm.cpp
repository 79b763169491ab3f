// The small-matrix GEMM (kernels/stubs/linalg.h, small_gemm_stub). Compiled once per CPU
// capability (Note [CPU capability dispatch] in CMakeLists.txt).
//
// Note [Small GEMM]
// A BLAS call has a fixed cost (argument checks, buffer set-up, packing) of a few hundred
// nanoseconds, which is most of the time of a 16x16x16 product: bmm of 256 such float
// matrices on 2 threads took 60 us through OpenBLAS against PyTorch's 36 us (MKL's batch
// GEMM). Matrices with m, n, k <= kSmallGemmMax go here instead. op(A) is copied into a
// row-major buffer padded with zero rows to a multiple of MR and op(B) into one padded with
// zero columns to a multiple of NR, so the micro-kernel has compile-time bounds: MR rows by
// NR columns of C live in MR * NR / lanes vector registers, and each step over k is MR
// broadcasts, NR / lanes loads and MR * NR / lanes FMAs. Every sum runs in k order, in T.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "ember/backends/cpu/capability.h"
#include "ember/kernels/stubs/linalg.h"

namespace ember::cpu {
inline namespace EMBER_CPU_NS {
namespace {

constexpr int64_t kMR = 6;

template <typename T>
constexpr int64_t kNR = 64 / int64_t(sizeof(T));  // 16 floats, 8 doubles: one cache line

/// acc[MR][NR] = (MR rows of op(A): row r's element p at a[r][p * acs]) @ (k rows of NR
/// columns at b, row stride ldb), with the tile in kMR * NR / lanes vector registers.
/// Spelled out with generic vectors of the capability's width: GCC keeps a plain array
/// accumulator in memory, and lowers vectors wider than the registers through the stack.
template <typename T>
inline void micro(const T* const (&a)[kMR], int64_t acs, int64_t k, const T* __restrict b,
                  int64_t ldb, T (&acc)[kMR][kNR<T>]) {
  typedef T V __attribute__((vector_size(kVecBytes)));
  // An unaligned, aliasing view of memory as V: a plain vector load (a memcpy into V went
  // through the stack in halves, and the full-width reload stalled on store forwarding).
  typedef T VU __attribute__((vector_size(kVecBytes), aligned(alignof(T)), may_alias));
  constexpr int kV = int(kNR<T> * int64_t(sizeof(T)) / kVecBytes);  // vectors per tile row
  V v[kMR][kV] = {};
  for (int64_t p = 0; p < k; ++p) {
    const VU* row = reinterpret_cast<const VU*>(b + p * ldb);
    V bv[kV];
    for (int q = 0; q < kV; ++q) bv[q] = row[q];
    for (int64_t r = 0; r < kMR; ++r) {
      const T av = a[r][p * acs];
      for (int q = 0; q < kV; ++q) v[r][q] += av * bv[q];
    }
  }
  std::memcpy(acc, v, sizeof(v));
}

template <typename T>
void small_gemm_t(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                  int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  constexpr int64_t NR = kNR<T>;
  constexpr int64_t kMax = kSmallGemmMax;
  // op(B) is read in place when its rows are contiguous and whole tiles; otherwise it is
  // copied into a buffer of whole tiles (zero columns past n). op(A) is always read in
  // place: rows past m repeat row m - 1, and their results are dropped.
  alignas(64) T bp[kMax * (kMax + NR)];
  const T* bs = b;
  int64_t bld = ldb;
  if (tb || n % NR != 0) {
    const int64_t np = (n + NR - 1) / NR * NR;
    for (int64_t p = 0; p < k; ++p) {
      T* dst = bp + p * np;
      if (tb) {
        for (int64_t j = 0; j < n; ++j) dst[j] = b[j * ldb + p];
      } else {
        std::memcpy(dst, b + p * ldb, size_t(n) * sizeof(T));
      }
      for (int64_t j = n; j < np; ++j) dst[j] = T(0);
    }
    bs = bp;
    bld = np;
  }
  const int64_t ars = ta ? 1 : lda, acs = ta ? lda : 1;
  for (int64_t i0 = 0; i0 < m; i0 += kMR) {
    const T* rows[kMR];
    for (int64_t r = 0; r < kMR; ++r) rows[r] = a + std::min(i0 + r, m - 1) * ars;
    for (int64_t j0 = 0; j0 < n; j0 += NR) {
      T acc[kMR][NR];
      micro<T>(rows, acs, k, bs + j0, bld, acc);
      const int64_t nr = std::min(kMR, m - i0), nc = std::min(NR, n - j0);
      for (int64_t r = 0; r < nr; ++r) {
        T* dst = c + (i0 + r) * ldc + j0;
        if (beta == T(0)) {  // C is not read: NaN in it does not leak (BLAS semantics)
          for (int64_t j = 0; j < nc; ++j) dst[j] = alpha * acc[r][j];
        } else {
          for (int64_t j = 0; j < nc; ++j) dst[j] = alpha * acc[r][j] + beta * dst[j];
        }
      }
    }
  }
}

void small_gemm_kernel(DType dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
                       const void* a, int64_t lda, const void* b, int64_t ldb, double beta, void* c,
                       int64_t ldc) {
  if (dt == DType::Float32)
    small_gemm_t<float>(ta, tb, m, n, k, float(alpha), static_cast<const float*>(a), lda,
                        static_cast<const float*>(b), ldb, float(beta), static_cast<float*>(c),
                        ldc);
  else
    small_gemm_t<double>(ta, tb, m, n, k, alpha, static_cast<const double*>(a), lda,
                         static_cast<const double*>(b), ldb, beta, static_cast<double*>(c), ldc);
}

EMBER_REGISTER_CPU_KERNELS(small_gemm) {
  small_gemm_stub.fns[int(DeviceType::CPU)] = &small_gemm_kernel;
}

}  // namespace
}  // namespace EMBER_CPU_NS
}  // namespace ember::cpu
