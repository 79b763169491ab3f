// NVRTC, the CUDA run-time compiler, loaded with dlopen (as cuDNN is): ember.compile's
// CUDA fusion groups are generated as CUDA C++ and compiled here to a CUBIN (or PTX)
// image that _C_cuda loads and launches (Note [CUDA fusion kernels] in
// python/ember/_compile/_cuda.py). Compiling needs no GPU and no CUDA driver, so it
// lives in _C, and CPU-only machines with the toolkit check the generated sources too.
#include <dlfcn.h>

#include <mutex>
#include <string>
#include <vector>

#include "ember/core/error.h"
#include "ember/python/bind.h"

namespace ember::python {
namespace nvrtc {
namespace {

// The few entry points used, declared with their C ABI (nvrtc.h is not needed to build
// ember: nvrtcResult is an int enum and nvrtcProgram an opaque pointer).
using Program = struct NvrtcProgram*;
struct Nvrtc {
  void* lib = nullptr;
  std::string path;
  const char* (*GetErrorString)(int) = nullptr;
  int (*Version)(int*, int*) = nullptr;
  int (*GetNumSupportedArchs)(int*) = nullptr;
  int (*GetSupportedArchs)(int*) = nullptr;
  int (*CreateProgram)(Program*, const char*, const char*, int, const char* const*,
                       const char* const*) = nullptr;
  int (*DestroyProgram)(Program*) = nullptr;
  int (*CompileProgram)(Program, int, const char* const*) = nullptr;
  int (*GetProgramLogSize)(Program, size_t*) = nullptr;
  int (*GetProgramLog)(Program, char*) = nullptr;
  int (*GetCUBINSize)(Program, size_t*) = nullptr;
  int (*GetCUBIN)(Program, char*) = nullptr;
  int (*GetPTXSize)(Program, size_t*) = nullptr;
  int (*GetPTX)(Program, char*) = nullptr;
};
// Every entry point above, resolved by name ("nvrtc" + the member's name).
#define EMBER_NVRTC_FNS(X) \
  X(GetErrorString)        \
  X(Version)               \
  X(GetNumSupportedArchs)  \
  X(GetSupportedArchs)     \
  X(CreateProgram)         \
  X(DestroyProgram)        \
  X(CompileProgram)        \
  X(GetProgramLogSize)     \
  X(GetProgramLog)         \
  X(GetCUBINSize)          \
  X(GetCUBIN)              \
  X(GetPTXSize)            \
  X(GetPTX)
std::mutex g_mu;
Nvrtc g_nvrtc;

template <typename F>
void resolve(void* lib, const char* name, F& fn, std::string& missing) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn) missing += std::string(missing.empty() ? "" : ", ") + name;
}

// Opens the first of `candidates` (paths or sonames) that loads and has every entry point.
// Returns its path; raises naming each failure when none does.
std::string load(const std::vector<std::string>& candidates) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_nvrtc.lib) return g_nvrtc.path;
  std::string tried;
  for (const std::string& c : candidates) {
    void* lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      tried += "\n  " + c + ": " + (e ? e : "not loadable");
      continue;
    }
    Nvrtc n;
    std::string missing;
#define EMBER_NVRTC_RESOLVE(name) resolve(lib, "nvrtc" #name, n.name, missing);
    EMBER_NVRTC_FNS(EMBER_NVRTC_RESOLVE)
#undef EMBER_NVRTC_RESOLVE
    if (!missing.empty()) {
      tried += "\n  " + c + ": lacks " + missing;
      dlclose(lib);
      continue;
    }
    n.lib = lib;
    n.path = c;
    g_nvrtc = n;
    return c;
  }
  throw Error(ErrorKind::Runtime,
              "ember.compile: NVRTC (libnvrtc, the CUDA run-time compiler) could not be loaded; "
              "install the CUDA toolkit or the nvidia-cuda-nvrtc wheel, or set EMBER_NVRTC to "
              "the library's path. Tried:" +
                  tried);
}

const Nvrtc& loaded() {
  std::lock_guard<std::mutex> lock(g_mu);
  EMBER_CHECK(g_nvrtc.lib, "ember.compile: NVRTC is not loaded (call _nvrtc_load first)");
  return g_nvrtc;
}

std::string err(const Nvrtc& n, int r) {
  const char* s = n.GetErrorString(r);
  return std::string(s ? s : "unknown NVRTC error") + " (" + std::to_string(r) + ")";
}

struct ProgramGuard {
  const Nvrtc& n;
  Program p = nullptr;
  ~ProgramGuard() {
    if (p) n.DestroyProgram(&p);
  }
};

// Compiles `source` (named `name` in messages) with `options`; `headers` are (include
// name, text) pairs the source may #include without a file. Returns (image, log): a CUBIN
// when `cubin` (the options name a real sm_XX), else PTX. A compile error raises
// RuntimeError with NVRTC's log.
py::tuple compile(const std::string& source, const std::string& name,
                  const std::vector<std::string>& options,
                  const std::vector<std::pair<std::string, std::string>>& headers, bool cubin) {
  const Nvrtc& n = loaded();
  std::string image, log;
  int rc = 0;
  {
    py::gil_scoped_release nogil;
    std::vector<const char*> hnames, htexts, opts;
    for (const auto& h : headers) {
      hnames.push_back(h.first.c_str());
      htexts.push_back(h.second.c_str());
    }
    for (const std::string& o : options) opts.push_back(o.c_str());
    ProgramGuard g{n};
    int r = n.CreateProgram(&g.p, source.c_str(), name.c_str(), int(headers.size()), htexts.data(),
                            hnames.data());
    if (r != 0)  // unwinding destroys the program and takes the GIL back
      throw Error(ErrorKind::Runtime, "ember.compile: nvrtcCreateProgram failed: " + err(n, r));
    rc = n.CompileProgram(g.p, int(opts.size()), opts.data());
    size_t sz = 0;
    if (n.GetProgramLogSize(g.p, &sz) == 0 && sz > 1) {
      log.resize(sz);
      n.GetProgramLog(g.p, log.data());
      log.resize(sz - 1);
    }
    if (rc == 0) {
      size_t isz = 0;
      r = cubin ? n.GetCUBINSize(g.p, &isz) : n.GetPTXSize(g.p, &isz);
      if (r == 0) {
        image.resize(isz);
        r = cubin ? n.GetCUBIN(g.p, image.data()) : n.GetPTX(g.p, image.data());
      }
      if (r != 0) rc = r;
    }
  }
  if (rc != 0)
    throw Error(ErrorKind::Runtime, "ember.compile: NVRTC could not compile the fused kernel " +
                                        name + ": " + err(n, rc) + "\n" + log);
  return py::make_tuple(py::bytes(image), log);
}

}  // namespace
}  // namespace nvrtc

void init_compile_nvrtc(py::module_& m) {
  using namespace nvrtc;
  m.def("_nvrtc_load", &load, py::arg("candidates"));
  m.def("_nvrtc_version", [] {
    const Nvrtc& n = loaded();
    int major = 0, minor = 0;
    const int r = n.Version(&major, &minor);
    EMBER_CHECK(r == 0, "ember.compile: nvrtcVersion failed: ", err(n, r));
    return py::make_tuple(major, minor);
  });
  // The real architectures (e.g. 90 for sm_90) this NVRTC can build a CUBIN for.
  m.def("_nvrtc_supported_archs", [] {
    const Nvrtc& n = loaded();
    int count = 0;
    int r = n.GetNumSupportedArchs(&count);
    EMBER_CHECK(r == 0, "ember.compile: nvrtcGetNumSupportedArchs failed: ", err(n, r));
    std::vector<int> archs(size_t(std::max(count, 0)));
    r = n.GetSupportedArchs(archs.data());
    EMBER_CHECK(r == 0, "ember.compile: nvrtcGetSupportedArchs failed: ", err(n, r));
    return archs;
  });
  m.def("_nvrtc_compile", &compile, py::arg("source"), py::arg("name"), py::arg("options"),
        py::arg("headers"), py::arg("cubin") = true);
}

}  // namespace ember::python
