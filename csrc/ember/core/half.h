// 16-bit floating types. Storage only: arithmetic converts to float
// (see opmath_t in kernels/functors.h). Usable on host and device.
#pragma once
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define EMBER_HOST_DEVICE __host__ __device__
#else
#define EMBER_HOST_DEVICE
#endif

namespace ember {

namespace detail {
EMBER_HOST_DEVICE inline uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
EMBER_HOST_DEVICE inline float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
}  // namespace detail

/// IEEE binary16.
struct Half {
  uint16_t x = 0;
  Half() = default;
  EMBER_HOST_DEVICE Half(float f) : x(from_float(f)) {}
  EMBER_HOST_DEVICE operator float() const { return to_float(x); }

  EMBER_HOST_DEVICE static uint16_t from_float(float f) {
    uint32_t u = detail::f2u(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) return uint16_t(sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // overflow -> inf
    if (a < 0x38800000u) {                                  // subnormal or zero
      // Add 0.5 in the magic way: let float hardware round.
      float v = detail::u2f(a) + 0.5f;
      return uint16_t(sign | (detail::f2u(v) - 0x3f000000u));
    }
    uint32_t mant_odd = (a >> 13) & 1u;
    a += 0xc8000fffu + mant_odd;  // rebias exponent and round to nearest even
    return uint16_t(sign | (a >> 13));
  }
  EMBER_HOST_DEVICE static float to_float(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return detail::u2f(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
      float v = float(mant) * 5.9604644775390625e-08f;  // 2^-24
      return sign ? -v : v;
    }
    return detail::u2f(sign | ((exp + 112u) << 23) | (mant << 13));
  }
};

/// bfloat16: the top half of a float32, round-to-nearest-even.
struct BFloat16 {
  uint16_t x = 0;
  BFloat16() = default;
  EMBER_HOST_DEVICE BFloat16(float f) : x(from_float(f)) {}
  EMBER_HOST_DEVICE operator float() const { return detail::u2f(uint32_t(x) << 16); }
  EMBER_HOST_DEVICE static uint16_t from_float(float f) {
    uint32_t u = detail::f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
  }
};

}  // namespace ember
