#include "ember/autograd/functions.h"

#include <algorithm>

#include "ember/autograd/grad_mode.h"
#include "ember/ops/ops.h"
#include "ember/ops/reduce.h"
#include "ember/ops/view.h"

namespace ember::autograd {

// ---- AccumulateGrad -----------------------------------------------------------------------

AccumulateGrad::AccumulateGrad(const Tensor& t) : leaf(t.impl_ptr()) {
  sequence_nr = UINT64_MAX;  // leaves run last among ready nodes
}

Tensor AccumulateGrad::variable() const { return Tensor(leaf.lock()); }

variable_list AccumulateGrad::apply(variable_list&& grads) {
  Tensor var = variable();
  if (!var.defined() || !grads[0].defined()) return {};
  Tensor g = grads[0];
  AutogradMetaImpl* m = materialize_meta(var);
  for (auto& hook : m->hooks) {
    Tensor r = hook(g);
    if (r.defined()) g = r;
  }
  if (g.is_sparse() || (m->grad.defined() && m->grad.is_sparse())) {
    // Sparse gradients (Note [Sparse gradients]): a first one is kept (a shallow copy, or a
    // clone when others hold it); sparse + sparse accumulates in place; a strided sum with a
    // sparse grad is strided, so it replaces the grad, as PyTorch's AccumulateGrad.
    if (!m->grad.defined()) {
      bool own = g.impl_ptr().use_count() <= 2 && !meta(g);
      m->grad = grad_enabled() ? g : (own ? detach(g) : clone(detach(g)));
    } else if (m->grad.is_sparse() && !g.is_sparse()) {
      m->grad = binary(BinaryOp::add, g, m->grad);  // strided + sparse (add(sparse, dense) raises)
    } else if (grad_enabled()) {
      m->grad = binary(BinaryOp::add, m->grad, g);
    } else {
      binary_(BinaryOp::add, m->grad, g);
    }
    return {};
  }
  if (!m->grad.defined()) {
    // Own the gradient: never keep a broadcast view or a buffer someone else holds.
    bool own = g.is_contiguous() && g.impl_ptr().use_count() <= 2 && !meta(g);
    m->grad = grad_enabled() ? g : (own ? detach(g) : clone(detach(g)));
  } else if (grad_enabled()) {
    m->grad = binary(BinaryOp::add, m->grad, g);  // create_graph: keep the sum differentiable
  } else {
    binary_(BinaryOp::add, m->grad, g);
  }
  run_post_accumulate_hooks(var, *m);
  return {};
}

void run_post_accumulate_hooks(const Tensor& var, AutogradMetaImpl& m) {
  auto& hooks = m.post_accumulate_hooks;
  if (hooks.empty()) return;
  hooks.erase(std::remove_if(hooks.begin(), hooks.end(), [](auto& h) { return !*h.alive; }),
              hooks.end());
  // By index and on a copy of each: a hook may register another one.
  for (size_t i = 0; i < hooks.size(); ++i) {
    PostAccumulateGradHook h = hooks[i];
    if (*h.alive) h.fn(var);
  }
}

// ---- CopySlices ------------------------------------------------------------------------------

CopySlices::CopySlices(const Tensor& base, const Tensor& view, std::shared_ptr<Node> f)
    : base_sizes(base.sizes()),
      base_strides(base.strides()),
      view_sizes(view.sizes()),
      view_strides(view.strides()),
      base_offset(base.storage_offset()),
      view_offset(view.storage_offset()),
      dtype(base.dtype()),
      device(base.device()),
      fn(std::move(f)) {
  next_edges.push_back(gradient_edge(base));
  for (size_t i = 1; i < fn->next_edges.size(); ++i) next_edges.push_back(fn->next_edges[i]);
  add_input_meta(base);
  // The base's storage extent, to lay the gradient out like the base.
  storage_elems_ = int64_t(base.storage()->nbytes) / base.element_size();
}

variable_list CopySlices::apply(variable_list&& grads) {
  Tensor grad = grads[0];
  variable_list out(next_edges.size());
  if (!grad.defined()) return out;
  // The base's gradient, laid out like the base so the view's geometry applies.
  Tensor flat = zeros(Shape{storage_elems_}, dtype, device);
  Tensor result = as_strided(flat, base_sizes, base_strides, base_offset);
  copy_(result, grad);
  Tensor slice = as_strided(flat, view_sizes, view_strides, view_offset);
  variable_list res = fn->apply({clone(slice)});
  if (res.size() > 0 && res[0].defined())
    copy_(slice, res[0]);
  else
    fill_(slice, Scalar(0.0));
  out[0] = result;
  for (size_t i = 1; i < next_edges.size() && i < res.size(); ++i) out[i] = res[i];
  return out;
}

// ---- helpers for formulas --------------------------------------------------------------------

Tensor sum_to_size(const Tensor& grad, const Shape& sizes) {
  if (grad.sizes() == sizes) return grad;
  int64_t lead = grad.dim() - int64_t(sizes.size());
  Shape dims;
  for (int64_t i = 0; i < grad.dim(); ++i) {
    if (i < lead) {
      dims.push_back(i);
    } else if (sizes[i - lead] == 1 && grad.sizes()[i] != 1) {
      dims.push_back(i);
    }
  }
  Tensor r = dims.empty() ? grad : sum(grad, dims, /*keepdim=*/true);
  if (lead > 0 || r.sizes() != sizes) r = reshape(r, sizes);
  return r;
}

Tensor cast_grad(const Tensor& grad, DType dtype) {
  if (!grad.defined() || grad.dtype() == dtype) return grad;
  return to_dtype(grad, dtype);
}

std::shared_ptr<LambdaNode> record(const char* name, std::initializer_list<const Tensor*> inputs,
                                   const Tensor& out, LambdaNode::Fn fn) {
  auto node = std::make_shared<LambdaNode>(name, std::move(fn));
  node->next_edges = collect_next_edges(inputs);
  node->add_input_meta(out);
  set_history(out, node, 0);
  return node;
}

std::shared_ptr<LambdaNode> record_multi(const char* name, const std::vector<Tensor>& inputs,
                                         const std::vector<Tensor>& outs, LambdaNode::Fn fn) {
  auto node = std::make_shared<LambdaNode>(name, std::move(fn));
  node->next_edges = collect_next_edges(inputs);
  for (size_t i = 0; i < outs.size(); ++i) {
    node->add_input_meta(outs[i]);
    set_history(outs[i], node, uint32_t(i));
  }
  return node;
}

}  // namespace ember::autograd
