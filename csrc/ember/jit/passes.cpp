// See Note [Graph passes] in passes.h.
#include "ember/jit/passes.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "ember/autograd/grad_mode.h"
#include "ember/core/trace_state.h"
#include "ember/jit/operator.h"

namespace ember::jit {

namespace {

bool is_constant(const Value* v) { return v->node->kind == "prim::Constant"; }
const IValue& constant_of(const Value* v) { return v->node->attr("value"); }

// Ops whose result may share memory with an input (views, and conversions that return
// their input when there is nothing to convert).
bool may_alias(const Node* n) {
  static const std::unordered_set<std::string> ops = {
      "aten::view",
      "aten::reshape",
      "aten::flatten",
      "aten::unflatten",
      "aten::unsqueeze",
      "aten::squeeze",
      "aten::transpose",
      "aten::t",
      "aten::permute",
      "aten::expand",
      "aten::expand_as",
      "aten::slice",
      "aten::select",
      "aten::narrow",
      "aten::as_strided",
      "aten::unbind",
      "aten::split",
      "aten::split_with_sizes",
      "aten::chunk",
      "aten::diagonal",
      "aten::detach",
      "aten::alias",
      "aten::to",
      "aten::contiguous",
      "aten::type_as",
      "aten::view_as",
      "aten::reshape_as",
      "aten::movedim",
      "aten::index",
      "aten::__getitem__",
      "aten::real",
      "aten::numpy_T",
      "aten::mT",
      "aten::swapaxes",
      "aten::moveaxis",
      "aten::unfold",
      "aten::tensor_split",
      "aten::hsplit",
      "aten::vsplit",
      "aten::dsplit",
      "aten::T",
      "aten::H",
      "aten::adjoint",
      "aten::broadcast_to",
      "aten::dropout",
      "aten::feature_dropout",
      "aten::alpha_dropout",
      "aten::squeeze_",
      "aten::unsqueeze_",
  };
  if (!n->op) {
    const std::string& k = n->kind;
    return k == "prim::ListUnpack" || k == "prim::TupleUnpack" || k == "prim::TupleIndex" ||
           k == "prim::ListConstruct" || k == "prim::TupleConstruct" || k == "prim::If" ||
           k == "prim::Loop" || k == "prim::unchecked_cast" || k == "prim::CallMethod";
  }
  if (n->op->effect == Effect::Mutates) return true;  // returns self
  return ops.count(n->op->name()) > 0;
}

struct AliasInfo {
  std::unordered_map<const Value*, const Value*> parent;
  std::unordered_set<const Value*> mutated_roots;
  bool any_mutation = false;

  const Value* find(const Value* v) {
    auto it = parent.find(v);
    if (it == parent.end() || it->second == v) return v;
    const Value* r = find(it->second);
    parent[v] = r;
    return r;
  }
  void unite(const Value* a, const Value* b) {
    const Value* ra = find(a);
    const Value* rb = find(b);
    if (ra != rb) parent[ra] = rb;
  }
  bool mutated(const Value* v) { return mutated_roots.count(find(v)) > 0; }
};

void collect_aliases(const Block* b, AliasInfo& info, std::vector<const Node*>& mutators) {
  for (Node* n : *b) {
    if (may_alias(n))
      for (Value* in : n->inputs())
        for (Value* out : n->outputs()) info.unite(in, out);
    for (Block* sub : n->blocks()) {
      // A block's results alias the node's outputs; its params alias the node's inputs.
      for (size_t i = 0; i < sub->outputs().size() && i < n->outputs().size(); ++i)
        info.unite(sub->outputs()[i], n->outputs()[i]);
      for (Value* p : sub->inputs())
        for (Value* in : n->inputs()) info.unite(p, in);
      collect_aliases(sub, info, mutators);
    }
    if (n->op && n->op->effect == Effect::Mutates) mutators.push_back(n);
    if (n->kind == "prim::SetAttr" || n->kind == "prim::CallMethod") mutators.push_back(n);
  }
}

AliasInfo analyze_aliases(const Graph& g) {
  AliasInfo info;
  std::vector<const Node*> mutators;
  collect_aliases(g.block(), info, mutators);
  for (const Node* n : mutators) {
    info.any_mutation = true;
    for (Value* in : n->inputs()) info.mutated_roots.insert(info.find(in));
  }
  // Graph inputs may be the same tensor passed twice: one mutated input taints them all.
  bool input_mutated = false;
  for (Value* in : g.inputs()) input_mutated |= info.mutated(in);
  if (input_mutated)
    for (Value* in : g.inputs()) info.mutated_roots.insert(info.find(in));
  // Attributes read through GetAttr may be the same tensor under two names.
  return info;
}

bool pure_prim(const std::string& k) {
  return k == "prim::Constant" || k == "prim::GetAttr" || k == "prim::ListConstruct" ||
         k == "prim::TupleConstruct" || k == "prim::ListUnpack" || k == "prim::TupleUnpack" ||
         k == "prim::TupleIndex" || k == "prim::unchecked_cast" || k == "prim::Uninitialized";
}

}  // namespace

bool has_side_effects(const Node* n) {
  if (n->op) return n->op->effect != Effect::Pure;
  if (pure_prim(n->kind)) return false;
  if (n->kind == "prim::If" || n->kind == "prim::Loop") {
    for (const Block* b : n->blocks())
      for (const Node* c : *b)
        if (has_side_effects(c)) return true;
    return false;
  }
  return true;  // guards, RaiseException, Print, SetAttr, CallMethod, unknown prims
}

// ---- inlining --------------------------------------------------------------------------

namespace {
void inline_block(Block* b, std::unordered_map<const Value*, std::shared_ptr<Object>>& objs) {
  for (Node* n : b->nodes()) {
    if (n->kind == "prim::GetAttr") {
      auto it = objs.find(n->input(0));
      if (it != objs.end()) {
        const IValue& v = it->second->attr(n->attr("name").toStringRef());
        if (v.is_object()) objs[n->output()] = v.toObject();
      }
      continue;
    }
    for (Block* sub : n->blocks()) inline_block(sub, objs);
    if (n->kind != "prim::CallMethod") continue;
    auto it = objs.find(n->input(0));
    if (it == objs.end()) continue;
    std::shared_ptr<Object> callee = it->second;
    std::shared_ptr<Function> fn = callee->method(n->attr("name").toStringRef());
    std::shared_ptr<Graph> body = fn->graph->copy();
    inline_methods(*body, callee);
    std::vector<Value*> outs = Graph::inline_into(*body, b, n, n->inputs());
    // Values of the inlined body that stand for submodules are known objects too.
    EMBER_CHECK(outs.size() == n->outputs().size(), "ember.jit: inlining ", callee->type->name, ".",
                fn->name, ": it returns ", outs.size(), " values, the call expects ",
                n->outputs().size());
    for (size_t i = 0; i < outs.size(); ++i) n->outputs()[i]->replace_all_uses_with(outs[i]);
    n->destroy();
  }
}
}  // namespace

void inline_methods(Graph& g, const std::shared_ptr<Object>& self) {
  if (!self || g.inputs().empty()) return;
  std::unordered_map<const Value*, std::shared_ptr<Object>> objs;
  objs[g.inputs()[0]] = self;
  inline_block(g.block(), objs);
}

// ---- dead code ---------------------------------------------------------------------------

namespace {
bool dce_block(Block* b) {
  bool changed = false;
  std::vector<Node*> ns = b->nodes();
  for (auto it = ns.rbegin(); it != ns.rend(); ++it) {
    Node* n = *it;
    for (Block* sub : n->blocks()) changed |= dce_block(sub);
    // Loop-carried values nobody reads after the loop: still needed inside it, keep.
    bool used = false;
    for (Value* o : n->outputs()) used |= !o->uses.empty();
    if (!used && !has_side_effects(n)) {
      n->destroy();
      changed = true;
    }
  }
  return changed;
}
}  // namespace

void eliminate_dead_code(Graph& g) {
  while (dce_block(g.block())) {
  }
}

// ---- common subexpressions -----------------------------------------------------------

namespace {

std::string node_key(const Node* n) {
  std::string k = n->op ? n->op->qualified_name() : n->kind;
  k += "(";
  for (Value* in : n->inputs()) k += std::to_string(reinterpret_cast<uintptr_t>(in)) + ",";
  k += ")";
  for (const auto& [name, v] : n->attrs) {
    k += name + "=";
    if (v.is_tensor()) {
      k += "T" + std::to_string(reinterpret_cast<uintptr_t>(v.toTensor().impl()));
    } else {
      k += std::string(v.tag_name()) + ":" + v.repr();
    }
    k += ";";
  }
  return k;
}

void cse_block(Block* b, std::unordered_map<std::string, Node*> table, AliasInfo& alias) {
  for (Node* n : b->nodes()) {
    for (Block* sub : n->blocks()) cse_block(sub, table, alias);
    if (!n->blocks().empty() || n->outputs().empty()) continue;
    bool pure = n->op ? n->op->effect == Effect::Pure : pure_prim(n->kind);
    if (!pure || n->kind == "prim::Uninitialized") continue;
    // List constructions are mutable objects: two lists must stay two.
    if (n->kind == "prim::ListConstruct") continue;
    bool touches_mutated = false;
    for (Value* v : n->inputs()) touches_mutated |= alias.mutated(v);
    for (Value* v : n->outputs()) touches_mutated |= alias.mutated(v);
    if (touches_mutated) continue;
    std::string key = node_key(n);
    auto it = table.find(key);
    if (it == table.end()) {
      table.emplace(std::move(key), n);
      continue;
    }
    Node* prev = it->second;
    for (size_t i = 0; i < n->outputs().size(); ++i)
      n->outputs()[i]->replace_all_uses_with(prev->outputs()[i]);
    n->destroy();
  }
}

}  // namespace

void eliminate_common_subexpressions(Graph& g) {
  AliasInfo alias = analyze_aliases(g);
  cse_block(g.block(), {}, alias);
}

// ---- constant folding --------------------------------------------------------------------

namespace {

// Replaces a node by constants holding `values` (inserted before it).
void replace_by_constants(Node* n, const std::vector<IValue>& values) {
  Graph* g = n->graph();
  for (size_t i = 0; i < values.size(); ++i) {
    Node* c = g->create_constant(values[i]);
    c->source = n->source;
    c->insert_before(n);
    Value* o = n->outputs()[i];
    if (o->has_name() && !c->output()->has_name()) c->output()->set_name(o->debug_name());
    o->replace_all_uses_with(c->output());
  }
  n->destroy();
}

// Moves the nodes of `b` before `n`, mapping b's params are none (If blocks have none).
void splice_block(Node* n, Block* b) {
  for (Node* c : b->nodes()) c->move_before(n);
  for (size_t i = 0; i < n->outputs().size(); ++i)
    n->outputs()[i]->replace_all_uses_with(b->outputs()[i]);
  b->ret()->remove_all_inputs();
  n->destroy();
}

bool fold_block(Block* b, AliasInfo& alias) {
  bool changed = false;
  for (Node* n : b->nodes()) {
    for (Block* sub : n->blocks()) changed |= fold_block(sub, alias);
    if (n->kind == "prim::If" && is_constant(n->input(0))) {
      splice_block(n, n->blocks()[constant_of(n->input(0)).toBool() ? 0 : 1]);
      changed = true;
      continue;
    }
    bool all_const = true;
    for (Value* in : n->inputs()) all_const &= is_constant(in);
    if (!all_const || !n->blocks().empty() || n->outputs().empty()) continue;
    bool may_be_mutated = false;
    for (Value* o : n->outputs()) may_be_mutated |= alias.mutated(o);
    if (may_be_mutated) continue;
    std::vector<IValue> results;
    if (n->op) {
      if (n->op->effect != Effect::Pure) continue;
      Stack s;
      for (Value* in : n->inputs()) s.push_back(constant_of(in));
      try {
        autograd::GradModeGuard no_grad(false);
        trace_state::Pause pause;
        n->op->fn(s);
      } catch (const std::exception&) {
        continue;  // it fails at run time too, with the node's own message
      }
      if (s.size() != n->outputs().size()) continue;
      results = std::move(s);
    } else if (n->kind == "prim::TupleConstruct") {
      std::vector<IValue> items;
      for (Value* in : n->inputs()) items.push_back(constant_of(in));
      results.push_back(IValue::tuple(std::move(items)));
    } else if (n->kind == "prim::TupleIndex") {
      results.push_back(constant_of(n->input(0)).toTupleRef().at(size_t(n->attr("index").toInt())));
    } else if (n->kind == "prim::TupleUnpack") {
      results = constant_of(n->input(0)).toTupleRef();
    } else {
      continue;  // lists are mutable: a constant list would be shared by every call
    }
    if (results.size() != n->outputs().size()) continue;
    replace_by_constants(n, results);
    changed = true;
  }
  return changed;
}

}  // namespace

void fold_constants(Graph& g) {
  for (int round = 0; round < 8; ++round) {
    AliasInfo alias = analyze_aliases(g);
    if (!fold_block(g.block(), alias)) break;
  }
}

// ---- no-op views and casts ------------------------------------------------------------

namespace {

const Node* producer(const Value* v) { return v->node; }
bool is_op(const Node* n, const char* name) { return n->op && n->op->name() == name; }

bool const_int(const Value* v, int64_t* out) {
  if (!is_constant(v) || !constant_of(v).is_int()) return false;
  *out = constant_of(v).toInt();
  return true;
}

bool noop_block(Block* b) {
  bool changed = false;
  for (Node* n : b->nodes()) {
    for (Block* sub : n->blocks()) changed |= noop_block(sub);
    if (!n->op || n->outputs().size() != 1) continue;
    const std::string& name = n->op->name();
    Value* replacement = nullptr;
    if ((name == "aten::dropout" || name == "aten::feature_dropout" ||
         name == "aten::alpha_dropout") &&
        n->inputs().size() == 3 && is_constant(n->input(2)) && constant_of(n->input(2)).is_bool() &&
        !constant_of(n->input(2)).toBool()) {
      replacement = n->input(0);  // eval mode
    } else if (name == "aten::t" && is_op(producer(n->input(0)), "aten::t")) {
      replacement = producer(n->input(0))->input(0);
    } else if (name == "aten::transpose" && is_op(producer(n->input(0)), "aten::transpose")) {
      const Node* p = producer(n->input(0));
      int64_t a0, a1, b0, b1;
      if (const_int(n->input(1), &a0) && const_int(n->input(2), &a1) &&
          const_int(p->input(1), &b0) && const_int(p->input(2), &b1) &&
          ((a0 == b0 && a1 == b1) || (a0 == b1 && a1 == b0)) && a0 >= 0 && a1 >= 0)
        replacement = p->input(0);
    } else if (name == "aten::squeeze" && n->inputs().size() == 2 &&
               is_op(producer(n->input(0)), "aten::unsqueeze")) {
      const Node* p = producer(n->input(0));
      int64_t d;
      if (const_int(p->input(1), &d) && d >= 0 && is_constant(n->input(1))) {
        const IValue& dims = constant_of(n->input(1));
        bool same =
            dims.is_list() && dims.toListRef().size() == 1 && dims.toListRef()[0].toInt() == d;
        if (same) replacement = p->input(0);
      }
    } else if ((name == "aten::to" || name == "aten::type") && n->inputs().size() >= 2 &&
               is_constant(n->input(1)) && constant_of(n->input(1)).is_dtype()) {
      // A cast to the dtype its input was just cast to (or a constant of that dtype).
      DType want = constant_of(n->input(1)).toDType();
      const Node* p = producer(n->input(0));
      bool known = false;
      if (is_constant(n->input(0)) && constant_of(n->input(0)).is_tensor()) {
        known = constant_of(n->input(0)).toTensor().dtype() == want;
      } else if (p->op && (p->op->name() == "aten::to" || p->op->name() == "aten::type") &&
                 p->inputs().size() >= 2 && is_constant(p->input(1)) &&
                 constant_of(p->input(1)).is_dtype()) {
        known = constant_of(p->input(1)).toDType() == want;
      }
      bool copy = n->inputs().size() >= 3 && is_constant(n->input(2)) &&
                  constant_of(n->input(2)).is_bool() && constant_of(n->input(2)).toBool();
      if (known && !copy) replacement = n->input(0);
    } else if (name == "aten::contiguous" && is_op(producer(n->input(0)), "aten::contiguous")) {
      replacement = n->input(0);
    } else if (name == "aten::flatten" && n->inputs().size() == 3) {
      int64_t s, e;
      if (const_int(n->input(1), &s) && const_int(n->input(2), &e) && s == e && s >= 0)
        replacement = n->input(0);
    }
    if (replacement) {
      n->output()->replace_all_uses_with(replacement);
      n->destroy();
      changed = true;
    }
  }
  return changed;
}

}  // namespace

void remove_noops(Graph& g) {
  while (noop_block(g.block())) {
  }
}

// ---- freezing ------------------------------------------------------------------------------

void freeze_attributes(Graph& g, const std::shared_ptr<Object>& self) {
  if (!self || g.inputs().empty()) return;
  std::unordered_map<const Value*, std::shared_ptr<Object>> objs;
  objs[g.inputs()[0]] = self;
  std::function<void(Block*)> walk = [&](Block* b) {
    for (Node* n : b->nodes()) {
      for (Block* sub : n->blocks()) walk(sub);
      if (n->kind != "prim::GetAttr") continue;
      auto it = objs.find(n->input(0));
      if (it == objs.end()) continue;
      const IValue& v = it->second->attr(n->attr("name").toStringRef());
      if (v.is_object()) {
        objs[n->output()] = v.toObject();
        continue;
      }
      IValue c = v;
      if (v.is_tensor() && v.toTensor().defined()) c = IValue(v.toTensor().detach());
      replace_by_constants(n, {c});
    }
  };
  walk(g.block());
}

// ---- the pipeline ----------------------------------------------------------------------------

namespace {
struct PassList {
  std::mutex mu;
  std::vector<std::pair<std::string, GraphPass>> passes;
};
PassList& pass_list() {
  static PassList* p = new PassList();
  return *p;
}
}  // namespace

void register_graph_pass(const std::string& name, GraphPass pass) {
  PassList& l = pass_list();
  std::lock_guard<std::mutex> lk(l.mu);
  for (auto& p : l.passes)
    if (p.first == name) {
      p.second = std::move(pass);
      return;
    }
  l.passes.emplace_back(name, std::move(pass));
}

bool unregister_graph_pass(const std::string& name) {
  PassList& l = pass_list();
  std::lock_guard<std::mutex> lk(l.mu);
  auto it = std::find_if(l.passes.begin(), l.passes.end(),
                         [&](const auto& p) { return p.first == name; });
  if (it == l.passes.end()) return false;
  l.passes.erase(it);
  return true;
}

void optimize(Graph& g) {
  remove_noops(g);
  fold_constants(g);
  eliminate_common_subexpressions(g);
  eliminate_dead_code(g);
  std::vector<std::pair<std::string, GraphPass>> extra;
  {
    PassList& l = pass_list();
    std::lock_guard<std::mutex> lk(l.mu);
    extra = l.passes;
  }
  for (auto& [name, pass] : extra) pass(g);
}

}  // namespace ember::jit
