// The tracer: records the ops a Python function runs into a Graph. See Note [Tracing].
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/core/trace_state.h"
#include "ember/jit/ir.h"

namespace ember::jit {

// Note [Tracing]
// ember.jit.trace runs the function once with a Tracer active on the thread
// (trace_state::t_tracer). Every traceable front-end starts with EMBER_TRACE
// (trace_hook.h): when it is the outermost op (trace_state::t_depth == 0) it runs
// itself once more one level down, so the ops it calls record nothing, and records one
// node with its arguments and results. A tensor argument becomes the Value the tracer
// maps it to (a graph input, an earlier op's output, a module parameter read through
// prim::GetAttr) or, for a tensor made outside the trace, a constant. In-place ops map
// their tensor to the node's output, so later readers see the new value. The tracer
// keeps every tensor it mapped alive, so a TensorImpl address is never reused for
// another tensor during a trace.
//
// Nothing may escape the graph silently: a kernel dispatched or a view made while no
// traced front-end is running (an op without EMBER_TRACE) raises "not traceable" at
// once (kernels/dispatch.h, core/tensor.cpp), instead of baking its result into a
// constant.
//
// Module hierarchy: the Python side opens a scope per module call (push_scope), so
// each module's forward becomes its own graph, called from its parent through
// prim::CallMethod, as PyTorch keeps it. Parameters and buffers of the scope's module
// are read through prim::GetAttr chains from the graph's `self` input.
//
// Guards (better than PyTorch, which warns once and then silently runs the traced
// branch): where the traced function turns a tensor into a Python value (bool(t),
// t.item(), t.tolist()) or a size into a plain int (see python/ember/jit/_trace.py:
// sizes are TracedInts whose arithmetic records int ops), the tracer records a
// prim::Guard* node with the source line. When a later call would take another branch,
// or a baked size differs, the guard raises naming that line.

struct TraceScope {
  std::shared_ptr<Graph> graph;
  Value* self = nullptr;  // the module input of a method, null for a function
  std::unordered_map<const TensorImpl*, Value*> values;
  std::unordered_map<const TensorImpl*, std::string> params;  // attribute path from self
  std::map<std::string, Value*> attr_values;                  // GetAttr chains emitted
  std::vector<std::pair<IValue, Value*>> constants;           // interned non-tensor constants
};

/// A size (or a number computed from sizes) known to the graph; the Python side holds
/// its index (TracedInt).
struct SymInt {
  Value* value;
  int64_t concrete;
  size_t scope;  // the scope whose graph defines it
};

class Tracer {
 public:
  Tracer() = default;
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  /// The tracer recording on this thread, or null.
  static Tracer* current() { return static_cast<Tracer*>(trace_state::t_tracer); }

  // ---- scopes ----
  void push_scope(std::shared_ptr<Graph> g, Value* self);
  void pop_scope();
  TraceScope& scope() { return scopes_.back(); }
  size_t depth() const { return scopes_.size(); }
  Graph& graph() { return *scopes_.back().graph; }

  // ---- values ----
  /// The value standing for `t` in the current scope (a constant for a tensor made
  /// outside the trace; a parameter's GetAttr chain).
  Value* value_of(const Tensor& t);
  /// True when `t` has a value in the current scope (not counting constants).
  bool has_value(const Tensor& t) const;
  void set_value(const Tensor& t, Value* v);
  void add_param(const Tensor& t, const std::string& path);
  /// An interned constant of the current graph.
  Value* constant(const IValue& v);
  /// The GetAttr chain for `path` ("layer1.0.conv1") from the scope's self.
  Value* attr_value(const std::string& path);

  // ---- symbolic ints (Note [Traced sizes] in python/ember/jit/_trace.py) ----
  int64_t sym_size(const Tensor& t, int64_t dim);
  int64_t sym_constant(int64_t v);
  /// An int-valued op of one tensor ("aten::dim", "aten::numel").
  int64_t sym_tensor_op(const std::string& op, const Tensor& t);
  /// An int op ("aten::add.int", "aten::mul.int", ...) on sym ints or constants
  /// (`a`, `b` are handles, or -1 with the concrete value given).
  int64_t sym_op(const std::string& op, int64_t a, int64_t av, int64_t b, int64_t bv,
                 int64_t result);
  const SymInt& sym(int64_t handle) const { return syms_.at(size_t(handle)); }
  /// The ints of the next Python-level call: (value, sym handle or -1) in argument order.
  void set_pending(std::vector<std::pair<int64_t, int64_t>> ints);
  /// Guards every pending sym int that no op consumed (its value was baked).
  void flush_pending();

  // ---- guards ----
  void guard_bool(Value* v, bool expected, const std::string& what);
  void guard_tensor_bool(const Tensor& t, bool expected, const std::string& what);
  void guard_tensor_item(const Tensor& t, const IValue& value, const std::string& what);
  void guard_tensor_values(const Tensor& t, const std::string& what);
  /// Guards a sym int's comparison: `op` is "eq", "ne", "lt", "le", "gt", "ge".
  void guard_sym_compare(const std::string& op, int64_t a, int64_t av, int64_t b, int64_t bv,
                         bool result, const std::string& what);
  /// Guards a sym int's exact value (it became a plain Python int).
  void guard_sym_value(int64_t handle, const std::string& what);

  /// The current Python source location ("file.py:12"), from the binding's hook.
  std::string location() const;
  static std::string (*location_hook)();
  /// The name of the Python variable holding `t` in the traced code's innermost frame
  /// (empty when none): an unnamed value is named after it when an op first reads it,
  /// so graphs and .code read as the source does ("x0 = torch.mul(x, x)"), as PyTorch's.
  static std::string (*variable_name_hook)(const Tensor& t);

  // ---- the node being recorded (trace_hook.h) ----
  struct PendingNode {
    Node* node;
    // Each int argument: (input index, element index in a list or -1, value).
    std::vector<std::tuple<size_t, int64_t, int64_t>> ints;
  };
  /// Replaces the node's int arguments that line up with the pending sizes.
  void bind_pending(PendingNode& p);

  /// Tensors the trace mapped: kept alive until the trace ends.
  std::vector<Tensor> keep_alive;

 private:
  std::vector<TraceScope> scopes_;
  std::vector<SymInt> syms_;
  std::vector<std::pair<int64_t, int64_t>> pending_;
};

/// Makes `t` the tracer of this thread for its lifetime (restoring the previous one).
struct TracerActivation {
  void* saved;
  explicit TracerActivation(Tracer* t) : saved(trace_state::t_tracer) { trace_state::t_tracer = t; }
  ~TracerActivation() { trace_state::t_tracer = saved; }
};

/// Installs the "not traceable" message (trace_state::untraced_hook); called once.
void install_untraced_message();

}  // namespace ember::jit
