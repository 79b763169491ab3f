// Bindings: Tensor.__getitem__/__setitem__ (the index tuple is parsed here,
// with the GIL; the ops then run without it) and the indexing ops.
#include <pybind11/numpy.h>

#include "ember/ops/index.h"
#include "ember/ops/ops.h"
#include "ember/ops/view.h"
#include "ember/python/bind.h"

namespace ember::python {

Tensor from_numpy(py::handle obj);  // tensor.cpp

namespace {

[[noreturn]] void invalid_index(py::handle obj) {
  raise(ErrorKind::Index,
        "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
        "valid indices (got ",
        type_name(obj), ")");
}

bool is_ndarray(py::handle h) { return py::isinstance<py::array>(h); }

bool is_index_sequence(py::handle h) {
  PyObject* o = h.ptr();
  return PySequence_Check(o) && !PyUnicode_Check(o) && !PyBytes_Check(o) && !PyByteArray_Check(o);
}

/// NumPy integer/bool scalars: kind 'i'/'u' -> int, 'b' -> bool; false otherwise.
bool numpy_scalar(py::handle h, Scalar& out) {
  if (PyLong_Check(h.ptr()) || PyFloat_Check(h.ptr()) || PyBool_Check(h.ptr()) || is_ndarray(h))
    return false;
  Scalar s;
  if (!as_scalar(h, s) || s.is_floating()) return false;
  out = s;
  return true;
}

// Nested lists of ints/bools -> an int64 (or, when every leaf is a bool, a bool) tensor.
struct ListReader {
  Shape shape;
  std::vector<int64_t> values;
  bool all_bool = true;

  void leaf(py::handle e) {
    PyObject* o = e.ptr();
    Scalar s;
    Tensor* t;
    if (PyBool_Check(o)) {
      values.push_back(o == Py_True);
      return;
    }
    all_bool = false;
    if (PyLong_Check(o)) {
      values.push_back(int_arg(e, "index", "index"));
    } else if (numpy_scalar(e, s)) {
      if (!s.is_bool()) all_bool = false;
      values.push_back(s.to_int());
    } else if (as_tensor(e, t) && t->numel() == 1 && is_integral(t->dtype(), true)) {
      values.push_back(scalar_arg(e, "index", "index").to_int());
    } else if (!PyFloat_Check(o) && PyIndex_Check(o)) {
      values.push_back(int_arg(e, "index", "index"));
    } else {
      invalid_index(e);
    }
  }
  // The shape comes from the first element at each depth; read() checks the rest.
  void infer_shape(py::handle seq) {
    py::object cur = py::reinterpret_borrow<py::object>(seq);
    Tensor* t;
    while (is_index_sequence(cur) && !as_tensor(cur, t)) {
      // A tensor has at most kMaxDims dims: a deeper (or cyclic) list is an error before
      // read() recurses into it (as ember.tensor, python/factories.cpp).
      if (int64_t(shape.size()) >= kMaxDims)
        raise(ErrorKind::Value, "too many dimensions '", type_name(cur),
              "' in an index list (a tensor has at most ", kMaxDims,
              "; is the list nested too deeply or does it contain itself?)");
      Py_ssize_t n = PySequence_Size(cur.ptr());
      if (n < 0) throw py::error_already_set();
      shape.push_back(n);
      if (n == 0) break;
      cur = py::reinterpret_steal<py::object>(PySequence_GetItem(cur.ptr(), 0));
      if (!cur) throw py::error_already_set();
    }
  }
  void read(py::handle seq, size_t depth) {
    Py_ssize_t n = PySequence_Size(seq.ptr());
    if (n < 0) throw py::error_already_set();
    EMBER_CHECK_VALUE(shape[depth] == n, "expected sequence of length ", shape[depth], " at dim ",
                      depth, " (got ", n, ")");
    for (Py_ssize_t i = 0; i < n; ++i) {
      py::object e = py::reinterpret_steal<py::object>(PySequence_GetItem(seq.ptr(), i));
      if (!e) throw py::error_already_set();
      Tensor* t;
      bool nested = is_index_sequence(e) && !as_tensor(e, t);
      if (depth + 1 < shape.size()) {
        EMBER_CHECK_VALUE(nested, "expected sequence of length ", shape[depth + 1], " at dim ",
                          depth + 1, " (got ", type_name(e), ")");
        read(e, depth + 1);
      } else {
        EMBER_CHECK_VALUE(!nested, "expected a number at dim ", depth + 1,
                          " of the index list (got ", type_name(e), ")");
        leaf(e);
      }
    }
  }
};

Tensor sequence_to_tensor(py::handle seq) {
  ListReader r;
  r.infer_shape(seq);
  r.read(seq, 0);
  bool as_bool = r.all_bool && !r.values.empty();
  Tensor t = empty(r.shape, as_bool ? DType::Bool : DType::Int64);
  if (as_bool) {
    bool* p = t.data<bool>();
    for (size_t i = 0; i < r.values.size(); ++i) p[i] = r.values[i] != 0;
  } else if (!r.values.empty()) {
    std::memcpy(t.data<int64_t>(), r.values.data(), r.values.size() * sizeof(int64_t));
  }
  return t;
}

Tensor ndarray_to_index(py::handle arr) {
  Tensor t = from_numpy(arr);
  if (is_floating(t.dtype()))
    raise(ErrorKind::Index,
          "tensors used as indices must be long, int, byte or bool tensors (got a NumPy array "
          "of ",
          dtype_name(t.dtype()), ")");
  if (t.dtype() == DType::Bool || t.dtype() == DType::UInt8 || t.dtype() == DType::Int64) return t;
  return to_dtype(t, DType::Int64);
}

TensorIndex parse_one(py::handle obj) {
  PyObject* o = obj.ptr();
  if (o == Py_None) return TensorIndex::none();
  if (o == Py_Ellipsis) return TensorIndex::ellipsis();
  if (PyBool_Check(o)) return TensorIndex::boolean(o == Py_True);
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    EMBER_CHECK_INDEX(!overflow, "index ", std::string(py::str(obj)), " does not fit in int64");
    return TensorIndex::integer(v);
  }
  if (PySlice_Check(o)) {
    Py_ssize_t start, stop, step;
    if (PySlice_Unpack(o, &start, &stop, &step) < 0) throw py::error_already_set();
    EMBER_CHECK_VALUE(step > 0, "step must be greater than zero");
    return TensorIndex::slice(int64_t(start), int64_t(stop), int64_t(step));
  }
  Tensor* t;
  if (as_tensor(obj, t)) return TensorIndex::of(*t);
  Scalar s;
  if (numpy_scalar(obj, s))
    return s.is_bool() ? TensorIndex::boolean(s.to_bool()) : TensorIndex::integer(s.to_int());
  if (is_ndarray(obj)) return TensorIndex::of(ndarray_to_index(obj));
  if (is_index_sequence(obj)) return TensorIndex::of(sequence_to_tensor(obj));
  if (!PyFloat_Check(o) && PyIndex_Check(o))
    return TensorIndex::integer(int_arg(obj, "index", "index"));
  invalid_index(obj);
}

// PyTorch (after NumPy's legacy rule): a short non-tuple sequence holding a
// sequence, tensor, slice, Ellipsis or None is read as a tuple: x[[0, slice(None)]].
bool treat_sequence_as_tuple(py::handle index) {
  Tensor* t;
  if (as_tensor(index, t) || is_ndarray(index) || !is_index_sequence(index)) return false;
  Py_ssize_t n = PySequence_Size(index.ptr());
  if (n < 0) {
    PyErr_Clear();
    return false;
  }
  if (n >= 32) return false;
  for (Py_ssize_t i = 0; i < n; ++i) {
    py::object e = py::reinterpret_steal<py::object>(PySequence_GetItem(index.ptr(), i));
    if (!e) {
      PyErr_Clear();
      return false;
    }
    PyObject* p = e.ptr();
    if (as_tensor(e, t) || is_index_sequence(e) || PySlice_Check(p) || p == Py_Ellipsis ||
        p == Py_None)
      return true;
  }
  return false;
}

std::vector<TensorIndex> parse_index(const Tensor& self, py::handle index) {
  std::vector<TensorIndex> out;
  // x[0] on a 0-d tensor (a bare int, not the tuple x[0,]) has its own message, as in PyTorch.
  EMBER_CHECK_INDEX(
      !(self.dim() == 0 && PyLong_Check(index.ptr()) && !PyBool_Check(index.ptr())),
      "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in "
      "C++ to convert a 0-dim tensor to a number");
  if (PyTuple_Check(index.ptr()) || treat_sequence_as_tuple(index)) {
    py::sequence seq = py::reinterpret_borrow<py::sequence>(index);
    for (size_t i = 0, n = seq.size(); i < n; ++i) out.push_back(parse_one(seq[i]));
  } else {
    out.push_back(parse_one(index));
  }
  return out;
}

/// The value of x[...] = value: a Tensor, or a Python number as a 0-d tensor of x's dtype.
Tensor value_to_tensor(const Tensor& self, py::handle value) {
  Tensor* t;
  if (as_tensor(value, t)) return *t;
  Scalar s;
  if (as_scalar(value, s)) return scalar_tensor(s, self.dtype(), self.device());
  raise(ErrorKind::Type, "can't assign a ", type_name(value), " to a ",
        legacy_type_name(self.dtype()));
}

std::vector<std::optional<Tensor>> indices_arg(py::handle h, const char* op) {
  EMBER_CHECK_TYPE(PyTuple_Check(h.ptr()) || PyList_Check(h.ptr()), op,
                   "(): argument 'indices' must be tuple of Tensors, not ", type_name(h));
  std::vector<std::optional<Tensor>> out;
  for (py::handle e : py::reinterpret_borrow<py::sequence>(h)) {
    Tensor* t;
    if (e.is_none())
      out.emplace_back();
    else if (as_tensor(e, t))
      out.emplace_back(*t);
    else
      raise(ErrorKind::Type, op,
            "(): argument 'indices' must be tuple of Tensors, but found element of type ",
            type_name(e));
  }
  return out;
}

int64_t dim_arg(py::handle h, const char* op) { return int_arg(h, op, "dim"); }

Tensor index_arg(py::handle h, const char* op) {
  Tensor* t;
  EMBER_CHECK_TYPE(as_tensor(h, t), op, "(): argument 'index' must be Tensor, not ", type_name(h));
  return *t;
}

Tensor tensor_arg(py::handle h, const char* op, const char* arg) {
  Tensor* t;
  EMBER_CHECK_TYPE(as_tensor(h, t), op, "(): argument '", arg, "' must be Tensor, not ",
                   type_name(h));
  return *t;
}

// scatter(dim, index, src) / scatter(dim, index, value), optionally reduce='add'|'multiply'.
Tensor do_scatter(const Tensor& self, py::handle dim, py::handle index, py::object src,
                  py::object value, py::object reduce, bool inplace) {
  const char* op = inplace ? "scatter_" : "scatter";
  std::optional<std::string> r;
  if (!reduce.is_none()) {
    EMBER_CHECK_TYPE(py::isinstance<py::str>(reduce), op, "(): argument 'reduce' must be str, not ",
                     type_name(reduce));
    r = reduce.cast<std::string>();
  }
  EMBER_CHECK_TYPE(src.is_none() != value.is_none(), op,
                   "(): expected exactly one of 'src' or 'value'");
  int64_t d = dim_arg(dim, op);
  Tensor idx = index_arg(index, op);
  py::handle v = src.is_none() ? value : src;
  Tensor* t;
  if (as_tensor(v, t)) {
    Tensor s = *t;
    if (r) return inplace ? scatter_(self, d, idx, s, *r) : scatter(self, d, idx, s, *r);
    py::gil_scoped_release nogil;
    return inplace ? scatter_(self, d, idx, s) : scatter(self, d, idx, s);
  }
  Scalar sv = scalar_arg(v, op, "value");
  if (r) return inplace ? scatter_(self, d, idx, sv, *r) : scatter(self, d, idx, sv, *r);
  py::gil_scoped_release nogil;
  return inplace ? scatter_(self, d, idx, sv) : scatter(self, d, idx, sv);
}

Tensor do_masked_fill(const Tensor& self, py::handle mask, py::handle value, bool inplace) {
  const char* op = inplace ? "masked_fill_" : "masked_fill";
  Tensor m = tensor_arg(mask, op, "mask");
  Tensor* t;
  if (as_tensor(value, t)) {
    Tensor v = *t;
    py::gil_scoped_release nogil;
    return inplace ? masked_fill_(self, m, v) : masked_fill(self, m, v);
  }
  Scalar s = scalar_arg(value, op, "value");
  py::gil_scoped_release nogil;
  return inplace ? masked_fill_(self, m, s) : masked_fill(self, m, s);
}

py::object do_nonzero(const Tensor& self, bool as_tuple) {
  if (!as_tuple) {
    Tensor r;
    {
      py::gil_scoped_release nogil;
      r = nonzero(self);
    }
    return wrap(r);
  }
  std::vector<Tensor> parts;
  {
    py::gil_scoped_release nogil;
    parts = nonzero_numpy(self);
  }
  py::tuple out(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) out[i] = wrap(parts[i]);
  return std::move(out);
}

}  // namespace

namespace {

// Tensor.__getitem__ / __setitem__, index_select, gather and take.
void bind_subscript_and_gathers(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);
  cls.def("__getitem__", [](const Tensor& self, py::handle index) {
    std::vector<TensorIndex> idx = parse_index(self, index);
    py::gil_scoped_release nogil;
    return index_get(self, idx);
  });
  cls.def("__setitem__", [](const Tensor& self, py::handle index, py::handle value) {
    std::vector<TensorIndex> idx = parse_index(self, index);
    Tensor v = value_to_tensor(self, value);
    py::gil_scoped_release nogil;
    index_set(self, idx, v);
  });

  // index_select / gather / take
  auto index_select_fn = [](const Tensor& self, py::handle dim, py::handle index) {
    int64_t d = dim_arg(dim, "index_select");
    Tensor i = index_arg(index, "index_select");
    py::gil_scoped_release nogil;
    return index_select(self, d, i);
  };
  auto gather_fn = [](const Tensor& self, py::handle dim, py::handle index, bool) {
    int64_t d = dim_arg(dim, "gather");
    Tensor i = index_arg(index, "gather");
    py::gil_scoped_release nogil;
    return gather(self, d, i);
  };
  auto take_fn = [](const Tensor& self, py::handle index) {
    Tensor i = index_arg(index, "take");
    py::gil_scoped_release nogil;
    return take(self, i);
  };
  m.def("index_select", index_select_fn, py::arg("input"), py::arg("dim"), py::arg("index"));
  cls.def("index_select", index_select_fn, py::arg("dim"), py::arg("index"));
  m.def("gather", gather_fn, py::arg("input"), py::arg("dim"), py::arg("index"), py::kw_only(),
        py::arg("sparse_grad") = false);
  cls.def("gather", gather_fn, py::arg("dim"), py::arg("index"), py::kw_only(),
          py::arg("sparse_grad") = false);
  m.def("take", take_fn, py::arg("input"), py::arg("index"));
  cls.def("take", take_fn, py::arg("index"));
}

// The scatter family: scatter, scatter_, scatter_add and scatter_add_.
void bind_scatters(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);
  // scatter family
  auto scatter_fn = [](const Tensor& self, py::handle dim, py::handle index, py::object src,
                       py::object value, py::object reduce) {
    return do_scatter(self, dim, index, src, value, reduce, false);
  };
  auto scatter_inplace_fn = [](py::object self, py::handle dim, py::handle index, py::object src,
                               py::object value, py::object reduce) {
    do_scatter(self.cast<Tensor&>(), dim, index, src, value, reduce, true);
    return self;
  };
  m.def("scatter", scatter_fn, py::arg("input"), py::arg("dim"), py::arg("index"),
        py::arg("src") = py::none(), py::kw_only(), py::arg("value") = py::none(),
        py::arg("reduce") = py::none());
  cls.def("scatter", scatter_fn, py::arg("dim"), py::arg("index"), py::arg("src") = py::none(),
          py::kw_only(), py::arg("value") = py::none(), py::arg("reduce") = py::none());
  cls.def("scatter_", scatter_inplace_fn, py::arg("dim"), py::arg("index"),
          py::arg("src") = py::none(), py::kw_only(), py::arg("value") = py::none(),
          py::arg("reduce") = py::none());
  auto scatter_add_fn = [](const Tensor& self, py::handle dim, py::handle index, py::handle src) {
    int64_t d = dim_arg(dim, "scatter_add");
    Tensor i = index_arg(index, "scatter_add"), s = tensor_arg(src, "scatter_add", "src");
    py::gil_scoped_release nogil;
    return scatter_add(self, d, i, s);
  };
  m.def("scatter_add", scatter_add_fn, py::arg("input"), py::arg("dim"), py::arg("index"),
        py::arg("src"));
  cls.def("scatter_add", scatter_add_fn, py::arg("dim"), py::arg("index"), py::arg("src"));
  cls.def(
      "scatter_add_",
      [](py::object self_obj, py::handle dim, py::handle index, py::handle src) {
        const Tensor& self = self_obj.cast<Tensor&>();
        int64_t d = dim_arg(dim, "scatter_add_");
        Tensor i = index_arg(index, "scatter_add_"), s = tensor_arg(src, "scatter_add_", "src");
        {
          py::gil_scoped_release nogil;
          scatter_add_(self, d, i, s);
        }
        return self_obj;
      },
      py::arg("dim"), py::arg("index"), py::arg("src"));
}

// index_add and index_put (function, method, in-place).
void bind_index_add_put(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);
  // index_add
  auto index_add_fn = [](const Tensor& self, py::handle dim, py::handle index, py::handle source,
                         py::handle alpha, bool inplace) {
    const char* op = inplace ? "index_add_" : "index_add";
    int64_t d = dim_arg(dim, op);
    Tensor i = index_arg(index, op), s = tensor_arg(source, op, "source");
    Scalar a = scalar_arg(alpha, op, "alpha");
    py::gil_scoped_release nogil;
    return inplace ? index_add_(self, d, i, s, a) : index_add(self, d, i, s, a);
  };
  m.def(
      "index_add",
      [index_add_fn](const Tensor& self, py::handle dim, py::handle index, py::handle source,
                     py::handle alpha) {
        return index_add_fn(self, dim, index, source, alpha, false);
      },
      py::arg("input"), py::arg("dim"), py::arg("index"), py::arg("source"), py::kw_only(),
      py::arg("alpha") = 1);
  cls.def(
      "index_add",
      [index_add_fn](const Tensor& self, py::handle dim, py::handle index, py::handle source,
                     py::handle alpha) {
        return index_add_fn(self, dim, index, source, alpha, false);
      },
      py::arg("dim"), py::arg("index"), py::arg("source"), py::kw_only(), py::arg("alpha") = 1);
  cls.def(
      "index_add_",
      [index_add_fn](py::object self, py::handle dim, py::handle index, py::handle source,
                     py::handle alpha) {
        index_add_fn(self.cast<Tensor&>(), dim, index, source, alpha, true);
        return self;
      },
      py::arg("dim"), py::arg("index"), py::arg("source"), py::kw_only(), py::arg("alpha") = 1);

  // index_put
  auto index_put_fn = [](const Tensor& self, py::handle indices, py::handle values, bool accumulate,
                         bool inplace) {
    const char* op = inplace ? "index_put_" : "index_put";
    auto idx = indices_arg(indices, op);
    Tensor v = tensor_arg(values, op, "values");
    py::gil_scoped_release nogil;
    if (inplace) return index_put_(self, idx, v, accumulate);
    return index_put(self, idx, v, accumulate);
  };
  m.def(
      "index_put",
      [index_put_fn](const Tensor& self, py::handle indices, py::handle values, bool accumulate) {
        return index_put_fn(self, indices, values, accumulate, false);
      },
      py::arg("input"), py::arg("indices"), py::arg("values"), py::arg("accumulate") = false);
  cls.def(
      "index_put",
      [index_put_fn](const Tensor& self, py::handle indices, py::handle values, bool accumulate) {
        return index_put_fn(self, indices, values, accumulate, false);
      },
      py::arg("indices"), py::arg("values"), py::arg("accumulate") = false);
  cls.def(
      "index_put_",
      [index_put_fn](py::object self, py::handle indices, py::handle values, bool accumulate) {
        index_put_fn(self.cast<Tensor&>(), indices, values, accumulate, true);
        return self;
      },
      py::arg("indices"), py::arg("values"), py::arg("accumulate") = false);
}

// masked_fill(_), masked_select, nonzero and argwhere.
void bind_masks_and_nonzero(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);
  // masks
  m.def(
      "masked_fill",
      [](const Tensor& self, py::handle mask, py::handle value) {
        return do_masked_fill(self, mask, value, false);
      },
      py::arg("input"), py::arg("mask"), py::arg("value"));
  cls.def(
      "masked_fill",
      [](const Tensor& self, py::handle mask, py::handle value) {
        return do_masked_fill(self, mask, value, false);
      },
      py::arg("mask"), py::arg("value"));
  cls.def(
      "masked_fill_",
      [](py::object self, py::handle mask, py::handle value) {
        do_masked_fill(self.cast<Tensor&>(), mask, value, true);
        return self;
      },
      py::arg("mask"), py::arg("value"));
  auto masked_select_fn = [](const Tensor& self, py::handle mask) {
    Tensor mk = tensor_arg(mask, "masked_select", "mask");
    py::gil_scoped_release nogil;
    return masked_select(self, mk);
  };
  m.def("masked_select", masked_select_fn, py::arg("input"), py::arg("mask"));
  cls.def("masked_select", masked_select_fn, py::arg("mask"));

  // nonzero / argwhere
  m.def("nonzero", &do_nonzero, py::arg("input"), py::kw_only(), py::arg("as_tuple") = false);
  cls.def("nonzero", &do_nonzero, py::kw_only(), py::arg("as_tuple") = false);
  auto argwhere_fn = [](const Tensor& self) {
    py::gil_scoped_release nogil;
    return argwhere(self);
  };
  m.def("argwhere", argwhere_fn, py::arg("input"));
  cls.def("argwhere", argwhere_fn);
}

}  // namespace

void init_indexing(py::module_& m) {
  bind_subscript_and_gathers(m);
  bind_scatters(m);
  bind_index_add_put(m);
  bind_masks_and_nonzero(m);
}

}  // namespace ember::python
