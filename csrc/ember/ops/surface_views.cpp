// Shape helpers and views with PyTorch's extra spellings (ops/surface.h).
#include <algorithm>
#include <limits>
#include <numeric>

#include "ember/autograd/functions.h"
#include "ember/core/parallel.h"
#include "ember/jit/trace_hook.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/join.h"
#include "ember/ops/linalg.h"
#include "ember/ops/reduce.h"
#include "ember/ops/surface.h"
#include "ember/ops/view.h"

#include "ember/ops/sparse.h"

namespace ember {

// ---- in-place composites and out= ---------------------------------------------------

const Tensor& inplace_composite(const Tensor& self, const char* name,
                                const std::vector<const Tensor*>& others,
                                const std::function<Tensor(const Tensor&)>& f) {
  auto checked = [&](const Tensor& src) {
    Tensor r = f(src);
    check_result_cast(r.dtype(), self.dtype(), name);
    EMBER_CHECK(r.sizes() == self.sizes(), name, ": output with shape ", shape_str(self.sizes()),
                " doesn't match the broadcast shape ", shape_str(r.sizes()));
    return r;
  };
  bool rec = autograd::grad_enabled() && autograd::requires_grad(self);
  for (const Tensor* t : others)
    rec = rec || (autograd::grad_enabled() && t && autograd::requires_grad(*t));
  if (!rec) {
    Tensor r = checked(self);
    return copy_(self, r);
  }
  return autograd::inplace_with_grad(self, name, true, checked);
}

const Tensor& write_out(const Tensor& result, const Tensor& out, const char* op) {
  autograd::check_out_not_differentiable(op, {&result});
  check_result_cast(result.dtype(), out.dtype(), op);
  EMBER_CHECK(out.device() == result.device(), op, ": expected out on ", result.device().str(),
              " but got out on ", out.device().str());
  resize_output(out, result.sizes());
  check_no_internal_overlap(out, op);
  autograd::GradModeGuard no_grad(false);
  return copy_(out, result);
}

// ---- allocation --------------------------------------------------------------------

Tensor empty_strided(const Shape& sizes, const Shape& strides, DType dtype, Device device) {
  EMBER_TRACE(
      "aten::empty_strided(int[] size, int[] strides, ScalarType dtype, Device device) -> Tensor",
      empty_strided, sizes, strides, dtype, device);
  EMBER_CHECK(sizes.size() == strides.size(),
              "empty_strided: mismatch in length of strides and shape (", sizes.size(), " sizes, ",
              strides.size(), " strides)");
  int64_t extent = 1;
  bool empty_t = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    EMBER_CHECK(sizes[i] >= 0, "empty_strided: negative dimension ", sizes[i]);
    EMBER_CHECK(strides[i] >= 0, "empty_strided: negative stride ", strides[i]);
    if (sizes[i] == 0)
      empty_t = true;
    else
      extent = checked_add(extent, checked_mul(sizes[i] - 1, strides[i], "empty_strided"),
                           "empty_strided");
  }
  Tensor buf = empty(Shape{empty_t ? 0 : extent}, dtype, device);
  return make_view(buf, sizes, strides, 0);
}

static bool non_overlapping_dense(const Tensor& a) {
  int64_t n = a.dim();
  std::vector<int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  std::sort(perm.begin(), perm.end(),
            [&](int64_t x, int64_t y) { return a.strides()[x] < a.strides()[y]; });
  int64_t expect = 1;
  for (int64_t d : perm) {
    if (a.sizes()[d] == 1) continue;
    if (a.strides()[d] != expect) return false;
    expect *= a.sizes()[d];
  }
  return true;
}

Shape preserve_strides(const Tensor& a) {
  if (non_overlapping_dense(a)) return a.strides();
  int64_t n = a.dim();
  std::vector<int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  // Outermost first: larger strides outside; ties keep the dim order.
  std::stable_sort(perm.begin(), perm.end(),
                   [&](int64_t x, int64_t y) { return a.strides()[x] > a.strides()[y]; });
  Shape st(static_cast<size_t>(n));
  int64_t s = 1;
  for (int64_t i = n - 1; i >= 0; --i) {
    st[perm[i]] = s;
    s *= std::max<int64_t>(a.sizes()[perm[i]], 1);
  }
  return st;
}

static Shape channels_last_strides(const Shape& sz, bool three_d) {
  int64_t n = int64_t(sz.size());
  EMBER_CHECK(n == (three_d ? 5 : 4), "required rank ", three_d ? 5 : 4,
              " tensor to use channels_last", three_d ? "_3d" : "", " format (got rank ", n, ")");
  Shape st(sz.size());
  int64_t s = 1;
  st[1] = s;
  s *= std::max<int64_t>(sz[1], 1);
  for (int64_t i = n - 1; i >= 2; --i) {
    st[i] = s;
    s *= std::max<int64_t>(sz[i], 1);
  }
  st[0] = s;
  return st;
}

Tensor empty_like_format(const Tensor& a, MemoryFormat fmt, std::optional<DType> dtype) {
  DType dt = dtype.value_or(a.dtype());
  switch (fmt) {
    case MemoryFormat::Contiguous:
      return empty(a.sizes(), dt, a.device());
    case MemoryFormat::ChannelsLast:
      return empty_strided(a.sizes(), channels_last_strides(a.sizes(), false), dt, a.device());
    case MemoryFormat::ChannelsLast3d:
      return empty_strided(a.sizes(), channels_last_strides(a.sizes(), true), dt, a.device());
    default:
      return empty_strided(a.sizes(), preserve_strides(a), dt, a.device());
  }
}

Tensor clone(const Tensor& a, MemoryFormat fmt) {
  if (fmt == MemoryFormat::Contiguous || a.is_sparse()) return clone(a);
  if (fmt == MemoryFormat::Preserve && a.is_contiguous()) return clone(a);
  Tensor out = empty_like_format(a, fmt);
  {
    autograd::GradModeGuard no_grad(false);
    if (a.numel()) copy_(out, a);
  }
  *out.impl()->version = 0;
  if (autograd::compute_requires_grad({&a})) autograd::record_clone(a, out);
  return out;
}

// ---- views and shapes ------------------------------------------------------------------

Tensor ravel(const Tensor& a) {
  EMBER_TRACE("aten::ravel(Tensor self) -> Tensor", ravel, a);
  return reshape(a, Shape{-1});
}

Tensor mT(const Tensor& a) {
  EMBER_TRACE("aten::mT(Tensor self) -> Tensor", mT, a);
  EMBER_CHECK(a.dim() >= 2, "tensor.mT is only supported on matrices or batches of matrices. Got ",
              a.dim(), "-D tensor.");
  return transpose(a, -2, -1);
}

Tensor adjoint(const Tensor& a) {
  EMBER_TRACE("aten::adjoint(Tensor self) -> Tensor", adjoint, a);
  EMBER_CHECK(a.dim() >= 2,
              "tensor.adjoint() is only supported on matrices or batches of matrices. Got ",
              a.dim(), "-D tensor.");
  return transpose(a, -2, -1);
}

Tensor numpy_T(const Tensor& a) {
  EMBER_TRACE("aten::numpy_T(Tensor self) -> Tensor", numpy_T, a);
  Shape dims;
  for (int64_t i = a.dim() - 1; i >= 0; --i) dims.push_back(i);
  return permute(a, dims);
}

// Pieces a[:b0], a[b0:b1], ..., a[bk:] along dim, each bound a Python slice bound.
static std::vector<Tensor> split_at(const Tensor& a, const std::vector<int64_t>& bounds,
                                    int64_t dim) {
  std::vector<Tensor> out;
  std::optional<int64_t> prev;
  for (int64_t b : bounds) {
    out.push_back(slice(a, dim, prev, b, 1));
    prev = b;
  }
  out.push_back(slice(a, dim, prev, std::nullopt, 1));
  return out;
}

std::vector<Tensor> tensor_split(const Tensor& a, int64_t sections, int64_t dim) {
  EMBER_TRACE("aten::tensor_split.int_int(Tensor self, int sections, int dim) -> Tensor[]",
              tensor_split, a, sections, dim);
  EMBER_CHECK(
      a.dim() > 0,
      "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims");
  EMBER_CHECK(sections > 0, "number of sections must be larger than 0, got ", sections);
  dim = wrap_dim(dim, a.dim());
  int64_t size = a.sizes()[dim], q = size / sections, r = size % sections;
  std::vector<int64_t> bounds;
  int64_t at = 0;
  for (int64_t i = 0; i + 1 < sections; ++i) {
    at += q + (i < r ? 1 : 0);
    bounds.push_back(at);
  }
  return split_at(a, bounds, dim);
}

std::vector<Tensor> tensor_split(const Tensor& a, const std::vector<int64_t>& indices,
                                 int64_t dim) {
  EMBER_TRACE("aten::tensor_split.intList_int(Tensor self, int[] indices, int dim) -> Tensor[]",
              tensor_split, a, indices, dim);
  EMBER_CHECK(
      a.dim() > 0,
      "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims");
  return split_at(a, indices, wrap_dim(dim, a.dim()));
}

static int64_t hvd_dim(const Tensor& a, char which) {
  const char* name = which == 'h' ? "hsplit" : which == 'v' ? "vsplit" : "dsplit";
  int64_t need = which == 'h' ? 1 : which == 'v' ? 2 : 3;
  EMBER_CHECK(a.dim() >= need, "ember.", name, " requires a tensor with at least ", need,
              " dimension", need > 1 ? "s" : "", ", but got a tensor with ", a.dim(),
              " dimensions!");
  if (which == 'h') return a.dim() == 1 ? 0 : 1;
  return which == 'v' ? 0 : 2;
}

std::vector<Tensor> hvd_split(const Tensor& a, char which, int64_t sections) {
  int64_t dim = hvd_dim(a, which);
  const char* name = which == 'h' ? "hsplit" : which == 'v' ? "vsplit" : "dsplit";
  EMBER_CHECK(sections != 0 && a.sizes()[dim] % sections == 0, "ember.", name,
              " attempted to split along dimension ", dim, ", but the size of the dimension ",
              a.sizes()[dim], " is not divisible by the split_size ", sections, "!");
  return tensor_split(a, sections, dim);
}

std::vector<Tensor> hvd_split(const Tensor& a, char which, const std::vector<int64_t>& indices) {
  return tensor_split(a, indices, hvd_dim(a, which));
}

Tensor narrow_copy(const Tensor& a, int64_t dim, int64_t start, int64_t length) {
  EMBER_TRACE("aten::narrow_copy(Tensor self, int dim, int start, int length) -> Tensor",
              narrow_copy, a, dim, start, length);
  if (a.is_sparse()) return sparse_narrow_copy(a, dim, start, length);
  return clone(narrow(a, dim, start, length));
}

Tensor broadcast_to(const Tensor& a, const Shape& shape) {
  EMBER_TRACE("aten::broadcast_to(Tensor self, int[] size) -> Tensor", broadcast_to, a, shape);
  return expand(a, shape);
}

std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& ts) {
  EMBER_TRACE("aten::broadcast_tensors(Tensor[] tensors) -> Tensor[]", broadcast_tensors, ts);
  Shape shape;
  for (const Tensor& t : ts) {
    Shape s = t.sizes();
    size_t nd = std::max(shape.size(), s.size());
    Shape r(nd);
    for (size_t i = 0; i < nd; ++i) {
      int64_t x = i + shape.size() >= nd ? shape[i + shape.size() - nd] : 1;
      int64_t y = i + s.size() >= nd ? s[i + s.size() - nd] : 1;
      EMBER_CHECK(x == y || x == 1 || y == 1, "The size of tensor a (", x,
                  ") must match the size of tensor b (", y, ") at non-singleton dimension ", i);
      r[i] = x == 1 ? y : x;
    }
    shape = r;
  }
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(expand(t, shape));
  return out;
}

std::vector<Tensor> meshgrid(const std::vector<Tensor>& ts, const std::string& indexing) {
  EMBER_TRACE("aten::meshgrid(Tensor[] tensors, str indexing) -> Tensor[]", meshgrid, ts, indexing);
  EMBER_CHECK(!ts.empty(), "ember.meshgrid: expects a non-empty TensorList");
  EMBER_CHECK(indexing == "ij" || indexing == "xy",
              "ember.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: ", indexing);
  for (const Tensor& t : ts) {
    EMBER_CHECK(t.dim() <= 1,
                "ember.meshgrid: Expected 0D or 1D tensor in the tensor list but got: ", t.dim(),
                "D");
    EMBER_CHECK(t.dtype() == ts[0].dtype(),
                "ember.meshgrid: expects all tensors to have the same dtype");
  }
  size_t n = ts.size();
  bool swap = indexing == "xy" && n >= 2;
  Shape shape;
  for (const Tensor& t : ts) shape.push_back(t.numel());
  if (swap) std::swap(shape[0], shape[1]);
  std::vector<Tensor> out;
  for (size_t i = 0; i < n; ++i) {
    size_t pos = i;
    if (swap && i < 2) pos = 1 - i;
    Shape v(n, 1);
    v[pos] = ts[i].numel();
    out.push_back(expand(reshape(ts[i], v), shape));
  }
  return out;
}

Tensor block_diag(const std::vector<Tensor>& ts) {
  EMBER_TRACE("aten::block_diag(Tensor[] tensors) -> Tensor", block_diag, ts);
  int64_t rows = 0, cols = 0;
  DType dt = ts.empty() ? default_dtype() : ts[0].dtype();
  Device dev = ts.empty() ? Device() : ts[0].device();
  std::vector<Tensor> mats;
  for (size_t i = 0; i < ts.size(); ++i) {
    const Tensor& t = ts[i];
    EMBER_CHECK(t.dim() <= 2,
                "ember.block_diag: Input tensors must have 2 or fewer dimensions. Input ", i,
                " has ", t.dim(), " dimensions");
    Tensor m = t.dim() == 2   ? t
               : t.dim() == 1 ? reshape(t, Shape{1, t.numel()})
                              : reshape(t, Shape{1, 1});
    dt = promote_types(dt, t.dtype());
    rows = checked_add(rows, m.sizes()[0], "block_diag");
    cols = checked_add(cols, m.sizes()[1], "block_diag");
    mats.push_back(m);
  }
  Tensor out = zeros(Shape{rows, cols}, dt, dev);
  int64_t c = 0;
  std::vector<Tensor> pieces;
  // Built by concatenating padded row blocks so gradients flow through cat.
  for (const Tensor& m : mats) {
    int64_t h = m.sizes()[0], w = m.sizes()[1];
    Tensor row = cat(
        {zeros(Shape{h, c}, dt, dev), to_dtype(m, dt), zeros(Shape{h, cols - c - w}, dt, dev)}, 1);
    pieces.push_back(row);
    c += w;
  }
  if (pieces.empty()) return out;
  return cat(pieces, 0);
}

Tensor cartesian_prod(const std::vector<Tensor>& ts) {
  EMBER_TRACE("aten::cartesian_prod(Tensor[] tensors) -> Tensor", cartesian_prod, ts);
  for (const Tensor& t : ts)
    EMBER_CHECK(t.dim() == 1, "Expect a 1D vector, but got shape ", shape_str(t.sizes()));
  if (ts.size() == 1) return ts[0];
  std::vector<Tensor> grids = meshgrid(ts, "ij"), cols;
  for (const Tensor& g : grids) cols.push_back(reshape(g, Shape{-1}));
  return stack(cols, 1);
}

// The number of r-combinations of n items (with replacement: multisets), or -1 past int64.
static int64_t combination_count(int64_t n, int64_t r, bool with_replacement) {
  if (with_replacement && n == 0) return 0;
  if (with_replacement && r > INT64_MAX - n) return n == 1 ? 1 : -1;
  int64_t m = with_replacement ? n + r - 1 : n;  // C(m, r)
  if (r > m) return 0;
  int64_t k = std::min(r, m - r);
  unsigned __int128 c = 1;
  for (int64_t i = 1; i <= k; ++i) {
    c = c * uint64_t(m - k + i) / uint64_t(i);  // exact: C(m-k+i, i) at every step
    if (c > uint64_t(INT64_MAX)) return -1;
  }
  return int64_t(c);
}

Tensor combinations(const Tensor& a, int64_t r, bool with_replacement) {
  EMBER_TRACE("aten::combinations(Tensor self, int reduction, bool with_replacement) -> Tensor",
              combinations, a, r, with_replacement);
  EMBER_CHECK(a.dim() == 1, "Expect a 1D vector, but got shape ", shape_str(a.sizes()));
  EMBER_CHECK(r >= 0, "Expect a non-negative number, but got ", r);
  if (r == 0) return empty(Shape{0}, a.dtype(), a.device());
  int64_t n = a.numel();
  // The result's size first (C(n, r) rows of r), so that a huge request raises at once
  // instead of enumerating: combinations(arange(40), 20) is 1.4e11 rows.
  int64_t count = combination_count(n, r, with_replacement), total = 0;
  EMBER_CHECK(count >= 0 && !__builtin_mul_overflow(count, r, &total),
              "combinations: the result for ", n, " elements taken ", r, " at a time would have ",
              count < 0 ? std::string("more than 2**63") : std::to_string(count), " rows of ", r,
              " elements: too large");
  if (count == 0) return empty(Shape{0, r}, a.dtype(), a.device());
  // Index tuples i1 < i2 < ... (<= with replacement) in lexicographic order, iteratively:
  // advance the last position that can still move, then reset the ones after it. The
  // indices live in a tensor: a too-large result is the allocator's RuntimeError.
  Tensor idx_t = empty(Shape{total}, DType::Int64, Device());
  int64_t* idx = idx_t.data<int64_t>();
  std::vector<int64_t> cur(static_cast<size_t>(r));
  for (int64_t j = 0; j < r; ++j) cur[j] = with_replacement ? 0 : j;
  for (int64_t row = 0;; ++row) {
    std::copy(cur.begin(), cur.end(), idx + row * r);
    if (row + 1 == count) break;
    int64_t k = r - 1;
    // Position k's largest value: n - 1 with replacement, n - r + k without.
    while (cur[k] == (with_replacement ? n - 1 : n - r + k)) --k;
    ++cur[k];
    for (int64_t j = k + 1; j < r; ++j) cur[j] = with_replacement ? cur[k] : cur[j - 1] + 1;
  }
  Tensor picked = index_select(a, 0, to_device(idx_t, a.device()));
  return reshape(picked, Shape{count, r});
}

Tensor rot90(const Tensor& a, int64_t k, const Shape& dims) {
  EMBER_TRACE("aten::rot90(Tensor self, int k, int[] dim) -> Tensor", rot90, a, k, dims);
  EMBER_CHECK(dims.size() == 2, "expected total rotation dims == 2, but got dims = ", dims.size());
  EMBER_CHECK(a.dim() >= 2, "expected total dims >= 2, but got total dims = ", a.dim());
  int64_t d0 = wrap_dim(dims[0], a.dim()), d1 = wrap_dim(dims[1], a.dim());
  EMBER_CHECK(d0 != d1, "expected rotation dims to be different, but got dim0 = ", d0,
              " and dim1 = ", d1);
  k = ((k % 4) + 4) % 4;
  switch (k) {
    case 1:
      return transpose(flip(a, Shape{d1}), d0, d1);
    case 2:
      return flip(a, Shape{d0, d1});
    case 3:
      return flip(transpose(a, d0, d1), Shape{d1});
    default:
      return clone(a);
  }
}

// The cells (i, j), i < rows, j < col, with j - i <= offset: the lower triangle's
// first `rows` rows, in closed form (row i holds clamp(i + offset + 1, 0, col) cells).
static __int128 tril_count(int64_t rows, int64_t col, __int128 offset) {
  auto clamp = [](__int128 v, __int128 lo, __int128 hi) { return v < lo ? lo : v > hi ? hi : v; };
  __int128 i0 = clamp(-offset, 0, rows);                 // first row with a cell
  __int128 i1 = clamp(col - offset - 1, i0, rows);       // first full row
  __int128 first = i0 + offset + 1, last = i1 + offset;  // cells of rows i0 and i1 - 1
  __int128 n = i1 > i0 ? (first + last) * (i1 - i0) / 2 : 0;
  return n + (rows - i1) * __int128(col);
}
// The triangle j - i >= offset is the complement of j - i <= offset - 1.
static __int128 tri_count(int64_t rows, int64_t col, int64_t offset, bool lower) {
  return lower ? tril_count(rows, col, offset)
               : __int128(rows) * col - tril_count(rows, col, __int128(offset) - 1);
}

static Tensor tri_indices(int64_t row, int64_t col, int64_t offset, DType dtype, Device device,
                          bool lower) {
  const char* op = lower ? "tril_indices" : "triu_indices";
  EMBER_CHECK(row >= 0, "row must be non-negative, got", row);
  EMBER_CHECK(col >= 0, "col must be non-negative, got", col);
  EMBER_CHECK(dtype == DType::Int64 || dtype == DType::Int32, "\"", op, "\" not implemented for '",
              dtype_name(dtype), "'");
  // The size first, in closed form and checked: tril_indices(2**31, 2**31) raises at once
  // instead of walking 2**62 cells.
  __int128 count = tri_count(row, col, offset, lower);
  EMBER_CHECK(count <= __int128(INT64_MAX / 16), op, "(", row, ", ", col, ", ", offset,
              "): the result would hold 2 x ", int64_t(std::min<__int128>(count, INT64_MAX)),
              " indices, more than int64 can address in bytes");
  int64_t n = int64_t(count);
  Tensor out = empty(Shape{2, n}, DType::Int64, Device());
  int64_t* rs = out.data<int64_t>();
  int64_t* cs = rs + n;
  // A row's cells are one run of columns [lo, hi); its first cell's position is the count
  // of the rows before it, so rows fill in parallel.
  // Only rows that hold a cell are walked (each holds at least one, so there are at most
  // `n` of them): the lower triangle's start at row -offset, the upper's end at col - offset.
  const int64_t first = n == 0  ? 0
                        : lower ? int64_t(std::clamp<__int128>(-__int128(offset), 0, row))
                                : 0;
  const int64_t last = n == 0  ? 0
                       : lower ? row
                               : int64_t(std::clamp<__int128>(__int128(col) - offset, 0, row));
  int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(col, 1));
  parallel_for(first, last, grain, [&](int64_t b, int64_t e) {
    int64_t pos = int64_t(tri_count(b, col, offset, lower));
    for (int64_t i = b; i < e; ++i) {
      __int128 lo = lower ? 0 : std::max<__int128>(0, __int128(i) + offset);
      __int128 hi = lower ? std::min<__int128>(col, __int128(i) + offset + 1) : col;
      for (int64_t j = int64_t(lo); j < int64_t(hi); ++j, ++pos) {
        rs[pos] = i;
        cs[pos] = j;
      }
    }
  });
  return to_device(to_dtype(out, dtype), device);
}

Tensor tril_indices(int64_t row, int64_t col, int64_t offset, DType dtype, Device device) {
  EMBER_TRACE(
      "aten::tril_indices(int row, int col, int offset, ScalarType dtype, Device device) -> Tensor",
      tril_indices, row, col, offset, dtype, device);
  return tri_indices(row, col, offset, dtype, device, true);
}
Tensor triu_indices(int64_t row, int64_t col, int64_t offset, DType dtype, Device device) {
  EMBER_TRACE(
      "aten::triu_indices(int row, int col, int offset, ScalarType dtype, Device device) -> Tensor",
      triu_indices, row, col, offset, dtype, device);
  return tri_indices(row, col, offset, dtype, device, false);
}

Tensor diag_embed(const Tensor& a, int64_t offset, int64_t dim1, int64_t dim2) {
  EMBER_TRACE("aten::diag_embed(Tensor self, int offset, int dim1, int dim2) -> Tensor", diag_embed,
              a, offset, dim1, dim2);
  int64_t nd = a.dim() + 1;
  dim1 = wrap_dim(dim1, nd);
  dim2 = wrap_dim(dim2, nd);
  EMBER_CHECK(dim1 != dim2, "diagonal dimensions cannot be identical ", dim1, ", ", dim2);
  EMBER_CHECK(a.dim() >= 1, "diag_embed: expected a tensor with at least 1 dimension");
  EMBER_CHECK(offset > std::numeric_limits<int64_t>::min(), "diag_embed: offset ", offset,
              " is out of range");
  int64_t n = checked_add(a.sizes().back(), std::abs(offset), "diag_embed");
  Shape sz;
  int64_t k = 0;
  for (int64_t i = 0; i < nd; ++i) {
    if (i == dim1 || i == dim2)
      sz.push_back(n);
    else
      sz.push_back(a.sizes()[k++]);
  }
  Tensor out = zeros(sz, a.dtype(), a.device());
  // out's diagonal <- a, written through a differentiable path: a scatter into zeros
  // expressed as zeros + (diagonal view filled). Built as index_put-free composite:
  // diagonal(out) is a view; copy_ records CopySlices when a requires grad.
  Tensor d = diagonal(out, offset, dim1, dim2);
  copy_(d, a);
  return out;
}

Tensor diag(const Tensor& a, int64_t k) {
  EMBER_TRACE("aten::diag(Tensor self, int k) -> Tensor", diag, a, k);
  EMBER_CHECK(a.dim() == 1 || a.dim() == 2, "diag(): Supports 1D or 2D tensors. Got ", a.dim(),
              "D");
  if (a.dim() == 1) return diag_embed(a, k, 0, 1);
  return clone(diagonal(a, k, 0, 1));
}

Tensor diagflat(const Tensor& a, int64_t offset) {
  EMBER_TRACE("aten::diagflat(Tensor self, int offset) -> Tensor", diagflat, a, offset);
  return diag_embed(reshape(a, Shape{-1}), offset, 0, 1);
}

Tensor vander(const Tensor& x, std::optional<int64_t> n, bool increasing) {
  EMBER_TRACE("aten::vander(Tensor self, int? n, bool increasing) -> Tensor", vander, x, n,
              increasing);
  EMBER_CHECK(x.dim() == 1, "x must be a one-dimensional tensor.");
  int64_t N = n.value_or(x.numel());
  EMBER_CHECK(N >= 0, "N must be non-negative.");
  DType dt = is_floating(x.dtype()) ? x.dtype() : DType::Int64;
  if (N == 0) return empty(Shape{x.numel(), 0}, dt, x.device());
  // Columns x^0, x^1, ...: cumprod of [1, x, x, ...] keeps the gradient exact.
  Tensor xs = to_dtype(x, dt);
  Tensor col = reshape(xs, Shape{-1, 1});
  Tensor ones_col = full(Shape{x.numel(), 1}, Scalar(int64_t(1)), dt, x.device());
  Tensor r =
      N > 1 ? cumprod(cat({ones_col, expand(col, Shape{x.numel(), N - 1})}, 1), 1) : ones_col;
  return increasing ? r : flip(r, Shape{1});
}

Tensor unfold(const Tensor& a, int64_t dim, int64_t size, int64_t step) {
  EMBER_TRACE("aten::unfold(Tensor self, int dim, int size, int step) -> Tensor", unfold, a, dim,
              size, step);
  int64_t nd = std::max<int64_t>(a.dim(), 1);
  dim = wrap_dim(dim, nd);
  int64_t len = a.dim() == 0 ? 1 : a.sizes()[dim];
  EMBER_CHECK(size <= len, "maximum size for tensor at dimension ", dim, " is ", len,
              " but size is ", size);
  EMBER_CHECK(step > 0, "step is ", step, " but must be > 0");
  EMBER_CHECK(size >= 0, "size is ", size, " but must be >= 0");
  int64_t nwin = (len - size) / step + 1;
  Shape sz, st;
  if (a.dim() == 0) {
    sz = {size};
    st = {1};
  } else {
    sz = a.sizes();
    st = a.strides();
    int64_t s = st[dim];
    sz[dim] = nwin;
    st[dim] = checked_mul(s, step, "unfold");
    sz.push_back(size);
    st.push_back(s);
  }
  Tensor out = make_view(a, sz, st, a.storage_offset());
  Shape in_sizes = a.sizes();
  int64_t d = dim;
  autograd::record_view(
      "UnfoldBackward0", a, out, [in_sizes, d, size, step, nwin](const Tensor& g) {
        if (in_sizes.empty()) return reshape(g, Shape{});
        // grad (..., nwin@d, ..., size) -> (..., nwin*size@d, ...) summed into positions w*step +
        // k.
        Tensor gm = movedim(g, Shape{-1}, Shape{d + 1});
        Shape flat = gm.sizes();
        Shape fs;
        for (int64_t i = 0; i < int64_t(flat.size()); ++i) {
          if (i == d)
            fs.push_back(nwin * size);
          else if (i != d + 1)
            fs.push_back(flat[i]);
        }
        gm = reshape(gm, fs);
        std::vector<int64_t> idx;
        for (int64_t w = 0; w < nwin; ++w)
          for (int64_t k = 0; k < size; ++k) idx.push_back(w * step + k);
        Tensor gi = zeros(in_sizes, g.dtype(), g.device());
        return index_add(gi, d, int64_tensor(idx, g.device()), gm, Scalar(int64_t(1)));
      });
  return out;
}

Tensor sum_to_size_checked(const Tensor& a, const Shape& size) {
  // `size` must be expandable to a's shape.
  int64_t nd = a.dim(), ns = int64_t(size.size());
  bool ok = ns <= nd;
  for (int64_t i = 0; ok && i < ns; ++i) {
    int64_t x = size[ns - 1 - i], y = a.sizes()[nd - 1 - i];
    ok = x == y || x == 1;
  }
  EMBER_CHECK(ok, "size {", shape_str(size), "} is not expandable to size {", shape_str(a.sizes()),
              "}.");
  return autograd::sum_to_size(a, size);
}

bool is_nonzero(const Tensor& a) {
  EMBER_TRACE("aten::is_nonzero(Tensor self) -> bool", is_nonzero, a);
  EMBER_CHECK(a.numel() != 0, "Boolean value of Tensor with no values is ambiguous");
  EMBER_CHECK(a.numel() == 1, "Boolean value of Tensor with more than one value is ambiguous");
  Tensor c = to_device(to_dtype(a, DType::Float64), Device());
  return *reinterpret_cast<const double*>(c.data_ptr()) != 0.0;
}

// The positions fill_diagonal_ writes, as a view of `a`'s storage (one call per
// wrapped block of a tall matrix).
static void diagonal_views(const Tensor& a, bool wrap, std::vector<Tensor>& out) {
  int64_t n = *std::min_element(a.sizes().begin(), a.sizes().end());
  int64_t stride = 0;
  for (int64_t s : a.strides()) stride += s;
  if (a.dim() == 2 && wrap && a.sizes()[0] > a.sizes()[1] + 1) {
    int64_t rows = a.sizes()[0], cols = a.sizes()[1];
    for (int64_t r0 = 0; r0 < rows; r0 += cols + 1)
      diagonal_views(narrow(a, 0, r0, std::min(cols, rows - r0)), false, out);
    return;
  }
  out.push_back(make_view(a, Shape{n}, Shape{stride}, a.storage_offset()));
}

const Tensor& fill_diagonal_(const Tensor& a, Scalar value, bool wrap) {
  EMBER_TRACE_MUTATES("aten::fill_diagonal_(Tensor self, Scalar value, bool wrap) -> Tensor",
                      fill_diagonal_, a, value, wrap);
  EMBER_CHECK(a.dim() >= 2, "dimensions must larger than 1");
  int64_t h = a.sizes()[0];
  if (a.dim() > 2)
    for (int64_t s : a.sizes())
      EMBER_CHECK(s == h, "all dimensions of input must be of equal length");
  check_scalar_fits(value, a.dtype(), "fill_diagonal_");
  if (!autograd::inplace_records(a, {})) {
    autograd::GradModeGuard no_grad(false);
    std::vector<Tensor> views;
    diagonal_views(a, wrap, views);
    for (const Tensor& v : views) fill_(v, value);
    return a;
  }
  // Under autograd: a where() against a mask built the same way.
  Tensor mask = zeros(a.sizes(), DType::Bool, a.device());
  std::vector<Tensor> views;
  diagonal_views(mask, wrap, views);
  for (const Tensor& v : views) fill_(v, Scalar(true));
  Tensor val = scalar_tensor(value, a.dtype(), a.device());
  return inplace_composite(a, "fill_diagonal_", {},
                           [&](const Tensor& src) { return where(mask, val, src); });
}

const Tensor& set_geometry_(const Tensor& a, const Tensor& v, const char* op) {
  if (a.is_sparse()) raise_sparse_unsupported(op, a);
  if (autograd::requires_grad(a)) autograd::check_inplace(a, op);
  TensorImpl* impl = a.impl();
  impl->sizes = v.sizes();
  impl->strides = v.strides();
  impl->offset = v.storage_offset();
  impl->numel = v.numel();
  if (autograd::requires_grad(a)) {
    if (auto fn = autograd::grad_fn(v)) autograd::set_history(a, fn, 0);
  }
  return a;
}

const Tensor& resize_(const Tensor& a, const Shape& sizes) {
  EMBER_TRACE_MUTATES("aten::resize_(Tensor self, int[] size) -> Tensor", resize_, a, sizes);
  if (a.is_sparse()) raise_sparse_unsupported("resize_", a);
  EMBER_CHECK(!autograd::requires_grad(a), "cannot resize variables that require grad");
  for (int64_t s : sizes)
    EMBER_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ",
                shape_str(sizes));
  int64_t n = checked_numel(sizes);
  TensorImpl* impl = a.impl();
  size_t need = size_t(
      checked_mul(checked_add(n, a.storage_offset(), "resize_"), a.element_size(), "resize_"));
  if (need > impl->storage->nbytes) {
    // Grow the storage itself (Note [Resizing a shared storage] in core/tensor.h): a larger
    // block with the old bytes copied in front is swapped into the StorageImpl, so every
    // tensor and storage object sharing it (the base of a view, say) sees the new memory,
    // as PyTorch's storage resize does. Memory ember does not own cannot grow.
    StorageImpl& st = *impl->storage;
    EMBER_CHECK(st.resizable, "Trying to resize storage that is not resizable (resize_ to ",
                shape_str(sizes), " needs ", need, " bytes; the tensor's ", st.nbytes,
                " bytes belong to another library, e.g. a NumPy array it was made from)");
    Tensor fresh = empty(Shape{int64_t(need / a.element_size())}, a.dtype(), a.device());
    const size_t old = st.nbytes;
    if (old) {
      const int64_t n_old = int64_t(old / a.element_size());
      copy_(make_view(fresh, Shape{n_old}, Shape{1}, 0), make_view(a, Shape{n_old}, Shape{1}, 0));
    }
    std::swap(st.data, fresh.storage()->data);
    std::swap(st.nbytes, fresh.storage()->nbytes);  // `fresh` now owns, and frees, the old block
  }
  impl->sizes = sizes;
  impl->strides = contiguous_strides(sizes);
  impl->numel = n;
  return a;
}

}  // namespace ember
