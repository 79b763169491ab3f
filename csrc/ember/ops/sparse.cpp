// Sparse COO front-ends: construction, the parts, coalesce and the gather that most
// sparse ops and gradients are written with (Note [Sparse COO tensors]).
#include "ember/ops/sparse.h"

#include <algorithm>

#include "ember/autograd/derivatives/sparse.h"
#include "ember/autograd/record.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/join.h"
#include "ember/ops/reduce.h"
#include "ember/ops/sort.h"
#include "ember/ops/view.h"

namespace ember {

DispatchStub<CoalesceFn> coalesce_stub("coalesce");
DispatchStub<SpmmFn> spmm_stub("spmm");
DispatchStub<SddmmFn> sddmm_stub("sddmm");

void raise_sparse_unsupported(const char* op, const Tensor& t) {
  raise(ErrorKind::NotImplemented, "Could not run '", op, "' with arguments from the '",
        t.device().is_cpu() ? "SparseCPU" : "SparseCUDA", "' backend: ", op,
        " does not support tensors with layout ember.sparse_coo (convert with .to_dense() "
        "first)");
}

namespace {

/// A host int64 scalar read from a 0-d/1-element device tensor.
int64_t host_int(const Tensor& t) {
  Tensor c = t.device().is_cpu() ? t : to_device(t, Device());
  return *contiguous(c).data<int64_t>();
}

Shape values_shape(int64_t nnz, const Shape& sizes, int64_t sparse_dim) {
  Shape s{nnz};
  for (size_t d = size_t(sparse_dim); d < sizes.size(); ++d) s.push_back(sizes[d]);
  return s;
}

// The shape checks PyTorch's SparseTensorImpl makes on every construction.
void check_parts(const Tensor& indices, const Tensor& values, const Shape& sizes) {
  EMBER_CHECK(!indices.is_sparse(),
              "expected indices to be a dense tensor, but got indices of layout sparse_coo");
  EMBER_CHECK(!values.is_sparse(),
              "expected values to be a dense tensor, but got values of layout sparse_coo");
  EMBER_CHECK(indices.dtype() == DType::Int64, "indices must be an int64 tensor");
  EMBER_CHECK(indices.device() == values.device(), "device of indices (", indices.device().str(),
              ") must match device of values (", values.device().str(), ")");
  EMBER_CHECK(indices.dim() == 2,
              "indices must be sparse_dim x nnz, but got: ", shape_str(indices.sizes()));
  EMBER_CHECK(indices.sizes()[1] == values.sizes()[0],
              "indices and values must have same nnz, but got nnz from indices: ",
              indices.sizes()[1], ", nnz from values: ", values.sizes()[0]);
  const int64_t sparse_dim = indices.sizes()[0], dense_dim = values.dim() - 1;
  EMBER_CHECK(int64_t(sizes.size()) == sparse_dim + dense_dim,
              "number of dimensions must be sparse_dim (", sparse_dim, ") + dense_dim (", dense_dim,
              "), but got ", sizes.size());
  Shape expect = values_shape(values.sizes()[0], sizes, sparse_dim);
  EMBER_CHECK(values.sizes() == expect, "values has incorrect size, expected ", shape_str(expect),
              ", got ", shape_str(values.sizes()));
}

}  // namespace

// ---- construction ----------------------------------------------------------------------------

void validate_sparse_coo_args(const Tensor& indices, const Tensor& values, const Shape& size,
                              std::optional<bool> is_coalesced) {
  check_parts(indices, values, size);
  const int64_t S = indices.sizes()[0], nnz = indices.sizes()[1];
  if (nnz > 0 && S > 0) {
    autograd::GradModeGuard no_grad(false);
    Tensor lo = to_device(amin(indices, Shape{1}), Device());
    Tensor hi = to_device(amax(indices, Shape{1}), Device());
    const int64_t* l = contiguous(lo).data<int64_t>();
    const int64_t* h = contiguous(hi).data<int64_t>();
    for (int64_t d = 0; d < S; ++d) {
      EMBER_CHECK(l[d] >= 0, "found negative index ", l[d], " for dim ", d);
      EMBER_CHECK(h[d] < size[d], "size is inconsistent with indices: for dim ", d, ", size is ",
                  size[d], " but found index ", h[d]);
    }
  }
  if (is_coalesced.value_or(false) && nnz > 1) {
    autograd::GradModeGuard no_grad(false);
    Tensor lin = linear_indices(indices, size);
    Tensor ok = all(binary(BinaryOp::gt, narrow(lin, 0, 1, nnz - 1), narrow(lin, 0, 0, nnz - 1)));
    EMBER_CHECK(*to_device(ok, Device()).data<bool>(),
                "cannot set is_coalesced to true if indices correspond to uncoalesced COO "
                "tensor");
  }
}

Tensor sparse_coo_tensor(const Tensor& indices_in, const Tensor& values_in,
                         const std::optional<Shape>& size, std::optional<DType> dtype,
                         std::optional<Device> device, std::optional<bool> check_invariants,
                         std::optional<bool> is_coalesced) {
  EMBER_CHECK(!indices_in.is_sparse(),
              "expected indices to be a dense tensor, but got indices of layout sparse_coo");
  EMBER_CHECK(!values_in.is_sparse(),
              "expected values to be a dense tensor, but got values of layout sparse_coo");
  Tensor indices = indices_in, values = values_in;
  // The values set dtype and device; a 0-d value is one entry, as NumPy's scalars.
  if (dtype && values.dtype() != *dtype) values = to_dtype(values, *dtype);
  Device dev = device ? *device : values.device();
  if (values.device() != dev) values = to_device(values, dev);
  if (indices.device() != dev) indices = to_device(indices, dev);
  // Indices of any dtype are converted, as PyTorch's constructor does.
  if (indices.dtype() != DType::Int64) indices = to_dtype(indices, DType::Int64);
  if (values.dim() == 0) values = reshape(values, Shape{1});
  EMBER_CHECK(indices.dim() == 2,
              "indices must be sparse_dim x nnz, but got: ", shape_str(indices.sizes()));
  const int64_t S = indices.sizes()[0];
  Shape sizes;
  if (size) {
    sizes = *size;
  } else {
    sizes = Shape(size_t(S), 0);
    if (indices.numel() > 0) {
      autograd::GradModeGuard no_grad(false);
      Tensor lo = to_device(amin(indices, Shape{1}), Device());
      Tensor hi = to_device(amax(indices, Shape{1}), Device());
      const int64_t* l = contiguous(lo).data<int64_t>();
      const int64_t* h = contiguous(hi).data<int64_t>();
      for (int64_t d = 0; d < S; ++d) {
        EMBER_CHECK(l[d] >= 0, "found negative index ", l[d], " for dim ", d);
        sizes[size_t(d)] = h[d] + 1;
      }
    }
    for (int64_t d = 1; d < values.dim(); ++d) sizes.push_back(values.sizes()[d]);
  }
  checked_numel(sizes);
  // Index bounds are always checked (PyTorch checks them only with check_invariants): an
  // out-of-range index would make every later kernel read outside its tensors.
  validate_sparse_coo_args(indices, values, sizes,
                           check_invariants.value_or(false) ? is_coalesced : std::nullopt);
  return sparse_from_parts(indices, values, sizes, is_coalesced.value_or(false));
}

Tensor sparse_from_parts(const Tensor& indices, const Tensor& values, const Shape& sizes,
                         bool coalesced) {
  check_parts(indices, values, sizes);
  autograd::RecordScope scope({&values});
  // The parts never carry autograd history of their own (PyTorch's shallow copies).
  auto plain = [](const Tensor& x) {
    return autograd::requires_grad(x) || autograd::meta(x) ? autograd::detach(x) : x;
  };
  Tensor i = plain(indices), v = plain(values);
  // nnz <= 1 is coalesced whatever the caller claims.
  Tensor out = make_sparse_coo(i, v, sizes, coalesced || indices.sizes()[1] <= 1);
  if (scope.rec) {
    scope.done();
    autograd::record_sparse_from_parts(indices, values, out);
  }
  return out;
}

Tensor sparse_zeros(const Shape& sizes, int64_t sparse_dim, DType dtype, Device device) {
  Tensor idx = empty(Shape{sparse_dim, 0}, DType::Int64, device);
  Tensor vals = zeros(values_shape(0, sizes, sparse_dim), dtype, device);
  return make_sparse_coo(idx, vals, sizes, true);
}

// ---- parts -------------------------------------------------------------------------------

Tensor sparse_indices_raw(const Tensor& t) { return sparse_parts(t, "_indices").indices; }
Tensor sparse_values_raw(const Tensor& t) { return sparse_parts(t, "_values").values; }

Tensor sparse_indices(const Tensor& t) {
  const SparseCooParts& p = sparse_parts(t, "indices");
  EMBER_CHECK(p.coalesced,
              "Cannot get indices on an uncoalesced tensor, please call .coalesce() first");
  return alias(p.indices, true);
}

Tensor sparse_values(const Tensor& t) {
  const SparseCooParts& p = sparse_parts(t, "values");
  EMBER_CHECK(p.coalesced,
              "Cannot get values on an uncoalesced tensor, please call .coalesce() first");
  return sparse_values_grad(t);
}

Tensor sparse_values_grad(const Tensor& t) {
  const SparseCooParts& p = sparse_parts(t, "values");
  Tensor v = alias(p.values, true);
  if (autograd::grad_enabled() && autograd::requires_grad(t)) autograd::record_sparse_values(t, v);
  return v;
}

int64_t sparse_nnz(const Tensor& t) { return sparse_parts(t, "_nnz").indices.sizes()[1]; }
int64_t sparse_dim(const Tensor& t) { return t.is_sparse() ? sparse_parts(t).sparse_dim : t.dim(); }
int64_t dense_dim(const Tensor& t) { return t.is_sparse() ? sparse_parts(t).dense_dim : 0; }

bool is_coalesced(const Tensor& t) {
  EMBER_CHECK(t.is_sparse(),
              "is_coalesced expected sparse coordinate tensor layout but got Strided");
  return sparse_parts(t).coalesced;
}

const Tensor& set_coalesced_(const Tensor& t, bool coalesced) {
  sparse_parts(t, "_coalesced_").coalesced = coalesced;
  return t;
}

// ---- coalesce ------------------------------------------------------------------------------

Tensor coalesce(const Tensor& t) {
  const SparseCooParts& p = sparse_parts(t, "coalesce");
  if (p.coalesced) return t;
  autograd::RecordScope scope({&t});
  const int64_t nnz = p.indices.sizes()[1];
  Shape sparse_sizes(t.sizes().begin(), t.sizes().begin() + p.sparse_dim);
  Tensor out;
  if (nnz < 2) {
    out = make_sparse_coo(clone(p.indices), clone(p.values), t.sizes(), true);
  } else {
    int64_t block = 1;
    for (int64_t d = 1; d < p.values.dim(); ++d) block *= p.values.sizes()[d];
    Tensor v2 = reshape(contiguous(p.values), Shape{nnz, block});
    CoalesceResult r = coalesce_stub.get(t.device())(p.indices, v2, sparse_sizes);
    Shape vs = p.values.sizes();
    vs[0] = r.values.sizes()[0];
    out = make_sparse_coo(r.indices, reshape(r.values, vs), t.sizes(), true);
  }
  if (scope.rec) {
    scope.done();
    autograd::record_sparse_coalesce(t, out);
  }
  return out;
}

// ---- gather ----------------------------------------------------------------------------------

Tensor linear_indices(const Tensor& indices, const Shape& sizes) {
  const int64_t S = indices.sizes()[0], nnz = indices.sizes()[1];
  autograd::GradModeGuard no_grad(false);
  if (S == 0) return zeros(Shape{nnz}, DType::Int64, indices.device());
  Tensor lin = contiguous(select(indices, 0, 0));
  int64_t total = sizes[0];
  for (int64_t d = 1; d < S; ++d) {
    total = checked_mul(total, sizes[d], "sparse linear index");
    lin = add(binary(BinaryOp::mul, lin, wrap_scalar(Scalar(sizes[d]))), select(indices, 0, d));
  }
  return lin;
}

Tensor sparse_gather(const Tensor& src, const Tensor& indices, int64_t sparse_dim) {
  const Shape& sizes = src.sizes();
  const int64_t n = indices.sizes()[1];
  Shape flat{1};
  for (int64_t d = 0; d < sparse_dim; ++d) flat[0] *= sizes[d];
  for (size_t d = size_t(sparse_dim); d < sizes.size(); ++d) flat.push_back(sizes[d]);
  Tensor lin = linear_indices(indices, sizes);
  if (!src.is_sparse()) return index_select(reshape(src, flat), 0, lin);
  Tensor sc = coalesce(src);
  const SparseCooParts& p = sparse_parts(sc);
  EMBER_CHECK(p.sparse_dim == sparse_dim, "sparse_mask: expected self to have ", sparse_dim,
              " sparse dims (as mask), got ", p.sparse_dim);
  Tensor vals = sparse_values_grad(sc);
  const int64_t m = p.indices.sizes()[1];
  Shape out_shape = vals.sizes();
  out_shape[0] = n;
  if (m == 0 || n == 0) return zeros(out_shape, src.dtype(), src.device());
  Tensor pos, found;
  {
    autograd::GradModeGuard no_grad(false);
    Tensor keys = linear_indices(p.indices, sizes);  // sorted: sc is coalesced
    pos = searchsorted(keys, lin);
    pos = clamp(pos, std::nullopt, wrap_scalar(Scalar(m - 1)));
    found = binary(BinaryOp::eq, index_select(keys, 0, pos), lin);
    for (int64_t d = 1; d < vals.dim(); ++d) found = unsqueeze(found, -1);
  }
  Tensor picked = index_select(vals, 0, pos);
  return where(found, picked, scalar_tensor(Scalar(0.0), picked.dtype(), picked.device()));
}

}  // namespace ember
