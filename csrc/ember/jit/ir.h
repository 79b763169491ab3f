// The graph IR: Graph, Block, Node, Value. See Note [Graph IR].
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "ember/jit/ivalue.h"

namespace ember::jit {

// Note [Graph IR]
// A Graph is TorchScript's shape of SSA: a top Block of Nodes; each Node has a kind
// ("aten::mul", "prim::Constant", "prim::If"), input and output Values, attributes
// (a constant's `value`, GetAttr's `name`), nested Blocks (prim::If has two, prim::Loop
// one) and the source line it came from. A Block's parameters are the outputs of its
// `param` node and its results the inputs of its `ret` node, so every Value has exactly
// one defining node and a list of uses. Nodes of an op from the registry
// (jit/operator.h) point at their Operator; everything else is a `prim::` node the
// interpreter handles itself (interpreter.cpp lists them). The IR is built by the tracer
// (tracer.cpp), the script compiler (Python, through python/jit.cpp) and the archive
// reader; passes (passes.h) rewrite it; the interpreter runs it.

struct Graph;
struct Block;
struct Node;
struct Operator;

struct Use {
  Node* user;
  size_t offset;
};

struct Value {
  Node* node = nullptr;  // the defining node
  size_t offset = 0;     // which of its outputs
  size_t unique = 0;     // the number printed when there is no name
  TypePtr type;
  std::vector<Use> uses;

  /// The printed name without '%': the debug name ("x.1") or the unique number.
  std::string debug_name() const;
  bool has_name() const { return !name_.empty(); }
  /// Sets a readable name; a name already used in the graph gets a ".N" suffix.
  Value* set_name(const std::string& name);
  void replace_all_uses_with(Value* v);
  Graph* graph() const;

 private:
  friend struct Graph;
  std::string name_;
};

struct Node {
  std::string kind;
  const Operator* op = nullptr;  // set for registered ops
  std::vector<std::pair<std::string, IValue>> attrs;
  std::string source;  // "file.py:12", empty when unknown

  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  const std::vector<Block*>& blocks() const { return blocks_; }
  Value* input(size_t i) const { return inputs_.at(i); }
  Value* output(size_t i = 0) const { return outputs_.at(i); }
  Block* owning_block() const { return owning_; }
  Graph* graph() const { return graph_; }
  Node* next() const { return next_; }
  Node* prev() const { return prev_; }

  Value* add_input(Value* v);
  void replace_input(size_t i, Value* v);
  void remove_input(size_t i);
  void remove_all_inputs();
  Value* add_output(TypePtr t);
  void erase_output(size_t i);
  Block* add_block();

  bool has_attr(const std::string& name) const;
  const IValue& attr(const std::string& name) const;
  void set_attr(const std::string& name, IValue v);

  /// Unlinks the node from its block and drops its input uses (outputs must be unused).
  void destroy();
  void insert_before(Node* n);
  void insert_after(Node* n);
  void move_before(Node* n);
  /// True when this node comes before `n` in the same block.
  bool is_before(const Node* n) const;

 private:
  friend struct Graph;
  friend struct Block;
  Graph* graph_ = nullptr;
  Block* owning_ = nullptr;
  Node* prev_ = nullptr;
  Node* next_ = nullptr;
  std::vector<Value*> inputs_, outputs_;
  std::vector<Block*> blocks_;
  bool in_list_ = false;
};

struct Block {
  Node* param() const { return param_; }  // its outputs are the block's parameters
  Node* ret() const { return ret_; }      // its inputs are the block's results
  const std::vector<Value*>& inputs() const { return param_->outputs(); }
  const std::vector<Value*>& outputs() const { return ret_->inputs(); }
  Value* add_input(TypePtr t, const std::string& name = "");
  size_t register_output(Value* v) {
    ret_->add_input(v);
    return ret_->inputs().size() - 1;
  }
  Node* owning_node() const { return owner_; }
  Graph* graph() const { return graph_; }

  /// Iteration over the nodes (param and ret excluded).
  struct Iter {
    Node* n;
    Node* operator*() const { return n; }
    Iter& operator++() {
      n = n->next();
      return *this;
    }
    bool operator!=(const Iter& o) const { return n != o.n; }
  };
  Iter begin() const { return {param_->next()}; }
  Iter end() const { return {ret_}; }
  std::vector<Node*> nodes() const;

  /// Appends `n` before the return node.
  Node* append(Node* n);

 private:
  friend struct Graph;
  Graph* graph_ = nullptr;
  Node* owner_ = nullptr;
  Node* param_ = nullptr;
  Node* ret_ = nullptr;
};

struct Graph {
  Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  Block* block() const { return top_; }
  const std::vector<Value*>& inputs() const { return top_->inputs(); }
  const std::vector<Value*>& outputs() const { return top_->outputs(); }
  Value* add_input(TypePtr t, const std::string& name = "") { return top_->add_input(t, name); }
  size_t register_output(Value* v) { return top_->register_output(v); }

  /// A new node of `kind` with `n_outputs` outputs of type Any (not inserted).
  Node* create(const std::string& kind, size_t n_outputs = 1);
  /// A node of a registered op; outputs typed from its schema. Raises for unknown names.
  Node* create_op(const Operator* op);
  Node* create_constant(const IValue& v);
  Block* create_block(Node* owner);

  /// The insertion point used by insert()/insert_constant(): before `at`.
  void set_insert_point(Node* at) { insert_at_ = at; }
  Node* insert_point() const { return insert_at_; }
  Node* insert(Node* n);
  Value* insert_constant(const IValue& v);

  /// TorchScript's text form ("graph(%x : Tensor):\n  %1 : ...").
  std::string str(bool print_source = true) const;
  /// A deep copy; `map` (optional) receives old value -> new value.
  std::shared_ptr<Graph> copy() const;
  /// Copies `src`'s nodes into `dst` before `dst`'s ret using `inputs` for src's
  /// inputs; returns the values standing for src's outputs.
  static std::vector<Value*> inline_into(const Graph& src, Block* dst, Node* before,
                                         const std::vector<Value*>& inputs);
  /// Checks the invariants (each use recorded, defs before uses, ...); raises on failure.
  void lint() const;

 private:
  friend struct Value;
  friend struct Node;
  friend struct Block;
  Value* new_value(Node* n, size_t offset, TypePtr t);
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<std::unique_ptr<Block>> blocks_;
  std::unordered_set<std::string> names_;
  size_t next_unique_ = 0;
  Block* top_ = nullptr;
  Node* insert_at_ = nullptr;
};

/// Calls `f` on every node of `b`, nested blocks included (pre-order).
void for_each_node(Block* b, const std::function<void(Node*)>& f);

}  // namespace ember::jit
