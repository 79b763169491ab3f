#include "ember/core/sparse.h"

#include "ember/core/inference_mode.h"

namespace ember {

Tensor make_sparse_coo(Tensor indices, Tensor values, const Shape& sizes, bool coalesced) {
  EMBER_CHECK(indices.dim() == 2 && !indices.is_sparse() && !values.is_sparse(),
              "make_sparse_coo: indices must be a 2-D strided tensor");
  int64_t sparse_dim = indices.size(0);
  int64_t dense_dim = values.dim() - 1;
  EMBER_CHECK(dense_dim >= 0 && sparse_dim + dense_dim == int64_t(sizes.size()),
              "make_sparse_coo: number of dimensions must be sparse_dim (", sparse_dim,
              ") + dense_dim (", dense_dim, "), but got ", sizes.size());
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<StorageImpl>(DataPtr{}, 0, values.device());
  impl->version = std::shared_ptr<VersionCounter>(impl->storage, &impl->storage->version);
  impl->sizes = sizes;
  impl->strides = contiguous_strides(sizes);
  impl->numel = checked_numel(sizes);
  impl->dtype = values.dtype();
  impl->layout = Layout::SparseCoo;
  impl->inference = inference_mode_enabled();
  auto parts = std::make_shared<SparseCooParts>();
  parts->indices = std::move(indices);
  parts->values = std::move(values);
  parts->sparse_dim = sparse_dim;
  parts->dense_dim = dense_dim;
  parts->coalesced = coalesced;
  impl->sparse = std::move(parts);
  return Tensor(std::move(impl));
}

SparseCooParts& sparse_parts(const Tensor& t, const char* op) {
  EMBER_CHECK(t.defined() && t.is_sparse() && t.impl()->sparse, op,
              ": expected a sparse COO tensor, got a tensor with layout ",
              layout_name(t.defined() ? t.layout() : Layout::Strided));
  return *t.impl()->sparse;
}

Tensor sparse_shallow_copy(const Tensor& t) {
  const SparseCooParts& p = sparse_parts(t, "detach");
  Tensor r = make_sparse_coo(p.indices, p.values, t.sizes(), p.coalesced);
  r.impl()->version = t.impl()->version;
  r.impl()->storage = t.impl()->storage;
  return r;
}

}  // namespace ember
