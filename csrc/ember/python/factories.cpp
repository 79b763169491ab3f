// Bindings: tensor(data) and the other factories, Tensor.new_*, and the dtype
// conversion methods (float(), long(), type(), ...); *_like is python/factories_like.cpp.
#include <pybind11/numpy.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "ember/ops/factory.h"
#include "ember/ops/ops.h"
#include "ember/ops/random.h"
#include "ember/python/bind.h"
#include "ember/python/factory_args.h"

namespace ember::python {

Tensor from_numpy(py::handle obj);  // python/tensor.cpp

namespace {

// ---- tensor(data): walking nested Python data in C++ ------------------------------------

bool is_numpy_array(py::handle h) { return py::isinstance<py::array>(h); }
bool is_numpy_scalar(py::handle h) {
  static py::object generic = py::module_::import("numpy").attr("generic");
  return PyObject_IsInstance(h.ptr(), generic.ptr()) == 1;
}
bool is_data_sequence(py::handle h) {
  PyObject* o = h.ptr();
  if (PyList_Check(o) || PyTuple_Check(o)) return true;
  if (PyUnicode_Check(o) || PyBytes_Check(o) || PyByteArray_Check(o) || PyDict_Check(o))
    return false;
  return PySequence_Check(o) == 1;
}

DType numpy_dtype(py::handle np_dtype) {
  std::string name = py::str(np_dtype.attr("name"));
#define EMBER_NP(c, n, p, k) \
  if (name == #p) return DType::n;
  EMBER_FORALL_DTYPES(EMBER_NP)
#undef EMBER_NP
  raise(ErrorKind::Type, "can't convert np.ndarray of type numpy.", name,
        ". The only supported types are: float64, float32, float16, int64, int32, int16, int8, "
        "uint8, and bool.");
}

// More nesting than a tensor may have dims (a cyclic list, l = []; l.append(l), is
// infinitely deep): PyTorch's ValueError, raised before any recursion can exhaust the stack.
[[noreturn]] void too_deep(py::handle h) {
  raise(ErrorKind::Value, "too many dimensions '", type_name(h), "' (a tensor has at most ",
        kMaxDims, "; is the data nested too deeply or does it contain itself?)");
}

[[noreturn]] void bad_type(py::handle h) {
  raise(ErrorKind::Type, "new(): invalid data type '", type_name(h), "'");
}

// A CPU tensor copy of an ndarray (any strides, byte order, alignment).
Tensor ndarray_to_tensor(py::handle h) {
  py::module_ np = py::module_::import("numpy");
  // np.array keeps 0-d arrays 0-d (ascontiguousarray would make them 1-d).
  py::object arr = np.attr("array")(h, py::arg("order") = "C");
  py::object dt = arr.attr("dtype");
  if (std::string(py::str(dt.attr("byteorder"))) == ">")
    arr = arr.attr("astype")(dt.attr("newbyteorder")("="));
  numpy_dtype(arr.attr("dtype"));  // raises for unsupported dtypes
  return from_numpy(arr);
}

struct DataWalker {
  Shape sizes;
  DType dtype = DType::Bool;
  bool saw_any = false;  // a scalar/tensor was seen while inferring the dtype

  // Sizes from the first element along each dim (PyTorch's compute_sizes).
  void compute_sizes(py::handle obj) {
    py::handle cur = obj;
    py::object hold;
    Tensor* t;
    while (true) {
      if (as_tensor(cur, t)) {
        for (int64_t s : t->sizes()) sizes.push_back(s);
        if (int64_t(sizes.size()) > kMaxDims) too_deep(cur);
        return;
      }
      if (is_numpy_array(cur)) {
        py::array a = py::reinterpret_borrow<py::array>(cur);
        for (ssize_t d = 0; d < a.ndim(); ++d) sizes.push_back(a.shape(d));
        if (int64_t(sizes.size()) > kMaxDims) too_deep(cur);
        return;
      }
      PyObject* o = cur.ptr();
      if (PyFloat_Check(o) || PyLong_Check(o) || is_numpy_scalar(cur)) return;
      if (!is_data_sequence(cur)) bad_type(cur);
      if (int64_t(sizes.size()) >= kMaxDims) too_deep(cur);
      Py_ssize_t n = PySequence_Size(o);
      if (n < 0) throw py::error_already_set();
      sizes.push_back(n);
      if (n == 0) return;
      hold = py::reinterpret_steal<py::object>(PySequence_GetItem(o, 0));
      if (!hold) throw py::error_already_set();
      cur = hold;
    }
  }

  void see(DType t) {
    dtype = saw_any ? promote_types(dtype, t) : t;
    saw_any = true;
  }

  // The dtype of the data (PyTorch's infer_scalar_type), scanning every element.
  void infer(py::handle obj, int64_t depth = 0) {
    PyObject* o = obj.ptr();
    // NumPy scalars keep their dtype (np.float64 is also a Python float subclass).
    if (!PyFloat_CheckExact(o) && (is_numpy_array(obj) || is_numpy_scalar(obj)))
      return see(numpy_dtype(obj.attr("dtype")));
    if (PyFloat_Check(o)) return see(default_dtype());
    if (PyBool_Check(o)) return see(DType::Bool);
    if (PyLong_Check(o)) return see(DType::Int64);
    Tensor* t;
    if (as_tensor(obj, t)) return see(t->dtype());
    if (!is_data_sequence(obj)) {
      if (PyUnicode_Check(o) || PyBytes_Check(o)) bad_type(obj);
      // PyTorch's infer_scalar_type: RuntimeError for anything else (None, dict, object).
      raise(ErrorKind::Runtime, "Could not infer dtype of ", type_name(obj));
    }
    if (depth >= kMaxDims) too_deep(obj);
    py::object fast = py::reinterpret_steal<py::object>(PySequence_Fast(o, "not a sequence"));
    if (!fast) throw py::error_already_set();
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast.ptr());
    PyObject** items = PySequence_Fast_ITEMS(fast.ptr());
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* e = items[i];
      // Fast path for the common flat case; floats decide everything.
      if (PyFloat_CheckExact(e)) {
        see(default_dtype());
      } else if (PyBool_Check(e)) {
        see(DType::Bool);
      } else if (PyLong_Check(e)) {
        see(DType::Int64);
      } else {
        infer(e, depth + 1);
      }
    }
  }
};

[[noreturn]] void overflow(DType dt) {
  raise(ErrorKind::Runtime, "value cannot be converted to type ", dtype_name(dt),
        " without overflow");
}

// Writes one Python number into p as dtype `dt`, checking ranges like PyTorch.
template <typename T>
void store_int(int64_t v, DType dt, char* p) {
  if constexpr (std::is_same<T, bool>::value) {
    *reinterpret_cast<bool*>(p) = v != 0;
  } else if constexpr (std::is_integral<T>::value) {
    // Like c10::checked_convert: unsigned targets accept negative values down to -max
    // (two's-complement wrap, so tensor([-1], dtype=uint8) is 255).
    int64_t lo = std::is_unsigned<T>::value ? -int64_t(std::numeric_limits<T>::max())
                                            : int64_t(std::numeric_limits<T>::min());
    if (v < lo || v > int64_t(std::numeric_limits<T>::max())) overflow(dt);
    *reinterpret_cast<T*>(p) = T(v);
  } else {
    T x = T(float(v));
    if constexpr (std::is_same<T, double>::value || std::is_same<T, float>::value) x = T(v);
    std::memcpy(p, &x, sizeof(T));
  }
}
template <typename T>
void store_float(double v, DType dt, char* p) {
  if constexpr (std::is_same<T, bool>::value) {
    *reinterpret_cast<bool*>(p) = v != 0;
  } else if constexpr (std::is_integral<T>::value) {
    if (!(v > double(std::numeric_limits<T>::min()) - 1.0 &&
          v < double(std::numeric_limits<T>::max()) + 1.0))
      overflow(dt);
    *reinterpret_cast<T*>(p) = T(int64_t(v));
  } else if constexpr (std::is_same<T, double>::value) {
    std::memcpy(p, &v, sizeof(T));
  } else {
    // Floating targets are not range-checked: tensor([1e39]) is inf, as in PyTorch
    // (only integer targets and fill values use the checked conversion).
    T x = T(float(v));
    std::memcpy(p, &x, sizeof(T));
  }
}

struct Storer {
  const Shape& sizes;
  DType dtype;
  int64_t elsize;

  void scalar(py::handle obj, int64_t dim, char* p) {
    PyObject* o = obj.ptr();
    if (PyFloat_Check(o)) return put_float(PyFloat_AS_DOUBLE(o), p);
    if (PyBool_Check(o)) return put_int(o == Py_True, p);
    if (PyLong_Check(o)) {
      int of = 0;
      long long v = PyLong_AsLongLongAndOverflow(o, &of);
      if (of && (is_floating(dtype) || dtype == DType::Bool)) {
        // PyTorch unpacks a double for floating results: tensor([2**64], dtype=float64).
        double d = PyLong_AsDouble(o);
        if (d == -1.0 && PyErr_Occurred()) throw py::error_already_set();
        return put_float(d, p);
      }
      if (of)
        raise(ErrorKind::Runtime, "Overflow when unpacking long: ", std::string(py::str(obj)),
              " does not fit in int64");
      return put_int(v, p);
    }
    Tensor* t;
    Scalar s;
    if (as_tensor(obj, t)) {
      EMBER_CHECK_VALUE(t->dim() == 0, "expected a number at dim ", dim,
                        " but got a tensor of shape ", shape_str(t->sizes()),
                        " (the nested data is ragged)");
      s = scalar_arg(obj, "tensor", "data");
    } else if (is_numpy_scalar(obj)) {
      if (!as_scalar(obj, s)) bad_type(obj);
    } else if (is_numpy_array(obj) && py::reinterpret_borrow<py::array>(obj).ndim() == 0) {
      // A 0-d ndarray among numbers is a number: tensor([np.array(1.5), 2]).
      if (!as_scalar(obj.attr("item")(), s)) bad_type(obj);
    } else if (is_data_sequence(obj) || is_numpy_array(obj)) {
      raise(ErrorKind::Value, "expected a number at dim ", dim, " but got a sequence of length ",
            PySequence_Size(o), " (the nested data is ragged; sizes from the first elements are ",
            shape_str(sizes), ")");
    } else {
      bad_type(obj);
    }
    if (s.is_floating())
      put_float(s.to_double(), p);
    else
      put_int(s.to_int(), p);
  }
  void put_int(int64_t v, char* p) {
    dispatch_all(dtype, "tensor",
                 [&](auto tag) { store_int<typename decltype(tag)::type>(v, dtype, p); });
  }
  void put_float(double v, char* p) {
    dispatch_all(dtype, "tensor",
                 [&](auto tag) { store_float<typename decltype(tag)::type>(v, dtype, p); });
  }

  // Copies a tensor (or ndarray) block found at `dim` after checking its shape.
  void block(const Tensor& src, int64_t dim, char* p) {
    Shape rest(sizes.begin() + dim, sizes.end());
    EMBER_CHECK_VALUE(src.sizes() == rest, "expected a tensor of shape ", shape_str(rest),
                      " at dim ", dim, " (got ", shape_str(src.sizes()), ")");
    Tensor c = contiguous(to_dtype(to_device(src, Device()), dtype));
    if (c.numel()) std::memcpy(p, c.data_ptr(), size_t(c.numel() * elsize));
  }

  // Stores obj (of sizes[dim:]) at p; returns the bytes written.
  void store(py::handle obj, int64_t dim, char* p) {
    int64_t ndim = int64_t(sizes.size());
    Tensor* t;
    if (dim < ndim && as_tensor(obj, t)) return block(*t, dim, p);
    if (dim < ndim && is_numpy_array(obj)) return block(ndarray_to_tensor(obj), dim, p);
    if (dim == ndim) return scalar(obj, dim, p);
    PyObject* o = obj.ptr();
    if (!is_data_sequence(obj)) {
      if (PyFloat_Check(o) || PyLong_Check(o) || is_numpy_scalar(obj))
        raise(ErrorKind::Value, "expected sequence of length ", sizes[dim], " at dim ", dim,
              " (got a number of type '", type_name(obj), "')");
      bad_type(obj);
    }
    py::object fast = py::reinterpret_steal<py::object>(PySequence_Fast(o, "not a sequence"));
    if (!fast) throw py::error_already_set();
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast.ptr());
    EMBER_CHECK_VALUE(n == sizes[dim], "expected sequence of length ", sizes[dim], " at dim ", dim,
                      " (got ", int64_t(n), ")");
    PyObject** items = PySequence_Fast_ITEMS(fast.ptr());
    int64_t stride = elsize;
    for (int64_t d = dim + 1; d < ndim; ++d) stride *= sizes[d];
    if (dim + 1 == ndim) {
      // Innermost level: numbers, stored with a tight loop.
      for (Py_ssize_t i = 0; i < n; ++i) scalar(items[i], dim + 1, p + i * stride);
    } else {
      for (Py_ssize_t i = 0; i < n; ++i) store(items[i], dim + 1, p + i * stride);
    }
  }
};

/// ember.tensor(data, dtype=None, device=None): always copies.
Tensor tensor_from_data(py::handle data, std::optional<DType> dtype, std::optional<Device> device,
                        const char* /*op*/) {
  Tensor* t;
  if (as_tensor(data, t)) {
    if (PyErr_WarnEx(PyExc_UserWarning,
                     "To copy construct from a tensor, it is recommended to use "
                     "sourceTensor.clone().detach() rather than ember.tensor(sourceTensor).",
                     1) < 0)
      throw py::error_already_set();
    Tensor r = to_dtype(*t, dtype.value_or(t->dtype()), true);
    if (device) r = to_device(r, *device);
    return r;
  }
  if (is_numpy_array(data)) {
    Tensor r = ndarray_to_tensor(data);
    r = to_dtype(r, dtype.value_or(r.dtype()), true);
    return device ? to_device(r, *device) : r;
  }
  DataWalker w;
  DType dt;
  if (dtype) {
    dt = *dtype;
  } else {
    w.infer(data);  // before the sizes, as PyTorch: tensor([None]) cannot infer a dtype
    dt = w.saw_any ? w.dtype : default_dtype();
  }
  w.compute_sizes(data);
  Tensor out = empty(w.sizes, dt, Device());
  // Walked even when there are no elements: the nesting still has to be regular.
  Storer s{w.sizes, dt, element_size(dt)};
  s.store(data, 0, out.data_ptr());
  return device && !device->is_cpu() ? to_device(out, *device) : out;
}

// as_tensor: no copy when data already is a tensor/ndarray of the asked dtype and device.
Tensor as_tensor_impl(py::handle data, std::optional<DType> dtype, std::optional<Device> device) {
  Tensor* t;
  if (as_tensor(data, t)) {
    Tensor r = *t;
    if (dtype) r = to_dtype(r, *dtype);
    if (device && device->type != r.device().type) r = to_device(r, *device);
    return r;
  }
  if (is_numpy_array(data) && (!device || device->is_cpu())) {
    Tensor r;
    try {
      r = from_numpy(data);
    } catch (const Error&) {
      return tensor_from_data(data, dtype, device, "as_tensor");
    }
    return dtype ? to_dtype(r, *dtype) : r;
  }
  return tensor_from_data(data, dtype, device, "as_tensor");
}

Shape sizes_of(const char* op, const py::args& args, FactoryKwargs& kw) {
  py::object size = kw.take("size");
  if (!size.is_none()) {
    EMBER_CHECK_TYPE(args.size() == 0, op, "(): got the size both positionally and as size=");
    return shape_arg(size, op, "size");
  }
  return shape_from_args(args, op, "size");
}

// zeros / ones / empty: f(*size, dtype=None, device=None, requires_grad=False, ...)
template <int Kind>  // 0 zeros, 1 ones, 2 empty
py::object sized_factory(const char* op, const py::args& args, const py::kwargs& kwargs) {
  FactoryKwargs kw(op, kwargs, true);
  Shape s = sizes_of(op, args, kw);
  DType dt = kw.dtype().value_or(default_dtype());
  Device dev = kw.device_or_default();
  bool rg = kw.requires_grad();
  kw.ignore_layout();
  kw.done();
  Tensor t = Kind == 2 ? empty(s, dt, dev) : Kind == 1 ? ones(s, dt, dev) : zeros(s, dt, dev);
  return kw.finish(t, rg);
}

std::string type_string(const Tensor& t) {
  return std::string(t.device().is_cuda() ? "ember.cuda." : "ember.") +
         scalar_type_name(t.dtype()) + "Tensor";
}

// Tensor.type(): the legacy name; Tensor.type(dtype or "ember.FloatTensor"): a conversion.
py::object tensor_type(const Tensor& self, py::object dtype, py::kwargs) {
  if (dtype.is_none()) return py::str(type_string(self));
  if (PyUnicode_Check(dtype.ptr())) {
    std::string s = dtype.cast<std::string>();
    bool cuda = false;
    for (const char* prefix : {"ember.", "torch."})
      if (s.rfind(prefix, 0) == 0) s = s.substr(std::strlen(prefix));
    if (s.rfind("cuda.", 0) == 0) {
      cuda = true;
      s = s.substr(5);
    }
    for (int i = 0; i < kNumDTypes; ++i) {
      if (s == std::string(scalar_type_name(DType(i))) + "Tensor") {
        Tensor r = to_dtype(self, DType(i));
        if (cuda != r.device().is_cuda())
          r = to_device(r, cuda ? Device(DeviceType::CUDA, 0) : Device());
        return wrap(r);
      }
    }
    raise(ErrorKind::Value, "invalid type: '", dtype.cast<std::string>(), "'");
  }
  return wrap(to_dtype(self, dtype_arg(dtype, "type")));
}

// Parses f(end) / f(start, end[, step]) and start=/end=/step= keywords.
void range_args(const char* op, const py::args& args, FactoryKwargs& kw, Scalar& start, Scalar& end,
                Scalar& step) {
  py::object ks = kw.take("start"), ke = kw.take("end"), kst = kw.take("step");
  size_t n = args.size();
  EMBER_CHECK_TYPE(n <= 3, op, "() takes at most 3 positional arguments (", n, " given)");
  start = Scalar(int64_t(0));
  step = Scalar(int64_t(1));
  if (n == 1 && ks.is_none()) {
    end = scalar_arg(args[0], op, "end");
  } else {
    if (n >= 1)
      start = scalar_arg(args[0], op, "start");
    else if (!ks.is_none())
      start = scalar_arg(ks, op, "start");
    if (n >= 2)
      end = scalar_arg(args[1], op, "end");
    else if (!ke.is_none())
      end = scalar_arg(ke, op, "end");
    else if (n == 1 && !ks.is_none())
      end = scalar_arg(args[0], op, "end");
    else
      raise(ErrorKind::Type, op, "() missing required argument 'end'");
    if (n >= 3) step = scalar_arg(args[2], op, "step");
  }
  if (n < 3 && !kst.is_none()) step = scalar_arg(kst, op, "step");
}

Tensor conv(const Tensor& t, DType d) { return to_dtype(t, d); }

}  // namespace

namespace {
void bind_ranges(py::module_& m);
void bind_tensor_methods(py::module_& m);
}  // namespace

void init_factories(py::module_& m) {
  m.def(
      "tensor",
      [](py::handle data, py::kwargs kwargs) {
        FactoryKwargs kw("tensor", kwargs);
        auto dt = kw.dtype();
        std::optional<Device> dev = kw.device_or_default();
        bool rg = kw.requires_grad();
        kw.ignore_layout();
        kw.take("names");
        kw.done();
        return finish_factory(tensor_from_data(data, dt, dev, "tensor"), rg);
      },
      py::arg("data"));
  m.def(
      "as_tensor",
      [](py::handle data, py::object dtype, py::object device) {
        std::optional<Device> dev = optional_device(device);
        Tensor* src_t;  // a tensor keeps its device; other data goes to the default device
        if (!dev && !default_device().is_cpu() && !as_tensor(data, src_t)) dev = default_device();
        return as_tensor_impl(data, optional_dtype(dtype, "as_tensor"), dev);
      },
      py::arg("data"), py::arg("dtype") = py::none(), py::arg("device") = py::none());
  m.def(
      "asarray",
      [](py::handle obj, py::kwargs kwargs) {
        FactoryKwargs kw("asarray", kwargs);
        auto dt = kw.dtype();
        auto dev = kw.device();
        // A tensor keeps its device; other data goes to the default device.
        Tensor* src_t;
        if (!dev && !default_device().is_cpu() && !as_tensor(obj, src_t)) dev = default_device();
        py::object copy = kw.take("copy");
        bool rg = kw.requires_grad();
        kw.done();
        Tensor r;
        if (!copy.is_none() && PyObject_IsTrue(copy.ptr()) == 1) {
          Tensor* t;
          r = as_tensor(obj, t) ? to_dtype(*t, dt.value_or(t->dtype()), true)
                                : tensor_from_data(obj, dt, std::nullopt, "asarray");
          if (dev) r = to_device(r, *dev);
        } else {
          r = as_tensor_impl(obj, dt, dev);
          if (!copy.is_none()) {
            Tensor* t;
            bool shared =
                (as_tensor(obj, t) && r.storage() == t->storage()) ||
                (is_numpy_array(obj) && r.device().is_cpu() &&
                 reinterpret_cast<uintptr_t>(r.storage()->data.ptr) ==
                     reinterpret_cast<uintptr_t>(py::reinterpret_borrow<py::array>(obj).data()));
            EMBER_CHECK_VALUE(shared,
                              "asarray(): copy=False but the data cannot be shared without a copy");
          }
        }
        return finish_factory(r, rg);
      },
      py::arg("obj"));

  m.def("zeros", [](py::args a, py::kwargs k) { return sized_factory<0>("zeros", a, k); });
  m.def("ones", [](py::args a, py::kwargs k) { return sized_factory<1>("ones", a, k); });
  m.def("empty", [](py::args a, py::kwargs k) { return sized_factory<2>("empty", a, k); });
  m.def(
      "full",
      [](py::handle size, py::handle fill, py::kwargs kwargs) {
        FactoryKwargs kw("full", kwargs, true);
        Shape s = shape_arg(size, "full", "size");
        Scalar v = scalar_arg(fill, "full", "fill_value");
        DType dt = kw.dtype().value_or(full_dtype(v));
        Device dev = kw.device_or_default();
        bool rg = kw.requires_grad();
        kw.ignore_layout();
        kw.done();
        return kw.finish(full(s, v, dt, dev), rg);
      },
      py::arg("size"), py::arg("fill_value"));
  m.def(
      "scalar_tensor",
      [](py::handle v, py::kwargs kwargs) {
        FactoryKwargs kw("scalar_tensor", kwargs);
        DType dt = kw.dtype().value_or(default_dtype());
        Device dev = kw.device_or_default();
        bool rg = kw.requires_grad();
        kw.ignore_layout();
        kw.done();
        return finish_factory(scalar_tensor(scalar_arg(v, "scalar_tensor", "s"), dt, dev), rg);
      },
      py::arg("s"));

  bind_ranges(m);
  bind_tensor_methods(m);
}

namespace {

// arange, range, linspace, logspace, eye.
void bind_ranges(py::module_& m) {
  m.def("arange", [](py::args args, py::kwargs kwargs) {
    FactoryKwargs kw("arange", kwargs, true);
    Scalar start, end, step;
    range_args("arange", args, kw, start, end, step);
    auto dt = kw.dtype();
    Device dev = kw.device_or_default();
    bool rg = kw.requires_grad();
    kw.ignore_layout();
    kw.done();
    return kw.finish(arange(start, end, step, dt, dev), rg);
  });
  m.def("range", [](py::args args, py::kwargs kwargs) {
    if (PyErr_WarnEx(
            PyExc_UserWarning,
            "ember.range is deprecated and will be removed in a future release because its "
            "behavior is inconsistent with Python's range builtin. Instead, use ember.arange, "
            "which produces values in [start, end).",
            1) < 0)
      throw py::error_already_set();
    FactoryKwargs kw("range", kwargs);
    Scalar start, end, step;
    range_args("range", args, kw, start, end, step);
    DType dt = kw.dtype().value_or(default_dtype());
    Device dev = kw.device_or_default();
    bool rg = kw.requires_grad();
    kw.ignore_layout();
    kw.done();
    double s = start.to_double(), e = end.to_double(), d = step.to_double();
    EMBER_CHECK(d != 0, "step must be nonzero");
    EMBER_CHECK(std::isfinite(s) && std::isfinite(e), "unsupported range: ", s, " -> ", e);
    EMBER_CHECK((d > 0 && e >= s) || (d < 0 && e <= s),
                "upper bound and larger bound inconsistent with step sign");
    double n = std::floor((e - s) / d) + 1;
    EMBER_CHECK(n >= 0 && n < 9.2e18, "invalid size, possible overflow?");
    Tensor out = empty(Shape{int64_t(n)}, dt, dev);
    if (out.numel()) {
      if (is_integral(dt, true))
        arange_stub.get(dev)(out, Scalar(int64_t(s)), Scalar(int64_t(d)));
      else
        arange_stub.get(dev)(out, Scalar(s), Scalar(d));
    }
    return finish_factory(out, rg);
  });
  m.def(
      "linspace",
      [](py::handle start, py::handle end, py::object steps, py::kwargs kwargs) {
        FactoryKwargs kw("linspace", kwargs, true);
        // Old PyTorch (and the tutorials) allow linspace(start, end): steps=100.
        int64_t n = steps.is_none() ? 100 : int_arg(steps, "linspace", "steps");
        DType dt = kw.dtype().value_or(default_dtype());
        Device dev = kw.device_or_default();
        bool rg = kw.requires_grad();
        kw.ignore_layout();
        kw.done();
        return kw.finish(linspace(scalar_arg(start, "linspace", "start").to_double(),
                                  scalar_arg(end, "linspace", "end").to_double(), n, dt, dev),
                         rg);
      },
      py::arg("start"), py::arg("end"), py::arg("steps") = py::none());
  m.def(
      "logspace",
      [](py::handle start, py::handle end, py::object steps, py::handle base, py::kwargs kwargs) {
        FactoryKwargs kw("logspace", kwargs, true);
        int64_t n = steps.is_none() ? 100 : int_arg(steps, "logspace", "steps");
        DType dt = kw.dtype().value_or(default_dtype());
        Device dev = kw.device_or_default();
        bool rg = kw.requires_grad();
        kw.ignore_layout();
        kw.done();
        return kw.finish(logspace(scalar_arg(start, "logspace", "start").to_double(),
                                  scalar_arg(end, "logspace", "end").to_double(), n,
                                  scalar_arg(base, "logspace", "base").to_double(), dt, dev),
                         rg);
      },
      py::arg("start"), py::arg("end"), py::arg("steps") = py::none(), py::arg("base") = 10.0);
  m.def(
      "eye",
      [](py::handle n, py::object mo, py::kwargs kwargs) {
        FactoryKwargs kw("eye", kwargs, true);
        std::optional<int64_t> mm;
        if (!mo.is_none()) mm = int_arg(mo, "eye", "m");
        DType dt = kw.dtype().value_or(default_dtype());
        Device dev = kw.device_or_default();
        bool rg = kw.requires_grad();
        kw.ignore_layout();
        kw.done();
        return kw.finish(eye(int_arg(n, "eye", "n"), mm, dt, dev), rg);
      },
      py::arg("n"), py::arg("m") = py::none());
}

// The dtype conversions (float(), long(), type(), ...) and Tensor.new_*.
void bind_tensor_methods(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);
  cls.def("float", [](const Tensor& t, py::kwargs) { return conv(t, DType::Float32); })
      .def("double", [](const Tensor& t, py::kwargs) { return conv(t, DType::Float64); })
      .def("half", [](const Tensor& t, py::kwargs) { return conv(t, DType::Float16); })
      .def("bfloat16", [](const Tensor& t, py::kwargs) { return conv(t, DType::BFloat16); })
      .def("long", [](const Tensor& t, py::kwargs) { return conv(t, DType::Int64); })
      .def("int", [](const Tensor& t, py::kwargs) { return conv(t, DType::Int32); })
      .def("short", [](const Tensor& t, py::kwargs) { return conv(t, DType::Int16); })
      .def("char", [](const Tensor& t, py::kwargs) { return conv(t, DType::Int8); })
      .def("byte", [](const Tensor& t, py::kwargs) { return conv(t, DType::UInt8); })
      .def("bool", [](const Tensor& t, py::kwargs) { return conv(t, DType::Bool); })
      .def("type", &tensor_type, py::arg("dtype") = py::none())
      .def("type_as",
           [](const Tensor& t, const Tensor& o) {
             Tensor r = to_dtype(t, o.dtype());
             return o.device().type != r.device().type ? to_device(r, o.device()) : r;
           })
      .def(
          "new_tensor",
          [](const Tensor& self, py::handle data, py::kwargs kwargs) {
            FactoryKwargs kw("new_tensor", kwargs);
            DType dt = kw.dtype().value_or(self.dtype());
            Device dev = kw.device().value_or(self.device());
            bool rg = kw.requires_grad();
            kw.ignore_layout();
            kw.done();
            return finish_factory(tensor_from_data(data, dt, dev, "new_tensor"), rg);
          },
          py::arg("data"))
      .def(
          "new_full",
          [](const Tensor& self, py::handle size, py::handle fill, py::kwargs kwargs) {
            FactoryKwargs kw("new_full", kwargs);
            DType dt = kw.dtype().value_or(self.dtype());
            Device dev = kw.device().value_or(self.device());
            bool rg = kw.requires_grad();
            kw.ignore_layout();
            kw.done();
            return finish_factory(full(shape_arg(size, "new_full", "size"),
                                       scalar_arg(fill, "new_full", "fill_value"), dt, dev),
                                  rg);
          },
          py::arg("size"), py::arg("fill_value"));
  auto new_sized = [&cls](const char* name, int kind) {
    cls.def(name, [name, kind](const Tensor& self, py::args args, py::kwargs kwargs) {
      FactoryKwargs kw(name, kwargs);
      Shape s = sizes_of(name, args, kw);
      DType dt = kw.dtype().value_or(self.dtype());
      Device dev = kw.device().value_or(self.device());
      bool rg = kw.requires_grad();
      kw.ignore_layout();
      kw.done();
      Tensor t = kind == 2 ? empty(s, dt, dev) : kind == 1 ? ones(s, dt, dev) : zeros(s, dt, dev);
      return finish_factory(t, rg);
    });
  };
  new_sized("new_zeros", 0);
  new_sized("new_ones", 1);
  new_sized("new_empty", 2);
  // Legacy Tensor.new(*sizes) / Tensor.new(data): same dtype and device as self.
  cls.def("new", [](const Tensor& self, py::args args, py::kwargs kwargs) {
    FactoryKwargs kw("new", kwargs);
    Device dev = kw.device().value_or(self.device());
    kw.done();
    if (args.size() == 0) return empty(Shape{0}, self.dtype(), dev);
    py::handle a0 = args[0];
    if (args.size() == 1 && (is_data_sequence(a0) || is_numpy_array(a0)) &&
        !py::isinstance(a0, py::module_::import("ember").attr("Size")))
      return tensor_from_data(a0, self.dtype(), dev, "new");
    return empty(shape_from_args(args, "new", "size"), self.dtype(), dev);
  });
}

}  // namespace

}  // namespace ember::python
