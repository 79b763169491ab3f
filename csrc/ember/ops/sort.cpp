// Front-ends of the sorting and searching ops (see sort.h).
#include "ember/ops/sort.h"
#include "ember/jit/trace_hook.h"

#include <algorithm>
#include <climits>

#include "ember/autograd/derivatives/join.h"
#include "ember/autograd/record.h"
#include "ember/ops/join.h"
#include "ember/ops/ops.h"
#include "ember/ops/view.h"

namespace ember {

DispatchStub<SortFn> sort_stub("sort");
DispatchStub<TopkFn> topk_stub("topk");
DispatchStub<KthvalueFn> kthvalue_stub("kthvalue");
DispatchStub<UniqueRowsFn> unique_rows_stub("unique");
DispatchStub<SearchsortedFn> searchsorted_stub("searchsorted");

namespace {

void check_not_bool(const Tensor& t, const char* op) {
  EMBER_CHECK(t.dtype() != DType::Bool, '"', op, "\" not implemented for 'bool'");
}

// A 0-d input is sorted/selected as a 1-element 1-d tensor.
Tensor as_1d_if_scalar(const Tensor& t) { return t.dim() == 0 ? reshape(t, Shape{1}) : t; }

}  // namespace

// ---- sort / argsort / msort -------------------------------------------------------------

namespace {

std::tuple<Tensor, Tensor> sort_impl(const Tensor& self, int64_t d, bool descending, bool stable) {
  Tensor values = empty(self.sizes(), self.dtype(), self.device());
  Tensor indices = empty(self.sizes(), DType::Int64, self.device());
  if (self.numel() == 0) return {values, indices};
  if (self.dim() == 0) {
    copy_(values, self);
    fill_(indices, Scalar(int64_t(0)));
    return {values, indices};
  }
  sort_stub.get(self.device())(values, indices, self, d, descending, stable);
  return {values, indices};
}

}  // namespace

std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim, bool descending, bool stable) {
  EMBER_TRACE(
      "aten::sort(Tensor self, int dim=-1, bool descending=False, bool stable=False) -> (Tensor, "
      "Tensor)",
      sort, self, dim, descending, stable);
  int64_t d = wrap_dim(dim, self.dim());
  autograd::RecordScope scope({&self});
  auto [values, indices] = sort_impl(self, d, descending, stable);
  if (scope.rec) {
    scope.done();
    autograd::record_value_selecting("SortBackward0", self, d, indices, false, values);
  }
  return {values, indices};
}

Tensor argsort(const Tensor& self, int64_t dim, bool descending, bool stable) {
  EMBER_TRACE(
      "aten::argsort(Tensor self, int dim=-1, bool descending=False, bool stable=False) -> Tensor",
      argsort, self, dim, descending, stable);
  // Indices only: nothing to differentiate, so no node.
  autograd::GradModeGuard no_grad(false);
  return std::get<1>(sort_impl(self, wrap_dim(dim, self.dim()), descending, stable));
}

Tensor msort(const Tensor& self) {
  EMBER_TRACE("aten::msort(Tensor self) -> Tensor", msort, self);
  return std::get<0>(sort(self, 0, false, false));
}

// ---- topk / kthvalue ------------------------------------------------------------------

std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim, bool largest,
                                bool sorted) {
  EMBER_TRACE(
      "aten::topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor, "
      "Tensor)",
      topk, self, k, dim, largest, sorted);
  check_not_bool(self, "topk");
  int64_t d = wrap_dim(dim, self.dim());
  int64_t slice = self.dim() == 0 ? 1 : self.sizes()[d];
  EMBER_CHECK(k >= 0 && k <= slice, "selected index k out of range (k = ", k, ", but dimension ", d,
              " of the input of shape ", shape_str(self.sizes()), " has size ", slice, ")");
  autograd::RecordScope scope({&self});
  Tensor in = as_1d_if_scalar(self);
  Shape sizes = in.sizes();
  sizes[d] = k;
  Tensor values = empty(sizes, self.dtype(), self.device());
  Tensor indices = empty(sizes, DType::Int64, self.device());
  if (values.numel() > 0) topk_stub.get(self.device())(values, indices, in, k, d, largest, sorted);
  if (self.dim() == 0 && k == 1) {
    values = view(values, Shape{});
    indices = view(indices, Shape{});
  }
  if (scope.rec) {
    scope.done();
    autograd::record_value_selecting("TopkBackward0", self, d, indices, false, values);
  }
  return {values, indices};
}

std::tuple<Tensor, Tensor> kthvalue(const Tensor& self, int64_t k, int64_t dim, bool keepdim) {
  EMBER_TRACE(
      "aten::kthvalue(Tensor self, int k, int dim=-1, bool keepdim=False) -> (Tensor, Tensor)",
      kthvalue, self, k, dim, keepdim);
  check_not_bool(self, "kthvalue");
  int64_t d = wrap_dim(dim, self.dim());
  int64_t slice = self.dim() == 0 ? 1 : self.sizes()[d];
  EMBER_CHECK_INDEX(slice > 0, "kthvalue(): Expected reduction dim ", d,
                    " to have non-zero size (input shape ", shape_str(self.sizes()), ")");
  EMBER_CHECK(k >= 1 && k <= slice, "kthvalue(): selected number k out of range for dimension ", d,
              " (k = ", k, ", but the dimension has size ", slice, ")");
  autograd::RecordScope scope({&self});
  Tensor in = as_1d_if_scalar(self);
  Shape sizes = in.sizes();
  sizes[d] = 1;
  Tensor values = empty(sizes, self.dtype(), self.device());
  Tensor indices = empty(sizes, DType::Int64, self.device());
  if (values.numel() > 0) kthvalue_stub.get(self.device())(values, indices, in, k, d);
  bool squeezed = false;
  if (self.dim() == 0) {
    values = view(values, Shape{});
    indices = view(indices, Shape{});
  } else if (!keepdim) {
    values = squeeze(values, Shape{d});
    indices = squeeze(indices, Shape{d});
    squeezed = true;
  }
  if (scope.rec) {
    scope.done();
    autograd::record_value_selecting("KthvalueBackward0", self, d, indices, squeezed, values);
  }
  return {values, indices};
}

// ---- unique / unique_consecutive --------------------------------------------------------------

namespace {

std::tuple<Tensor, Tensor, Tensor> unique_impl(const Tensor& self, bool consecutive,
                                               bool return_inverse, bool return_counts,
                                               std::optional<int64_t> dim) {
  const char* op = consecutive ? "unique_consecutive" : "unique";
  autograd::RecordScope scope({&self});
  Device dev = self.device();
  std::vector<int64_t> first, inverse, counts;
  Tensor output;
  Shape inverse_shape;
  if (!dim) {
    Tensor flat = contiguous(reshape(self, Shape{self.numel()}));
    if (flat.numel() > 0) unique_rows_stub.get(dev)(flat, consecutive, first, inverse, counts);
    output = take_along_dim_rows(flat, 0, first);
    inverse_shape = self.sizes();
  } else {
    EMBER_CHECK_INDEX(self.dim() > 0, op, "(): dim = ", *dim,
                      " given, but the input is a 0-d tensor (use dim=None)");
    int64_t d = wrap_dim(*dim, self.dim());
    int64_t n = self.sizes()[d];
    if (self.numel() == 0) {
      int64_t zeros = 0;
      for (int64_t s : self.sizes()) zeros += s == 0;
      EMBER_CHECK(zeros == 1, op,
                  "(): Number of zero sized dimensions is more than one, so unique "
                  "cannot be applied (input shape ",
                  shape_str(self.sizes()), ")");
      EMBER_CHECK(n == 0, op,
                  "(): There are 0 sized dimensions, and they aren't selected, so "
                  "unique cannot be applied (input shape ",
                  shape_str(self.sizes()), ", dim ", d, ")");
    } else {
      Tensor rows = contiguous(movedim(self, Shape{d}, Shape{0}));
      rows = view(rows, Shape{n, self.numel() / n});
      unique_rows_stub.get(dev)(rows, consecutive, first, inverse, counts);
    }
    output = take_along_dim_rows(self, d, first);
    inverse_shape = Shape{n};
  }
  Tensor inv, cnt;
  if (return_inverse) inv = view(int64_tensor(inverse, dev), inverse_shape);
  if (return_counts) cnt = int64_tensor(counts, dev);
  if (scope.rec) {
    // PyTorch's output requires grad but has no formula: backward raises.
    scope.done();
    if (consecutive)
      autograd::record_not_implemented("UniqueConsecutiveBackward0", "unique_consecutive", self,
                                       output);
    else if (dim)
      autograd::record_not_implemented("UniqueDimBackward0", "unique_dim", self, output);
    else
      autograd::record_not_implemented("Unique2Backward0", "_unique2", self, output);
  }
  return {output, inv, cnt};
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& self, bool sorted, bool return_inverse,
                                          bool return_counts, std::optional<int64_t> dim) {
  EMBER_TRACE(
      "aten::unique(Tensor self, bool sorted=True, bool return_inverse=False, bool "
      "return_counts=False, int? dim=None) -> (Tensor, Tensor, Tensor)",
      unique, self, sorted, return_inverse, return_counts, dim);
  (void)sorted;  // the output is always sorted, which sorted=False allows
  return unique_impl(self, false, return_inverse, return_counts, dim);
}

std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& self, bool return_inverse,
                                                      bool return_counts,
                                                      std::optional<int64_t> dim) {
  EMBER_TRACE(
      "aten::unique_consecutive(Tensor self, bool return_inverse=False, bool return_counts=False, "
      "int? dim=None) -> (Tensor, Tensor, Tensor)",
      unique_consecutive, self, return_inverse, return_counts, dim);
  return unique_impl(self, true, return_inverse, return_counts, dim);
}

// ---- searchsorted / bucketize ------------------------------------------------------------------

Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool out_int32, bool right,
                    const std::optional<std::string>& side, const std::optional<Tensor>& sorter) {
  EMBER_TRACE(
      "aten::searchsorted(Tensor sorted_sequence, Tensor values, bool out_int32=False, bool "
      "right=False, str? side=None, Tensor? sorter=None) -> Tensor",
      searchsorted, sorted_sequence, values, out_int32, right, side, sorter);
  const Tensor& bd = sorted_sequence;
  if (side) {
    EMBER_CHECK(*side == "left" || *side == "right",
                "ember.searchsorted(): side can only be 'left' or 'right' but got ", *side);
    EMBER_CHECK(!right || *side == "right",
                "ember.searchsorted(): side and right can't be set to opposites, got side of ",
                *side, " while right was True");
    right = *side == "right";
  }
  bool values_on_host_scalar = values.impl()->wrapped_number;
  EMBER_CHECK(values_on_host_scalar || bd.device() == values.device(),
              "ember.searchsorted(): boundaries and input value tensors should have same device "
              "type, but got boundaries tensor device type ",
              bd.device().str(), " and input value tensor device type ", values.device().str());
  EMBER_CHECK(values.dim() > 0 || bd.dim() == 1,
              "ember.searchsorted(): input value can be a scalar only when boundaries tensor "
              "dimension is 1, but we got boundaries tensor dim(",
              bd.dim(), ") and input value's dim(", values.dim(), ") numel(", values.numel(), ")");
  EMBER_CHECK(bd.dim() != 0,
              "ember.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
              "dimension");
  bool batch_ok = bd.dim() == values.dim();
  for (int64_t i = 0; batch_ok && i + 1 < bd.dim(); ++i)
    batch_ok = bd.sizes()[i] == values.sizes()[i];
  EMBER_CHECK(bd.dim() == 1 || batch_ok,
              "ember.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
              "dimensions of boundaries tensor and input value tensor must match, but we got "
              "boundaries tensor ",
              shape_str(bd.sizes()), " and input value tensor ", shape_str(values.sizes()));
  int64_t inner = bd.sizes().back();
  if (out_int32)
    EMBER_CHECK(inner < INT_MAX,
                "ember.searchsorted(): the size of boundaries' last dimension "
                "should be less than ",
                INT_MAX, ", but we got ", inner);
  Tensor sort_idx;
  if (sorter) {
    const Tensor& s = *sorter;
    EMBER_CHECK(s.device() == bd.device(),
                "ember.searchsorted(): sorter and boundary tensors "
                "should have same device type, but got sorter tensor device type ",
                s.device().str(), " and boundary tensor device type ", bd.device().str());
    EMBER_CHECK(s.sizes() == bd.sizes(),
                "ember.searchsorted(): boundary and sorter must have the "
                "same size, but got boundary tensor ",
                shape_str(bd.sizes()), " and got sorter tensor ", shape_str(s.sizes()));
    EMBER_CHECK(s.dtype() == DType::Int64,
                "ember.searchsorted(): sorter must be a tensor of long "
                "dtype but got dtype ",
                dtype_name(s.dtype()));
    for (int64_t v : to_int64_vector(s))
      EMBER_CHECK(v >= 0 && v < inner, "ember.searchsorted(): sorter index out of range (got ", v,
                  " for a last dimension of size ", inner, ")");
    sort_idx = contiguous(s);
  }
  // Compare in the common dtype (a Python number does not upcast the sequence).
  DType common = result_type(bd, values);
  EMBER_CHECK(common != DType::Bool, "\"searchsorted\" not implemented for 'bool'");
  Tensor b = contiguous(to_dtype(bd, common));
  Tensor v = contiguous(to_device(to_dtype(values, common), bd.device()));
  Tensor out = empty(values.sizes(), out_int32 ? DType::Int32 : DType::Int64, bd.device());
  if (out.numel() > 0 && inner > 0) {
    searchsorted_stub.get(bd.device())(out, b, v, sort_idx, right);
  } else if (out.numel() > 0) {
    fill_(out, Scalar(int64_t(0)));  // every value goes before an empty sequence
  }
  return out;
}

Tensor bucketize(const Tensor& input, const Tensor& boundaries, bool out_int32, bool right) {
  EMBER_TRACE(
      "aten::bucketize(Tensor input, Tensor boundaries, bool out_int32=False, bool right=False) -> "
      "Tensor",
      bucketize, input, boundaries, out_int32, right);
  EMBER_CHECK(boundaries.dim() == 1,
              "ember.bucketize(): boundaries tensor must be 1 dimension, "
              "but got dim(",
              boundaries.dim(), ")");
  return searchsorted(boundaries, input, out_int32, right);
}

}  // namespace ember
