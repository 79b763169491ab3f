// Argument conversion for the bindings (see bind.h).
#include <pybind11/numpy.h>

#include "ember/autograd/record.h"
#include "ember/ops/ops.h"
#include "ember/ops/surface.h"
#include "ember/python/bind.h"

namespace ember::python {

namespace {
// Leaked on purpose: Python objects must not be destroyed after the interpreter is.
PyObject* g_dtype_objects[kNumDTypes] = {};
PyObject* g_size_class = nullptr;
}  // namespace

std::string type_name(py::handle h) { return Py_TYPE(h.ptr())->tp_name; }

bool as_tensor(py::handle h, Tensor*& out) {
  // Fast rejection: pybind11's failing load path is slow (it tries conversions),
  // and this runs on every Python number passed to an op.
  static PyTypeObject* tensor_type =
      (PyTypeObject*)py::detail::get_type_handle(typeid(Tensor), true).ptr();
  PyTypeObject* t = Py_TYPE(h.ptr());
  if (t != tensor_type && !PyType_IsSubtype(t, tensor_type)) return false;
  // The caster's load is the fast one (Note [Tensor wrapper fast path]).
  py::detail::make_caster<Tensor> c;
  if (!c.load(h, false)) return false;
  out = &py::detail::cast_op<Tensor&>(c);
  return true;
}

const Tensor* out_arg(py::handle out, const char* op) {
  if (out.is_none()) return nullptr;
  Tensor* t;
  if (as_tensor(out, t)) return t;
  raise(ErrorKind::Type, op, "(): argument 'out' must be Tensor, not ", type_name(out));
}

std::pair<const Tensor*, const Tensor*> out_pair_arg(py::handle out, const char* op) {
  if (out.is_none()) return {nullptr, nullptr};
  Tensor *a = nullptr, *b = nullptr;
  const bool ok = (py::isinstance<py::tuple>(out) || py::isinstance<py::list>(out)) &&
                  py::len(out) == 2 && as_tensor(out[py::int_(0)], a) &&
                  as_tensor(out[py::int_(1)], b);
  EMBER_CHECK_TYPE(ok, op, "(): argument 'out' must be a tuple of two Tensors, not ",
                   type_name(out));
  return {a, b};
}

py::object result_or_out(const Tensor& r, py::handle out, const char* op) {
  const Tensor* o = out_arg(out, op);
  if (!o) return wrap(r);
  write_out(r, *o, op);
  return py::reinterpret_borrow<py::object>(out);
}

py::object pair_or_out(const char* name, const Tensor& a, const Tensor& b, py::handle out) {
  auto [oa, ob] = out_pair_arg(out, name);
  py::module_ types = py::module_::import("ember.return_types");
  if (!oa) return types.attr(name)(wrap(a), wrap(b));
  write_out(a, *oa, name);
  write_out(b, *ob, name);
  // PyTorch's out= overloads return their own type: torch.return_types.sort_out, ...
  return types.attr((std::string(name) + "_out").c_str())(wrap(*oa), wrap(*ob));
}

bool as_scalar(py::handle h, Scalar& out) {
  PyObject* o = h.ptr();
  if (PyBool_Check(o)) {
    out = Scalar(o == Py_True);
    return true;
  }
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    EMBER_CHECK(!overflow, "Overflow when unpacking long: ", std::string(py::str(h)),
                " does not fit in int64");
    out = Scalar(int64_t(v));
    return true;
  }
  if (PyFloat_Check(o)) {
    out = Scalar(PyFloat_AS_DOUBLE(o));
    return true;
  }
  // NumPy scalars (np.float32(1), np.int64(2), np.bool_(True)).
  if (py::isinstance<py::array>(h)) return false;
  static py::object np_generic = py::module_::import("numpy").attr("generic");
  if (PyObject_IsInstance(o, np_generic.ptr()) == 1) {
    std::string kind = py::str(h.attr("dtype").attr("kind"));
    py::object o2 = py::reinterpret_borrow<py::object>(h);
    if (kind == "b")
      out = Scalar(PyObject_IsTrue(o) == 1);
    else if (kind == "i" || kind == "u")
      out = Scalar(int64_t(py::int_(o2)));
    else if (kind == "f")
      out = Scalar(double(py::float_(o2)));
    else
      return false;
    return true;
  }
  return false;
}

Tensor from_numpy(py::handle obj);  // tensor.cpp

Tensor ndarray_operand(py::handle h) {
  // Shares memory when ember can view the array as it is; copies otherwise
  // (negative strides, read-only or non-native byte order).
  py::array a = py::reinterpret_borrow<py::array>(h);
  bool viewable = a.writeable() && a.dtype().byteorder() != '>';
  for (ssize_t d = 0; d < a.ndim() && viewable; ++d) viewable = a.strides(d) >= 0;
  if (viewable) {
    try {
      return from_numpy(h);
    } catch (const Error&) {
    }
  }
  return from_numpy(py::module_::import("numpy").attr("array")(h));
}

Tensor tensor_or_scalar(py::handle h, const char* op, const char* arg) {
  Tensor* t;
  if (as_tensor(h, t)) return *t;
  Scalar s;
  if (as_scalar(h, s)) return wrap_scalar(s);
  if (py::isinstance<py::array>(h)) return ndarray_operand(h);
  raise(ErrorKind::Type, op, "(): argument '", arg, "' must be Tensor or Number, not ",
        type_name(h));
}

Scalar scalar_arg(py::handle h, const char* op, const char* arg) {
  Scalar s;
  if (as_scalar(h, s)) return s;
  Tensor* t;
  if (as_tensor(h, t)) {
    EMBER_CHECK(t->numel() == 1, op, "(): argument '", arg,
                "' must be a Number or a one-element tensor, but got a tensor of shape ",
                shape_str(t->sizes()));
    return local_scalar(*t, op);
  }
  raise(ErrorKind::Type, op, "(): argument '", arg, "' must be Number, not ", type_name(h));
}

std::vector<Tensor> tensor_list_arg(py::handle h, const char* op, const char* arg, int position) {
  if (!PyList_Check(h.ptr()) && !PyTuple_Check(h.ptr()))
    raise(ErrorKind::Type, op, "(): argument '", arg, "' (position ", position + 1,
          ") must be tuple of Tensors, not ", type_name(h));
  py::sequence seq = py::reinterpret_borrow<py::sequence>(h);
  std::vector<Tensor> r;
  r.reserve(seq.size());
  for (size_t i = 0; i < seq.size(); ++i) {
    py::object e = seq[i];
    Tensor* t;
    if (!as_tensor(e, t))
      raise(ErrorKind::Type, op, "(): expected Tensor as element ", i, " in argument ", position,
            ", but got ", type_name(e));
    r.push_back(*t);
  }
  return r;
}

int64_t int_arg(py::handle h, const char* op, const char* arg) {
  PyObject* o = h.ptr();
  if (PyLong_Check(o) && !PyBool_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    EMBER_CHECK(!overflow, op, "(): argument '", arg, "' is too large for int64");
    return v;
  }
  Tensor* t;
  if (as_tensor(h, t)) {
    EMBER_CHECK_TYPE(t->numel() == 1 && is_integral(t->dtype(), false), op, "(): argument '", arg,
                     "' must be int, but got a ", dtype_name(t->dtype()), " tensor of shape ",
                     shape_str(t->sizes()));
    return scalar_arg(h, op, arg).to_int();
  }
  if (!PyBool_Check(o) && !PyFloat_Check(o) && PyIndex_Check(o)) {
    py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(o));
    if (!i) throw py::error_already_set();
    return int_arg(i, op, arg);
  }
  raise(ErrorKind::Type, op, "(): argument '", arg, "' must be int, not ", type_name(h));
}

Shape shape_arg(py::handle h, const char* op, const char* arg) {
  if (PyTuple_Check(h.ptr()) || PyList_Check(h.ptr())) {
    py::sequence seq = py::reinterpret_borrow<py::sequence>(h);
    Shape s;
    size_t n = seq.size();
    s.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      py::handle e = seq[i];
      PyObject* o = e.ptr();
      if (!(PyLong_Check(o) || (!PyFloat_Check(o) && PyIndex_Check(o))) || PyBool_Check(o)) {
        Tensor* t;
        if (!as_tensor(e, t))
          raise(ErrorKind::Type, op, "(): argument '", arg,
                "' must be tuple of ints, but found element of type ", type_name(e), " at pos ", i);
      }
      s.push_back(int_arg(e, op, arg));
    }
    return s;
  }
  return Shape{int_arg(h, op, arg)};
}

Shape shape_from_args(const py::args& args, const char* op, const char* arg) {
  if (args.size() == 1) return shape_arg(args[0], op, arg);
  Shape s;
  for (size_t i = 0; i < args.size(); ++i) {
    py::handle e = args[i];
    if (PyFloat_Check(e.ptr()) || PyBool_Check(e.ptr()) || !PyIndex_Check(e.ptr())) {
      Tensor* t;
      if (!as_tensor(e, t))
        raise(ErrorKind::Type, op, "(): argument '", arg,
              "' must be tuple of ints, but found element of type ", type_name(e), " at pos ", i);
    }
    s.push_back(int_arg(e, op, arg));
  }
  return s;
}

DType dtype_arg(py::handle h, const char* op) {
  if (py::isinstance<PyDType>(h)) return h.cast<PyDType&>().dtype;
  if (h.ptr() == (PyObject*)&PyFloat_Type) return DType::Float64;
  if (h.ptr() == (PyObject*)&PyLong_Type) return DType::Int64;
  if (h.ptr() == (PyObject*)&PyBool_Type) return DType::Bool;
  // NumPy dtypes and scalar types by name.
  if (py::hasattr(h, "dtype") || py::hasattr(h, "kind")) {
    try {
      std::string name = py::str(py::module_::import("numpy").attr("dtype")(h).attr("name"));
#define EMBER_NP(c, n, p, k) \
  if (name == #p) return DType::n;
      EMBER_FORALL_DTYPES(EMBER_NP)
#undef EMBER_NP
    } catch (py::error_already_set&) {
    }
  }
  raise(ErrorKind::Type, op, "(): argument 'dtype' must be ember.dtype, not ", type_name(h));
}

std::optional<DType> optional_dtype(py::handle h, const char* op) {
  if (h.is_none()) return std::nullopt;
  return dtype_arg(h, op);
}

Device device_arg(py::handle h) {
  if (py::isinstance<PyDevice>(h)) return h.cast<PyDevice&>().device;
  if (PyUnicode_Check(h.ptr())) return Device::parse(h.cast<std::string>());
  if (PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr())) {
    int64_t i = h.cast<int64_t>();
    EMBER_CHECK(i >= 0, "Device index must not be negative");
    return Device(DeviceType::CUDA, int(i));
  }
  raise(ErrorKind::Type, "device(): argument 'device' must be ember.device, str or int, not ",
        type_name(h));
}

std::optional<Device> optional_device(py::handle h) {
  if (h.is_none()) return std::nullopt;
  return device_arg(h);
}

py::object dtype_object(DType t) {
  PyObject*& o = g_dtype_objects[int(t)];
  if (!o) o = py::cast(PyDType{t}).release().ptr();
  return py::reinterpret_borrow<py::object>(o);
}

py::object size_object(const Shape& s) {
  py::tuple tup(s.size());
  for (size_t i = 0; i < s.size(); ++i) PyTuple_SET_ITEM(tup.ptr(), i, PyLong_FromLongLong(s[i]));
  if (!g_size_class) return std::move(tup);
  PyObject* r = PyObject_CallOneArg(g_size_class, tup.ptr());
  if (!r) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(r);
}

py::object device_object(Device d) { return py::cast(PyDevice{d}); }

py::object wrap(Tensor t) { return py::cast(std::move(t)); }

void set_size_class(py::object cls) {
  Py_XDECREF(g_size_class);
  g_size_class = cls.release().ptr();
}

}  // namespace ember::python
