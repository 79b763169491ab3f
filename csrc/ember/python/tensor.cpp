// The Tensor, dtype and device classes: attributes, views, conversions.
#include <pybind11/numpy.h>

#include "ember/autograd/grad_mode.h"
#include "ember/autograd/node.h"
#include "ember/ops/ops.h"
#include "ember/ops/view.h"
#include "ember/python/bind.h"

namespace ember::python {

void set_size_class(py::object cls);

namespace {

Tensor cpu_for_read(const Tensor& t) { return to_device(t, Device()); }

py::object element_to_py(DType dt, const char* p) {
  return dispatch_all(dt, "item", [&](auto tag) -> py::object {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same<T, bool>::value) {
      uint8_t byte;  // any nonzero byte reads as True, without loading a non-bool as bool
      std::memcpy(&byte, p, 1);
      return py::bool_(byte != 0);
    }
    T v;
    std::memcpy(&v, p, sizeof(T));
    if constexpr (std::is_same<T, bool>::value)
      return py::bool_(v);
    else if constexpr (std::is_integral<T>::value)
      return py::int_(int64_t(v));
    else
      return py::float_(double(v));
  });
}

py::object item(const Tensor& t) {
  EMBER_CHECK(t.numel() == 1, "a Tensor with ", t.numel(),
              " elements cannot be converted to Scalar (item() needs exactly one element; shape ",
              shape_str(t.sizes()), ")");
  Tensor c = cpu_for_read(t);
  return element_to_py(c.dtype(), c.data_ptr());
}

py::object tolist_rec(const Tensor& t, int64_t dim, const char* p) {
  if (dim == t.dim()) return element_to_py(t.dtype(), p);
  // The stride of an empty tensor or of a size-1 dim may be anything (zeros(0, 1, 2**63 - 1),
  // as_strided([1], [2**62])) and is never stepped: no address arithmetic with it (found by
  // tests/test_fuzz.py). Otherwise every element lies in the storage, so st cannot overflow.
  const int64_t n = t.sizes()[dim];
  const int64_t st = t.numel() && n > 1 ? t.strides()[dim] * t.element_size() : 0;
  py::list l(n);
  for (int64_t i = 0; i < n; ++i)
    PyList_SET_ITEM(l.ptr(), i, tolist_rec(t, dim + 1, p + i * st).release().ptr());
  return std::move(l);
}

py::object tolist(const Tensor& t) {
  Tensor c = cpu_for_read(t);
  return tolist_rec(c, 0, c.data_ptr());
}

// to(dtype) / to(device, dtype=None) / to(tensor) / to(dtype=, device=, non_blocking=, copy=)
Tensor to(const Tensor& self, const py::args& args, const py::kwargs& kwargs) {
  std::optional<DType> dtype;
  std::optional<Device> device;
  bool copy = false;
  for (size_t i = 0; i < args.size(); ++i) {
    py::handle a = args[i];
    Tensor* other;
    if (as_tensor(a, other)) {
      dtype = other->dtype();
      device = other->device();
    } else if (py::isinstance<PyDType>(a) || a.ptr() == (PyObject*)&PyFloat_Type ||
               a.ptr() == (PyObject*)&PyLong_Type || a.ptr() == (PyObject*)&PyBool_Type) {
      dtype = dtype_arg(a, "to");
    } else if (py::isinstance<PyDevice>(a) || PyUnicode_Check(a.ptr()) ||
               (PyLong_Check(a.ptr()) && !PyBool_Check(a.ptr()))) {
      device = device_arg(a);
    } else if (PyBool_Check(a.ptr())) {
      if (i + 1 == args.size() || true) {  // positional non_blocking / copy, as PyTorch allows
        if (!dtype && !device)
          raise(ErrorKind::Type, "to() received an invalid combination of arguments");
      }
    } else {
      raise(ErrorKind::Type,
            "to() received an invalid combination of arguments - got argument of type ",
            type_name(a), "; expected a dtype, a device, a device string or a Tensor");
    }
  }
  for (auto kv : kwargs) {
    std::string k = py::str(kv.first);
    if (k == "dtype")
      dtype = optional_dtype(kv.second, "to");
    else if (k == "device")
      device = optional_device(kv.second);
    else if (k == "copy")
      copy = kv.second.cast<bool>();
    else if (k == "non_blocking" || k == "memory_format")
      continue;
    else
      raise(ErrorKind::Type, "to() got an unexpected keyword argument '", k, "'");
  }
  Tensor r = self;
  bool copied = false;
  if (device && (device->type != r.device().type ||
                 (device->index >= 0 && device->index != r.device().index))) {
    r = to_device(r, *device);
    copied = true;
  }
  if (dtype && *dtype != r.dtype()) {
    r = to_dtype(r, *dtype);
    copied = true;
  }
  if (copy && !copied) r = clone(r);
  return r;
}

// NumPy interop ------------------------------------------------------------------------

const char* numpy_format(DType t) {
  switch (t) {
    case DType::Bool:
      return "?";
    case DType::UInt8:
      return "B";
    case DType::Int8:
      return "b";
    case DType::Int16:
      return "h";
    case DType::Int32:
      return "i";
    case DType::Int64:
      return "q";
    case DType::Float16:
      return "e";
    case DType::Float32:
      return "f";
    case DType::Float64:
      return "d";
    default:
      return nullptr;
  }
}

py::array to_numpy(const Tensor& t, bool force) {
  EMBER_CHECK_TYPE(!t.is_sparse(),
                   "can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.");
  Tensor c = t;
  if (autograd::requires_grad(c)) {
    EMBER_CHECK(
        force,
        "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.");
    c = autograd::detach(c);
  }
  if (!c.device().is_cpu()) {
    EMBER_CHECK_TYPE(force, "can't convert ", c.device().str(),
                     " device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host "
                     "memory first.");
    c = cpu_for_read(c);
  }
  const char* fmt = numpy_format(c.dtype());
  EMBER_CHECK_TYPE(fmt, "Got unsupported ScalarType ", dtype_name(c.dtype()), ": NumPy has no ",
                   dtype_name(c.dtype()), "; convert with .float() first");
  std::vector<ssize_t> shape(c.sizes().begin(), c.sizes().end()), strides;
  for (int64_t s : c.strides()) strides.push_back(s * c.element_size());
  // The capsule owns a reference to the tensor, so NumPy keeps the storage alive.
  py::capsule owner(new Tensor(c), [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(py::dtype(std::string(fmt)), shape, strides, c.data_ptr(), owner);
}

void release_pyobject(void* ctx) {
  // Storages can die on any thread; NumPy's refcount needs the GIL.
  if (!Py_IsInitialized()) return;
  py::gil_scoped_acquire gil;
  Py_DECREF(static_cast<PyObject*>(ctx));
}

}  // namespace

Tensor from_numpy(py::handle obj) {
  EMBER_CHECK_TYPE(py::isinstance<py::array>(obj), "expected np.ndarray (got ", type_name(obj),
                   ")");
  py::array arr = py::reinterpret_borrow<py::array>(obj);
  std::string kind(1, arr.dtype().kind());
  int64_t itemsize = arr.itemsize();
  DType dt;
  if (kind == "b")
    dt = DType::Bool;
  else if (kind == "u" && itemsize == 1)
    dt = DType::UInt8;
  else if (kind == "i" && itemsize == 1)
    dt = DType::Int8;
  else if (kind == "i" && itemsize == 2)
    dt = DType::Int16;
  else if (kind == "i" && itemsize == 4)
    dt = DType::Int32;
  else if (kind == "i" && itemsize == 8)
    dt = DType::Int64;
  else if (kind == "f" && itemsize == 2)
    dt = DType::Float16;
  else if (kind == "f" && itemsize == 4)
    dt = DType::Float32;
  else if (kind == "f" && itemsize == 8)
    dt = DType::Float64;
  else
    raise(ErrorKind::Type, "can't convert np.ndarray of type ", std::string(py::str(arr.dtype())),
          ". The only supported types are: float64, float32, float16, int64, int32, int16, int8, "
          "uint8, and bool.");
  char bo = arr.dtype().byteorder();
  EMBER_CHECK_VALUE(bo != '>',
                    "given numpy array has byte order different from the native byte "
                    "order. Conversion between byte orders is currently not supported.");
  Shape sizes, strides;
  int64_t extent = 1;
  bool empty_arr = false;
  for (ssize_t d = 0; d < arr.ndim(); ++d) {
    int64_t sz = arr.shape(d), st = arr.strides(d);
    EMBER_CHECK_VALUE(st >= 0,
                      "At least one stride in the given numpy array is negative, and "
                      "tensors with negative strides are not currently supported. (You can "
                      "probably work around this by making a copy of your array with "
                      "array.copy().)");
    EMBER_CHECK_VALUE(st % itemsize == 0,
                      "given numpy array strides not a multiple of the element "
                      "byte size. Copy the numpy array to reallocate the memory.");
    sizes.push_back(sz);
    strides.push_back(st / itemsize);
    if (sz == 0)
      empty_arr = true;
    else
      extent += (sz - 1) * (st / itemsize);
  }
  size_t nbytes = empty_arr ? 0 : size_t(extent * itemsize);
  Py_INCREF(arr.ptr());
  DataPtr dp{const_cast<void*>(arr.data()), arr.ptr(), &release_pyobject};
  return from_blob(dp, nbytes, Device(), dt, sizes, strides, 0);
}

namespace {

// ember.dtype and the dtype attributes (ember.float32, ...).
void bind_dtype(py::module_& m) {
  py::class_<PyDType>(m, "dtype")
      .def_property_readonly("itemsize", [](const PyDType& d) { return element_size(d.dtype); })
      .def_property_readonly("is_floating_point",
                             [](const PyDType& d) { return is_floating(d.dtype); })
      .def_property_readonly("is_signed", [](const PyDType& d) { return is_signed(d.dtype); })
      .def_property_readonly("is_complex", [](const PyDType&) { return false; })
      .def("__repr__", [](const PyDType& d) { return std::string("ember.") + dtype_name(d.dtype); })
      .def("__reduce__", [](const PyDType& d) { return std::string(dtype_name(d.dtype)); })
      .def("to_real", [](const PyDType& d) { return dtype_object(d.dtype); });
#define EMBER_DTYPE_ATTR(c, n, p, k) m.attr(#p) = dtype_object(DType::n);
  EMBER_FORALL_DTYPES(EMBER_DTYPE_ATTR)
#undef EMBER_DTYPE_ATTR
}

// The defaults saved by `with ember.device(...)` blocks, innermost last.
std::vector<Device>& device_stack() {
  static std::vector<Device> stack;
  return stack;
}

// ember.device.
void bind_device(py::module_& m) {
  py::class_<PyDevice>(m, "device")
      .def(py::init([](py::object type, py::object index) {
             Device d = device_arg(type);
             if (!index.is_none()) {
               EMBER_CHECK(
                   d.index < 0,
                   "type (string) must not include an index because index was passed explicitly: ",
                   std::string(py::str(type)));
               int64_t i = int_arg(index, "device", "index");
               EMBER_CHECK(i >= 0, "Device index must not be negative");
               d.index = int16_t(i);
             }
             return PyDevice{d};
           }),
           py::arg("type"), py::arg("index") = py::none())
      .def_property_readonly("type",
                             [](const PyDevice& d) { return d.device.is_cpu() ? "cpu" : "cuda"; })
      .def_property_readonly("index",
                             [](const PyDevice& d) -> py::object {
                               if (d.device.index < 0) return py::none();
                               return py::int_(d.device.index);
                             })
      .def("__repr__",
           [](const PyDevice& d) {
             std::string s =
                 "device(type='" + std::string(d.device.is_cpu() ? "cpu" : "cuda") + "'";
             if (d.device.index >= 0) s += ", index=" + std::to_string(d.device.index);
             return s + ")";
           })
      .def("__str__", [](const PyDevice& d) { return d.device.str(); })
      .def("__eq__",
           [](const PyDevice& a, py::handle b) {
             if (py::isinstance<PyDevice>(b)) return a.device == b.cast<PyDevice&>().device;
             if (PyUnicode_Check(b.ptr())) return a.device.str() == b.cast<std::string>();
             return false;
           })
      .def("__hash__", [](const PyDevice& d) { return int(d.device.type) * 1000 + d.device.index; })
      // Picklable and copyable (PyTorch's torch.device is): a module holding self.device, or
      // a checkpoint holding a device, must survive copy.deepcopy and pickling.
      .def("__reduce__",
           [](py::handle self) {
             return py::make_tuple(py::type::of(self),
                                   py::make_tuple(self.cast<const PyDevice&>().device.str()));
           })
      .def("__copy__", [](const PyDevice& d) { return d; })
      .def("__deepcopy__", [](const PyDevice& d, py::handle) { return d; })
      // `with ember.device("cuda"):` makes it the default device for the block.
      .def("__enter__",
           [](const PyDevice& d) {
             device_stack().push_back(default_device());
             default_device() = d.device;
             return d;
           })
      .def("__exit__", [](const PyDevice&, py::args) {
        if (!device_stack().empty()) {
          default_device() = device_stack().back();
          device_stack().pop_back();
        }
      });
}

// Default dtype, from_numpy and the CPU allocator statistics.
void bind_tensor_globals(py::module_& m) {
  m.def("_set_size_class", &set_size_class);
  m.def("get_default_dtype", [] { return dtype_object(default_dtype()); });
  m.def("set_default_dtype",
        [](py::handle d) { set_default_dtype(dtype_arg(d, "set_default_dtype")); });
  m.def("from_numpy", &from_numpy);
  m.def("get_default_device", [] { return PyDevice{default_device()}; });
  m.def(
      "set_default_device",
      [](py::handle d) { default_device() = d.is_none() ? Device() : device_arg(d); },
      py::arg("device"));
  m.def("_legacy_type_name", [](const Tensor& t) { return legacy_type_name(t.dtype()); });
  m.def("_cpu_allocator_stats", [] {
    auto s = cpu_allocator_stats();
    py::dict d;
    d["allocated_bytes"] = s.allocated_bytes;
    d["cached_bytes"] = s.cached_bytes;
    d["cache_hits"] = s.cache_hits;
    d["cache_misses"] = s.cache_misses;
    d["peak_allocated_bytes"] = s.peak_allocated_bytes;
    return d;
  });
  m.def("_cpu_reset_peak_memory_stats", &cpu_allocator_reset_peak);
  m.def("_cpu_empty_cache", &cpu_allocator_empty_cache);
}

// The Tensor class: its constructor, shape, dtype and device queries, conversions.
void bind_tensor_class(py::module_& m) {
  py::class_<Tensor, std::unique_ptr<Tensor, TensorPyDeleter>> cls(m, "Tensor", py::dynamic_attr());
  // The legacy constructor: Tensor() / Tensor(*sizes) (uninitialized, default
  // dtype) / Tensor(data) (a copy in the default dtype) / Tensor(tensor) (an alias).
  cls.def(py::init([](py::args args, py::kwargs kwargs) {
    EMBER_CHECK_TYPE(kwargs.empty() || (kwargs.size() == 1 && kwargs.contains("device")),
                     "Tensor(): only the 'device' keyword is accepted");
    Device dev = kwargs.contains("device") ? device_arg(kwargs["device"]) : Device();
    if (args.size() == 0) return empty(Shape{0}, default_dtype(), dev);
    Tensor* t;
    // Tensor(tensor): an alias; of a tensor that requires grad, one that autograd records
    // (AliasBackward0, x[...]), as PyTorch's is.
    if (args.size() == 1 && as_tensor(args[0], t)) {
      if (!autograd::requires_grad(*t)) return alias(*t, true);
      return py::reinterpret_borrow<py::object>(args[0])
          .attr("__getitem__")(py::ellipsis())
          .cast<Tensor>();
    }
    bool all_ints = true;
    for (py::handle a : args) all_ints &= PyLong_Check(a.ptr()) && !PyBool_Check(a.ptr());
    if (all_ints) return empty(shape_from_args(args, "Tensor", "size"), default_dtype(), dev);
    EMBER_CHECK_TYPE(args.size() == 1, "Tensor(): expected sizes (ints) or one data argument, got ",
                     args.size(), " arguments");
    py::object r = py::module_::import("ember").attr("tensor")(
        args[0], py::arg("dtype") = dtype_object(default_dtype()),
        py::arg("device") = device_object(dev));
    return r.cast<Tensor>();
  }));
  cls.def_property_readonly("shape", [](const Tensor& t) { return size_object(t.sizes()); })
      .def(
          "size",
          [](const Tensor& t, py::object dim) -> py::object {
            if (dim.is_none()) return size_object(t.sizes());
            return py::int_(t.size(int_arg(dim, "size", "dim")));
          },
          py::arg("dim") = py::none())
      .def(
          "stride",
          [](const Tensor& t, py::object dim) -> py::object {
            // A sparse tensor's strides read as zeros, as PyTorch's.
            if (t.is_sparse() && !dim.is_none()) {
              wrap_dim(int_arg(dim, "stride", "dim"), t.dim(), false);
              return py::int_(0);
            }
            if (dim.is_none()) {
              py::tuple r(t.dim());
              for (int64_t i = 0; i < t.dim(); ++i) r[i] = t.is_sparse() ? 0 : t.strides()[i];
              return std::move(r);
            }
            return py::int_(t.stride(int_arg(dim, "stride", "dim")));
          },
          py::arg("dim") = py::none())
      .def_property_readonly("dtype", [](const Tensor& t) { return dtype_object(t.dtype()); })
      .def_property_readonly("device", [](const Tensor& t) { return device_object(t.device()); })
      .def_property_readonly("is_cuda", [](const Tensor& t) { return t.device().is_cuda(); })
      .def_property_readonly("is_cpu", [](const Tensor& t) { return t.device().is_cpu(); })
      .def_property_readonly("ndim", &Tensor::dim)
      .def("dim", &Tensor::dim)
      .def("ndimension", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def("nelement", &Tensor::numel)
      .def("element_size", &Tensor::element_size)
      .def_property_readonly("itemsize", &Tensor::element_size)
      .def_property_readonly("nbytes", [](const Tensor& t) { return t.numel() * t.element_size(); })
      .def("storage_offset",
           [](const Tensor& t) { return t.is_sparse() ? int64_t(0) : t.storage_offset(); })
      .def("data_ptr",
           [](const Tensor& t) {
             EMBER_CHECK(!t.is_sparse(),
                         "Cannot access data pointer of Tensor that doesn't have storage");
             return reinterpret_cast<uintptr_t>(t.data_ptr());
           })
      .def("_storage_ptr",
           [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.storage()->data.ptr); })
      .def("_storage_nbytes", [](const Tensor& t) { return t.storage()->nbytes; })
      .def("_version_", [](const Tensor& t) { return t.version(); })
      .def_property_readonly("_version", [](const Tensor& t) { return t.version(); })
      .def("is_contiguous",
           [](const Tensor& t, py::kwargs) {
             return t.is_contiguous();  // false for a sparse tensor, as PyTorch
           })
      .def("is_floating_point", [](const Tensor& t) { return is_floating(t.dtype()); })
      .def("is_complex", [](const Tensor&) { return false; })
      .def("is_signed", [](const Tensor& t) { return is_signed(t.dtype()); })
      .def("contiguous", [](const Tensor& t, py::kwargs) { return contiguous(t); })
      .def("clone", [](const Tensor& t, py::kwargs) { return clone(t); })
      .def("item", &item)
      .def("tolist", &tolist)
      .def(
          "numpy", [](const Tensor& t, bool force) { return to_numpy(t, force); }, py::kw_only(),
          py::arg("force") = false)
      .def("to", &to)
      .def("cpu", [](const Tensor& t) { return to_device(t, Device()); })
      .def("_is_same", [](const Tensor& a, const Tensor& b) { return a.is_same(b); })
      .def("__len__",
           [](const Tensor& t) {
             EMBER_CHECK_TYPE(t.dim() > 0, "len() of a 0-d tensor");
             return t.sizes()[0];
           })
      .def("__hash__", [](py::handle self) {
        return py::hash(py::int_(reinterpret_cast<uintptr_t>(self.ptr())));
      });
}

// The view methods on Tensor (view, reshape, transpose, permute, expand, ...).
void bind_tensor_views(py::module_& m) {
  tensor_class(m)
      .def("view",
           [](const Tensor& t, py::args args) {
             if (args.size() == 1 && (py::isinstance<PyDType>(args[0]))) {
               DType d = dtype_arg(args[0]);
               if (t.is_sparse()) raise_not_strided(t.layout(), "view");
               EMBER_CHECK(element_size(d) == t.element_size(),
                           "view(dtype): only dtypes of the same size are supported (",
                           dtype_name(t.dtype()), " -> ", dtype_name(d), ")");
               Tensor v = make_view(t, t.sizes(), t.strides(), t.storage_offset());
               v.impl()->dtype = d;
               return v;
             }
             return view(t, shape_from_args(args, "view", "size"));
           })
      .def("view_as", [](const Tensor& t, const Tensor& o) { return view(t, o.sizes()); })
      .def("reshape",
           [](const Tensor& t, py::args args) {
             return reshape(t, shape_from_args(args, "reshape", "shape"));
           })
      .def("reshape_as", [](const Tensor& t, const Tensor& o) { return reshape(t, o.sizes()); })
      .def("t", &ember::t)
      .def_property_readonly("T",
                             [](const Tensor& a) {
                               Shape dims;
                               for (int64_t i = a.dim() - 1; i >= 0; --i) dims.push_back(i);
                               return permute(a, dims);
                             })
      .def_property_readonly(
          "mT",
          [](const Tensor& a) {
            EMBER_CHECK(a.dim() >= 2,
                        "tensor.mT is only supported on matrices or batches of matrices. Got ",
                        a.dim(), "-D tensor.");
            return transpose(a, -2, -1);
          })
      .def("transpose",
           [](const Tensor& a, py::handle d0, py::handle d1) {
             return transpose(a, int_arg(d0, "transpose", "dim0"),
                              int_arg(d1, "transpose", "dim1"));
           })
      .def("swapaxes", [](const Tensor& a, int64_t d0, int64_t d1) { return transpose(a, d0, d1); })
      .def("permute",
           [](const Tensor& a, py::args args) {
             return permute(a, shape_from_args(args, "permute", "dims"));
           })
      .def(
          "squeeze",
          [](const Tensor& a, py::object dim) {
            if (dim.is_none()) return squeeze(a);
            return squeeze(a, shape_arg(dim, "squeeze", "dim"));
          },
          py::arg("dim") = py::none())
      .def("unsqueeze", [](const Tensor& a,
                           py::handle d) { return unsqueeze(a, int_arg(d, "unsqueeze", "dim")); })
      .def("expand",
           [](const Tensor& a, py::args args) {
             return expand(a, shape_from_args(args, "expand", "size"));
           })
      .def("expand_as", [](const Tensor& a, const Tensor& o) { return expand(a, o.sizes()); })
      .def("narrow",
           [](const Tensor& a, int64_t dim, py::handle start, int64_t len) {
             return narrow(a, dim, int_arg(start, "narrow", "start"), len);
           })
      .def("select", [](const Tensor& a, int64_t dim,
                        py::handle i) { return select(a, dim, int_arg(i, "select", "index")); })
      .def("diagonal", &diagonal, py::arg("offset") = 0, py::arg("dim1") = 0, py::arg("dim2") = 1)
      .def(
          "unbind",
          [](const Tensor& a, int64_t dim) { return py::tuple(py::cast(unbind(a, dim))); },
          py::arg("dim") = 0)
      .def(
          "split",
          [](const Tensor& a, py::handle s, int64_t dim) {
            if (PyLong_Check(s.ptr())) return py::tuple(py::cast(split(a, s.cast<int64_t>(), dim)));
            return py::tuple(
                py::cast(split_with_sizes(a, shape_arg(s, "split", "split_size"), dim)));
          },
          py::arg("split_size"), py::arg("dim") = 0)
      .def(
          "chunk",
          [](const Tensor& a, int64_t c, int64_t dim) {
            return py::tuple(py::cast(chunk(a, c, dim)));
          },
          py::arg("chunks"), py::arg("dim") = 0)
      .def("flatten", &flatten, py::arg("start_dim") = 0, py::arg("end_dim") = -1)
      .def("unflatten",
           [](const Tensor& a, int64_t dim, py::handle sizes) {
             return unflatten(a, dim, shape_arg(sizes, "unflatten", "sizes"));
           })
      .def("movedim",
           [](const Tensor& a, py::handle s, py::handle d) {
             return movedim(a, shape_arg(s, "movedim", "source"),
                            shape_arg(d, "movedim", "destination"));
           })
      .def(
          "as_strided",
          [](const Tensor& a, py::handle size, py::handle stride, py::object off) {
            std::optional<int64_t> o;
            if (!off.is_none()) o = int_arg(off, "as_strided", "storage_offset");
            return as_strided(a, shape_arg(size, "as_strided", "size"),
                              shape_arg(stride, "as_strided", "stride"), o);
          },
          py::arg("size"), py::arg("stride"), py::arg("storage_offset") = py::none())
      .def("_alias", [](const Tensor& a, bool share_version) { return alias(a, share_version); })
      // A flat 1-D view over the whole storage (uint8 for the untyped storage),
      // sharing its version counter: what Tensor.storage()/untyped_storage() wrap.
      .def(
          "_storage_view",
          [](const Tensor& a, bool untyped) {
            DType dt = untyped ? DType::UInt8 : a.dtype();
            int64_t n = int64_t(a.storage()->nbytes) / element_size(dt);
            Tensor base = make_view(a, Shape{0}, Shape{1}, 0);
            base.impl()->dtype = dt;
            return make_view(base, Shape{n}, Shape{1}, 0);
          },
          py::arg("untyped") = false);
}

// Tensor.fill_, zero_ and copy_.
void bind_tensor_fill(py::module_& m) {
  tensor_class(m)
      .def("fill_",
           [](const Tensor& a, py::handle v) {
             Tensor* t;
             if (as_tensor(v, t)) return fill_(a, *t);
             return fill_(a, scalar_arg(v, "fill_", "value"));
           })
      .def("zero_", [](const Tensor& a) { return fill_(a, Scalar(int64_t(0))); })
      .def(
          "copy_", [](const Tensor& a, const Tensor& src, bool) { return copy_(a, src); },
          py::arg("src"), py::arg("non_blocking") = false);
}

}  // namespace

void init_tensor(py::module_& m) {
  bind_dtype(m);
  bind_device(m);
  bind_tensor_globals(m);
  bind_tensor_class(m);
  bind_tensor_views(m);
  bind_tensor_fill(m);
}

}  // namespace ember::python
