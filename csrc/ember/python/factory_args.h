// Keyword-argument handling shared by the factory and random bindings:
// dtype=/device=/requires_grad=/generator= and PyTorch's TypeError for leftovers.
#pragma once
#include <string>

#include "ember/autograd/record.h"
#include "ember/ops/random.h"
#include "ember/ops/surface.h"
#include "ember/python/bind.h"

namespace ember::python {

/// Set between a factory's ignore_layout() (pin_memory=True, checked there) and its
/// finish_factory(), which pins the result; cleared when the FactoryKwargs dies.
inline thread_local bool t_pin_pending = false;

/// The keyword arguments of one factory call; each is taken once, and leftovers
/// raise PyTorch's "got an unexpected keyword argument" TypeError.
class FactoryKwargs {
 public:
  /// `accepts_out`: the factory takes out= (PyTorch's zeros, arange, rand, ...); its
  /// dtype and device then default to out's, and finish() writes the result into it.
  FactoryKwargs(const char* op, const py::kwargs& kw, bool accepts_out = false)
      : op_(op), d_(py::dict(kw)) {
    if (accepts_out) {
      out_obj_ = take("out");
      out_ = out_arg(out_obj_, op_);
    }
  }
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
  std::optional<DType> dtype() {
    std::optional<DType> d = optional_dtype(take("dtype"), op_);
    if (!out_) return d;
    EMBER_CHECK(!d || *d == out_->dtype(), "dtype ", dtype_name(*d),
                " does not match dtype of out parameter (", dtype_name(out_->dtype()), ")");
    return out_->dtype();
  }
  std::optional<Device> device() {
    std::optional<Device> d = optional_device(take("device"));
    if (!out_) return d;
    EMBER_CHECK(!d || d->type == out_->device().type, "device ", d->str(),
                " does not match device of out parameter (", out_->device().str(), ")");
    return out_->device();
  }
  /// device=, else out='s device, else the default device (ember.set_default_device).
  Device device_or_default() { return device().value_or(default_device()); }
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
      raise(ErrorKind::Type, op_, "() got an unexpected keyword argument '", k, "'");
    }
  }
  const char* op() const { return op_; }
  /// The factory's return value: `t` finished (finish_factory), or `t` written into
  /// out= (resized as PyTorch, ops/out.h) and out itself.
  py::object finish(Tensor t, bool requires_grad);

 private:
  const char* op_;
  py::dict d_;
  py::object out_obj_ = py::none();
  const Tensor* out_ = nullptr;
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

inline py::object FactoryKwargs::finish(Tensor t, bool requires_grad) {
  if (!out_) return wrap(finish_factory(std::move(t), requires_grad));
  t_pin_pending = false;
  EMBER_CHECK(!requires_grad && !autograd::requires_grad(*out_), op_,
              "(): functions with out=... arguments don't support automatic differentiation, "
              "but one of the arguments requires grad.");
  write_out(t, *out_, op_);
  return out_obj_;
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
