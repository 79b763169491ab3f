// Recording of the fused activation ops (derivatives/nn_activation.cpp).
#pragma once
#include "ember/core/tensor.h"
#include "ember/kernels/stubs/nn_activation.h"

namespace ember::autograd {

/// SoftmaxBackward0 / LogSoftmaxBackward0 on `out` = (log_)softmax(in, dim); saves out.
void record_softmax(const Tensor& in, const Tensor& out, int64_t dim, bool log);

/// `node` (GeluBackward0, EluBackward1, ...) on `out` = act(in); saves `in`, or `out`
/// when `save_result` (the in-place forms' *Backward1). Backward: activation_backward.
void record_activation(Act act, ActParams p, const char* node, const Tensor& in, const Tensor& out,
                       bool save_result);
/// *BackwardBackward0 on `gx` = activation_backward(grad, x): the gradient of grad is
/// activation_backward again, the gradient of x is grad * act''(x), in ember ops.
void record_activation_backward(Act act, ActParams p, bool is_result, const Tensor& grad,
                                const Tensor& x, const Tensor& gx);

}  // namespace ember::autograd
