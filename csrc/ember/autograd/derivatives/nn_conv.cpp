// Derivatives of the convolution family, written with the family's own
// differentiable primitives so that create_graph=True works to any order.
#include "ember/autograd/derivatives/nn_conv.h"

#include <tuple>

#include "ember/autograd/grad_mode.h"
#include "ember/autograd/record.h"
#include "ember/ops/ops.h"
#include "ember/ops/reduce.h"

namespace ember::autograd {

// Note [Convolution gradients]
// A convolution is bilinear: y = F(x, w) (+ bias). Its two adjoints are
//   B_in(gy, w) = the gradient in x   (col2im of W^T gy: a transposed convolution)
//   B_w(x, gy)  = the gradient in w   (gy cols(x)^T)
// and since all three are bilinear in their operands, each one's gradient is made
// of the other two:
//   d F(x, w):      dx = B_in(g, w),   dw = B_w(x, g)
//   d B_in(gy, w):  dgy = F(g, w),     dw = B_w(g, gy)
//   d B_w(x, gy):   dx = B_in(gy, g),  dgy = F(x, g)
// (from <g, F(x, w)> = <B_in(g, w), x> = <B_w(x, g), w>). A transposed convolution
// is B_in itself, so it needs nothing more. Bias gradients are sums over all but
// the channel dim.

namespace {

Tensor bias_grad(const Tensor& g) {
  Shape dims{0};
  for (int64_t d = 2; d < g.dim(); ++d) dims.push_back(d);
  return sum(g, dims);
}

void save_conv_if(LambdaNode& n, const Tensor& t, bool needed) {
  n.saved.emplace_back(needed ? t : Tensor(), false);
}

}  // namespace

void record_conv_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvSpec& s,
                         const Tensor& y) {
  auto node = record(
      "ConvolutionBackward0", {&x, &w, &bias}, y,
      [s](LambdaNode& n, variable_list&& g) -> variable_list {
        Tensor gx, gw, gb;
        // one dense copy of grad_output for every gradient (y.sum().backward() hands
        // an expanded one: the bias sum over its zero strides was 10x a dense sum)
        g[0] = contiguous(g[0]);
        if (!grad_enabled() && n.should_compute_output(0) && n.should_compute_output(1)) {
          // no graph to build: both gradients in one pass
          std::tie(gx, gw) = detail::conv_backward_both_raw(n.unpack(0), n.unpack(1), g[0], s);
          if (n.should_compute_output(2)) gb = bias_grad(g[0]);
          return {gx, gw, gb};
        }
        if (n.should_compute_output(0))
          gx = conv_backward_input(g[0], n.unpack(1), Tensor(), s, "ConvolutionBackwardBackward0");
        if (n.should_compute_output(1)) gw = conv_backward_weight(n.unpack(0), g[0], s);
        if (n.should_compute_output(2)) gb = bias_grad(g[0]);
        return {gx, gw, gb};
      });
  // x is read by the weight gradient, w by the input gradient (and both by the fused path)
  save_conv_if(*node, x, node->should_compute_output(1));
  save_conv_if(*node, w, node->should_compute_output(0));
}

void record_conv_backward_input(const Tensor& gy, const Tensor& w, const Tensor& bias,
                                const ConvSpec& s, const Tensor& gx, const char* name) {
  auto node =
      record(name, {&gy, &w, &bias}, gx, [s](LambdaNode& n, variable_list&& g) -> variable_list {
        Tensor ggy, gw, gb;
        if (n.should_compute_output(0)) ggy = conv_forward(g[0], n.unpack(1), Tensor(), s);
        if (n.should_compute_output(1)) gw = conv_backward_weight(g[0], n.unpack(0), s);
        if (n.should_compute_output(2)) gb = bias_grad(g[0]);
        return {ggy, gw, gb};
      });
  save_conv_if(*node, gy, node->should_compute_output(1));
  save_conv_if(*node, w, node->should_compute_output(0));
}

void record_conv_backward_weight(const Tensor& x, const Tensor& gy, const ConvSpec& s,
                                 const Tensor& gw) {
  auto node = record("ConvolutionBackwardBackward0", {&x, &gy}, gw,
                     [s](LambdaNode& n, variable_list&& g) -> variable_list {
                       Tensor gx, ggy;
                       if (n.should_compute_output(0))
                         gx = conv_backward_input(n.unpack(1), g[0], Tensor(), s,
                                                  "ConvolutionBackwardBackward0");
                       if (n.should_compute_output(1))
                         ggy = conv_forward(n.unpack(0), g[0], Tensor(), s);
                       return {gx, ggy};
                     });
  save_conv_if(*node, x, node->should_compute_output(1));
  save_conv_if(*node, gy, node->should_compute_output(0));
}

void record_im2col(const Tensor& in, const Tensor& out, const Shape& input_hw, const Shape& kernel,
                   const Shape& dilation, const Shape& padding, const Shape& stride) {
  record("Im2ColBackward0", {&in}, out, [=](LambdaNode&, variable_list&& g) -> variable_list {
    return {col2im(g[0], input_hw, kernel, dilation, padding, stride)};
  });
}

void record_col2im(const Tensor& in, const Tensor& out, const Shape& kernel, const Shape& dilation,
                   const Shape& padding, const Shape& stride) {
  record("Col2ImBackward0", {&in}, out, [=](LambdaNode&, variable_list&& g) -> variable_list {
    return {im2col(g[0], kernel, dilation, padding, stride)};
  });
}

}  // namespace ember::autograd
