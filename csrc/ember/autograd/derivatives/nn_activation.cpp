// Derivatives of the fused activations: softmax and log_softmax read only their
// output. The backward is the fused kernel, or under create_graph the same formula
// in recorded ops (ops/nn_activation.cpp, softmax_backward_data).
// The pointwise activations: the forward node's backward is the fused first
// derivative (activation_backward), which records the *BackwardBackward0 node below:
// its second derivatives are ember ops, so they differentiate again. Where a branch
// would overflow (exp of a large input) its input is replaced by a safe value first,
// so the untaken branch's gradient is exactly 0, never 0 * inf.
#include "ember/autograd/derivatives/nn_activation.h"

#include <cmath>

#include "ember/autograd/derivatives/formula.h"
#include "ember/autograd/record.h"
#include "ember/ops/nn_activation.h"

namespace ember::autograd {

void record_softmax(const Tensor& in, const Tensor& out, int64_t dim, bool log) {
  auto node = record(log ? "LogSoftmaxBackward0" : "SoftmaxBackward0", {&in}, out,
                     [dim, log](LambdaNode& n, variable_list&& g) -> variable_list {
                       Tensor y = n.unpack(0);
                       return {log ? log_softmax_backward_data(g[0], y, dim)
                                   : softmax_backward_data(g[0], y, dim)};
                     });
  node->saved.emplace_back(out, true);
}

namespace {

using namespace formula;
using B = BinaryOp;
using U = UnaryOp;

Tensor cmp(B op, const Tensor& x, double v) { return binary(op, x, S(v)); }
Tensor zeros_of(const Tensor& x) { return zeros(x.sizes(), x.dtype(), x.device()); }

const char* backward_backward_name(Act act) {
  switch (act) {
    case Act::gelu:
    case Act::gelu_tanh:
      return "GeluBackwardBackward0";
    case Act::softplus:
      return "SoftplusBackwardBackward0";
    case Act::elu:
      return "EluBackwardBackward0";
    case Act::leaky_relu:
      return "LeakyReluBackwardBackward0";
    case Act::hardtanh:
      return "HardtanhBackwardBackward0";
    case Act::hardswish:
      return "HardswishBackwardBackward0";
    case Act::hardsigmoid:
      return "HardsigmoidBackwardBackward0";
    case Act::logsigmoid:
      return "LogSigmoidBackwardBackward0";
    case Act::hardshrink:
      return "HardshrinkBackwardBackward0";
    case Act::softshrink:
      return "SoftshrinkBackwardBackward0";
    case Act::threshold:
      return "ThresholdBackwardBackward0";
    default:
      return "ActivationBackwardBackward0";
  }
}

/// d/dx of activation_backward(g, x) times gg: gg * g * act''(x) (x: the result when
/// is_result). Piecewise-linear activations have act'' = 0. silu and mish never get
/// here: their backward is a composite under create_graph.
Tensor second_derivative(Act act, ActParams p, bool is_result, const Tensor& gg, const Tensor& g,
                         const Tensor& x) {
  const Tensor ggg = mul(gg, g);
  switch (act) {
    case Act::gelu: {  // phi(x) (2 - x^2)
      Tensor pdf = mul(unary(U::exp, mul(mul(x, x), S(-0.5))), S(0.39894228040143267794));
      return mul(ggg, mul(pdf, minus(S(2.0), mul(x, x))));
    }
    case Act::gelu_tanh: {  // (1 - t^2) (u' - x t u'^2 + x u'' / 2), u = k (x + c x^3)
      const double k = 0.79788456080286535588, c = 0.044715;
      Tensor x2 = mul(x, x);
      Tensor t = unary(U::tanh, mul(plus(x, mul(mul(x2, x), S(c))), S(k)));
      Tensor du = mul(plus(S(1.0), mul(x2, S(3 * c))), S(k));
      Tensor d2u = mul(x, S(6 * c * k));
      Tensor inner = plus(minus(du, mul(mul(x, t), mul(du, du))), mul(mul(x, d2u), S(0.5)));
      return mul(ggg, mul(minus(S(1.0), mul(t, t)), inner));
    }
    case Act::softplus: {  // beta sigmoid(z) (1 - sigmoid(z)) where z = beta x <= threshold
      Tensor z = mul(x, S(p.a));
      Tensor big = cmp(B::gt, z, p.b);
      Tensor s = unary(U::sigmoid, where(big, S(0.0), z));
      return where(big, S(0.0), mul(ggg, mul(mul(s, minus(S(1.0), s)), S(p.a))));
    }
    case Act::elu: {  // a = alpha, b = scale, c = input_scale
      Tensor neg = cmp(B::le, x, 0);
      if (is_result)  // d/dy [g c (y + alpha scale)] = g c
        return where(neg, mul(ggg, S(p.c)), S(0.0));
      Tensor safe = where(neg, x, S(0.0));
      Tensor d = mul(unary(U::exp, mul(safe, S(p.c))), S(p.c * p.c * p.a * p.b));
      return where(neg, mul(ggg, d), S(0.0));
    }
    case Act::hardswish:  // 1/3 strictly inside (-3, 3)
      return where(land(cmp(B::gt, x, -3), cmp(B::lt, x, 3)), div(ggg, S(3.0)), S(0.0));
    case Act::logsigmoid: {  // -sigmoid(x) sigmoid(-x)
      Tensor s = unary(U::sigmoid, x);
      return neg(mul(ggg, mul(s, minus(S(1.0), s))));
    }
    case Act::leaky_relu:
    case Act::hardtanh:
    case Act::hardsigmoid:
    case Act::hardshrink:
    case Act::softshrink:
    case Act::threshold:
      return zeros_of(x);
    default:
      EMBER_ERROR("activation_backward: no recorded second derivative for activation ", int(act));
  }
}

}  // namespace

void record_activation(Act act, ActParams p, const char* node, const Tensor& in, const Tensor& out,
                       bool save_result) {
  auto nd = record(node, {&in}, out,
                   [act, p, save_result](LambdaNode& n, variable_list&& g) -> variable_list {
                     return {activation_backward(act, g[0], n.unpack(0), p, save_result)};
                   });
  nd->saved.emplace_back(save_result ? out : in, save_result);
}

void record_activation_backward(Act act, ActParams p, bool is_result, const Tensor& grad,
                                const Tensor& x, const Tensor& gx) {
  auto nd = record(backward_backward_name(act), {&grad, &x}, gx,
                   [act, p, is_result](LambdaNode& n, variable_list&& gs) -> variable_list {
                     Tensor g = n.unpack(0), x = n.unpack(1);
                     Tensor dgrad, dx;
                     if (n.should_compute_output(0))
                       dgrad = activation_backward(act, gs[0], x, p, is_result);
                     if (n.should_compute_output(1))
                       dx = second_derivative(act, p, is_result, gs[0], g, x);
                     return {dgrad, dx};
                   });
  nd->saved.emplace_back(grad, false);
  nd->saved.emplace_back(x, false);
}

}  // namespace ember::autograd
