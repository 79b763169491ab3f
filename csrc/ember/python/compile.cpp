// ember.compile's run-time entry points: load a generated kernel library with dlopen and
// run it over tensors, threaded over chunks; and the graph op through which the jit
// interpreter hands a fusion group to Python (python/ember/_compile/, Note [ember.compile]).
#include <dlfcn.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "ember/core/error.h"
#include "ember/core/parallel.h"
#include "ember/jit/operator.h"
#include "ember/kernels/fusion_args.h"
#include "ember/python/bind.h"

namespace ember::python {
namespace {

// Note [Generated kernel ABI]
// A generated library exports `extern "C" void ember_kernel(char* const* ptrs,
// const int64_t* meta, int64_t begin, int64_t end)`. ptrs are the operands' data
// pointers (inputs, then outputs). meta is [flat, nd, sizes[nd], strides[nops][nd]]:
// the iteration shape and each operand's strides in elements broadcast to it (0 along a
// broadcast dimension). flat is 1 when every operand is contiguous over the whole
// iteration shape or a single element the kernel was generated to read once (`scalar`
// below), so the kernel can run its vectorizable flat loop; otherwise it walks the
// strides. [begin, end) is a range of elements, or of rows when the kernel reduces over
// its trailing dimensions (`rows`): parallel_for splits the range among threads.
using Kernel = void (*)(char* const*, const int64_t*, int64_t, int64_t);

struct Loaded {
  void* lib;
  Kernel fn;
};
std::mutex g_mu;
std::vector<Loaded> g_loaded;
std::vector<py::object>* g_callbacks = nullptr;  // leaked: outlives interpreter shutdown

int64_t load_kernel(const std::string& path) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    throw Error(ErrorKind::Runtime,
                "ember.compile: cannot load the generated kernel " + path + ": " + (e ? e : "?"));
  }
  auto fn = reinterpret_cast<Kernel>(dlsym(lib, "ember_kernel"));
  if (!fn) {
    dlclose(lib);
    throw Error(ErrorKind::Runtime, "ember.compile: " + path + " has no ember_kernel symbol");
  }
  std::lock_guard<std::mutex> lock(g_mu);
  g_loaded.push_back({lib, fn});
  return int64_t(g_loaded.size() - 1);
}

void run_kernel(int64_t handle, const std::vector<Tensor>& ts, const std::vector<int64_t>& shape,
                const std::vector<bool>& scalar, int64_t rows, int64_t grain, int64_t chunk) {
  Kernel fn;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    EMBER_CHECK(handle >= 0 && size_t(handle) < g_loaded.size(),
                "ember.compile: bad kernel handle ", handle);
    fn = g_loaded[size_t(handle)].fn;
  }
  FusionArgs a = fusion_args(ts, shape, scalar, rows, Device(DeviceType::CPU));
  if (a.work == 0) return;
  py::gil_scoped_release nogil;
  if (chunk > 0) {
    // Ranges that start at multiples of `chunk`: a kernel that sums per range (a row
    // kernel's parameter gradients) writes its partial sums to slot begin / chunk.
    const int64_t n = (a.work + chunk - 1) / chunk;
    parallel_for(0, n, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c)
        fn(a.ptrs.data(), a.meta.data(), c * chunk, std::min(a.work, (c + 1) * chunk));
    });
    return;
  }
  parallel_for(0, a.work, std::max<int64_t>(1, grain),
               [&](int64_t b, int64_t e) { fn(a.ptrs.data(), a.meta.data(), b, e); });
}

}  // namespace

void init_compile_nvrtc(py::module_& m);  // python/compile_nvrtc.cpp

void init_compile(py::module_& m) {
  init_compile_nvrtc(m);
  m.def("_compile_load", &load_kernel, py::arg("path"));
  // The argument block a CUDA fusion kernel is launched with (Note [CUDA fusion kernels]):
  // (operand data pointers, meta, work items), for the tests' host emulation of the kernels.
  m.def(
      "_fusion_args",
      [](const std::vector<Tensor>& ts, const std::vector<int64_t>& shape,
         const std::vector<bool>& scalar, int64_t rows) {
        EMBER_CHECK(!ts.empty(), "ember.compile: a fused kernel needs operands");
        FusionArgs a = fusion_args(ts, shape, scalar, rows, ts[0].device());
        std::vector<int64_t> ptrs;
        for (char* p : a.ptrs) ptrs.push_back(int64_t(reinterpret_cast<uintptr_t>(p)));
        return py::make_tuple(ptrs, a.meta, a.work);
      },
      py::arg("operands"), py::arg("shape"), py::arg("scalar"), py::arg("rows") = 0);
  m.def("_compile_run", &run_kernel, py::arg("handle"), py::arg("operands"), py::arg("shape"),
        py::arg("scalar"), py::arg("rows") = 0, py::arg("grain") = kGrainSize,
        py::arg("chunk") = 0);
  // A fusion group inside a graph the jit interpreter runs: `ember::fusion_group(inputs,
  // id)` calls the Python runner registered under `id` (it takes the GIL; the runner
  // releases it again while its kernel runs).
  g_callbacks = new std::vector<py::object>();
  m.def("_compile_register_group", [](py::object fn) {
    g_callbacks->push_back(std::move(fn));
    return int64_t(g_callbacks->size() - 1);
  });
  static const jit::Operator* op = jit::register_operator(
      "ember::fusion_group(Tensor[] inputs, int id) -> Tensor[]",
      [](jit::Stack& s) {
        const int64_t id = s.back().toInt();
        s.pop_back();
        std::vector<Tensor> inputs = s.back().toTensorVector();
        s.pop_back();
        std::vector<Tensor> out;
        {
          py::gil_scoped_acquire gil;
          EMBER_CHECK(id >= 0 && size_t(id) < g_callbacks->size(),
                      "ember::fusion_group: unknown group ", id);
          py::object r;
          try {
            r = (*g_callbacks)[size_t(id)](inputs);
          } catch (py::error_already_set& e) {
            // Keep the Python exception's kind for the interpreter's error path.
            throw Error(ErrorKind::Runtime, std::string(e.what()));
          }
          out = r.cast<std::vector<Tensor>>();
        }
        s.emplace_back(out);
      },
      1, jit::Effect::Pure);
  (void)op;
}

}  // namespace ember::python
