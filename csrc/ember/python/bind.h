// Shared helpers of the Python bindings: argument conversion (scalars, shapes,
// dtypes, devices) with PyTorch's TypeError messages, and the init_* entry
// points of each binding file.
#pragma once
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "ember/core/scalar.h"
#include "ember/core/tensor.h"

namespace py = pybind11;

// Note [Python object identity]
// Tensor converts to Python through the generic class caster, except that a
// tensor whose impl already has a live Python object returns that object.
// The holder's deleter (TensorPyDeleter) clears the back-pointer when the
// Python object dies. Loading (Python -> C++) is pybind11's own.
namespace ember::python {
/// Note [Layout errors]: names the op in the errors of sparse tensors reaching strided-only
/// ops; installed when the first sparse tensor reaches Python (python/sparse.cpp).
void install_layout_error_names();
struct TensorPyDeleter {
  void operator()(ember::Tensor* t) const {
    if (t->defined() && t->impl()->py_owner == t) {
      t->impl()->pyobj = nullptr;
      t->impl()->py_owner = nullptr;
    }
    delete t;
  }
};
}  // namespace ember::python

namespace pybind11::detail {
template <>
struct type_caster<ember::Tensor> : type_caster_base<ember::Tensor> {
  using base = type_caster_base<ember::Tensor>;
  // Loading also claims the identity link for an impl that has none yet (a
  // tensor made by the Tensor(...) constructor, or whose wrapper died and was
  // recreated), so later conversions return this object.
  bool load(handle src, bool convert) {
    if (!fast_load(src) && !base::load(src, convert)) return false;
    auto* t = static_cast<ember::Tensor*>(value);
    if (t && t->defined() && !t->impl()->pyobj) {
      t->impl()->pyobj = src.ptr();
      t->impl()->py_owner = t;
    }
    return true;
  }
  static handle cast(const ember::Tensor& src, return_value_policy, handle) {
    if (!src.defined()) return none().release();
    if (handle existing = lookup(src)) return existing;
    return new_instance(ember::Tensor(src));
  }
  static handle cast(ember::Tensor&& src, return_value_policy, handle) {
    if (!src.defined()) return none().release();
    if (handle existing = lookup(src)) return existing;
    return new_instance(std::move(src));
  }
  static handle cast(const ember::Tensor* src, return_value_policy policy, handle parent) {
    if (!src) return none().release();
    return cast(*src, policy, parent);
  }

 private:
  using Holder = std::unique_ptr<ember::Tensor, ember::python::TensorPyDeleter>;
  static const type_info* tensor_type_info() {
    static const type_info* ti = get_type_info(typeid(ember::Tensor), true);
    return ti;
  }
  static handle lookup(const ember::Tensor& t) {
    void* obj = t.impl()->pyobj;
    return obj ? handle(static_cast<PyObject*>(obj)).inc_ref() : handle();
  }
  // Note [Tensor wrapper fast path]
  // Every op's result passes through here, so this is what class_::init_instance and
  // type_caster_generic::cast do for a moved-in value, without their per-call work that a
  // Tensor does not need: two type lookups by typeid (a string hash each), the search for an
  // existing wrapper of the same C++ pointer, and the entry in pybind11's registered-instance
  // map (a node allocation at birth and an erase at death). A Tensor's identity is its impl's
  // back-pointer (Note [Python object identity]), never the C++ pointer, and a wrapper that
  // is not registered is also not deregistered when it dies (clear_instance checks the flag).
  static handle new_instance(ember::Tensor&& src) {
    const type_info* ti = tensor_type_info();
    PyObject* obj = make_new_instance(ti->type);
    if (!obj) return handle();
    auto* inst = reinterpret_cast<instance*>(obj);
    value_and_holder v_h = inst->get_value_and_holder(ti);
    ember::TensorImpl* impl = src.impl();
    auto* value = new (std::nothrow) ember::Tensor(std::move(src));
    if (!value) {  // the instance has no value yet: its dealloc frees only itself
      Py_DECREF(obj);
      PyErr_NoMemory();
      return handle();
    }
    v_h.value_ptr() = value;
    inst->owned = true;
    new (std::addressof(v_h.holder<Holder>())) Holder(value);
    v_h.set_holder_constructed();
    impl->pyobj = obj;
    impl->py_owner = value;
    if (__builtin_expect(impl->layout != ember::Layout::Strided, 0))
      ember::python::install_layout_error_names();
    return obj;
  }
  // The loading twin: an initialized wrapper of the simple layout (a Tensor or a Python
  // subclass of it) holds its value pointer in place.
  bool fast_load(handle src) {
    PyTypeObject* tp = tensor_type_info()->type;
    PyTypeObject* t = Py_TYPE(src.ptr());
    if (t != tp && !PyType_IsSubtype(t, tp)) return false;
    auto* inst = reinterpret_cast<instance*>(src.ptr());
    if (!inst->simple_layout || !inst->simple_value_holder[0]) return false;
    value = inst->simple_value_holder[0];
    return true;
  }
};
}  // namespace pybind11::detail

namespace ember::python {

/// The Python object for a dtype (a singleton per dtype).
struct PyDType {
  DType dtype;
};
/// The Python object for a device.
struct PyDevice {
  Device device;
};

void init_tensor(py::module_& m);
void init_ops(py::module_& m);
void init_factories(py::module_& m);
void init_indexing(py::module_& m);
void init_reduce(py::module_& m);
void init_linalg(py::module_& m);
void init_interop(py::module_& m);
void init_factories_like(py::module_& m);  // python/factories_like.cpp: zeros_like, ...
void init_random(py::module_& m);
void init_join_sort(py::module_& m);
void init_autograd(py::module_& m);
void init_nn(
    py::module_& m);  // python/nn.cpp: activations, softmax, losses, norms, dropout, embedding
void init_nn_conv(py::module_& m);      // python/nn_conv.cpp: conv, pooling, padding, resampling
void init_nn_rnn(py::module_& m);       // python/nn_rnn.cpp: recurrent layers and attention
void init_optim(py::module_& m);        // python/optim.cpp: fused optimizer steps
void init_data(py::module_& m);         // python/data.cpp: the DataLoader's C++ hot path
void init_surface(py::module_& m);      // python/surface.cpp: the everyday torch.* functions
void init_lapack(py::module_& m);       // python/lapack.cpp: ember.linalg through LAPACK
void init_profiler(py::module_& m);     // python/profiler.cpp: the op profiler
void init_amp(py::module_& m);          // python/amp.cpp: autocast state and GradScaler kernels
void init_distributed(py::module_& m);  // python/distributed.cpp: stores, process groups
void init_ddp(py::module_& m);          // python/ddp.cpp: the DDP reducer
void init_sparse(py::module_& m);       // python/sparse.cpp: sparse COO tensors
void init_jit(py::module_& m);          // python/jit.cpp: ember.jit's graphs, tracer and archives

/// True (and sets `out`) when `h` is an ember Tensor.
bool as_tensor(py::handle h, Tensor*& out);
/// True (and sets `out`) when `h` is a Python/NumPy bool, int or float.
bool as_scalar(py::handle h, Scalar& out);
/// A tensor from a Tensor or a Python number (a wrapped number); TypeError otherwise.
Tensor tensor_or_scalar(py::handle h, const char* op, const char* arg);
/// An ndarray as a tensor operand: shared when possible, else copied.
Tensor ndarray_operand(py::handle h);
/// A Scalar from a Python number or a one-element tensor; TypeError otherwise.
Scalar scalar_arg(py::handle h, const char* op, const char* arg);
/// A list or tuple of tensors, with PyTorch's TypeErrors ("expected Tensor as element 1
/// in argument 0, but got int"): every binding that takes a tensor list converts it here,
/// never through pybind11's std::vector caster, whose error is a signature dump.
std::vector<Tensor> tensor_list_arg(py::handle h, const char* op, const char* arg = "tensors",
                                    int position = 0);
/// A Python int (or anything with __index__); TypeError naming op/arg otherwise.
int64_t int_arg(py::handle h, const char* op, const char* arg);
/// Sizes from `f(2, 3)`, `f((2, 3))`, `f([2, 3])` or `f(ember.Size(...))`.
Shape shape_from_args(const py::args& args, const char* op, const char* arg = "size");
/// Sizes from one sequence-or-int object.
Shape shape_arg(py::handle h, const char* op, const char* arg);
/// A dtype from a dtype object or the Python types bool/int/float.
DType dtype_arg(py::handle h, const char* op = "dtype");
std::optional<DType> optional_dtype(py::handle h, const char* op = "dtype");
/// A device from a device object, a string or a CUDA index.
Device device_arg(py::handle h);
std::optional<Device> optional_device(py::handle h);
/// ember.set_default_device: where factories called without device= allocate (the CPU
/// unless set; `_like` / `new_*` factories keep following their tensor, as in PyTorch).
inline Device& default_device() {
  static Device d;
  return d;
}
/// `h` as a device, or the default device when it is None.
inline Device device_or_default(py::handle h) {
  std::optional<Device> d = optional_device(h);
  return d ? *d : default_device();
}
/// Python objects for dtypes, devices and ember.Size.
/// The already-registered ember._C.Tensor class, for binding files that add methods to it.
inline py::class_<Tensor> tensor_class(py::module_& m) {
  return py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
}
py::object dtype_object(DType t);
py::object size_object(const Shape& s);
py::object device_object(Device d);
py::object wrap(Tensor t);

// ---- out= (the one helper every binding uses; the contract is ops/out.h) ----
/// out= given as a keyword: nullptr for None, the Tensor, or PyTorch's TypeError.
const Tensor* out_arg(py::handle out, const char* op);
/// out=(a, b) of the two-result ops: both null for None, else a tuple of two Tensors.
std::pair<const Tensor*, const Tensor*> out_pair_arg(py::handle out, const char* op);
/// A binding's return value: `r`, or `r` written into out= (write_out: resized
/// as PyTorch, dtype checked) and out itself.
py::object result_or_out(const Tensor& r, py::handle out, const char* op);
/// Like result_or_out for the (values, indices) ops: out=(values, indices), each resized.
/// Returns ember.return_types.<name>(values, indices), or <name>_out(out...) with out=
/// (PyTorch's out= overloads return torch.return_types.<name>_out).
py::object pair_or_out(const char* name, const Tensor& a, const Tensor& b, py::handle out);

/// Inside a catch block: sets the Python error for the exception being handled, as the
/// module's translator (Note [Error translation]) and pybind11 would. For the C slots that
/// bypass pybind11's dispatcher (Note [Operator slots]).
void set_python_error() noexcept;

/// Python type name of an object, for messages.
std::string type_name(py::handle h);

}  // namespace ember::python
