// Graph passes: inlining, dead-code elimination, common-subexpression elimination,
// constant folding, no-op removal and freezing. See Note [Graph passes].
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "ember/jit/ir.h"
#include "ember/jit/object.h"

namespace ember::jit {

// Note [Graph passes]
// Passes rewrite a graph in place and keep its meaning for every input, not only the
// traced one: they never trust the shapes or dtypes the tracer printed.
// - inline_methods: prim::CallMethod on a submodule known from `self` becomes the
//   callee's nodes (recursively); parameters are still read through prim::GetAttr, so
//   updates to them are seen.
// - eliminate_dead_code: removes nodes whose results are unused and that have no
//   effect. Effects: ops that mutate an input (in-place, out=, batch norm's running
//   statistics), random ops (removing one would shift the generator stream that later
//   ops draw from), guards, raise/print, attribute writes and method calls.
// - eliminate_common_subexpressions: merges identical pure nodes (same op, inputs and
//   attributes), a dominating node standing for later ones. Values that may alias a
//   tensor some node mutates are left alone (alias classes through view-like ops).
// - fold_constants: evaluates pure nodes whose inputs are all constants (once, with
//   grad mode off), and prim::If with a constant condition; never for random ops or
//   for results that may later be mutated.
// - remove_noops: views and casts that provably change nothing (eval-mode dropout,
//   t(t(x)), unsqueeze(d) then squeeze(d), a cast to the dtype a cast just made).
// - freeze: parameters and buffers read through GetAttr become constants (then folded).
// The fusion pass of ember.compile plugs in through register_graph_pass: registered
// passes run at the end of optimize(), in registration order.

void inline_methods(Graph& g, const std::shared_ptr<Object>& self);
void eliminate_dead_code(Graph& g);
void eliminate_common_subexpressions(Graph& g);
void fold_constants(Graph& g);
void remove_noops(Graph& g);
/// GetAttr chains from `self` (graph input 0) that reach a tensor become constants.
void freeze_attributes(Graph& g, const std::shared_ptr<Object>& self);
/// The default pipeline the interpreter runs before compiling a graph.
void optimize(Graph& g);

using GraphPass = std::function<void(Graph&)>;
/// Adds a pass to the end of optimize() (the hook for ember.compile's fusion).
void register_graph_pass(const std::string& name, GraphPass pass);
/// Removes a registered pass; returns false when there was none of that name.
bool unregister_graph_pass(const std::string& name);

/// True when the node has an effect besides its outputs (see the Note).
bool has_side_effects(const Node* n);

}  // namespace ember::jit
