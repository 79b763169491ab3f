// Sparse COO conversions and structural ops: to_dense, to_sparse, sparse_mask, transpose,
// narrow_copy, index_select, clone, to, zero_, copy_ (Note [Sparse COO tensors]).
#include <algorithm>

#include "ember/autograd/derivatives/sparse.h"
#include "ember/autograd/record.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/join.h"
#include "ember/ops/reduce.h"
#include "ember/ops/sort.h"
#include "ember/ops/sparse.h"
#include "ember/ops/view.h"

namespace ember {
namespace {

using B = BinaryOp;

int64_t prod(const Shape& s, size_t b, size_t e) {
  int64_t n = 1;
  for (size_t i = b; i < e; ++i) n = checked_mul(n, s[i], "sparse");
  return n;
}

}  // namespace

Tensor sparse_to_dense(const Tensor& t, std::optional<DType> dtype, bool masked_grad) {
  if (!t.is_sparse()) return dtype && *dtype != t.dtype() ? to_dtype(t, *dtype) : t;
  EMBER_CHECK(!dtype || *dtype == t.dtype(), "dtype argument is not supported by sparse_to_dense");
  const SparseCooParts& p = sparse_parts(t);
  autograd::RecordScope scope({&t});
  Tensor out = zeros(t.sizes(), t.dtype(), t.device());
  const int64_t nnz = p.indices.sizes()[1];
  if (nnz > 0 && t.numel() > 0) {
    Shape flat{prod(t.sizes(), 0, size_t(p.sparse_dim))};
    for (size_t d = size_t(p.sparse_dim); d < t.sizes().size(); ++d) flat.push_back(t.sizes()[d]);
    Tensor lin = linear_indices(p.indices, t.sizes());
    index_add_(view(out, flat), 0, lin, p.values);
  }
  if (scope.rec) {
    scope.done();
    autograd::record_sparse_to_dense(t, out, masked_grad);
  }
  return out;
}

Tensor to_sparse(const Tensor& t, std::optional<int64_t> sparse_dim_opt) {
  if (t.is_sparse()) {
    EMBER_CHECK(!sparse_dim_opt || *sparse_dim_opt == sparse_parts(t).sparse_dim,
                "to_sparse: conversion from Sparse to Sparse with sparse_dim argument "
                "!=self.sparse_dim() is not supported");
    return t;
  }
  const int64_t nd = t.dim();
  const int64_t S = sparse_dim_opt.value_or(nd);
  EMBER_CHECK(S > 0 || nd == 0, "sparse_dim must be >0 if dimensionality > 0");
  EMBER_CHECK(S <= nd, "sparse_dim must be less than or equal to self.dim()");
  autograd::RecordScope scope({&t});
  Tensor indices, values;
  if (nd == 0) {
    indices = empty(Shape{0, 1}, DType::Int64, t.device());
    values = reshape(clone(t), Shape{1});
  } else {
    Tensor mask = binary(B::ne, t, wrap_scalar(Scalar(int64_t(0))));
    if (S < nd) {
      Shape dense_dims;
      for (int64_t d = S; d < nd; ++d) dense_dims.push_back(d);
      mask = any(mask, dense_dims);
    }
    indices = contiguous(transpose(nonzero(mask), 0, 1));  // row-major order: coalesced
    Shape flat{prod(t.sizes(), 0, size_t(S))};
    for (int64_t d = S; d < nd; ++d) flat.push_back(t.sizes()[d]);
    values = index_select(reshape(t, flat), 0, linear_indices(indices, t.sizes()));
  }
  Tensor out = make_sparse_coo(indices, values, t.sizes(), true);
  if (scope.rec) {
    scope.done();
    autograd::record_to_sparse(t, out, sparse_dim_opt.has_value());
  }
  return out;
}

Tensor sparse_mask(const Tensor& self, const Tensor& mask) {
  EMBER_CHECK(mask.is_sparse(),
              "sparse_mask(): expected mask to be a sparse COO tensor, but got "
              "a tensor with layout ember.",
              layout_name(mask.layout()));
  EMBER_CHECK(self.sizes() == mask.sizes(),
              "sparse_mask(): operands have incompatible sizes; "
              "self has size ",
              shape_str(self.sizes()), " but mask has size ", shape_str(mask.sizes()));
  check_same_device(self, mask, "sparse_mask");
  const SparseCooParts& p = sparse_parts(mask);
  Tensor vals = sparse_gather(self, p.indices, p.sparse_dim);
  return sparse_from_parts(p.indices, vals, self.sizes(), p.coalesced);
}

Tensor sparse_transpose(const Tensor& t, int64_t d0_in, int64_t d1_in) {
  const SparseCooParts& p = sparse_parts(t, "transpose");
  const int64_t d0 = wrap_dim(d0_in, t.dim()), d1 = wrap_dim(d1_in, t.dim());
  if (d0 == d1) return sparse_clone(t);
  const int64_t S = p.sparse_dim;
  EMBER_CHECK(d0 < S && d1 < S,
              "sparse transpose: transposed dimensions must be sparse Got "
              "sparse_dim: ",
              S, ", d0: ", d0, ", d1: ", d1);
  autograd::RecordScope scope({&t});
  Shape sizes = t.sizes();
  std::swap(sizes[d0], sizes[d1]);
  // Two index rows swap places; the values are shared (ops never write stored values).
  std::vector<int64_t> perm(static_cast<size_t>(S));
  for (int64_t i = 0; i < S; ++i) perm[size_t(i)] = i;
  std::swap(perm[size_t(d0)], perm[size_t(d1)]);
  Tensor idx = index_select(p.indices, 0, int64_tensor(perm, t.device()));
  Tensor out = make_sparse_coo(idx, p.values, sizes, p.indices.sizes()[1] <= 1);
  if (scope.rec) {
    scope.done();
    autograd::record_sparse_transpose(t, out, d0, d1);
  }
  return out;
}

Tensor sparse_narrow_copy(const Tensor& t, int64_t dim_in, int64_t start, int64_t length) {
  const SparseCooParts& p = sparse_parts(t, "narrow_copy");
  EMBER_CHECK(t.dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  const int64_t dim = wrap_dim(dim_in, t.dim());
  const int64_t size = t.sizes()[dim];
  EMBER_CHECK_INDEX(start >= -size && start <= size,
                    "start out of range (expected to be in range "
                    "of [",
                    -size, ", ", size, "], but got ", start, ")");
  if (start < 0) start += size;
  EMBER_CHECK(length >= 0 && start <= size - length, "start (", start, ") + length (", length,
              ") exceeds dimension size (", size, ").");
  autograd::RecordScope scope({&t});
  Shape sizes = t.sizes();
  sizes[dim] = length;
  const int64_t S = p.sparse_dim;
  Tensor out;
  if (dim < S) {
    Tensor row = select(p.indices, 0, dim);
    Tensor keep = binary(B::logical_and, binary(B::ge, row, wrap_scalar(Scalar(start))),
                         binary(B::lt, row, wrap_scalar(Scalar(start + length))));
    Tensor sel = reshape(nonzero(keep), Shape{-1});
    Tensor idx = index_select(p.indices, 1, sel);
    Tensor r = select(idx, 0, dim);
    binary_(B::sub, r, wrap_scalar(Scalar(start)));
    out = make_sparse_coo(idx, index_select(p.values, 0, sel), sizes, p.coalesced);
  } else {
    Tensor v = contiguous(narrow(p.values, dim - S + 1, start, length));
    out = make_sparse_coo(p.indices, v, sizes, p.coalesced);
  }
  if (scope.rec) {
    scope.done();
    autograd::record_sparse_narrow_copy(t, out, dim, start);
  }
  return out;
}

Tensor sparse_index_select(const Tensor& t, int64_t dim_in, const Tensor& index_in) {
  const SparseCooParts& p = sparse_parts(t, "index_select");
  const int64_t dim = wrap_dim(dim_in, t.dim());
  EMBER_CHECK_INDEX(index_in.dim() <= 1, "index_select(): Index is supposed to be a vector");
  EMBER_CHECK(index_in.dtype() == DType::Int64 || index_in.dtype() == DType::Int32,
              "index_select(): Expected dtype int32 or int64 for index");
  check_same_device(t, index_in, "index_select");
  Tensor index = to_dtype(reshape(index_in, Shape{-1}), DType::Int64);
  const int64_t size = t.sizes()[dim], m = index.numel();
  if (m > 0) {
    autograd::GradModeGuard no_grad(false);
    Tensor bad = binary(B::logical_or, binary(B::lt, index, wrap_scalar(Scalar(int64_t(0)))),
                        binary(B::ge, index, wrap_scalar(Scalar(size))));
    if (*to_device(any(bad), Device()).data<bool>()) {
      Tensor first = index_select(index, 0, reshape(nonzero(bad), Shape{-1}));
      raise(ErrorKind::Index, "index_select(): index contains ",
            *to_device(contiguous(first), Device()).data<int64_t>(),
            " that is out of range for tensor of size ", shape_str(t.sizes()), " at dimension ",
            dim);
    }
  }
  autograd::RecordScope scope({&t});
  Shape sizes = t.sizes();
  sizes[dim] = m;
  const int64_t S = p.sparse_dim;
  Tensor out;
  if (dim >= S) {
    out =
        make_sparse_coo(p.indices, index_select(p.values, dim - S + 1, index), sizes, p.coalesced);
  } else {
    // Join the entries' index along `dim` with the (sorted) selection: an entry at k appears
    // once for every position j with index[j] == k, at j.
    Tensor key = contiguous(select(p.indices, 0, dim));
    auto [sorted_index, order] = sort(index, 0, false, true);
    Tensor lo = searchsorted(sorted_index, key);
    Tensor cnt = binary(B::sub, searchsorted(sorted_index, key, false, true), lo);
    Tensor rep = repeat_interleave(cnt);
    Tensor start = binary(B::sub, cumsum(cnt, 0), cnt);
    Tensor n = arange(Scalar(int64_t(0)), Scalar(rep.numel()), Scalar(int64_t(1)), DType::Int64,
                      t.device());
    Tensor at = add(index_select(lo, 0, rep), binary(B::sub, n, index_select(start, 0, rep)));
    Tensor idx = index_select(p.indices, 1, rep);
    copy_(select(idx, 0, dim), index_select(order, 0, at));
    out = make_sparse_coo(idx, index_select(p.values, 0, rep), sizes, false);
  }
  if (scope.rec) {
    scope.done();
    autograd::record_sparse_index_select(t, out, dim, index);
  }
  return out;
}

Tensor sparse_clone(const Tensor& t) {
  const SparseCooParts& p = sparse_parts(t, "clone");
  autograd::RecordScope scope({&t});
  Tensor out = make_sparse_coo(clone(p.indices), clone(p.values), t.sizes(), p.coalesced);
  if (scope.rec) {
    scope.done();
    autograd::record_sparse_clone(t, out);
  }
  return out;
}

Tensor sparse_to(const Tensor& t, DType dtype, Device device, bool copy) {
  const SparseCooParts& p = sparse_parts(t, "to");
  if (!copy && dtype == t.dtype() && device == t.device()) return t;
  autograd::RecordScope scope({&t});
  Tensor v = to_device(to_dtype(p.values, dtype, copy), device, copy);
  Tensor i = to_device(p.indices, device, copy);
  Tensor out = make_sparse_coo(i, v, t.sizes(), p.coalesced);
  if (scope.rec) {
    scope.done();
    autograd::record_sparse_to(t, out);
  }
  return out;
}

void sparse_assign_(const Tensor& dst, const Tensor& src) {
  SparseCooParts& d = sparse_parts(dst, "copy_");
  const SparseCooParts& s = sparse_parts(src, "copy_");
  EMBER_CHECK(dst.sizes() == src.sizes(), "copy_: expected sparse tensors of the same size, got ",
              shape_str(dst.sizes()), " and ", shape_str(src.sizes()));
  Tensor v = s.values.dtype() == dst.dtype() ? s.values : to_dtype(s.values, dst.dtype());
  if (v.device() != dst.device()) v = to_device(v, dst.device());
  d.indices = s.indices.device() == dst.device() ? s.indices : to_device(s.indices, dst.device());
  d.values = v;
  d.sparse_dim = s.sparse_dim;
  d.dense_dim = s.dense_dim;
  d.coalesced = s.coalesced;
  dst.bump_version("copy_");
}

const Tensor& sparse_copy_(const Tensor& dst, const Tensor& src) {
  EMBER_CHECK(dst.is_sparse() && src.is_sparse(),
              "copy_() between dense and sparse Tensors is not implemented! Found self type = ",
              dst.is_sparse() ? "sparse" : "strided",
              " and src type = ", src.is_sparse() ? "sparse" : "strided");
  if (dst.is_same(src)) return dst;
  const SparseCooParts& s = sparse_parts(src);
  Tensor copy = make_sparse_coo(clone(s.indices), clone(s.values), src.sizes(), s.coalesced);
  sparse_assign_(dst, copy);
  return dst;
}

const Tensor& sparse_zero_(const Tensor& t) {
  SparseCooParts& p = sparse_parts(t, "zero_");
  Shape vs = p.values.sizes();
  vs[0] = 0;
  p.indices = empty(Shape{p.sparse_dim, 0}, DType::Int64, t.device());
  p.values = zeros(vs, t.dtype(), t.device());
  p.coalesced = true;
  t.bump_version("zero_");
  return t;
}

}  // namespace ember
