// The elementwise table's ops in the operator registry (one row of kernels/ops.def gives
// the function, in-place, out= and, for binary ops, Scalar and reflected overloads), and
// their tracing (trace_elementwise.h).
#include <string>

#include "ember/jit/trace_elementwise.h"
#include "ember/jit/trace_hook.h"
#include "ember/ops/autocast.h"
#include "ember/ops/ops.h"

namespace ember::jit {
namespace {

// The autocast cast the Python binding applies before an elementwise op (Note [Autocast
// policy]: the Float32 list); a graph calls the front-end directly, so it casts here.
Tensor ac(const char* name, const Tensor& a) {
  if (!autocast::active()) return a;
  return autocast::autocast_inputs(name, {a})[0];
}

struct UnaryOps {
  const Operator* fn[int(UnaryOp::Count)] = {};
  const Operator* inplace[int(UnaryOp::Count)] = {};
  const Operator* out[int(UnaryOp::Count)] = {};
};
struct BinaryOps {
  const Operator* fn[int(BinaryOp::Count)] = {};
  const Operator* inplace[int(BinaryOp::Count)] = {};
  const Operator* out[int(BinaryOp::Count)] = {};
};

Tensor pop_tensor(Stack& s) {
  Tensor t = std::move(s.back()).toTensor();
  s.pop_back();
  return t;
}

UnaryOps& unary_ops() {
  static UnaryOps* ops = [] {
    auto* o = new UnaryOps();
    for (int i = 0; i < int(UnaryOp::Count); ++i) {
      UnaryOp op = UnaryOp(i);
      std::string n = op_name(op);
      o->fn[i] = register_operator("aten::" + n + "(Tensor self) -> Tensor", [op](Stack& s) {
        Tensor a = pop_tensor(s);
        s.emplace_back(unary(op, ac(op_name(op), a)));
      });
      o->inplace[i] = register_operator("aten::" + n + "_(Tensor self) -> Tensor", [op](Stack& s) {
        Tensor a = pop_tensor(s);
        unary_(op, a);
        s.emplace_back(a);
      });
      o->out[i] = register_operator("aten::" + n + ".out(Tensor self, *, Tensor out) -> Tensor",
                                    [op](Stack& s) {
                                      Tensor out = pop_tensor(s);
                                      Tensor a = pop_tensor(s);
                                      unary_out(op, a, out);
                                      s.emplace_back(out);
                                    });
    }
    return o;
  }();
  return *ops;
}

BinaryOps& binary_ops() {
  static BinaryOps* ops = [] {
    auto* o = new BinaryOps();
    for (int i = 0; i < int(BinaryOp::Count); ++i) {
      BinaryOp op = BinaryOp(i);
      std::string n = op_name(op);
      o->fn[i] = register_operator(
          "aten::" + n + ".Tensor(Tensor self, Tensor other) -> Tensor", [op](Stack& s) {
            Tensor b = pop_tensor(s);
            Tensor a = pop_tensor(s);
            s.emplace_back(binary(op, ac(op_name(op), a), ac(op_name(op), b)));
          });
      o->inplace[i] = register_operator(
          "aten::" + n + "_.Tensor(Tensor self, Tensor other) -> Tensor", [op](Stack& s) {
            Tensor b = pop_tensor(s);
            Tensor a = pop_tensor(s);
            binary_(op, a, b);
            s.emplace_back(a);
          });
      o->out[i] = register_operator(
          "aten::" + n + ".out(Tensor self, Tensor other, *, Tensor out) -> Tensor",
          [op](Stack& s) {
            Tensor out = pop_tensor(s);
            Tensor b = pop_tensor(s);
            Tensor a = pop_tensor(s);
            binary_out(op, a, b, out);
            s.emplace_back(out);
          });
      // The number overloads scripts call (x * 2, 2 - x); traces record the tensor form
      // with the number as a wrapped-number constant, as PyTorch's tracer does.
      register_operator(
          "aten::" + n + ".Scalar(Tensor self, Scalar other) -> Tensor", [op](Stack& s) {
            Scalar b = s.back().toScalar();
            s.pop_back();
            Tensor a = pop_tensor(s);
            s.emplace_back(binary(op, ac(op_name(op), a), wrap_scalar(b, a.device())));
          });
      register_operator(
          "aten::r" + n + ".Scalar(Tensor self, Scalar other) -> Tensor", [op](Stack& s) {
            Scalar b = s.back().toScalar();
            s.pop_back();
            Tensor a = pop_tensor(s);
            s.emplace_back(binary(op, wrap_scalar(b, a.device()), ac(op_name(op), a)));
          });
      register_operator("aten::" + n + "_.Scalar(Tensor self, Scalar other) -> Tensor",
                        [op](Stack& s) {
                          Scalar b = s.back().toScalar();
                          s.pop_back();
                          Tensor a = pop_tensor(s);
                          binary_(op, a, wrap_scalar(b, a.device()));
                          s.emplace_back(a);
                        });
    }
    return o;
  }();
  return *ops;
}

// Registered when the library loads, not on first trace: archives name these ops.
const bool registered = (unary_ops(), binary_ops(), true);

template <typename F>
decltype(auto) below(F&& f) {
  TraceDepth d;
  return f();
}

}  // namespace

Tensor trace_unary(UnaryOp op, const Tensor& a) {
  Tensor r = below([&] { return unary(op, a); });
  Node* n = trace_begin(unary_ops().fn[int(op)]);
  trace_arg(n, a);
  trace_result(n, r);
  trace_end(n);
  return r;
}

Tensor& trace_unary_(UnaryOp op, const Tensor& a) {
  below([&]() -> Tensor& { return unary_(op, a); });
  Node* n = trace_begin(unary_ops().inplace[int(op)]);
  trace_arg(n, a);
  trace_result(n, a);
  trace_end(n);
  return const_cast<Tensor&>(a);
}

Tensor& trace_unary_out(UnaryOp op, const Tensor& a, const Tensor& out) {
  below([&]() -> Tensor& { return unary_out(op, a, out); });
  Node* n = trace_begin(unary_ops().out[int(op)]);
  trace_arg(n, a);
  trace_arg(n, out);
  trace_result(n, out);
  trace_end(n);
  return const_cast<Tensor&>(out);
}

Tensor trace_binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  Tensor r = below([&] { return binary(op, a, b); });
  Node* n = trace_begin(binary_ops().fn[int(op)]);
  trace_arg(n, a);
  trace_arg(n, b);
  trace_result(n, r);
  trace_end(n);
  return r;
}

Tensor& trace_binary_(BinaryOp op, const Tensor& a, const Tensor& b) {
  below([&]() -> Tensor& { return binary_(op, a, b); });
  Node* n = trace_begin(binary_ops().inplace[int(op)]);
  trace_arg(n, a);
  trace_arg(n, b);
  trace_result(n, a);
  trace_end(n);
  return const_cast<Tensor&>(a);
}

Tensor& trace_binary_out(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  below([&]() -> Tensor& { return binary_out(op, a, b, out); });
  Node* n = trace_begin(binary_ops().out[int(op)]);
  trace_arg(n, a);
  trace_arg(n, b);
  trace_arg(n, out);
  trace_result(n, out);
  trace_end(n);
  return const_cast<Tensor&>(out);
}

}  // namespace ember::jit
