// Derivatives of the fused losses. nll: gx[i, t_i] = -coef_i. Cross entropy:
// gx[i] = coef_i * (softmax(x_i) - onehot(t_i)), through the fused kernel, or
// under create_graph through recorded softmax so it differentiates again.
// coef_i = incoming gradient (per row, or shared; / total weight for 'mean') * w[t_i].
#include "ember/autograd/derivatives/nn_loss.h"

#include "ember/autograd/derivatives/join.h"
#include "ember/autograd/record.h"
#include "ember/kernels/stubs/nn_loss.h"
#include "ember/ops/factory.h"
#include "ember/ops/nn_activation.h"
#include "ember/ops/view.h"

namespace ember::autograd {

Tensor nll_rows(const Tensor& input) {
  if (input.dim() == 1) return reshape(input, Shape{1, input.sizes()[0]});
  if (input.dim() == 2) return input;
  Tensor moved = movedim(input, Shape{1}, Shape{-1});
  int64_t rows = input.sizes()[0];
  for (int64_t d = 2; d < input.dim(); ++d) rows = checked_mul(rows, input.sizes()[d], "nll_loss");
  return reshape(moved, Shape{rows, input.sizes()[1]});
}

Tensor nll_unrows(const Tensor& rows, const Shape& in_sizes) {
  const int64_t nd = int64_t(in_sizes.size());
  if (nd <= 2) return reshape(rows, in_sizes);
  Shape moved{in_sizes[0]};
  for (int64_t d = 2; d < nd; ++d) moved.push_back(in_sizes[d]);
  moved.push_back(in_sizes[1]);
  return movedim(reshape(rows, moved), Shape{-1}, Shape{1});
}

void record_nll(const Tensor& input, const Tensor& weight, const Tensor& out, NllSaved s) {
  const Shape in_sizes = input.sizes();
  const bool ce = s.cross_entropy;
  auto node = record(
      ce ? "CrossEntropyLossBackward0" : "NllLossBackward0", {&input, &weight}, out,
      [s, in_sizes, ce](LambdaNode& n, variable_list&& g) -> variable_list {
        EMBER_CHECK(!n.should_compute_output(1), "the derivative for 'weight' is not implemented.");
        const int64_t M = s.target.numel();
        const int64_t C = in_sizes.size() == 1 ? in_sizes[0] : in_sizes[1];
        Tensor coef;
        if (s.reduction == Reduction::None)
          coef = reshape(g[0], Shape{M});
        else if (s.reduction == Reduction::Sum)
          coef = expand(reshape(g[0], Shape{1}), Shape{M});
        else
          coef = expand(reshape(binary(BinaryOp::div, g[0], s.total), Shape{1}), Shape{M});
        coef = binary(BinaryOp::mul, coef, s.wt);
        Tensor gx;
        if (ce && !grad_enabled()) {
          Tensor x = contiguous(nll_rows(n.unpack(0)));
          gx = empty(Shape{M, C}, x.dtype(), x.device());
          if (M > 0 && C > 0)
            cross_entropy_backward_stub.get(x.device())(gx, contiguous(coef), x, s.lse, s.target,
                                                        s.ignore_index);
        } else if (!ce && !grad_enabled() && nll_backward_stub.fns[int(s.target.device().type)]) {
          gx = empty(Shape{M, C}, coef.dtype(), coef.device());
          if (M > 0 && C > 0)
            nll_backward_stub.fns[int(s.target.device().type)](gx, contiguous(coef), s.target,
                                                               s.ignore_index);
        } else {
          Tensor cls = reshape(arange(Scalar(int64_t(0)), Scalar(C), Scalar(int64_t(1)),
                                      DType::Int64, s.target.device()),
                               Shape{1, C});
          Tensor onehot = binary(BinaryOp::eq, cls, unsqueeze(s.target, 1));
          Tensor c1 = unsqueeze(coef, 1);
          if (ce) {
            Tensor p = softmax(nll_rows(n.unpack(0)), 1);
            gx = binary(BinaryOp::mul, c1, binary(BinaryOp::sub, p, to_dtype(onehot, p.dtype())));
          } else {
            gx = where(onehot, unary(UnaryOp::neg, c1), wrap_scalar(Scalar(0.0)));
          }
        }
        return {nll_unrows(gx, in_sizes), Tensor()};
      });
  if (ce) node->saved.emplace_back(input, false);
}

void record_ctc(const Tensor& log_probs, const Tensor& lp, const Tensor& out, const Tensor& targets,
                const Tensor& offsets, const Tensor& in_lens, const Tensor& tgt_lens,
                const Tensor& nll, const Tensor& alpha, int64_t blank, bool zero_infinity) {
  const Shape in_sizes = log_probs.sizes();
  record("CtcLossBackward0", {&log_probs}, out,
         [=](LambdaNode&, variable_list&& g) -> variable_list {
           // d nll / d log_probs has no derivative of its own, as in PyTorch: under
           // create_graph it is recorded as a node that raises when differentiated. The
           // incoming gradient scales it per sample through recorded ops.
           Tensor G = empty(lp.sizes(), lp.dtype(), lp.device());
           ctc_backward_stub.get(lp.device())(G, lp, targets, offsets, in_lens, tgt_lens, nll,
                                              alpha, blank, zero_infinity);
           record_not_implemented("NotImplemented", "_ctc_loss_backward", log_probs,
                                  G);  // PyTorch's name
           const int64_t N = lp.sizes()[1];
           Tensor gx = binary(BinaryOp::mul, G, reshape(g[0], Shape{1, N, 1}));
           return {reshape(gx, in_sizes)};
         });
}

}  // namespace ember::autograd
