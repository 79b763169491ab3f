// Indexing front-ends: validate, compute shapes, restride, call the kernels
// (see Note [Advanced indexing] in index.h).
#include "ember/ops/index.h"

#include <algorithm>

#include "ember/autograd/derivatives/index.h"
#include "ember/autograd/record.h"
#include "ember/ops/factory.h"
#include "ember/ops/ops.h"
#include "ember/ops/out.h"
#include "ember/ops/reduce.h"
#include "ember/ops/surface_scan.h"
#include "ember/ops/view.h"

namespace ember {

DispatchStub<IndexGatherFn> index_gather_stub("index");
DispatchStub<IndexScatterFn> index_scatter_stub("index_put_");
DispatchStub<IndexOffsetsFn> index_offsets_stub("index");
DispatchStub<NonzeroFn> nonzero_stub("nonzero");

namespace {

bool is_mask(DType t) { return t == DType::Bool || t == DType::UInt8; }

/// A view of t's storage (at t's offset) with the given iteration geometry.
Tensor restride(const Tensor& t, const Shape& sizes, const Shape& strides) {
  return make_view(t, sizes, strides, t.storage_offset());
}

/// The value of a one-element integer tensor.
int64_t item_int(const Tensor& t) {
  Tensor c = to_device(t, Device());
  return dispatch_all(c.dtype(), "item", [&](auto tag) -> int64_t {
    using T = typename decltype(tag)::type;
    return int64_t(*c.data<T>());
  });
}

/// Validates lo <= idx < size for every entry of `idx` (int64), without writing.
/// Returns false and the first bad index found.
bool index_in_range(const Tensor& idx, int64_t size, bool allow_negative, int64_t* bad) {
  if (idx.numel() == 0) return true;
  TensorIterator it({idx}, 0, idx.sizes());
  return index_offsets_stub.get(idx.device())(it, size, 0, allow_negative, bad);
}

/// Treats a 0-d tensor as 1-d (PyTorch's ensure_nonempty_dim) for the dim-wise ops.
Tensor as_1d_if_scalar(const Tensor& t) { return t.dim() == 0 ? unsqueeze(t, 0) : t; }

// ---- advanced indexing ---------------------------------------------------------------

/// The geometry of self[indices] (see Note [Advanced indexing]).
struct AdvancedIndex {
  Tensor src;      // self restrided to the result shape, stride 0 on the indexed part
  Tensor offsets;  // int64 element offsets, restrided (stride 0) to the result shape
  Shape shape;     // result shape
};

/// Turns bool/uint8 masks into int64 coordinate tensors (one per mask dim) and
/// int32 indices into int64; checks dtypes, mask shapes and the index count.
std::vector<std::optional<Tensor>> expand_indices(
    const Tensor& self, const std::vector<std::optional<Tensor>>& indices) {
  std::vector<std::optional<Tensor>> out;
  for (const auto& opt : indices) {
    if (!opt || !opt->defined()) {
      out.emplace_back();
      continue;
    }
    const Tensor& t = *opt;
    EMBER_CHECK(t.device() == self.device() || t.device().is_cpu(),
                "indices should be either on cpu or on the same device as the indexed tensor (",
                self.device().str(), ")");
    if (is_mask(t.dtype())) {
      int64_t start = int64_t(out.size()), k = t.dim();
      EMBER_CHECK_INDEX(start + k <= self.dim(), "too many indices for tensor of dimension ",
                        self.dim(), " (got ", start + k, ")");
      for (int64_t j = 0; j < k; ++j)
        EMBER_CHECK_INDEX(t.sizes()[j] == self.sizes()[start + j], "The shape of the mask ",
                          shape_str(t.sizes()), " at index ", j,
                          " does not match the shape of the indexed tensor ",
                          shape_str(self.sizes()), " at index ", start + j);
      Tensor nz = nonzero(t);
      for (int64_t j = 0; j < k; ++j) out.emplace_back(select(nz, 1, j));
    } else if (t.dtype() == DType::Int64) {
      out.emplace_back(t);
    } else if (t.dtype() == DType::Int32) {
      out.emplace_back(to_dtype(t, DType::Int64));
    } else {
      raise(ErrorKind::Index,
            "tensors used as indices must be long, int, byte or bool tensors (got ",
            dtype_name(t.dtype()), ")");
    }
  }
  EMBER_CHECK_INDEX(int64_t(out.size()) <= self.dim(), "too many indices for tensor of dimension ",
                    self.dim(), " (got ", out.size(), ")");
  return out;
}

AdvancedIndex make_advanced_index(const Tensor& self,
                                  const std::vector<std::optional<Tensor>>& raw) {
  std::vector<std::optional<Tensor>> idx = expand_indices(self, raw);
  const int64_t nd = self.dim();
  idx.resize(size_t(nd));
  // Broadcast the index tensors together.
  Shape bshape;
  bool first = true, ok = true;
  for (const auto& o : idx) {
    if (!o) continue;
    if (first) {
      bshape = o->sizes();
      first = false;
      continue;
    }
    try {
      bshape = broadcast_shapes(bshape, o->sizes());
    } catch (const Error&) {
      ok = false;
    }
  }
  if (!ok) {
    std::string shapes;
    for (const auto& o : idx)
      if (o) shapes += (shapes.empty() ? "" : ", ") + shape_str(o->sizes());
    raise(ErrorKind::Index,
          "shape mismatch: indexing tensors could not be broadcast together with shapes ", shapes);
  }
  EMBER_CHECK(!first, "index: expected at least one index tensor");
  // Indexed dims separated by a non-indexed one go to the front (NumPy's rule).
  Shape order;  // order[i] = the original dim now at position i
  int64_t lo = nd, hi = -1, count = 0;
  for (int64_t d = 0; d < nd; ++d)
    if (idx[d]) lo = std::min(lo, d), hi = std::max(hi, d), ++count;
  bool adjacent = hi - lo + 1 == count;
  if (adjacent) {
    for (int64_t d = 0; d < nd; ++d) order.push_back(d);
  } else {
    for (int64_t d = 0; d < nd; ++d)
      if (idx[d]) order.push_back(d);
    for (int64_t d = 0; d < nd; ++d)
      if (!idx[d]) order.push_back(d);
    lo = 0;
  }
  const int64_t m = count, nb = int64_t(bshape.size());
  // Fold the index tensors into one offset tensor, validating every index.
  Tensor offs = zeros(bshape, DType::Int64, self.device());
  for (int64_t j = 0; j < m; ++j) {
    int64_t d = order[lo + j];
    const Tensor& t = *idx[d];
    if (offs.numel() == 0) break;
    TensorIterator it({offs, expand_to(t, bshape)}, 1, bshape);
    int64_t bad = 0, size = self.sizes()[d];
    EMBER_CHECK_INDEX(
        index_offsets_stub.get(self.device())(it, size, self.strides()[d], true, &bad), "index ",
        bad, " is out of bounds for dimension ", d, " with size ", size);
  }
  // Result: dims before the run, the broadcast index shape, dims after it.
  AdvancedIndex r;
  Shape src_st, off_st;
  Shape bst = contiguous_strides(bshape);
  for (int64_t i = 0; i < lo; ++i) {
    r.shape.push_back(self.sizes()[order[i]]);
    src_st.push_back(self.strides()[order[i]]);
    off_st.push_back(0);
  }
  for (int64_t i = 0; i < nb; ++i) {
    r.shape.push_back(bshape[i]);
    src_st.push_back(0);
    off_st.push_back(bst[i]);
  }
  for (int64_t i = lo + m; i < nd; ++i) {
    r.shape.push_back(self.sizes()[order[i]]);
    src_st.push_back(self.strides()[order[i]]);
    off_st.push_back(0);
  }
  r.src = restride(self, r.shape, src_st);
  r.offsets = restride(offs, r.shape, off_st);
  return r;
}

// ---- Python-style index tuples ------------------------------------------------------------

struct Sliced {
  Tensor t;                                // self after the basic indices (a view)
  std::vector<std::optional<Tensor>> idx;  // int64 index tensors per dim of t
};

Sliced apply_slicing(const Tensor& self, const std::vector<TensorIndex>& indices) {
  using K = TensorIndex::Kind;
  int64_t specified = 0, ellipses = 0;
  for (const auto& i : indices) {
    if (i.kind == K::Int || i.kind == K::Slice)
      ++specified;
    else if (i.kind == K::Ellipsis)
      ++ellipses;
    else if (i.kind == K::Tensor)
      specified += is_mask(i.tensor.dtype()) ? i.tensor.dim() : 1;
  }
  EMBER_CHECK_INDEX(ellipses <= 1, "an index can only have a single ellipsis ('...')");
  EMBER_CHECK_INDEX(specified <= self.dim(), "too many indices for tensor of dimension ",
                    self.dim());

  Sliced s;
  Tensor r = self;
  int64_t dim = 0;
  auto record = [&](Tensor t) {
    s.idx.resize(size_t(dim));
    s.idx.emplace_back(std::move(t));
  };
  auto apply_bool = [&](bool b) {
    r = unsqueeze(r, dim);
    record(b ? zeros(Shape{1}, DType::Int64, self.device())
             : empty(Shape{0}, DType::Int64, self.device()));
    ++dim;
  };
  for (const auto& i : indices) {
    switch (i.kind) {
      case K::Int:
        r = select(r, dim, i.value);
        break;
      case K::Slice:
        r = slice(r, dim, i.start, i.stop, i.step);
        ++dim;
        break;
      case K::None:
        r = unsqueeze(r, dim);
        ++dim;
        break;
      case K::Ellipsis:
        dim += self.dim() - specified;
        break;
      case K::Bool:
        apply_bool(i.value != 0);
        break;
      case K::Tensor: {
        const Tensor& t = i.tensor;
        DType dt = t.dtype();
        if (t.dim() == 0 && is_integral(dt, true)) {
          // A 0-d integer tensor indexes like an int (a view); a 0-d bool like True/False.
          if (is_mask(dt))
            apply_bool(item_int(t) != 0);
          else
            r = select(r, dim, item_int(t));
        } else if (is_mask(dt)) {
          const Tensor& rr = r;  // masks are checked against the dims they cover
          for (int64_t j = 0; j < t.dim(); ++j)
            EMBER_CHECK_INDEX(dim + j < rr.dim() && t.sizes()[j] == rr.sizes()[dim + j],
                              "The shape of the mask ", shape_str(t.sizes()), " at index ", j,
                              " does not match the shape of the indexed tensor ",
                              shape_str(rr.sizes()), " at index ", dim + j);
          Tensor nz = nonzero(t);
          for (int64_t j = 0; j < t.dim(); ++j) {
            record(select(nz, 1, j));
            ++dim;
          }
        } else if (dt == DType::Int64 || dt == DType::Int32) {
          record(dt == DType::Int64 ? t : to_dtype(t, DType::Int64));
          ++dim;
        } else {
          raise(ErrorKind::Index,
                "tensors used as indices must be long, int, byte or bool tensors (got ",
                dtype_name(dt), ")");
        }
        break;
      }
    }
  }
  s.t = r;  // may be self itself (no basic index): index_set writes through it
  return s;
}

/// PyTorch drops leading size-1 dims of a setitem value: x[0] = ones(1, 3) works.
/// A reshape (a view), so the value's gradient flows through it.
Tensor strip_leading_ones(const Tensor& v) {
  int64_t k = 0;
  while (k < v.dim() && v.sizes()[k] == 1) ++k;
  if (k == 0) return v;
  return reshape(v, Shape(v.sizes().begin() + k, v.sizes().end()));
}

}  // namespace

Tensor index_get(const Tensor& self, const std::vector<TensorIndex>& indices) {
  Sliced s = apply_slicing(self, indices);
  if (!s.idx.empty()) return index(s.t, s.idx);
  if (!s.t.is_same(self)) return s.t;
  // x[...] / x[()]: a new alias of self (AliasBackward0 under autograd).
  Tensor out = make_view(self, self.sizes(), self.strides(), self.storage_offset());
  autograd::record_view("AliasBackward0", self, out, [](const Tensor& g) { return g; });
  return out;
}

void index_set(const Tensor& self, const std::vector<TensorIndex>& indices, const Tensor& value) {
  Sliced s = apply_slicing(self, indices);
  Tensor v = strip_leading_ones(value);
  if (s.idx.empty()) {
    copy_(s.t, v);
    if (s.t.numel() == 0) self.bump_version();  // copy_ skips empty copies
    return;
  }
  index_put_(s.t, s.idx, to_dtype(v, self.dtype()), false);
}

Tensor index(const Tensor& self, const std::vector<std::optional<Tensor>>& indices) {
  autograd::RecordScope scope({&self});
  AdvancedIndex a = make_advanced_index(self, indices);
  Tensor out = empty(a.shape, self.dtype(), self.device());
  if (out.numel() > 0) {
    TensorIterator it({out, a.src, a.offsets}, 1, a.shape);
    index_gather_stub.get(self.device())(it, 1);
  }
  if (scope.rec) {
    scope.done();
    autograd::record_index(self, indices, out);
  }
  return out;
}

namespace {

void check_index_put_dtypes(const Tensor& self, const Tensor& values) {
  EMBER_CHECK(values.dtype() == self.dtype(),
              "Index put requires the source and destination dtypes match, got ",
              dtype_name(self.dtype()), " for the destination and ", dtype_name(values.dtype()),
              " for the source.");
  check_same_device(self, values, "index_put_");
}

const Tensor& index_put_impl(const Tensor& self, const std::vector<std::optional<Tensor>>& indices,
                             const Tensor& values, bool accumulate) {
  check_index_put_dtypes(self, values);
  if (self.numel()) check_no_internal_overlap(self, "index_put_");
  AdvancedIndex a = make_advanced_index(self, indices);  // validates every index first
  Tensor v = values;
  bool fits = v.dim() <= int64_t(a.shape.size());
  for (int64_t i = 0; fits && i < v.dim(); ++i) {
    int64_t vs = v.sizes()[v.dim() - 1 - i], rs = a.shape[a.shape.size() - 1 - size_t(i)];
    fits = vs == rs || vs == 1;
  }
  EMBER_CHECK(fits, "shape mismatch: value tensor of shape ", shape_str(v.sizes()),
              " cannot be broadcast to indexing result of shape ", shape_str(a.shape));
  self.bump_version();  // an in-place op, even when nothing is selected
  if (a.src.numel() == 0) return self;
  // x[idx] = x[...]: read the values before any of them is overwritten.
  if (v.storage() == self.storage()) v = clone(v);
  TensorIterator it({a.src, expand_to(v, a.shape), a.offsets}, 1, a.shape);
  index_scatter_stub.get(self.device())(it, 1, accumulate, Scalar(int64_t(1)));
  return self;
}

}  // namespace

const Tensor& index_put_(const Tensor& self, const std::vector<std::optional<Tensor>>& indices,
                         const Tensor& values, bool accumulate) {
  if (autograd::inplace_records(self, {&values})) {
    // Note [In-place ops under autograd]: runs as index_put, which never reads self's old
    // value in its backward.
    check_index_put_dtypes(self, values);
    if (self.numel()) check_no_internal_overlap(self, "index_put_");
    autograd::inplace_with_grad(self, "index_put_", false, [&](const Tensor& s) {
      return index_put(s, indices, values, accumulate);
    });
    return self;
  }
  return index_put_impl(self, indices, values, accumulate);
}

Tensor index_put(const Tensor& self, const std::vector<std::optional<Tensor>>& indices,
                 const Tensor& values, bool accumulate) {
  autograd::RecordScope scope({&self, &values});
  Tensor r = clone(self);
  index_put_impl(r, indices, values, accumulate);
  if (scope.rec) {
    scope.done();
    autograd::record_index_put(self, indices, values, accumulate, r);
  }
  return r;
}

// ---- dim-wise ops -----------------------------------------------------------------------

namespace {

Tensor index_select_impl(const Tensor& self, int64_t& dim, const Tensor& index) {
  EMBER_CHECK(index.dtype() == DType::Int64 || index.dtype() == DType::Int32,
              "index_select(): Expected dtype int32 or int64 for index, but got ",
              dtype_name(index.dtype()));
  EMBER_CHECK_INDEX(index.dim() <= 1,
                    "index_select(): Index is supposed to be a vector, but got index of shape ",
                    shape_str(index.sizes()));
  check_same_device(self, index, "index_select");
  Tensor idx = to_dtype(index, DType::Int64);
  if (self.dim() == 0) {
    EMBER_CHECK_INDEX(idx.numel() == 1,
                      "index_select(): Index to scalar can have only 1 value, got ", idx.numel(),
                      " value(s)");
    int64_t bad;
    EMBER_CHECK_INDEX(index_in_range(idx, 1, false, &bad), "index out of range in self (index ",
                      bad, " is out of bounds for a 0-dim tensor)");
    dim = 0;
    return clone(self);
  }
  dim = wrap_dim(dim, self.dim());
  int64_t size = self.sizes()[dim], bad = 0;
  EMBER_CHECK_INDEX(index_in_range(idx, size, false, &bad), "index out of range in self (index ",
                    bad, " is out of bounds for dimension ", dim, " with size ", size, ")");
  Shape shape = self.sizes(), src_st = self.strides(), idx_st(size_t(self.dim()), 0);
  shape[dim] = idx.numel();
  src_st[dim] = 0;
  idx_st[dim] = idx.dim() == 1 ? idx.strides()[0] : 0;
  Tensor out = empty(shape, self.dtype(), self.device());
  if (out.numel() == 0) return out;
  TensorIterator it({out, restride(self, shape, src_st), restride(idx, shape, idx_st)}, 1, shape);
  index_gather_stub.get(self.device())(it, self.strides()[dim]);
  return out;
}

}  // namespace

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  autograd::RecordScope scope({&self});
  Tensor out = index_select_impl(self, dim, index);
  if (scope.rec) {
    scope.done();
    autograd::record_index_select(self, dim, index, out);
  }
  return out;
}

namespace {

/// Shape checks shared by gather/scatter; returns the wrapped dim.
int64_t check_gather_scatter(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                             const Tensor* src) {
  EMBER_CHECK(index.dtype() == DType::Int64, op, "(): Expected dtype int64 for index, but got ",
              dtype_name(index.dtype()));
  check_same_device(self, index, op);
  int64_t nd = std::max<int64_t>(self.dim(), 1);
  dim = wrap_dim(dim, self.dim());
  EMBER_CHECK(std::max<int64_t>(index.dim(), 1) == nd,
              "Index tensor must have the same number of dimensions as ", src ? "self" : "input",
              " tensor (", op, ": index has ", index.dim(), ", self has ", self.dim(), ")");
  if (src) {
    EMBER_CHECK(src->dtype() == self.dtype(), op,
                "(): Expected self.dtype to be equal to src.dtype (got ", dtype_name(self.dtype()),
                " and ", dtype_name(src->dtype()), ")");
    EMBER_CHECK(std::max<int64_t>(src->dim(), 1) == nd,
                "Index tensor must have the same number of dimensions as src tensor (", op,
                ": index has ", index.dim(), ", src has ", src->dim(), ")");
  }
  if (index.numel() == 0) return dim;
  Tensor s1 = as_1d_if_scalar(self), i1 = as_1d_if_scalar(index);
  for (int64_t d = 0; d < nd; ++d) {
    bool ok = d == dim || i1.sizes()[d] <= s1.sizes()[d];
    if (src) {
      Tensor c1 = as_1d_if_scalar(*src);
      EMBER_CHECK(ok && i1.sizes()[d] <= c1.sizes()[d], "Expected index ", shape_str(index.sizes()),
                  " to be smaller than self ", shape_str(self.sizes()), " apart from dimension ",
                  dim, " and to be smaller size than src ", shape_str(src->sizes()));
    } else {
      EMBER_CHECK(ok, "Size does not match at dimension ", d, " expected index ",
                  shape_str(index.sizes()), " to be smaller than self ", shape_str(self.sizes()),
                  " apart from dimension ", dim);
    }
  }
  int64_t size = s1.sizes()[dim], bad = 0;
  EMBER_CHECK(index_in_range(index, size, false, &bad), "index ", bad,
              " is out of bounds for dimension ", dim, " with size ", size);
  return dim;
}

/// self restrided to index's shape with stride 0 along dim (both viewed as >= 1-d).
Tensor along_index(const Tensor& self, int64_t dim, const Tensor& index) {
  Tensor s1 = as_1d_if_scalar(self), i1 = as_1d_if_scalar(index);
  Shape st = s1.strides();
  st[dim] = 0;
  return restride(s1, i1.sizes(), st);
}

const Tensor& scatter_impl(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                           const Tensor& src_in, bool accumulate, bool src_is_value) {
  dim = check_gather_scatter(op, self, dim, index, src_is_value ? nullptr : &src_in);
  check_no_internal_overlap(self, op);
  if (index.numel() == 0) return self;
  // The kernel reads the index while writing self: never let them share memory.
  Tensor i1 = as_1d_if_scalar(index.storage() == self.storage() ? clone(index) : index);
  Tensor src = src_in;
  if (src_is_value) {
    src = expand_to(src, i1.sizes());
  } else {
    if (src.storage() == self.storage()) src = clone(src);
    Tensor c1 = as_1d_if_scalar(src);
    src = restride(c1, i1.sizes(), c1.strides());
  }
  TensorIterator it({along_index(self, dim, index), src, i1}, 1, i1.sizes());
  index_scatter_stub.get(self.device())(it, as_1d_if_scalar(self).strides()[dim], accumulate,
                                        Scalar(int64_t(1)));
  self.bump_version();
  return self;
}

}  // namespace

Tensor gather(const Tensor& self, int64_t dim, const Tensor& index) {
  autograd::RecordScope scope({&self});
  dim = check_gather_scatter("gather", self, dim, index, nullptr);
  Tensor out = empty(index.sizes(), self.dtype(), self.device());
  if (out.numel() > 0) {
    Tensor i1 = as_1d_if_scalar(index);
    TensorIterator it({as_1d_if_scalar(out), along_index(self, dim, index), i1}, 1, i1.sizes());
    index_gather_stub.get(self.device())(it, as_1d_if_scalar(self).strides()[dim]);
  }
  if (scope.rec) {
    scope.done();
    autograd::record_gather(self, dim, index, out);
  }
  return out;
}

// The scatter family: the out-of-place op clones self, runs the in-place kernel
// and records; the in-place op under autograd runs as the out-of-place one
// (Note [In-place ops under autograd]; no formula reads self's old value).

Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  autograd::RecordScope scope({&self, &src});
  Tensor r = clone(self);
  scatter_impl("scatter", r, dim, index, src, false, false);
  if (scope.rec) {
    scope.done();
    autograd::record_scatter(self, wrap_dim(dim, self.dim()), index, &src, r);
  }
  return r;
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, Scalar value) {
  autograd::RecordScope scope({&self});
  Tensor r = clone(self);
  scatter_impl("scatter", r, dim, index, scalar_tensor(value, self.dtype(), self.device()), false,
               true);
  if (scope.rec) {
    scope.done();
    autograd::record_scatter(self, wrap_dim(dim, self.dim()), index, nullptr, r);
  }
  return r;
}
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  autograd::RecordScope scope({&self, &src});
  Tensor r = clone(self);
  scatter_impl("scatter_add", r, dim, index, src, true, false);
  if (scope.rec) {
    scope.done();
    autograd::record_scatter_add(self, wrap_dim(dim, self.dim()), index, src, r);
  }
  return r;
}
const Tensor& scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  if (autograd::inplace_records(self, {&src})) {
    check_no_internal_overlap(self, "scatter");
    autograd::inplace_with_grad(self, "scatter_", false,
                                [&](const Tensor& s) { return scatter(s, dim, index, src); });
    return self;
  }
  return scatter_impl("scatter", self, dim, index, src, false, false);
}
const Tensor& scatter_(const Tensor& self, int64_t dim, const Tensor& index, Scalar value) {
  if (autograd::inplace_records(self, {})) {
    check_no_internal_overlap(self, "scatter");
    autograd::inplace_with_grad(self, "scatter_", false,
                                [&](const Tensor& s) { return scatter(s, dim, index, value); });
    return self;
  }
  return scatter_impl("scatter", self, dim, index,
                      scalar_tensor(value, self.dtype(), self.device()), false, true);
}
const Tensor& scatter_add_(const Tensor& self, int64_t dim, const Tensor& index,
                           const Tensor& src) {
  if (autograd::inplace_records(self, {&src})) {
    check_no_internal_overlap(self, "scatter_add");
    autograd::inplace_with_grad(self, "scatter_add_", false,
                                [&](const Tensor& s) { return scatter_add(s, dim, index, src); });
    return self;
  }
  return scatter_impl("scatter_add", self, dim, index, src, true, false);
}

// scatter(..., reduce='add'|'multiply'): the legacy reductions, through the
// scatter_reduce kernel with self included. Not differentiable in PyTorch: a result
// that requires grad gets a node whose backward raises.
namespace {

ScatterReduce legacy_reduce(const std::string& reduce) {
  EMBER_CHECK(reduce == "add" || reduce == "multiply",
              "reduce argument must be either add or multiply.");
  return reduce == "add" ? ScatterReduce::Sum : ScatterReduce::Prod;
}

// self <- self (+|*)= src at index along dim, in place, no autograd; `src` null: `value`.
const Tensor& scatter_reduce_into(const Tensor& self, int64_t dim, const Tensor& index,
                                  const Tensor* src, Scalar value, ScatterReduce k) {
  dim = check_gather_scatter("scatter", self, dim, index, src);
  check_no_internal_overlap(self, "scatter");
  if (index.numel() == 0) return self;
  autograd::GradModeGuard no_grad(false);
  Tensor i1 = contiguous(as_1d_if_scalar(index));
  Tensor s;
  if (!src) {
    s = full(i1.sizes(), value, self.dtype(), self.device());
  } else {  // src's leading block of index's shape
    s = as_1d_if_scalar(*src);
    for (int64_t d = 0; d < s.dim(); ++d)
      if (s.sizes()[d] != i1.sizes()[d]) s = narrow(s, d, 0, i1.sizes()[d]);
    s = contiguous(s);
  }
  Tensor out = contiguous(clone(as_1d_if_scalar(self)));
  scatter_reduce_stub.get(self.device())(out, dim, i1, s, k, true);
  copy_(as_1d_if_scalar(self), out);
  return self;
}

void warn_reduce_deprecated() {
  // PyTorch warns once per process; Python's warning filters show it once per call site.
  warn(
      "The reduce argument of torch.scatter with Tensor src is deprecated and will be removed "
      "in a future PyTorch release. Use torch.scatter_reduce instead for more reduction "
      "options.");
}

Tensor scatter_reduce_legacy(const Tensor& self, int64_t dim, const Tensor& index,
                             const Tensor* src, Scalar value, const std::string& reduce) {
  ScatterReduce k = legacy_reduce(reduce);
  if (src) warn_reduce_deprecated();
  Tensor r;
  {
    autograd::GradModeGuard no_grad(false);
    r = clone(self);
    scatter_reduce_into(r, dim, index, src, value, k);
  }
  const bool rec = src ? autograd::compute_requires_grad({&self, src})
                       : autograd::compute_requires_grad({&self});
  if (rec && is_floating(r.dtype())) {
    auto fn = [](autograd::LambdaNode&, autograd::variable_list&&) -> autograd::variable_list {
      EMBER_ERROR("derivative for aten::scatter is not implemented");
    };
    if (src)
      autograd::record("NotImplemented", {&self, src}, r, fn);
    else
      autograd::record("NotImplemented", {&self}, r, fn);
  }
  return r;
}

}  // namespace

Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
               const std::string& reduce) {
  return scatter_reduce_legacy(self, dim, index, &src, Scalar(int64_t(0)), reduce);
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, Scalar value,
               const std::string& reduce) {
  return scatter_reduce_legacy(self, dim, index, nullptr, value, reduce);
}
const Tensor& scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                       const std::string& reduce) {
  if (autograd::inplace_records(self, {&src}))
    return autograd::inplace_with_grad(self, "scatter_", false, [&](const Tensor& s) {
      return scatter(s, dim, index, src, reduce);
    });
  ScatterReduce k = legacy_reduce(reduce);
  warn_reduce_deprecated();
  scatter_reduce_into(self, dim, index, &src, Scalar(int64_t(0)), k);
  self.bump_version();
  return self;
}
const Tensor& scatter_(const Tensor& self, int64_t dim, const Tensor& index, Scalar value,
                       const std::string& reduce) {
  if (autograd::inplace_records(self, {}))
    return autograd::inplace_with_grad(self, "scatter_", false, [&](const Tensor& s) {
      return scatter(s, dim, index, value, reduce);
    });
  scatter_reduce_into(self, dim, index, nullptr, value, legacy_reduce(reduce));
  self.bump_version();
  return self;
}

namespace {

const Tensor& index_add_impl(const Tensor& self, int64_t& dim, const Tensor& index,
                             const Tensor& source, Scalar alpha) {
  EMBER_CHECK(index.dtype() == DType::Int64 || index.dtype() == DType::Int32,
              "index_add_(): Expected dtype int32/int64 for index, but got ",
              dtype_name(index.dtype()));
  EMBER_CHECK_INDEX(index.dim() <= 1,
                    "index_add_(): Index is supposed to be a vector, but got index of shape ",
                    shape_str(index.sizes()));
  EMBER_CHECK(source.dtype() == self.dtype(), "index_add_(): self (", dtype_name(self.dtype()),
              ") and source (", dtype_name(source.dtype()), ") must have the same scalar type");
  EMBER_CHECK(!(alpha.is_floating() && !is_floating(self.dtype())),
              "For integral input tensors, argument alpha must not be a floating point number.");
  check_same_device(self, index, "index_add_");
  check_same_device(self, source, "index_add_");
  check_no_internal_overlap(self, "index_add_");
  dim = wrap_dim(dim, self.dim());
  Tensor s1 = as_1d_if_scalar(self), src1 = as_1d_if_scalar(source);
  EMBER_CHECK(s1.dim() == src1.dim(), "index_add_(): source ", shape_str(source.sizes()),
              " and self ", shape_str(self.sizes()), " must have the same number of dimensions");
  int64_t n = index.numel();
  EMBER_CHECK(src1.sizes()[dim] == n, "index_add_(): Number of indices (", n,
              ") should be equal to source.size(dim) (", src1.sizes()[dim], ")");
  for (int64_t d = 0; d < s1.dim(); ++d)
    EMBER_CHECK(d == dim || s1.sizes()[d] == src1.sizes()[d], "index_add_(): source ",
                shape_str(source.sizes()), " must match self ", shape_str(self.sizes()),
                " apart from dimension ", dim);
  Tensor idx = index.storage() == self.storage() ? to_dtype(index, DType::Int64, true)
                                                 : to_dtype(index, DType::Int64);
  int64_t size = s1.sizes()[dim], bad = 0;
  EMBER_CHECK_INDEX(index_in_range(idx, size, false, &bad), "index out of range in self (index ",
                    bad, " is out of bounds for dimension ", dim, " with size ", size, ")");
  if (src1.numel() == 0) return self;
  Tensor src = source.storage() == self.storage() ? as_1d_if_scalar(clone(source)) : src1;
  Shape dst_st = s1.strides(), idx_st(size_t(s1.dim()), 0);
  dst_st[dim] = 0;
  idx_st[dim] = idx.dim() == 1 ? idx.strides()[0] : 0;
  TensorIterator it({restride(s1, src.sizes(), dst_st), src, restride(idx, src.sizes(), idx_st)}, 1,
                    src.sizes());
  index_scatter_stub.get(self.device())(it, s1.strides()[dim], true, alpha);
  self.bump_version();
  return self;
}

}  // namespace

Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                 Scalar alpha) {
  autograd::RecordScope scope({&self, &source});
  Tensor r = clone(self);
  index_add_impl(r, dim, index, source, alpha);
  if (scope.rec) {
    scope.done();
    autograd::record_index_add(self, dim, index, source, alpha, r);
  }
  return r;
}

const Tensor& index_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                         Scalar alpha) {
  if (autograd::inplace_records(self, {&source})) {
    check_no_internal_overlap(self, "index_add_");
    autograd::inplace_with_grad(self, "index_add_", false, [&](const Tensor& s) {
      return index_add(s, dim, index, source, alpha);
    });
    return self;
  }
  return index_add_impl(self, dim, index, source, alpha);
}

// ---- masks ----------------------------------------------------------------------------------

namespace {

void check_masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value) {
  EMBER_CHECK(mask.dtype() == DType::Bool,
              "masked_fill_ only supports boolean masks, but got mask with dtype ",
              dtype_name(mask.dtype()));
  EMBER_CHECK(value.dim() == 0,
              "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  check_same_device(self, mask, "masked_fill_");
}

const Tensor& masked_fill_impl(const Tensor& self, const Tensor& mask, const Tensor& value) {
  check_masked_fill(self, mask, value);
  check_no_internal_overlap(self, "masked_fill_");
  Tensor m = expand_to(mask, self.sizes(), "masked_fill_");
  if (self.numel() == 0) return self;
  if (m.storage() == self.storage()) m = clone(m);
  Tensor v = expand_to(to_device(to_dtype(value, self.dtype()), self.device()), self.sizes());
  TensorIterator it({self, m, v, self}, 1, self.sizes());
  where_stub.get(self.device())(it);
  self.bump_version();
  return self;
}

/// `grad_value`: the value tensor when it is differentiable (MaskedFillBackward1),
/// null for a Python number (MaskedFillBackward0).
Tensor masked_fill_impl_out(const Tensor& self, const Tensor& mask, const Tensor& value,
                            const Tensor* grad_value) {
  autograd::RecordScope scope({&self, grad_value});
  Shape shape = broadcast_shapes(self.sizes(), mask.sizes());
  Tensor r = clone(expand_to(self, shape));
  masked_fill_impl(r, mask, value);
  if (scope.rec) {
    scope.done();
    autograd::record_masked_fill(self, mask, grad_value, r);
  }
  return r;
}

/// The checks the in-place kernel makes, run before an in-place op under autograd.
void check_masked_fill_inplace(const Tensor& self, const Tensor& mask, const Tensor& value) {
  check_masked_fill(self, mask, value);
  check_no_internal_overlap(self, "masked_fill_");
  expand_to(mask, self.sizes(), "masked_fill_");
}

}  // namespace

const Tensor& masked_fill_(const Tensor& self, const Tensor& mask, const Tensor& value) {
  if (autograd::inplace_records(self, {&value})) {
    check_masked_fill_inplace(self, mask, value);
    autograd::inplace_with_grad(self, "masked_fill_", false,
                                [&](const Tensor& s) { return masked_fill(s, mask, value); });
    return self;
  }
  return masked_fill_impl(self, mask, value);
}

const Tensor& masked_fill_(const Tensor& self, const Tensor& mask, Scalar value) {
  Tensor v = scalar_tensor(value, self.dtype(), self.device());
  if (autograd::inplace_records(self, {})) {
    check_masked_fill_inplace(self, mask, v);
    autograd::inplace_with_grad(self, "masked_fill_", false,
                                [&](const Tensor& s) { return masked_fill(s, mask, value); });
    return self;
  }
  return masked_fill_impl(self, mask, v);
}

Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value) {
  return masked_fill_impl_out(self, mask, value, &value);
}

Tensor masked_fill(const Tensor& self, const Tensor& mask, Scalar value) {
  return masked_fill_impl_out(self, mask, scalar_tensor(value, self.dtype(), self.device()),
                              nullptr);
}

Tensor masked_select(const Tensor& self, const Tensor& mask) {
  EMBER_CHECK(mask.dtype() == DType::Bool, "masked_select: expected BoolTensor for mask, but got ",
              dtype_name(mask.dtype()));
  check_same_device(self, mask, "masked_select");
  autograd::RecordScope scope({&self});
  Shape shape = broadcast_shapes(self.sizes(), mask.sizes());
  Tensor s = expand_to(self, shape, "masked_select"), m = expand_to(mask, shape, "masked_select");
  if (s.dim() == 0) {
    s = unsqueeze(s, 0);
    m = unsqueeze(m, 0);
  }
  Tensor out = index(s, {std::optional<Tensor>(m)});
  if (scope.rec) {
    scope.done();
    autograd::record_masked_select(self, mask, out);
  }
  return out;
}

Tensor take(const Tensor& self, const Tensor& index) {
  EMBER_CHECK(index.dtype() == DType::Int64, "take(): Expected a long tensor for index, but got ",
              dtype_name(index.dtype()));
  check_same_device(self, index, "take");
  autograd::RecordScope scope({&self});
  int64_t n = self.numel();
  EMBER_CHECK_INDEX(n > 0 || index.numel() == 0, "take(): tried to take from an empty tensor");
  Tensor flat = reshape(self, Shape{n});
  Tensor offs = zeros(index.sizes(), DType::Int64, self.device());
  if (index.numel()) {
    TensorIterator it({offs, index}, 1, index.sizes());
    int64_t bad = 0;
    EMBER_CHECK_INDEX(
        index_offsets_stub.get(self.device())(it, n, n ? flat.strides()[0] : 1, true, &bad),
        "out of range: tried to access index ", bad, " on a tensor of ", n, " elements.");
  }
  Tensor out = empty(index.sizes(), self.dtype(), self.device());
  if (out.numel() > 0) {
    TensorIterator it({out, restride(flat, index.sizes(), Shape(size_t(index.dim()), 0)), offs}, 1,
                      index.sizes());
    index_gather_stub.get(self.device())(it, 1);
  }
  if (scope.rec) {
    scope.done();
    autograd::record_take(self, index, out);
  }
  return out;
}

// ---- nonzero
// -------------------------------------------------------------------------------------

Tensor nonzero(const Tensor& self) { return nonzero_stub.get(self.device())(self); }

std::vector<Tensor> nonzero_numpy(const Tensor& self) {
  Tensor nz = nonzero(self.dim() == 0 ? unsqueeze(self, 0) : self);
  return unbind(nz, 1);
}

Tensor argwhere(const Tensor& self) { return nonzero(self); }

}  // namespace ember
