// Scalar functors: the math of every elementwise op, written once and used by
// the CPU loops and the CUDA kernels alike. Each takes and returns opmath_t
// (float for the 16-bit types), so half/bfloat16 compute in float.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ember/core/half.h"

namespace ember {

template <typename T>
struct OpMath {
  using type = T;
};
template <>
struct OpMath<Half> {
  using type = float;
};
template <>
struct OpMath<BFloat16> {
  using type = float;
};
template <typename T>
using opmath_t = typename OpMath<T>::type;

namespace fn {
#define EMBER_F EMBER_HOST_DEVICE inline

template <typename T>
EMBER_F bool is_nan(T x) {
  if constexpr (std::is_floating_point<T>::value)
    return x != x;
  else
    return false;
}

// Note [Integer overflow wraps]
// Signed integer arithmetic wraps modulo 2^bits, as PyTorch's results do, but
// without C++'s undefined behaviour: it is done in the unsigned type (at least
// `unsigned`, so that uint16 * uint16 does not overflow a promoted int).
template <typename T>
using wrap_t =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
template <typename T>
constexpr bool kWraps = std::is_integral<T>::value && !std::is_same<T, bool>::value;
template <typename T>
EMBER_F T wrap_add(T a, T b) {
  if constexpr (kWraps<T>)
    return T(wrap_t<T>(a) + wrap_t<T>(b));
  else
    return a + b;
}
template <typename T>
EMBER_F T wrap_sub(T a, T b) {
  if constexpr (kWraps<T>)
    return T(wrap_t<T>(a) - wrap_t<T>(b));
  else
    return a - b;
}
template <typename T>
EMBER_F T wrap_mul(T a, T b) {
  if constexpr (kWraps<T>)
    return T(wrap_t<T>(a) * wrap_t<T>(b));
  else
    return a * b;
}
template <typename T>
EMBER_F T wrap_neg(T a) {
  if constexpr (kWraps<T>)
    return T(wrap_t<T>(0) - wrap_t<T>(a));
  else
    return -a;
}

// ---- unary ----------------------------------------------------------------
struct Neg {
  template <typename T>
  EMBER_F T operator()(T x) const {
    return wrap_neg(x);
  }
};
struct Abs {
  template <typename T>
  EMBER_F T operator()(T x) const {
    if constexpr (std::is_same<T, bool>::value || std::is_unsigned<T>::value)
      return x;
    else
      return x < T(0) ? wrap_neg(x) : x;  // abs(INT_MIN) wraps to INT_MIN
  }
};
struct Sign {
  template <typename T>
  EMBER_F T operator()(T x) const {
    if constexpr (std::is_same<T, bool>::value)
      return x;
    else  // PyTorch's (0 < x) - (x < 0): sign(nan) is 0 (NumPy's is nan), sign(-0.0) is 0
      return T((T(0) < x) - (x < T(0)));
  }
};
#define EMBER_FLOAT_UNARY(Name, expr) \
  struct Name {                       \
    template <typename T>             \
    EMBER_F T operator()(T x) const { \
      using std::expr;                \
      return expr(x);                 \
    }                                 \
  };
EMBER_FLOAT_UNARY(Exp, exp)
EMBER_FLOAT_UNARY(Log, log)
EMBER_FLOAT_UNARY(Log1p, log1p)
EMBER_FLOAT_UNARY(Expm1, expm1)
EMBER_FLOAT_UNARY(Log2, log2)
EMBER_FLOAT_UNARY(Log10, log10)
EMBER_FLOAT_UNARY(Sqrt, sqrt)
EMBER_FLOAT_UNARY(Sin, sin)
EMBER_FLOAT_UNARY(Cos, cos)
EMBER_FLOAT_UNARY(Tan, tan)
EMBER_FLOAT_UNARY(Asin, asin)
EMBER_FLOAT_UNARY(Acos, acos)
EMBER_FLOAT_UNARY(Atan, atan)
EMBER_FLOAT_UNARY(Sinh, sinh)
EMBER_FLOAT_UNARY(Cosh, cosh)
EMBER_FLOAT_UNARY(Tanh, tanh)
EMBER_FLOAT_UNARY(Erf, erf)
EMBER_FLOAT_UNARY(Exp2, exp2)
#undef EMBER_FLOAT_UNARY
struct Erfc {
  template <typename T>
  EMBER_F T operator()(T x) const {
    using std::erfc;
    return erfc(x);
  }
};
struct Lgamma {
  template <typename T>
  EMBER_F T operator()(T x) const {
    using std::lgamma;
    return lgamma(x);
  }
};
// digamma as PyTorch's calc_digamma (Cephes): reflection for x < 0, recurrence up
// to 10, then the asymptotic series.
struct Digamma {
  template <typename T>
  EMBER_F T operator()(T xt) const {
    double x = double(xt);
    const double kPi = 3.14159265358979323846;
    if (x == 0) return T(std::copysign(INFINITY, -x));
    double result = 0;
    if (x < 0) {
      if (x == std::trunc(x)) return T(NAN);
      double q = x - std::floor(x);
      result = -kPi / std::tan(kPi * q);
      x = 1 - x;
    }
    while (x < 10) {
      result -= 1 / x;
      x += 1;
    }
    if (x == 10) return T(result + 2.25175258906672110764);
    const double A[] = {8.33333333333333333333E-2, -2.10927960927960927961E-2,
                        7.57575757575757575758E-3, -4.16666666666666666667E-3,
                        3.96825396825396825397E-3, -8.33333333333333333333E-3,
                        8.33333333333333333333E-2};
    double y = 0;
    if (x < 1.0e17) {
      double z = 1.0 / (x * x), p = A[0];
      for (int i = 1; i < 7; ++i) p = p * z + A[i];
      y = z * p;
    }
    return T(result + std::log(x) - 0.5 / x - y);
  }
};
// erfinv: a rational first guess refined by two Newton steps (PyTorch's calc_erfinv).
struct Erfinv {
  template <typename T>
  EMBER_F T operator()(T yt) const {
    double y = double(yt), ya = std::fabs(y);
    if (ya > 1) return T(NAN);
    if (ya == 1) return T(std::copysign(INFINITY, y));
    const double a[4] = {0.886226899, -1.645349621, 0.914624893, -0.140543331};
    const double b[4] = {-2.118377725, 1.442710462, -0.329097515, 0.012229801};
    const double c[4] = {-1.970840454, -1.624906493, 3.429567803, 1.641345311};
    const double d[2] = {3.543889200, 1.637067800};
    double x;
    if (ya <= 0.7) {
      double z = y * y;
      double num = ((a[3] * z + a[2]) * z + a[1]) * z + a[0];
      double dem = (((b[3] * z + b[2]) * z + b[1]) * z + b[0]) * z + 1.0;
      x = y * num / dem;
    } else {
      double z = std::sqrt(-std::log((1.0 - ya) / 2.0));
      double num = ((c[3] * z + c[2]) * z + c[1]) * z + c[0];
      double dem = (d[1] * z + d[0]) * z + 1.0;
      x = std::copysign(num / dem, y);
    }
    const double k = 1.12837916709551257390;  // 2 / sqrt(pi)
    x = x - (std::erf(x) - y) / (k * std::exp(-x * x));
    x = x - (std::erf(x) - y) / (k * std::exp(-x * x));
    return T(x);
  }
};
// Modified Bessel functions I0 and I1: the power series for |x| <= 25, the
// asymptotic expansion above (both converge to double precision there: the series has
// no cancellation, and past 25 the expansion's smallest term is below 1e-21).
template <int Nu>
EMBER_F double bessel_i(double x) {
  double ax = std::fabs(x);
  if (ax <= 25.0) {
    double h = x / 2, q = h * h, term = Nu == 0 ? 1.0 : h, sum = term;
    for (int k = 1; k < 200; ++k) {
      term *= q / (double(k) * double(k + Nu));
      sum += term;
      if (std::fabs(term) <= std::fabs(sum) * 1e-17) break;
    }
    return sum;
  }
  double mu = 4.0 * Nu * Nu, term = 1.0, sum = 1.0;
  for (int k = 1; k < 40; ++k) {
    double f = (mu - double(2 * k - 1) * double(2 * k - 1)) / (double(k) * 8.0 * ax);
    term *= -f;
    sum += term;
    if (std::fabs(term) < 1e-17 * std::fabs(sum)) break;
  }
  double r = std::exp(ax) / std::sqrt(2.0 * 3.14159265358979323846 * ax) * sum;
  return (Nu == 1 && x < 0) ? -r : r;
}
struct I0 {
  template <typename T>
  EMBER_F T operator()(T x) const {
    return T(bessel_i<0>(double(x)));
  }
};
struct SpecialI1 {
  template <typename T>
  EMBER_F T operator()(T x) const {
    return T(bessel_i<1>(double(x)));
  }
};
struct Rsqrt {
  template <typename T>
  EMBER_F T operator()(T x) const {
    return T(1) / std::sqrt(x);
  }
};
struct Reciprocal {
  template <typename T>
  EMBER_F T operator()(T x) const {
    return T(1) / x;
  }
};
struct Sigmoid {
  template <typename T>
  EMBER_F T operator()(T x) const {
    return T(1) / (T(1) + std::exp(-x));
  }
};
struct Relu {
  template <typename T>
  EMBER_F T operator()(T x) const {
    if constexpr (std::is_floating_point<T>::value)
      return is_nan(x) ? x : (x > T(0) ? x : T(0));
    else
      return x > T(0) ? x : T(0);
  }
};
struct Square {
  template <typename T>
  EMBER_F T operator()(T x) const {
    return wrap_mul(x, x);
  }
};
// Rounding keeps integers as they are.
#define EMBER_ROUNDING(Name, f)                       \
  struct Name {                                       \
    template <typename T>                             \
    EMBER_F T operator()(T x) const {                 \
      if constexpr (std::is_floating_point<T>::value) \
        return std::f(x);                             \
      else                                            \
        return x;                                     \
    }                                                 \
  };
EMBER_ROUNDING(Floor, floor)
EMBER_ROUNDING(Ceil, ceil)
EMBER_ROUNDING(Trunc, trunc)
EMBER_ROUNDING(Round, nearbyint)  // round half to even, as PyTorch
#undef EMBER_ROUNDING
struct Frac {
  template <typename T>
  EMBER_F T operator()(T x) const {
    return x - std::trunc(x);
  }
};
struct BitwiseNot {
  template <typename T>
  EMBER_F T operator()(T x) const {
    if constexpr (std::is_same<T, bool>::value)
      return !x;
    else
      return T(~x);
  }
};

// ---- predicates (-> bool) -----------------------------------------------------
struct IsNan {
  template <typename T>
  EMBER_F bool operator()(T x) const {
    return is_nan(x);
  }
};
struct IsInf {
  template <typename T>
  EMBER_F bool operator()(T x) const {
    if constexpr (std::is_floating_point<T>::value)
      return std::isinf(x);
    else
      return false;
  }
};
struct IsFinite {
  template <typename T>
  EMBER_F bool operator()(T x) const {
    if constexpr (std::is_floating_point<T>::value)
      return std::isfinite(x);
    else
      return true;
  }
};
struct LogicalNot {
  template <typename T>
  EMBER_F bool operator()(T x) const {
    return !bool(x);
  }
};

// ---- binary ---------------------------------------------------------------
struct Add {
  template <typename T>
  EMBER_F T operator()(T a, T b) const {
    return wrap_add(a, b);
  }
};
struct Sub {
  template <typename T>
  EMBER_F T operator()(T a, T b) const {
    return wrap_sub(a, b);
  }
};
struct Mul {
  template <typename T>
  EMBER_F T operator()(T a, T b) const {
    return wrap_mul(a, b);
  }
};
struct Div {
  template <typename T>
  EMBER_F T operator()(T a, T b) const {
    return a / b;
  }
};
struct FloorDivide {
  template <typename T>
  EMBER_F T operator()(T a, T b) const {
    if constexpr (std::is_floating_point<T>::value) {
      if (b == T(0)) return a / b;
      T m = std::fmod(a, b);
      T d = (a - m) / b;
      if (m != T(0) && ((b < T(0)) != (m < T(0)))) d -= T(1);
      T fd = std::floor(d);
      if (d - fd > T(0.5)) fd += T(1);
      return d == T(0) ? std::copysign(T(0), a / b) : fd;
    } else {
      // b == 0 is rejected by the front-end; b == -1 avoids the INT_MIN / -1 trap
      // (INT_MIN // -1 wraps to INT_MIN, as PyTorch).
      if (b == 0) return 0;
      if constexpr (std::is_signed<T>::value)
        if (b == T(-1)) return wrap_neg(a);
      T q = a / b;
      if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
      return q;
    }
  }
};
struct Remainder {  // Python's %: the result has the sign of the divisor
  template <typename T>
  EMBER_F T operator()(T a, T b) const {
    if constexpr (std::is_floating_point<T>::value) {
      T m = std::fmod(a, b);
      if (m != T(0) && ((b < T(0)) != (m < T(0)))) m += b;
      return m;
    } else {
      if (b == 0) return 0;
      if constexpr (std::is_signed<T>::value)
        if (b == T(-1)) return 0;
      T m = a % b;
      if (m != 0 && ((b < 0) != (m < 0))) m += b;
      return m;
    }
  }
};
struct Fmod {  // C's fmod: the result has the sign of the dividend
  template <typename T>
  EMBER_F T operator()(T a, T b) const {
    if constexpr (std::is_floating_point<T>::value) {
      return std::fmod(a, b);
    } else {
      if (b == 0) return 0;
      if constexpr (std::is_signed<T>::value)
        if (b == T(-1)) return 0;
      return T(a % b);
    }
  }
};
struct Pow {
  template <typename T>
  EMBER_F T operator()(T a, T b) const {
    if constexpr (std::is_floating_point<T>::value) {
      return std::pow(a, b);
    } else {  // integer power by squaring; negative exponents as PyTorch
      if (b < 0) {
        if (a == 1) return 1;
        if (a == T(-1)) return (b % 2 == 0) ? T(1) : T(-1);
        return 0;
      }
      T r = 1, base = a;
      auto e = b;
      while (e) {
        if (e & 1) r = wrap_mul(r, base);
        base = wrap_mul(base, base);
        e >>= 1;
      }
      return r;
    }
  }
};
struct Atan2 {
  template <typename T>
  EMBER_F T operator()(T a, T b) const {
    return std::atan2(a, b);
  }
};
struct Maximum {
  template <typename T>
  EMBER_F T operator()(T a, T b) const {
    if (is_nan(a) || is_nan(b)) return is_nan(a) ? a : b;
    return a > b ? a : b;
  }
};
struct Minimum {
  template <typename T>
  EMBER_F T operator()(T a, T b) const {
    if (is_nan(a) || is_nan(b)) return is_nan(a) ? a : b;
    return a < b ? a : b;
  }
};
struct BitwiseAnd {
  template <typename T>
  EMBER_F T operator()(T a, T b) const {
    return T(a & b);
  }
};
struct BitwiseOr {
  template <typename T>
  EMBER_F T operator()(T a, T b) const {
    return T(a | b);
  }
};
struct BitwiseXor {
  template <typename T>
  EMBER_F T operator()(T a, T b) const {
    return T(a ^ b);
  }
};

// ---- comparisons and logical ops (-> bool) -------------------------------------
struct Eq {
  template <typename T>
  EMBER_F bool operator()(T a, T b) const {
    return a == b;
  }
};
struct Ne {
  template <typename T>
  EMBER_F bool operator()(T a, T b) const {
    return a != b;
  }
};
struct Lt {
  template <typename T>
  EMBER_F bool operator()(T a, T b) const {
    return a < b;
  }
};
struct Le {
  template <typename T>
  EMBER_F bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct Gt {
  template <typename T>
  EMBER_F bool operator()(T a, T b) const {
    return a > b;
  }
};
struct Ge {
  template <typename T>
  EMBER_F bool operator()(T a, T b) const {
    return a >= b;
  }
};
struct LogicalAnd {
  template <typename T>
  EMBER_F bool operator()(T a, T b) const {
    return bool(a) && bool(b);
  }
};
struct LogicalOr {
  template <typename T>
  EMBER_F bool operator()(T a, T b) const {
    return bool(a) || bool(b);
  }
};
struct LogicalXor {
  template <typename T>
  EMBER_F bool operator()(T a, T b) const {
    return bool(a) != bool(b);
  }
};

// ---- ternary ---------------------------------------------------------------
/// PyTorch's lerp (torch.lerp, and the optimizers' moving averages): start + w * (end -
/// start) for |w| < 0.5, else end - (end - start) * (1 - w), so that w = 0 gives start and
/// w = 1 gives end exactly, with the same rounding on both sides of 0.5. A NaN weight
/// takes the second form (NaN either way).
struct Lerp {
  template <typename T>
  EMBER_F T operator()(T start, T end, T w) const {
    const T d = end - start;
    return (w < T(0.5) && w > T(-0.5)) ? start + w * d : end - d * (T(1) - w);
  }
};

#undef EMBER_F
}  // namespace fn
}  // namespace ember
