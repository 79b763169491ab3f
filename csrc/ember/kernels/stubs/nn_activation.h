// Kernel stubs of the activation family: the fused row-wise softmax / log_softmax.
#pragma once
#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"

namespace ember {

/// A contiguous tensor viewed as [outer, dim, inner], reduced over `dim`.
struct SoftmaxShape {
  int64_t outer = 1, dim = 1, inner = 1;
};

/// out <- softmax (log = false) or log_softmax (log = true) of `in` over the middle dim.
/// Both contiguous, same floating dtype, numel = outer * dim * inner; dim > 0.
using SoftmaxKernel = void (*)(const Tensor& out, const Tensor& in, SoftmaxShape s, bool log);
extern DispatchStub<SoftmaxKernel> softmax_stub;

/// gx <- y * (g - sum(g * y)) (softmax) or g - exp(y) * sum(g) (log_softmax), the sums over
/// the middle dim. gx, g, y contiguous, same dtype and shape.
using SoftmaxBackwardKernel = void (*)(const Tensor& gx, const Tensor& g, const Tensor& y,
                                       SoftmaxShape s, bool log);
extern DispatchStub<SoftmaxBackwardKernel> softmax_backward_stub;

}  // namespace ember
