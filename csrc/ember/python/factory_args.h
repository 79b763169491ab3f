// Keyword-argument handling shared by the factory and random bindings:
// dtype=/device=/requires_grad=/generator= and PyTorch's TypeError for leftovers.
#pragma once
#include <string>

#include "ember/ops/random.h"
#include "ember/python/bind.h"

namespace ember::python {

/// Set between a factory's ignore_layout() (pin_memory=True, checked there) and its
/// finish_factory(), which pins the result; cleared when the FactoryKwargs dies.
inline thread_local bool t_pin_pending = false;

/// The keyword arguments of one factory call; each is taken once, and leftovers
/// raise PyTorch's "got an unexpected keyword argument" TypeError.
class FactoryKwargs {
 public:
  FactoryKwargs(const char* op, const py::kwargs& kw) : op_(op), d_(py::dict(kw)) {}
  ~FactoryKwargs() { t_pin_pending = false; }
  FactoryKwargs(const FactoryKwargs&) = delete;
  FactoryKwargs& operator=(const FactoryKwargs&) = delete;
  py::object take(const char* name) {
    PyObject* v = PyDict_GetItemString(d_.ptr(), name);
    if (!v) return py::none();
    py::object r = py::reinterpret_borrow<py::object>(v);
    PyDict_DelItemString(d_.ptr(), name);
    return r;
  }
  bool has(const char* name) const { return PyDict_GetItemString(d_.ptr(), name) != nullptr; }
  std::optional<DType> dtype() { return optional_dtype(take("dtype"), op_); }
  std::optional<Device> device() { return optional_device(take("device")); }
  bool requires_grad() {
    py::object v = take("requires_grad");
    return !v.is_none() && PyObject_IsTrue(v.ptr()) == 1;
  }
  /// Accepts and ignores the layout/pinning/memory-format options ember has one value for.
  void ignore_layout() {
    take("memory_format");
    py::object pin = take("pin_memory");
    t_pin_pending = false;
    if (!pin.is_none() && PyObject_IsTrue(pin.ptr()) == 1) {
      // Raises RuntimeError when no CUDA driver/device is available (as PyTorch does).
      py::module_::import("ember.cuda").attr("_check_pin_memory")(op_);
      t_pin_pending = true;
    }
    py::object layout = take("layout");
    EMBER_CHECK_TYPE(
        layout.is_none() || std::string(py::str(layout)).find("strided") != std::string::npos, op_,
        "(): only the strided layout is supported, got ", std::string(py::str(layout)));
  }
  void done() {
    for (auto kv : d_) {
      std::string k = py::str(kv.first);
      if (k == "out")
        raise(ErrorKind::Type, op_, "(): the out= argument is not supported by ember's ", op_,
              "; assign the result instead");
      raise(ErrorKind::Type, op_, "() got an unexpected keyword argument '", k, "'");
    }
  }
  const char* op() const { return op_; }

 private:
  const char* op_;
  py::dict d_;
};

/// Applies requires_grad= (floating dtypes only) to a freshly made tensor.
inline Tensor finish_factory(Tensor t, bool requires_grad) {
  if (t_pin_pending) {
    t_pin_pending = false;
    t = py::cast<Tensor>(py::cast(t).attr("pin_memory")());
  }
  if (requires_grad) {
    EMBER_CHECK(is_floating(t.dtype()),
                "Only Tensors of floating point and complex dtype can require gradients (got ",
                dtype_name(t.dtype()), ")");
    t.impl()->requires_grad = true;
  }
  return t;
}

/// A Generator from generator= (None: the default one).
inline Generator generator_arg(py::handle h) {
  if (h.is_none()) return nullptr;
  try {
    return h.cast<Generator>();
  } catch (const py::cast_error&) {
    raise(ErrorKind::Type, "argument 'generator' must be ember.Generator, not ", type_name(h));
  }
}

}  // namespace ember::python
