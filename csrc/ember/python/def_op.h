// def_op: one declaration binds an op as the function ember.<name>(input, ...),
// the method Tensor.<name>(...), the in-place Tensor.<name>_(...) and the
// function's out= keyword, all from one lambda whose first parameter is the
// input tensor. Semantics stay in ops/: the in-place form is
// ember::inplace_composite and out= is ember::write_out.
#pragma once
#include <pybind11/pybind11.h>

#include <string>
#include <type_traits>
#include <vector>

#include "ember/ops/surface.h"
#include "ember/python/bind.h"

namespace ember::python {

/// Which forms def_op makes.
enum OpForms : unsigned {
  kFunction = 1,  // ember.name(input, ...)
  kMethod = 2,    // Tensor.name(...)
  kInplace = 4,   // Tensor.name_(...)
  kOut = 8,       // ember.name(..., out=)
  kFnMethod = kFunction | kMethod,
  kAll = kFunction | kMethod | kInplace | kOut,
};

namespace detail_def_op {

template <typename T>
void collect_tensor(std::vector<const Tensor*>& v, const T& x) {
  if constexpr (std::is_same_v<std::decay_t<T>, Tensor>) v.push_back(&x);
}

template <typename... E>
constexpr bool has_kw_only() {
  return (std::is_same_v<std::decay_t<E>, py::kw_only> || ...);
}

// A result as a Python object / as the one tensor an in-place or out= form writes.
template <typename R>
py::object to_object(R&& r) {
  if constexpr (std::is_base_of_v<py::handle, std::decay_t<R>>)
    return py::reinterpret_borrow<py::object>(r);
  else
    return py::cast(std::forward<R>(r));
}
template <typename R>
Tensor to_tensor(R&& r, const std::string& name) {
  if constexpr (std::is_convertible_v<R, Tensor>) {
    return r;
  } else {
    raise(ErrorKind::Type, name, ": this op has no single-tensor result to write");
  }
}

template <typename F, typename Sig>
struct Binder;

template <typename F, typename R, typename Self, typename... Args>
struct Binder<F, R(Self, Args...)> {
  // ember.name(input, ..., *, out=None)
  static auto with_out(F f, std::string name) {
    return [f, name](Self self, Args... args, py::handle out) -> py::object {
      if (!out_arg(out, name.c_str())) return to_object(f(self, args...));
      return result_or_out(to_tensor(f(self, args...), name), out, name.c_str());
    };
  }
  // Tensor.name_(...): self <- f(self, ...)
  static auto inplace(F f, std::string name) {
    return [f, name](const Tensor& self, Args... args) -> Tensor {
      std::vector<const Tensor*> others;
      (collect_tensor(others, args), ...);
      return inplace_composite(self, name.c_str(), others,
                               [&](const Tensor& s) { return to_tensor(f(s, args...), name); });
    };
  }
};

}  // namespace detail_def_op

/// Binds `f` (first parameter: the input tensor) as the forms in `forms`; `extra` are the
/// pybind11 argument annotations of the parameters after the input. Existing attributes of
/// the same name are replaced, not overloaded.
template <typename F, typename... Extra>
void def_op(py::module_& m, py::class_<Tensor>& cls, const char* name, unsigned forms, F f,
            const Extra&... extra) {
  using Sig = py::detail::function_signature_t<F>;
  using Bind = detail_def_op::Binder<F, Sig>;
  std::string n(name);
  if (forms & kFunction) {
    if (forms & kOut) {
      if constexpr (detail_def_op::has_kw_only<Extra...>())
        m.attr(name) = py::cpp_function(Bind::with_out(f, n), py::name(name), py::scope(m),
                                        py::arg("input"), extra..., py::arg("out") = py::none());
      else
        m.attr(name) =
            py::cpp_function(Bind::with_out(f, n), py::name(name), py::scope(m), py::arg("input"),
                             extra..., py::kw_only(), py::arg("out") = py::none());
    } else {
      m.attr(name) = py::cpp_function(f, py::name(name), py::scope(m), py::arg("input"), extra...);
    }
  }
  if (forms & kMethod)
    cls.attr(name) = py::cpp_function(f, py::name(name), py::is_method(cls), extra...);
  if (forms & kInplace) {
    std::string in = n + "_";
    cls.attr(in.c_str()) =
        py::cpp_function(Bind::inplace(f, in), py::name(in.c_str()), py::is_method(cls), extra...);
  }
}

/// A function with no input tensor (factories, list ops): ember.name only.
template <typename F, typename... Extra>
void def_fn(py::module_& m, const char* name, F f, const Extra&... extra) {
  m.attr(name) = py::cpp_function(f, py::name(name), py::scope(m), extra...);
}

}  // namespace ember::python
