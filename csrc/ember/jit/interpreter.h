// The interpreter: runs a graph by calling the ordinary op front-ends. See
// Note [Interpreter].
#pragma once
#include <memory>
#include <vector>

#include "ember/jit/ir.h"
#include "ember/jit/object.h"

namespace ember::jit {

// Note [Interpreter]
// A graph is compiled once into Code: every Value gets a register, every node an
// instruction holding what it needs at run time (the Operator's boxed entry, register
// numbers, a constant, an attribute slot cache, nested code for prim::If / prim::Loop
// blocks). Running a Code fills a register file from the inputs and executes the
// instructions in order. An op instruction pushes its argument registers on a stack,
// calls the op's boxed entry (which calls the front-end, exactly as eager Python would,
// so autograd, autocast and the profiler see ordinary ops) and pops the results into
// their registers. A register read for the last time in its own block is moved out, so
// intermediate tensors die as soon as eager Python's would. Errors raised by an op
// keep their kind and get the failing node's source line appended.
//
// The prim:: nodes the interpreter runs itself: Constant, GetAttr, SetAttr,
// ListConstruct, ListUnpack, TupleConstruct, TupleUnpack, TupleIndex, If, Loop,
// CallMethod, RaiseException, Print, unchecked_cast, Uninitialized and the guards
// (GuardBool, GuardTensorBool, GuardItem, GuardValues, GuardConstant).

struct Code;

/// Compiles `g` (raises on a node the interpreter cannot run).
std::shared_ptr<Code> compile(std::shared_ptr<Graph> g);
/// Runs compiled code; `inputs` match the graph's inputs (self first for a method).
std::vector<IValue> run(const Code& code, std::vector<IValue> inputs);
/// Runs a method of `obj` on `args` (self is prepended); returns its single output (a
/// tuple for several).
IValue run_method(const std::shared_ptr<Object>& obj, const std::string& name,
                  std::vector<IValue> args);
/// Runs a function (no self).
IValue run_function(Function& fn, std::vector<IValue> args);

/// The graph the interpreter runs for a function: its graph with methods inlined and
/// the optimization passes applied (built once and cached in fn.optimized).
std::shared_ptr<Graph> optimized_graph(Function& fn, const std::shared_ptr<Object>& self);

}  // namespace ember::jit
