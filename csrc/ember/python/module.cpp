// The ember._C extension module: calls each area's init_* and installs the one
// translator from C++ exceptions to Python exceptions.
#include <Python.h>

#include <new>

#include "ember/backends/cpu/capability.h"
#include "ember/core/allocator.h"
#include "ember/core/error.h"
#include "ember/core/flags.h"
#include "ember/core/parallel.h"
#include "ember/kernels/registration.h"
#include "ember/ops/out.h"
#include "ember/python/bind.h"

namespace ember::python {
namespace {

// Note [Error translation]
// Every ember::Error becomes the Python exception its kind names; this is the
// only place that mapping lives. A failed C++ allocation (std::bad_alloc, whose message
// is just "std::bad_alloc") is PyTorch's out-of-memory RuntimeError with a sentence that
// says so. Other C++ exceptions keep pybind11's mapping, and anything unknown is a
// RuntimeError: nothing escapes as an abort.
void translate(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const std::bad_alloc&) {
    PyErr_SetString(PyExc_RuntimeError,
                    "ember: out of memory: a host allocation failed (std::bad_alloc); the "
                    "requested sizes are too large for this machine");
  } catch (const Error& e) {
    PyObject* type = PyExc_RuntimeError;
    switch (e.kind()) {
      case ErrorKind::Index:
        type = PyExc_IndexError;
        break;
      case ErrorKind::Type:
        type = PyExc_TypeError;
        break;
      case ErrorKind::Value:
        type = PyExc_ValueError;
        break;
      case ErrorKind::NotImplemented:
        type = PyExc_NotImplementedError;
        break;
      default:
        break;
    }
    PyErr_SetString(type, e.what());
  }
}

}  // namespace

void set_python_error() noexcept {
  const std::exception_ptr p = std::current_exception();
  try {
    try {
      translate(p);  // ember::Error -> its kind's exception
      return;
    } catch (...) {
    }
    py::detail::translate_exception(p);  // pybind11's: error_already_set, std:: exceptions
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "ember: an unknown C++ exception escaped");
  }
}

namespace {

// Loads ember._C_cuda on first use of a CUDA tensor (ember.cuda._lazy_init
// raises the user-facing error when there is no backend or no GPU).
void lazy_cuda_init(ember::DeviceType) {
  py::gil_scoped_acquire gil;
  try {
    py::module_::import("ember.cuda").attr("_lazy_init")();
  } catch (py::error_already_set& e) {
    throw ember::Error(ember::ErrorKind::Runtime, py::str(e.value()).cast<std::string>());
  }
}

// The ops' warnings (ops/out.h) as Python UserWarnings, attributed to the caller's
// line; with warnings turned into errors the exception propagates out of the op.
void python_warning(const std::string& message) {
  py::gil_scoped_acquire gil;
  if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1) < 0) throw py::error_already_set();
}

std::atomic<bool>& backend_flag(const std::string& name) {
  ember::BackendFlags& f = ember::backend_flags();
  if (name == "allow_fp16_reduced_precision_reduction")
    return f.allow_fp16_reduced_precision_reduction;
  if (name == "allow_bf16_reduced_precision_reduction")
    return f.allow_bf16_reduced_precision_reduction;
  if (name == "cudnn_enabled") return f.cudnn_enabled;
  if (name == "cudnn_benchmark") return f.cudnn_benchmark;
  if (name == "cudnn_deterministic") return f.cudnn_deterministic;
  if (name == "cudnn_allow_tf32") return f.cudnn_allow_tf32;
  if (name == "mkldnn_enabled") return f.mkldnn_enabled;
  if (name == "deterministic_algorithms") return f.deterministic_algorithms;
  if (name == "deterministic_warn_only") return f.deterministic_warn_only;
  throw ember::Error(ember::ErrorKind::Value, "unknown backend flag '" + name + "'");
}

}  // namespace

void init_compile(py::module_& m);  // python/compile.cpp: ember.compile's kernels
}  // namespace ember::python

PYBIND11_MODULE(_C, m) {
  using ember::python::backend_flag;
  using namespace ember::python;
  m.doc() = "ember's C++ core";
  py::register_exception_translator(&translate);
  ember::lazy_device_init_hook = &lazy_cuda_init;
  ember::set_warn_handler(&python_warning);
  init_tensor(m);
  init_ops(m);
  init_factories(m);
  init_factories_like(m);
  init_indexing(m);
  init_reduce(m);
  init_linalg(m);
  init_interop(m);
  init_random(m);
  init_join_sort(m);
  init_autograd(m);
  init_nn(m);
  init_nn_conv(m);
  init_nn_rnn(m);
  init_optim(m);
  init_data(m);
  init_surface(m);
  init_lapack(m);
  init_profiler(m);
  init_amp(m);
  init_jit(m);
  init_compile(m);
  init_sparse(m);
  init_distributed(m);  // registers its error translator after the main one: tried first
  init_ddp(m);
  m.def("get_num_threads", &ember::get_num_threads);
  m.def("set_num_threads", [](int64_t n) {
    EMBER_CHECK(n > 0 && n < 4096, "set_num_threads expects a positive integer, got ", n);
    ember::set_num_threads(int(n));
  });
  // The switches of ember.backends.cuda.matmul, ember.backends.cudnn and
  // use_deterministic_algorithms (core/flags.h), by name.
  m.def("_get_backend_flag", [](const std::string& name) { return backend_flag(name).load(); });
  m.def("_set_backend_flag",
        [](const std::string& name, bool on) { backend_flag(name).store(on); });
  m.def("_get_float32_matmul_precision",
        [] { return ember::backend_flags().float32_matmul_precision.load(); });
  m.def("_set_float32_matmul_precision", [](int p) {
    EMBER_CHECK(p >= 0 && p <= 2, "_set_float32_matmul_precision: bad level ", p);
    ember::backend_flags().float32_matmul_precision.store(p);
  });
  m.attr("_cuda_version") = std::string(EMBER_CUDA_VERSION);
  // ember.backends.cpu.get_cpu_capability(): the instruction set the CPU kernels run with.
  m.def("_get_cpu_capability", [] {
    return std::string(ember::cpu::cpu_capability_name(ember::cpu::selected_cpu_capability()));
  });
  m.def("_compiled_cpu_capabilities", [] {
    std::vector<std::string> names;
    for (int c = 0; c <= int(ember::cpu::CpuCapability::AVX512); ++c)
      if (ember::cpu::cpu_capability_compiled(ember::cpu::CpuCapability(c)))
        names.push_back(ember::cpu::cpu_capability_name(ember::cpu::CpuCapability(c)));
    return names;
  });
  // The kernel families registered per device (Note [Kernel registration]); "cuda" lists
  // nothing until ember._C_cuda is loaded.
  m.def("_kernel_families", [](const std::string& device) {
    EMBER_CHECK_VALUE(device == "cpu" || device == "cuda",
                      "_kernel_families: device must be 'cpu' or 'cuda', got '", device, "'");
    return ember::kernel_families(device == "cpu" ? ember::DeviceType::CPU
                                                  : ember::DeviceType::CUDA);
  });
  m.def("_get_supported_cpu_capability", [] {
    return std::string(ember::cpu::cpu_capability_name(ember::cpu::supported_cpu_capability()));
  });
}
