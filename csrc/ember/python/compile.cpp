// ember.compile's run-time entry points: load a generated kernel library with dlopen and
// run it over tensors, threaded over chunks; and the graph op through which the jit
// interpreter hands a fusion group to Python (python/ember/_compile/, Note [ember.compile]).
#include <dlfcn.h>

#include <mutex>
#include <string>
#include <vector>

#include "ember/core/error.h"
#include "ember/core/parallel.h"
#include "ember/jit/operator.h"
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
                const std::vector<bool>& scalar, int64_t rows, int64_t grain) {
  Kernel fn;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    EMBER_CHECK(handle >= 0 && size_t(handle) < g_loaded.size(),
                "ember.compile: bad kernel handle ", handle);
    fn = g_loaded[size_t(handle)].fn;
  }
  EMBER_CHECK(scalar.size() == ts.size(), "ember.compile: ", ts.size(), " operands but ",
              scalar.size(), " scalar flags");
  const size_t nd = shape.size(), nops = ts.size();
  std::vector<int64_t> meta(2 + nd + nops * nd, 0);
  meta[1] = int64_t(nd);
  int64_t numel = 1;
  for (size_t d = 0; d < nd; ++d) {
    meta[2 + d] = shape[d];
    numel *= shape[d];
  }
  std::vector<char*> ptrs(nops);
  bool flat = true;
  for (size_t k = 0; k < nops; ++k) {
    const Tensor& t = ts[k];
    EMBER_CHECK(t.defined() && t.device().is_cpu(), "ember.compile: operand ", k,
                " is not a CPU tensor");
    const size_t td = size_t(t.dim());
    EMBER_CHECK(td <= nd, "ember.compile: operand ", k, " has ", td,
                " dimensions, more than the iteration shape's ", nd);
    int64_t* st = meta.data() + 2 + nd + k * nd;
    bool full = t.numel() == numel, contiguous = true;
    int64_t expect = 1;
    for (size_t i = 0; i < nd; ++i) {
      const size_t d = nd - 1 - i;
      if (i >= td) {
        st[d] = 0;
        full = full && shape[d] == 1;
        continue;
      }
      const int64_t sz = t.sizes()[td - 1 - i];
      EMBER_CHECK(sz == shape[d] || sz == 1, "ember.compile: operand ", k, " of size ", sz,
                  " at dimension ", d, " does not broadcast to ", shape[d]);
      st[d] = sz == 1 ? 0 : t.strides()[td - 1 - i];
      if (sz != shape[d]) full = false;
      if (sz != 1 && t.strides()[td - 1 - i] != expect) contiguous = false;
      expect *= shape[d];
    }
    flat = flat && (scalar[k] ? t.numel() == 1 : (full && contiguous));
    ptrs[k] = t.numel() == 0 ? nullptr : t.data_ptr();
  }
  meta[0] = flat ? 1 : 0;
  int64_t work = numel;
  if (rows > 0) {  // reduce over the last `rows` dimensions: one work item per row
    work = 1;
    for (size_t d = 0; d + size_t(rows) < nd; ++d) work *= shape[d];
    if (numel == 0) work = 0;
  }
  if (work == 0) return;
  py::gil_scoped_release nogil;
  parallel_for(0, work, std::max<int64_t>(1, grain),
               [&](int64_t b, int64_t e) { fn(ptrs.data(), meta.data(), b, e); });
}

}  // namespace

void init_compile(py::module_& m) {
  m.def("_compile_load", &load_kernel, py::arg("path"));
  m.def("_compile_run", &run_kernel, py::arg("handle"), py::arg("operands"), py::arg("shape"),
        py::arg("scalar"), py::arg("rows") = 0, py::arg("grain") = kGrainSize);
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
