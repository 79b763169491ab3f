// What an op front-end includes to be traceable: EMBER_TRACE registers the op
// (Note [Operator registry]) and, while tracing, records the call (Note [Tracing]).
#pragma once
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/core/trace_state.h"
#include "ember/jit/boxing.h"
#include "ember/jit/operator.h"

namespace ember::jit {

struct Node;

// ---- the tracer's recording interface (tracer.cpp) ---------------------------------
// Called only at the outermost op while tracing: begin a node, add each argument
// (a tensor becomes the value the tracer knows for it, a number or list a constant),
// add the results, end (insert) it.
Node* trace_begin(const Operator* op);
void trace_arg(Node* n, const Tensor& t);
void trace_arg(Node* n, int64_t v);
void trace_arg(Node* n, double v);
void trace_arg(Node* n, bool v);
void trace_arg(Node* n, const Scalar& v);
void trace_arg(Node* n, const Shape& v);
void trace_arg(Node* n, const std::vector<int64_t>& v);
void trace_arg(Node* n, const std::vector<double>& v);
void trace_arg(Node* n, const std::vector<bool>& v);
void trace_arg(Node* n, const std::vector<Tensor>& v);
void trace_arg(Node* n, const std::vector<std::optional<Tensor>>& v);
void trace_arg(Node* n, const std::string& v);
void trace_arg(Node* n, DType v);
void trace_arg_enum(Node* n, int64_t v);
void trace_arg(Node* n, Device v);
void trace_arg_none(Node* n);
/// Raises: a random op called with an explicit generator cannot be recorded.
void trace_arg(Node* n, const Generator& g);
template <typename E, std::enable_if_t<std::is_enum_v<E>, int> = 0>
void trace_arg(Node* n, E v) {
  trace_arg_enum(n, int64_t(v));
}
template <typename T>
void trace_arg(Node* n, const std::optional<T>& v) {
  if (v)
    trace_arg(n, *v);
  else
    trace_arg_none(n);
}
void trace_result(Node* n, const Tensor& t);
void trace_result(Node* n, const std::vector<Tensor>& v);
void trace_result(Node* n, int64_t v);
void trace_result(Node* n, double v);
void trace_result(Node* n, bool v);
void trace_result(Node* n, const Scalar& v);
template <typename A, typename B>
void trace_result(Node* n, const std::pair<A, B>& p) {
  trace_result(n, p.first);
  trace_result(n, p.second);
}
template <typename... T>
void trace_result(Node* n, const std::tuple<T...>& t) {
  std::apply([&](const auto&... x) { (trace_result(n, x), ...); }, t);
}
void trace_end(Node* n);

/// Registers Tag's op when the library loads (a static member of a class template is
/// initialized at load once the template is instantiated by a trace_call below).
struct TraceTagDefaults {
  static int version() { return 1; }
  static std::optional<Effect> effect() { return std::nullopt; }
};
template <typename Tag>
struct AutoRegister {
  static const Operator* const op;
};
template <typename Tag>
const Operator* const AutoRegister<Tag>::op = register_operator(
    Tag::schema(), &Tag::call, Tag::version(), Tag::effect(), cpp_kinds(typename Tag::Args{}));

struct TraceDepth {
  TraceDepth() { ++trace_state::t_depth; }
  ~TraceDepth() { --trace_state::t_depth; }
};

/// Runs the front-end once more below the tracer (nested ops do not record), then
/// records one node of Tag's op with the arguments and the result.
template <typename Tag, typename F, typename... A>
decltype(auto) trace_call(F&& f, const A&... args) {
  const Operator* op = AutoRegister<Tag>::op;
  decltype(auto) r = [&]() -> decltype(auto) {
    TraceDepth depth;
    return f();
  }();
  Node* n = trace_begin(op);
  (trace_arg(n, args), ...);
  if constexpr (!std::is_void_v<std::remove_reference_t<decltype(r)>>) trace_result(n, r);
  trace_end(n);
  return r;
}

}  // namespace ember::jit

/// The first line of a traceable front-end: `EMBER_TRACE("aten::view(Tensor self, int[]
/// size) -> Tensor", view, a, shape);` names the op's schema, the front-end (an
/// overload set is fine: the call resolves as the front-end's own arguments do) and its
/// arguments in schema order. See Note [Tracing] (tracer.h).
#define EMBER_TRACE(SCHEMA, FN, ...) \
  EMBER_TRACE_WITH(::ember::jit::TraceTagDefaults, SCHEMA, FN, __VA_ARGS__)

/// EMBER_TRACE with a tag base giving version()/effect() (e.g. an op whose version was bumped).
#define EMBER_TRACE_WITH(BASE, SCHEMA, FN, ...)                                         \
  struct EmberTraceTag : BASE {                                                         \
    static const char* schema() { return SCHEMA; }                                      \
    using Args = decltype(::ember::jit::arg_types(__VA_ARGS__));                        \
    static void call(::ember::jit::Stack& s) {                                          \
      ::ember::jit::call_unboxed(s, Args{}, [](const auto&... x) { return FN(x...); }); \
    }                                                                                   \
  };                                                                                    \
  if (::ember::trace_state::outermost())                                                \
  return ::ember::jit::trace_call<EmberTraceTag>(                                       \
      [&]() -> decltype(auto) { return FN(__VA_ARGS__); }, __VA_ARGS__)

/// A random op (dropout, rand, ...): never merged or folded by the passes.
namespace ember::jit {
struct RandomTag : TraceTagDefaults {
  static std::optional<Effect> effect() { return Effect::Random; }
};
struct MutatesTag : TraceTagDefaults {
  static std::optional<Effect> effect() { return Effect::Mutates; }
};
}  // namespace ember::jit
#define EMBER_TRACE_RANDOM(SCHEMA, FN, ...) \
  EMBER_TRACE_WITH(::ember::jit::RandomTag, SCHEMA, FN, __VA_ARGS__)
#define EMBER_TRACE_MUTATES(SCHEMA, FN, ...) \
  EMBER_TRACE_WITH(::ember::jit::MutatesTag, SCHEMA, FN, __VA_ARGS__)
