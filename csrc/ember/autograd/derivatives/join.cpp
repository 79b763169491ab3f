// Derivatives of the joining/rearranging and sorting ops, written with ember
// ops so that create_graph=True differentiates them again.
#include "ember/autograd/derivatives/join.h"

#include <string>

#include "ember/autograd/record.h"
#include "ember/ops/index.h"
#include "ember/ops/join.h"
#include "ember/ops/reduce.h"
#include "ember/ops/view.h"

namespace ember::autograd {

// ---- cat / stack ---------------------------------------------------------------------

void record_cat(const std::vector<Tensor>& inputs, int64_t dim, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  std::vector<Shape> sizes;
  std::vector<DType> dtypes;
  for (const Tensor& t : inputs) {
    sizes.push_back(t.sizes());
    dtypes.push_back(t.dtype());
  }
  record_multi("CatBackward0", inputs, {out},
               [sizes, dtypes, dim](LambdaNode& n, variable_list&& gs) -> variable_list {
                 const Tensor& g = gs[0];
                 variable_list r(sizes.size());
                 int64_t offset = 0;
                 for (size_t i = 0; i < sizes.size(); ++i) {
                   // PyTorch legacy: a skipped 1-d empty input gets an empty gradient.
                   if (sizes[i].size() == 1 && sizes[i][0] == 0) {
                     if (n.should_compute_output(i)) r[i] = zeros(Shape{0}, dtypes[i], g.device());
                     continue;
                   }
                   int64_t len = sizes[i][size_t(dim)];
                   if (n.should_compute_output(i))
                     r[i] = cast_grad(narrow(g, dim, offset, len), dtypes[i]);
                   offset += len;
                 }
                 return r;
               });
}

void record_stack(const std::vector<Tensor>& inputs, int64_t dim, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  std::vector<DType> dtypes;
  for (const Tensor& t : inputs) dtypes.push_back(t.dtype());
  record_multi("StackBackward0", inputs, {out},
               [dtypes, dim](LambdaNode& n, variable_list&& gs) -> variable_list {
                 variable_list r(dtypes.size());
                 for (size_t i = 0; i < dtypes.size(); ++i)
                   if (n.should_compute_output(i))
                     r[i] = cast_grad(select(gs[0], dim, int64_t(i)), dtypes[i]);
                 return r;
               });
}

// ---- flip / roll / repeat --------------------------------------------------------------

void record_flip(const Tensor& self, const Shape& dims, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  record("FlipBackward0", {&self}, out,
         [dims](LambdaNode&, variable_list&& gs) -> variable_list { return {flip(gs[0], dims)}; });
}

void record_roll(const Tensor& self, const Shape& shifts, const Shape& dims, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  Shape back;
  for (int64_t s : shifts) back.push_back(-s);
  record("RollBackward0", {&self}, out,
         [back, dims](LambdaNode&, variable_list&& gs) -> variable_list {
           return {roll(gs[0], back, dims)};
         });
}

void record_repeat(const Tensor& self, const Shape& repeats, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  // The output seen as [r0, x0, r1, x1, ...]; sum over the r's.
  int64_t lead = int64_t(repeats.size()) - self.dim();
  Shape split, dims;
  for (int64_t i = 0; i < int64_t(repeats.size()); ++i) {
    split.push_back(repeats[i]);
    split.push_back(i < lead ? 1 : self.sizes()[i - lead]);
    dims.push_back(2 * i);
  }
  auto node = record("RepeatBackward0", {&self}, out,
                     [split, dims](LambdaNode& n, variable_list&& gs) -> variable_list {
                       Tensor g = reshape(gs[0], split);
                       if (!dims.empty()) g = sum(g, dims);
                       return {reshape(g, n.shape_a)};
                     });
  node->shape_a = self.sizes();
}

// ---- sort / topk / kthvalue -----------------------------------------------------------------

void record_value_selecting(const char* name, const Tensor& self, int64_t dim,
                            const Tensor& indices, bool squeezed, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  auto node = record(
      name, {&self}, out, [dim, squeezed](LambdaNode& n, variable_list&& gs) -> variable_list {
        Tensor g = gs[0];
        if (n.shape_a.empty()) {  // 0-d self: its one value was selected (or none, for k = 0)
          if (g.numel() == 1) return {reshape(g, Shape{})};
          return {zeros(Shape{}, g.dtype(), g.device())};
        }
        Tensor idx = n.unpack(0);
        if (squeezed) {
          g = unsqueeze(g, dim);
          idx = unsqueeze(idx, dim);
        }
        return {scatter(zeros(n.shape_a, g.dtype(), g.device()), dim, idx, g)};
      });
  node->shape_a = self.sizes();
  node->saved.emplace_back(indices, false);
}

void record_not_implemented(const char* name, const char* op, const Tensor& self,
                            const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  std::string what = op;
  record(name, {&self}, out, [what](LambdaNode&, variable_list&&) -> variable_list {
    raise(ErrorKind::NotImplemented, "the derivative for '", what, "' is not implemented.");
  });
}

}  // namespace ember::autograd
