// Recording of the indexing ops' autograd nodes (formulas in index.cpp).
// Each record_* is called by a front-end in ops/index.cpp after its forward
// ran under a RecordScope (Note [Recording]); `out` gets the node.
#pragma once
#include <optional>
#include <vector>

#include "ember/core/scalar.h"
#include "ember/core/tensor.h"

namespace ember::autograd {

/// IndexBackward0: grad_self = zeros.index_put_(indices, grad, accumulate=True).
void record_index(const Tensor& self, const std::vector<std::optional<Tensor>>& indices,
                  const Tensor& out);
/// IndexPutBackward0: grad_self = accumulate ? grad : grad.index_put(indices, 0);
/// grad_values = grad[indices] summed to values' shape.
void record_index_put(const Tensor& self, const std::vector<std::optional<Tensor>>& indices,
                      const Tensor& values, bool accumulate, const Tensor& out);
/// IndexSelectBackward0 (`dim` wrapped): grad_self = zeros.index_add(dim, index, grad).
/// Also what repeat_interleave records, as in PyTorch.
void record_index_select(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& out);
/// GatherBackward0: grad_self = zeros.scatter_add(dim, index, grad).
void record_gather(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& out);
/// ScatterBackward0 (src given) / ScatterBackward1 (src null: a scalar value):
/// grad_self = grad.scatter(dim, index, 0); grad_src = grad.gather(dim, index).
void record_scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src,
                    const Tensor& out);
/// ScatterAddBackward0: grad_self = grad; grad_src = grad.gather(dim, index).
void record_scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                        const Tensor& out);
/// IndexAddBackward0: grad_self = grad; grad_source = alpha * grad.index_select(dim, index).
void record_index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                      Scalar alpha, const Tensor& out);
/// MaskedFillBackward0 (value null: a scalar) / MaskedFillBackward1 (a 0-d tensor value).
void record_masked_fill(const Tensor& self, const Tensor& mask, const Tensor* value,
                        const Tensor& out);
/// MaskedSelectBackward0: the gradient scattered back where mask is true.
void record_masked_select(const Tensor& self, const Tensor& mask, const Tensor& out);
/// TakeBackward0: grad accumulated at the flat positions `index`.
void record_take(const Tensor& self, const Tensor& index, const Tensor& out);

}  // namespace ember::autograd
