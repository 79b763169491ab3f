// Front-ends of the joining and rearranging ops (see join.h).
#include "ember/ops/join.h"
#include "ember/jit/trace_hook.h"

#include <algorithm>

#include "ember/autograd/derivatives/index.h"
#include "ember/autograd/derivatives/join.h"
#include "ember/autograd/record.h"
#include "ember/ops/autocast.h"
#include "ember/ops/ops.h"
#include "ember/ops/view.h"

namespace ember {

DispatchStub<RemapFn> index_remap_stub("index_remap");

namespace {

void check_devices(const std::vector<Tensor>& ts, const char* op) {
  for (size_t i = 1; i < ts.size(); ++i)
    EMBER_CHECK(
        ts[i].device() == ts[0].device(), op,
        "(): Expected all tensors to be on the same device, but found at least two devices, ",
        ts[0].device().str(), " and ", ts[i].device().str(), " (tensor number ", i,
        " in the list)");
}

// PyTorch legacy: a 1-d tensor with no elements is ignored by cat.
bool cat_skips(const Tensor& t) { return t.dim() == 1 && t.numel() == 0; }

// Runs the index-remap kernel into `out` (a new contiguous tensor). Callers whose tables grow
// with a user's size allocate `out` before building them: a size too large for the machine then
// fails in the tensor allocator (a RuntimeError) before a table of that length is requested
// from operator new, which the sanitizers' allocator aborts on instead of throwing.
Tensor remap_into(Tensor out, const Tensor& a, const RemapTables& tables) {
  if (out.numel() == 0) return out;
  index_remap_stub.get(a.device())(out, a, tables);
  return out;
}

// Runs the index-remap kernel into a new contiguous tensor of `sizes`.
Tensor remap(const Tensor& a, const Shape& sizes, const RemapTables& tables) {
  return remap_into(empty(sizes, a.dtype(), a.device()), a, tables);
}

// Offset tables that read `a` unchanged (callers replace the dims they move).
RemapTables identity_tables(const Tensor& a) {
  RemapTables t(static_cast<size_t>(a.dim()));
  for (int64_t d = 0; d < a.dim(); ++d) {
    int64_t n = a.sizes()[d], st = a.strides()[d];
    t[d].resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) t[d][i] = i * st;
  }
  return t;
}

}  // namespace

// ---- cat / stack ------------------------------------------------------------------

namespace {

/// cat without autograd; `d` gets the wrapped dim.
Tensor cat_impl(const std::vector<Tensor>& tensors, int64_t dim, int64_t& d) {
  EMBER_CHECK(!tensors.empty(), "ember.cat(): expected a non-empty list of Tensors");
  check_devices(tensors, "cat");
  DType dtype = tensors[0].dtype();
  for (size_t i = 0; i < tensors.size(); ++i) {
    EMBER_CHECK(tensors[i].dim() > 0, "zero-dimensional tensor (at position ", i,
                ") cannot be concatenated");
    dtype = promote_types(dtype, tensors[i].dtype());
  }
  // The first tensor that is not skipped fixes the rank and the other sizes.
  const Tensor* ref = nullptr;
  size_t ref_i = 0;
  for (size_t i = 0; i < tensors.size() && !ref; ++i)
    if (!cat_skips(tensors[i])) ref = &tensors[i], ref_i = i;
  if (!ref) {  // every input is 1-d and empty: the result is too
    d = wrap_dim(dim, 1);
    return empty(tensors[0].sizes(), dtype, tensors[0].device());
  }
  d = wrap_dim(dim, ref->dim());
  Shape out_sizes = ref->sizes();
  int64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (cat_skips(t)) continue;
    EMBER_CHECK(t.dim() == ref->dim(), "Tensors must have same number of dimensions: got ",
                ref->dim(), " and ", t.dim(), " (tensor number ", ref_i, " has shape ",
                shape_str(ref->sizes()), ", tensor number ", i, " has shape ", shape_str(t.sizes()),
                ")");
    for (int64_t k = 0; k < t.dim(); ++k) {
      if (k == d) continue;
      EMBER_CHECK(t.sizes()[k] == out_sizes[k], "Sizes of tensors must match except in dimension ",
                  d, ". Expected size ", out_sizes[k], " but got size ", t.sizes()[k],
                  " for tensor number ", i, " in the list.");
    }
    total = checked_add(total, t.sizes()[d], "cat");
  }
  out_sizes[d] = total;
  Tensor out = empty(out_sizes, dtype, ref->device());
  if (out.numel() == 0) return out;
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    if (cat_skips(t)) continue;
    int64_t n = t.sizes()[d];
    if (n > 0) copy_(narrow(out, d, offset, n), t);  // converts dtype on the way
    offset += n;
  }
  return out;
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  EMBER_TRACE("aten::cat(Tensor[] tensors, int dim=0) -> Tensor", cat, tensors, dim);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_list("cat", tensors);
    autocast::ExcludeGuard g_;
    return cat(c_, dim);
  }
  autograd::RecordScope scope(tensors);
  int64_t d = 0;
  Tensor out = cat_impl(tensors, dim, d);
  if (scope.rec) {
    scope.done();
    autograd::record_cat(tensors, d, out);
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  EMBER_TRACE("aten::stack(Tensor[] tensors, int dim=0) -> Tensor", stack, tensors, dim);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_list("stack", tensors);
    autocast::ExcludeGuard g_;
    return stack(c_, dim);
  }
  EMBER_CHECK(!tensors.empty(), "stack expects a non-empty TensorList");
  for (size_t i = 1; i < tensors.size(); ++i)
    EMBER_CHECK(tensors[i].sizes() == tensors[0].sizes(),
                "stack expects each tensor to be equal size, but got ",
                shape_str(tensors[0].sizes()), " at entry 0 and ", shape_str(tensors[i].sizes()),
                " at entry ", i);
  int64_t d = wrap_dim(dim, tensors[0].dim() + 1);
  autograd::RecordScope scope(tensors);
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (const Tensor& t : tensors) parts.push_back(unsqueeze(t, d));
  Tensor out = cat(parts, d);
  if (scope.rec) {
    scope.done();
    autograd::record_stack(tensors, d, out);
  }
  return out;
}

Tensor atleast_1d(const Tensor& a) {
  EMBER_TRACE("aten::atleast_1d(Tensor self) -> Tensor", atleast_1d, a);
  return a.dim() == 0 ? reshape(a, Shape{1}) : a;
}

Tensor atleast_2d(const Tensor& a) {
  EMBER_TRACE("aten::atleast_2d(Tensor self) -> Tensor", atleast_2d, a);
  if (a.dim() == 0) return reshape(a, Shape{1, 1});
  if (a.dim() == 1) return unsqueeze(a, 0);
  return a;
}

Tensor atleast_3d(const Tensor& a) {
  EMBER_TRACE("aten::atleast_3d(Tensor self) -> Tensor", atleast_3d, a);
  if (a.dim() == 0) return reshape(a, Shape{1, 1, 1});
  if (a.dim() == 1) return unsqueeze(unsqueeze(a, 0), 2);
  if (a.dim() == 2) return unsqueeze(a, 2);
  return a;
}

namespace {
std::vector<Tensor> map_tensors(const std::vector<Tensor>& ts, const char* op,
                                Tensor (*f)(const Tensor&)) {
  EMBER_CHECK(!ts.empty(), op, " expects a non-empty TensorList");
  std::vector<Tensor> r;
  r.reserve(ts.size());
  for (const Tensor& t : ts) r.push_back(f(t));
  return r;
}
}  // namespace

Tensor hstack(const std::vector<Tensor>& tensors) {
  EMBER_TRACE("aten::hstack(Tensor[] tensors) -> Tensor", hstack, tensors);
  auto ts = map_tensors(tensors, "hstack", &atleast_1d);
  return cat(ts, ts[0].dim() == 1 ? 0 : 1);
}

Tensor vstack(const std::vector<Tensor>& tensors) {
  EMBER_TRACE("aten::vstack(Tensor[] tensors) -> Tensor", vstack, tensors);
  return cat(map_tensors(tensors, "vstack", &atleast_2d), 0);
}

Tensor dstack(const std::vector<Tensor>& tensors) {
  EMBER_TRACE("aten::dstack(Tensor[] tensors) -> Tensor", dstack, tensors);
  return cat(map_tensors(tensors, "dstack", &atleast_3d), 2);
}

Tensor column_stack(const std::vector<Tensor>& tensors) {
  EMBER_TRACE("aten::column_stack(Tensor[] tensors) -> Tensor", column_stack, tensors);
  auto ts = map_tensors(tensors, "column_stack", [](const Tensor& t) {
    return t.dim() <= 1 ? reshape(t, Shape{t.numel(), 1}) : t;
  });
  return hstack(ts);
}

// ---- flip / roll ------------------------------------------------------------------

Tensor flip(const Tensor& a, const Shape& dims) {
  EMBER_TRACE("aten::flip(Tensor self, int[] dim) -> Tensor", flip, a, dims);
  autograd::RecordScope scope({&a});
  std::vector<bool> seen(size_t(std::max<int64_t>(a.dim(), 1)), false);
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, a.dim());
    EMBER_CHECK(!seen[w], "dim ", w, " appears multiple times in the list of dims");
    seen[w] = true;
  }
  RemapTables tables = identity_tables(a);
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (!seen[d]) continue;
    int64_t n = a.sizes()[d], st = a.strides()[d];
    for (int64_t i = 0; i < n; ++i) tables[d][i] = (n - 1 - i) * st;
  }
  Tensor out = remap(a, a.sizes(), tables);
  if (scope.rec) {
    scope.done();
    autograd::record_flip(a, dims, out);
  }
  return out;
}

Tensor fliplr(const Tensor& a) {
  EMBER_TRACE("aten::fliplr(Tensor self) -> Tensor", fliplr, a);
  EMBER_CHECK(a.dim() >= 2, "fliplr: Input must be >= 2-d, got a tensor of shape ",
              shape_str(a.sizes()));
  return flip(a, Shape{1});
}

Tensor flipud(const Tensor& a) {
  EMBER_TRACE("aten::flipud(Tensor self) -> Tensor", flipud, a);
  EMBER_CHECK(a.dim() >= 1, "flipud: Input must be >= 1-d, got a 0-d tensor");
  return flip(a, Shape{0});
}

namespace {

Tensor roll_impl(const Tensor& a, const Shape& shifts, const Shape& dims) {
  EMBER_CHECK(!shifts.empty(), "`shifts` required");
  if (dims.empty()) {
    EMBER_CHECK(shifts.size() == 1, "shifts and dimensions must align. shifts: ", shifts.size(),
                ", dims:0 (without dims, roll takes a single shift of the flattened tensor)");
    Tensor flat = reshape(a, Shape{a.numel()});
    return view(roll_impl(flat, shifts, Shape{0}), a.sizes());
  }
  EMBER_CHECK(shifts.size() == dims.size(),
              "shifts and dimensions must align. shifts: ", shifts.size(), ", dims:", dims.size());
  // Shifts on the same dim add up; the kernel then reads each dim once.
  Shape total;
  total.resize(size_t(a.dim()), 0);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(dims[i], a.dim(), /*scalar_ok=*/false);
    int64_t n = a.sizes()[d];
    if (n > 0) total[d] = ((total[d] + shifts[i] % n) % n + n) % n;
  }
  if (a.numel() == 0) return clone(a);
  RemapTables tables = identity_tables(a);
  for (int64_t d = 0; d < a.dim(); ++d) {
    int64_t n = a.sizes()[d], st = a.strides()[d], s = total[d];
    for (int64_t i = 0; i < n; ++i) tables[d][i] = ((i - s + n) % n) * st;
  }
  return remap(a, a.sizes(), tables);
}

}  // namespace

Tensor roll(const Tensor& a, const Shape& shifts, const Shape& dims) {
  EMBER_TRACE("aten::roll(Tensor self, int[] shifts, int[] dim) -> Tensor", roll, a, shifts, dims);
  autograd::RecordScope scope({&a});
  Tensor out = roll_impl(a, shifts, dims);
  if (scope.rec) {
    scope.done();
    autograd::record_roll(a, shifts, dims, out);
  }
  return out;
}

// ---- repeat / tile / repeat_interleave -----------------------------------------------------

Tensor repeat(const Tensor& a, const Shape& repeats) {
  EMBER_TRACE("aten::repeat(Tensor self, int[] repeats) -> Tensor", repeat, a, repeats);
  int64_t r = int64_t(repeats.size());
  EMBER_CHECK(r >= a.dim(),
              "Number of dimensions of repeat dims can not be smaller than number of dimensions "
              "of tensor (repeat dims ",
              shape_str(repeats), ", tensor shape ", shape_str(a.sizes()), ")");
  int64_t lead = r - a.dim();
  Shape out_sizes, src_sizes, src_strides, dst_sizes;
  for (int64_t i = 0; i < r; ++i) {
    int64_t x = i < lead ? 1 : a.sizes()[i - lead];
    EMBER_CHECK(repeats[i] >= 0, "Trying to create tensor with negative dimension ", repeats[i],
                ": ", shape_str(repeats));
    out_sizes.push_back(checked_mul(x, repeats[i], "repeat"));
    // The output seen as [r0, x0, r1, x1, ...]; the input as [1, x0, 1, x1, ...].
    dst_sizes.push_back(repeats[i]);
    dst_sizes.push_back(x);
    src_sizes.push_back(1);
    src_sizes.push_back(x);
    src_strides.push_back(0);
    src_strides.push_back(i < lead ? 0 : a.strides()[i - lead]);
  }
  autograd::RecordScope scope({&a});
  Tensor out = empty(out_sizes, a.dtype(), a.device());
  if (out.numel() > 0) {
    Tensor dst = make_view(out, dst_sizes, contiguous_strides(dst_sizes), 0);
    copy_(dst, make_view(a, src_sizes, src_strides, a.storage_offset()));
  }
  if (scope.rec) {
    scope.done();
    autograd::record_repeat(a, repeats, out);
  }
  return out;
}

Tensor tile(const Tensor& a, const Shape& reps) {
  EMBER_TRACE("aten::tile(Tensor self, int[] reps) -> Tensor", tile, a, reps);
  Shape r = reps;
  while (int64_t(r.size()) < a.dim()) r.insert(0, 1);
  return repeat(a, r);
}

namespace {
void check_repeats(int64_t r) { EMBER_CHECK(r >= 0, "repeats can not be negative (got ", r, ")"); }
}  // namespace

Tensor repeat_interleave(const Tensor& a, int64_t repeats, std::optional<int64_t> dim) {
  EMBER_TRACE("aten::repeat_interleave.int_intOpt(Tensor self, int repeats, int? dim) -> Tensor",
              repeat_interleave, a, repeats, dim);
  check_repeats(repeats);
  Tensor in = dim ? a : reshape(a, Shape{a.numel()});
  int64_t d = dim ? wrap_dim(*dim, in.dim()) : 0;
  if (in.dim() == 0) in = reshape(in, Shape{1});
  autograd::RecordScope scope({&in});
  // Output index j along d reads input index j / repeats (Note [Index remap]).
  Shape out_sizes = in.sizes();
  out_sizes[d] = checked_mul(in.sizes()[d], repeats, "repeat_interleave");
  Tensor out = empty(out_sizes, in.dtype(), in.device());  // before the table (see remap_into)
  if (out.numel() > 0) {
    RemapTables tables = identity_tables(in);
    std::vector<int64_t>& t = tables[d];
    int64_t st = in.strides()[d];
    t.resize(size_t(out_sizes[d]));
    for (int64_t j = 0; j < out_sizes[d]; ++j) t[j] = (j / repeats) * st;
    remap_into(out, in, tables);
  }
  if (scope.rec) {
    scope.done();
    // PyTorch's repeat_interleave is index_select(in, d, [0]*r + [1]*r + ...).
    std::vector<int64_t> idx(size_t(out_sizes[d]));
    for (int64_t j = 0; j < out_sizes[d]; ++j) idx[j] = j / repeats;
    autograd::record_index_select(in, d, int64_tensor(idx, in.device()), out);
  }
  return out;
}

Tensor repeat_interleave(const Tensor& a, const Tensor& repeats, std::optional<int64_t> dim) {
  EMBER_TRACE(
      "aten::repeat_interleave.Tensor_intOpt(Tensor self, Tensor repeats, int? dim) -> Tensor",
      repeat_interleave, a, repeats, dim);
  EMBER_CHECK(repeats.dtype() == DType::Int64 || repeats.dtype() == DType::Int32,
              "repeats has to be Long or Int tensor, got ", dtype_name(repeats.dtype()));
  EMBER_CHECK(repeats.dim() <= 1, "repeats must be 0-dim or 1-dim tensor, got shape ",
              shape_str(repeats.sizes()));
  Tensor in = dim ? a : reshape(a, Shape{a.numel()});
  int64_t d = dim ? wrap_dim(*dim, in.dim()) : 0;
  if (in.dim() == 0) in = reshape(in, Shape{1});
  std::vector<int64_t> reps = to_int64_vector(repeats);
  if (reps.size() == 1) return repeat_interleave(in, reps[0], d);
  EMBER_CHECK(int64_t(reps.size()) == in.sizes()[d],
              "repeats must have the same size as input along dim, but got repeats.size(0) = ",
              reps.size(), " and input.size(", d, ") = ", in.sizes()[d]);
  int64_t total = 0;
  for (int64_t r : reps) {
    check_repeats(r);
    total = checked_add(total, r, "repeat_interleave");
  }
  autograd::RecordScope scope({&in});
  Shape out_sizes = in.sizes();
  out_sizes[d] = total;
  Tensor out = empty(out_sizes, in.dtype(), in.device());  // before the table (see remap_into)
  RemapTables tables = identity_tables(in);
  std::vector<int64_t>& t = tables[d];
  t.clear();
  t.reserve(size_t(total));
  int64_t st = in.strides()[d];
  for (size_t i = 0; i < reps.size(); ++i) t.insert(t.end(), size_t(reps[i]), int64_t(i) * st);
  out = remap_into(out, in, tables);
  if (scope.rec) {
    scope.done();
    std::vector<int64_t> idx;
    idx.reserve(size_t(total));
    for (size_t i = 0; i < reps.size(); ++i) idx.insert(idx.end(), size_t(reps[i]), int64_t(i));
    autograd::record_index_select(in, d, int64_tensor(idx, in.device()), out);
  }
  return out;
}

Tensor repeat_interleave(const Tensor& repeats) {
  EMBER_TRACE("aten::repeat_interleave.default(Tensor repeats) -> Tensor", repeat_interleave,
              repeats);
  EMBER_CHECK(repeats.dim() == 1, "repeat_interleave only accept 1D vector as repeat, got shape ",
              shape_str(repeats.sizes()));
  EMBER_CHECK(repeats.dtype() == DType::Int64 || repeats.dtype() == DType::Int32,
              "repeats has to be Long or Int tensor, got ", dtype_name(repeats.dtype()));
  std::vector<int64_t> reps = to_int64_vector(repeats), idx;
  int64_t total = 0;
  for (int64_t r : reps) {
    check_repeats(r);
    total = checked_add(total, r, "repeat_interleave");
  }
  idx.reserve(size_t(total));
  for (size_t i = 0; i < reps.size(); ++i) idx.insert(idx.end(), size_t(reps[i]), int64_t(i));
  return to_dtype(int64_tensor(idx, repeats.device()), repeats.dtype());
}

// ---- helpers shared with sort.cpp ------------------------------------------------------------

Tensor take_along_dim_rows(const Tensor& a, int64_t dim, const std::vector<int64_t>& index) {
  RemapTables tables = identity_tables(a);
  int64_t st = a.strides()[dim];
  tables[dim].resize(index.size());
  for (size_t i = 0; i < index.size(); ++i) tables[dim][i] = index[i] * st;
  Shape sizes = a.sizes();
  sizes[dim] = int64_t(index.size());
  return remap(a, sizes, tables);
}

std::vector<int64_t> to_int64_vector(const Tensor& t) {
  Tensor c = contiguous(to_dtype(to_device(t, Device()), DType::Int64));
  const int64_t* p = c.data<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

Tensor int64_tensor(const std::vector<int64_t>& v, Device device) {
  Tensor t = empty(Shape{int64_t(v.size())}, DType::Int64, Device());
  if (!v.empty()) std::copy(v.begin(), v.end(), t.data<int64_t>());
  return to_device(t, device);
}

}  // namespace ember
