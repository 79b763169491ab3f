// Bindings: matmul and friends (mm, bmm, mv, dot, addmm, baddbmm, addmv, outer),
// tril/triu, trace, the @ operator, the ember.linalg submodule and _blas_info().
#include "ember/ops/linalg.h"
#include "ember/backends/cpu/blas.h"
#include "ember/python/bind.h"

namespace ember::python {
namespace {

// A required Tensor argument; TypeError in PyTorch's words otherwise.
const Tensor& positional_tensor_arg(py::handle h, const char* op, const char* arg, int pos) {
  Tensor* t;
  if (as_tensor(h, t)) return *t;
  raise(ErrorKind::Type, op, "(): argument '", arg, "' (position ", pos, ") must be Tensor, not ",
        type_name(h));
}

using Binary = Tensor (*)(const Tensor&, const Tensor&);
using BinaryOut = Tensor& (*)(const Tensor&, const Tensor&, const Tensor&);

// Binds op(input, <arg2>, *, out=None) and the Tensor method op(<arg2>).
void bind_binary(py::module_& m, py::class_<Tensor>& cls, const char* name, const char* arg2,
                 Binary fn, BinaryOut fn_out) {
  m.def(
      name,
      [name, fn, fn_out](py::handle a, py::handle b, py::handle out) -> py::object {
        const Tensor& x = positional_tensor_arg(a, name, "input", 1);
        const Tensor& y = positional_tensor_arg(b, name, "other", 2);
        if (const Tensor* o = out_arg(out, name)) {
          fn_out(x, y, *o);
          return py::reinterpret_borrow<py::object>(out);
        }
        return wrap(fn(x, y));
      },
      py::arg("input"), py::arg(arg2), py::kw_only(), py::arg("out") = py::none());
  cls.def(
      name,
      [name, fn](const Tensor& a, py::handle b) {
        return fn(a, positional_tensor_arg(b, name, "other", 1));
      },
      py::arg(arg2));
}

using AddFn = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, Scalar, Scalar);
using AddOut = Tensor& (*)(const Tensor&, const Tensor&, const Tensor&, Scalar, Scalar,
                           const Tensor&);
using AddInplace = Tensor& (*)(const Tensor&, const Tensor&, const Tensor&, Scalar, Scalar);

Scalar scalar_or_one(py::handle h, const char* op, const char* arg) {
  return h.is_none() ? Scalar(int64_t(1)) : scalar_arg(h, op, arg);
}

// Binds op(input, x, y, *, beta=1, alpha=1, out=None), Tensor.op and Tensor.op_.
void bind_add(py::module_& m, py::class_<Tensor>& cls, const char* name, const char* inplace,
              const char* a1, const char* a2, AddFn fn, AddOut fn_out, AddInplace fn_) {
  m.def(
      name,
      [name, a1, a2, fn, fn_out](py::handle input, py::handle x, py::handle y, py::handle beta,
                                 py::handle alpha, py::handle out) -> py::object {
        const Tensor& t = positional_tensor_arg(input, name, "input", 1);
        const Tensor& u = positional_tensor_arg(x, name, a1, 2);
        const Tensor& v = positional_tensor_arg(y, name, a2, 3);
        Scalar be = scalar_or_one(beta, name, "beta"), al = scalar_or_one(alpha, name, "alpha");
        if (const Tensor* o = out_arg(out, name)) {
          fn_out(t, u, v, be, al, *o);
          return py::reinterpret_borrow<py::object>(out);
        }
        return wrap(fn(t, u, v, be, al));
      },
      py::arg("input"), py::arg(a1), py::arg(a2), py::kw_only(), py::arg("beta") = py::none(),
      py::arg("alpha") = py::none(), py::arg("out") = py::none());
  cls.def(
      name,
      [name, a1, a2, fn](const Tensor& t, py::handle x, py::handle y, py::handle beta,
                         py::handle alpha) {
        return fn(t, positional_tensor_arg(x, name, a1, 1), positional_tensor_arg(y, name, a2, 2),
                  scalar_or_one(beta, name, "beta"), scalar_or_one(alpha, name, "alpha"));
      },
      py::arg(a1), py::arg(a2), py::kw_only(), py::arg("beta") = py::none(),
      py::arg("alpha") = py::none());
  cls.def(
      inplace,
      [inplace, a1, a2, fn_](py::handle self, py::handle x, py::handle y, py::handle beta,
                             py::handle alpha) {
        fn_(self.cast<Tensor&>(), positional_tensor_arg(x, inplace, a1, 1),
            positional_tensor_arg(y, inplace, a2, 2), scalar_or_one(beta, inplace, "beta"),
            scalar_or_one(alpha, inplace, "alpha"));
        return py::reinterpret_borrow<py::object>(self);
      },
      py::arg(a1), py::arg(a2), py::kw_only(), py::arg("beta") = py::none(),
      py::arg("alpha") = py::none());
}

using TriFn = Tensor (*)(const Tensor&, int64_t);
using TriOut = Tensor& (*)(const Tensor&, int64_t, const Tensor&);
using TriInplace = const Tensor& (*)(const Tensor&, int64_t);

void bind_tri(py::module_& m, py::class_<Tensor>& cls, const char* name, const char* inplace,
              TriFn fn, TriOut fn_out, TriInplace fn_) {
  m.def(
      name,
      [name, fn, fn_out](py::handle a, py::handle diag, py::handle out) -> py::object {
        const Tensor& t = positional_tensor_arg(a, name, "input", 1);
        int64_t d = int_arg(diag, name, "diagonal");
        if (const Tensor* o = out_arg(out, name)) {
          fn_out(t, d, *o);
          return py::reinterpret_borrow<py::object>(out);
        }
        return wrap(fn(t, d));
      },
      py::arg("input"), py::arg("diagonal") = 0, py::kw_only(), py::arg("out") = py::none());
  cls.def(
      name,
      [name, fn](const Tensor& t, py::handle diag) {
        return fn(t, int_arg(diag, name, "diagonal"));
      },
      py::arg("diagonal") = 0);
  cls.def(
      inplace,
      [inplace, fn_](py::handle self, py::handle diag) {
        fn_(self.cast<Tensor&>(), int_arg(diag, inplace, "diagonal"));
        return py::reinterpret_borrow<py::object>(self);
      },
      py::arg("diagonal") = 0);
}

}  // namespace

void init_linalg(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);

  bind_binary(m, cls, "matmul", "other", &matmul, &matmul_out);
  bind_binary(m, cls, "mm", "mat2", &mm, &mm_out);
  bind_binary(m, cls, "bmm", "mat2", &bmm, &bmm_out);
  bind_binary(m, cls, "mv", "vec", &mv, &mv_out);
  bind_binary(m, cls, "dot", "tensor", &dot, &dot_out);
  bind_binary(m, cls, "vdot", "other", &vdot, &dot_out);
  bind_binary(m, cls, "outer", "vec2", &outer, &outer_out);
  m.attr("ger") = m.attr("outer");
  cls.attr("ger") = cls.attr("outer");

  bind_add(m, cls, "addmm", "addmm_", "mat1", "mat2", &addmm, &addmm_out, &addmm_);
  bind_add(m, cls, "baddbmm", "baddbmm_", "batch1", "batch2", &baddbmm, &baddbmm_out, &baddbmm_);
  bind_add(m, cls, "addmv", "addmv_", "mat", "vec", &addmv, &addmv_out, &addmv_);

  bind_tri(m, cls, "tril", "tril_", &tril, &tril_out, &tril_);
  bind_tri(m, cls, "triu", "triu_", &triu, &triu_out, &triu_);

  m.def(
      "trace", [](py::handle a) { return trace(positional_tensor_arg(a, "trace", "input", 1)); },
      py::arg("input"));
  cls.def("trace", [](const Tensor& a) { return trace(a); });

  // a @ b, b @ a. Anything but a Tensor: NotImplemented, so Python raises its TypeError.
  cls.def("__matmul__", [](const Tensor& a, py::handle b) -> py::object {
    Tensor* t;
    if (!as_tensor(b, t)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
    return wrap(matmul(a, *t));
  });
  cls.def("__rmatmul__", [](const Tensor& a, py::handle b) -> py::object {
    Tensor* t;
    if (!as_tensor(b, t)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
    return wrap(matmul(*t, a));
  });

  // ember.linalg: the PyTorch-style home of matmul (more linalg functions join it later).
  py::module_ la = m.def_submodule("linalg", "Linear algebra functions");
  la.attr("matmul") = m.attr("matmul");

  m.def("_blas_info", [] {
    cpu::blas::Info i = cpu::blas::info();
    py::dict d;
    d["available"] = i.available;
    d["library"] = i.library;
    d["corename"] = i.corename;
    d["threads"] = i.threads;
    d["enabled"] = i.enabled;
    d["matmul_float32"] = i.enabled ? "blas" : "fallback";
    d["matmul_other_dtypes"] = "fallback";
    return d;
  });
  // For tests and benchmarks: route float32/float64 through the C++ fallback kernel.
  m.def("_set_blas_enabled", [](bool on) { cpu::blas::set_enabled(on); }, py::arg("enabled"));
}

}  // namespace ember::python
