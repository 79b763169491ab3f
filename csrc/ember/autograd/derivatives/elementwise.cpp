// Derivatives of the elementwise ops in ops.def, written with ember ops so
// that create_graph=True differentiates them again.
#include <cmath>

#include "ember/autograd/derivatives/formula.h"
#include "ember/autograd/record.h"
#include "ember/ops/surface.h"
#include "ember/ops/view.h"

namespace ember::autograd {
namespace {

using B = BinaryOp;
using U = UnaryOp;

using namespace formula;
Tensor zeros_like_(const Tensor& a) { return zeros(a.sizes(), a.dtype(), a.device()); }

const char* unary_node_name(U op) {
  if (op == U::square) return "PowBackward0";  // square is pow(x, 2) in PyTorch
  if (op == U::log1p) return "Log1PBackward0";
  switch (op) {
#define EMBER_NAME(n, F, k) \
  case U::n:                \
    return #F "Backward0";
    EMBER_UNARY_OPS(EMBER_NAME)
#undef EMBER_NAME
    default: return "UnknownBackward0";
  }
}

// d out / d x given x (input) and y (output).
Tensor unary_grad(U op, const Tensor& g, const Tensor& x, const Tensor& y) {
  switch (op) {
    case U::neg: return neg(g);
    case U::abs: return mul(g, unary(U::sign, x));
    case U::sign: case U::floor: case U::ceil: case U::trunc: case U::round:
      return zeros_like_(g);
    case U::square: return mul(g, mul(x, S(2.0)));
    // where, not a 0/1 multiply: a NaN/inf incoming gradient stays out of the
    // zeroed positions, as PyTorch's threshold_backward.
    // Under create_graph the zeros come from y, so the gradient stays a function
    // of the input like PyTorch's (a Hessian of relu is 0, not an error).
    case U::relu:
      return where(binary(B::le, y, S(0.0)), grad_enabled() ? mul(y, S(0.0)) : S(0.0), g);
    case U::frac: return g;
    case U::exp: return mul(g, y);
    case U::exp2: return mul(g, mul(y, S(std::log(2.0))));
    case U::log: return div(g, x);
    case U::log1p: return div(g, plus(x, S(1.0)));
    case U::expm1: return mul(g, plus(y, S(1.0)));
    case U::log2: return div(g, mul(x, S(std::log(2.0))));
    case U::log10: return div(g, mul(x, S(std::log(10.0))));
    case U::sqrt: return div(g, mul(y, S(2.0)));
    case U::rsqrt: return mul(g, mul(binary(B::pow, y, S(3.0)), S(-0.5)));
    case U::reciprocal: return neg(mul(g, mul(y, y)));
    case U::sin: return mul(g, unary(U::cos, x));
    case U::cos: return neg(mul(g, unary(U::sin, x)));
    case U::tan: return mul(g, plus(mul(y, y), S(1.0)));
    case U::asin: return div(g, unary(U::sqrt, minus(S(1.0), mul(x, x))));
    case U::acos: return neg(div(g, unary(U::sqrt, minus(S(1.0), mul(x, x)))));
    case U::atan: return div(g, plus(mul(x, x), S(1.0)));
    case U::sinh: return mul(g, unary(U::cosh, x));
    case U::cosh: return mul(g, unary(U::sinh, x));
    case U::tanh: return mul(g, minus(S(1.0), mul(y, y)));
    case U::sigmoid: return mul(g, mul(y, minus(S(1.0), y)));
    case U::erf: return mul(g, mul(unary(U::exp, neg(mul(x, x))), S(2.0 / std::sqrt(M_PI))));
    case U::erfc: return mul(g, mul(unary(U::exp, neg(mul(x, x))), S(-2.0 / std::sqrt(M_PI))));
    case U::erfinv: return mul(g, mul(unary(U::exp, mul(y, y)), S(std::sqrt(M_PI) / 2.0)));
    case U::lgamma: return mul(g, unary(U::digamma, x));
    case U::digamma: return mul(g, polygamma(1, x));
    case U::i0: return mul(g, unary(U::special_i1, x));
    case U::special_i1: {
      // I1'(x) = I0(x) - I1(x) / x, with the limit 1/2 at x = 0.
      Tensor z = eq(x, S(0.0));
      Tensor safe = where(z, S(1.0), x);
      Tensor d = minus(unary(U::i0, x), div(unary(U::special_i1, safe), safe));
      return mul(g, where(z, S(0.5), d));
    }
    default: EMBER_ERROR("the derivative for '", op_name(op), "' is not implemented.");
  }
}

bool unary_uses_output(U op) {
  switch (op) {
    case U::relu: case U::exp: case U::exp2: case U::expm1: case U::sqrt: case U::rsqrt:
    case U::reciprocal: case U::tan: case U::tanh: case U::sigmoid: case U::erfinv:
      return true;
    default: return false;
  }
}

bool differentiable(U op) {
  switch (op) {
    case U::bitwise_not: case U::isnan: case U::isinf: case U::isfinite: case U::logical_not:
      return false;
    default: return true;
  }
}

// Overload numbers as PyTorch: 0 for a Python-number `other`, 1 for a tensor,
// 2 for pow(number, tensor); number - tensor is rsub(tensor, number).
const char* binary_node_name(B op, bool scalar_self, bool scalar_other) {
  switch (op) {
    case B::add: return "AddBackward0";
    case B::sub: return scalar_self ? "RsubBackward1" : "SubBackward0";  // 1 - x is rsub
    case B::mul: return "MulBackward0";
    case B::div: return "DivBackward0";
    case B::pow: return scalar_other ? "PowBackward0" : scalar_self ? "PowBackward2" : "PowBackward1";
    case B::atan2: return "Atan2Backward0";
    case B::maximum: return "MaximumBackward0";
    case B::minimum: return "MinimumBackward0";
    case B::remainder: return scalar_other ? "RemainderBackward0" : "RemainderBackward1";
    case B::fmod: return scalar_other ? "FmodBackward0" : "FmodBackward1";
    case B::floor_divide: return "FloorDivideBackward0";
    default: return nullptr;  // not differentiable
  }
}

}  // namespace

bool unary_needs_input(U op) { return differentiable(op) && !unary_uses_output(op) && op != U::neg && op != U::frac; }

bool binary_needs_self(B op) { return !(op == B::add || op == B::sub || op == B::floor_divide); }

void check_out_not_differentiable(const char* op, std::initializer_list<const Tensor*> inputs) {
  if (!compute_requires_grad(inputs)) return;
  EMBER_ERROR(op, "(): functions with out=... arguments don't support automatic differentiation, "
                  "but one of the arguments requires grad.");
}

void record_unary(U op, const Tensor& input, const Tensor& out) {
  if (!differentiable(op) || !is_floating(out.dtype())) return;
  bool uses_out = unary_uses_output(op);
  auto node = record(unary_node_name(op), {&input}, out,
                     [op, uses_out](LambdaNode& n, variable_list&& g) -> variable_list {
                       Tensor x = uses_out ? Tensor() : n.unpack(0);
                       Tensor y = uses_out ? n.unpack(0) : Tensor();
                       return {cast_grad(unary_grad(op, g[0], x, y), n.dtype_a)};
                     });
  node->dtype_a = input.dtype();
  if (uses_out) node->saved.emplace_back(out, true);
  else if (unary_needs_input(op)) node->saved.emplace_back(input, false);
  else node->saved.emplace_back();
}

void record_binary(B op, const Tensor& a, const Tensor& b, const Tensor& out) {
  bool scalar_b = b.impl()->wrapped_number;
  const char* name = binary_node_name(op, a.impl()->wrapped_number, scalar_b);
  if (!name || !is_floating(out.dtype())) return;
  auto node = record(name, {&a, &b}, out, [op](LambdaNode& n, variable_list&& gs) -> variable_list {
    Tensor g = gs[0];
    Tensor x = n.unpack(0), y = n.unpack(1);
    Tensor ga, gb;
    bool need_a = n.should_compute_output(0), need_b = n.should_compute_output(1);
    switch (op) {
      case B::add: ga = g; gb = g; break;
      case B::sub: ga = g; gb = need_b ? neg(g) : Tensor(); break;
      case B::mul:
        if (need_a) ga = mul(g, y);
        if (need_b) gb = mul(g, x);
        break;
      case B::div:
        if (need_a) ga = div(g, y);
        if (need_b) gb = neg(mul(g, div(div(x, y), y)));
        break;
      case B::pow: {
        if (need_a) {
          // d/dx x^y = y * x^(y-1); 0 where y == 0 (so 0^0 has a zero gradient). The
          // power uses exponent 1 there, so higher orders see no 0 * inf at x == 0.
          Tensor y1 = where(binary(B::eq, y, S(0.0)), S(1.0), y);
          Tensor d = mul(y, binary(B::pow, x, minus(y1, S(1.0))));
          ga = mul(g, where(binary(B::eq, y, S(0.0)), S(0.0), d));
        }
        if (need_b) {
          // d/dy x^y = x^y * log(x); 0 where x == 0 and y >= 0.
          Tensor d = mul(binary(B::pow, x, y), unary(U::log, x));
          Tensor zero = binary(B::logical_and, binary(B::eq, x, S(0.0)), binary(B::ge, y, S(0.0)));
          gb = mul(g, where(zero, S(0.0), d));
        }
        break;
      }
      case B::atan2: {
        Tensor denom = plus(mul(x, x), mul(y, y));
        if (need_a) ga = mul(g, div(y, denom));
        if (need_b) gb = mul(g, div(neg(x), denom));
        break;
      }
      case B::maximum: case B::minimum: {
        // Ties split the gradient evenly; where a NaN is compared both sides get
        // all of it (PyTorch masks out only the strictly losing side).
        // Selected with where, so a NaN/inf gradient does not leak into the zeros.
        B lose = op == B::maximum ? B::lt : B::gt;
        Tensor split = where(binary(B::eq, x, y), mul(g, S(0.5)), g);
        if (need_a) ga = where(binary(lose, x, y), S(0.0), split);
        if (need_b) gb = where(binary(lose, y, x), S(0.0), split);
        break;
      }
      case B::remainder:
        ga = g;
        if (need_b) gb = neg(mul(g, binary(B::floor_divide, x, y)));
        break;
      case B::fmod:
        ga = g;
        if (need_b) gb = neg(mul(g, unary(U::trunc, div(x, y))));
        break;
      case B::floor_divide:
        ga = zeros_like_(g);
        gb = zeros_like_(g);
        break;
      default: break;
    }
    if (ga.defined()) ga = cast_grad(sum_to_size(ga, n.shape_a), n.dtype_a);
    if (gb.defined()) gb = cast_grad(sum_to_size(gb, n.shape_b), n.dtype_b);
    return {ga, gb};
  });
  node->shape_a = a.sizes();
  node->shape_b = b.sizes();
  node->dtype_a = a.dtype();
  node->dtype_b = b.dtype();
  // Save only what the needed gradients read (as PyTorch): x * w with only x
  // requiring grad keeps w, so x may still be modified in place afterwards.
  bool ra = requires_grad(a), rb = requires_grad(b), keep_a = false, keep_b = false;
  switch (op) {
    case B::add: case B::sub: case B::floor_divide: break;
    case B::mul: keep_a = rb; keep_b = ra; break;
    case B::div: keep_a = rb; keep_b = true; break;
    case B::remainder: case B::fmod: keep_a = keep_b = rb; break;
    default: keep_a = keep_b = true; break;
  }
  node->saved.emplace_back(keep_a ? a : Tensor(), false);
  node->saved.emplace_back(keep_b ? b : Tensor(), false);
}

void record_where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  auto node = record("WhereBackward0", {&a, &b}, out, [](LambdaNode& n, variable_list&& gs) -> variable_list {
    Tensor c = n.unpack(0), z = zeros(Shape{}, gs[0].dtype(), gs[0].device());
    Tensor ga = n.should_compute_output(0) ? cast_grad(sum_to_size(where(c, gs[0], z), n.shape_a), n.dtype_a) : Tensor();
    Tensor gb = n.should_compute_output(1) ? cast_grad(sum_to_size(where(c, z, gs[0]), n.shape_b), n.dtype_b) : Tensor();
    return {ga, gb};
  });
  node->saved.emplace_back(cond, false);
  node->shape_a = a.sizes();
  node->shape_b = b.sizes();
  node->dtype_a = a.dtype();
  node->dtype_b = b.dtype();
}

void record_copy(const Tensor& dst, const Tensor& src) {
  auto node = std::make_shared<LambdaNode>("CopyBackwards", [](LambdaNode& n, variable_list&& gs) -> variable_list {
    Tensor g = gs[0];
    Tensor gdst = n.should_compute_output(0) ? zeros(g.sizes(), g.dtype(), g.device()) : Tensor();
    Tensor gsrc;
    if (n.should_compute_output(1)) {
      gsrc = cast_grad(sum_to_size(g, n.shape_b), n.dtype_b);
      if (gsrc.device() != n.device_b) gsrc = to_device(gsrc, n.device_b);
    }
    return {gdst, gsrc};
  });
  node->next_edges = collect_next_edges({&dst, &src});
  node->add_input_meta(dst);
  node->shape_b = src.sizes();
  node->dtype_b = src.dtype();
  node->device_b = src.device();
  rebase_history(dst, node);
}

void record_to_copy(const Tensor& in, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  auto node = record("ToCopyBackward0", {&in}, out, [](LambdaNode& n, variable_list&& gs) -> variable_list {
    Tensor g = cast_grad(gs[0], n.dtype_a);
    if (g.device() != n.device_b) g = to_device(g, n.device_b);
    return {g};
  });
  node->dtype_a = in.dtype();
  node->device_b = in.device();
}

void record_clone(const Tensor& in, const Tensor& out) {
  record("CloneBackward0", {&in}, out, [](LambdaNode&, variable_list&& gs) -> variable_list { return {gs[0]}; });
}

}  // namespace ember::autograd
