// The out= contract every op shares (PyTorch's resize_output and canCast): one
// place decides whether an out= tensor is resized, warned about or rejected.
#pragma once
#include <string>

#include "ember/core/tensor.h"

namespace ember {

/// Where warnings raised by the C++ ops go. The Python bindings install one that
/// calls warnings.warn (and may throw when warnings are errors); without one a
/// warning is dropped.
using WarnHandler = void (*)(const std::string& message);
void set_warn_handler(WarnHandler handler);
/// Emits a UserWarning through the installed handler.
void warn(const std::string& message);

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
