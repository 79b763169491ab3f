// Short names for the ember ops that derivative formulas and composite ops are written with. Every
// one calls a recording front-end, so formulas differentiate again under
// create_graph=True.
#pragma once
#include "ember/ops/ops.h"

namespace ember::autograd::formula {

/// A Python-number-like scalar operand (weak in type promotion).
inline Tensor S(double v) { return wrap_scalar(Scalar(v)); }
inline Tensor plus(const Tensor& a, const Tensor& b) { return binary(BinaryOp::add, a, b); }
inline Tensor minus(const Tensor& a, const Tensor& b) { return binary(BinaryOp::sub, a, b); }
inline Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::mul, a, b); }
inline Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryOp::div, a, b); }
inline Tensor bin(BinaryOp op, const Tensor& a, const Tensor& b) { return binary(op, a, b); }
inline Tensor un(UnaryOp op, const Tensor& a) { return unary(op, a); }
inline Tensor neg(const Tensor& a) { return unary(UnaryOp::neg, a); }
inline Tensor eq(const Tensor& a, const Tensor& b) { return binary(BinaryOp::eq, a, b); }
inline Tensor land(const Tensor& a, const Tensor& b) { return binary(BinaryOp::logical_and, a, b); }
inline Tensor lor(const Tensor& a, const Tensor& b) { return binary(BinaryOp::logical_or, a, b); }
/// A bool mask as 0/1 in `like`'s dtype.
inline Tensor as_float(const Tensor& mask, const Tensor& like) {
  return to_dtype(mask, like.dtype());
}

}  // namespace ember::autograd::formula
