// Recording of view ops: the view relationship (for in-place ops through
// views, Note [Views and in-place]) and the view's backward node.
#include "ember/autograd/record.h"

namespace ember::autograd {

void record_view(const char* name, const Tensor& in, const Tensor& out, ViewGradFn fn) {
  if (!grad_enabled()) return;
  set_view_of(out, in);
  if (!requires_grad(in)) return;
  record(name, {&in}, out,
         [fn](LambdaNode&, variable_list&& g) -> variable_list { return {fn(g[0])}; });
  materialize_meta(out)->view_version = meta(out)->base.version();
}

void record_multi_view(const char* name, const Tensor& in, const std::vector<Tensor>& outs,
                       std::function<Tensor(const variable_list&)> fn) {
  if (!grad_enabled()) return;
  for (const Tensor& o : outs) set_view_of(o, in);
  if (!requires_grad(in) || outs.empty()) return;
  record_multi(name, {in}, outs,
               [fn](LambdaNode&, variable_list&& g) -> variable_list { return {fn(g)}; });
  for (const Tensor& o : outs) materialize_meta(o)->view_version = meta(o)->base.version();
}

}  // namespace ember::autograd
