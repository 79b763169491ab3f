// Derivatives of the linear algebra ops (Note [Matmul gradients]), written with
// ember ops so that create_graph=True differentiates them again.
#include "ember/autograd/derivatives/linalg.h"

#include "ember/autograd/record.h"
#include "ember/ops/factory.h"
#include "ember/ops/linalg.h"
#include "ember/ops/view.h"

namespace ember::autograd {
namespace {

bool is_one(Scalar s) { return s.to_double() == 1.0; }

// grad * s, skipping the multiplication when s == 1 (PyTorch's maybe_multiply).
Tensor maybe_multiply(const Tensor& g, Scalar s) {
  return is_one(s) ? g : binary(BinaryOp::mul, g, wrap_scalar(s));
}

// Saves `t` when `needed`, else an empty slot (keeps unpack indices fixed).
void save_if(LambdaNode& n, const Tensor& t, bool needed) {
  n.saved.emplace_back(needed ? t : Tensor(), false);
}

// The gradient of the add forms' `input`: beta * grad summed back to its shape.
Tensor add_input_backward(const Tensor& g, Scalar beta, const Shape& input_sizes) {
  return sum_to_size(maybe_multiply(g, beta), input_sizes);
}

}  // namespace

// ---- named formulas -----------------------------------------------------------------------

Tensor mm_mat1_backward(const Tensor& grad, const Tensor& b, Scalar alpha) {
  return maybe_multiply(mm(grad, t(b)), alpha);
}

Tensor mm_mat2_backward(const Tensor& grad, const Tensor& a, Scalar alpha) {
  return maybe_multiply(mm(t(a), grad), alpha);
}

Tensor bmm_batch1_backward(const Tensor& grad, const Tensor& b, Scalar alpha) {
  return maybe_multiply(bmm(grad, transpose(b, 1, 2)), alpha);
}

Tensor bmm_batch2_backward(const Tensor& grad, const Tensor& a, Scalar alpha) {
  return maybe_multiply(bmm(transpose(a, 1, 2), grad), alpha);
}

Tensor trace_backward(const Tensor& grad, int64_t rows, int64_t cols) {
  // grad * I: differentiable in grad (MulBackward0), unlike a write into zeros.
  return binary(BinaryOp::mul, grad, eye(rows, cols, grad.dtype(), grad.device()));
}

// ---- record calls -------------------------------------------------------------------------

void record_mm(const Tensor& a, const Tensor& b, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  auto node =
      record("MmBackward0", {&a, &b}, out, [](LambdaNode& n, variable_list&& g) -> variable_list {
        Tensor ga, gb;
        if (n.should_compute_output(0))
          ga = mm_mat1_backward(g[0], n.unpack(1), Scalar(int64_t(1)));
        if (n.should_compute_output(1))
          gb = mm_mat2_backward(g[0], n.unpack(0), Scalar(int64_t(1)));
        return {ga, gb};
      });
  save_if(*node, a, node->should_compute_output(1));
  save_if(*node, b, node->should_compute_output(0));
}

void record_bmm(const Tensor& a, const Tensor& b, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  auto node =
      record("BmmBackward0", {&a, &b}, out, [](LambdaNode& n, variable_list&& g) -> variable_list {
        Tensor ga, gb;
        if (n.should_compute_output(0))
          ga = bmm_batch1_backward(g[0], n.unpack(1), Scalar(int64_t(1)));
        if (n.should_compute_output(1))
          gb = bmm_batch2_backward(g[0], n.unpack(0), Scalar(int64_t(1)));
        return {ga, gb};
      });
  save_if(*node, a, node->should_compute_output(1));
  save_if(*node, b, node->should_compute_output(0));
}

void record_mv(const Tensor& mat, const Tensor& vec, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  auto node = record("MvBackward0", {&mat, &vec}, out,
                     [](LambdaNode& n, variable_list&& g) -> variable_list {
                       Tensor gm, gv;
                       if (n.should_compute_output(0)) gm = outer(g[0], n.unpack(1));
                       if (n.should_compute_output(1)) gv = mv(t(n.unpack(0)), g[0]);
                       return {gm, gv};
                     });
  save_if(*node, mat, node->should_compute_output(1));
  save_if(*node, vec, node->should_compute_output(0));
}

void record_dot(const Tensor& a, const Tensor& b, const Tensor& out, bool vdot) {
  if (!is_floating(out.dtype())) return;
  auto fn = [](LambdaNode& n, variable_list&& g) -> variable_list {
    Tensor ga, gb;  // g[0] is 0-d: grad * other
    if (n.should_compute_output(0)) ga = binary(BinaryOp::mul, g[0], n.unpack(1));
    if (n.should_compute_output(1)) gb = binary(BinaryOp::mul, g[0], n.unpack(0));
    return {ga, gb};
  };
  auto node = record(vdot ? "VdotBackward0" : "DotBackward0", {&a, &b}, out, fn);
  save_if(*node, a, node->should_compute_output(1));
  save_if(*node, b, node->should_compute_output(0));
}

void record_addmm(const Tensor& input, const Tensor& mat1, const Tensor& mat2, Scalar beta,
                  Scalar alpha, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  auto node = record("AddmmBackward0", {&input, &mat1, &mat2}, out,
                     [beta, alpha](LambdaNode& n, variable_list&& g) -> variable_list {
                       Tensor gi, g1, g2;
                       if (n.should_compute_output(0))
                         gi = add_input_backward(g[0], beta, n.shape_a);
                       if (n.should_compute_output(1))
                         g1 = mm_mat1_backward(g[0], n.unpack(1), alpha);
                       if (n.should_compute_output(2))
                         g2 = mm_mat2_backward(g[0], n.unpack(0), alpha);
                       return {gi, g1, g2};
                     });
  node->shape_a = input.sizes();
  save_if(*node, mat1, node->should_compute_output(2));
  save_if(*node, mat2, node->should_compute_output(1));
}

void record_baddbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2, Scalar beta,
                    Scalar alpha, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  auto node = record("BaddbmmBackward0", {&input, &batch1, &batch2}, out,
                     [beta, alpha](LambdaNode& n, variable_list&& g) -> variable_list {
                       Tensor gi, g1, g2;
                       if (n.should_compute_output(0))
                         gi = add_input_backward(g[0], beta, n.shape_a);
                       if (n.should_compute_output(1))
                         g1 = bmm_batch1_backward(g[0], n.unpack(1), alpha);
                       if (n.should_compute_output(2))
                         g2 = bmm_batch2_backward(g[0], n.unpack(0), alpha);
                       return {gi, g1, g2};
                     });
  node->shape_a = input.sizes();
  save_if(*node, batch1, node->should_compute_output(2));
  save_if(*node, batch2, node->should_compute_output(1));
}

void record_addmv(const Tensor& input, const Tensor& mat, const Tensor& vec, Scalar beta,
                  Scalar alpha, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  auto node = record("AddmvBackward0", {&input, &mat, &vec}, out,
                     [beta, alpha](LambdaNode& n, variable_list&& g) -> variable_list {
                       Tensor gi, gm, gv;
                       if (n.should_compute_output(0))
                         gi = add_input_backward(g[0], beta, n.shape_a);
                       if (n.should_compute_output(1))
                         gm = maybe_multiply(outer(g[0], n.unpack(1)), alpha);
                       if (n.should_compute_output(2))
                         gv = maybe_multiply(mv(t(n.unpack(0)), g[0]), alpha);
                       return {gi, gm, gv};
                     });
  node->shape_a = input.sizes();
  save_if(*node, mat, node->should_compute_output(2));
  save_if(*node, vec, node->should_compute_output(1));
}

void record_tril_triu(const Tensor& input, bool upper, int64_t diagonal, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  record(upper ? "TriuBackward0" : "TrilBackward0", {&input}, out,
         [upper, diagonal](LambdaNode&, variable_list&& g) -> variable_list {
           return {upper ? triu(g[0], diagonal) : tril(g[0], diagonal)};
         });
}

void record_trace(const Tensor& input, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  const int64_t rows = input.sizes()[0], cols = input.sizes()[1];
  record("TraceBackward0", {&input}, out,
         [rows, cols](LambdaNode&, variable_list&& g) -> variable_list {
           return {trace_backward(g[0], rows, cols)};
         });
}

}  // namespace ember::autograd
