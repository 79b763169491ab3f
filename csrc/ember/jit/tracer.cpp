// See Note [Tracing] in tracer.h.
#include "ember/jit/tracer.h"

#include <set>

#include "ember/jit/operator.h"
#include "ember/jit/trace_hook.h"
#include "ember/ops/ops.h"

namespace ember::jit {

std::string (*Tracer::location_hook)() = nullptr;

std::string (*Tracer::variable_name_hook)(const Tensor&) = nullptr;

std::string Tracer::location() const { return location_hook ? location_hook() : std::string(); }

namespace {

void untraced_message(const char* what) {
  Tracer* t = Tracer::current();
  std::string where = t ? t->location() : std::string();
  raise(ErrorKind::Runtime, "ember.jit.trace: ", what, " ran outside any traceable op",
        where.empty() ? "" : " at " + where,
        ": the ember op that did it cannot be recorded yet, so its result would be baked into "
        "the graph as a constant. Script this part (ember.jit.script), move it out of the traced "
        "function, or wrap code that is not part of the model in ember.jit._untraced().");
}

TypePtr tensor_type(const Tensor& t) {
  if (!t.defined()) return Type::tensor();
  return Type::tensor_of(t.dtype(), std::vector<int64_t>(t.sizes().begin(), t.sizes().end()));
}

// The node being recorded: one at a time (the outermost op), on the tracer's thread.
struct Current {
  Tracer::PendingNode p{nullptr, {}};
  size_t out_index = 0;
  std::vector<std::pair<size_t, std::vector<Tensor>>> list_results;  // (output, tensors)
  std::vector<std::pair<size_t, IValue>> number_results;
};
thread_local Current t_current;

Tracer& tracer() {
  Tracer* t = Tracer::current();
  EMBER_CHECK(t, "ember.jit: no tracer is active on this thread");
  return *t;
}

}  // namespace

void install_untraced_message() { trace_state::untraced_hook = &untraced_message; }

// ---- scopes and values ---------------------------------------------------------------

void Tracer::push_scope(std::shared_ptr<Graph> g, Value* self) {
  TraceScope s;
  s.graph = std::move(g);
  s.self = self;
  scopes_.push_back(std::move(s));
}

void Tracer::pop_scope() {
  EMBER_CHECK(!scopes_.empty(), "ember.jit: popping a trace scope that was never pushed");
  scopes_.pop_back();
}

bool Tracer::has_value(const Tensor& t) const {
  const TraceScope& s = scopes_.back();
  auto it = s.values.find(t.impl());
  return it != s.values.end() && it->second->node->kind != "prim::Constant";
}

void Tracer::set_value(const Tensor& t, Value* v) {
  if (!t.defined()) return;
  // A graph input stands for the example tensor: print its dtype and sizes as PyTorch's
  // traced graphs do ("%x : Float(3, 4)"); the type is for printing only.
  // So is a value unpacked from a submodule's tuple result (typed Any when created).
  if (!v->type || v->type->is(Type::Kind::Any) ||
      (v->node->kind == "prim::Param" && v->type->is(Type::Kind::Tensor) && !v->type->sizes))
    v->type = tensor_type(t);
  keep_alive.push_back(t);
  scope().values[t.impl()] = v;
}

void Tracer::add_param(const Tensor& t, const std::string& path) {
  if (!t.defined()) return;
  keep_alive.push_back(t);
  scope().params[t.impl()] = path;
}

Value* Tracer::attr_value(const std::string& path) {
  TraceScope& s = scope();
  auto it = s.attr_values.find(path);
  if (it != s.attr_values.end()) return it->second;
  EMBER_CHECK(s.self, "ember.jit.trace: reading attribute '", path, "' outside a module");
  auto dot = path.rfind('.');
  Value* base = dot == std::string::npos ? s.self : attr_value(path.substr(0, dot));
  std::string leaf = dot == std::string::npos ? path : path.substr(dot + 1);
  Node* n = graph().create("prim::GetAttr", 1);
  n->set_attr("name", IValue(leaf));
  n->add_input(base);
  graph().insert(n);
  Value* v = n->output();
  v->set_name(leaf);
  s.attr_values[path] = v;
  return v;
}

Value* Tracer::value_of(const Tensor& t) {
  if (!t.defined()) return constant(IValue());
  TraceScope& s = scope();
  auto it = s.values.find(t.impl());
  if (it != s.values.end()) {
    Value* v = it->second;
    if (!v->has_name() && variable_name_hook && v->node->kind != "prim::Constant") {
      std::string name = variable_name_hook(t);
      if (!name.empty()) v->set_name(name);
    }
    return v;
  }
  auto p = s.params.find(t.impl());
  if (p != s.params.end()) {
    Value* v = attr_value(p->second);
    v->type = tensor_type(t);
    s.values[t.impl()] = v;
    return v;
  }
  // A value of an enclosing module's graph used here without being passed in.
  for (size_t i = scopes_.size() - 1; i-- > 0;) {
    auto o = scopes_[i].values.find(t.impl());
    if (o != scopes_[i].values.end() && o->second->node->kind != "prim::Constant")
      raise(ErrorKind::Runtime,
            "ember.jit.trace: a tensor computed in an enclosing module is used inside a "
            "submodule's forward without being passed to it as an argument",
            location().empty() ? "" : " (at " + location() + ")",
            "; pass it to the submodule's call");
  }
  // Made outside the trace: a constant, held by reference (as PyTorch's tracer does).
  Node* c = graph().create_constant(IValue(t));
  c->source = location();
  graph().insert(c);
  keep_alive.push_back(t);
  s.values[t.impl()] = c->output();
  return c->output();
}

Value* Tracer::constant(const IValue& v) {
  TraceScope& s = scope();
  for (auto& [k, val] : s.constants)
    if (k.same_constant(v)) return val;
  // Interned constants go to the top of the graph so every later node may use them.
  Graph& g = graph();
  Node* c = g.create_constant(v);
  Node* first = g.block()->param()->next();
  c->insert_before(first);
  s.constants.emplace_back(v, c->output());
  return c->output();
}

// ---- recording one op (trace_hook.h) -------------------------------------------------------

Node* trace_begin(const Operator* op) {
  Tracer& t = tracer();
  EMBER_CHECK(op, "ember.jit.trace: an op without a registered schema ran");
  Node* n = t.graph().create_op(op);
  n->source = t.location();
  t_current = Current();
  t_current.p.node = n;
  return n;
}

void trace_arg(Node* n, const Tensor& v) { n->add_input(tracer().value_of(v)); }
void trace_arg(Node* n, int64_t v) {
  t_current.p.ints.emplace_back(n->inputs().size(), -1, v);
  n->add_input(tracer().constant(IValue(v)));
}
void trace_arg(Node* n, double v) { n->add_input(tracer().constant(IValue(v))); }
void trace_arg(Node* n, bool v) { n->add_input(tracer().constant(IValue(v))); }
void trace_arg(Node* n, const Scalar& v) { n->add_input(tracer().constant(IValue(v))); }
void trace_arg(Node* n, const Shape& v) {
  for (size_t j = 0; j < v.size(); ++j)
    t_current.p.ints.emplace_back(n->inputs().size(), int64_t(j), v[j]);
  n->add_input(tracer().constant(IValue(v)));
}
void trace_arg(Node* n, const std::vector<int64_t>& v) { trace_arg(n, Shape(v.begin(), v.end())); }
void trace_arg(Node* n, const std::vector<double>& v) {
  std::vector<IValue> items(v.begin(), v.end());
  n->add_input(tracer().constant(IValue::list(Type::get(Type::Kind::Float), std::move(items))));
}
void trace_arg(Node* n, const std::vector<bool>& v) {
  std::vector<IValue> items;
  for (bool b : v) items.emplace_back(b);
  n->add_input(tracer().constant(IValue::list(Type::get(Type::Kind::Bool), std::move(items))));
}
void trace_arg(Node* n, const std::vector<Tensor>& v) {
  Tracer& t = tracer();
  Node* l = t.graph().create("prim::ListConstruct", 1);
  l->output()->type = Type::list(Type::tensor());
  for (const Tensor& x : v) l->add_input(t.value_of(x));
  t.graph().insert(l);
  n->add_input(l->output());
}
void trace_arg(Node* n, const std::vector<std::optional<Tensor>>& v) {
  Tracer& t = tracer();
  Node* l = t.graph().create("prim::ListConstruct", 1);
  l->output()->type = Type::list(Type::optional(Type::tensor()));
  for (const auto& x : v) l->add_input(x ? t.value_of(*x) : t.constant(IValue()));
  t.graph().insert(l);
  n->add_input(l->output());
}
void trace_arg(Node* n, const std::string& v) { n->add_input(tracer().constant(IValue(v))); }
void trace_arg(Node* n, DType v) { n->add_input(tracer().constant(IValue(v))); }
void trace_arg(Node* n, Device v) { n->add_input(tracer().constant(IValue(v))); }
void trace_arg_none(Node* n) { n->add_input(tracer().constant(IValue())); }
void trace_arg_enum(Node* n, int64_t v) { n->add_input(tracer().constant(IValue(v))); }
void trace_arg(Node* n, const Generator& g) {
  EMBER_CHECK(!g, "ember.jit.trace: ", n->kind,
              " was called with an explicit generator=, which a graph cannot hold; trace with the "
              "default generator (seed it with ember.manual_seed)");
  trace_arg_none(n);
}

namespace {
Value* next_output(Node* n) {
  size_t i = t_current.out_index++;
  EMBER_CHECK(i < n->outputs().size(), "ember.jit.trace: ", n->kind,
              " returned more results than its schema declares");
  return n->outputs()[i];
}
}  // namespace

void trace_result(Node* n, const Tensor& t) {
  Value* v = next_output(n);
  if (!t.defined()) return;
  v->type = tensor_type(t);
  tracer().set_value(t, v);
}
void trace_result(Node* n, const std::vector<Tensor>& v) {
  Value* out = next_output(n);
  t_current.list_results.emplace_back(out->offset, v);
}
void trace_result(Node* n, int64_t v) {
  t_current.number_results.emplace_back(next_output(n)->offset, IValue(v));
}
void trace_result(Node* n, double v) {
  t_current.number_results.emplace_back(next_output(n)->offset, IValue(v));
}
void trace_result(Node* n, bool v) {
  t_current.number_results.emplace_back(next_output(n)->offset, IValue(v));
}
void trace_result(Node* n, const Scalar& v) {
  t_current.number_results.emplace_back(next_output(n)->offset, IValue(v));
}

void trace_end(Node* n) {
  Tracer& t = tracer();
  Current cur = std::move(t_current);
  t_current = Current();
  EMBER_CHECK(cur.out_index == n->outputs().size(), "ember.jit.trace: ", n->kind, " returned ",
              cur.out_index, " results but its schema declares ", n->outputs().size());
  if (!cur.p.ints.empty()) {
    cur.p.node = n;
    t.bind_pending(cur.p);
  }
  t.graph().insert(n);
  for (auto& [i, tensors] : cur.list_results) {
    Node* u = t.graph().create("prim::ListUnpack", tensors.size());
    u->add_input(n->outputs()[i]);
    t.graph().insert(u);
    for (size_t k = 0; k < tensors.size(); ++k) {
      if (!tensors[k].defined()) continue;  // an absent result (GRU's cell state)
      u->outputs()[k]->type = tensor_type(tensors[k]);
      t.set_value(tensors[k], u->outputs()[k]);
    }
  }
  // A number the op returned goes back to Python as a plain value: pin it.
  for (auto& [i, v] : cur.number_results) {
    Node* g = t.graph().create("prim::GuardConstant", 0);
    g->add_input(n->outputs()[i]);
    g->set_attr("value", v);
    g->set_attr("what", IValue(n->kind + "(...) returned " + v.repr()));
    g->source = n->source;
    t.graph().insert(g);
  }
}

// ---- symbolic ints ----------------------------------------------------------------------

int64_t Tracer::sym_size(const Tensor& t, int64_t dim) {
  Value* x = value_of(t);
  static const Operator* op = get_operator("aten::size.int");
  Node* n = graph().create_op(op);
  n->add_input(x);
  n->add_input(constant(IValue(dim)));
  n->source = location();
  graph().insert(n);
  syms_.push_back({n->output(), t.size(dim), scopes_.size() - 1});
  return int64_t(syms_.size() - 1);
}

int64_t Tracer::sym_tensor_op(const std::string& op_name, const Tensor& t) {
  Value* x = value_of(t);
  Node* n = graph().create_op(get_operator(op_name));
  n->add_input(x);
  n->source = location();
  graph().insert(n);
  const IValue r = op_name == "aten::dim" ? IValue(t.dim()) : IValue(t.numel());
  syms_.push_back({n->output(), r.toInt(), scopes_.size() - 1});
  return int64_t(syms_.size() - 1);
}

int64_t Tracer::sym_constant(int64_t v) {
  syms_.push_back({constant(IValue(v)), v, scopes_.size() - 1});
  return int64_t(syms_.size() - 1);
}

namespace {
// The value of an operand in the current scope: a sym int of this scope, or a constant
// (a sym of another scope is baked and guarded in its own graph).
Value* operand(Tracer& t, int64_t h, int64_t v) {
  if (h >= 0) {
    const SymInt& s = t.sym(h);
    if (s.scope == t.depth() - 1) return s.value;
    t.guard_sym_value(h, "a size used inside another module's forward");
    return t.constant(IValue(s.concrete));
  }
  return t.constant(IValue(v));
}
}  // namespace

int64_t Tracer::sym_op(const std::string& op_name, int64_t a, int64_t av, int64_t b, int64_t bv,
                       int64_t result) {
  const Operator* op = get_operator(op_name);
  Node* n = graph().create_op(op);
  n->add_input(operand(*this, a, av));
  if (op->num_inputs() > 1) n->add_input(operand(*this, b, bv));
  n->source = location();
  graph().insert(n);
  syms_.push_back({n->output(), result, scopes_.size() - 1});
  return int64_t(syms_.size() - 1);
}

void Tracer::set_pending(std::vector<std::pair<int64_t, int64_t>> ints) {
  flush_pending();
  pending_ = std::move(ints);
}

void Tracer::flush_pending() {
  auto p = std::move(pending_);
  pending_.clear();
  for (auto& [v, h] : p)
    if (h >= 0) guard_sym_value(h, "a size passed to an op as a plain number");
}

void Tracer::bind_pending(PendingNode& p) {
  // Align the Python call's ints with the node's int arguments: the one offset where all
  // values agree. No offset, or more than one, binds nothing (the sizes get guards).
  size_t m = pending_.size(), k = p.ints.size();
  if (m == 0 || m > k) return;
  bool any_sym = false;
  for (auto& [v, h] : pending_) any_sym |= (h >= 0 && v != 0 && v != 1);
  if (!any_sym) return;
  int64_t found = -1;
  for (size_t off = 0; off + m <= k; ++off) {
    bool ok = true;
    for (size_t j = 0; ok && j < m; ++j) ok = std::get<2>(p.ints[off + j]) == pending_[j].first;
    if (ok) {
      if (found >= 0) return;  // ambiguous
      found = int64_t(off);
    }
  }
  if (found < 0) return;
  Node* n = p.node;
  // input index -> (element index -> sym value)
  std::map<size_t, std::map<int64_t, Value*>> subst;
  std::vector<size_t> consumed;
  for (size_t j = 0; j < m; ++j) {
    int64_t h = pending_[j].second;
    // 0 and 1 stay specialized (as PyTorch's dynamic shapes do): they are guarded instead.
    if (h < 0 || pending_[j].first == 0 || pending_[j].first == 1) continue;
    const SymInt& s = syms_[size_t(h)];
    if (s.scope != scopes_.size() - 1) continue;
    auto [input, elem, value] = p.ints[size_t(found) + j];
    (void)value;
    subst[input][elem] = s.value;
    consumed.push_back(j);
  }
  for (auto& [input, elems] : subst) {
    if (elems.count(-1)) {
      n->replace_input(input, elems[-1]);
      continue;
    }
    // An int list with symbolic elements: prim::ListConstruct of constants and sizes.
    const IValue& old = n->input(input)->node->attr("value");
    Node* l = graph().create("prim::ListConstruct", 1);
    l->output()->type = Type::list(Type::get(Type::Kind::Int));
    const auto& items = old.toListRef();
    for (size_t e = 0; e < items.size(); ++e) {
      auto it = elems.find(int64_t(e));
      l->add_input(it != elems.end() ? it->second : constant(items[e]));
    }
    graph().insert(l);
    n->replace_input(input, l->output());
  }
  for (size_t j : consumed) pending_[j].second = -1;
}

// ---- guards -------------------------------------------------------------------------------

namespace {
Node* guard_node(Tracer& t, const char* kind, Value* in, const std::string& what) {
  Node* g = t.graph().create(kind, 0);
  g->add_input(in);
  g->set_attr("what", IValue(what));
  g->source = t.location();
  return g;
}
}  // namespace

void Tracer::guard_bool(Value* v, bool expected, const std::string& what) {
  Node* g = guard_node(*this, "prim::GuardBool", v, what);
  g->set_attr("value", IValue(expected));
  graph().insert(g);
}

void Tracer::guard_tensor_bool(const Tensor& t, bool expected, const std::string& what) {
  Node* g = guard_node(*this, "prim::GuardTensorBool", value_of(t), what);
  g->set_attr("value", IValue(expected));
  graph().insert(g);
}

void Tracer::guard_tensor_item(const Tensor& t, const IValue& value, const std::string& what) {
  Node* g = guard_node(*this, "prim::GuardItem", value_of(t), what);
  g->set_attr("value", value);
  graph().insert(g);
}

void Tracer::guard_tensor_values(const Tensor& t, const std::string& what) {
  Tensor copy;
  {
    trace_state::Pause pause;
    copy = clone(t);
  }
  keep_alive.push_back(copy);
  Node* g = guard_node(*this, "prim::GuardValues", value_of(t), what);
  g->set_attr("value", IValue(copy));
  graph().insert(g);
}

void Tracer::guard_sym_compare(const std::string& op, int64_t a, int64_t av, int64_t b, int64_t bv,
                               bool result, const std::string& what) {
  const Operator* o = get_operator("aten::" + op + ".int");
  Node* n = graph().create_op(o);
  n->add_input(operand(*this, a, av));
  n->add_input(operand(*this, b, bv));
  n->source = location();
  graph().insert(n);
  guard_bool(n->output(), result, what);
}

void Tracer::guard_sym_value(int64_t handle, const std::string& what) {
  const SymInt& s = syms_.at(size_t(handle));
  if (s.value->node->kind == "prim::Constant") return;
  TraceScope& sc = scopes_.at(s.scope);
  // A guard on the same value already pins it.
  for (const Use& u : s.value->uses)
    if (u.user->kind == "prim::GuardConstant") return;
  Node* g = sc.graph->create("prim::GuardConstant", 0);
  g->add_input(s.value);
  g->set_attr("value", IValue(s.concrete));
  g->set_attr("what", IValue(what));
  g->source = location();
  sc.graph->insert(g);
}

}  // namespace ember::jit
