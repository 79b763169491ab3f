// See Note [Graph IR] in ir.h.
#include "ember/jit/ir.h"

#include <algorithm>
#include <sstream>
#include <unordered_map>

#include "ember/jit/operator.h"

namespace ember::jit {

// ---- Value ---------------------------------------------------------------------------

std::string Value::debug_name() const { return name_.empty() ? std::to_string(unique) : name_; }

Graph* Value::graph() const { return node->graph(); }

Value* Value::set_name(const std::string& name) {
  Graph* g = graph();
  if (!name_.empty()) g->names_.erase(name_);
  if (name.empty()) {
    name_.clear();
    return this;
  }
  // TorchScript's renaming: x, x.1, x.2 ...; a purely numeric name would clash with uniques.
  std::string base = name;
  bool numeric = std::all_of(base.begin(), base.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (numeric) base = "_" + base;
  std::string candidate = base;
  for (int i = 1; g->names_.count(candidate); ++i) candidate = base + "." + std::to_string(i);
  name_ = candidate;
  g->names_.insert(name_);
  return this;
}

void Value::replace_all_uses_with(Value* v) {
  if (v == this) return;
  auto uses_copy = uses;
  for (const Use& u : uses_copy) u.user->replace_input(u.offset, v);
}

// ---- Node ----------------------------------------------------------------------------

Value* Node::add_input(Value* v) {
  v->uses.push_back({this, inputs_.size()});
  inputs_.push_back(v);
  return v;
}

namespace {
void drop_use(Value* v, Node* user, size_t offset) {
  auto& u = v->uses;
  for (size_t i = 0; i < u.size(); ++i)
    if (u[i].user == user && u[i].offset == offset) {
      u.erase(u.begin() + long(i));
      return;
    }
}
}  // namespace

void Node::replace_input(size_t i, Value* v) {
  drop_use(inputs_.at(i), this, i);
  inputs_[i] = v;
  v->uses.push_back({this, i});
}

void Node::remove_input(size_t i) {
  drop_use(inputs_.at(i), this, i);
  for (size_t j = i + 1; j < inputs_.size(); ++j)
    for (Use& u : inputs_[j]->uses)
      if (u.user == this && u.offset == j) --u.offset;
  inputs_.erase(inputs_.begin() + long(i));
}

void Node::remove_all_inputs() {
  for (size_t i = 0; i < inputs_.size(); ++i) drop_use(inputs_[i], this, i);
  inputs_.clear();
}

Value* Node::add_output(TypePtr t) {
  Value* v = graph_->new_value(this, outputs_.size(), std::move(t));
  outputs_.push_back(v);
  return v;
}

void Node::erase_output(size_t i) {
  EMBER_CHECK(outputs_.at(i)->uses.empty(), "jit: erasing a used output of ", kind);
  outputs_.erase(outputs_.begin() + long(i));
  for (size_t j = i; j < outputs_.size(); ++j) outputs_[j]->offset = j;
}

Block* Node::add_block() {
  Block* b = graph_->create_block(this);
  blocks_.push_back(b);
  return b;
}

bool Node::has_attr(const std::string& name) const {
  for (const auto& a : attrs)
    if (a.first == name) return true;
  return false;
}
const IValue& Node::attr(const std::string& name) const {
  for (const auto& a : attrs)
    if (a.first == name) return a.second;
  EMBER_ERROR("jit: node ", kind, " has no attribute '", name, "'");
}
void Node::set_attr(const std::string& name, IValue v) {
  for (auto& a : attrs)
    if (a.first == name) {
      a.second = std::move(v);
      return;
    }
  attrs.emplace_back(name, std::move(v));
}

void Node::destroy() {
  for (Value* o : outputs_)
    EMBER_CHECK(o->uses.empty(), "jit: destroying ", kind, " whose output %", o->debug_name(),
                " is still used");
  for (Block* b : blocks_) {
    // Destroy nested nodes back to front so uses inside the block go first.
    std::vector<Node*> ns = b->nodes();
    b->ret()->remove_all_inputs();
    for (auto it = ns.rbegin(); it != ns.rend(); ++it) (*it)->destroy();
  }
  remove_all_inputs();
  if (in_list_) {
    prev_->next_ = next_;
    next_->prev_ = prev_;
    in_list_ = false;
  }
  prev_ = next_ = nullptr;
  owning_ = nullptr;
}

void Node::insert_before(Node* n) {
  EMBER_CHECK(!in_list_, "jit: node ", kind, " is already in a block");
  prev_ = n->prev_;
  next_ = n;
  n->prev_->next_ = this;
  n->prev_ = this;
  owning_ = n->owning_;
  in_list_ = true;
}
void Node::insert_after(Node* n) { insert_before(n->next_); }

void Node::move_before(Node* n) {
  if (in_list_) {
    prev_->next_ = next_;
    next_->prev_ = prev_;
    in_list_ = false;
  }
  insert_before(n);
}

bool Node::is_before(const Node* n) const {
  for (const Node* p = next_; p; p = p->next_)
    if (p == n) return true;
  return false;
}

// ---- Block ---------------------------------------------------------------------------

Value* Block::add_input(TypePtr t, const std::string& name) {
  Value* v = param_->add_output(std::move(t));
  if (!name.empty()) v->set_name(name);
  return v;
}

std::vector<Node*> Block::nodes() const {
  std::vector<Node*> out;
  for (Node* n : *this) out.push_back(n);
  return out;
}

Node* Block::append(Node* n) {
  n->insert_before(ret_);
  return n;
}

// ---- Graph ---------------------------------------------------------------------------

Graph::Graph() {
  top_ = create_block(nullptr);
  insert_at_ = top_->ret();
}

Value* Graph::new_value(Node* n, size_t offset, TypePtr t) {
  values_.push_back(std::make_unique<Value>());
  Value* v = values_.back().get();
  v->node = n;
  v->offset = offset;
  v->unique = next_unique_++;
  v->type = t ? std::move(t) : Type::get(Type::Kind::Any);
  return v;
}

Node* Graph::create(const std::string& kind, size_t n_outputs) {
  nodes_.push_back(std::make_unique<Node>());
  Node* n = nodes_.back().get();
  n->kind = kind;
  n->graph_ = this;
  for (size_t i = 0; i < n_outputs; ++i) n->add_output(nullptr);
  return n;
}

Node* Graph::create_op(const Operator* op) {
  Node* n = create(op->qualified_name(), 0);
  n->kind = op->name();
  n->op = op;
  for (const Argument& r : op->schema.returns) n->add_output(r.type);
  return n;
}

Node* Graph::create_constant(const IValue& v) {
  Node* n = create("prim::Constant", 1);
  n->set_attr("value", v);
  if (v.is_tensor() && v.toTensor().defined()) {
    const Tensor& t = v.toTensor();
    n->output()->type =
        Type::tensor_of(t.dtype(), std::vector<int64_t>(t.sizes().begin(), t.sizes().end()));
  } else {
    n->output()->type = type_of(v);
  }
  return n;
}

Block* Graph::create_block(Node* owner) {
  blocks_.push_back(std::make_unique<Block>());
  Block* b = blocks_.back().get();
  b->graph_ = this;
  b->owner_ = owner;
  b->param_ = create("prim::Param", 0);
  b->ret_ = create("prim::Return", 0);
  b->param_->owning_ = b;
  b->ret_->owning_ = b;
  b->param_->next_ = b->ret_;
  b->ret_->prev_ = b->param_;
  b->param_->in_list_ = b->ret_->in_list_ = true;
  return b;
}

Node* Graph::insert(Node* n) {
  n->insert_before(insert_at_);
  return n;
}

Value* Graph::insert_constant(const IValue& v) { return insert(create_constant(v))->output(); }

void for_each_node(Block* b, const std::function<void(Node*)>& f) {
  for (Node* n : b->nodes()) {
    f(n);
    for (Block* sub : n->blocks()) for_each_node(sub, f);
  }
}

// ---- copying and inlining ----------------------------------------------------------------

namespace {
void copy_block(const Block* src, Block* dst, Node* before,
                std::unordered_map<const Value*, Value*>& map) {
  Graph* g = dst->graph();
  for (Node* n : *src) {
    Node* c = g->create(n->kind, 0);
    c->op = n->op;
    c->attrs = n->attrs;
    c->source = n->source;
    for (Value* in : n->inputs()) c->add_input(map.at(in));
    for (Value* out : n->outputs()) {
      Value* o = c->add_output(out->type);
      if (out->has_name()) o->set_name(out->debug_name());
      map[out] = o;
    }
    for (Block* b : n->blocks()) {
      Block* nb = c->add_block();
      for (Value* p : b->inputs()) {
        Value* np = nb->add_input(p->type);
        if (p->has_name()) np->set_name(p->debug_name());
        map[p] = np;
      }
      copy_block(b, nb, nb->ret(), map);
      for (Value* r : b->outputs()) nb->register_output(map.at(r));
    }
    c->insert_before(before);
  }
}
}  // namespace

std::shared_ptr<Graph> Graph::copy() const {
  auto g = std::make_shared<Graph>();
  std::unordered_map<const Value*, Value*> map;
  for (Value* in : inputs()) {
    Value* v = g->add_input(in->type);
    if (in->has_name()) v->set_name(in->debug_name());
    map[in] = v;
  }
  copy_block(top_, g->block(), g->block()->ret(), map);
  for (Value* out : outputs()) g->register_output(map.at(out));
  return g;
}

std::vector<Value*> Graph::inline_into(const Graph& src, Block* dst, Node* before,
                                       const std::vector<Value*>& inputs) {
  EMBER_CHECK(inputs.size() == src.inputs().size(), "jit: inlining a graph of ",
              src.inputs().size(), " inputs with ", inputs.size(), " arguments");
  std::unordered_map<const Value*, Value*> map;
  for (size_t i = 0; i < inputs.size(); ++i) map[src.inputs()[i]] = inputs[i];
  copy_block(src.block(), dst, before, map);
  std::vector<Value*> outs;
  for (Value* o : src.outputs()) outs.push_back(map.at(o));
  return outs;
}

// ---- lint ------------------------------------------------------------------------------

namespace {
void lint_block(const Block* b, std::unordered_map<const Value*, bool>& defined) {
  for (Value* p : b->inputs()) defined[p] = true;
  auto check_node = [&](const Node* n) {
    for (size_t i = 0; i < n->inputs().size(); ++i) {
      Value* in = n->inputs()[i];
      EMBER_CHECK(defined.count(in), "jit lint: ", n->kind, " uses %", in->debug_name(),
                  " before it is defined");
      bool found = false;
      for (const Use& u : in->uses) found |= (u.user == n && u.offset == i);
      EMBER_CHECK(found, "jit lint: use of %", in->debug_name(), " by ", n->kind, " not recorded");
    }
  };
  for (Node* n : *b) {
    check_node(n);
    for (Block* sub : n->blocks()) {
      auto inner = defined;
      lint_block(sub, inner);
    }
    for (Value* o : n->outputs()) {
      EMBER_CHECK(o->node == n, "jit lint: output's node is wrong");
      defined[o] = true;
    }
  }
  check_node(b->ret());
}
}  // namespace

void Graph::lint() const {
  std::unordered_map<const Value*, bool> defined;
  lint_block(top_, defined);
}

// ---- printing ----------------------------------------------------------------------------

namespace {

std::string attr_str(const IValue& v) {
  if (v.is_tensor()) {
    const Tensor& t = v.toTensor();
    if (!t.defined()) return "None";
    if (t.numel() == 1 && t.dim() == 0) {
      // TorchScript prints a 0-dim constant as {value}.
      std::string s = t.str();
      auto a = s.find('(');
      auto b = s.find_first_of(",)", a);
      return "{" + s.substr(a + 1, b - a - 1) + "}";
    }
    return "<Tensor>";
  }
  if (v.is_string()) return v.repr();
  return v.repr();
}

struct Printer {
  std::ostringstream os;
  bool source;

  std::string values(const std::vector<Value*>& vs) {
    std::string s;
    for (size_t i = 0; i < vs.size(); ++i) s += (i ? ", %" : "%") + vs[i]->debug_name();
    return s;
  }

  void node(const Node* n, int indent) {
    std::string pad(size_t(indent), ' ');
    os << pad;
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      Value* o = n->outputs()[i];
      os << (i ? ", %" : "%") << o->debug_name() << " : " << o->type->str();
    }
    if (!n->outputs().empty()) os << " = ";
    os << n->kind;
    if (!n->attrs.empty()) {
      os << "[";
      for (size_t i = 0; i < n->attrs.size(); ++i)
        os << (i ? ", " : "") << n->attrs[i].first << "=" << attr_str(n->attrs[i].second);
      os << "]";
    }
    os << "(" << values(n->inputs()) << ")";
    if (source && !n->source.empty()) os << " # " << n->source;
    os << "\n";
    for (size_t bi = 0; bi < n->blocks().size(); ++bi) {
      const Block* b = n->blocks()[bi];
      os << pad << "  block" << bi << "(";
      for (size_t i = 0; i < b->inputs().size(); ++i)
        os << (i ? ", %" : "%") << b->inputs()[i]->debug_name() << " : "
           << b->inputs()[i]->type->str();
      os << "):\n";
      for (const Node* c : *b) node(c, indent + 4);
      os << pad << "    -> (" << values(b->outputs()) << ")\n";
    }
  }
};

}  // namespace

std::string Graph::str(bool print_source) const {
  Printer p;
  p.source = print_source;
  p.os << "graph(";
  const auto& in = inputs();
  for (size_t i = 0; i < in.size(); ++i)
    p.os << (i ? ",\n      %" : "%") << in[i]->debug_name() << " : " << in[i]->type->str();
  p.os << "):\n";
  for (const Node* n : *top_) p.node(n, 2);
  p.os << "  return (" << p.values(outputs()) << ")\n";
  return p.os.str();
}

}  // namespace ember::jit
