// Converting a front-end's C++ arguments and results to and from IValues: what the
// boxed entry of a registered op does (Note [Operator registry]).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/jit/ivalue.h"

namespace ember {
class GeneratorImpl;
using Generator = std::shared_ptr<GeneratorImpl>;  // as ops/random.h
}  // namespace ember

namespace ember::jit {

template <typename... T>
struct TypeList {};

/// decltype(arg_types(a, b)) names the decayed argument types of a call (unevaluated).
template <typename... T>
TypeList<std::decay_t<T>...> arg_types(const T&...);

// ---- unboxing: IValue -> C++ argument ----------------------------------------------

template <typename T, typename = void>
struct Unbox;

template <>
struct Unbox<Tensor> {
  // None unboxes as an undefined tensor: front-ends that take `const Tensor&` for an
  // optional tensor (a missing bias) test defined().
  static const Tensor& get(const IValue& v) {
    static const Tensor undefined;
    return v.is_none() ? undefined : v.toTensor();
  }
  static std::string kind() { return "Tensor"; }
};
template <>
struct Unbox<int64_t> {
  static int64_t get(const IValue& v) { return v.toInt(); }
  static std::string kind() { return "int"; }
};
template <>
struct Unbox<double> {
  static double get(const IValue& v) { return v.toDouble(); }
  static std::string kind() { return "float"; }
};
template <>
struct Unbox<bool> {
  static bool get(const IValue& v) { return v.toBool(); }
  static std::string kind() { return "bool"; }
};
template <>
struct Unbox<Scalar> {
  static Scalar get(const IValue& v) { return v.toScalar(); }
  static std::string kind() { return "Scalar"; }
};
template <>
struct Unbox<Shape> {
  static Shape get(const IValue& v) { return v.toShape(); }
  static std::string kind() { return "int[]"; }
};
template <>
struct Unbox<std::vector<int64_t>> {
  static std::vector<int64_t> get(const IValue& v) {
    Shape s = v.toShape();
    return std::vector<int64_t>(s.begin(), s.end());
  }
  static std::string kind() { return "int[]"; }
};
template <>
struct Unbox<std::vector<double>> {
  static std::vector<double> get(const IValue& v) {
    std::vector<double> out;
    for (const IValue& x : v.toListRef()) out.push_back(x.toDouble());
    return out;
  }
  static std::string kind() { return "float[]"; }
};
template <>
struct Unbox<std::vector<bool>> {
  static std::vector<bool> get(const IValue& v) {
    std::vector<bool> out;
    for (const IValue& x : v.toListRef()) out.push_back(x.toBool());
    return out;
  }
  static std::string kind() { return "bool[]"; }
};
template <>
struct Unbox<std::vector<Tensor>> {
  static std::vector<Tensor> get(const IValue& v) { return v.toTensorVector(); }
  static std::string kind() { return "Tensor[]"; }
};
template <>
struct Unbox<std::vector<std::optional<Tensor>>> {
  static std::vector<std::optional<Tensor>> get(const IValue& v) {
    std::vector<std::optional<Tensor>> out;
    for (const IValue& x : v.toListRef())
      out.push_back(x.is_none() ? std::optional<Tensor>() : std::optional<Tensor>(x.toTensor()));
    return out;
  }
  static std::string kind() { return "Tensor?[]"; }
};
template <>
struct Unbox<std::string> {
  static const std::string& get(const IValue& v) { return v.toStringRef(); }
  static std::string kind() { return "str"; }
};
template <>
struct Unbox<DType> {
  static DType get(const IValue& v) { return v.toDType(); }
  static std::string kind() { return "ScalarType"; }
};
template <>
struct Unbox<Device> {
  static Device get(const IValue& v) { return v.toDevice(); }
  static std::string kind() { return "Device"; }
};
// Enums of front-end options (Reduction, MemoryFormat, ...) travel as ints, as in TorchScript.
template <typename E>
struct Unbox<E, std::enable_if_t<std::is_enum_v<E>>> {
  static E get(const IValue& v) { return E(v.toInt()); }
  static std::string kind() { return "int"; }
};
// A graph never holds a generator: random ops draw from the default one.
template <>
struct Unbox<Generator> {
  static Generator get(const IValue& v) {
    EMBER_CHECK(v.is_none(), "ember.jit: a generator cannot be passed to a graph's random op");
    return nullptr;
  }
  static std::string kind() { return "Any"; }
};
template <typename T>
struct Unbox<std::optional<T>> {
  static std::optional<T> get(const IValue& v) {
    if (v.is_none()) return std::nullopt;
    return std::optional<T>(Unbox<T>::get(v));
  }
  static std::string kind() { return Unbox<T>::kind() + "?"; }
};

template <typename... A>
std::string cpp_kinds(TypeList<A...>) {
  std::string s;
  ((s += (s.empty() ? "" : ", ") + Unbox<A>::kind()), ...);
  return s;
}

// ---- boxing: C++ result -> IValues pushed on the stack -----------------------------

inline void push_result(Stack& s, const Tensor& t) { s.emplace_back(t); }
inline void push_result(Stack& s, const std::vector<Tensor>& v) { s.emplace_back(v); }
inline void push_result(Stack& s, int64_t v) { s.emplace_back(v); }
inline void push_result(Stack& s, double v) { s.emplace_back(v); }
inline void push_result(Stack& s, bool v) { s.emplace_back(v); }
inline void push_result(Stack& s, const Scalar& v) { s.emplace_back(v); }
inline void push_result(Stack& s, const Shape& v) { s.emplace_back(v); }
inline void push_result(Stack& s, const IValue& v) { s.push_back(v); }
template <typename A, typename B>
void push_result(Stack& s, const std::pair<A, B>& p) {
  push_result(s, p.first);
  push_result(s, p.second);
}
template <typename... T>
void push_result(Stack& s, const std::tuple<T...>& t) {
  std::apply([&](const auto&... x) { (push_result(s, x), ...); }, t);
}

template <typename R>
constexpr size_t result_count() {
  if constexpr (std::is_void_v<R>)
    return 0;
  else
    return 1;
}

namespace detail {
template <typename... A, typename F, size_t... I>
void call_unboxed_impl(Stack& s, F&& f, std::index_sequence<I...>) {
  const size_t base = s.size() - sizeof...(A);
  using R = decltype(f(Unbox<A>::get(s[base + I])...));
  if constexpr (std::is_void_v<R>) {
    f(Unbox<A>::get(s[base + I])...);
    s.resize(base);
  } else {
    std::decay_t<R> r = f(Unbox<A>::get(s[base + I])...);  // by value: may alias an input
    s.resize(base);
    push_result(s, r);
  }
}
}  // namespace detail

/// Pops sizeof...(A) arguments, calls f with them unboxed, pushes its results.
template <typename... A, typename F>
void call_unboxed(Stack& s, TypeList<A...>, F&& f) {
  detail::call_unboxed_impl<A...>(s, std::forward<F>(f), std::index_sequence_for<A...>{});
}

}  // namespace ember::jit
