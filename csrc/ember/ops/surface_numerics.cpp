// Numeric composites of the elementwise primitives (ops/surface.h). Autograd
// comes from the primitives; where a branch is masked, its operand is made
// safe first so no 0/0 leaks into the gradient.
#include <cmath>
#include <limits>

#include "ember/autograd/derivatives/formula.h"
#include "ember/jit/trace_hook.h"
#include "ember/ops/autocast.h"
#include "ember/ops/reduce.h"
#include "ember/ops/surface.h"
#include "ember/ops/view.h"

namespace ember {
namespace {

using B = BinaryOp;
using U = UnaryOp;

using namespace autograd::formula;  // S, plus, minus, mul, div, bin, un
Tensor SI(int64_t v) { return wrap_scalar(Scalar(v)); }

DType float_result(const Tensor& a, const Tensor& b) {
  DType t = result_type(a, b);
  return is_floating(t) ? t : default_dtype();
}
DType float_result(const Tensor& a) { return is_floating(a.dtype()) ? a.dtype() : default_dtype(); }

// `a` in the computation dtype `t`. A Python number converted to `t` is then an ordinary
// 0-dim tensor of `t`: kept as a wrapped number, a float16 3.0 promoted like a Python float
// (to the default dtype) in the composite's next op, and xlogy(half, 3) came out float32.
Tensor as_dtype(const Tensor& a, DType t) {
  if (a.dtype() == t) return a;
  Tensor r = to_dtype(a, t);
  if (r.impl()->wrapped_number) {
    r = r.is_same(a) ? clone(r) : r;
    r.impl()->wrapped_number = false;
  }
  return r;
}

void floating_only(const char* op, const Tensor& a, const Tensor& b) {
  DType t = result_type(a, b);
  EMBER_CHECK_KIND(ErrorKind::NotImplemented, is_floating(t), "\"", op,
                   "_cpu\" not implemented for '", scalar_type_name(t), "'");
}

void integral_only(const char* op, const Tensor& a, const Tensor& b) {
  DType t = result_type(a, b);
  EMBER_CHECK_KIND(ErrorKind::NotImplemented, !is_floating(t) && t != DType::Bool, "\"", op,
                   "_cpu\" not implemented for '", scalar_type_name(t), "'");
}

int bits_of(DType t) { return int(element_size(t) * 8); }

}  // namespace

bool equal(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::equal(Tensor self, Tensor b) -> bool", equal, a, b);
  check_same_device(a, b, "equal");
  if (a.sizes() != b.sizes()) return false;
  if (a.numel() == 0) return true;
  autograd::GradModeGuard no_grad(false);
  Tensor r = to_device(all(bin(B::eq, a, b)), Device());
  return *reinterpret_cast<const bool*>(r.data_ptr());
}

Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  EMBER_TRACE(
      "aten::isclose(Tensor self, Tensor b, float rtol, float atol, bool equal_nan) -> Tensor",
      isclose, a, b, rtol, atol, equal_nan);
  EMBER_CHECK(a.dtype() == b.dtype(),
              "isclose(): expected both input and other to have the same dtype, but got ",
              dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
  EMBER_CHECK(rtol >= 0, "rtol must be greater than or equal to zero, but got ", rtol);
  EMBER_CHECK(atol >= 0, "atol must be greater than or equal to zero, but got ", atol);
  autograd::GradModeGuard no_grad(false);
  Tensor close = bin(B::eq, a, b);
  if (a.dtype() == DType::Bool) return close;
  if (equal_nan && is_floating(a.dtype()))
    close = bin(B::logical_or, close, bin(B::logical_and, un(U::isnan, a), un(U::isnan, b)));
  DType ft = is_floating(a.dtype()) ? a.dtype() : DType::Float64;
  Tensor x = as_dtype(a, ft), y = as_dtype(b, ft);
  Tensor diff = un(U::abs, bin(B::sub, x, y));
  Tensor tol = bin(B::add, S(atol), bin(B::mul, S(rtol), un(U::abs, y)));
  Tensor fin = bin(B::logical_and, un(U::isfinite, diff), bin(B::le, diff, tol));
  return bin(B::logical_or, close, fin);
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  EMBER_TRACE(
      "aten::allclose(Tensor self, Tensor b, float rtol, float atol, bool equal_nan) -> bool",
      allclose, a, b, rtol, atol, equal_nan);
  Tensor c = isclose(a, b, rtol, atol, equal_nan);
  if (c.numel() == 0) return true;
  Tensor r = to_device(all(c), Device());
  return *reinterpret_cast<const bool*>(r.data_ptr());
}

Tensor isposinf(const Tensor& a) {
  EMBER_TRACE("aten::isposinf(Tensor self) -> Tensor", isposinf, a);
  if (!is_floating(a.dtype())) return zeros(a.sizes(), DType::Bool, a.device());
  return bin(B::logical_and, un(U::isinf, a), bin(B::gt, a, S(0.0)));
}
Tensor isneginf(const Tensor& a) {
  EMBER_TRACE("aten::isneginf(Tensor self) -> Tensor", isneginf, a);
  if (!is_floating(a.dtype())) return zeros(a.sizes(), DType::Bool, a.device());
  return bin(B::logical_and, un(U::isinf, a), bin(B::lt, a, S(0.0)));
}
Tensor isreal(const Tensor& a) {
  EMBER_TRACE("aten::isreal(Tensor self) -> Tensor", isreal, a);
  return full(a.sizes(), Scalar(true), DType::Bool, a.device());
}

Tensor signbit(const Tensor& a) {
  EMBER_TRACE("aten::signbit(Tensor self) -> Tensor", signbit, a);
  if (!is_floating(a.dtype())) {
    if (a.dtype() == DType::Bool || a.dtype() == DType::UInt8)
      return zeros(a.sizes(), DType::Bool, a.device());
    return bin(B::lt, a, SI(0));
  }
  autograd::GradModeGuard no_grad(false);
  // -0.0 has 1/x == -inf.
  Tensor negzero =
      bin(B::logical_and, bin(B::eq, a, S(0.0)), bin(B::lt, un(U::reciprocal, a), S(0.0)));
  return bin(B::logical_or, bin(B::lt, a, S(0.0)), negzero);
}

Tensor sgn(const Tensor& a) {
  EMBER_TRACE("aten::sgn(Tensor self) -> Tensor", sgn, a);
  return un(U::sign, a);
}

Tensor positive(const Tensor& a) {
  EMBER_TRACE("aten::positive(Tensor self) -> Tensor", positive, a);
  EMBER_CHECK(a.dtype() != DType::Bool, "The `+` operator, on a bool tensor is not supported.");
  return a;
}

Tensor heaviside(const Tensor& a, const Tensor& values) {
  EMBER_TRACE("aten::heaviside(Tensor self, Tensor values) -> Tensor", heaviside, a, values);
  EMBER_CHECK(a.dtype() == values.dtype(),
              "heaviside is not yet implemented for tensors with different dtypes");
  Tensor one = full(Shape{}, Scalar(int64_t(1)), a.dtype(), a.device());
  Tensor zero = zeros(Shape{}, a.dtype(), a.device());
  return where(bin(B::eq, a, SI(0)), values, where(bin(B::gt, a, SI(0)), one, zero));
}

Tensor copysign(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::copysign(Tensor self, Tensor b) -> Tensor", copysign, a, b);
  DType t = float_result(a, b);
  Tensor x = as_dtype(a, t);
  Tensor neg_b = signbit(b);
  Tensor mag = un(U::abs, x);
  return where(neg_b, un(U::neg, mag), mag);
}

// C99's hypot: scaled by the larger magnitude, so hypot(1e200, 1e200) does not overflow;
// an infinite operand gives inf even when the other is NaN (hypot(inf, nan) == inf).
Tensor hypot(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::hypot(Tensor self, Tensor b) -> Tensor", hypot, a, b);
  floating_only("hypot", a, b);
  Tensor ax = un(U::abs, a), ay = un(U::abs, b);
  Tensor m = bin(B::maximum, ax, ay), n = bin(B::minimum, ax, ay);
  Tensor q = bin(B::div, n, where(bin(B::eq, m, S(0.0)), S(1.0), m));
  Tensor r = bin(B::mul, m, un(U::sqrt, bin(B::add, S(1.0), bin(B::mul, q, q))));
  Tensor any_inf = bin(B::logical_or, un(U::isinf, a), un(U::isinf, b));
  return where(any_inf, S(std::numeric_limits<double>::infinity()), r);
}

Tensor logaddexp(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::logaddexp(Tensor self, Tensor b) -> Tensor", logaddexp, a, b);
  floating_only("logaddexp", a, b);
  Tensor m = bin(B::maximum, a, b);
  // Equal infinities would give inf - inf; there the answer is the infinity itself.
  Tensor same_inf = bin(B::logical_and, un(U::isinf, a), bin(B::eq, a, b));
  Tensor d = where(same_inf, S(0.0), bin(B::sub, a, b));
  Tensor r = bin(B::add, m, un(U::log1p, un(U::exp, un(U::neg, un(U::abs, d)))));
  return where(same_inf, m, r);
}

Tensor logaddexp2(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::logaddexp2(Tensor self, Tensor b) -> Tensor", logaddexp2, a, b);
  floating_only("logaddexp2", a, b);
  Tensor m = bin(B::maximum, a, b);
  Tensor same_inf = bin(B::logical_and, un(U::isinf, a), bin(B::eq, a, b));
  Tensor d = where(same_inf, S(0.0), bin(B::sub, a, b));
  Tensor r =
      bin(B::add, m,
          bin(B::div, un(U::log1p, un(U::exp2, un(U::neg, un(U::abs, d)))), S(std::log(2.0))));
  return where(same_inf, m, r);
}

Tensor xlogy(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::xlogy(Tensor self, Tensor b) -> Tensor", xlogy, a, b);
  DType t = float_result(a, b);
  Tensor x = as_dtype(a, t), y = as_dtype(b, t);
  Tensor xz = bin(B::eq, x, S(0.0));
  Tensor safe_y = where(xz, S(1.0), y);
  Tensor r = where(xz, S(0.0), bin(B::mul, x, un(U::log, safe_y)));
  return where(un(U::isnan, y), y, r);
}

Tensor logit(const Tensor& a, std::optional<double> eps) {
  EMBER_TRACE("aten::logit(Tensor self, float? eps) -> Tensor", logit, a, eps);
  Tensor x = as_dtype(a, float_result(a));
  if (eps) x = clamp(x, S(*eps), S(1.0 - *eps));
  return un(U::log, bin(B::div, x, bin(B::sub, S(1.0), x)));
}

Tensor sinc(const Tensor& a) {
  EMBER_TRACE("aten::sinc(Tensor self) -> Tensor", sinc, a);
  Tensor x = as_dtype(a, float_result(a));
  Tensor z = bin(B::eq, x, S(0.0));
  Tensor px = bin(B::mul, where(z, S(1.0), x), S(M_PI));
  return where(z, S(1.0), bin(B::div, un(U::sin, px), px));
}

Tensor deg2rad(const Tensor& a) {
  EMBER_TRACE("aten::deg2rad(Tensor self) -> Tensor", deg2rad, a);
  return bin(B::mul, as_dtype(a, float_result(a)), S(M_PI / 180.0));
}
Tensor rad2deg(const Tensor& a) {
  EMBER_TRACE("aten::rad2deg(Tensor self) -> Tensor", rad2deg, a);
  return bin(B::mul, as_dtype(a, float_result(a)), S(180.0 / M_PI));
}

Tensor float_power(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::float_power(Tensor self, Tensor b) -> Tensor", float_power, a, b);
  Tensor x = as_dtype(a, DType::Float64), y = as_dtype(b, DType::Float64);
  return bin(B::pow, x, y);
}

Tensor fmax(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::fmax(Tensor self, Tensor b) -> Tensor", fmax, a, b);
  Tensor m = bin(B::maximum, a, b);
  if (!is_floating(m.dtype())) return m;
  return where(un(U::isnan, b), as_dtype(a, m.dtype()),
               where(un(U::isnan, a), as_dtype(b, m.dtype()), m));
}

Tensor fmin(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::fmin(Tensor self, Tensor b) -> Tensor", fmin, a, b);
  Tensor m = bin(B::minimum, a, b);
  if (!is_floating(m.dtype())) return m;
  return where(un(U::isnan, b), as_dtype(a, m.dtype()),
               where(un(U::isnan, a), as_dtype(b, m.dtype()), m));
}

Tensor gcd(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::gcd(Tensor self, Tensor b) -> Tensor", gcd, a, b);
  integral_only("gcd", a, b);
  DType t = result_type(a, b);
  // In int64: |-128| does not fit int8 (abs there is -128 again, and gcd(-3, -128) came out
  // -1); the gcd of the magnitudes does fit t unless it is t's own |min|.
  Tensor x = un(U::abs, as_dtype(a, DType::Int64)), y = un(U::abs, as_dtype(b, DType::Int64));
  Shape shape = bin(B::add, x, y).sizes();
  x = contiguous(expand(x, shape));
  y = contiguous(expand(y, shape));
  // Euclid's algorithm, all elements at once: at most ~90 rounds for 64-bit values.
  for (int iter = 0; iter < 200; ++iter) {
    Tensor nz = bin(B::ne, y, SI(0));
    Tensor more = to_device(any(nz), Device());
    if (!*reinterpret_cast<const bool*>(more.data_ptr())) break;
    Tensor r = where(nz,
                     bin(B::remainder, x,
                         where(nz, y, full(Shape{}, Scalar(int64_t(1)), DType::Int64, y.device()))),
                     y);
    x = where(nz, y, x);
    y = r;
  }
  return as_dtype(x, t);
}

Tensor lcm(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::lcm(Tensor self, Tensor b) -> Tensor", lcm, a, b);
  integral_only("lcm", a, b);
  Tensor g = gcd(a, b);
  DType t = g.dtype();
  Tensor one = full(Shape{}, Scalar(int64_t(1)), t, g.device());
  Tensor gz = bin(B::eq, g, SI(0));
  Tensor q = bin(B::floor_divide, as_dtype(a, t), where(gz, one, g));
  return where(gz, zeros(Shape{}, t, g.device()), un(U::abs, bin(B::mul, q, as_dtype(b, t))));
}

// Shifts as PyTorch: a shift by >= the bit width (or a negative one) gives 0
// (or -1 for a negative value shifted right).
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::bitwise_left_shift(Tensor self, Tensor b) -> Tensor", bitwise_left_shift, a,
              b);
  integral_only("lshift", a, b);
  DType t = result_type(a, b);
  int bits = bits_of(t);
  Tensor s = as_dtype(b, t);
  Tensor bad = bin(B::logical_or, bin(B::lt, s, SI(0)), bin(B::ge, s, SI(bits)));
  Tensor sc = where(bad, zeros(Shape{}, t, s.device()), s);
  Tensor p = bin(B::pow, full(Shape{}, Scalar(int64_t(2)), t, s.device()), sc);
  Tensor r = bin(B::mul, as_dtype(a, t), p);
  return where(bad, zeros(Shape{}, t, s.device()), r);
}

Tensor bitwise_right_shift(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::bitwise_right_shift(Tensor self, Tensor b) -> Tensor", bitwise_right_shift, a,
              b);
  integral_only("rshift", a, b);
  DType t = result_type(a, b);
  int bits = bits_of(t);
  Tensor s = as_dtype(b, t), x = as_dtype(a, t);
  Tensor bad = bin(B::logical_or, bin(B::lt, s, SI(0)), bin(B::ge, s, SI(bits - 1)));
  Tensor sc = where(bad, full(Shape{}, Scalar(int64_t(0)), t, s.device()), s);
  Tensor p = bin(B::pow, full(Shape{}, Scalar(int64_t(2)), t, s.device()), sc);
  Tensor r = bin(B::floor_divide, x, p);
  // A shift by bits-1 or more leaves only the sign: 0 or -1.
  Tensor sign_only = where(bin(B::lt, x, SI(0)), full(Shape{}, Scalar(int64_t(-1)), t, s.device()),
                           zeros(Shape{}, t, s.device()));
  return where(bad, sign_only, r);
}

Tensor clamp_min(const Tensor& a, const Tensor& min) {
  EMBER_TRACE("aten::clamp_min(Tensor self, Tensor min) -> Tensor", clamp_min, a, min);
  return clamp(a, min, std::nullopt);
}
Tensor clamp_max(const Tensor& a, const Tensor& max) {
  EMBER_TRACE("aten::clamp_max(Tensor self, Tensor max) -> Tensor", clamp_max, a, max);
  return clamp(a, std::nullopt, max);
}

Tensor ldexp(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::ldexp(Tensor self, Tensor b) -> Tensor", ldexp, a, b);
  DType t = float_result(a, b);
  return bin(B::mul, as_dtype(a, t), un(U::exp2, as_dtype(b, t)));
}

std::pair<Tensor, Tensor> frexp(const Tensor& a) {
  EMBER_TRACE("aten::frexp(Tensor self) -> (Tensor, Tensor)", frexp, a);
  EMBER_CHECK(is_floating(a.dtype()), "ember.frexp() only supports floating-point dtypes");
  autograd::GradModeGuard no_grad(false);
  Tensor fin = bin(B::logical_and, un(U::isfinite, a), bin(B::ne, a, S(0.0)));
  Tensor safe = where(fin, un(U::abs, as_dtype(a, DType::Float64)), S(1.0));
  Tensor e = bin(B::add, un(U::floor, un(U::log2, safe)), S(1.0));
  Tensor m = bin(B::div, as_dtype(a, DType::Float64), un(U::exp2, e));
  // log2 rounding can leave |m| at exactly 1 or just below 0.5: fix up by one step.
  Tensor hi = bin(B::ge, un(U::abs, m), S(1.0));
  e = where(hi, bin(B::add, e, S(1.0)), e);
  m = where(hi, bin(B::mul, m, S(0.5)), m);
  Tensor lo = bin(B::logical_and, fin, bin(B::lt, un(U::abs, m), S(0.5)));
  e = where(lo, bin(B::sub, e, S(1.0)), e);
  m = where(lo, bin(B::mul, m, S(2.0)), m);
  Tensor mant = where(fin, as_dtype(m, a.dtype()), a);
  Tensor ex = to_dtype(where(fin, e, S(0.0)), DType::Int32);
  return {mant, ex};
}

Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value) {
  EMBER_TRACE("aten::addcmul(Tensor self, Tensor t1, Tensor t2, Scalar value) -> Tensor", addcmul,
              self, t1, t2, value);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("addcmul", {self, t1, t2});
    autocast::ExcludeGuard g_;
    return addcmul(c_[0], c_[1], c_[2], value);
  }
  Tensor p = bin(B::mul, t1, t2);
  if (value.to_double() != 1.0 || value.is_floating()) p = bin(B::mul, p, wrap_scalar(value));
  return bin(B::add, self, p);
}

Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value) {
  EMBER_TRACE("aten::addcdiv(Tensor self, Tensor t1, Tensor t2, Scalar value) -> Tensor", addcdiv,
              self, t1, t2, value);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("addcdiv", {self, t1, t2});
    autocast::ExcludeGuard g_;
    return addcdiv(c_[0], c_[1], c_[2], value);
  }
  EMBER_CHECK(
      is_floating(t1.dtype()) || is_floating(t2.dtype()),
      "Integer division with addcdiv is no longer supported, and in a future release addcdiv "
      "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can "
      "be implemented as (input + value * ember.trunc(tensor1 / tensor2)).to(input.dtype) for "
      "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
      "addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), "
      "for all dtypes.");
  Tensor p = bin(B::div, t1, t2);
  if (value.to_double() != 1.0 || value.is_floating()) p = bin(B::mul, p, wrap_scalar(value));
  return bin(B::add, self, p);
}

}  // namespace ember

namespace ember {

Tensor polygamma(int64_t n, const Tensor& x) {
  EMBER_TRACE("aten::polygamma(int n, Tensor x) -> Tensor", polygamma, n, x);
  EMBER_CHECK(n >= 0, "polygamma(n, x) does not support negative n.");
  Tensor xf =
      x.dtype() == DType::Bool || !is_floating(x.dtype()) ? to_dtype(x, default_dtype()) : x;
  if (n == 0) return unary(UnaryOp::digamma, xf);
  // zeta(s, x) = sum_{k<N} (x+k)^-s + a^(1-s)/(s-1) + a^-s/2 + sum_j B2j/(2j)! s(s+1)..(s+2j-2)
  // a^(-s-2j+1), a = x + N: with N = 12 and six Bernoulli terms the tail is below 1e-15 for x > -3.
  const double s = double(n) + 1;
  const int N = 12;
  auto P = [](const Tensor& b, double e) {
    return binary(BinaryOp::pow, b, wrap_scalar(Scalar(e)));
  };
  auto add = [](const Tensor& a, const Tensor& b) { return binary(BinaryOp::add, a, b); };
  auto scale = [](const Tensor& a, double c) {
    return binary(BinaryOp::mul, a, wrap_scalar(Scalar(c)));
  };
  Tensor acc = P(xf, -s);
  for (int k = 1; k < N; ++k) acc = add(acc, P(add(xf, wrap_scalar(Scalar(double(k)))), -s));
  Tensor a = add(xf, wrap_scalar(Scalar(double(N))));
  acc = add(acc, scale(P(a, 1 - s), 1.0 / (s - 1)));
  acc = add(acc, scale(P(a, -s), 0.5));
  const double b2j[6] = {1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730};
  double fact2j = 1, rising = 1;
  for (int j = 1; j <= 6; ++j) {
    fact2j *= double(2 * j - 1) * double(2 * j);
    rising *= (j == 1) ? s : (s + 2 * j - 3) * (s + 2 * j - 2);
    acc = add(acc, scale(P(a, -s - 2 * j + 1), b2j[j - 1] / fact2j * rising));
  }
  double nfact = 1;
  for (int64_t i = 2; i <= n; ++i) nfact *= double(i);
  return scale(acc, (n % 2 == 1 ? 1.0 : -1.0) * nfact);
}

Tensor mvlgamma(const Tensor& x, int64_t p) {
  EMBER_TRACE("aten::mvlgamma(Tensor self, int p) -> Tensor", mvlgamma, x, p);
  EMBER_CHECK(p >= 1, "p has to be greater than or equal to 1");
  Tensor xf = is_floating(x.dtype()) ? x : to_dtype(x, default_dtype());
  {
    autograd::GradModeGuard no_grad(false);
    Tensor ok = to_device(all(binary(BinaryOp::gt, xf, wrap_scalar(Scalar(0.5 * double(p - 1))))),
                          Device());
    EMBER_CHECK(xf.numel() == 0 || *reinterpret_cast<const bool*>(ok.data_ptr()),
                "All elements must be greater than (p-1)/2");
  }
  Tensor acc = unary(UnaryOp::lgamma, xf);
  for (int64_t j = 1; j < p; ++j)
    acc = binary(
        BinaryOp::add, acc,
        unary(UnaryOp::lgamma, binary(BinaryOp::sub, xf, wrap_scalar(Scalar(0.5 * double(j))))));
  return binary(BinaryOp::add, acc,
                wrap_scalar(Scalar(double(p) * double(p - 1) / 4.0 * std::log(M_PI))));
}

}  // namespace ember

namespace ember {

Tensor nextafter(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::nextafter(Tensor self, Tensor b) -> Tensor", nextafter, a, b);
  DType t = result_type(a, b);
  EMBER_CHECK_KIND(ErrorKind::NotImplemented, t == DType::Float32 || t == DType::Float64,
                   "\"nextafter_cpu\" not implemented for '", dtype_name(t), "'");
  autograd::GradModeGuard no_grad(false);
  using B = BinaryOp;
  using U = UnaryOp;
  auto S = [](double v) { return wrap_scalar(Scalar(v)); };
  Tensor x = a.dtype() == t ? a : to_dtype(a, t), y = b.dtype() == t ? b : to_dtype(b, t);
  Shape shape = binary(B::add, x, y).sizes();
  x = contiguous(expand(x, shape));
  y = contiguous(expand(y, shape));
  const int mant = t == DType::Float64 ? 53 : 24;
  const double tiny = t == DType::Float64 ? std::ldexp(1.0, -1074) : std::ldexp(1.0, -149);
  // |x| = m 2^e with m in [0.5, 1): one step away from zero is 2^(e - mant); toward zero the
  // same, except at a power of two (m == 0.5), where the spacing below is half as large.
  Tensor ax = unary(U::abs, x);
  auto [m, e] = frexp(where(binary(B::eq, ax, S(0.0)), S(1.0), ax));
  Tensor ef = to_dtype(e, DType::Float64);
  Tensor up = unary(U::exp2, binary(B::sub, ef, S(double(mant))));
  Tensor down = where(binary(B::eq, m, S(0.5)), binary(B::mul, up, S(0.5)), up);
  up = to_dtype(binary(B::maximum, up, S(tiny)), t);
  down = to_dtype(binary(B::maximum, down, S(tiny)), t);
  Tensor away = binary(B::eq, binary(B::gt, y, x), binary(B::gt, x, S(0.0)));
  Tensor mag = where(away, binary(B::add, ax, up), binary(B::sub, ax, down));
  Tensor r = where(binary(B::lt, x, S(0.0)), unary(U::neg, mag), mag);
  // From zero: the smallest subnormal toward y.
  auto T0 = [&](double v) { return scalar_tensor(Scalar(v), t, x.device()); };
  Tensor from_zero = where(binary(B::gt, y, S(0.0)), T0(tiny), T0(-tiny));
  r = where(binary(B::eq, x, S(0.0)), from_zero, r);
  // From an infinity toward y: the largest finite value of its sign.
  Tensor big = where(binary(B::gt, x, S(0.0)), T0(finfo_max(t)), T0(-finfo_max(t)));
  r = where(unary(U::isinf, x), big, r);
  r = where(binary(B::eq, x, y), y, r);
  Tensor nan = binary(B::logical_or, unary(U::isnan, x), unary(U::isnan, y));
  return where(nan, binary(B::add, x, y), r);
}

}  // namespace ember
