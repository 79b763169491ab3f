// Recording of the convolution family's nodes (ops/nn_conv.h); formulas in
// nn_conv.cpp (Note [Convolution gradients]).
#pragma once
#include "ember/core/tensor.h"
#include "ember/ops/nn_conv.h"

namespace ember::autograd {

void record_conv_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvSpec& s,
                         const Tensor& y);
void record_conv_backward_input(const Tensor& gy, const Tensor& w, const Tensor& bias,
                                const ConvSpec& s, const Tensor& gx, const char* name);
void record_conv_backward_weight(const Tensor& x, const Tensor& gy, const ConvSpec& s,
                                 const Tensor& gw);
/// Im2ColBackward0 / Col2ImBackward0: unfold and fold are each other's adjoint.
void record_im2col(const Tensor& in, const Tensor& out, const Shape& input_hw, const Shape& kernel,
                   const Shape& dilation, const Shape& padding, const Shape& stride);
void record_col2im(const Tensor& in, const Tensor& out, const Shape& kernel, const Shape& dilation,
                   const Shape& padding, const Shape& stride);

}  // namespace ember::autograd
