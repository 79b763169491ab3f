// The elementwise op table (kernels/ops.def) as C++: the op enums, each op's
// dtype kind, and the kernel slots. Backend-neutral: front-ends, autograd and
// every backend include this, not ops/.
#pragma once
#include "ember/core/scalar.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/ops.def"
#include "ember/kernels/tensor_iterator.h"

namespace ember {

enum class UnaryOp : int {
#define EMBER_ENUM(n, F, k) n,
  EMBER_UNARY_OPS(EMBER_ENUM)
#undef EMBER_ENUM
      Count
};
enum class BinaryOp : int {
#define EMBER_ENUM(n, F, k) n,
  EMBER_BINARY_OPS(EMBER_ENUM)
#undef EMBER_ENUM
      Count
};

/// The dtype rule of an op: the third column of its ops.def row.
enum class Kind {
  SAME,
  BITS,
  ROUND,
  FLOATONLY,
  FLOAT,
  PRED,
  ARITH,
  TRUEDIV,
  FLOATING,
  COMPARE,
  LOGICAL
};

inline constexpr Kind kUnaryKind[] = {
#define EMBER_KIND(n, F, k) Kind::k,
    EMBER_UNARY_OPS(EMBER_KIND)
#undef EMBER_KIND
};
inline constexpr Kind kBinaryKind[] = {
#define EMBER_KIND(n, F, k) Kind::k,
    EMBER_BINARY_OPS(EMBER_KIND)
#undef EMBER_KIND
};
constexpr Kind op_kind(UnaryOp op) { return kUnaryKind[int(op)]; }
constexpr Kind op_kind(BinaryOp op) { return kBinaryKind[int(op)]; }
/// Kinds whose result is bool or integer for every input: the only ones that may
/// be marked not differentiable in autograd/derivatives/elementwise.def.
constexpr bool result_never_floating(Kind k) {
  return k == Kind::PRED || k == Kind::BITS || k == Kind::COMPARE || k == Kind::LOGICAL;
}

using IterKernel = void (*)(TensorIterator&);
/// One slot per op of ops.def (defined in ops/elementwise.cpp, filled by the backends).
extern DispatchStub<IterKernel> unary_stubs[int(UnaryOp::Count)];
extern DispatchStub<IterKernel> binary_stubs[int(BinaryOp::Count)];
/// Casting copy: operand 0 (dst) <- operand 1 (src), any two dtypes.
extern DispatchStub<IterKernel> copy_stub;
/// where: out <- cond ? a : b (operands out, cond, a, b; a and b share out's dtype).
extern DispatchStub<IterKernel> where_stub;
/// lerp: out <- fn::Lerp(start, end, weight) in opmath_t (operands out, start, end, weight,
/// all of out's floating dtype).
extern DispatchStub<IterKernel> lerp_stub;
/// fill: every element of operand 0 <- the scalar.
extern DispatchStub<void (*)(TensorIterator&, Scalar)> fill_stub;

}  // namespace ember
