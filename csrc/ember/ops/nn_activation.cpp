// Activation front-ends. The pointwise activations run one fused kernel each
// (kernels/stubs/nn_activation.h) and record PyTorch's node (GeluBackward0, ...),
// whose backward is the fused first-derivative kernel; that in turn records a
// *BackwardBackward0 node with the second derivative in ember ops, so every order
// differentiates. The composites kept for integer inputs and kernel-less backends
// are written so that the branch a `where` does not take can never produce an inf
// or NaN (the unselected branch sees a safe input): its gradient is then exactly 0,
// not 0 * inf. softmax / log_softmax are fused kernels.
#include "ember/ops/nn_activation.h"
#include "ember/autograd/derivatives/formula.h"
#include "ember/jit/trace_hook.h"

#include <cmath>

#include "ember/autograd/derivatives/nn_activation.h"
#include "ember/autograd/record.h"
#include "ember/kernels/stubs/nn_activation.h"
#include "ember/ops/autocast.h"
#include "ember/ops/ops.h"
#include "ember/ops/reduce.h"
#include "ember/ops/view.h"

namespace ember {

DispatchStub<SoftmaxKernel> softmax_stub("softmax");
DispatchStub<SoftmaxBackwardKernel> softmax_backward_stub("softmax_backward");
DispatchStub<ActivationKernel> activation_stub("activation");
DispatchStub<ActivationBackwardKernel> activation_backward_stub("activation_backward");

namespace {
using B = BinaryOp;
using U = UnaryOp;
using namespace autograd::formula;  // S, plus, minus, mul, div, bin, un
Tensor gt(const Tensor& a, double v) { return binary(B::gt, a, S(v)); }
Tensor ge(const Tensor& a, double v) { return binary(B::ge, a, S(v)); }
Tensor lt(const Tensor& a, double v) { return binary(B::lt, a, S(v)); }
Tensor le(const Tensor& a, double v) { return binary(B::le, a, S(v)); }

/// Integer inputs compute in the default floating dtype (as the FLOAT ops).
Tensor floating(const Tensor& x, const char* op) {
  EMBER_CHECK(x.dtype() != DType::Bool, '"', op, "\" not implemented for 'Bool'");
  return is_floating(x.dtype()) ? x : to_dtype(x, default_dtype());
}
Tensor numeric(const Tensor& x, const char* op) {
  EMBER_CHECK(x.dtype() != DType::Bool, '"', op, "\" not implemented for 'Bool'");
  return x;
}

SoftmaxShape softmax_shape(const Tensor& x, int64_t d) {
  SoftmaxShape s;
  if (x.dim() == 0) return s;
  for (int64_t i = 0; i < d; ++i) s.outer *= x.sizes()[i];
  s.dim = x.sizes()[d];
  for (int64_t i = d + 1; i < x.dim(); ++i) s.inner *= x.sizes()[i];
  return s;
}

Tensor softmax_impl(const Tensor& x0, int64_t dim, std::optional<DType> dtype, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  if (dtype)
    EMBER_CHECK(is_floating(*dtype), op, "(): dtype must be a floating dtype, got ",
                dtype_name(*dtype));
  Tensor x = dtype && *dtype != x0.dtype() ? to_dtype(x0, *dtype) : x0;
  EMBER_CHECK(is_floating(x.dtype()), '"', op, "\" not implemented for '", dtype_name(x.dtype()),
              "' (pass dtype= or convert the input to a floating dtype)");
  const int64_t d = wrap_dim(dim, x.dim());
  autograd::RecordScope scope({&x});
  Tensor out = empty(x.sizes(), x.dtype(), x.device());
  if (x.numel() > 0) softmax_stub.get(x.device())(out, contiguous(x), softmax_shape(x, d), log);
  if (scope.rec) {
    scope.done();
    autograd::record_softmax(x, out, d, log);
  }
  return out;
}

Tensor softmax_backward_impl(const Tensor& g, const Tensor& y, int64_t dim, bool log) {
  const int64_t d = wrap_dim(dim, y.dim());
  if (autograd::compute_requires_grad({&g, &y})) {
    // Under create_graph: the same formula in recorded ops, so it differentiates again.
    OptDims dims = y.dim() ? OptDims(Shape{d}) : std::nullopt;
    if (log) return minus(g, mul(unary(U::exp, y), sum(g, dims, true)));
    return mul(y, minus(g, sum(mul(g, y), dims, true)));
  }
  Tensor gc = g.dtype() == y.dtype() ? g : to_dtype(g, y.dtype());
  gc = contiguous(expand(gc, y.sizes()));
  Tensor gx = empty(y.sizes(), y.dtype(), y.device());
  if (y.numel() > 0)
    softmax_backward_stub.get(y.device())(gx, gc, contiguous(y), softmax_shape(y, d), log);
  return gx;
}

}  // namespace

const Tensor& activation_(const Tensor& self, const char* name,
                          const std::function<Tensor(const Tensor&)>& f) {
  if (autograd::inplace_records(self, {})) return autograd::inplace_with_grad(self, name, true, f);
  Tensor r = f(self);
  check_result_cast(r.dtype(), self.dtype());
  copy_(self, r);
  return self;
}

// ---- the fused pointwise activations --------------------------------------------------

namespace {

/// The fused kernel runs for floating inputs on a device that has one; integer inputs
/// of the "numeric" ops (hardtanh, leaky_relu, hardshrink, threshold) and a backend
/// without the kernel use the composites below (same values, composite grad_fn).
bool fused(const Tensor& x) {
  return is_floating(x.dtype()) && activation_stub.fns[int(x.device().type)] != nullptr;
}

Tensor act_forward(Act act, const Tensor& x, ActParams p, const char* node,
                   bool save_result = false) {
  autograd::RecordScope scope({&x});
  Tensor out = empty(x.sizes(), x.dtype(), x.device());
  if (x.numel() > 0) {
    TensorIterator it({out, x}, 1, x.sizes());
    activation_stub.get(x.device())(it, act, p);
  }
  if (scope.rec) {
    scope.done();
    autograd::record_activation(act, p, node, x, out, save_result);
  }
  return out;
}

/// `name_`: in place without autograd; under autograd the out-of-place node rebased
/// onto self (Note [In-place ops under autograd]). With `save_result` the node saves
/// the result (PyTorch's *Backward1), else it reads a clone of self's old value.
const Tensor& act_inplace(Act act, const Tensor& self, ActParams p, const char* name,
                          const char* node, bool save_result,
                          const std::function<Tensor(const Tensor&)>& composite) {
  if (!fused(self)) return activation_(self, name, composite);
  if (autograd::inplace_records(self, {}))
    return autograd::inplace_with_grad(self, name, !save_result, [&](const Tensor& s) {
      return act_forward(act, s, p, node, save_result);
    });
  check_no_internal_overlap(self, name);
  if (self.numel() > 0) {
    TensorIterator it({self, self}, 1, self.sizes());
    activation_stub.get(self.device())(it, act, p);
  }
  self.bump_version(name);
  return self;
}

// The composites: integer inputs of the numeric ops, backends without the fused kernel.
namespace composite {

Tensor hardtanh(const Tensor& x, double lo, double hi) {
  // Strict inequalities for the gradient, as PyTorch's hardtanh_backward.
  return where(le(x, lo), S(lo), where(ge(x, hi), S(hi), x));
}
Tensor leaky_relu(const Tensor& x, double slope) { return where(gt(x, 0), x, mul(x, S(slope))); }
Tensor elu(const Tensor& x, double alpha, double scale, double input_scale) {
  Tensor pos = gt(x, 0);
  Tensor safe = where(pos, S(0.0), x);
  Tensor neg = mul(unary(U::expm1, mul(safe, S(input_scale))), S(alpha * scale));
  return where(pos, scale == 1 ? x : mul(x, S(scale)), neg);
}
Tensor gelu(const Tensor& x, bool tanh_form) {
  if (!tanh_form) return mul(mul(x, S(0.5)), plus(S(1.0), unary(U::erf, mul(x, S(M_SQRT1_2)))));
  const double k = std::sqrt(2.0 / M_PI);
  Tensor inner = mul(plus(x, mul(mul(mul(x, x), x), S(0.044715))), S(k));
  return mul(mul(x, S(0.5)), plus(S(1.0), unary(U::tanh, inner)));
}
Tensor silu(const Tensor& x) { return mul(x, unary(U::sigmoid, x)); }
Tensor softplus(const Tensor& x, double beta, double threshold) {
  Tensor z = mul(x, S(beta));
  Tensor big = gt(z, threshold);
  Tensor safe = where(big, S(0.0), z);
  Tensor soft = unary(U::log1p, unary(U::exp, safe));
  if (beta != 1) soft = div(soft, S(beta));
  return where(big, x, soft);
}
Tensor mish(const Tensor& x) { return mul(x, unary(U::tanh, composite::softplus(x, 1, 20))); }
Tensor hardsigmoid(const Tensor& x) {
  return where(le(x, -3), S(0.0), where(ge(x, 3), S(1.0), plus(div(x, S(6.0)), S(0.5))));
}
Tensor hardswish(const Tensor& x) {
  Tensor mid = div(mul(x, plus(x, S(3.0))), S(6.0));
  return where(lt(x, -3), S(0.0), where(le(x, 3), mid, x));
}
Tensor hardshrink(const Tensor& x, double l) {
  return where(binary(B::logical_and, ge(x, -l), le(x, l)), S(0.0), x);
}
Tensor softshrink(const Tensor& x, double l) {
  return where(gt(x, l), minus(x, S(l)), where(lt(x, -l), plus(x, S(l)), S(0.0)));
}
Tensor logsigmoid(const Tensor& x) {
  // min(x, 0) - log1p(exp(-|x|)): never overflows.
  Tensor m = binary(B::minimum, x, S(0.0));
  return minus(m, unary(U::log1p, unary(U::exp, unary(U::neg, unary(U::abs, x)))));
}
Tensor threshold(const Tensor& x, double th, double value) { return where(le(x, th), S(value), x); }

}  // namespace composite

constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

ActParams P(double a = 0, double b = 0, double c = 0) { return ActParams{a, b, c}; }

void check_hardtanh(double lo, double hi) {
  EMBER_CHECK(lo <= hi, "hardtanh: min_val (", lo, ") cannot be greater than max_val (", hi, ")");
}
void check_celu(double alpha) {
  EMBER_CHECK(alpha != 0, "ZeroDivisionError: celu(): alpha must not be 0");
}

}  // namespace

Tensor hardtanh(const Tensor& x0, double lo, double hi) {
  EMBER_TRACE("aten::hardtanh(Tensor self, float min_val=-1, float max_val=1) -> Tensor", hardtanh,
              x0, lo, hi);
  Tensor x = numeric(x0, "hardtanh");
  check_hardtanh(lo, hi);
  if (!fused(x)) return composite::hardtanh(x, lo, hi);
  return act_forward(Act::hardtanh, x, P(lo, hi), "HardtanhBackward0");
}

Tensor relu6(const Tensor& x) {
  EMBER_TRACE("aten::relu6(Tensor self) -> Tensor", relu6, x);
  return hardtanh(x, 0, 6);
}

Tensor leaky_relu(const Tensor& x0, double slope) {
  EMBER_TRACE("aten::leaky_relu(Tensor self, float slope=0.01) -> Tensor", leaky_relu, x0, slope);
  Tensor x = numeric(x0, "leaky_relu");
  if (!fused(x)) return composite::leaky_relu(x, slope);
  return act_forward(Act::leaky_relu, x, P(slope), "LeakyReluBackward0");
}

Tensor elu(const Tensor& x0, double alpha, double scale, double input_scale) {
  EMBER_TRACE("aten::elu(Tensor self, float alpha=1, float scale=1, float input_scale=1) -> Tensor",
              elu, x0, alpha, scale, input_scale);
  Tensor x = floating(x0, "elu");
  if (!fused(x)) return composite::elu(x, alpha, scale, input_scale);
  return act_forward(Act::elu, x, P(alpha, scale, input_scale), "EluBackward0");
}

Tensor selu(const Tensor& x) {
  EMBER_TRACE("aten::selu(Tensor self) -> Tensor", selu, x);
  return elu(x, kSeluAlpha, kSeluScale, 1);
}

Tensor celu(const Tensor& x0, double alpha) {
  EMBER_TRACE("aten::celu(Tensor self, float alpha=1) -> Tensor", celu, x0, alpha);
  check_celu(alpha);
  Tensor x = floating(x0, "celu");
  if (!fused(x)) return composite::elu(x, alpha, 1, 1 / alpha);
  return act_forward(Act::elu, x, P(alpha, 1, 1 / alpha), "CeluBackward0");
}

Tensor gelu(const Tensor& x0, const std::string& approximate) {
  EMBER_TRACE("aten::gelu(Tensor self, str approximate='none') -> Tensor", gelu, x0, approximate);
  EMBER_CHECK(approximate == "none" || approximate == "tanh",
              "approximate argument must be either none or tanh, got '", approximate, "'");
  Tensor x = floating(x0, "gelu");
  const bool tanh_form = approximate == "tanh";
  if (!fused(x)) return composite::gelu(x, tanh_form);
  return act_forward(tanh_form ? Act::gelu_tanh : Act::gelu, x, P(), "GeluBackward0");
}

Tensor silu(const Tensor& x0) {
  EMBER_TRACE("aten::silu(Tensor self) -> Tensor", silu, x0);
  Tensor x = floating(x0, "silu");
  if (!fused(x)) return composite::silu(x);
  return act_forward(Act::silu, x, P(), "SiluBackward0");
}

Tensor softplus(const Tensor& x0, double beta, double threshold) {
  EMBER_TRACE("aten::softplus(Tensor self, float beta=1, float threshold=20) -> Tensor", softplus,
              x0, beta, threshold);
  Tensor x = floating(x0, "softplus");
  if (!fused(x)) return composite::softplus(x, beta, threshold);
  return act_forward(Act::softplus, x, P(beta, threshold), "SoftplusBackward0");
}

Tensor mish(const Tensor& x0) {
  EMBER_TRACE("aten::mish(Tensor self) -> Tensor", mish, x0);
  Tensor x = floating(x0, "mish");
  if (!fused(x)) return composite::mish(x);
  return act_forward(Act::mish, x, P(), "MishBackward0");
}

Tensor hardsigmoid(const Tensor& x0) {
  EMBER_TRACE("aten::hardsigmoid(Tensor self) -> Tensor", hardsigmoid, x0);
  Tensor x = floating(x0, "hardsigmoid");
  if (!fused(x)) return composite::hardsigmoid(x);
  return act_forward(Act::hardsigmoid, x, P(), "HardsigmoidBackward0");
}

Tensor hardswish(const Tensor& x0) {
  EMBER_TRACE("aten::hardswish(Tensor self) -> Tensor", hardswish, x0);
  Tensor x = floating(x0, "hardswish");
  if (!fused(x)) return composite::hardswish(x);
  return act_forward(Act::hardswish, x, P(), "HardswishBackward0");
}

Tensor hardshrink(const Tensor& x0, double l) {
  EMBER_TRACE("aten::hardshrink(Tensor self, float lambd=0.5) -> Tensor", hardshrink, x0, l);
  Tensor x = numeric(x0, "hardshrink");
  if (!fused(x)) return composite::hardshrink(x, l);
  return act_forward(Act::hardshrink, x, P(l), "HardshrinkBackward0");
}

Tensor softshrink(const Tensor& x0, double l) {
  EMBER_TRACE("aten::softshrink(Tensor self, float lambd=0.5) -> Tensor", softshrink, x0, l);
  EMBER_CHECK(l >= 0, "lambda must be greater or equal to 0, but found to be ", l, ".");
  Tensor x = floating(x0, "softshrink");
  if (!fused(x)) return composite::softshrink(x, l);
  return act_forward(Act::softshrink, x, P(l), "SoftshrinkBackward0");
}

Tensor tanhshrink(const Tensor& x0) {
  EMBER_TRACE("aten::tanhshrink(Tensor self) -> Tensor", tanhshrink, x0);
  // A composite in PyTorch too (SubBackward0).
  Tensor x = floating(x0, "tanhshrink");
  return minus(x, unary(U::tanh, x));
}

Tensor softsign(const Tensor& x0) {
  EMBER_TRACE("aten::softsign(Tensor self) -> Tensor", softsign, x0);
  // A composite in PyTorch too (DivBackward0).
  Tensor x = floating(x0, "softsign");
  return div(x, plus(unary(U::abs, x), S(1.0)));
}

Tensor logsigmoid(const Tensor& x0) {
  EMBER_TRACE("aten::logsigmoid(Tensor self) -> Tensor", logsigmoid, x0);
  Tensor x = floating(x0, "log_sigmoid");
  if (!fused(x)) return composite::logsigmoid(x);
  return act_forward(Act::logsigmoid, x, P(), "LogSigmoidBackward0");
}

Tensor threshold(const Tensor& x0, double th, double value) {
  EMBER_TRACE("aten::threshold(Tensor self, float threshold, float value) -> Tensor", threshold, x0,
              th, value);
  Tensor x = numeric(x0, "threshold");
  if (!fused(x)) return composite::threshold(x, th, value);
  return act_forward(Act::threshold, x, P(th, value), "ThresholdBackward0");
}

// ---- in place: PyTorch's node of each `name_` ----------------------------------------

const Tensor& hardtanh_(const Tensor& x, double lo, double hi) {
  EMBER_TRACE("aten::hardtanh_(Tensor self, float min_val=-1, float max_val=1) -> Tensor",
              hardtanh_, x, lo, hi);
  numeric(x, "hardtanh_");
  check_hardtanh(lo, hi);
  return act_inplace(Act::hardtanh, x, P(lo, hi), "hardtanh_", "HardtanhBackward0", true,
                     [=](const Tensor& s) { return hardtanh(s, lo, hi); });
}
const Tensor& relu6_(const Tensor& x) {
  EMBER_TRACE("aten::relu6_(Tensor self) -> Tensor", relu6_, x);
  return hardtanh_(x, 0, 6);
}
const Tensor& leaky_relu_(const Tensor& x, double slope) {
  EMBER_TRACE("aten::leaky_relu_(Tensor self, float slope=0.01) -> Tensor", leaky_relu_, x, slope);
  numeric(x, "leaky_relu_");
  return act_inplace(Act::leaky_relu, x, P(slope), "leaky_relu_", "LeakyReluBackward1", true,
                     [=](const Tensor& s) { return leaky_relu(s, slope); });
}
const Tensor& elu_(const Tensor& x, double alpha, double scale, double input_scale) {
  EMBER_TRACE(
      "aten::elu_(Tensor self, float alpha=1, float scale=1, float input_scale=1) -> Tensor", elu_,
      x, alpha, scale, input_scale);
  numeric(x, "elu_");
  return act_inplace(Act::elu, x, P(alpha, scale, input_scale), "elu_", "EluBackward1", true,
                     [=](const Tensor& s) { return elu(s, alpha, scale, input_scale); });
}
const Tensor& selu_(const Tensor& x) {
  EMBER_TRACE("aten::selu_(Tensor self) -> Tensor", selu_, x);
  numeric(x, "selu_");
  return act_inplace(Act::elu, x, P(kSeluAlpha, kSeluScale, 1), "selu_", "EluBackward1", true,
                     [](const Tensor& s) { return selu(s); });
}
const Tensor& celu_(const Tensor& x, double alpha) {
  EMBER_TRACE("aten::celu_(Tensor self, float alpha=1) -> Tensor", celu_, x, alpha);
  numeric(x, "celu_");
  check_celu(alpha);
  return act_inplace(Act::elu, x, P(alpha, 1, 1 / alpha), "celu_", "CeluBackward1", true,
                     [=](const Tensor& s) { return celu(s, alpha); });
}
const Tensor& silu_(const Tensor& x) {
  EMBER_TRACE("aten::silu_(Tensor self) -> Tensor", silu_, x);
  numeric(x, "silu_");
  return act_inplace(Act::silu, x, P(), "silu_", "SiluBackward0", false,
                     [](const Tensor& s) { return silu(s); });
}
const Tensor& mish_(const Tensor& x) {
  EMBER_TRACE("aten::mish_(Tensor self) -> Tensor", mish_, x);
  numeric(x, "mish_");
  return act_inplace(Act::mish, x, P(), "mish_", "MishBackward0", false,
                     [](const Tensor& s) { return mish(s); });
}
const Tensor& hardsigmoid_(const Tensor& x) {
  EMBER_TRACE("aten::hardsigmoid_(Tensor self) -> Tensor", hardsigmoid_, x);
  numeric(x, "hardsigmoid_");
  return act_inplace(Act::hardsigmoid, x, P(), "hardsigmoid_", "HardsigmoidBackward0", false,
                     [](const Tensor& s) { return hardsigmoid(s); });
}
const Tensor& hardswish_(const Tensor& x) {
  EMBER_TRACE("aten::hardswish_(Tensor self) -> Tensor", hardswish_, x);
  numeric(x, "hardswish_");
  return act_inplace(Act::hardswish, x, P(), "hardswish_", "HardswishBackward0", false,
                     [](const Tensor& s) { return hardswish(s); });
}
const Tensor& threshold_(const Tensor& x, double th, double value) {
  EMBER_TRACE("aten::threshold_(Tensor self, float threshold, float value) -> Tensor", threshold_,
              x, th, value);
  numeric(x, "threshold_");
  return act_inplace(Act::threshold, x, P(th, value), "threshold_", "ThresholdBackward1", true,
                     [=](const Tensor& s) { return threshold(s, th, value); });
}

// ---- first derivatives -----------------------------------------------------------------

Tensor activation_backward(Act act, const Tensor& grad, const Tensor& x, ActParams p,
                           bool is_result) {
  if (is_result && act == Act::elu)
    EMBER_CHECK(p.a >= 0,
                "In-place elu backward calculation is triggered with a negative slope which is "
                "not supported. This is caused by calling in-place forward function with a "
                "negative slope, please call out-of-place version instead.");
  if (is_result && act == Act::leaky_relu)
    EMBER_CHECK(p.a >= 0,
                "In-place leakyReLu backward calculation is triggered with a negative slope "
                "which is not supported. This is caused by calling in-place forward function "
                "with a negative slope, please call out-of-place version instead.");
  const bool create_graph = autograd::compute_requires_grad({&grad, &x});
  // silu / mish differentiate their backward as a composite (PyTorch: MulBackward0).
  if (create_graph && act == Act::silu) {
    Tensor s = unary(U::sigmoid, x);
    return mul(grad, mul(s, plus(S(1.0), mul(x, minus(S(1.0), s)))));
  }
  if (create_graph && act == Act::mish) {
    Tensor s = unary(U::sigmoid, x);
    Tensor t = unary(U::tanh, softplus(x, 1, 20));
    return mul(grad, plus(t, mul(mul(x, s), minus(S(1.0), mul(t, t)))));
  }
  autograd::RecordScope scope({&grad, &x});
  Tensor g = grad.dtype() == x.dtype() ? grad : to_dtype(grad, x.dtype());
  Tensor gx = empty(x.sizes(), x.dtype(), x.device());
  if (x.numel() > 0) {
    TensorIterator it({gx, expand_to(g, x.sizes(), "activation_backward"), x}, 1, x.sizes());
    activation_backward_stub.get(x.device())(it, act, p, is_result);
  }
  if (scope.rec) {
    scope.done();
    autograd::record_activation_backward(act, p, is_result, grad, x, gx);
  }
  return gx;
}

Tensor prelu(const Tensor& x0, const Tensor& w) {
  EMBER_TRACE("aten::prelu(Tensor self, Tensor weight) -> Tensor", prelu, x0, w);
  Tensor x = floating(x0, "prelu");
  const int64_t n = w.numel();
  EMBER_CHECK(w.dim() <= 1,
              "prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = ", w.dim());
  Tensor wb = w;
  if (n != 1) {
    EMBER_CHECK(x.dim() >= 1, "prelu: Not allow zero-dim input tensor.");
    const int64_t channels = x.dim() >= 2 ? x.sizes()[1] : 1;
    EMBER_CHECK(n == channels,
                "Mismatch of parameter numbers and input channel size. Found parameter numbers = ",
                n, " and channel size = ", channels, ".");
    Shape s(size_t(x.dim()), 1);
    s[x.dim() >= 2 ? 1 : 0] = n;
    wb = reshape(w, s);
  } else if (w.dim() == 1) {
    wb = reshape(w, Shape{});
  }
  return where(gt(x, 0), x, mul(wb, x));
}

Tensor glu(const Tensor& x, int64_t dim) {
  EMBER_TRACE("aten::glu(Tensor self, int dim=-1) -> Tensor", glu, x, dim);
  EMBER_CHECK(x.dim() > 0, "glu does not support scalars because halving size must be even");
  const int64_t d = wrap_dim(dim, x.dim());
  const int64_t n = x.sizes()[d];
  EMBER_CHECK(n % 2 == 0, "Halving dimension must be even, but dimension ", d, " is size ", n);
  Tensor xf = floating(x, "glu");
  return mul(narrow(xf, d, 0, n / 2), unary(U::sigmoid, narrow(xf, d, n / 2, n / 2)));
}

Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  EMBER_TRACE("aten::softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", softmax, x,
              dim, dtype);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("softmax", {x});
    autocast::ExcludeGuard g_;
    return softmax(c_[0], dim, dtype);
  }
  return softmax_impl(x, dim, dtype, false);
}
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  EMBER_TRACE("aten::log_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",
              log_softmax, x, dim, dtype);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("log_softmax", {x});
    autocast::ExcludeGuard g_;
    return log_softmax(c_[0], dim, dtype);
  }
  return softmax_impl(x, dim, dtype, true);
}
Tensor softmax_backward_data(const Tensor& g, const Tensor& y, int64_t dim) {
  return softmax_backward_impl(g, y, dim, false);
}
Tensor log_softmax_backward_data(const Tensor& g, const Tensor& y, int64_t dim) {
  return softmax_backward_impl(g, y, dim, true);
}

}  // namespace ember
