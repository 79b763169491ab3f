// Bindings of the elementwise ops, generated from ops.def, and the Python
// operators (+, -, *, /, //, %, **, comparisons, &, |, ^, ~) incl. reflected
// and augmented forms.
#include <pybind11/numpy.h>

#include "ember/autograd/derivatives/elementwise.h"
#include "ember/autograd/record.h"
#include "ember/ops/autocast.h"
#include "ember/ops/ops.h"
#include "ember/ops/surface.h"
#include "ember/python/bind.h"

namespace ember::python {
namespace {

// div(..., rounding_mode=None|'trunc'|'floor'), optionally into out=.
py::object div_py(const Tensor& x, const Tensor& y, py::handle mode, py::handle out) {
  const Tensor* o = out_arg(out, "div");
  if (mode.is_none()) {
    if (!o) return wrap(binary(BinaryOp::div, x, y));
    binary_out(BinaryOp::div, x, y, *o);
    return py::reinterpret_borrow<py::object>(out);
  }
  if (!py::isinstance<py::str>(mode))
    raise(ErrorKind::Type, "div(): argument 'rounding_mode' must be str or None, not ",
          type_name(mode));
  return result_or_out(div_rounding(x, y, mode.cast<std::string>()), out, "div");
}

py::object unary_py(UnaryOp op, const Tensor& a, py::handle out) {
  const Tensor* o = out_arg(out, op_name(op));
  if (o) {
    unary_out(op, a, *o);
    return py::reinterpret_borrow<py::object>(out);
  }
  return wrap(unary(op, a));
}

// Applies a binary op where either side may be a Python number.
Tensor binary_any(BinaryOp op, py::handle a, py::handle b) {
  Tensor* ta = nullptr;
  Tensor* tb = nullptr;
  bool ha = as_tensor(a, ta), hb = as_tensor(b, tb);
  if (ha && hb) return binary(op, *ta, *tb);
  if (!ha && !hb)
    raise(ErrorKind::Type, op_name(op), "(): expected at least one Tensor argument, got ",
          type_name(a), " and ", type_name(b));
  Tensor x = ha ? *ta : tensor_or_scalar(a, op_name(op), "input");
  Tensor y = hb ? *tb : tensor_or_scalar(b, op_name(op), "other");
  return binary(op, x, y);
}

// For operators: NotImplemented when the other operand is not a number or tensor,
// so that Python can try the reflected method or raise its own TypeError.
bool operand(py::handle h, Tensor& out) {
  Tensor* t;
  if (as_tensor(h, t)) {
    out = *t;
    return true;
  }
  Scalar s;
  if (as_scalar(h, s)) {
    out = wrap_scalar(s);
    return true;
  }
  if (py::isinstance<py::array>(h)) {
    out = ndarray_operand(h);
    return true;
  }
  return false;
}

// Ops whose PyTorch signature takes `Tensor other` only (no Scalar overload).
bool tensor_only(BinaryOp op) {
  return op == BinaryOp::atan2 || op == BinaryOp::maximum || op == BinaryOp::minimum ||
         op == BinaryOp::logical_and || op == BinaryOp::logical_or || op == BinaryOp::logical_xor;
}

Tensor other_arg(BinaryOp op, py::handle b, const char* name) {
  if (tensor_only(op)) {
    Tensor* t;
    if (!as_tensor(b, t))
      raise(ErrorKind::Type, name, "(): argument 'other' (position 2) must be Tensor, not ",
            type_name(b));
    return *t;
  }
  return tensor_or_scalar(b, name, "other");
}

// Note [Autocast policy]: the elementwise ops in the Float32 list (exp, log, pow...)
// cast here, at the public entry, so that composites calling them internally keep
// their own dtype.
Tensor ac1(const char* op, const Tensor& a) {
  if (!autocast::active()) return a;
  return autocast::autocast_inputs(op, {a})[0];
}

// A binary table op at its public entry (function, method, Python operator): both operands
// cast together, so a Promote row (atan2) sees them both.
Tensor binary_ac(BinaryOp op, const Tensor& x, const Tensor& y) {
  if (!autocast::active()) return binary(op, x, y);
  auto c = autocast::autocast_inputs(op_name(op), {x, y});
  return binary(op, c[0], c[1]);
}
Tensor binary_ac(BinaryOp op, const Tensor& x, const Tensor& y, Scalar alpha) {
  if (!autocast::active()) return binary(op, x, y, alpha);
  auto c = autocast::autocast_inputs(op_name(op), {x, y});
  return binary(op, c[0], c[1], alpha);
}

// alpha= of add/sub: None means 1 (the ops' C++ API checks its kind, ops/ops.h).
Scalar alpha_arg(py::handle alpha, const char* op) {
  return alpha.is_none() ? Scalar(int64_t(1)) : scalar_arg(alpha, op, "alpha");
}

}  // namespace

namespace {

// The op table as data, and every unary and binary op of the table (function, method, in-place).
void bind_op_table(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);

  // The op table as data, for ember.testing's generic op tests.
  m.def("_op_table", [] {
    py::list unary, binary;
#define EMBER_ROW(n, F, k) unary.append(py::make_tuple(#n, #k));
    EMBER_UNARY_OPS(EMBER_ROW)
#undef EMBER_ROW
#define EMBER_ROW(n, F, k) binary.append(py::make_tuple(#n, #k));
    EMBER_BINARY_OPS(EMBER_ROW)
#undef EMBER_ROW
    // The derivative facts of each op (autograd/derivatives/elementwise.def):
    // name -> (node name or None, saved) for unary ops, name -> ((node names per
    // overload), save_self, save_other) for binary ops.
    py::dict ugrad, bgrad;
    auto node = [](const char* n) -> py::object {
      if (!n) return py::none();
      return py::str(n);
    };
    for (int i = 0; i < int(UnaryOp::Count); ++i) {
      UnaryOp op = UnaryOp(i);
      ugrad[op_name(op)] =
          py::make_tuple(node(autograd::derivative_node_name(op)), autograd::derivative_saves(op));
    }
    for (int i = 0; i < int(BinaryOp::Count); ++i) {
      BinaryOp op = BinaryOp(i);
      py::tuple names = py::make_tuple(node(autograd::derivative_node_name(op, 0)),
                                       node(autograd::derivative_node_name(op, 1)),
                                       node(autograd::derivative_node_name(op, 2)));
      bgrad[op_name(op)] = py::make_tuple(names, autograd::derivative_saves(op, 0),
                                          autograd::derivative_saves(op, 1));
    }
    py::dict d;
    d["unary"] = unary;
    d["binary"] = binary;
    d["unary_autograd"] = ugrad;
    d["binary_autograd"] = bgrad;
    return d;
  });

#define EMBER_BIND_UNARY(n, F, k)                                                                \
  m.def(                                                                                         \
      #n, [](const Tensor& a, py::handle out) { return unary_py(UnaryOp::n, ac1(#n, a), out); }, \
      py::arg("input"), py::kw_only(), py::arg("out") = py::none());                             \
  cls.def(#n, [](const Tensor& a) { return unary(UnaryOp::n, ac1(#n, a)); });                    \
  cls.def(#n "_", [](const Tensor& a) { return unary_(UnaryOp::n, a); });
  EMBER_UNARY_OPS(EMBER_BIND_UNARY)
#undef EMBER_BIND_UNARY

  // Only add and sub take alpha= (ops/ops.h takes_alpha); the other table ops' bindings
  // have no such parameter, so _C.pyi and help() tell the truth.
  auto bind_binary = [&](BinaryOp op) {
    const char* n = op_name(op);
    std::string in = std::string(n) + "_";
    if (takes_alpha(op)) {
      m.def(
          n,
          [op, n](py::handle a, py::handle b, py::handle alpha, py::handle out) -> py::object {
            Tensor x = tensor_or_scalar(a, n, "input");
            Tensor y = other_arg(op, b, n);
            Scalar al = alpha_arg(alpha, n);
            if (const Tensor* o = out_arg(out, n)) {
              binary_out(op, x, y, al, *o);
              return py::reinterpret_borrow<py::object>(out);
            }
            return wrap(binary_ac(op, x, y, al));
          },
          py::arg("input"), py::arg("other"), py::kw_only(), py::arg("alpha") = py::none(),
          py::arg("out") = py::none());
      cls.def(
          n,
          [op, n](const Tensor& a, py::handle b, py::handle alpha) {
            return binary_ac(op, a, other_arg(op, b, n), alpha_arg(alpha, n));
          },
          py::arg("other"), py::kw_only(), py::arg("alpha") = py::none());
      cls.def(
          in.c_str(),
          [op, in](const Tensor& a, py::handle b, py::handle alpha) {
            return binary_(op, a, other_arg(op, b, in.c_str()), alpha_arg(alpha, in.c_str()));
          },
          py::arg("other"), py::kw_only(), py::arg("alpha") = py::none());
      return;
    }
    m.def(
        n,
        [op, n](py::handle a, py::handle b, py::handle out) -> py::object {
          Tensor x = tensor_or_scalar(a, n, "input");
          Tensor y = other_arg(op, b, n);
          if (const Tensor* o = out_arg(out, n)) {
            binary_out(op, x, y, *o);
            return py::reinterpret_borrow<py::object>(out);
          }
          return wrap(binary_ac(op, x, y));
        },
        py::arg("input"), py::arg("other"), py::kw_only(), py::arg("out") = py::none());
    cls.def(
        n, [op, n](const Tensor& a, py::handle b) { return binary_ac(op, a, other_arg(op, b, n)); },
        py::arg("other"));
    cls.def(
        in.c_str(),
        [op, in](const Tensor& a, py::handle b) {
          return binary_(op, a, other_arg(op, b, in.c_str()));
        },
        py::arg("other"));
  };
#define EMBER_BIND_BINARY(n, F, k) bind_binary(BinaryOp::n);
  EMBER_BINARY_OPS(EMBER_BIND_BINARY)
#undef EMBER_BIND_BINARY
}

// div with rounding_mode, and the aliases PyTorch users reach for.
void bind_div_and_aliases(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);

  // div takes rounding_mode (the table's generic binding does not); replaced, not overloaded.
  m.attr("div") = py::cpp_function(
      [](py::handle a, py::handle b, py::handle mode, py::handle out) {
        return div_py(tensor_or_scalar(a, "div", "input"), tensor_or_scalar(b, "div", "other"),
                      mode, out);
      },
      py::name("div"), py::arg("input"), py::arg("other"), py::kw_only(),
      py::arg("rounding_mode") = py::none(), py::arg("out") = py::none());
  cls.attr("div") = py::cpp_function(
      [](const Tensor& a, py::handle b, py::handle mode) {
        return div_py(a, tensor_or_scalar(b, "div", "other"), mode, py::none());
      },
      py::name("div"), py::is_method(cls), py::arg("other"), py::kw_only(),
      py::arg("rounding_mode") = py::none());
  cls.attr("div_") = py::cpp_function(
      [](const Tensor& a, py::handle b, py::handle mode) -> Tensor {
        Tensor y = tensor_or_scalar(b, "div_", "other");
        if (mode.is_none()) return binary_(BinaryOp::div, a, y);
        if (!py::isinstance<py::str>(mode))
          raise(ErrorKind::Type, "div_(): argument 'rounding_mode' must be str or None, not ",
                type_name(mode));
        std::string md = mode.cast<std::string>();
        return inplace_composite(a, "div_", {&y},
                                 [&](const Tensor& s) { return div_rounding(s, y, md); });
      },
      py::name("div_"), py::is_method(cls), py::arg("other"), py::kw_only(),
      py::arg("rounding_mode") = py::none());

  // Aliases PyTorch users reach for.
  m.attr("multiply") = m.attr("mul");
  m.attr("subtract") = m.attr("sub");
  m.attr("divide") = m.attr("div");
  m.attr("true_divide") = m.attr("div");
  m.attr("greater") = m.attr("gt");
  m.attr("less") = m.attr("lt");
  m.attr("greater_equal") = m.attr("ge");
  m.attr("less_equal") = m.attr("le");
  m.attr("not_equal") = m.attr("ne");
  m.attr("absolute") = m.attr("abs");
  m.attr("negative") = m.attr("neg");
  m.attr("arctan2") = m.attr("atan2");
  for (const char* a :
       {"multiply", "subtract", "divide", "true_divide", "greater", "less", "greater_equal",
        "less_equal", "not_equal", "absolute", "negative", "arctan2"}) {
    std::string base = py::str(m.attr(a).attr("__name__"));
    cls.attr(a) = cls.attr(base.c_str());
    cls.attr((std::string(a) + "_").c_str()) = cls.attr((base + "_").c_str());
  }
}

// The Python operators: forward, reflected and augmented, comparisons, unary.
void bind_operators(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);

  // Python operators. Forward, reflected (b op a) and augmented (a op= b).
#define EMBER_OPERATOR(py_name, op)                                                   \
  cls.def("__" py_name "__", [](const Tensor& a, py::handle b) -> py::object {        \
    Tensor y;                                                                         \
    if (!operand(b, y)) return py::reinterpret_borrow<py::object>(Py_NotImplemented); \
    return wrap(binary_ac(op, a, y));                                                 \
  });                                                                                 \
  cls.def("__r" py_name "__", [](const Tensor& a, py::handle b) -> py::object {       \
    Tensor x;                                                                         \
    if (!operand(b, x)) return py::reinterpret_borrow<py::object>(Py_NotImplemented); \
    return wrap(binary_ac(op, x, a));                                                 \
  });                                                                                 \
  cls.def("__i" py_name "__", [](py::handle self, py::handle b) -> py::object {       \
    Tensor y;                                                                         \
    if (!operand(b, y)) return py::reinterpret_borrow<py::object>(Py_NotImplemented); \
    binary_(op, self.cast<Tensor&>(), y);                                             \
    return py::reinterpret_borrow<py::object>(self);                                  \
  });
  EMBER_OPERATOR("add", BinaryOp::add)
  EMBER_OPERATOR("sub", BinaryOp::sub)
  EMBER_OPERATOR("mul", BinaryOp::mul)
  EMBER_OPERATOR("truediv", BinaryOp::div)
  EMBER_OPERATOR("floordiv", BinaryOp::floor_divide)
  EMBER_OPERATOR("mod", BinaryOp::remainder)
  EMBER_OPERATOR("pow", BinaryOp::pow)
  EMBER_OPERATOR("and", BinaryOp::bitwise_and)
  EMBER_OPERATOR("or", BinaryOp::bitwise_or)
  EMBER_OPERATOR("xor", BinaryOp::bitwise_xor)
#undef EMBER_OPERATOR
  cls.attr("__div__") = cls.attr("__truediv__");
  // number / tensor is reciprocal(tensor) * number, as PyTorch's __rtruediv__ (its graph
  // reads MulBackward0 -> ReciprocalBackward0).
  cls.attr("__rtruediv__") = py::cpp_function(
      [](const Tensor& a, py::handle b) -> py::object {
        Tensor x;
        if (!operand(b, x)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
        if (x.impl()->wrapped_number)
          return wrap(binary(BinaryOp::mul, unary(UnaryOp::reciprocal, a), x));
        return wrap(binary(BinaryOp::div, x, a));
      },
      py::name("__rtruediv__"), py::is_method(cls));

#define EMBER_COMPARE(py_name, op)                                                    \
  cls.def("__" py_name "__", [](const Tensor& a, py::handle b) -> py::object {        \
    Tensor y;                                                                         \
    if (!operand(b, y)) return py::reinterpret_borrow<py::object>(Py_NotImplemented); \
    return wrap(binary(op, a, y));                                                    \
  });
  EMBER_COMPARE("eq", BinaryOp::eq)
  EMBER_COMPARE("ne", BinaryOp::ne)
  EMBER_COMPARE("lt", BinaryOp::lt)
  EMBER_COMPARE("le", BinaryOp::le)
  EMBER_COMPARE("gt", BinaryOp::gt)
  EMBER_COMPARE("ge", BinaryOp::ge)
#undef EMBER_COMPARE
  // Defining __eq__ resets __hash__: tensors hash by identity, as PyTorch's.
  cls.def("__hash__", [](py::handle self) { return reinterpret_cast<intptr_t>(self.ptr()) >> 4; });

  cls.def("__neg__", [](const Tensor& a) { return unary(UnaryOp::neg, a); });
  cls.def("__pos__", [](const Tensor& a) {
    EMBER_CHECK(a.dtype() != DType::Bool, "The `+` operator, on a bool tensor is not supported.");
    return a;
  });
  cls.def("__abs__", [](const Tensor& a) { return unary(UnaryOp::abs, a); });
  cls.def("__invert__", [](const Tensor& a) {
    if (is_floating(a.dtype()))
      raise(ErrorKind::Type,
            "~ (operator.invert) is only implemented on integer and Boolean-type tensors, got ",
            dtype_name(a.dtype()));
    if (a.dtype() == DType::Bool) return unary(UnaryOp::logical_not, a);
    return unary(UnaryOp::bitwise_not, a);
  });
}

// where, clamp, round(decimals=), lerp, nan_to_num and the type-promotion queries.
// Note [Operator slots]
// `a + b` is the hottest call of eager code. Bound with cls.def("__add__"), it runs
// Python's slot_nb_add, which looks __add__ up by name on the type, then pybind11's
// dispatcher (argument casters, the overload loop, the result caster). Those two layers were
// most of a 100-element add. So the number slots of the Tensor type point straight at the C
// functions below, which do what the bound methods do: the same operand conversion
// (`operand`: a tensor, a Python or NumPy number, an ndarray), NotImplemented for anything
// else, the reflected form when the tensor is the right operand (Python calls one slot for
// both), and the module's error translation. The __add__ ... methods stay in the class dict
// for explicit calls such as Tensor.__add__(a, b); a Python subclass that defines its own
// __add__ gets Python's slot for it, as usual. install_operator_slots runs after every
// cls.def of those names: assigning a dunder on the type resets its slot.
template <BinaryOp Op>
PyObject* tensor_nb_binary(PyObject* a, PyObject* b) noexcept {
  try {
    Tensor* t;
    Tensor other;
    if (as_tensor(a, t)) {
      if (!operand(b, other)) Py_RETURN_NOTIMPLEMENTED;
      return wrap(binary(Op, *t, other)).release().ptr();
    }
    if (!as_tensor(b, t) || !operand(a, other)) Py_RETURN_NOTIMPLEMENTED;
    // number / tensor is reciprocal(tensor) * number, as __rtruediv__.
    if (Op == BinaryOp::div && other.impl()->wrapped_number)
      return wrap(binary(BinaryOp::mul, unary(UnaryOp::reciprocal, *t), other)).release().ptr();
    return wrap(binary(Op, other, *t)).release().ptr();
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

template <BinaryOp Op>
PyObject* tensor_nb_inplace(PyObject* self, PyObject* b) noexcept {
  try {
    Tensor* t;
    Tensor other;
    if (!as_tensor(self, t) || !operand(b, other)) Py_RETURN_NOTIMPLEMENTED;
    binary_(Op, *t, other);
    Py_INCREF(self);
    return self;
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

void install_operator_slots(py::module_& m) {
  auto* type = reinterpret_cast<PyTypeObject*>(tensor_class(m).ptr());
  PyNumberMethods* nb = type->tp_as_number;
#define EMBER_SLOT(slot, op)                       \
  nb->nb_##slot = &tensor_nb_binary<BinaryOp::op>; \
  nb->nb_inplace_##slot = &tensor_nb_inplace<BinaryOp::op>;
  EMBER_SLOT(add, add)
  EMBER_SLOT(subtract, sub)
  EMBER_SLOT(multiply, mul)
  EMBER_SLOT(true_divide, div)
  EMBER_SLOT(floor_divide, floor_divide)
  EMBER_SLOT(remainder, remainder)
  EMBER_SLOT(and, bitwise_and)
  EMBER_SLOT(or, bitwise_or)
  EMBER_SLOT(xor, bitwise_xor)
#undef EMBER_SLOT
  PyType_Modified(type);
}

void bind_ternary_and_promotion(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);

  // where / clamp
  m.def("_where3", [](const Tensor& c, py::handle a, py::handle b) {
    return where(c, tensor_or_scalar(a, "where", "input"), tensor_or_scalar(b, "where", "other"));
  });
  auto clamp_py = [](const Tensor& a, py::handle lo, py::handle hi) {
    std::optional<Tensor> mn, mx;
    if (!lo.is_none()) mn = tensor_or_scalar(lo, "clamp", "min");
    if (!hi.is_none()) mx = tensor_or_scalar(hi, "clamp", "max");
    return clamp(a, mn, mx);
  };
  m.def("clamp", clamp_py, py::arg("input"), py::arg("min") = py::none(),
        py::arg("max") = py::none());
  cls.def("clamp", clamp_py, py::arg("min") = py::none(), py::arg("max") = py::none());
  cls.def(
      "clamp_",
      [](const Tensor& a, py::handle lo, py::handle hi) {
        std::optional<Tensor> mn, mx;
        if (!lo.is_none()) mn = tensor_or_scalar(lo, "clamp_", "min");
        if (!hi.is_none()) mx = tensor_or_scalar(hi, "clamp_", "max");
        return inplace_composite(a, "clamp_", {mn ? &*mn : nullptr, mx ? &*mx : nullptr},
                                 [&](const Tensor& src) { return clamp(src, mn, mx); });
      },
      py::arg("min") = py::none(), py::arg("max") = py::none());
  m.attr("clip") = m.attr("clamp");
  cls.attr("clip") = cls.attr("clamp");
  cls.attr("clip_") = cls.attr("clamp_");
  // round(decimals=) overrides the table's plain round.
  auto round_py = [](const Tensor& a, int64_t decimals) { return round_decimals(a, decimals); };
  m.attr("round") = py::cpp_function(
      [](const Tensor& a, int64_t decimals, py::handle out) -> py::object {
        const Tensor* o = out_arg(out, "round");
        if (!o) return wrap(round_decimals(a, decimals));
        if (decimals == 0)
          unary_out(UnaryOp::round, a, *o);
        else
          return result_or_out(round_decimals(a, decimals), out, "round");
        return py::reinterpret_borrow<py::object>(out);
      },
      py::name("round"), py::arg("input"), py::kw_only(), py::arg("decimals") = 0,
      py::arg("out") = py::none());
  cls.attr("round") = py::cpp_function(round_py, py::name("round"), py::is_method(cls),
                                       py::kw_only(), py::arg("decimals") = 0);
  cls.attr("round_") = py::cpp_function(
      [round_py](const Tensor& a, int64_t d) {
        return inplace_composite(a, "round_", {},
                                 [&](const Tensor& src) { return round_py(src, d); });
      },
      py::name("round_"), py::is_method(cls), py::kw_only(), py::arg("decimals") = 0);
  cls.attr("__round__") = cls.attr("round");
  m.def(
      "lerp",
      [](const Tensor& a, const Tensor& b, py::handle w, py::handle out) -> py::object {
        Tensor wt = tensor_or_scalar(w, "lerp", "weight");
        if (const Tensor* o = out_arg(out, "lerp")) {
          lerp_out(a, b, wt, *o);
          return py::reinterpret_borrow<py::object>(out);
        }
        return wrap(lerp(a, b, wt));
      },
      py::arg("input"), py::arg("end"), py::arg("weight"), py::kw_only(),
      py::arg("out") = py::none());
  cls.def(
      "lerp",
      [](const Tensor& a, const Tensor& b, py::handle w) {
        return lerp(a, b, tensor_or_scalar(w, "lerp", "weight"));
      },
      py::arg("end"), py::arg("weight"));
  cls.def(
      "lerp_",
      [](const Tensor& a, const Tensor& b, py::handle w) {
        return lerp_(a, b, tensor_or_scalar(w, "lerp_", "weight"));
      },
      py::arg("end"), py::arg("weight"));
  auto nan_to_num_py = [](const Tensor& a, double nan, std::optional<double> posinf,
                          std::optional<double> neginf) {
    return nan_to_num(a, nan, posinf, neginf);
  };
  m.def("nan_to_num", nan_to_num_py, py::arg("input"), py::arg("nan") = 0.0,
        py::arg("posinf") = py::none(), py::arg("neginf") = py::none());
  cls.def("nan_to_num", nan_to_num_py, py::arg("nan") = 0.0, py::arg("posinf") = py::none(),
          py::arg("neginf") = py::none());
  cls.def(
      "nan_to_num_",
      [nan_to_num_py](const Tensor& a, double nan, std::optional<double> p,
                      std::optional<double> n) {
        return inplace_composite(a, "nan_to_num_", {},
                                 [&](const Tensor& src) { return nan_to_num_py(src, nan, p, n); });
      },
      py::arg("nan") = 0.0, py::arg("posinf") = py::none(), py::arg("neginf") = py::none());

  m.def("result_type", [](py::handle a, py::handle b) {
    return dtype_object(result_type(tensor_or_scalar(a, "result_type", "tensor1"),
                                    tensor_or_scalar(b, "result_type", "tensor2")));
  });
  m.def("promote_types", [](py::handle a, py::handle b) {
    return dtype_object(promote_types(dtype_arg(a), dtype_arg(b)));
  });
  m.def("can_cast", [](py::handle from, py::handle to) {
    DType f = dtype_arg(from), t = dtype_arg(to);
    if (is_floating(f) && !is_floating(t)) return false;
    if (f != DType::Bool && t == DType::Bool) return false;
    return true;
  });
}

}  // namespace

void init_ops(py::module_& m) {
  bind_op_table(m);
  bind_div_and_aliases(m);
  bind_operators(m);
  bind_ternary_and_promotion(m);
  install_operator_slots(m);
}

}  // namespace ember::python
