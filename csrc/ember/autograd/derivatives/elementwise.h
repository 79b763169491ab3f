// The facts of derivatives/elementwise.def as data, for Python (ember.testing's
// generic tests, the _saved_* attribute names of grad_fn nodes).
#pragma once
#include "ember/kernels/elementwise.h"

namespace ember::autograd {

/// The node's name (PyTorch's), or nullptr when `op` is not differentiable.
const char* derivative_node_name(UnaryOp op);
/// `overload`: 0 tensor op tensor, 1 tensor op number, 2 number op tensor.
const char* derivative_node_name(BinaryOp op, int overload);
/// What the node saves: "" (nothing), "self" or "result".
const char* derivative_saves(UnaryOp op);
/// When input 0 (self) or 1 (other) is saved: "never", "always", "for_self" (when
/// self's gradient is needed) or "for_other".
const char* derivative_saves(BinaryOp op, int input);

}  // namespace ember::autograd
