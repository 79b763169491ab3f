// Derivatives of the sparse COO ops (Note [Sparse gradients] in ops/sparse_math.cpp),
// written with ember ops so that create_graph=True differentiates them again.
#include "ember/autograd/derivatives/sparse.h"

#include "ember/autograd/record.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/join.h"
#include "ember/ops/linalg.h"
#include "ember/ops/sparse.h"
#include "ember/ops/view.h"

namespace ember::autograd {
namespace {

using B = BinaryOp;

Tensor scaled(const Tensor& x, Scalar s) {
  return s.to_double() == 1.0 ? x : binary(B::mul, x, wrap_scalar(s));
}

/// The coalesced pattern of `t` with no autograd history (for masks and index maps).
Tensor pattern_of(const Tensor& t) {
  GradModeGuard no_grad(false);
  return coalesce(detach(t));
}

/// A gradient `g` of a narrow_copy's output, placed back at [start, start + n) of `dim` in
/// a tensor of `sizes`.
Tensor narrow_copy_backward(const Tensor& g, const Shape& sizes, int64_t sparse_dim, int64_t dim,
                            int64_t start) {
  if (!g.is_sparse()) {
    Tensor out = zeros(sizes, g.dtype(), g.device());
    copy_(narrow(out, dim, start, g.sizes()[dim]), g);
    return out;
  }
  Tensor c = coalesce(g);
  const SparseCooParts& p = sparse_parts(c);
  Tensor v = sparse_values_grad(c);
  if (dim >= sparse_dim) {
    Shape vs = v.sizes();
    const int64_t vd = dim - sparse_dim + 1;
    vs[vd] = sizes[dim];
    Tensor full = zeros(vs, v.dtype(), v.device());
    copy_(narrow(full, vd, start, v.sizes()[vd]), v);
    return sparse_from_parts(p.indices, full, sizes, p.coalesced);
  }
  Tensor idx = clone(p.indices);
  {
    GradModeGuard no_grad(false);
    Tensor row = select(idx, 0, dim);
    binary_(B::add, row, wrap_scalar(Scalar(start)));
  }
  return sparse_from_parts(idx, v, sizes, p.coalesced);
}

/// A gradient `g` of index_select(in, dim, index)'s output as a gradient of `in`.
Tensor index_select_backward(const Tensor& g, const Shape& sizes, int64_t sparse_dim, int64_t dim,
                             const Tensor& index) {
  if (!g.is_sparse()) return index_add(zeros(sizes, g.dtype(), g.device()), dim, index, g);
  Tensor c = coalesce(g);
  const SparseCooParts& p = sparse_parts(c);
  Tensor v = sparse_values_grad(c);
  if (dim >= sparse_dim) {
    Shape vs = v.sizes();
    const int64_t vd = dim - sparse_dim + 1;
    vs[vd] = sizes[dim];
    return sparse_from_parts(p.indices, index_add(zeros(vs, v.dtype(), v.device()), vd, index, v),
                             sizes, p.coalesced);
  }
  Tensor idx = clone(p.indices);
  {
    GradModeGuard no_grad(false);
    Tensor row = select(idx, 0, dim);
    copy_(row, index_select(index, 0, contiguous(row)));
  }
  return sparse_from_parts(idx, v, sizes, false);
}

}  // namespace

void record_sparse_from_parts(const Tensor& indices, const Tensor& values, const Tensor& out) {
  Tensor idx = detach(indices);
  const int64_t sd = indices.sizes()[0];
  record("SparseCooTensorWithDimsAndTensorsBackward0", {&values}, out,
         [idx, sd](LambdaNode&, variable_list&& g) -> variable_list {
           return {sparse_gather(g[0], idx, sd)};
         });
}

void record_sparse_values(const Tensor& t, const Tensor& values) {
  const SparseCooParts& p = sparse_parts(t);
  EMBER_CHECK(p.coalesced,
              "values: internal error: the values of an uncoalesced tensor have no "
              "gradient of the tensor");
  Tensor idx = p.indices;
  Shape sizes = t.sizes();
  record("ValuesBackward0", {&t}, values,
         [idx, sizes](LambdaNode&, variable_list&& g) -> variable_list {
           return {sparse_from_parts(idx, g[0], sizes, true)};
         });
}

void record_sparse_coalesce(const Tensor& in, const Tensor& out) {
  record("CoalesceBackward0", {&in}, out,
         [](LambdaNode&, variable_list&& g) -> variable_list { return {g[0]}; });
}

void record_sparse_to_dense(const Tensor& in, const Tensor& out, bool masked_grad) {
  Tensor shape_of = detach(in);
  const int64_t sd = sparse_dim(in);
  record("ToDenseBackward0", {&in}, out,
         [shape_of, sd, masked_grad](LambdaNode&, variable_list&& g) -> variable_list {
           if (masked_grad) return {sparse_mask(g[0], pattern_of(shape_of))};
           return {g[0].is_sparse() ? g[0] : to_sparse(g[0], sd)};
         });
}

void record_to_sparse(const Tensor& in, const Tensor& out, bool with_sparse_dim) {
  // PyTorch's overloads: to_sparse(sparse_dim) is ToSparseBackward0, to_sparse() 1.
  record(with_sparse_dim ? "ToSparseBackward0" : "ToSparseBackward1", {&in}, out,
         [](LambdaNode&, variable_list&& g) -> variable_list {
           return {g[0].is_sparse() ? sparse_to_dense(g[0]) : g[0]};
         });
}

void record_sparse_addmm(const Tensor* input, const Tensor& s, const Tensor& d, const Tensor& out,
                         Scalar beta, Scalar alpha, bool masked) {
  const char* name = masked ? "SparseAddmmBackward0" : input ? "AddmmBackward0" : "MmBackward0";
  Shape in_sizes = input ? input->sizes() : Shape{};
  Tensor S = s, D = d;
  record(name, {input, &s, &d}, out,
         [S, D, in_sizes, beta, alpha, masked](LambdaNode& n, variable_list&& g) -> variable_list {
           const Tensor& gr = g[0];
           variable_list r(3);
           if (n.should_compute_output(0)) r[0] = sum_to_size(scaled(gr, beta), in_sizes);
           if (n.should_compute_output(1)) {
             if (masked) {
               // (grad @ D^T) on S's pattern: one dot product per entry.
               Tensor pat = pattern_of(S);
               const Tensor& idx = sparse_parts(pat).indices;
               r[1] =
                   sparse_from_parts(idx, scaled(sampled_mm(gr, D, idx), alpha), S.sizes(), true);
             } else {
               r[1] = scaled(mm(gr, t(D)), alpha);
             }
           }
           if (n.should_compute_output(2))
             r[2] = scaled(sparse_dense_mm(sparse_transpose(S, 0, 1), gr, masked), alpha);
           return r;
         });
}

void record_sampled_mm(const Tensor& a, const Tensor& b, const Tensor& indices, const Tensor& out) {
  Tensor A = a, Bm = b, idx = detach(indices);
  record("SparseSampledAddmmBackward0", {&a, &b}, out,
         [A, Bm, idx](LambdaNode& n, variable_list&& g) -> variable_list {
           Tensor sg = sparse_from_parts(idx, g[0], Shape{A.sizes()[0], Bm.sizes()[0]}, false);
           variable_list r(2);
           if (n.should_compute_output(0)) r[0] = sparse_dense_mm(sg, Bm, true);
           if (n.should_compute_output(1))
             r[1] = sparse_dense_mm(sparse_transpose(sg, 0, 1), A, true);
           return r;
         });
}

void record_sparse_transpose(const Tensor& in, const Tensor& out, int64_t d0, int64_t d1) {
  record("TransposeBackward0", {&in}, out,
         [d0, d1](LambdaNode&, variable_list&& g) -> variable_list {
           return {transpose(g[0], d0, d1)};
         });
}

void record_sparse_narrow_copy(const Tensor& in, const Tensor& out, int64_t dim, int64_t start) {
  Shape sizes = in.sizes();
  const int64_t sd = sparse_dim(in);
  record("NarrowCopyBackward0", {&in}, out,
         [sizes, sd, dim, start](LambdaNode&, variable_list&& g) -> variable_list {
           return {narrow_copy_backward(g[0], sizes, sd, dim, start)};
         });
}

void record_sparse_index_select(const Tensor& in, const Tensor& out, int64_t dim,
                                const Tensor& index) {
  Shape sizes = in.sizes();
  const int64_t sd = sparse_dim(in);
  Tensor idx = detach(index);
  record("IndexSelectBackward0", {&in}, out,
         [sizes, sd, dim, idx](LambdaNode&, variable_list&& g) -> variable_list {
           return {index_select_backward(g[0], sizes, sd, dim, idx)};
         });
}

void record_sparse_clone(const Tensor& in, const Tensor& out) {
  record("CloneBackward0", {&in}, out,
         [](LambdaNode&, variable_list&& g) -> variable_list { return {g[0]}; });
}

void record_sparse_to(const Tensor& in, const Tensor& out) {
  const DType dt = in.dtype();
  const Device dev = in.device();
  record("ToCopyBackward0", {&in}, out, [dt, dev](LambdaNode&, variable_list&& g) -> variable_list {
    Tensor r = g[0];
    if (r.is_sparse()) return {sparse_to(r, dt, dev, false)};
    return {to_device(to_dtype(r, dt), dev)};
  });
}

}  // namespace ember::autograd
