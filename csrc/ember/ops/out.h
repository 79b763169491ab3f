// The out= contract every op shares (PyTorch's resize_output and canCast): one
// place decides whether an out= tensor is resized, warned about or rejected.
#pragma once
#include <string>

#include "ember/core/tensor.h"
#include "ember/core/warning.h"  // warn(): where the ops' warnings go

namespace ember {

/// PyTorch's resize_output: an out= tensor whose shape is not `shape` is resized to
/// it (contiguous strides). An `out` that had elements also gets PyTorch's
/// deprecation UserWarning; an empty one is resized silently. True when resized.
bool resize_output(const Tensor& out, const Shape& shape);

/// PyTorch's canCast for out=: never floating -> integral, never non-bool -> bool.
bool can_cast(DType from, DType to);
/// Raises PyTorch's error when a result of dtype `result` may not be written into a
/// tensor of dtype `into` (never floating -> integral, never non-bool -> bool).
/// `op`, when given, prefixes the message.
void check_result_cast(DType result, DType into, const char* op = nullptr);

}  // namespace ember
