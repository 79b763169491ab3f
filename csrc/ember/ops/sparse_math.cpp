// Sparse COO math: the elementwise ops with a sparse operand, sparse x dense and
// sparse x sparse products, sum and softmax (Note [Sparse COO tensors]).
//
// Note [Sparse gradients]
// A gradient flowing into a sparse tensor may be sparse or strided, as PyTorch's (the engine
// accepts either for a sparse input, and a sparse one for a strided input). Every formula is
// written with ember ops that take either layout, so create_graph=True works through them.
// Composite ops read a sparse tensor's values through sparse_values_grad, which is only
// exact for a coalesced tensor (an uncoalesced one stores one dense element in several
// entries), so composites coalesce their sparse inputs first (CoalesceBackward0 passes the
// gradient through). Linear structural ops (transpose, narrow_copy, index_select, clone,
// to) record their own node instead, whose formula is the op's adjoint on the gradient.
#include <algorithm>

#include "ember/autograd/derivatives/sparse.h"
#include "ember/autograd/record.h"
#include "ember/jit/trace_hook.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/join.h"
#include "ember/ops/nn_activation.h"
#include "ember/ops/reduce.h"
#include "ember/ops/sort.h"
#include "ember/ops/sparse.h"
#include "ember/ops/surface_scan.h"
#include "ember/ops/view.h"

namespace ember {
namespace {

using B = BinaryOp;
using U = UnaryOp;

Tensor rows_of(const Tensor& indices, int64_t r) { return contiguous(select(indices, 0, r)); }

void check_same_sizes(const Tensor& a, const Tensor& b, const char* op) {
  EMBER_CHECK(a.sizes() == b.sizes(), op, ": expected sizes of 'self' and 'other' to match, but ",
              shape_str(a.sizes()), " != ", shape_str(b.sizes()));
}

// dense (a copy, `common` dtype) + alpha * sparse, accumulated at the sparse entries.
Tensor dense_plus_sparse(const Tensor& dense, const Tensor& sp, Scalar alpha, DType common) {
  Tensor out = empty(dense.sizes(), common, dense.device());
  copy_(out, dense);
  const SparseCooParts& p = sparse_parts(sp);
  if (p.indices.sizes()[1] == 0) return out;
  Tensor v = to_dtype(p.values, common);
  if (alpha.to_double() != 1.0) v = binary(B::mul, v, wrap_scalar(alpha));
  std::vector<std::optional<Tensor>> idx;
  for (int64_t d = 0; d < p.sparse_dim; ++d) idx.push_back(select(p.indices, 0, d));
  index_put_(out, idx, v, /*accumulate=*/true);
  return out;
}

Tensor sparse_plus_sparse(const Tensor& a, const Tensor& b, Scalar alpha, DType common) {
  check_same_sizes(a, b, "add");
  const SparseCooParts& pa = sparse_parts(a);
  const SparseCooParts& pb = sparse_parts(b);
  EMBER_CHECK(pa.sparse_dim == pb.sparse_dim,
              "add: expected 'self' and 'other' to have same sparse_dim, but got ", pa.sparse_dim,
              " and ", pb.sparse_dim);
  Tensor va = to_dtype(pa.values, common);
  Tensor vb = to_dtype(pb.values, common);
  if (alpha.to_double() != 1.0) vb = binary(B::mul, vb, wrap_scalar(alpha));
  Tensor idx = cat({pa.indices, pb.indices}, 1);
  Tensor vals = cat({va, vb}, 0);
  bool both = pa.coalesced && pb.coalesced;
  Tensor r = make_sparse_coo(idx, vals, a.sizes(), false);
  // Coalesced operands give a coalesced sum (PyTorch merges them); others stay as they are.
  return both ? coalesce(r) : r;
}

// a * b with a sparse: by a number, a same-shape strided tensor, or a sparse tensor.
Tensor sparse_mul(const Tensor& a, const Tensor& b) {
  const SparseCooParts& pa = sparse_parts(a);
  if (!b.is_sparse() && b.dim() == 0) {
    Tensor v = binary(B::mul, pa.values, b);
    return make_sparse_coo(pa.indices, v, a.sizes(), pa.coalesced);
  }
  if (!b.is_sparse()) {
    // A strided operand broadcasts to the sparse one's shape (the result keeps its pattern).
    Tensor full = b.sizes() == a.sizes() ? b : expand_to(b, a.sizes(), "mul");
    Tensor g = sparse_gather(full, pa.indices, pa.sparse_dim);
    return make_sparse_coo(pa.indices, binary(B::mul, pa.values, g), a.sizes(), pa.coalesced);
  }
  EMBER_CHECK(a.sizes() == b.sizes(), "mul: expected sizes of 'self' and 'other' to match, but ",
              shape_str(a.sizes()), " != ", shape_str(b.sizes()));
  // sparse * sparse: the entries both specify (coalesced operands).
  Tensor ac = coalesce(a), bc = coalesce(b);
  const SparseCooParts& qa = sparse_parts(ac);
  const SparseCooParts& qb = sparse_parts(bc);
  EMBER_CHECK(qa.sparse_dim == qb.sparse_dim,
              "mul: expected 'self' and 'other' to have same sparse_dim, but got ", qa.sparse_dim,
              " and ", qb.sparse_dim);
  const int64_t na = qa.indices.sizes()[1], nb = qb.indices.sizes()[1];
  DType common = result_type(a, b);
  if (na == 0 || nb == 0) return sparse_zeros(a.sizes(), qa.sparse_dim, common, a.device());
  Tensor la = linear_indices(qa.indices, a.sizes());
  Tensor lb = linear_indices(qb.indices, a.sizes());
  Tensor pos = clamp(searchsorted(lb, la), std::nullopt, wrap_scalar(Scalar(nb - 1)));
  Tensor hit = binary(B::eq, index_select(lb, 0, pos), la);
  Tensor sel = reshape(nonzero(hit), Shape{-1});
  Tensor v = binary(B::mul, index_select(qa.values, 0, sel),
                    index_select(qb.values, 0, index_select(pos, 0, sel)));
  return make_sparse_coo(index_select(qa.indices, 1, sel), v, a.sizes(), true);
}

bool zero_preserving(UnaryOp op) {
  switch (op) {
    case U::neg:
    case U::abs:
    case U::sign:
    case U::square:
    case U::relu:
    case U::floor:
    case U::ceil:
    case U::trunc:
    case U::round:
    case U::frac:
    case U::log1p:
    case U::expm1:
    case U::sqrt:
    case U::sin:
    case U::tan:
    case U::asin:
    case U::atan:
    case U::sinh:
    case U::tanh:
    case U::erf:
    case U::erfinv:
    case U::isnan:
    case U::isinf:
    case U::special_i1:
      return true;
    default:
      return false;
  }
}

}  // namespace

// ---- elementwise -------------------------------------------------------------------------

Tensor sparse_add(const Tensor& a, const Tensor& b, Scalar alpha) {
  check_same_device(a, b, "add");
  DType common = result_type(a, b);
  if (a.is_sparse() && b.is_sparse()) return sparse_plus_sparse(a, b, alpha, common);
  EMBER_CHECK(!a.is_sparse(),
              "add(sparse, dense) is not supported. Use add(dense, sparse) "
              "instead.");
  check_same_sizes(a, b, "add");
  return dense_plus_sparse(a, b, alpha, common);
}

Tensor sparse_binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  switch (op) {
    case B::add:
      return sparse_add(a, b, Scalar(int64_t(1)));
    case B::sub:
      EMBER_CHECK(a.dtype() != DType::Bool && b.dtype() != DType::Bool,
                  "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                  "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
      return sparse_add(a, b, Scalar(int64_t(-1)));
    case B::mul:
      check_same_device(a, b, "mul");
      return a.is_sparse() ? sparse_mul(a, b) : sparse_mul(b, a);
    case B::div: {
      if (!a.is_sparse()) raise_sparse_unsupported("div", b);
      EMBER_CHECK(!b.is_sparse() && b.dim() == 0,
                  "Sparse division requires a scalar or zero-dim dense tensor divisor (got shape ",
                  shape_str(b.sizes()), " for divisor)");
      const SparseCooParts& p = sparse_parts(a);
      return make_sparse_coo(p.indices, binary(B::div, p.values, b), a.sizes(), p.coalesced);
    }
    default:
      raise_sparse_unsupported(op_name(op), a.is_sparse() ? a : b);
  }
}

Tensor sparse_unary(UnaryOp op, const Tensor& a) {
  if (!zero_preserving(op)) raise_sparse_unsupported(op_name(op), a);
  // f(0) == 0 keeps the pattern; an uncoalesced tensor is coalesced first (f is not
  // additive), which also makes the values an exact function of the tensor for autograd.
  Tensor c = coalesce(a);
  const SparseCooParts& p = sparse_parts(c);
  return sparse_from_parts(p.indices, unary(op, sparse_values_grad(c)), a.sizes(), true);
}

const Tensor& sparse_binary_(BinaryOp op, const Tensor& a, const Tensor& b, Scalar alpha) {
  Tensor rhs = alpha.to_double() == 1.0 ? b : binary(B::mul, b, wrap_scalar(alpha));
  if (!a.is_sparse() && (op == B::add || op == B::sub) && rhs.is_sparse()) {
    // dense += sparse in place: accumulate the entries (no copy of the dense tensor).
    check_same_sizes(a, rhs, op_name(op));
    check_same_device(a, rhs, op_name(op));
    check_result_cast(result_type(a, rhs), a.dtype());
    const SparseCooParts& p = sparse_parts(rhs);
    if (p.indices.sizes()[1] > 0) {
      Tensor v = to_dtype(p.values, a.dtype());
      if (op == B::sub) v = unary(U::neg, v);
      std::vector<std::optional<Tensor>> idx;
      for (int64_t d = 0; d < p.sparse_dim; ++d) idx.push_back(select(p.indices, 0, d));
      index_put_(a, idx, v, /*accumulate=*/true);
    } else {
      a.bump_version(op == B::add ? "add_" : "sub_");
    }
    return a;
  }
  Tensor r = sparse_binary(op, a, rhs);
  if (a.is_sparse()) {
    EMBER_CHECK(r.is_sparse(), op_name(op),
                "_: the result of a sparse tensor and a strided tensor "
                "is strided and cannot be written into the sparse tensor; use the out-of-place ",
                op_name(op));
    check_result_cast(r.dtype(), a.dtype());
    sparse_assign_(a, r);
  } else {
    check_result_cast(r.dtype(), a.dtype());
    copy_(a, r.is_sparse() ? sparse_to_dense(r) : r);
  }
  return a;
}

// ---- products ---------------------------------------------------------------------------

namespace {

void check_spmm_args(const Tensor& s, const Tensor& d, const char* op) {
  const SparseCooParts& p = sparse_parts(s, op);
  EMBER_CHECK(p.sparse_dim == 2, op, ": matrices expected, got ", p.sparse_dim, "D tensor");
  EMBER_CHECK(p.dense_dim == 0, op, ": scalar values expected, got ", p.dense_dim, "D values");
  EMBER_CHECK(!d.is_sparse() && d.dim() == 2, op, ": matrices expected, got ", d.dim(), "D tensor");
  EMBER_CHECK(d.sizes()[0] == s.sizes()[1], "addmm: Argument #3 (dense): Expected dim 0 size ",
              s.sizes()[1], ", got ", d.sizes()[0]);
  EMBER_CHECK(s.dtype() == d.dtype(), "expected scalar type ", scalar_type_name(s.dtype()),
              " but found ", scalar_type_name(d.dtype()));
  check_same_device(s, d, op);
  EMBER_CHECK(s.dtype() != DType::Bool, '"', op, "\" not implemented for 'bool'");
}

// out [M, N] += alpha * S @ D through the kernel.
void spmm_into(const Tensor& out, const Tensor& s, const Tensor& d, Scalar alpha) {
  const SparseCooParts& p = sparse_parts(s);
  if (p.indices.sizes()[1] == 0 || out.numel() == 0) return;
  Tensor dd = d.strides()[1] == 1 || d.sizes()[1] <= 1 ? d : contiguous(d);
  spmm_stub.get(s.device())(out, rows_of(p.indices, 0), rows_of(p.indices, 1), contiguous(p.values),
                            dd, alpha, p.coalesced);
}

// beta * input + alpha * (S @ D); `input` may be null (mm).
Tensor spmm_primitive(const Tensor* input, const Tensor& s, const Tensor& d, Scalar beta,
                      Scalar alpha, bool masked, const char* op) {
  check_spmm_args(s, d, op);
  const int64_t M = s.sizes()[0], N = d.sizes()[1];
  if (input) {
    EMBER_CHECK(!input->is_sparse(), op, ": expected a strided input, got a sparse one");
    EMBER_CHECK(input->dtype() == s.dtype(), op, ": expected input to have dtype ",
                dtype_name(s.dtype()), ", got ", dtype_name(input->dtype()));
    check_same_device(*input, s, op);
    expand_to(*input, Shape{M, N}, op);
  }
  autograd::RecordScope scope({input, &s, &d});
  Tensor out = empty(Shape{M, N}, s.dtype(), s.device());
  if (input && beta.to_double() != 0.0) {
    copy_(out, expand_to(*input, Shape{M, N}, op));
    if (beta.to_double() != 1.0) binary_(B::mul, out, wrap_scalar(beta));
  } else {
    fill_(out, Scalar(0.0));
  }
  spmm_into(out, s, d, alpha);
  if (scope.rec) {
    scope.done();
    autograd::record_sparse_addmm(input, s, d, out, beta, alpha, masked);
  }
  return out;
}

}  // namespace

Tensor sparse_dense_mm(const Tensor& s, const Tensor& d, bool masked_grad) {
  return spmm_primitive(nullptr, s, d, Scalar(0.0), Scalar(1.0), masked_grad,
                        masked_grad ? "sparse.mm" : "mm");
}

Tensor sparse_dense_addmm(const Tensor& input, const Tensor& s, const Tensor& d, Scalar beta,
                          Scalar alpha, bool masked_grad) {
  if (!s.is_sparse() && d.is_sparse()) {
    // beta * input + alpha * (D @ S) = (beta * input^T + alpha * S^T @ D^T)^T
    EMBER_CHECK(s.dim() == 2 && d.dim() == 2, "addmm: matrices expected, got ", s.dim(), "D and ",
                d.dim(), "D tensors");
    Tensor in2 = expand_to(input, Shape{s.sizes()[0], d.sizes()[1]}, "addmm");
    return t(sparse_dense_addmm(t(in2), sparse_transpose(d, 0, 1), t(s), beta, alpha, masked_grad));
  }
  return spmm_primitive(&input, s, d, beta, alpha, masked_grad,
                        masked_grad ? "sparse.addmm" : "addmm");
}

Tensor sparse_addmm(const Tensor& input, const Tensor& mat1, const Tensor& mat2, Scalar beta,
                    Scalar alpha) {
  EMBER_TRACE(
      "aten::_sparse_addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar "
      "alpha=1) -> Tensor",
      sparse_addmm, input, mat1, mat2, beta, alpha);
  return sparse_dense_addmm(input, mat1, mat2, beta, alpha, /*masked_grad=*/true);
}

Tensor sparse_sparse_mm(const Tensor& a, const Tensor& b) {
  for (const Tensor* x : {&a, &b}) {
    const SparseCooParts& p = sparse_parts(*x, "mm");
    EMBER_CHECK(p.sparse_dim == 2 && p.dense_dim == 0,
                "mm: sparse matrices with 2 sparse dims and scalar values expected, got ",
                p.sparse_dim, " sparse and ", p.dense_dim, " dense dims");
  }
  EMBER_CHECK(a.sizes()[1] == b.sizes()[0], "mm: mat1 and mat2 shapes cannot be multiplied (",
              a.sizes()[0], "x", a.sizes()[1], " and ", b.sizes()[0], "x", b.sizes()[1], ")");
  EMBER_CHECK(a.dtype() == b.dtype(),
              "mm: expected mat1 and mat2 to have the same dtype, but "
              "got: ",
              dtype_name(a.dtype()), " != ", dtype_name(b.dtype()));
  check_same_device(a, b, "mm");
  const Shape sizes{a.sizes()[0], b.sizes()[1]};
  Tensor ac = coalesce(a), bc = coalesce(b);
  const SparseCooParts& pa = sparse_parts(ac);
  const SparseCooParts& pb = sparse_parts(bc);
  if (pa.indices.sizes()[1] == 0 || pb.indices.sizes()[1] == 0)
    return sparse_zeros(sizes, 2, a.dtype(), a.device());
  // Join A's column k with B's row k: B is coalesced, so its rows are sorted.
  Tensor rep, bidx;
  {
    autograd::GradModeGuard no_grad(false);
    Tensor brow = rows_of(pb.indices, 0);
    Tensor acol = rows_of(pa.indices, 1);
    Tensor lo = searchsorted(brow, acol);
    Tensor cnt = binary(B::sub, searchsorted(brow, acol, false, true), lo);
    rep = repeat_interleave(cnt);
    Tensor start = binary(B::sub, cumsum(cnt, 0), cnt);
    Tensor n = arange(Scalar(int64_t(0)), Scalar(rep.numel()), Scalar(int64_t(1)), DType::Int64,
                      a.device());
    bidx = add(index_select(lo, 0, rep), binary(B::sub, n, index_select(start, 0, rep)));
  }
  Tensor idx = stack(
      {index_select(rows_of(pa.indices, 0), 0, rep), index_select(rows_of(pb.indices, 1), 0, bidx)},
      0);
  Tensor v = binary(B::mul, index_select(sparse_values_grad(ac), 0, rep),
                    index_select(sparse_values_grad(bc), 0, bidx));
  return coalesce(sparse_from_parts(idx, v, sizes, false));
}

Tensor sparse_mm(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::_sparse_mm(Tensor mat1, Tensor mat2) -> Tensor", sparse_mm, a, b);
  if (a.is_sparse() && b.is_sparse()) return sparse_sparse_mm(a, b);
  if (a.is_sparse()) return sparse_dense_mm(a, b, /*masked_grad=*/true);
  EMBER_CHECK(b.is_sparse(), "sparse.mm: expected a sparse operand, got two strided tensors");
  EMBER_CHECK(a.dim() == 2, "sparse.mm: matrices expected, got ", a.dim(), "D tensor");
  // D @ S = (S^T @ D^T)^T
  return t(sparse_dense_mm(sparse_transpose(b, 0, 1), t(a), true));
}

Tensor sampled_mm(const Tensor& a, const Tensor& b, const Tensor& indices) {
  EMBER_CHECK(a.dim() == 2 && b.dim() == 2 && a.sizes()[1] == b.sizes()[1],
              "sampled_mm: expected [M, N] and [K, N] matrices");
  const int64_t nnz = indices.sizes()[1];
  autograd::RecordScope scope({&a, &b});
  Tensor out = empty(Shape{nnz}, a.dtype(), a.device());
  if (nnz > 0) {
    Tensor aa = a.strides()[1] == 1 ? a : contiguous(a);
    Tensor bb = b.strides()[1] == 1 ? b : contiguous(b);
    if (a.sizes()[1] == 0)
      fill_(out, Scalar(0.0));
    else
      sddmm_stub.get(a.device())(out, rows_of(indices, 0), rows_of(indices, 1), aa, bb);
  }
  if (scope.rec) {
    scope.done();
    autograd::record_sampled_mm(a, b, indices, out);
  }
  return out;
}

// ---- reductions ------------------------------------------------------------------------------

Tensor sparse_sum(const Tensor& t, const std::optional<Shape>& dims_in,
                  std::optional<DType> dtype) {
  const int64_t S = sparse_parts(t, "sparse.sum").sparse_dim;
  const int64_t nd = t.dim();
  Tensor c = coalesce(t);
  Tensor v = sparse_values_grad(c);
  DType out_dt = dtype ? *dtype : (is_integral(t.dtype(), true) ? DType::Int64 : t.dtype());
  if (!dims_in) return sum(v, std::nullopt, false, out_dt);
  std::vector<bool> reduce(size_t(nd), false);
  for (int64_t d : *dims_in) {
    int64_t w = wrap_dim(d, nd);
    EMBER_CHECK(!reduce[size_t(w)], "dim ", w, " appears multiple times in the list of dims");
    reduce[size_t(w)] = true;
  }
  Shape vdims{0}, keep_rows, new_sizes;  // vdims[0]: the entries' dim, summed when all_sparse
  bool all_sparse = true;
  for (int64_t d = 0; d < nd; ++d) {
    if (reduce[size_t(d)]) {
      if (d >= S) vdims.push_back(d - S + 1);
    } else {
      new_sizes.push_back(t.sizes()[d]);
      if (d < S) {
        keep_rows.push_back(d);
        all_sparse = false;
      }
    }
  }
  if (!all_sparse) vdims = Shape(vdims.begin() + 1, vdims.end());
  v = vdims.empty() ? to_dtype(v, out_dt) : sum(v, vdims, false, out_dt);
  if (all_sparse) return v;
  const SparseCooParts& p = sparse_parts(c);
  if (int64_t(keep_rows.size()) == S) return sparse_from_parts(p.indices, v, new_sizes, true);
  Tensor idx = index_select(
      p.indices, 0,
      int64_tensor(std::vector<int64_t>(keep_rows.begin(), keep_rows.end()), t.device()));
  return coalesce(sparse_from_parts(idx, v, new_sizes, false));
}

Tensor sparse_sum_keepdim(const Tensor& t, const std::optional<Shape>& dims,
                          std::optional<DType> dtype) {
  const int64_t nd = t.dim();
  std::vector<bool> reduced(size_t(nd), !dims.has_value());
  if (dims)
    for (int64_t d : *dims) reduced[size_t(wrap_dim(d, nd))] = true;
  Shape kept = t.sizes();
  for (int64_t d = 0; d < nd; ++d)
    if (reduced[size_t(d)]) kept[d] = 1;
  Tensor r = sparse_sum(t, dims, dtype);
  if (!r.is_sparse()) return reshape(r, kept);
  const int64_t S = sparse_parts(t).sparse_dim;
  const SparseCooParts& p = sparse_parts(r);
  const int64_t nnz = p.indices.sizes()[1];
  std::vector<Tensor> rows;
  int64_t next = 0;
  for (int64_t d = 0; d < S; ++d)
    rows.push_back(reduced[size_t(d)] ? zeros(Shape{nnz}, DType::Int64, t.device())
                                      : select(p.indices, 0, next++));
  Shape vs{nnz};
  for (int64_t d = S; d < nd; ++d) vs.push_back(kept[d]);
  return sparse_from_parts(stack(rows, 0), reshape(sparse_values_grad(r), vs), kept, true);
}

Tensor sparse_softmax(const Tensor& t, int64_t dim_in, std::optional<DType> dtype, bool log) {
  const char* op = log ? "sparse.log_softmax" : "sparse.softmax";
  const int64_t S = sparse_parts(t, op).sparse_dim;
  const int64_t dim = wrap_dim(dim_in, t.dim());
  Tensor c = coalesce(t);
  const SparseCooParts& p = sparse_parts(c);
  Tensor v = sparse_values_grad(c);
  if (dtype) v = to_dtype(v, *dtype);
  EMBER_CHECK(is_floating(v.dtype()), '"', op, "\" not implemented for '", dtype_name(v.dtype()),
              "'");
  if (dim >= S) {
    Tensor r = log ? log_softmax(v, dim - S + 1) : softmax(v, dim - S + 1);
    return sparse_from_parts(p.indices, r, t.sizes(), true);
  }
  const int64_t nnz = p.indices.sizes()[1];
  if (nnz == 0) return sparse_from_parts(p.indices, v, t.sizes(), true);
  // Entries that share every sparse index but `dim` form one pool; softmax runs per pool.
  Tensor pool;
  int64_t npools = 0;
  {
    autograd::GradModeGuard no_grad(false);
    Shape rows, sizes;
    for (int64_t d = 0; d < S; ++d)
      if (d != dim) {
        rows.push_back(d);
        sizes.push_back(t.sizes()[d]);
      }
    Tensor key = rows.empty()
                     ? zeros(Shape{nnz}, DType::Int64, t.device())
                     : linear_indices(
                           index_select(p.indices, 0,
                                        int64_tensor(std::vector<int64_t>(rows.begin(), rows.end()),
                                                     t.device())),
                           sizes);
    auto [uniq, inverse, counts] = unique(key, true, true, false);
    pool = inverse;
    npools = uniq.numel();
  }
  Shape ps = v.sizes();
  ps[0] = npools;
  Tensor mx;
  {
    autograd::GradModeGuard no_grad(false);
    mx =
        index_reduce(zeros(ps, v.dtype(), v.device()), 0, pool, autograd::detach(v), "amax", false);
  }
  Tensor shifted = binary(B::sub, v, index_select(mx, 0, pool));
  Tensor e = unary(U::exp, shifted);
  Tensor s = index_add(zeros(ps, v.dtype(), v.device()), 0, pool, e);
  Tensor r = log ? binary(B::sub, shifted, unary(U::log, index_select(s, 0, pool)))
                 : binary(B::div, e, index_select(s, 0, pool));
  return sparse_from_parts(p.indices, r, t.sizes(), true);
}

}  // namespace ember
