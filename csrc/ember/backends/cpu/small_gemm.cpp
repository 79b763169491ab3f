// The small-matrix GEMM (kernels/stubs/linalg.h, small_gemm_stub). Compiled once per CPU
// capability (Note [CPU capability dispatch] in CMakeLists.txt).
//
// Note [Small GEMM]
// A BLAS call has a fixed cost (argument checks, buffer set-up, packing) of a few hundred
// nanoseconds, which is most of the time of a 16x16x16 product: bmm of 256 such float
// matrices on 2 threads took 60 us through OpenBLAS against PyTorch's 36 us (MKL's batch
// GEMM). Matrices with m, n, k <= kSmallGemmMax go here instead. op(A) is read in place (rows
// past m repeat row m - 1, their results dropped) and op(B) is copied into a buffer padded with
// zero columns to a multiple of NR where it is transposed or not whole tiles wide, so the
// micro-kernel (gemm_tile.h) has compile-time bounds: MR rows by NR columns of C live in
// MR * NR / lanes vector registers. Every sum runs in k order, in T.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "ember/backends/cpu/capability.h"
#include "ember/backends/cpu/gemm_tile.h"
#include "ember/kernels/stubs/linalg.h"

namespace ember::cpu {
inline namespace EMBER_CPU_NS {
namespace {

constexpr int64_t kMR = 6;
constexpr int kTileV = 64 / kVecBytes;  // one cache line: 16 floats, 8 doubles

template <typename T>
constexpr int64_t kNR = gemm_tile::kCols<T, kTileV>;

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
      gemm_tile::micro<T, kMR, kTileV>(rows, acs, k, bs + j0, bld, acc);
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

// Note [Skinny GEMM]
// A product with a few rows against a long k in Linear's layout, c = a @ b^T with a (m x k)
// and b (n x k) both row-major, is mostly packing for a BLAS: OpenBLAS copies b^T into
// panels (n * k moves) to run m * n * k / lanes FMAs, as many as the moves when m is about
// the vector width. At one thread it reached 9-17 GF/s for 2-4 rows (4 x 1024 x 1024: 478
// us) and 35-39 for 8 rows. Here every c element is a dot product of two contiguous rows,
// so nothing is copied: a tile of kSkA rows of a by kSkW rows of b keeps kSkA * kSkW vector
// accumulators (a's vectors in registers, b's read as FMA memory operands), walks k a
// vector at a time, and then folds the accumulators into one vector of sums each
// (fold_sums: log2(lanes) levels of two shuffles and an add per pair, in place of a
// horizontal sum per element). The b tile (kSkW rows) stays in L1 while every row tile of
// a passes over it. Measured against OpenBLAS (AVX2, one thread): 4 x 1024 x 1024 199 vs
// 478 us, 3 x 256 x 128 9.0 vs 16.2, 8 x 512 x 784 118 vs 185, 8 x 256 x 256 22 vs 27; it
// loses at 12 or more rows (16 x 512 x 512: 204 vs 155) and below k = 128, where the folds
// cost as much as the dot products, hence skinny_gemm_pays. k's tail past the last whole
// vector is added in scalar code, and each sum runs in a fixed order, so results do not
// depend on the thread count or on n.
template <typename T>
struct SkVec {
  static constexpr int kLanes = kVecBytes / int(sizeof(T));
  typedef T V __attribute__((vector_size(kVecBytes)));
  typedef T VU __attribute__((vector_size(kVecBytes), aligned(alignof(T)), may_alias));
  using I = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  typedef I Mask __attribute__((vector_size(kVecBytes)));
};

constexpr int kSkA = 4;  // rows of a per tile

template <typename T>
constexpr int kSkW = std::max(1, SkVec<T>::kLanes / kSkA);  // rows of b: kSkA * kSkW >= lanes

/// Lane o of the shuffle that folds blocks of B lanes in half: lanes of the low half of the
/// result come from x, of the high half from y; `second` picks each block's upper half.
template <int L>
constexpr int fold_lane(int o, int block, int second) {
  const int from = o < L / 2 ? 0 : L, oo = o % (L / 2);
  return from + oo / (block / 2) * block + second * (block / 2) + oo % (block / 2);
}

template <typename T, int kBlock, int kSecond, size_t... O>
constexpr typename SkVec<T>::Mask fold_mask(std::index_sequence<O...>) {
  return typename SkVec<T>::Mask{fold_lane<SkVec<T>::kLanes>(int(O), kBlock, kSecond)...};
}

/// Replays fold_sums' lane mapping on L vectors of L lanes, tracking which (vector, lanes)
/// each lane holds: true when the final lane q sums every lane of vector q and nothing
/// else. Checked at compile time for every width, so a capability this machine cannot run
/// (AVX-512's 16 float lanes) is checked too.
template <int L>
constexpr bool fold_sums_exact() {
  struct Cell {
    int vec = -1;
    unsigned lanes = 0;
  };
  Cell v[L][L] = {};
  for (int i = 0; i < L; ++i)
    for (int q = 0; q < L; ++q) v[i][q] = Cell{i, 1u << q};
  int n = L;
  for (int block = L; block >= 2; block /= 2, n /= 2)
    for (int i = 0; i < n / 2; ++i) {
      Cell out[L] = {};
      for (int o = 0; o < L; ++o) {
        Cell parts[2] = {};
        for (int second = 0; second < 2; ++second) {
          const int src = fold_lane<L>(o, block, second);
          parts[second] = v[2 * i + src / L][src % L];
        }
        if (parts[0].vec != parts[1].vec || (parts[0].lanes & parts[1].lanes)) return false;
        out[o] = Cell{parts[0].vec, parts[0].lanes | parts[1].lanes};
      }
      for (int o = 0; o < L; ++o) v[i][o] = out[o];
    }
  for (int q = 0; q < L; ++q)
    if (v[0][q].vec != q || v[0][q].lanes != (L == 32 ? ~0u : (1u << L) - 1)) return false;
  return true;
}
static_assert(fold_sums_exact<2>() && fold_sums_exact<4>() && fold_sums_exact<8>() &&
              fold_sums_exact<16>());

/// v[0..N) -> v[0], whose lane q is the sum of v[q]'s lanes (N == lanes on the first call).
template <typename T, int kBlock, int N>
inline void fold_sums(typename SkVec<T>::V* v) {
  if constexpr (kBlock >= 2) {
    constexpr int L = SkVec<T>::kLanes;
    constexpr typename SkVec<T>::Mask lo = fold_mask<T, kBlock, 0>(std::make_index_sequence<L>());
    constexpr typename SkVec<T>::Mask hi = fold_mask<T, kBlock, 1>(std::make_index_sequence<L>());
    for (int i = 0; i < N / 2; ++i)
      v[i] = __builtin_shuffle(v[2 * i], v[2 * i + 1], lo) +
             __builtin_shuffle(v[2 * i], v[2 * i + 1], hi);
    fold_sums<T, kBlock / 2, N / 2>(v);
  }
}

/// out[r][w] = dot(ar[r][0..k), wr[w][0..k)).
template <typename T>
inline void skinny_tile(const T* const (&ar)[kSkA], const T* const (&wr)[kSkW<T>], int64_t k,
                        T (&out)[kSkA * kSkW<T>]) {
  using V = typename SkVec<T>::V;
  using VU = typename SkVec<T>::VU;
  constexpr int L = SkVec<T>::kLanes, NW = kSkW<T>, kAcc = kSkA * NW;
  const int64_t kv = k / L * L;
  V acc[kAcc] = {};
  for (int64_t p = 0; p < kv; p += L) {
    V av[kSkA];
    for (int r = 0; r < kSkA; ++r) av[r] = *reinterpret_cast<const VU*>(ar[r] + p);
    for (int w = 0; w < NW; ++w) {
      const V wv = *reinterpret_cast<const VU*>(wr[w] + p);
      for (int r = 0; r < kSkA; ++r) acc[r * NW + w] += av[r] * wv;
    }
  }
  for (int g = 0; g < kAcc; g += L) {
    fold_sums<T, L, L>(acc + g);
    std::memcpy(out + g, acc + g, sizeof(V));
  }
  if (kv < k)
    for (int r = 0; r < kSkA; ++r)
      for (int w = 0; w < NW; ++w)
        for (int64_t p = kv; p < k; ++p) out[r * NW + w] += ar[r][p] * wr[w][p];
}

template <typename T>
void skinny_gemm_t(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
                   int64_t ldb, T beta, T* c, int64_t ldc) {
  constexpr int NW = kSkW<T>;
  for (int64_t j0 = 0; j0 < n; j0 += NW) {
    const T* wr[NW];  // rows past n repeat row n - 1; their sums are dropped
    for (int w = 0; w < NW; ++w) wr[w] = b + std::min<int64_t>(j0 + w, n - 1) * ldb;
    const int64_t nc = std::min<int64_t>(NW, n - j0);
    for (int64_t i0 = 0; i0 < m; i0 += kSkA) {
      const T* ar[kSkA];
      for (int r = 0; r < kSkA; ++r) ar[r] = a + std::min<int64_t>(i0 + r, m - 1) * lda;
      T out[kSkA * NW];
      skinny_tile<T>(ar, wr, k, out);
      const int64_t nr = std::min<int64_t>(kSkA, m - i0);
      for (int64_t r = 0; r < nr; ++r) {
        T* dst = c + (i0 + r) * ldc + j0;
        const T* sums = out + r * NW;
        if (beta == T(0)) {  // C is not read (BLAS semantics)
          for (int64_t w = 0; w < nc; ++w) dst[w] = alpha * sums[w];
        } else {
          for (int64_t w = 0; w < nc; ++w) dst[w] = alpha * sums[w] + beta * dst[w];
        }
      }
    }
  }
}

void skinny_gemm_kernel(DType dt, int64_t m, int64_t n, int64_t k, double alpha, const void* a,
                        int64_t lda, const void* b, int64_t ldb, double beta, void* c,
                        int64_t ldc) {
  if (dt == DType::Float32)
    skinny_gemm_t<float>(m, n, k, float(alpha), static_cast<const float*>(a), lda,
                         static_cast<const float*>(b), ldb, float(beta), static_cast<float*>(c),
                         ldc);
  else
    skinny_gemm_t<double>(m, n, k, alpha, static_cast<const double*>(a), lda,
                          static_cast<const double*>(b), ldb, beta, static_cast<double*>(c), ldc);
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
  skinny_gemm_stub.fns[int(DeviceType::CPU)] = &skinny_gemm_kernel;
}

}  // namespace
}  // namespace EMBER_CPU_NS
}  // namespace ember::cpu
