// Tracing the elementwise front-ends (ops/elementwise.cpp): their op argument is the
// table's enum, so their ops are registered from the table (jit/ops_elementwise.cpp) and
// recorded here instead of through EMBER_TRACE.
#pragma once
#include "ember/core/tensor.h"
#include "ember/kernels/elementwise.h"

namespace ember::jit {

Tensor trace_unary(UnaryOp op, const Tensor& a);
Tensor& trace_unary_(UnaryOp op, const Tensor& a);
Tensor& trace_unary_out(UnaryOp op, const Tensor& a, const Tensor& out);
Tensor trace_binary(BinaryOp op, const Tensor& a, const Tensor& b);
Tensor& trace_binary_(BinaryOp op, const Tensor& a, const Tensor& b);
Tensor& trace_binary_out(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);

}  // namespace ember::jit
