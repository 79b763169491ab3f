// The register-tiled micro-kernel shared by the CPU's own small GEMMs: small_gemm.cpp (Note
// [Small GEMM]) and the packed recurrent GEMM of nn_rnn.cpp (Note [Packed recurrent weights]).
// Included by files compiled once per CPU capability; vectors are the capability's width.
#pragma once
#include <cstdint>
#include <cstring>

#include "ember/backends/cpu/capability.h"

namespace ember::cpu {
inline namespace EMBER_CPU_NS {
namespace gemm_tile {

/// Columns of a tile of kTileV vectors of T.
template <typename T, int kTileV>
constexpr int64_t kCols = kTileV * int64_t(kVecBytes) / int64_t(sizeof(T));

/// acc[kMR][cols] = (kMR rows of op(A): row r's element p at a[r][p * acs]) @ (k rows of
/// kCols<T, kTileV> columns at b, row stride ldb): the tile lives in kMR * kTileV vector
/// accumulators, and each step over k is kTileV loads of B, kMR broadcasts of A and
/// kMR * kTileV FMAs. Spelled out with generic vectors of the capability's width: GCC keeps a
/// plain array accumulator in memory, and lowers vectors wider than the registers through the
/// stack.
template <typename T, int64_t kMR, int kTileV>
inline void micro(const T* const (&a)[kMR], int64_t acs, int64_t k, const T* __restrict b,
                  int64_t ldb, T (&acc)[kMR][kCols<T, kTileV>]) {
  typedef T V __attribute__((vector_size(kVecBytes)));
  // An unaligned, aliasing view of memory as V: a plain vector load (a memcpy into V went
  // through the stack in halves, and the full-width reload stalled on store forwarding).
  typedef T VU __attribute__((vector_size(kVecBytes), aligned(alignof(T)), may_alias));
  V v[kMR][kTileV] = {};
  for (int64_t p = 0; p < k; ++p) {
    const VU* row = reinterpret_cast<const VU*>(b + p * ldb);
    V bv[kTileV];
    for (int q = 0; q < kTileV; ++q) bv[q] = row[q];
    for (int64_t r = 0; r < kMR; ++r) {
      const T av = a[r][p * acs];
      for (int q = 0; q < kTileV; ++q) v[r][q] += av * bv[q];
    }
  }
  std::memcpy(acc, v, sizeof(v));
}

}  // namespace gemm_tile
}  // namespace EMBER_CPU_NS
}  // namespace ember::cpu
