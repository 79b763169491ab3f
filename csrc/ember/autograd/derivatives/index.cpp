// Derivatives of the indexing ops (ops/index.h), written with ember ops so
// that create_graph=True differentiates them again. Index tensors are saved
// as SavedVariables: modifying one in place before backward raises.
#include "ember/autograd/derivatives/index.h"

#include "ember/autograd/record.h"
#include "ember/ops/index.h"
#include "ember/ops/reduce.h"
#include "ember/ops/view.h"

namespace ember::autograd {
namespace {

using Indices = std::vector<std::optional<Tensor>>;

Tensor zeros_like_shape(const Shape& sizes, const Tensor& like) {
  return zeros(sizes, like.dtype(), like.device());
}

void save_indices(LambdaNode& n, const Indices& idx) {
  for (const auto& o : idx) n.saved.emplace_back(o ? *o : Tensor(), false);
}

Indices unpack_indices(LambdaNode& n, size_t first, size_t count) {
  Indices r;
  for (size_t i = 0; i < count; ++i) {
    Tensor t = n.unpack(first + i);
    if (t.defined())
      r.emplace_back(t);
    else
      r.emplace_back();
  }
  return r;
}

/// The gradient of a gather/scatter `src` from the index-shaped `g`: PyTorch
/// returns g itself (and fails when src is larger than index); entries of src
/// that were never read get a zero gradient here.
Tensor pad_to(const Tensor& g, const Shape& sizes) {
  if (g.sizes() == sizes) return g;
  Tensor r = g;
  if (r.dim() != int64_t(sizes.size())) {  // 0-d index vs [n] src (or the reverse)
    Shape ones(sizes.size(), 1);
    r = reshape(r, ones);
    if (r.sizes() == sizes) return r;
  }
  Tensor z = zeros(sizes, g.dtype(), g.device());
  Tensor v = z;
  for (int64_t d = 0; d < r.dim(); ++d) v = narrow(v, d, 0, r.sizes()[d]);
  copy_(v, r);
  return z;
}

}  // namespace

void record_index(const Tensor& self, const Indices& indices, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  size_t k = indices.size();
  auto node = record(
      "IndexBackward0", {&self}, out, [k](LambdaNode& n, variable_list&& g) -> variable_list {
        Indices idx = unpack_indices(n, 0, k);
        return {index_put(zeros_like_shape(n.shape_a, g[0]), idx, g[0], /*accumulate=*/true)};
      });
  node->shape_a = self.sizes();
  save_indices(*node, indices);
}

void record_index_put(const Tensor& self, const Indices& indices, const Tensor& values,
                      bool accumulate, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  size_t k = indices.size();
  auto node =
      record("IndexPutBackward0", {&self, &values}, out,
             [k, accumulate](LambdaNode& n, variable_list&& gs) -> variable_list {
               const Tensor& g = gs[0];
               Indices idx = unpack_indices(n, 0, k);
               Tensor gself, gvalues;
               if (n.should_compute_output(0))
                 gself = accumulate ? g : index_put(g, idx, zeros_like_shape(Shape{}, g), false);
               if (n.should_compute_output(1))
                 gvalues = cast_grad(sum_to_size(index(g, idx), n.shape_b), n.dtype_b);
               return {gself, gvalues};
             });
  node->shape_b = values.sizes();
  node->dtype_b = values.dtype();
  save_indices(*node, indices);
}

void record_index_select(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  auto node =
      record("IndexSelectBackward0", {&self}, out,
             [dim](LambdaNode& n, variable_list&& g) -> variable_list {
               return {index_add(zeros_like_shape(n.shape_a, g[0]), dim, n.unpack(0), g[0])};
             });
  node->shape_a = self.sizes();
  node->saved.emplace_back(index, false);
}

void record_gather(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  auto node = record(
      "GatherBackward0", {&self}, out, [dim](LambdaNode& n, variable_list&& g) -> variable_list {
        return {scatter_add(zeros_like_shape(n.shape_a, g[0]), dim, n.unpack(0), g[0])};
      });
  node->shape_a = self.sizes();
  node->saved.emplace_back(index, false);
}

void record_scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src,
                    const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  auto fn = [dim](LambdaNode& n, variable_list&& gs) -> variable_list {
    const Tensor& g = gs[0];
    Tensor index = n.unpack(0);
    Tensor gself, gsrc;
    if (n.should_compute_output(0)) gself = scatter(g, dim, index, Scalar(0.0));
    if (n.should_compute_output(1)) gsrc = pad_to(gather(g, dim, index), n.shape_b);
    return {gself, gsrc};
  };
  auto node = src ? record("ScatterBackward0", {&self, src}, out, fn)
                  : record("ScatterBackward1", {&self}, out, fn);
  if (src) node->shape_b = src->sizes();
  node->saved.emplace_back(index, false);
}

void record_scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                        const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  auto node = record("ScatterAddBackward0", {&self, &src}, out,
                     [dim](LambdaNode& n, variable_list&& gs) -> variable_list {
                       const Tensor& g = gs[0];
                       Tensor gsrc;
                       if (n.should_compute_output(1))
                         gsrc = pad_to(gather(g, dim, n.unpack(0)), n.shape_b);
                       return {g, gsrc};
                     });
  node->shape_b = src.sizes();
  node->saved.emplace_back(index, false);
}

void record_index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                      Scalar alpha, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  double a = alpha.to_double();
  auto node = record("IndexAddBackward0", {&self, &source}, out,
                     [dim, a](LambdaNode& n, variable_list&& gs) -> variable_list {
                       const Tensor& g = gs[0];
                       Tensor gsource;
                       if (n.should_compute_output(1)) {
                         gsource = reshape(index_select(g, dim, n.unpack(0)), n.shape_b);
                         if (a != 1.0)
                           gsource = binary(BinaryOp::mul, gsource, wrap_scalar(Scalar(a)));
                       }
                       return {g, gsource};
                     });
  node->shape_b = source.sizes();
  node->saved.emplace_back(index, false);
}

void record_masked_fill(const Tensor& self, const Tensor& mask, const Tensor* value,
                        const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  auto fn = [](LambdaNode& n, variable_list&& gs) -> variable_list {
    const Tensor& g = gs[0];
    Tensor m = n.unpack(0);
    Tensor gself, gvalue;
    if (n.should_compute_output(0)) gself = sum_to_size(masked_fill(g, m, Scalar(0.0)), n.shape_a);
    if (n.should_compute_output(1)) {
      Tensor picked = where(m, g, zeros_like_shape(Shape{}, g));
      gvalue = cast_grad(sum(picked), n.dtype_b);
    }
    return {gself, gvalue};
  };
  auto node = value ? record("MaskedFillBackward1", {&self, value}, out, fn)
                    : record("MaskedFillBackward0", {&self}, out, fn);
  node->shape_a = self.sizes();
  if (value) node->dtype_b = value->dtype();
  node->saved.emplace_back(mask, false);
}

void record_masked_select(const Tensor& self, const Tensor& mask, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  auto node = record("MaskedSelectBackward0", {&self}, out,
                     [](LambdaNode& n, variable_list&& gs) -> variable_list {
                       const Tensor& g = gs[0];
                       Tensor m = n.unpack(0);
                       Shape shape = n.shape_b;  // broadcast(self, mask)
                       Shape work = shape.empty() ? Shape{1} : shape;
                       Tensor mk = reshape(expand(m, shape), work);
                       Tensor full = index_put(zeros_like_shape(work, g),
                                               {std::optional<Tensor>(mk)}, g, false);
                       return {sum_to_size(reshape(full, shape), n.shape_a)};
                     });
  node->shape_a = self.sizes();
  node->shape_b = broadcast_shapes(self.sizes(), mask.sizes());
  node->saved.emplace_back(mask, false);
}

void record_take(const Tensor& self, const Tensor& index, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  auto node =
      record("TakeBackward0", {&self}, out, [](LambdaNode& n, variable_list&& gs) -> variable_list {
        const Tensor& g = gs[0];
        Tensor index = n.unpack(0);
        int64_t numel = checked_numel(n.shape_a);
        Tensor flat = zeros_like_shape(Shape{numel}, g);
        Tensor idx = reshape(index, Shape{index.numel()});
        Tensor r =
            index_put(flat, {std::optional<Tensor>(idx)}, reshape(g, Shape{g.numel()}), true);
        return {reshape(r, n.shape_a)};
      });
  node->shape_a = self.sizes();
  node->saved.emplace_back(index, false);
}

}  // namespace ember::autograd
