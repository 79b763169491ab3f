// The dim-wise gather/scatter family (gather, scatter, scatter with reduce=, scatter_add,
// index_add) of ops/index.h; advanced indexing and masks are in ops/index.cpp.
#include <algorithm>

#include "ember/autograd/derivatives/index.h"
#include "ember/autograd/record.h"
#include "ember/jit/trace_hook.h"
#include "ember/ops/index.h"
#include "ember/ops/index_detail.h"
#include "ember/ops/ops.h"
#include "ember/ops/out.h"
#include "ember/ops/reduce.h"
#include "ember/ops/surface_scan.h"
#include "ember/ops/view.h"

namespace ember {

using namespace index_detail;

namespace {

/// Shape checks shared by gather/scatter; returns the wrapped dim.
int64_t check_gather_scatter(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                             const Tensor* src) {
  EMBER_CHECK(index.dtype() == DType::Int64, op, "(): Expected dtype int64 for index, but got ",
              dtype_name(index.dtype()));
  check_same_device_strict(self, index, op);
  int64_t nd = std::max<int64_t>(self.dim(), 1);
  dim = wrap_dim(dim, self.dim());
  EMBER_CHECK(std::max<int64_t>(index.dim(), 1) == nd,
              "Index tensor must have the same number of dimensions as ", src ? "self" : "input",
              " tensor (", op, ": index has ", index.dim(), ", self has ", self.dim(), ")");
  if (src) {
    check_same_device_strict(self, *src, op);  // the kernels read src on self's device
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
  EMBER_TRACE("aten::gather(Tensor self, int dim, Tensor index) -> Tensor", gather, self, dim,
              index);
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
  EMBER_TRACE(
      "aten::scatter.int_Tensor_Tensor(Tensor self, int dim, Tensor index, Tensor src) -> Tensor",
      scatter, self, dim, index, src);
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
  EMBER_TRACE(
      "aten::scatter.int_Tensor_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor",
      scatter, self, dim, index, value);
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
  EMBER_TRACE("aten::scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor",
              scatter_add, self, dim, index, src);
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
  EMBER_TRACE(
      "aten::scatter_.int_Tensor_Tensor(Tensor self, int dim, Tensor index, Tensor src) -> Tensor",
      scatter_, self, dim, index, src);
  if (autograd::inplace_records(self, {&src})) {
    check_no_internal_overlap(self, "scatter");
    autograd::inplace_with_grad(self, "scatter_", false,
                                [&](const Tensor& s) { return scatter(s, dim, index, src); });
    return self;
  }
  return scatter_impl("scatter", self, dim, index, src, false, false);
}
const Tensor& scatter_(const Tensor& self, int64_t dim, const Tensor& index, Scalar value) {
  EMBER_TRACE(
      "aten::scatter_.int_Tensor_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> "
      "Tensor",
      scatter_, self, dim, index, value);
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
  EMBER_TRACE("aten::scatter_add_(Tensor self, int dim, Tensor index, Tensor src) -> Tensor",
              scatter_add_, self, dim, index, src);
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
      "The reduce argument of ember.scatter with Tensor src is deprecated and will be removed "
      "in a future PyTorch release. Use ember.scatter_reduce instead for more reduction "
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
  EMBER_TRACE(
      "aten::scatter.int_Tensor_Tensor_str(Tensor self, int dim, Tensor index, Tensor src, str "
      "reduce) -> Tensor",
      scatter, self, dim, index, src, reduce);
  return scatter_reduce_legacy(self, dim, index, &src, Scalar(int64_t(0)), reduce);
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, Scalar value,
               const std::string& reduce) {
  EMBER_TRACE(
      "aten::scatter.int_Tensor_Scalar_str(Tensor self, int dim, Tensor index, Scalar value, str "
      "reduce) -> Tensor",
      scatter, self, dim, index, value, reduce);
  return scatter_reduce_legacy(self, dim, index, nullptr, value, reduce);
}
const Tensor& scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                       const std::string& reduce) {
  EMBER_TRACE(
      "aten::scatter_.int_Tensor_Tensor_str(Tensor self, int dim, Tensor index, Tensor src, str "
      "reduce) -> Tensor",
      scatter_, self, dim, index, src, reduce);
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
  EMBER_TRACE(
      "aten::scatter_.int_Tensor_Scalar_str(Tensor self, int dim, Tensor index, Scalar value, str "
      "reduce) -> Tensor",
      scatter_, self, dim, index, value, reduce);
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
  check_same_device_strict(self, index, "index_add_");
  check_same_device_strict(self, source, "index_add_");
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
  EMBER_TRACE(
      "aten::index_add(Tensor self, int dim, Tensor index, Tensor source, Scalar alpha=1) -> "
      "Tensor",
      index_add, self, dim, index, source, alpha);
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
  EMBER_TRACE(
      "aten::index_add_(Tensor self, int dim, Tensor index, Tensor source, Scalar alpha=1) -> "
      "Tensor",
      index_add_, self, dim, index, source, alpha);
  if (autograd::inplace_records(self, {&source})) {
    check_no_internal_overlap(self, "index_add_");
    autograd::inplace_with_grad(self, "index_add_", false, [&](const Tensor& s) {
      return index_add(s, dim, index, source, alpha);
    });
    return self;
  }
  return index_add_impl(self, dim, index, source, alpha);
}

}  // namespace ember
