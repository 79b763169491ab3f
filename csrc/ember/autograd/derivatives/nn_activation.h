// Recording of the fused activation ops (derivatives/nn_activation.cpp).
#pragma once
#include "ember/core/tensor.h"

namespace ember::autograd {

/// SoftmaxBackward0 / LogSoftmaxBackward0 on `out` = (log_)softmax(in, dim); saves out.
void record_softmax(const Tensor& in, const Tensor& out, int64_t dim, bool log);

}  // namespace ember::autograd
