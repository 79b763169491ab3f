// The operator registry: every op a graph can call, with its schema, version and a
// boxed entry that calls the ordinary front-end. See Note [Operator registry].
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ember/jit/ivalue.h"

namespace ember::jit {

// Note [Operator registry]
// An op is registered once, where its front-end is declared traceable (the
// EMBER_TRACE line at the top of the front-end, jit/trace_hook.h): its schema in
// TorchScript's syntax ("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1)
// -> Tensor"), and a boxed function that pops the arguments from a Stack, calls the
// front-end and pushes the results. The tracer records nodes of these ops, the
// interpreter runs them, the script compiler resolves calls against their schemas,
// the archive lists them with their version, and the ONNX exporter maps them by name.
// Ops whose front-end takes a non-value argument (the elementwise table's UnaryOp) are
// registered from their table (jit/ops_elementwise.cpp).
//
// A schema's version starts at 1 and is bumped when the op's arguments or meaning
// change; an archive that names a version newer than the registry's is refused
// (Note [Archive format], archive.cpp).

struct Argument {
  std::string name;
  TypePtr type;
  std::optional<IValue> default_value;
  bool kwarg_only = false;
  int list_size = 0;  // int[2]: a single int is broadcast to this many
};

struct FunctionSchema {
  std::string name;      // "aten::add"
  std::string overload;  // "Tensor" (may be empty)
  std::vector<Argument> arguments;
  std::vector<Argument> returns;
  /// "aten::add.Tensor"
  std::string qualified_name() const { return overload.empty() ? name : name + "." + overload; }
  std::string str() const;
};

/// Parses TorchScript's schema syntax; raises ember::Error on malformed text.
FunctionSchema parse_schema(const std::string& text);
/// Parses a type annotation: "Tensor", "int[]", "Tensor?[]", "(Tensor, int)".
TypePtr parse_type(const std::string& text);

/// What running a node may do besides computing its outputs (for DCE and CSE).
enum class Effect : uint8_t {
  Pure,     // outputs depend only on inputs; removable when unused, mergeable
  Random,   // draws from the generator: never merged or folded, removable when unused
  Mutates,  // writes into an input (in-place, out=, running statistics): never removed
};

using BoxedFn = std::function<void(Stack&)>;

struct Operator {
  FunctionSchema schema;
  BoxedFn fn;
  int version = 1;
  Effect effect = Effect::Pure;
  /// The C++ argument kinds of the front-end the boxed function calls; checked against
  /// the schema when registered (registration_errors()).
  std::string cpp_signature;
  const std::string& name() const { return schema.name; }
  std::string qualified_name() const { return schema.qualified_name(); }
  size_t num_inputs() const { return schema.arguments.size(); }
  size_t num_outputs() const { return schema.returns.size(); }
};

/// Registers an op (at static-initialization time). Returns the stored operator.
const Operator* register_operator(const std::string& schema, BoxedFn fn, int version = 1,
                                  std::optional<Effect> effect = std::nullopt,
                                  const std::string& cpp_signature = "");
/// The op registered as `qualified_name` ("aten::add.Tensor"), or null.
const Operator* find_operator(const std::string& qualified_name);
/// The op or an ember::Error naming it.
const Operator* get_operator(const std::string& qualified_name);
/// Every overload of `name` ("aten::add").
std::vector<const Operator*> operators_named(const std::string& name);
/// All registered ops, in registration order.
std::vector<const Operator*> all_operators();
/// Schemas whose declared arguments disagree with the front-end they box (a test fails
/// on any); each entry names the op and the mismatch.
std::vector<std::string> registration_errors();
/// Records a mismatch found while registering (used by the boxing templates).
void add_registration_error(const std::string& msg);

}  // namespace ember::jit
