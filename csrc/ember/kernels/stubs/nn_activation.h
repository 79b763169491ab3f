// Kernel stubs of the activation family: the fused row-wise softmax / log_softmax and
// the fused pointwise activations (forward and first derivative).
#pragma once
#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/tensor_iterator.h"

namespace ember {

/// A contiguous tensor viewed as [outer, dim, inner], reduced over `dim`.
struct SoftmaxShape {
  int64_t outer = 1, dim = 1, inner = 1;
};

/// out <- softmax (log = false) or log_softmax (log = true) of `in` over the middle dim.
/// Both contiguous, same floating dtype, numel = outer * dim * inner; dim > 0.
using SoftmaxKernel = void (*)(const Tensor& out, const Tensor& in, SoftmaxShape s, bool log);
extern DispatchStub<SoftmaxKernel> softmax_stub;

/// gx <- y * (g - sum(g * y)) (softmax) or g - exp(y) * sum(g) (log_softmax), the sums over
/// the middle dim. gx, g, y contiguous, same dtype and shape.
using SoftmaxBackwardKernel = void (*)(const Tensor& gx, const Tensor& g, const Tensor& y,
                                       SoftmaxShape s, bool log);
extern DispatchStub<SoftmaxBackwardKernel> softmax_backward_stub;

}  // namespace ember

namespace ember {

/// The fused pointwise activations: one kernel slot each for the forward and the
/// first derivative, selected by `Act` (ops/nn_activation.cpp).
enum class Act : int {
  gelu,         // 0.5 x (1 + erf(x / sqrt 2))
  gelu_tanh,    // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
  silu,         // x sigmoid(x)
  softplus,     // a = beta, b = threshold
  mish,         // x tanh(softplus(x))
  elu,          // a = alpha, b = scale, c = input_scale
  leaky_relu,   // a = negative_slope
  hardtanh,     // a = min_val, b = max_val
  hardswish,    //
  hardsigmoid,  //
  logsigmoid,   //
  hardshrink,   // a = lambd
  softshrink,   // a = lambd
  threshold,    // a = threshold, b = value
  Count
};
struct ActParams {
  double a = 0, b = 0, c = 0;
};

/// out <- act(x). Operands (out, x) of one floating dtype; computes in opmath.
using ActivationKernel = void (*)(TensorIterator& it, Act act, ActParams p);
extern DispatchStub<ActivationKernel> activation_stub;
/// gx <- grad * act'(x). Operands (gx, grad, x), one floating dtype. With `is_result`
/// the third operand is the forward's result instead of its input (elu, leaky_relu,
/// hardtanh and threshold only: the in-place forms save their result).
using ActivationBackwardKernel = void (*)(TensorIterator& it, Act act, ActParams p, bool is_result);
extern DispatchStub<ActivationBackwardKernel> activation_backward_stub;

}  // namespace ember
