#include "ember/ops/view.h"
#include "ember/jit/trace_hook.h"

#include <algorithm>

#include "ember/autograd/record.h"
#include "ember/ops/ops.h"

#include "ember/ops/sparse.h"

namespace ember {

Shape infer_size(const Shape& shape, int64_t numel) {
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      EMBER_CHECK(infer < 0, "only one dimension can be inferred");
      infer = int64_t(i);
    } else {
      EMBER_CHECK(shape[i] >= 0, "invalid shape dimension ", shape[i]);
      known = checked_mul(known, shape[i], "view");
    }
  }
  Shape out = shape;
  if (infer >= 0) {
    EMBER_CHECK(known != 0 && numel % known == 0, "shape '", shape_str(shape),
                "' is invalid for input of size ", numel);
    out[infer] = numel / known;
  } else {
    EMBER_CHECK(known == numel, "shape '", shape_str(shape), "' is invalid for input of size ",
                numel);
  }
  return out;
}

// Strides for viewing (sizes, strides) as `shape` without copying, if possible
// (the algorithm of PyTorch's computeStride: match chunks of contiguous dims).
static std::optional<Shape> view_strides(const Shape& old_sizes, const Shape& old_strides,
                                         const Shape& shape) {
  Shape st(shape.size());
  if (old_sizes.empty()) {
    for (auto& s : st) s = 1;
    return st;
  }
  int64_t numel = 1;
  for (auto s : old_sizes) numel *= s;
  if (numel == 0) {
    if (old_sizes == shape) return old_strides;
    return contiguous_strides(shape);
  }
  int64_t view_d = int64_t(shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t td = int64_t(old_sizes.size()) - 1; td >= 0; --td) {
    tensor_numel *= old_sizes[td];
    if (td == 0 ||
        (old_sizes[td - 1] != 1 && old_strides[td - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        st[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (td > 0) {
        chunk_base_stride = old_strides[td - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return st;
}

Tensor view(const Tensor& a, const Shape& shape) {
  EMBER_TRACE("aten::view(Tensor self, int[] size) -> Tensor", view, a, shape);
  if (__builtin_expect(a.is_sparse(), 0)) raise_not_strided(a.layout(), "view");
  Shape s = infer_size(shape, a.numel());
  auto st = view_strides(a.sizes(), a.strides(), s);
  EMBER_CHECK(st,
              "view size is not compatible with input tensor's size and stride (at least one "
              "dimension spans across two contiguous subspaces): input ",
              shape_str(a.sizes()), " with strides ", shape_str(a.strides()), ", view ",
              shape_str(s), ". Use .reshape(...) instead.");
  Tensor out = make_view(a, s, *st, a.storage_offset());
  Shape in_sizes = a.sizes();
  autograd::record_view("ViewBackward0", a, out,
                        [in_sizes](const Tensor& g) { return reshape(g, in_sizes); });
  return out;
}

Tensor unsafe_view(const Tensor& a, const Shape& shape) {
  Shape s = infer_size(shape, a.numel());
  auto st = view_strides(a.sizes(), a.strides(), s);
  EMBER_CHECK(st, "_unsafe_view: size ", shape_str(s), " is not compatible with input of shape ",
              shape_str(a.sizes()), " and strides ", shape_str(a.strides()));
  Tensor out = make_view(a, s, *st, a.storage_offset());
  out.impl()->version = std::make_shared<VersionCounter>();  // not a view: its own counter
  if (autograd::compute_requires_grad({&a})) {
    Shape in_sizes = a.sizes();
    autograd::record("UnsafeViewBackward0", {&a}, out,
                     [in_sizes](autograd::LambdaNode&, autograd::variable_list&& g) {
                       return autograd::variable_list{reshape(g[0], in_sizes)};
                     });
  }
  return out;
}

Tensor reshape(const Tensor& a, const Shape& shape) {
  EMBER_TRACE("aten::reshape(Tensor self, int[] size) -> Tensor", reshape, a, shape);
  if (__builtin_expect(a.is_sparse(), 0)) raise_not_strided(a.layout(), "reshape");
  Shape s = infer_size(shape, a.numel());
  if (view_strides(a.sizes(), a.strides(), s)) return view(a, s);
  return unsafe_view(clone(a), s);
}

Tensor transpose(const Tensor& a, int64_t d0, int64_t d1) {
  EMBER_TRACE("aten::transpose(Tensor self, int dim0, int dim1) -> Tensor", transpose, a, d0, d1);
  if (__builtin_expect(a.is_sparse(), 0)) return sparse_transpose(a, d0, d1);
  int64_t n = a.dim();
  d0 = wrap_dim(d0, n);
  d1 = wrap_dim(d1, n);
  Shape sz = a.sizes(), st = a.strides();
  if (n > 0) {
    std::swap(sz[d0], sz[d1]);
    std::swap(st[d0], st[d1]);
  }
  Tensor out = make_view(a, sz, st, a.storage_offset());
  autograd::record_view("TransposeBackward0", a, out,
                        [d0, d1](const Tensor& g) { return transpose(g, d0, d1); });
  return out;
}

Tensor t(const Tensor& a) {
  EMBER_TRACE("aten::t(Tensor self) -> Tensor", t, a);
  if (__builtin_expect(a.is_sparse(), 0)) {
    EMBER_CHECK(sparse_dim(a) <= 2 && dense_dim(a) == 0,
                "t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got ",
                sparse_dim(a), " sparse and ", dense_dim(a), " dense dimensions");
    return a.dim() < 2 ? sparse_clone(a) : sparse_transpose(a, 0, 1);
  }
  EMBER_CHECK(a.dim() <= 2, "t() expects a tensor with <= 2 dimensions, but self is ", a.dim(),
              "D");
  Tensor out;
  {
    autograd::GradModeGuard no_grad(false);
    out = a.dim() < 2 ? transpose(a, 0, 0) : transpose(a, 0, 1);
  }
  autograd::record_view("TBackward0", a, out, [](const Tensor& g) { return t(g); });
  return out;
}

Tensor permute(const Tensor& a, const Shape& dims) {
  EMBER_TRACE("aten::permute(Tensor self, int[] dim) -> Tensor", permute, a, dims);
  int64_t n = a.dim();
  EMBER_CHECK(int64_t(dims.size()) == n,
              "permute(sparse_coo): number of dimensions in the tensor input "
              "does not match the length of the desired ordering of dimensions i.e. input.dim() = ",
              n, " is not equal to len(dims) = ", dims.size());
  Shape sz(static_cast<size_t>(n)), st(static_cast<size_t>(n));
  SmallVec<bool, 8> seen(static_cast<size_t>(n), false);
  for (int64_t i = 0; i < n; ++i) {
    int64_t d = wrap_dim(dims[i], n);
    EMBER_CHECK(!seen[d], "permute(): duplicate dims are not allowed.");
    seen[d] = true;
    sz[i] = a.sizes()[d];
    st[i] = a.strides()[d];
  }
  Tensor out = make_view(a, sz, st, a.storage_offset());
  Shape inv(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) inv[wrap_dim(dims[i], n)] = i;
  autograd::record_view("PermuteBackward0", a, out,
                        [inv](const Tensor& g) { return permute(g, inv); });
  return out;
}

// Views that only add or drop size-1 dims: the gradient is a reshape back.
static Tensor reshape_view(const char* name, const Tensor& a, const Shape& sz, const Shape& st) {
  Tensor out = make_view(a, sz, st, a.storage_offset());
  Shape in_sizes = a.sizes();
  autograd::record_view(name, a, out, [in_sizes](const Tensor& g) { return reshape(g, in_sizes); });
  return out;
}

Tensor squeeze(const Tensor& a) {
  EMBER_TRACE("aten::squeeze.default(Tensor self) -> Tensor", squeeze, a);
  Shape sz, st;
  for (int64_t i = 0; i < a.dim(); ++i)
    if (a.sizes()[i] != 1) {
      sz.push_back(a.sizes()[i]);
      st.push_back(a.strides()[i]);
    }
  return reshape_view("SqueezeBackward0", a, sz, st);
}

Tensor squeeze(const Tensor& a, const Shape& dims) {
  EMBER_TRACE("aten::squeeze.intList(Tensor self, int[] dim) -> Tensor", squeeze, a, dims);
  int64_t n = a.dim();
  SmallVec<bool, 8> drop(size_t(std::max<int64_t>(n, 1)), false);
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, n);
    if (n > 0 && a.sizes()[w] == 1) drop[w] = true;
  }
  Shape sz, st;
  for (int64_t i = 0; i < n; ++i)
    if (!drop[i]) {
      sz.push_back(a.sizes()[i]);
      st.push_back(a.strides()[i]);
    }
  return reshape_view("SqueezeBackward1", a, sz, st);
}

Tensor unsqueeze(const Tensor& a, int64_t dim) {
  EMBER_TRACE("aten::unsqueeze(Tensor self, int dim) -> Tensor", unsqueeze, a, dim);
  int64_t n = a.dim();
  dim = wrap_dim(dim, n + 1);
  Shape sz = a.sizes(), st = a.strides();
  int64_t s = dim < n ? sz[dim] * st[dim] : 1;
  sz.insert(size_t(dim), 1);
  st.insert(size_t(dim), s);
  return reshape_view("UnsqueezeBackward0", a, sz, st);
}

Tensor expand(const Tensor& a, const Shape& sizes) {
  EMBER_TRACE("aten::expand(Tensor self, int[] size) -> Tensor", expand, a, sizes);
  int64_t nd = int64_t(sizes.size()), td = a.dim();
  EMBER_CHECK(nd >= td, "expand(", legacy_type_name(a.dtype()), "{", shape_str(a.sizes()),
              "}, size=", shape_str(sizes), "): the number of sizes provided (", nd,
              ") must be greater or equal to the number of dimensions in the tensor (", td, ")");
  Shape target = sizes;
  for (int64_t i = 0; i < nd; ++i) {
    int64_t j = i - (nd - td);
    if (target[i] == -1) {
      EMBER_CHECK(j >= 0,
                  "The expanded size of the tensor (-1) isn't allowed in a leading, "
                  "non-existing dimension ",
                  i);
      target[i] = a.sizes()[j];
    }
    EMBER_CHECK(target[i] >= 0, "expand: invalid size ", target[i]);
  }
  Tensor out = expand_to(a, target, "expand");
  if (out.is_same(a)) out = make_view(a, a.sizes(), a.strides(), a.storage_offset());
  Shape in_sizes = a.sizes();
  autograd::record_view("ExpandBackward0", a, out,
                        [in_sizes](const Tensor& g) { return autograd::sum_to_size(g, in_sizes); });
  return out;
}

// A view selecting a region: its gradient is zeros with the view's region
// filled from the gradient, built with the same view op (so it stays
// differentiable under create_graph).
static Tensor region_view(const char* name, const Tensor& a, const Tensor& out,
                          std::function<Tensor(const Tensor&)> same_view) {
  Shape in_sizes = a.sizes();
  autograd::record_view(name, a, out, [in_sizes, same_view](const Tensor& g) {
    Tensor gi = zeros(in_sizes, g.dtype(), g.device());
    copy_(same_view(gi), g);
    return gi;
  });
  return out;
}

Tensor narrow(const Tensor& a, int64_t dim, int64_t start, int64_t length) {
  EMBER_TRACE("aten::narrow(Tensor self, int dim, int start, int length) -> Tensor", narrow, a, dim,
              start, length);
  EMBER_CHECK(a.dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  dim = wrap_dim(dim, a.dim());
  int64_t size = a.sizes()[dim];
  const int64_t given = start;
  if (start < 0) start += std::max<int64_t>(size, 1);  // a size-0 dim wraps like size 1, as PyTorch
  EMBER_CHECK_INDEX(start >= 0 && start <= size, "start out of range (expected to be in range of [",
                    -size, ", ", size, "], but got ", given, ")");
  EMBER_CHECK(length >= 0 && start <= size - length, "start (", start, ") + length (", length,
              ") exceeds dimension size (", size, ").");
  Shape sz = a.sizes();
  sz[dim] = length;
  Tensor out = make_view(
      a, sz, a.strides(),
      checked_add(a.storage_offset(), checked_mul(start, a.strides()[dim], "narrow"), "narrow"));
  return region_view("SliceBackward0", a, out, [dim, start, length](const Tensor& x) {
    return narrow(x, dim, start, length);
  });
}

Tensor select(const Tensor& a, int64_t dim, int64_t index) {
  EMBER_TRACE("aten::select(Tensor self, int dim, int index) -> Tensor", select, a, dim, index);
  EMBER_CHECK_INDEX(a.dim() > 0, "select() cannot be applied to a 0-dim tensor.");
  dim = wrap_dim(dim, a.dim());
  int64_t size = a.sizes()[dim];
  EMBER_CHECK_INDEX(index >= -size && index < size, "index ", index,
                    " is out of bounds for dimension ", dim, " with size ", size);
  if (index < 0) index += size;
  Shape sz = a.sizes(), st = a.strides();
  int64_t off = checked_add(a.storage_offset(), checked_mul(index, st[dim], "select"), "select");
  sz.erase(size_t(dim));
  st.erase(size_t(dim));
  Tensor out = make_view(a, sz, st, off);
  return region_view("SelectBackward0", a, out,
                     [dim, index](const Tensor& x) { return select(x, dim, index); });
}

Tensor slice(const Tensor& a, int64_t dim, std::optional<int64_t> start_opt,
             std::optional<int64_t> end_opt, int64_t step) {
  EMBER_TRACE("aten::slice(Tensor self, int dim, int? start, int? end, int step) -> Tensor", slice,
              a, dim, start_opt, end_opt, step);
  EMBER_CHECK_INDEX(a.dim() > 0, "slice() cannot be applied to a 0-dim tensor.");
  EMBER_CHECK_VALUE(step > 0, "step must be greater than zero");
  dim = wrap_dim(dim, a.dim());
  int64_t size = a.sizes()[dim];
  int64_t start = start_opt.value_or(0), end = end_opt.value_or(size);
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  Shape sz = a.sizes(), st = a.strides();
  sz[dim] = end == start ? 0 : (end - start - 1) / step + 1;  // no overflow for a huge step
  int64_t off = checked_add(a.storage_offset(), checked_mul(start, st[dim], "slice"), "slice");
  st[dim] = checked_mul(st[dim], step, "slice");
  Tensor out = make_view(a, sz, st, off);
  return region_view("SliceBackward0", a, out, [dim, start, end, step](const Tensor& x) {
    return slice(x, dim, start, end, step);
  });
}

Tensor diagonal(const Tensor& a, int64_t offset, int64_t d1, int64_t d2) {
  EMBER_TRACE("aten::diagonal(Tensor self, int offset, int dim1, int d2) -> Tensor", diagonal, a,
              offset, d1, d2);
  int64_t n = a.dim();
  // Dims are checked first (IndexError), as PyTorch; on < 2 dims any valid pair is identical.
  d1 = wrap_dim(d1, n);
  d2 = wrap_dim(d2, n);
  EMBER_CHECK(d1 != d2, "diagonal dimensions cannot be identical ", d1, ", ", d2);
  EMBER_CHECK(n >= 2, "diagonal dimensions requires at least 2 dimensions, got a ", n, "D tensor");
  int64_t off = a.storage_offset(), len;
  if (offset >= 0) {
    len = std::max<int64_t>(std::min(a.sizes()[d1], a.sizes()[d2] - offset), 0);
    if (len > 0) off += offset * a.strides()[d2];
  } else {
    len = std::max<int64_t>(std::min(a.sizes()[d1] + offset, a.sizes()[d2]), 0);
    if (len > 0) off -= offset * a.strides()[d1];
  }
  Shape sz, st;
  for (int64_t i = 0; i < n; ++i)
    if (i != d1 && i != d2) {
      sz.push_back(a.sizes()[i]);
      st.push_back(a.strides()[i]);
    }
  sz.push_back(len);
  st.push_back(a.strides()[d1] + a.strides()[d2]);
  Tensor out = make_view(a, sz, st, off);
  return region_view("DiagonalBackward0", a, out,
                     [offset, d1, d2](const Tensor& x) { return diagonal(x, offset, d1, d2); });
}

std::vector<Tensor> unbind(const Tensor& a, int64_t dim) {
  EMBER_TRACE("aten::unbind(Tensor self, int dim) -> Tensor[]", unbind, a, dim);
  EMBER_CHECK_INDEX(a.dim() > 0, "Dimension specified as 0 but tensor has no dimensions");
  dim = wrap_dim(dim, a.dim());
  std::vector<Tensor> out;
  {
    autograd::GradModeGuard no_grad(false);
    for (int64_t i = 0; i < a.sizes()[dim]; ++i) out.push_back(select(a, dim, i));
  }
  Shape in_sizes = a.sizes();
  autograd::record_multi_view("UnbindBackward0", a, out,
                              [in_sizes, dim](const autograd::variable_list& gs) {
                                Tensor gi;
                                for (size_t i = 0; i < gs.size(); ++i) {
                                  if (!gs[i].defined()) continue;
                                  if (!gi.defined())
                                    gi = zeros(in_sizes, gs[i].dtype(), gs[i].device());
                                  copy_(select(gi, dim, int64_t(i)), gs[i]);
                                }
                                return gi;
                              });
  return out;
}

// Pieces of `a` along `dim` with the given sizes, as views with one backward node.
static std::vector<Tensor> split_pieces(const char* name, const Tensor& a, const Shape& sizes,
                                        int64_t dim) {
  std::vector<Tensor> out;
  {
    autograd::GradModeGuard no_grad(false);
    int64_t start = 0;
    for (int64_t s : sizes) {
      out.push_back(narrow(a, dim, start, s));
      start += s;
    }
  }
  Shape in_sizes = a.sizes();
  autograd::record_multi_view(name, a, out,
                              [in_sizes, sizes, dim](const autograd::variable_list& gs) {
                                Tensor gi;
                                int64_t start = 0;
                                for (size_t i = 0; i < gs.size(); ++i) {
                                  if (gs[i].defined()) {
                                    if (!gi.defined())
                                      gi = zeros(in_sizes, gs[i].dtype(), gs[i].device());
                                    copy_(narrow(gi, dim, start, sizes[i]), gs[i]);
                                  }
                                  start += sizes[i];
                                }
                                return gi;
                              });
  return out;
}

std::vector<Tensor> split(const Tensor& a, int64_t split_size, int64_t dim) {
  EMBER_TRACE("aten::split(Tensor self, int split_size, int dim) -> Tensor[]", split, a, split_size,
              dim);
  EMBER_CHECK(a.dim() > 0, "split expects at least a 1-dimensional tensor");
  EMBER_CHECK(split_size >= 0,
              "split expects split_size be non-negative, but got split_size=", split_size);
  dim = wrap_dim(dim, a.dim());
  int64_t size = a.sizes()[dim];
  EMBER_CHECK(split_size > 0 || size == 0,
              "split_size can only be 0 if dimension size is 0, but got "
              "dimension size of ",
              size);
  Shape sizes;
  if (size == 0) sizes.push_back(0);
  for (int64_t s = 0; s < size; s += split_size) sizes.push_back(std::min(split_size, size - s));
  return split_pieces("SplitBackward0", a, sizes, dim);
}

std::vector<Tensor> split_with_sizes(const Tensor& a, const Shape& sizes, int64_t dim) {
  EMBER_TRACE("aten::split_with_sizes(Tensor self, int[] size, int dim) -> Tensor[]",
              split_with_sizes, a, sizes, dim);
  EMBER_CHECK(a.dim() > 0, "split expects at least a 1-dimensional tensor");
  dim = wrap_dim(dim, a.dim());
  int64_t total = 0;
  for (int64_t s : sizes) {
    EMBER_CHECK(s >= 0,
                "split_with_sizes expects split_sizes have only non-negative entries, but got ",
                shape_str(sizes));
    total += s;
  }
  EMBER_CHECK(total == a.sizes()[dim], "split_with_sizes expects split_sizes to sum exactly to ",
              a.sizes()[dim], " (input tensor's size at dimension ", dim,
              "), but got split_sizes=", shape_str(sizes));
  return split_pieces("SplitWithSizesBackward0", a, sizes, dim);
}

std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim) {
  EMBER_TRACE("aten::chunk(Tensor self, int chunks, int dim) -> Tensor[]", chunk, a, chunks, dim);
  EMBER_CHECK(a.dim() > 0, "chunk expects at least a 1-dimensional tensor");
  EMBER_CHECK(chunks > 0, "chunk expects `chunks` to be greater than 0, got: ", chunks);
  dim = wrap_dim(dim, a.dim());
  int64_t size = a.sizes()[dim];
  int64_t each = (size + chunks - 1) / chunks;
  if (size == 0) {
    std::vector<Tensor> out;
    for (int64_t i = 0; i < chunks; ++i) out.push_back(a);
    return out;
  }
  return split(a, each, dim);
}

Tensor flatten(const Tensor& a, int64_t start, int64_t end) {
  EMBER_TRACE("aten::flatten(Tensor self, int start, int end) -> Tensor", flatten, a, start, end);
  int64_t n = a.dim();
  start = wrap_dim(start, n);
  end = wrap_dim(end, n);
  EMBER_CHECK(start <= end, "flatten() has invalid args: start_dim cannot come after end_dim");
  if (n == 0) return reshape(a, Shape{1});
  if (start == end) return a;  // as torch: self (a fresh view here lost autograd)
  Shape s;
  for (int64_t i = 0; i < start; ++i) s.push_back(a.sizes()[i]);
  int64_t m = 1;
  for (int64_t i = start; i <= end; ++i) m = checked_mul(m, a.sizes()[i], "flatten");
  s.push_back(m);
  for (int64_t i = end + 1; i < n; ++i) s.push_back(a.sizes()[i]);
  return reshape(a, s);
}

Tensor unflatten(const Tensor& a, int64_t dim, const Shape& sizes) {
  EMBER_TRACE("aten::unflatten(Tensor self, int dim, int[] size) -> Tensor", unflatten, a, dim,
              sizes);
  EMBER_CHECK_INDEX(a.dim() > 0, "Dimension specified as ", dim,
                    " but tensor has no dimensions (unflatten of a 0-dim tensor)");
  dim = wrap_dim(dim, a.dim());
  EMBER_CHECK(!sizes.empty(), "unflatten: sizes must be non-empty");
  Shape inner = infer_size(sizes, a.sizes()[dim]);
  Shape s;
  for (int64_t i = 0; i < dim; ++i) s.push_back(a.sizes()[i]);
  for (int64_t v : inner) s.push_back(v);
  for (int64_t i = dim + 1; i < a.dim(); ++i) s.push_back(a.sizes()[i]);
  return view(a, s);
}

Tensor as_strided(const Tensor& a, const Shape& sizes, const Shape& strides,
                  std::optional<int64_t> offset) {
  EMBER_TRACE("aten::as_strided(Tensor self, int[] size, int[] strides, int? offset) -> Tensor",
              as_strided, a, sizes, strides, offset);
  EMBER_CHECK(sizes.size() == strides.size(), "mismatch in length of strides and shape");
  for (int64_t s : sizes) EMBER_CHECK(s >= 0, "as_strided: negative size ", s);
  Tensor out = make_view(a, sizes, strides, offset.value_or(a.storage_offset()));
  // Scatter the gradient into a buffer laid out like the storage, read it back
  // through the input's geometry.
  autograd::StridedGeometry in = autograd::StridedGeometry::of(a),
                            vw = autograd::StridedGeometry::of(out);
  int64_t elems = int64_t(a.storage()->nbytes) / a.element_size();
  autograd::record_view("AsStridedBackward0", a, out, [in, vw, elems](const Tensor& g) {
    return autograd::as_strided_backward(g, in, vw, elems);
  });
  return out;
}

Tensor movedim(const Tensor& a, const Shape& src, const Shape& dst) {
  EMBER_TRACE("aten::movedim(Tensor self, int[] src, int[] dst) -> Tensor", movedim, a, src, dst);
  int64_t n = a.dim();
  EMBER_CHECK(src.size() == dst.size(), "movedim: Invalid source or destination dims: source (",
              shape_str(src), " dims) should contain the same number of dims as destination (",
              shape_str(dst), " dims)");
  if (n == 0) {  // dims wrap as on a 1-d tensor; the only move is the identity
    for (size_t i = 0; i < src.size(); ++i) wrap_dim(src[i], n), wrap_dim(dst[i], n);
    EMBER_CHECK(src.size() <= 1, "movedim: repeated dim");
    return permute(a, Shape{});
  }
  Shape perm(static_cast<size_t>(n), -1);
  SmallVec<bool, 8> used_src(static_cast<size_t>(n), false);
  for (size_t i = 0; i < src.size(); ++i) {
    int64_t s = wrap_dim(src[i], n), d = wrap_dim(dst[i], n);
    EMBER_CHECK(perm[d] == -1 && !used_src[s], "movedim: repeated dim");
    perm[d] = s;
    used_src[s] = true;
  }
  int64_t next = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (perm[i] != -1) continue;
    while (used_src[next]) ++next;
    perm[i] = next++;
  }
  return permute(a, perm);
}

Tensor alias(const Tensor& a, bool share_version) {
  EMBER_TRACE("aten::alias(Tensor self, bool share_version) -> Tensor", alias, a, share_version);
  Tensor v = make_view(a, a.sizes(), a.strides(), a.storage_offset());
  if (!share_version) v.impl()->version = std::make_shared<VersionCounter>();
  return v;
}

}  // namespace ember
