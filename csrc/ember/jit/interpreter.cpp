// See Note [Interpreter] in interpreter.h.
#include "ember/jit/interpreter.h"

#include <iostream>
#include <unordered_map>

#include "ember/core/trace_state.h"
#include "ember/jit/operator.h"
#include "ember/jit/passes.h"
#include "ember/ops/ops.h"
#include "ember/ops/surface.h"

namespace ember::jit {

namespace {

enum class IKind : uint8_t {
  Op,
  Constant,
  GetAttr,
  SetAttr,
  ListConstruct,
  ListUnpack,
  TupleConstruct,
  TupleUnpack,
  TupleIndex,
  If,
  Loop,
  CallMethod,
  Raise,
  Print,
  Identity,  // unchecked_cast
  Uninitialized,
  GuardBool,
  GuardTensorBool,
  GuardItem,
  GuardValues,
  GuardConstant,
};

struct CodeBlock;

struct Instr {
  IKind kind;
  const Operator* op = nullptr;
  std::vector<int> in;  // register; ~reg (negative) = last use: move it out
  std::vector<int> out;
  IValue constant;
  std::string name;
  mutable int slot = -1;  // GetAttr/SetAttr cache
  std::vector<CodeBlock> blocks;
  const Node* node = nullptr;
};

struct CodeBlock {
  std::vector<int> params;
  std::vector<Instr> instrs;
  std::vector<int> rets;  // ~reg = move
};

}  // namespace

struct Code {
  std::shared_ptr<Graph> graph;
  CodeBlock top;
  int num_regs = 0;
};

namespace {

IKind prim_kind(const std::string& k) {
  static const std::unordered_map<std::string, IKind> table = {
      {"prim::Constant", IKind::Constant},
      {"prim::GetAttr", IKind::GetAttr},
      {"prim::SetAttr", IKind::SetAttr},
      {"prim::ListConstruct", IKind::ListConstruct},
      {"prim::ListUnpack", IKind::ListUnpack},
      {"prim::TupleConstruct", IKind::TupleConstruct},
      {"prim::TupleUnpack", IKind::TupleUnpack},
      {"prim::TupleIndex", IKind::TupleIndex},
      {"prim::If", IKind::If},
      {"prim::Loop", IKind::Loop},
      {"prim::CallMethod", IKind::CallMethod},
      {"prim::RaiseException", IKind::Raise},
      {"prim::Print", IKind::Print},
      {"prim::unchecked_cast", IKind::Identity},
      {"prim::Uninitialized", IKind::Uninitialized},
      {"prim::GuardBool", IKind::GuardBool},
      {"prim::GuardTensorBool", IKind::GuardTensorBool},
      {"prim::GuardItem", IKind::GuardItem},
      {"prim::GuardValues", IKind::GuardValues},
      {"prim::GuardConstant", IKind::GuardConstant},
  };
  auto it = table.find(k);
  EMBER_CHECK(it != table.end(), "ember.jit: the interpreter cannot run node kind '", k,
              "' (no registered op of that name)");
  return it->second;
}

struct Compiler {
  std::unordered_map<const Value*, int> reg;
  int next = 0;

  int reg_of(const Value* v) {
    auto it = reg.find(v);
    if (it != reg.end()) return it->second;
    reg[v] = next;
    return next++;
  }

  void compile_block(const Block* b, CodeBlock& cb) {
    for (Value* p : b->inputs()) cb.params.push_back(reg_of(p));
    for (Node* n : *b) {
      Instr ins;
      ins.node = n;
      if (n->op) {
        ins.kind = IKind::Op;
        ins.op = n->op;
      } else {
        ins.kind = prim_kind(n->kind);
      }
      for (Value* v : n->inputs()) ins.in.push_back(reg_of(v));
      for (Value* v : n->outputs()) ins.out.push_back(reg_of(v));
      switch (ins.kind) {
        case IKind::Constant:
          ins.constant = n->attr("value");
          break;
        case IKind::GetAttr:
        case IKind::SetAttr:
        case IKind::CallMethod:
          ins.name = n->attr("name").toStringRef();
          break;
        case IKind::TupleIndex:
          ins.slot = int(n->attr("index").toInt());
          break;
        case IKind::Raise:
        case IKind::GuardBool:
        case IKind::GuardTensorBool:
        case IKind::GuardItem:
        case IKind::GuardValues:
        case IKind::GuardConstant:
          if (n->has_attr("value")) ins.constant = n->attr("value");
          break;
        default:
          break;
      }
      for (Block* sub : n->blocks()) {
        ins.blocks.emplace_back();
        compile_block(sub, ins.blocks.back());
      }
      cb.instrs.push_back(std::move(ins));
    }
    for (Value* v : b->outputs()) cb.rets.push_back(reg_of(v));
  }
};

// Marks the last read of each register defined in the same block (as ~reg), so the
// interpreter moves it out and the tensor is freed as early as eager Python frees it.
void mark_moves(CodeBlock& cb, const std::vector<bool>* outer_defined_unused = nullptr) {
  (void)outer_defined_unused;
  std::unordered_map<int, bool> local;  // registers defined in this block
  for (int p : cb.params) local[p] = true;
  for (const Instr& i : cb.instrs)
    for (int o : i.out) local[o] = true;
  std::unordered_map<int, bool> seen;  // read later in this block (or nested)
  std::function<void(const CodeBlock&)> note_reads = [&](const CodeBlock& b) {
    for (const Instr& i : b.instrs) {
      for (int r : i.in) seen[r < 0 ? ~r : r] = true;
      for (const CodeBlock& s : i.blocks) note_reads(s);
    }
    for (int r : b.rets) seen[r < 0 ? ~r : r] = true;
  };
  for (int& r : cb.rets) {
    if (local.count(r) && !seen.count(r)) {
      seen[r] = true;
      r = ~r;
    }
  }
  for (auto it = cb.instrs.rbegin(); it != cb.instrs.rend(); ++it) {
    Instr& ins = *it;
    for (const CodeBlock& s : ins.blocks) note_reads(s);
    // Inputs read twice by one op stay copies (the op may see both).
    for (size_t k = ins.in.size(); k-- > 0;) {
      int r = ins.in[k];
      bool twice = false;
      for (size_t j = 0; j < ins.in.size(); ++j)
        if (j != k && (ins.in[j] == r || ins.in[j] == ~r)) twice = true;
      if (local.count(r) && !seen.count(r) && !twice && ins.kind != IKind::Loop) {
        ins.in[k] = ~r;
      }
      seen[r < 0 ? ~r : r] = true;
    }
  }
  for (Instr& ins : cb.instrs)
    for (CodeBlock& s : ins.blocks) mark_moves(s);
}

inline IValue take(std::vector<IValue>& regs, int r) {
  if (r < 0) return std::move(regs[size_t(~r)]);
  return regs[size_t(r)];
}
inline const IValue& peek(const std::vector<IValue>& regs, int r) {
  return regs[size_t(r < 0 ? ~r : r)];
}

[[noreturn]] void guard_failed(const Instr& ins, const std::string& got) {
  const Node* n = ins.node;
  std::string what = n->has_attr("what") ? n->attr("what").toStringRef() : n->kind;
  raise(ErrorKind::Runtime, "ember.jit: guard failed",
        n->source.empty() ? std::string() : " at " + n->source, ": when traced, ", what, " gave ",
        ins.constant.repr(), ", but this call gives ", got,
        ". The trace recorded only the path that value led to; trace again with inputs that "
        "take this path, or script the function (ember.jit.script) to keep every branch.");
}

bool item_equal(const IValue& a, const Scalar& b) {
  if (a.is_bool()) return a.toBool() == b.to_bool();
  if (a.is_int() && !b.is_floating()) return a.toInt() == b.to_int();
  double x = a.toDouble(), y = b.to_double();
  return x == y || (x != x && y != y);
}

void exec_block(const CodeBlock& cb, std::vector<IValue>& regs, Stack& stack);

void exec_instr(const Instr& ins, std::vector<IValue>& regs, Stack& stack) {
  switch (ins.kind) {
    case IKind::Op: {
      const size_t base = stack.size();
      for (int r : ins.in) stack.push_back(take(regs, r));
      try {
        ins.op->fn(stack);
      } catch (const Error& e) {
        stack.resize(base);
        const Node* n = ins.node;
        std::string msg = e.what();
        if (msg.find("\n  (in ember.jit graph at") == std::string::npos && !n->source.empty())
          msg += "\n  (in ember.jit graph at " + n->source + ", op " + n->kind + ")";
        throw Error(e.kind(), msg);
      }
      EMBER_CHECK(stack.size() == base + ins.out.size(), "ember.jit: ", ins.op->qualified_name(),
                  " produced ", stack.size() - base, " values, its schema declares ",
                  ins.out.size());
      for (size_t k = ins.out.size(); k-- > 0;) {
        regs[size_t(ins.out[k])] = std::move(stack.back());
        stack.pop_back();
      }
      return;
    }
    case IKind::Constant:
      regs[size_t(ins.out[0])] = ins.constant;
      return;
    case IKind::GetAttr: {
      const auto& obj = peek(regs, ins.in[0]).toObject();
      if (ins.slot < 0 || ins.slot >= int(obj->slots.size()) ||
          obj->type->attr_names[size_t(ins.slot)] != ins.name) {
        ins.slot = obj->type->slot(ins.name);
        EMBER_CHECK(ins.slot >= 0, "ember.jit: module '", obj->type->name, "' has no attribute '",
                    ins.name, "'");
      }
      IValue v = obj->slots[size_t(ins.slot)];
      if (ins.in[0] < 0) regs[size_t(~ins.in[0])] = IValue();
      regs[size_t(ins.out[0])] = std::move(v);
      return;
    }
    case IKind::SetAttr: {
      const auto& obj = peek(regs, ins.in[0]).toObject();
      obj->set_attr(ins.name, take(regs, ins.in[1]));
      return;
    }
    case IKind::ListConstruct: {
      std::vector<IValue> items;
      items.reserve(ins.in.size());
      for (int r : ins.in) items.push_back(take(regs, r));
      TypePtr t = ins.node->output()->type;
      TypePtr elem = t->kind == Type::Kind::List ? t->elements[0] : Type::get(Type::Kind::Any);
      regs[size_t(ins.out[0])] = IValue::list(elem, std::move(items));
      return;
    }
    case IKind::TupleConstruct: {
      std::vector<IValue> items;
      items.reserve(ins.in.size());
      for (int r : ins.in) items.push_back(take(regs, r));
      regs[size_t(ins.out[0])] = IValue::tuple(std::move(items));
      return;
    }
    case IKind::ListUnpack:
    case IKind::TupleUnpack: {
      IValue v = take(regs, ins.in[0]);
      const auto& items = v.is_list() ? v.toListRef() : v.toTupleRef();
      EMBER_CHECK(items.size() == ins.out.size(), "ember.jit: expected ", ins.out.size(),
                  " values to unpack, got ", items.size(),
                  ins.node->source.empty() ? "" : " (at " + ins.node->source + ")");
      for (size_t k = 0; k < items.size(); ++k) regs[size_t(ins.out[k])] = items[k];
      return;
    }
    case IKind::TupleIndex: {
      const IValue& t = peek(regs, ins.in[0]);
      regs[size_t(ins.out[0])] = t.toTupleRef().at(size_t(ins.slot));
      return;
    }
    case IKind::If: {
      bool c = peek(regs, ins.in[0]).toBool();
      const CodeBlock& b = ins.blocks[c ? 0 : 1];
      exec_block(b, regs, stack);
      for (size_t k = 0; k < ins.out.size(); ++k) regs[size_t(ins.out[k])] = take(regs, b.rets[k]);
      return;
    }
    case IKind::Loop: {
      // prim::Loop(max_trip_count, initial_condition, carried...): the body block takes
      // (i, carried...) and returns (condition, carried...).
      int64_t max_trip = peek(regs, ins.in[0]).toInt();
      bool cond = peek(regs, ins.in[1]).toBool();
      const CodeBlock& body = ins.blocks[0];
      size_t nc = ins.in.size() - 2;
      std::vector<IValue> carried(nc);
      for (size_t k = 0; k < nc; ++k) carried[k] = peek(regs, ins.in[2 + k]);
      for (int64_t i = 0; cond && i < max_trip; ++i) {
        regs[size_t(body.params[0])] = IValue(i);
        for (size_t k = 0; k < nc; ++k) regs[size_t(body.params[1 + k])] = std::move(carried[k]);
        exec_block(body, regs, stack);
        cond = peek(regs, body.rets[0]).toBool();
        for (size_t k = 0; k < nc; ++k) carried[k] = take(regs, body.rets[1 + k]);
      }
      for (size_t k = 0; k < nc; ++k) regs[size_t(ins.out[k])] = std::move(carried[k]);
      return;
    }
    case IKind::CallMethod: {
      std::shared_ptr<Object> obj = peek(regs, ins.in[0]).toObject();
      std::vector<IValue> args;
      for (size_t k = 1; k < ins.in.size(); ++k) args.push_back(take(regs, ins.in[k]));
      IValue r = run_method(obj, ins.name, std::move(args));
      if (ins.out.size() == 1) {
        regs[size_t(ins.out[0])] = std::move(r);
      } else {
        const auto& items = r.toTupleRef();
        for (size_t k = 0; k < ins.out.size(); ++k) regs[size_t(ins.out[k])] = items[k];
      }
      return;
    }
    case IKind::Raise: {
      std::string msg = ins.in.empty() ? "Exception" : peek(regs, ins.in[0]).toStringRef();
      std::string cls = ins.node->has_attr("exception") ? ins.node->attr("exception").toStringRef()
                                                        : "RuntimeError";
      ErrorKind k = cls == "ValueError"   ? ErrorKind::Value
                    : cls == "TypeError"  ? ErrorKind::Type
                    : cls == "IndexError" ? ErrorKind::Index
                                          : ErrorKind::Runtime;
      if (cls == "AssertionError") msg = "AssertionError: " + msg;
      throw Error(k, msg);
    }
    case IKind::Print: {
      std::string s;
      for (size_t k = 0; k < ins.in.size(); ++k) {
        const IValue& v = peek(regs, ins.in[k]);
        s += (k ? " " : "") + (v.is_string() ? v.toStringRef() : v.repr());
      }
      std::cout << s << std::endl;
      return;
    }
    case IKind::Identity:
      regs[size_t(ins.out[0])] = take(regs, ins.in[0]);
      return;
    case IKind::Uninitialized:
      regs[size_t(ins.out[0])] = IValue();
      return;
    case IKind::GuardBool: {
      bool v = peek(regs, ins.in[0]).toBool();
      if (v != ins.constant.toBool()) guard_failed(ins, v ? "True" : "False");
      return;
    }
    case IKind::GuardTensorBool: {
      const Tensor& t = peek(regs, ins.in[0]).toTensor();
      bool v = t.item().to_bool();
      if (v != ins.constant.toBool()) guard_failed(ins, v ? "True" : "False");
      return;
    }
    case IKind::GuardItem: {
      const Tensor& t = peek(regs, ins.in[0]).toTensor();
      Scalar v = t.item();
      if (!item_equal(ins.constant, v)) guard_failed(ins, IValue(v).repr());
      return;
    }
    case IKind::GuardValues: {
      const Tensor& t = peek(regs, ins.in[0]).toTensor();
      const Tensor& ref = ins.constant.toTensor();
      bool same = t.sizes() == ref.sizes() && t.dtype() == ref.dtype() && equal(t, ref);
      if (!same) guard_failed(ins, "other values");
      return;
    }
    case IKind::GuardConstant: {
      const IValue& v = peek(regs, ins.in[0]);
      if (!v.same_constant(ins.constant)) guard_failed(ins, v.repr());
      return;
    }
  }
}

void exec_block(const CodeBlock& cb, std::vector<IValue>& regs, Stack& stack) {
  for (const Instr& ins : cb.instrs) exec_instr(ins, regs, stack);
}

}  // namespace

std::shared_ptr<Code> compile(std::shared_ptr<Graph> g) {
  auto code = std::make_shared<Code>();
  code->graph = g;
  Compiler c;
  c.compile_block(g->block(), code->top);
  mark_moves(code->top);
  code->num_regs = c.next;
  return code;
}

std::vector<IValue> run(const Code& code, std::vector<IValue> inputs) {
  const CodeBlock& top = code.top;
  EMBER_CHECK(inputs.size() == top.params.size(), "ember.jit: the graph takes ", top.params.size(),
              " inputs, got ", inputs.size());
  std::vector<IValue> regs(size_t(code.num_regs));
  for (size_t i = 0; i < inputs.size(); ++i) regs[size_t(top.params[i])] = std::move(inputs[i]);
  Stack stack;
  stack.reserve(16);
  exec_block(top, regs, stack);
  std::vector<IValue> out;
  out.reserve(top.rets.size());
  for (int r : top.rets) out.push_back(take(regs, r));
  return out;
}

namespace {
IValue pack(std::vector<IValue> outs) {
  if (outs.size() == 1) return std::move(outs[0]);
  return IValue::tuple(std::move(outs));
}
}  // namespace

std::shared_ptr<Graph> optimized_graph(Function& fn, const std::shared_ptr<Object>& self) {
  if (fn.optimized) return fn.optimized;
  std::shared_ptr<Graph> g = fn.graph->copy();
  if (self) inline_methods(*g, self);
  optimize(*g);
  fn.optimized = g;
  return g;
}

IValue run_method(const std::shared_ptr<Object>& obj, const std::string& name,
                  std::vector<IValue> args) {
  std::shared_ptr<Function> fn = obj->method(name);
  if (!fn->code) fn->code = compile(optimized_graph(*fn, obj));
  args.insert(args.begin(), IValue(obj));
  return pack(run(*fn->code, std::move(args)));
}

IValue run_function(Function& fn, std::vector<IValue> args) {
  if (!fn.code) fn.code = compile(optimized_graph(fn, nullptr));
  return pack(run(*fn.code, std::move(args)));
}

}  // namespace ember::jit
