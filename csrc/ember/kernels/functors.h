// Scalar functors: the math of every elementwise op, written once and used by
// the CPU loops and the CUDA kernels alike. Each takes and returns opmath_t
// (float for the 16-bit types), so half/bfloat16 compute in float.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ember/core/half.h"

namespace ember {

template <typename T> struct OpMath { using type = T; };
template <> struct OpMath<Half> { using type = float; };
template <> struct OpMath<BFloat16> { using type = float; };
template <typename T> using opmath_t = typename OpMath<T>::type;

namespace fn {
#define EMBER_F EMBER_HOST_DEVICE inline

template <typename T> EMBER_F bool is_nan(T x) {
  if constexpr (std::is_floating_point<T>::value) return x != x; else return false;
}

// Note [Integer overflow wraps]
// Signed integer arithmetic wraps modulo 2^bits, as PyTorch's results do, but
// without C++'s undefined behaviour: it is done in the unsigned type (at least
// `unsigned`, so that uint16 * uint16 does not overflow a promoted int).
template <typename T>
using wrap_t = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
template <typename T> constexpr bool kWraps = std::is_integral<T>::value && !std::is_same<T, bool>::value;
template <typename T> EMBER_F T wrap_add(T a, T b) {
  if constexpr (kWraps<T>) return T(wrap_t<T>(a) + wrap_t<T>(b)); else return a + b;
}
template <typename T> EMBER_F T wrap_sub(T a, T b) {
  if constexpr (kWraps<T>) return T(wrap_t<T>(a) - wrap_t<T>(b)); else return a - b;
}
template <typename T> EMBER_F T wrap_mul(T a, T b) {
  if constexpr (kWraps<T>) return T(wrap_t<T>(a) * wrap_t<T>(b)); else return a * b;
}
template <typename T> EMBER_F T wrap_neg(T a) {
  if constexpr (kWraps<T>) return T(wrap_t<T>(0) - wrap_t<T>(a)); else return -a;
}

// ---- unary ----------------------------------------------------------------
struct Neg { template <typename T> EMBER_F T operator()(T x) const { return wrap_neg(x); } };
struct Abs {
  template <typename T> EMBER_F T operator()(T x) const {
    if constexpr (std::is_same<T, bool>::value || std::is_unsigned<T>::value) return x;
    else return x < T(0) ? wrap_neg(x) : x;  // abs(INT_MIN) wraps to INT_MIN
  }
};
struct Sign {
  template <typename T> EMBER_F T operator()(T x) const {
    if constexpr (std::is_same<T, bool>::value) return x;
    else if constexpr (std::is_floating_point<T>::value) return is_nan(x) ? x : T((T(0) < x) - (x < T(0)));
    else return T((T(0) < x) - (x < T(0)));
  }
};
#define EMBER_FLOAT_UNARY(Name, expr) \
  struct Name { template <typename T> EMBER_F T operator()(T x) const { using std::expr; return expr(x); } };
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
struct Rsqrt { template <typename T> EMBER_F T operator()(T x) const { return T(1) / std::sqrt(x); } };
struct Reciprocal { template <typename T> EMBER_F T operator()(T x) const { return T(1) / x; } };
struct Sigmoid { template <typename T> EMBER_F T operator()(T x) const { return T(1) / (T(1) + std::exp(-x)); } };
struct Relu {
  template <typename T> EMBER_F T operator()(T x) const {
    if constexpr (std::is_floating_point<T>::value) return is_nan(x) ? x : (x > T(0) ? x : T(0));
    else return x > T(0) ? x : T(0);
  }
};
struct Square { template <typename T> EMBER_F T operator()(T x) const { return wrap_mul(x, x); } };
// Rounding keeps integers as they are.
#define EMBER_ROUNDING(Name, f) \
  struct Name { template <typename T> EMBER_F T operator()(T x) const { \
    if constexpr (std::is_floating_point<T>::value) return std::f(x); else return x; } };
EMBER_ROUNDING(Floor, floor)
EMBER_ROUNDING(Ceil, ceil)
EMBER_ROUNDING(Trunc, trunc)
EMBER_ROUNDING(Round, nearbyint)  // round half to even, as PyTorch
#undef EMBER_ROUNDING
struct Frac { template <typename T> EMBER_F T operator()(T x) const { return x - std::trunc(x); } };
struct BitwiseNot {
  template <typename T> EMBER_F T operator()(T x) const {
    if constexpr (std::is_same<T, bool>::value) return !x; else return T(~x);
  }
};

// ---- predicates (-> bool) -----------------------------------------------------
struct IsNan { template <typename T> EMBER_F bool operator()(T x) const { return is_nan(x); } };
struct IsInf {
  template <typename T> EMBER_F bool operator()(T x) const {
    if constexpr (std::is_floating_point<T>::value) return std::isinf(x); else return false;
  }
};
struct IsFinite {
  template <typename T> EMBER_F bool operator()(T x) const {
    if constexpr (std::is_floating_point<T>::value) return std::isfinite(x); else return true;
  }
};
struct LogicalNot { template <typename T> EMBER_F bool operator()(T x) const { return !bool(x); } };

// ---- binary ---------------------------------------------------------------
struct Add { template <typename T> EMBER_F T operator()(T a, T b) const { return wrap_add(a, b); } };
struct Sub { template <typename T> EMBER_F T operator()(T a, T b) const { return wrap_sub(a, b); } };
struct Mul { template <typename T> EMBER_F T operator()(T a, T b) const { return wrap_mul(a, b); } };
struct Div { template <typename T> EMBER_F T operator()(T a, T b) const { return a / b; } };
struct FloorDivide {
  template <typename T> EMBER_F T operator()(T a, T b) const {
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
      if constexpr (std::is_signed<T>::value) if (b == T(-1)) return wrap_neg(a);
      T q = a / b;
      if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
      return q;
    }
  }
};
struct Remainder {  // Python's %: the result has the sign of the divisor
  template <typename T> EMBER_F T operator()(T a, T b) const {
    if constexpr (std::is_floating_point<T>::value) {
      T m = std::fmod(a, b);
      if (m != T(0) && ((b < T(0)) != (m < T(0)))) m += b;
      return m;
    } else {
      if (b == 0) return 0;
      if constexpr (std::is_signed<T>::value) if (b == T(-1)) return 0;
      T m = a % b;
      if (m != 0 && ((b < 0) != (m < 0))) m += b;
      return m;
    }
  }
};
struct Fmod {  // C's fmod: the result has the sign of the dividend
  template <typename T> EMBER_F T operator()(T a, T b) const {
    if constexpr (std::is_floating_point<T>::value) {
      return std::fmod(a, b);
    } else {
      if (b == 0) return 0;
      if constexpr (std::is_signed<T>::value) if (b == T(-1)) return 0;
      return T(a % b);
    }
  }
};
struct Pow {
  template <typename T> EMBER_F T operator()(T a, T b) const {
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
struct Atan2 { template <typename T> EMBER_F T operator()(T a, T b) const { return std::atan2(a, b); } };
struct Maximum {
  template <typename T> EMBER_F T operator()(T a, T b) const {
    if (is_nan(a) || is_nan(b)) return is_nan(a) ? a : b;
    return a > b ? a : b;
  }
};
struct Minimum {
  template <typename T> EMBER_F T operator()(T a, T b) const {
    if (is_nan(a) || is_nan(b)) return is_nan(a) ? a : b;
    return a < b ? a : b;
  }
};
struct BitwiseAnd { template <typename T> EMBER_F T operator()(T a, T b) const { return T(a & b); } };
struct BitwiseOr { template <typename T> EMBER_F T operator()(T a, T b) const { return T(a | b); } };
struct BitwiseXor { template <typename T> EMBER_F T operator()(T a, T b) const { return T(a ^ b); } };

// ---- comparisons and logical ops (-> bool) -------------------------------------
struct Eq { template <typename T> EMBER_F bool operator()(T a, T b) const { return a == b; } };
struct Ne { template <typename T> EMBER_F bool operator()(T a, T b) const { return a != b; } };
struct Lt { template <typename T> EMBER_F bool operator()(T a, T b) const { return a < b; } };
struct Le { template <typename T> EMBER_F bool operator()(T a, T b) const { return a <= b; } };
struct Gt { template <typename T> EMBER_F bool operator()(T a, T b) const { return a > b; } };
struct Ge { template <typename T> EMBER_F bool operator()(T a, T b) const { return a >= b; } };
struct LogicalAnd { template <typename T> EMBER_F bool operator()(T a, T b) const { return bool(a) && bool(b); } };
struct LogicalOr { template <typename T> EMBER_F bool operator()(T a, T b) const { return bool(a) || bool(b); } };
struct LogicalXor { template <typename T> EMBER_F bool operator()(T a, T b) const { return bool(a) != bool(b); } };

#undef EMBER_F
}  // namespace fn
}  // namespace ember
