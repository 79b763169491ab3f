// Derivatives of the elementwise ops of kernels/ops.def. The facts (node name,
// saved tensors, formula) are the rows of derivatives/elementwise.def; this file
// generates the nodes from them and checks the table at compile time.
#include <cmath>

#include "ember/autograd/derivatives/elementwise.h"

#include "ember/autograd/derivatives/elementwise.def"
#include "ember/autograd/derivatives/formula.h"
#include "ember/autograd/record.h"
#include "ember/ops/surface.h"
#include "ember/ops/view.h"

namespace ember::autograd {
namespace {

using B = BinaryOp;
using U = UnaryOp;

using namespace formula;
Tensor zeros_like_(const Tensor& a) { return zeros(a.sizes(), a.dtype(), a.device()); }

// ---- helpers of the longer formulas in elementwise.def ------------------------

// where, not a 0/1 multiply: a NaN/inf incoming gradient stays out of the zeroed
// positions, as PyTorch's threshold_backward. Under create_graph the zeros come
// from the result, so the gradient stays a function of the input like PyTorch's
// (a Hessian of relu is 0, not an error).
Tensor relu_grad(const Tensor& grad, const Tensor& result) {
  return where(binary(B::le, result, S(0.0)), grad_enabled() ? mul(result, S(0.0)) : S(0.0), grad);
}

// I1'(x) = I0(x) - I1(x) / x, with the limit 1/2 at x = 0.
Tensor i1_grad(const Tensor& grad, const Tensor& self) {
  Tensor z = eq(self, S(0.0));
  Tensor safe = where(z, S(1.0), self);
  Tensor d = minus(unary(U::i0, self), div(unary(U::special_i1, safe), safe));
  return mul(grad, where(z, S(0.5), d));
}

// d/dx x^y = y * x^(y-1); 0 where y == 0 (so 0^0 has a zero gradient). The power
// uses exponent 1 there, so higher orders see no 0 * inf at x == 0.
Tensor pow_grad_self(const Tensor& grad, const Tensor& self, const Tensor& exponent) {
  Tensor y1 = where(binary(B::eq, exponent, S(0.0)), S(1.0), exponent);
  Tensor d = mul(exponent, binary(B::pow, self, minus(y1, S(1.0))));
  return mul(grad, where(binary(B::eq, exponent, S(0.0)), S(0.0), d));
}

// d/dy x^y = x^y * log(x); 0 where x == 0 and y >= 0.
Tensor pow_grad_exponent(const Tensor& grad, const Tensor& self, const Tensor& exponent) {
  Tensor d = mul(binary(B::pow, self, exponent), unary(U::log, self));
  Tensor zero =
      binary(B::logical_and, binary(B::eq, self, S(0.0)), binary(B::ge, exponent, S(0.0)));
  return mul(grad, where(zero, S(0.0), d));
}

// maximum/minimum for the operand `a` against `b`; `lose` is lt for maximum and
// gt for minimum. Ties split the gradient evenly; where a NaN is compared both
// sides get all of it (PyTorch masks out only the strictly losing side). Selected
// with where, so a NaN/inf gradient does not leak into the zeros.
Tensor minmax_grad(B lose, const Tensor& grad, const Tensor& a, const Tensor& b) {
  Tensor split = where(binary(B::eq, a, b), mul(grad, S(0.5)), grad);
  return where(binary(lose, a, b), S(0.0), split);
}

// ---- the tables generated from elementwise.def -----------------------------------

enum class Saves { NOTHING, SELF, RESULT };
// When a binary input is saved: never, always, or only when the gradient of self
// (FOR_SELF) or of other (FOR_OTHER) is needed.
enum class When { NEVER, ALWAYS, FOR_SELF, FOR_OTHER };

struct UnaryFacts {
  const char* node = nullptr;  // nullptr: not differentiable
  Saves saves = Saves::NOTHING;
};
struct BinaryFacts {
  // Node name for tensor op tensor, tensor op number, number op tensor; nullptr:
  // not differentiable.
  const char* node[3] = {nullptr, nullptr, nullptr};
  When save_self = When::NEVER, save_other = When::NEVER;
};

constexpr UnaryFacts unary_facts(U op) {
  switch (op) {
#define EMBER_D(op, Node, SAVES, formula) \
  case U::op:                             \
    return UnaryFacts{#Node, Saves::SAVES};
#define EMBER_N(op) \
  case U::op:       \
    return UnaryFacts{};
    EMBER_UNARY_DERIVATIVES(EMBER_D, EMBER_N)
#undef EMBER_D
#undef EMBER_N
    default:
      return UnaryFacts{};
  }
}

#define NAME(Node) {#Node, #Node, #Node}
#define NAMES3(tensor_tensor, scalar_other, scalar_self) \
  {#tensor_tensor, #scalar_other, #scalar_self}
constexpr BinaryFacts binary_facts(B op) {
  switch (op) {
#define EMBER_D(op, NAMES, SAVE_SELF, SAVE_OTHER, fs, fo) \
  case B::op:                                             \
    return BinaryFacts{NAMES, When::SAVE_SELF, When::SAVE_OTHER};
#define EMBER_N(op) \
  case B::op:       \
    return BinaryFacts{};
    EMBER_BINARY_DERIVATIVES(EMBER_D, EMBER_N)
#undef EMBER_D
#undef EMBER_N
    default:
      return BinaryFacts{};
  }
}
#undef NAME
#undef NAMES3

// Compile-time checks of the table: every op of ops.def has exactly one row, and
// only ops whose result is never floating are marked not differentiable.
constexpr U kUnaryRows[] = {
#define EMBER_D(op, ...) U::op,
#define EMBER_N(op) U::op,
    EMBER_UNARY_DERIVATIVES(EMBER_D, EMBER_N)
#undef EMBER_D
#undef EMBER_N
};
constexpr B kBinaryRows[] = {
#define EMBER_D(op, ...) B::op,
#define EMBER_N(op) B::op,
    EMBER_BINARY_DERIVATIVES(EMBER_D, EMBER_N)
#undef EMBER_D
#undef EMBER_N
};
template <typename Op, size_t N>
constexpr int rows_of(const Op (&rows)[N], Op op) {
  int c = 0;
  for (size_t i = 0; i < N; ++i) c += rows[i] == op;
  return c;
}
#define EMBER_CHECK_ROW(n, F, k)                                                  \
  static_assert(rows_of(kUnaryRows, U::n) == 1,                                   \
                "autograd/derivatives/elementwise.def needs exactly one row for " \
                "the unary op '" #n "' (D(...) with its formula, or N(" #n "))");
EMBER_UNARY_OPS(EMBER_CHECK_ROW)
#undef EMBER_CHECK_ROW
#define EMBER_CHECK_ROW(n, F, k)                                                  \
  static_assert(rows_of(kBinaryRows, B::n) == 1,                                  \
                "autograd/derivatives/elementwise.def needs exactly one row for " \
                "the binary op '" #n "' (D(...) with its formula, or N(" #n "))");
EMBER_BINARY_OPS(EMBER_CHECK_ROW)
#undef EMBER_CHECK_ROW
#define EMBER_D(op, ...)
#define EMBER_N(op)                                      \
  static_assert(result_never_floating(op_kind(U::op)),   \
                "elementwise.def marks '" #op            \
                "' not differentiable, but its kind in " \
                "ops.def gives floating results: write its derivative row");
EMBER_UNARY_DERIVATIVES(EMBER_D, EMBER_N)
#undef EMBER_N
#define EMBER_N(op)                                      \
  static_assert(result_never_floating(op_kind(B::op)),   \
                "elementwise.def marks '" #op            \
                "' not differentiable, but its kind in " \
                "ops.def gives floating results: write its derivative row");
EMBER_BINARY_DERIVATIVES(EMBER_D, EMBER_N)
#undef EMBER_N
#undef EMBER_D

// d out / d self, from the formula column.
Tensor unary_grad(U op, const Tensor& grad, const Tensor& self, const Tensor& result) {
  switch (op) {
#define EMBER_D(op, Node, SAVES, formula) \
  case U::op:                             \
    return formula;
#define EMBER_N(op)
    EMBER_UNARY_DERIVATIVES(EMBER_D, EMBER_N)
#undef EMBER_D
#undef EMBER_N
    default:
      EMBER_ERROR("the derivative for '", op_name(op), "' is not implemented.");
  }
}

// The gradient of input `which` (0: self, 1: other), from the formula columns.
Tensor binary_grad(B op, int which, const Tensor& grad, const Tensor& self, const Tensor& other) {
  switch (op) {
#define EMBER_D(op, NAMES, SAVE_SELF, SAVE_OTHER, fs, fo) \
  case B::op:                                             \
    return which == 0 ? Tensor(fs) : Tensor(fo);
#define EMBER_N(op)
    EMBER_BINARY_DERIVATIVES(EMBER_D, EMBER_N)
#undef EMBER_D
#undef EMBER_N
    default:
      EMBER_ERROR("the derivative for '", op_name(op), "' is not implemented.");
  }
}

bool keeps(When w, bool self_needs_grad, bool other_needs_grad) {
  switch (w) {
    case When::NEVER:
      return false;
    case When::ALWAYS:
      return true;
    case When::FOR_SELF:
      return self_needs_grad;
    case When::FOR_OTHER:
      return other_needs_grad;
  }
  return true;
}

}  // namespace

const char* derivative_node_name(U op) { return unary_facts(op).node; }
const char* derivative_node_name(B op, int overload) { return binary_facts(op).node[overload]; }
const char* derivative_saves(U op) {
  static const char* names[] = {"", "self", "result"};
  return names[int(unary_facts(op).saves)];
}
const char* derivative_saves(B op, int input) {
  static const char* names[] = {"never", "always", "for_self", "for_other"};
  const BinaryFacts f = binary_facts(op);
  return names[int(input == 0 ? f.save_self : f.save_other)];
}

bool unary_needs_input(U op) { return unary_facts(op).saves == Saves::SELF; }

bool binary_needs_self(B op) { return binary_facts(op).save_self != When::NEVER; }

void check_out_not_differentiable(const char* op, std::initializer_list<const Tensor*> inputs) {
  if (!compute_requires_grad(inputs)) return;
  EMBER_ERROR(op,
              "(): functions with out=... arguments don't support automatic differentiation, "
              "but one of the arguments requires grad.");
}

void record_unary(U op, const Tensor& input, const Tensor& out) {
  const UnaryFacts f = unary_facts(op);
  if (!f.node || !is_floating(out.dtype())) return;
  const Saves saves = f.saves;
  auto node =
      record(f.node, {&input}, out, [op, saves](LambdaNode& n, variable_list&& g) -> variable_list {
        Tensor self = saves == Saves::SELF ? n.unpack(0) : Tensor();
        Tensor result = saves == Saves::RESULT ? n.unpack(0) : Tensor();
        return {cast_grad(unary_grad(op, g[0], self, result), n.dtype_a)};
      });
  node->dtype_a = input.dtype();
  if (saves == Saves::RESULT)
    node->saved.emplace_back(out, true);
  else if (saves == Saves::SELF)
    node->saved.emplace_back(input, false);
  else
    node->saved.emplace_back();
}

void record_binary(B op, const Tensor& a, const Tensor& b, const Tensor& out) {
  const BinaryFacts f = binary_facts(op);
  const bool scalar_self = a.impl()->wrapped_number, scalar_other = b.impl()->wrapped_number;
  const char* name = f.node[scalar_other ? 1 : scalar_self ? 2 : 0];
  if (!name || !is_floating(out.dtype())) return;
  auto node = record(name, {&a, &b}, out, [op](LambdaNode& n, variable_list&& gs) -> variable_list {
    Tensor x = n.unpack(0), y = n.unpack(1);
    Tensor ga, gb;
    if (n.should_compute_output(0))
      ga = cast_grad(sum_to_size(binary_grad(op, 0, gs[0], x, y), n.shape_a), n.dtype_a);
    if (n.should_compute_output(1))
      gb = cast_grad(sum_to_size(binary_grad(op, 1, gs[0], x, y), n.shape_b), n.dtype_b);
    return {ga, gb};
  });
  node->shape_a = a.sizes();
  node->shape_b = b.sizes();
  node->dtype_a = a.dtype();
  node->dtype_b = b.dtype();
  // Save only what the needed gradients read (the SAVE_* columns).
  const bool ra = requires_grad(a), rb = requires_grad(b);
  node->saved.emplace_back(keeps(f.save_self, ra, rb) ? a : Tensor(), false);
  node->saved.emplace_back(keeps(f.save_other, ra, rb) ? b : Tensor(), false);
}
void record_where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  auto node = record(
      "WhereBackward0", {&a, &b}, out, [](LambdaNode& n, variable_list&& gs) -> variable_list {
        Tensor c = n.unpack(0), z = zeros(Shape{}, gs[0].dtype(), gs[0].device());
        Tensor ga = n.should_compute_output(0)
                        ? cast_grad(sum_to_size(where(c, gs[0], z), n.shape_a), n.dtype_a)
                        : Tensor();
        Tensor gb = n.should_compute_output(1)
                        ? cast_grad(sum_to_size(where(c, z, gs[0]), n.shape_b), n.dtype_b)
                        : Tensor();
        return {ga, gb};
      });
  node->saved.emplace_back(cond, false);
  node->shape_a = a.sizes();
  node->shape_b = b.sizes();
  node->dtype_a = a.dtype();
  node->dtype_b = b.dtype();
}

void record_copy(const Tensor& dst, const Tensor& src) {
  auto node = std::make_shared<LambdaNode>(
      "CopyBackwards", [](LambdaNode& n, variable_list&& gs) -> variable_list {
        Tensor g = gs[0];
        Tensor gdst =
            n.should_compute_output(0) ? zeros(g.sizes(), g.dtype(), g.device()) : Tensor();
        Tensor gsrc;
        if (n.should_compute_output(1)) {
          gsrc = cast_grad(sum_to_size(g, n.shape_b), n.dtype_b);
          if (gsrc.device() != n.device_b) gsrc = to_device(gsrc, n.device_b);
        }
        return {gdst, gsrc};
      });
  node->next_edges = collect_next_edges({&dst, &src});
  node->add_input_meta(dst);
  node->shape_b = src.sizes();
  node->dtype_b = src.dtype();
  node->device_b = src.device();
  rebase_history(dst, node);
}

void record_to_copy(const Tensor& in, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  auto node =
      record("ToCopyBackward0", {&in}, out, [](LambdaNode& n, variable_list&& gs) -> variable_list {
        Tensor g = cast_grad(gs[0], n.dtype_a);
        if (g.device() != n.device_b) g = to_device(g, n.device_b);
        return {g};
      });
  node->dtype_a = in.dtype();
  node->device_b = in.device();
}

void record_clone(const Tensor& in, const Tensor& out) {
  record("CloneBackward0", {&in}, out,
         [](LambdaNode&, variable_list&& gs) -> variable_list { return {gs[0]}; });
}

}  // namespace ember::autograd
