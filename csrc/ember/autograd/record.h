// How an op front-end records autograd history (see Note [Recording]).
#pragma once
#include <optional>

#include "ember/autograd/functions.h"
#include "ember/autograd/grad_mode.h"
#include "ember/ops/ops.h"
#include "ember/ops/out.h"

namespace ember::autograd {

// Note [Recording]
// A differentiable primitive front-end opens a RecordScope over its inputs.
// When grad mode is on and an input requires grad, the scope turns grad mode
// off for the forward computation (so the helpers it calls record nothing),
// and the front-end then records one node for the whole op with a formula
// written in ember ops. Composites record nothing themselves: the primitives
// they call do. A front-end whose output does not depend differentiably on an
// input (integer or bool results) records nothing.
struct RecordScope {
  bool rec;
  std::optional<GradModeGuard> guard;
  explicit RecordScope(std::initializer_list<const Tensor*> inputs)
      : rec(compute_requires_grad(inputs)) {
    if (rec) guard.emplace(false);
  }
  explicit RecordScope(const std::vector<Tensor>& inputs) : rec(compute_requires_grad(inputs)) {
    if (rec) guard.emplace(false);
  }
  /// Ends the no-grad forward region; call before recording.
  void done() { guard.reset(); }
};

/// True when an in-place op on `self` (reading `others`) must record history.
inline bool inplace_records(const Tensor& self, std::initializer_list<const Tensor*> others) {
  if (!grad_enabled()) return false;
  if (requires_grad(self)) return true;
  for (const Tensor* t : others)
    if (t && requires_grad(*t)) return true;
  return false;
}

// Note [In-place ops under autograd]
// When an in-place op must record history, it runs as its out-of-place twin
// (on a recorded clone of self when the formula reads self's old value), the
// result is written back into self, and self's history is rebased onto the
// twin's node (CopySlices for views, see autograd/node.cpp). Without autograd
// the op runs in place directly.
template <typename F>
const Tensor& inplace_with_grad(const Tensor& self, const char* name, bool needs_self,
                                       F&& out_of_place) {
  check_inplace(self, name);
  Tensor src = needs_self ? clone(self) : self;
  Tensor r = out_of_place(src);
  {
    GradModeGuard no_grad(false);
    check_result_cast(r.dtype(), self.dtype());
    EMBER_CHECK(r.sizes() == self.sizes(), name, ": output with shape ", shape_str(self.sizes()),
                " doesn't match the broadcast shape ", shape_str(r.sizes()));
    copy_(self, r);
    VersionCounter& v = *self.impl()->version;
    if (v.watched) v.last_op = name;  // name the op, not the write-back copy
  }
  if (auto fn = grad_fn(r)) rebase_history(self, fn);
  return self;
}

/// Raises PyTorch's error for out= with inputs that require grad.
void check_out_not_differentiable(const char* op, std::initializer_list<const Tensor*> inputs);

/// Records the elementwise front-ends' nodes (derivatives/elementwise.cpp).
void record_unary(UnaryOp op, const Tensor& input, const Tensor& out);
void record_binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);
void record_where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out);
/// copy_(dst, src) under autograd: dst's old value gets no gradient, src gets grad.
void record_copy(const Tensor& dst, const Tensor& src);
/// A conversion (dtype/device) of `in` into `out`: ToCopyBackward0.
void record_to_copy(const Tensor& in, const Tensor& out);
void record_clone(const Tensor& in, const Tensor& out);
/// True when the backward formula of `op` reads its (first) input's value.
bool unary_needs_input(UnaryOp op);
bool binary_needs_self(BinaryOp op);

/// The gradient of a view's input from the gradient of the view.
using ViewGradFn = std::function<Tensor(const Tensor& grad)>;
/// Marks `out` as a view of `in` (grad mode on) and, when `in` requires grad,
/// records `name` (ViewBackward0, TBackward0, ...) with `grad_fn`.
void record_view(const char* name, const Tensor& in, const Tensor& out, ViewGradFn grad_fn);
/// A multi-output view op (unbind, split): `grad_fn` gets one gradient per
/// output (undefined where none arrived).
void record_multi_view(const char* name, const Tensor& in, const std::vector<Tensor>& outs,
                       std::function<Tensor(const variable_list&)> grad_fn);

}  // namespace ember::autograd
