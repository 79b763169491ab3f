// Indexing front-ends: validate, compute shapes, restride, call the kernels
// (see Note [Advanced indexing] in index.h).
#include "ember/ops/index.h"
#include "ember/jit/trace_hook.h"

#include <algorithm>

#include "ember/autograd/derivatives/index.h"
#include "ember/autograd/record.h"
#include "ember/ops/index_detail.h"
#include "ember/ops/ops.h"
#include "ember/ops/reduce.h"
#include "ember/ops/view.h"

#include "ember/ops/sparse.h"

namespace ember {

DispatchStub<IndexGatherFn> index_gather_stub("index");
DispatchStub<IndexScatterFn> index_scatter_stub("index_put_");
DispatchStub<IndexOffsetsFn> index_offsets_stub("index");
DispatchStub<NonzeroFn> nonzero_stub("nonzero");

namespace index_detail {

Tensor restride(const Tensor& t, const Shape& sizes, const Shape& strides) {
  return make_view(t, sizes, strides, t.storage_offset());
}

bool index_in_range(const Tensor& idx, int64_t size, bool allow_negative, int64_t* bad) {
  if (idx.numel() == 0) return true;
  TensorIterator it({idx}, 0, idx.sizes());
  return index_offsets_stub.get(idx.device())(it, size, 0, allow_negative, bad);
}

Tensor as_1d_if_scalar(const Tensor& t) { return t.dim() == 0 ? unsqueeze(t, 0) : t; }

}  // namespace index_detail

using namespace index_detail;

namespace {

bool is_mask(DType t) { return t == DType::Bool || t == DType::UInt8; }

/// The value of a one-element integer tensor.
int64_t item_int(const Tensor& t) {
  Tensor c = to_device(t, Device());
  return dispatch_all(c.dtype(), "item", [&](auto tag) -> int64_t {
    using T = typename decltype(tag)::type;
    return int64_t(*c.data<T>());
  });
}

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
    EMBER_CHECK(opt->device() == self.device() || opt->device().is_cpu(),
                "indices should be either on cpu or on the same device as the indexed tensor (",
                self.device().str(), ")");
    // CPU indices of a CUDA tensor: the kernels read them on the device.
    const Tensor t = opt->device() == self.device() ? *opt : to_device(*opt, self.device());
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
  EMBER_TRACE("aten::index(Tensor self, Tensor?[] indices) -> Tensor", index, self, indices);
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
  // A CPU 0-d value (x[i] = ember.tensor(1.0) on a CUDA x) is moved: the kernel reads it there.
  Tensor v = values.device() == self.device() ? values : to_device(values, self.device());
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
  EMBER_TRACE(
      "aten::index_put_(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> "
      "Tensor",
      index_put_, self, indices, values, accumulate);
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
  EMBER_TRACE(
      "aten::index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> "
      "Tensor",
      index_put, self, indices, values, accumulate);
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
  Tensor idx = to_device(to_dtype(index, DType::Int64), self.device());  // a CPU 0-d index
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
  EMBER_TRACE("aten::index_select(Tensor self, int dim, Tensor index) -> Tensor", index_select,
              self, dim, index);
  if (__builtin_expect(self.is_sparse(), 0)) return sparse_index_select(self, dim, index);
  autograd::RecordScope scope({&self});
  Tensor out = index_select_impl(self, dim, index);
  if (scope.rec) {
    scope.done();
    autograd::record_index_select(self, dim, index, out);
  }
  return out;
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
  EMBER_TRACE("aten::masked_fill_.Tensor_Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor",
              masked_fill_, self, mask, value);
  if (autograd::inplace_records(self, {&value})) {
    check_masked_fill_inplace(self, mask, value);
    autograd::inplace_with_grad(self, "masked_fill_", false,
                                [&](const Tensor& s) { return masked_fill(s, mask, value); });
    return self;
  }
  return masked_fill_impl(self, mask, value);
}

const Tensor& masked_fill_(const Tensor& self, const Tensor& mask, Scalar value) {
  EMBER_TRACE("aten::masked_fill_.Tensor_Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor",
              masked_fill_, self, mask, value);
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
  EMBER_TRACE("aten::masked_fill.Tensor_Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor",
              masked_fill, self, mask, value);
  return masked_fill_impl_out(self, mask, value, &value);
}

Tensor masked_fill(const Tensor& self, const Tensor& mask, Scalar value) {
  EMBER_TRACE("aten::masked_fill.Tensor_Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor",
              masked_fill, self, mask, value);
  return masked_fill_impl_out(self, mask, scalar_tensor(value, self.dtype(), self.device()),
                              nullptr);
}

Tensor masked_select(const Tensor& self, const Tensor& mask) {
  EMBER_TRACE("aten::masked_select(Tensor self, Tensor mask) -> Tensor", masked_select, self, mask);
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
  EMBER_TRACE("aten::take(Tensor self, Tensor index) -> Tensor", take, self, index);
  EMBER_CHECK(index.dtype() == DType::Int64, "take(): Expected a long tensor for index, but got ",
              dtype_name(index.dtype()));
  check_same_device(self, index, "take");
  if (index.device() != self.device()) return take(self, to_device(index, self.device()));
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

Tensor nonzero(const Tensor& self) {
  EMBER_TRACE("aten::nonzero(Tensor self) -> Tensor", nonzero, self);
  return nonzero_stub.get(self.device())(self);
}

std::vector<Tensor> nonzero_numpy(const Tensor& self) {
  EMBER_TRACE("aten::nonzero_numpy(Tensor self) -> Tensor[]", nonzero_numpy, self);
  Tensor nz = nonzero(self.dim() == 0 ? unsqueeze(self, 0) : self);
  return unbind(nz, 1);
}

Tensor argwhere(const Tensor& self) {
  EMBER_TRACE("aten::argwhere(Tensor self) -> Tensor", argwhere, self);
  return nonzero(self);
}

}  // namespace ember
