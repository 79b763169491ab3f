// Activation front-ends. The parametrized activations are composites of the
// elementwise ops, written so that the branch a `where` does not take can never
// produce an inf or NaN (the unselected branch sees a safe input): its gradient
// is then exactly 0, not 0 * inf. softmax / log_softmax are fused kernels.
#include "ember/ops/nn_activation.h"

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

namespace {
using B = BinaryOp;
using U = UnaryOp;
Tensor S(double v) { return wrap_scalar(Scalar(v)); }
Tensor plus(const Tensor& a, const Tensor& b) { return binary(B::add, a, b); }
Tensor minus(const Tensor& a, const Tensor& b) { return binary(B::sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(B::mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(B::div, a, b); }
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

Tensor hardtanh(const Tensor& x0, double lo, double hi) {
  Tensor x = numeric(x0, "hardtanh");
  EMBER_CHECK(lo <= hi, "hardtanh: min_val (", lo, ") cannot be greater than max_val (", hi, ")");
  // Strict inequalities for the gradient, as PyTorch's hardtanh_backward.
  return where(le(x, lo), S(lo), where(ge(x, hi), S(hi), x));
}

Tensor relu6(const Tensor& x) { return hardtanh(x, 0, 6); }

Tensor leaky_relu(const Tensor& x0, double slope) {
  Tensor x = numeric(x0, "leaky_relu");
  return where(gt(x, 0), x, mul(x, S(slope)));
}

Tensor elu(const Tensor& x0, double alpha, double scale, double input_scale) {
  Tensor x = floating(x0, "elu");
  Tensor pos = gt(x, 0);
  Tensor safe = where(pos, S(0.0), x);
  Tensor neg = mul(unary(U::expm1, mul(safe, S(input_scale))), S(alpha * scale));
  return where(pos, scale == 1 ? x : mul(x, S(scale)), neg);
}

Tensor selu(const Tensor& x) {
  return elu(x, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946, 1);
}

Tensor celu(const Tensor& x, double alpha) {
  EMBER_CHECK(alpha != 0, "ZeroDivisionError: celu(): alpha must not be 0");
  return elu(x, alpha, 1, 1 / alpha);
}

Tensor gelu(const Tensor& x0, const std::string& approximate) {
  EMBER_CHECK(approximate == "none" || approximate == "tanh",
              "approximate argument must be either none or tanh, got '", approximate, "'");
  Tensor x = floating(x0, "gelu");
  if (approximate == "none")
    return mul(mul(x, S(0.5)), plus(S(1.0), unary(U::erf, mul(x, S(M_SQRT1_2)))));
  const double k = std::sqrt(2.0 / M_PI);
  Tensor inner = mul(plus(x, mul(mul(mul(x, x), x), S(0.044715))), S(k));
  return mul(mul(x, S(0.5)), plus(S(1.0), unary(U::tanh, inner)));
}

Tensor silu(const Tensor& x0) {
  Tensor x = floating(x0, "silu");
  return mul(x, unary(U::sigmoid, x));
}

Tensor softplus(const Tensor& x0, double beta, double threshold) {
  Tensor x = floating(x0, "softplus");
  Tensor z = mul(x, S(beta));
  Tensor big = gt(z, threshold);
  Tensor safe = where(big, S(0.0), z);
  Tensor soft = unary(U::log1p, unary(U::exp, safe));
  if (beta != 1) soft = div(soft, S(beta));
  return where(big, x, soft);
}

Tensor mish(const Tensor& x0) {
  Tensor x = floating(x0, "mish");
  return mul(x, unary(U::tanh, softplus(x, 1, 20)));
}

Tensor hardsigmoid(const Tensor& x0) {
  Tensor x = floating(x0, "hardsigmoid");
  return where(le(x, -3), S(0.0), where(ge(x, 3), S(1.0), plus(div(x, S(6.0)), S(0.5))));
}

Tensor hardswish(const Tensor& x0) {
  Tensor x = floating(x0, "hardswish");
  Tensor mid = div(mul(x, plus(x, S(3.0))), S(6.0));
  return where(lt(x, -3), S(0.0), where(le(x, 3), mid, x));
}

Tensor hardshrink(const Tensor& x0, double l) {
  Tensor x = numeric(x0, "hardshrink");
  return where(binary(B::logical_and, ge(x, -l), le(x, l)), S(0.0), x);
}

Tensor softshrink(const Tensor& x0, double l) {
  EMBER_CHECK(l >= 0, "lambda must be greater or equal to 0, but found to be ", l, ".");
  Tensor x = floating(x0, "softshrink");
  return where(gt(x, l), minus(x, S(l)), where(lt(x, -l), plus(x, S(l)), S(0.0)));
}

Tensor tanhshrink(const Tensor& x0) {
  Tensor x = floating(x0, "tanhshrink");
  return minus(x, unary(U::tanh, x));
}

Tensor softsign(const Tensor& x0) {
  Tensor x = floating(x0, "softsign");
  return div(x, plus(unary(U::abs, x), S(1.0)));
}

Tensor logsigmoid(const Tensor& x0) {
  Tensor x = floating(x0, "log_sigmoid");
  // min(x, 0) - log1p(exp(-|x|)): never overflows.
  Tensor m = binary(B::minimum, x, S(0.0));
  return minus(m, unary(U::log1p, unary(U::exp, unary(U::neg, unary(U::abs, x)))));
}

Tensor threshold(const Tensor& x0, double th, double value) {
  Tensor x = numeric(x0, "threshold");
  return where(le(x, th), S(value), x);
}

Tensor prelu(const Tensor& x0, const Tensor& w) {
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
  EMBER_CHECK(x.dim() > 0, "glu does not support scalars because halving size must be even");
  const int64_t d = wrap_dim(dim, x.dim());
  const int64_t n = x.sizes()[d];
  EMBER_CHECK(n % 2 == 0, "Halving dimension must be even, but dimension ", d, " is size ", n);
  Tensor xf = floating(x, "glu");
  return mul(narrow(xf, d, 0, n / 2), unary(U::sigmoid, narrow(xf, d, n / 2, n / 2)));
}

Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("softmax", {x});
    autocast::ExcludeGuard g_;
    return softmax(c_[0], dim, dtype);
  }
  return softmax_impl(x, dim, dtype, false);
}
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
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
