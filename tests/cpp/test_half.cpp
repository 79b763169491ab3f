// float16 and bfloat16 conversions: round-to-nearest-even, overflow to
// infinity, NaN, signed zero and subnormals.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "ember/core/half.h"

using ember::BFloat16;
using ember::Half;

namespace {
float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t h(float f) { return Half::from_float(f); }
uint16_t bf(float f) { return BFloat16::from_float(f); }
float bf_to_float(uint16_t x) {
  BFloat16 b;
  b.x = x;
  return float(b);
}
const float kInf = std::numeric_limits<float>::infinity();
}  // namespace

TEST(Half, ExactValues) {
  EXPECT_EQ(h(0.0f), 0x0000);
  EXPECT_EQ(h(-0.0f), 0x8000);
  EXPECT_EQ(h(1.0f), 0x3c00);
  EXPECT_EQ(h(-2.0f), 0xc000);
  EXPECT_EQ(h(0.5f), 0x3800);
  EXPECT_EQ(h(65504.0f), 0x7bff);               // the largest finite half
  EXPECT_EQ(h(std::ldexp(1.0f, -14)), 0x0400);  // the smallest normal
  EXPECT_EQ(Half::to_float(0x3555), 0.333251953125f);
  EXPECT_TRUE(std::signbit(Half::to_float(0x8000)));
}

TEST(Half, RoundsToNearestEven) {
  const float ulp1 = std::ldexp(1.0f, -10);           // spacing of halves in [1, 2)
  EXPECT_EQ(h(1.0f + ulp1 / 2), 0x3c00);              // tie -> even (down)
  EXPECT_EQ(h(1.0f + 3 * ulp1 / 2), 0x3c02);          // tie -> even (up)
  EXPECT_EQ(h(1.0f + ulp1 / 2 + ulp1 / 64), 0x3c01);  // just above the tie
  EXPECT_EQ(h(1.0f + ulp1 / 2 - ulp1 / 64), 0x3c00);  // just below
  EXPECT_EQ(h(-(1.0f + 3 * ulp1 / 2)), 0xbc02);
  // Rounding can carry into the exponent: 2 - ulp/4 rounds to 2.
  EXPECT_EQ(h(2.0f - ulp1 / 4), 0x4000);
}

TEST(Half, OverflowInfAndNan) {
  EXPECT_EQ(h(65519.0f), 0x7bff);  // below the midpoint to 65536
  EXPECT_EQ(h(65520.0f), 0x7c00);  // the midpoint rounds to even: infinity
  EXPECT_EQ(h(1e10f), 0x7c00);
  EXPECT_EQ(h(-1e10f), 0xfc00);
  EXPECT_EQ(h(kInf), 0x7c00);
  EXPECT_EQ(h(-kInf), 0xfc00);
  EXPECT_TRUE(std::isinf(Half::to_float(0x7c00)));
  uint16_t n = h(std::nanf(""));
  EXPECT_EQ(n & 0x7c00, 0x7c00);
  EXPECT_NE(n & 0x03ff, 0);
  EXPECT_TRUE(std::isnan(Half::to_float(n)));
  EXPECT_TRUE(std::isnan(Half::to_float(h(bits_to_float(0x7f800001u)))));  // signalling NaN
}

TEST(Half, Subnormals) {
  const float tiny = std::ldexp(1.0f, -24);  // the smallest subnormal half
  EXPECT_EQ(h(tiny), 0x0001);
  EXPECT_EQ(h(tiny / 2), 0x0000);      // tie -> even (zero)
  EXPECT_EQ(h(3 * tiny / 2), 0x0002);  // tie -> even (2)
  EXPECT_EQ(h(5 * tiny / 2), 0x0002);  // tie -> even (2)
  EXPECT_EQ(h(tiny * 0.5001f), 0x0001);
  EXPECT_EQ(h(-tiny), 0x8001);
  EXPECT_EQ(h(1e-10f), 0x0000);
  EXPECT_EQ(h(-1e-10f), 0x8000);
  EXPECT_EQ(h(1023 * tiny), 0x03ff);  // the largest subnormal
  EXPECT_EQ(Half::to_float(0x0001), tiny);
  EXPECT_EQ(Half::to_float(0x03ff), 1023 * tiny);
  EXPECT_EQ(Half::to_float(0x8001), -tiny);
}

TEST(Half, EveryHalfRoundTrips) {
  for (uint32_t x = 0; x < 0x10000; ++x) {
    float f = Half::to_float(uint16_t(x));
    bool is_nan = (x & 0x7c00) == 0x7c00 && (x & 0x03ff) != 0;
    if (is_nan) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << x;
      ASSERT_TRUE(std::isnan(Half::to_float(h(f)))) << std::hex << x;
    } else {
      ASSERT_EQ(h(f), x) << std::hex << x;
    }
  }
}

#if defined(__FLT16_MAX__)
// The compiler's own float -> _Float16 conversion is IEEE round-to-nearest-even:
// compare against it on a spread of float bit patterns covering every exponent.
TEST(Half, MatchesCompilerConversion) {
  for (uint64_t u = 0; u < 0x100000000ull; u += 65521) {  // a prime step
    float f = bits_to_float(uint32_t(u));
    if (std::isnan(f)) continue;
    _Float16 ref = static_cast<_Float16>(f);
    uint16_t rb;
    std::memcpy(&rb, &ref, 2);
    ASSERT_EQ(h(f), rb) << std::hex << u;
  }
}
#endif

TEST(BFloat16, ExactValues) {
  EXPECT_EQ(bf(1.0f), 0x3f80);
  EXPECT_EQ(bf(-2.0f), 0xc000);
  EXPECT_EQ(bf(0.0f), 0x0000);
  EXPECT_EQ(bf(-0.0f), 0x8000);
  EXPECT_EQ(bf_to_float(0x3f80), 1.0f);
  EXPECT_EQ(bf_to_float(0x4049), 3.140625f);
}

TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(bf(bits_to_float(0x3f808000u)), 0x3f80);  // tie -> even (down)
  EXPECT_EQ(bf(bits_to_float(0x3f818000u)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(bf(bits_to_float(0x3f808001u)), 0x3f81);  // above the tie
  EXPECT_EQ(bf(bits_to_float(0x3f807fffu)), 0x3f80);  // below the tie
  EXPECT_EQ(bf(bits_to_float(0xbf818000u)), 0xbf82);
  EXPECT_EQ(bf(bits_to_float(0x3fffc000u)), 0x4000);  // carry into the exponent
}

TEST(BFloat16, OverflowInfAndNan) {
  EXPECT_EQ(bf(kInf), 0x7f80);
  EXPECT_EQ(bf(-kInf), 0xff80);
  EXPECT_EQ(bf(std::numeric_limits<float>::max()), 0x7f80);  // rounds up to infinity
  EXPECT_EQ(bf(bits_to_float(0x7f7f7fffu)), 0x7f7f);         // stays finite
  for (uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu}) {
    uint16_t r = bf(bits_to_float(nan));
    EXPECT_TRUE(std::isnan(bf_to_float(r))) << std::hex << nan << " -> " << r;
  }
}

TEST(BFloat16, Subnormals) {
  EXPECT_EQ(bf(bits_to_float(0x00010000u)), 0x0001);  // the smallest subnormal bfloat16
  EXPECT_EQ(bf(bits_to_float(0x00008000u)), 0x0000);  // tie -> even (zero)
  EXPECT_EQ(bf(bits_to_float(0x00018000u)), 0x0002);  // tie -> even (2)
  EXPECT_EQ(bf(bits_to_float(0x80010000u)), 0x8001);
  EXPECT_EQ(bf_to_float(0x0001), bits_to_float(0x00010000u));
}

TEST(BFloat16, EveryBFloat16RoundTrips) {
  for (uint32_t x = 0; x < 0x10000; ++x) {
    float f = bf_to_float(uint16_t(x));
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(bf_to_float(bf(f)))) << std::hex << x;
    } else {
      ASSERT_EQ(bf(f), x) << std::hex << x;
    }
  }
}
