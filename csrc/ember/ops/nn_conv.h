// Convolution front-ends: conv1d/2d/3d and their transposes (one N-d
// implementation, im2col + GEMM), and unfold/fold (im2col/col2im as ops).
#pragma once
#include <optional>
#include <string>
#include <utility>

#include "ember/core/tensor.h"
#include "ember/kernels/stubs/nn_conv.h"

namespace ember {

/// torch.nn.functional.conv{1,2,3}d and conv_transpose{1,2,3}d, with the number of
/// spatial dims taken from weight's: input [N, C, *spatial] or unbatched [C, *spatial].
/// `padding_lo`/`padding_hi` pad the start/end of each spatial dim (they differ for
/// padding='same' with an even dilated kernel). `op` names the op in errors ("conv2d").
Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                   const Shape& stride, const Shape& padding_lo, const Shape& padding_hi,
                   const Shape& dilation, bool transposed, const Shape& output_padding,
                   int64_t groups, const std::string& op);

/// What one convolution needs besides its operands: the im2col geometry, the
/// number of groups and spatial dims, and the channels of the GEMM's output side.
struct ConvSpec {
  ConvGeom g;
  int64_t groups = 1;
  int64_t nsp = 2;
  int64_t cout = 0;  // channels of y = conv(x, w): weight.size(0)
  Shape weight_sizes;
};

// The three bilinear primitives a convolution and all its derivatives are made of
// (Note [Convolution gradients] in autograd/derivatives/nn_conv.cpp). Each records
// a node whose formula uses the other two, so every order of derivative works.

/// y [N, cout, out...] = conv(x [N, C, in...], w) + bias.
Tensor conv_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvSpec& s);
/// gx [N, C, in...] = conv's adjoint in x applied to gy [N, cout, out...] (+ bias per C):
/// the transposed convolution.
Tensor conv_backward_input(const Tensor& gy, const Tensor& w, const Tensor& bias, const ConvSpec& s,
                           const char* node_name);
/// gw [cout, C/groups, k...] = conv's adjoint in w applied to gy, at x.
Tensor conv_backward_weight(const Tensor& x, const Tensor& gy, const ConvSpec& s);

/// Whether the device has a convolution engine loaded (oneDNN on the CPU: Note [oneDNN
/// convolution]); `ember.backends.mkldnn.is_available()`.
bool conv_engine_available(DeviceType type);

namespace detail {
/// Both gradients of y = conv(x, w) at once, without autograd (the backward of a
/// backward that does not create a graph): each chunk's grad_output is moved once.
std::pair<Tensor, Tensor> conv_backward_both_raw(const Tensor& x, const Tensor& w, const Tensor& gy,
                                                 const ConvSpec& s);
}  // namespace detail

/// torch.nn.functional.unfold: [N, C, H, W] (or [C, H, W]) -> [N, C*kh*kw, L].
Tensor im2col(const Tensor& input, const Shape& kernel_size, const Shape& dilation,
              const Shape& padding, const Shape& stride);
/// torch.nn.functional.fold: [N, C*kh*kw, L] (or unbatched) -> [N, C, oh, ow].
Tensor col2im(const Tensor& input, const Shape& output_size, const Shape& kernel_size,
              const Shape& dilation, const Shape& padding, const Shape& stride);

}  // namespace ember
