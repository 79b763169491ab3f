#include "ember/data/crc32c.h"

#include <array>
#include <cstring>
#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace ember::data {
namespace {

// Slicing-by-8 tables: eight bytes per step without the crc32 instruction.
struct Tables {
  uint32_t t[8][256];
  Tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  }
};

uint32_t raw_table(uint32_t c, const unsigned char* p, size_t n) {
  static const Tables tb;
  for (; n >= 8; n -= 8, p += 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;
    c = tb.t[7][lo & 0xFF] ^ tb.t[6][(lo >> 8) & 0xFF] ^ tb.t[5][(lo >> 16) & 0xFF] ^
        tb.t[4][lo >> 24] ^ tb.t[3][hi & 0xFF] ^ tb.t[2][(hi >> 8) & 0xFF] ^
        tb.t[1][(hi >> 16) & 0xFF] ^ tb.t[0][hi >> 24];
  }
  for (; n; --n, ++p) c = tb.t[0][(c ^ *p) & 0xFF] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__)
// The crc32 instruction, compiled for SSE4.2 whatever the build's baseline and chosen
// at run time (the portable build targets baseline x86-64).
__attribute__((target("sse4.2"))) uint32_t raw_sse42(uint32_t c, const unsigned char* p, size_t n) {
  uint64_t c64 = c;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c64 = _mm_crc32_u64(c64, v);
  }
  c = uint32_t(c64);
  for (; n; --n, ++p) c = _mm_crc32_u8(c, *p);
  return c;
}
bool has_sse42() {
  static const bool yes = __builtin_cpu_supports("sse4.2");
  return yes;
}
#endif

uint32_t raw(uint32_t c, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
#if defined(__x86_64__)
  if (has_sse42()) return raw_sse42(c, p, n);
#endif
  return raw_table(c, p, n);
}

}  // namespace

uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n) {
  return raw(crc ^ 0xFFFFFFFFu, data, n) ^ 0xFFFFFFFFu;
}

uint32_t crc32c(const void* data, size_t n) { return crc32c_extend(0, data, n); }

uint32_t masked_crc32c(const void* data, size_t n) {
  uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

}  // namespace ember::data
