// Kernel stubs of the pooling family; front-ends in ops/nn_pool.cpp, CPU kernels
// in backends/cpu/nn_pool.cpp.
#pragma once
#include <cstdint>
#include <vector>

#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"

namespace ember {

// Note [Pooling windows]
// Every pooling op here (max, average, adaptive, dilated, padded, ceil_mode) is a
// separable choice of input positions per output position: along each spatial dim,
// output index o reads input positions idx[ptr[o] .. ptr[o+1]) (already clipped to
// the input, so padding never reads memory), and average pools weight output o by
// scale[o] (times `scale` over the whole window). The front-end builds these tables
// from the op's arguments; the kernels only walk them, so one max kernel and one
// average kernel (and their backwards) serve every variant.
struct PoolDim {
  std::vector<int64_t> ptr, idx;
  std::vector<double> scale;
  int64_t in = 1;
  int64_t out() const { return int64_t(ptr.size()) - 1; }
};
struct PoolGeom {
  PoolDim h, w;  // a 1-d pool has h = {in 1, out 1, one window {0}}
  double scale = 1.0;
};

/// out/indices [planes, oh, ow] <- max over each window of the contiguous input
/// [planes, h, w]; indices hold h * w_in + w (the first maximum; NaN wins).
using MaxPoolKernel = void (*)(const Tensor& out, const Tensor& indices, const Tensor& input,
                               const PoolGeom& g);
extern DispatchStub<MaxPoolKernel> max_pool_stub;

/// grad_input [planes, plane_in] (contiguous, overwritten) <- grad_out [planes, plane_out]
/// summed into the positions `indices` [planes, plane_out] name (checked in range).
using MaxPoolBackwardKernel = void (*)(const Tensor& grad_input, const Tensor& grad_out,
                                       const Tensor& indices);
extern DispatchStub<MaxPoolBackwardKernel> max_pool_backward_stub;

/// Forward: out [planes, oh, ow] <- weighted window sums of in [planes, h, w].
/// Backward (`backward`): out [planes, h, w] <- the adjoint applied to in [planes, oh, ow].
/// Both contiguous; out is overwritten.
using AvgPoolKernel = void (*)(const Tensor& out, const Tensor& in, const PoolGeom& g,
                               bool backward);
extern DispatchStub<AvgPoolKernel> avg_pool_stub;

}  // namespace ember
