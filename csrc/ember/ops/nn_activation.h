// Activation front-ends: the fused pointwise activations (one kernel each, PyTorch's
// node names, differentiable to any order) and the fused softmax / log_softmax.
// Each `name_` in-place form follows Note [In-place ops under autograd].
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "ember/core/tensor.h"
#include "ember/kernels/stubs/nn_activation.h"

namespace ember {

Tensor hardtanh(const Tensor& x, double min_val = -1, double max_val = 1);
Tensor relu6(const Tensor& x);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
/// scale * x for x > 0, else scale * alpha * (exp(x * input_scale) - 1) (elu/selu/celu).
Tensor elu(const Tensor& x, double alpha = 1, double scale = 1, double input_scale = 1);
Tensor selu(const Tensor& x);
Tensor celu(const Tensor& x, double alpha = 1);
/// approximate: "none" (erf form) or "tanh".
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
Tensor silu(const Tensor& x);
Tensor mish(const Tensor& x);
Tensor hardsigmoid(const Tensor& x);
Tensor hardswish(const Tensor& x);
Tensor hardshrink(const Tensor& x, double lambd = 0.5);
Tensor softshrink(const Tensor& x, double lambd = 0.5);
Tensor tanhshrink(const Tensor& x);
/// x where beta * x > threshold, else log(1 + exp(beta * x)) / beta.
Tensor softplus(const Tensor& x, double beta = 1, double threshold = 20);
Tensor softsign(const Tensor& x);
Tensor logsigmoid(const Tensor& x);
/// value where x <= threshold, else x.
Tensor threshold(const Tensor& x, double threshold, double value);
/// x for x > 0, else weight * x; weight has 1 or x.size(1) elements.
Tensor prelu(const Tensor& x, const Tensor& weight);
/// a * sigmoid(b) for the two halves a, b of x along `dim`.
Tensor glu(const Tensor& x, int64_t dim = -1);

/// In place, with PyTorch's nodes: elu_ / selu_ (EluBackward1), celu_ (CeluBackward1),
/// leaky_relu_ (LeakyReluBackward1) and threshold_ (ThresholdBackward1) save the result
/// (a negative alpha / slope then raises in backward, as PyTorch); the others save a
/// copy of the input.
const Tensor& hardtanh_(const Tensor& x, double min_val = -1, double max_val = 1);
const Tensor& relu6_(const Tensor& x);
const Tensor& leaky_relu_(const Tensor& x, double negative_slope = 0.01);
const Tensor& elu_(const Tensor& x, double alpha = 1, double scale = 1, double input_scale = 1);
const Tensor& selu_(const Tensor& x);
const Tensor& celu_(const Tensor& x, double alpha = 1);
const Tensor& silu_(const Tensor& x);
const Tensor& mish_(const Tensor& x);
const Tensor& hardsigmoid_(const Tensor& x);
const Tensor& hardswish_(const Tensor& x);
const Tensor& threshold_(const Tensor& x, double threshold, double value);

/// grad * act'(x), the fused first derivative (x: the forward's result when
/// `is_result`). Records PyTorch's *BackwardBackward0 node under create_graph
/// (silu / mish: the formula in recorded ops, as PyTorch's MulBackward0).
Tensor activation_backward(Act act, const Tensor& grad, const Tensor& x, ActParams p,
                           bool is_result = false);

/// Applies the out-of-place activation `name` to `self` in place.
const Tensor& activation_(const Tensor& self, const char* name,
                          const std::function<Tensor(const Tensor&)>& f);

/// Fused, numerically stable softmax over `dim`; with `dtype` the input is converted first.
Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
/// The gradients of softmax / log_softmax given the output y (fused; records its own
/// derivative under create_graph).
Tensor softmax_backward_data(const Tensor& grad, const Tensor& y, int64_t dim);
Tensor log_softmax_backward_data(const Tensor& grad, const Tensor& y, int64_t dim);

}  // namespace ember
