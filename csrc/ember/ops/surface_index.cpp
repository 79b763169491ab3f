// Indexing composites (ops/surface.h): index_fill, index_copy, masked_scatter
// and put, written as a mask and a where() so autograd comes from the primitives.
#include "ember/jit/trace_hook.h"
#include "ember/ops/index.h"
#include "ember/ops/reduce.h"
#include "ember/ops/surface.h"
#include "ember/ops/view.h"

namespace ember {
namespace {

void check_index(const Tensor& index, const char* op) {
  EMBER_CHECK(index.dtype() == DType::Int64 || index.dtype() == DType::Int32, op,
              "(): Expected a long tensor for index, but got ", dtype_name(index.dtype()));
  EMBER_CHECK_INDEX(index.dim() <= 1, op, "(): Index is supposed to be a vector, got a ",
                    index.dim(), "-D tensor");
}

// A bool mask over `a` that is true on the slices `index` selects along `dim`.
Tensor dim_mask(const Tensor& a, int64_t dim, const Tensor& index, const char* op) {
  check_index(index, op);
  int64_t n = a.dim() == 0 ? 1 : a.sizes()[dim];
  Tensor m = zeros(Shape{n}, DType::Bool, a.device());
  Tensor idx = reshape(index, Shape{-1});
  if (idx.numel()) {
    autograd::GradModeGuard no_grad(false);
    index_put_(m, {to_dtype(idx, DType::Int64)},
               full(Shape{}, Scalar(true), DType::Bool, a.device()));
  }
  if (a.dim() == 0) return reshape(m, Shape{});
  Shape s(static_cast<size_t>(a.dim()), 1);
  s[dim] = n;
  return reshape(m, s);
}

}  // namespace

Tensor index_fill(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& value) {
  EMBER_TRACE("aten::index_fill(Tensor self, int dim, Tensor index, Tensor value) -> Tensor",
              index_fill, a, dim, index, value);
  EMBER_CHECK(value.dim() == 0,
              "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  dim = wrap_dim(dim, std::max<int64_t>(a.dim(), 1));
  Tensor m = dim_mask(a, dim, index, "index_fill");
  Tensor v = value.dtype() == a.dtype() ? value : to_dtype(value, a.dtype());
  return where(m, v, a);
}

Tensor index_copy(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& source) {
  EMBER_TRACE("aten::index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor",
              index_copy, a, dim, index, source);
  dim = wrap_dim(dim, std::max<int64_t>(a.dim(), 1));
  EMBER_CHECK(source.dtype() == a.dtype(),
              "index_copy_(): self and source expected to have the same dtype, but got (self) ",
              dtype_name(a.dtype()), " and (source) ", dtype_name(source.dtype()));
  int64_t n = index.numel();
  EMBER_CHECK_INDEX(a.dim() == 0 || source.dim() == 0 || source.dim() == a.dim(),
                    "index_copy_(): When source and destination are not scalars, their "
                    "dimensionality must match. ",
                    "Source dimensionality (", source.dim(), "), destination dimensionality (",
                    a.dim(), ")");
  if (a.dim() > 0 && source.dim() > 0)
    EMBER_CHECK_INDEX(source.sizes()[dim] == n, "index_copy_(): Number of indices (", n,
                      ") should be equal to source.size(dim) (", source.sizes()[dim], ")");
  Tensor m = dim_mask(a, dim, index, "index_copy");
  Tensor base = zeros(a.sizes(), a.dtype(), a.device());
  Tensor src = a.dim() == 0 ? reshape(source, Shape{1}) : source;
  Tensor scattered =
      a.dim() == 0
          ? reshape(index_add(reshape(base, Shape{1}), 0, reshape(index, Shape{-1}), src), Shape{})
          : index_add(base, dim, reshape(index, Shape{-1}), src);
  return where(m, scattered, a);
}

Tensor masked_scatter(const Tensor& a, const Tensor& mask, const Tensor& source) {
  EMBER_TRACE("aten::masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor",
              masked_scatter, a, mask, source);
  EMBER_CHECK(mask.dtype() == DType::Bool,
              "masked_scatter_ only supports boolean masks, but got mask with dtype ",
              dtype_name(mask.dtype()));
  EMBER_CHECK(source.dtype() == a.dtype(),
              "masked_scatter: expected self and source to have same dtypes but got ",
              dtype_name(a.dtype()), " and ", dtype_name(source.dtype()));
  Tensor mb = contiguous(expand(mask, a.sizes()));
  Tensor flat = reshape(mb, Shape{-1});
  Tensor pos =
      binary(BinaryOp::sub, cumsum(flat, 0, DType::Int64), wrap_scalar(Scalar(int64_t(1))));
  int64_t count = 0;
  {
    Tensor c = to_device(sum(flat, std::nullopt, false, DType::Int64), Device());
    count = *reinterpret_cast<const int64_t*>(c.data_ptr());
  }
  EMBER_CHECK(source.numel() >= count, "masked_scatter: expected source to have at least ", count,
              " elements (the number of True values in mask), but got ", source.numel());
  if (count == 0) return clone(a);
  Tensor idx = clamp(pos, wrap_scalar(Scalar(int64_t(0))), std::nullopt);
  Tensor vals = reshape(gather(reshape(source, Shape{-1}), 0, idx), a.sizes());
  return where(mb, vals, a);
}

Tensor put(const Tensor& a, const Tensor& index, const Tensor& source, bool accumulate) {
  EMBER_TRACE("aten::put(Tensor self, Tensor index, Tensor source, bool accumulate) -> Tensor", put,
              a, index, source, accumulate);
  EMBER_CHECK(index.dtype() == DType::Int64, "put_(): Expected a long tensor for index, but got ",
              dtype_name(index.dtype()));
  EMBER_CHECK(source.dtype() == a.dtype(),
              "put_(): self and source expected to have the same dtype, but got self.dtype = ",
              dtype_name(a.dtype()), " and source.dtype = ", dtype_name(source.dtype()));
  EMBER_CHECK(index.numel() == source.numel(),
              "put_(): Expected source and index to have the same number of elements, but got "
              "source.numel() = ",
              source.numel(), ", index.numel() = ", index.numel());
  Tensor flat = reshape(a, Shape{-1});
  Tensor r = index_put(flat, {reshape(index, Shape{-1})}, reshape(source, Shape{-1}), accumulate);
  return reshape(r, a.sizes());
}

}  // namespace ember
