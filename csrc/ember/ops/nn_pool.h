// Pooling front-ends: max/average pooling (kernel, stride, padding, dilation,
// ceil_mode), adaptive average/max pooling and max_unpool, over 1 or 2 spatial dims.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "ember/core/tensor.h"
#include "ember/kernels/stubs/nn_pool.h"

namespace ember {

/// max_pool{1,2}d with indices: input [N, C, *sp] or [C, *sp] with nsp spatial dims.
std::pair<Tensor, Tensor> max_pool(const Tensor& input, int64_t nsp, const Shape& kernel,
                                   const Shape& stride, const Shape& padding, const Shape& dilation,
                                   bool ceil_mode, const std::string& op);
/// avg_pool{1,2}d.
Tensor avg_pool(const Tensor& input, int64_t nsp, const Shape& kernel, const Shape& stride,
                const Shape& padding, bool ceil_mode, bool count_include_pad,
                std::optional<int64_t> divisor_override, const std::string& op);
/// adaptive_avg_pool{1,2}d.
Tensor adaptive_avg_pool(const Tensor& input, int64_t nsp, const Shape& output_size,
                         const std::string& op);
/// adaptive_max_pool{1,2}d with indices.
std::pair<Tensor, Tensor> adaptive_max_pool(const Tensor& input, int64_t nsp,
                                            const Shape& output_size, const std::string& op);
/// max_unpool{1,2}d: scatters input into zeros of `output_size` at `indices`.
Tensor max_unpool(const Tensor& input, const Tensor& indices, int64_t nsp, const Shape& output_size,
                  const std::string& op);

/// The differentiable pieces (Note [Pooling windows]); grad_fns call them.
Tensor max_pool_backward(const Tensor& grad, const Tensor& indices, const Shape& input_sizes,
                         int64_t nsp);
Tensor avg_pool_apply(const Tensor& in, const std::shared_ptr<const PoolGeom>& g,
                      const Shape& out_sizes, bool backward);

}  // namespace ember
