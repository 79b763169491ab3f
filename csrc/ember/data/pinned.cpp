#include "ember/data/pinned.h"

#include "ember/ops/ops.h"

#include <dlfcn.h>

#include <cstring>
#include <mutex>
#include <string>

namespace ember::data {
namespace {

using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
constexpr unsigned kHostAllocPortable = 0x01;

struct Driver {
  bool ok = false;
  std::string why;
  CUcontext ctx = nullptr;
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuCtxPushCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxPopCurrent)(CUcontext*) = nullptr;
  CUresult (*cuMemHostAlloc)(void**, size_t, unsigned) = nullptr;
  CUresult (*cuMemFreeHost)(void*) = nullptr;
};

template <typename F>
bool load(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  return out != nullptr;
}

Driver& driver() {
  static Driver d;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* no_driver =
        "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and "
        "installed a driver (pinned host memory needs one)";
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      d.why = no_driver;
      return;
    }
    bool all = load(lib, "cuInit", d.cuInit) && load(lib, "cuDeviceGetCount", d.cuDeviceGetCount) &&
               load(lib, "cuDeviceGet", d.cuDeviceGet) &&
               load(lib, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain) &&
               load(lib, "cuCtxPushCurrent_v2", d.cuCtxPushCurrent) &&
               load(lib, "cuCtxPopCurrent_v2", d.cuCtxPopCurrent) &&
               load(lib, "cuMemHostAlloc", d.cuMemHostAlloc) &&
               load(lib, "cuMemFreeHost", d.cuMemFreeHost);
    int count = 0;
    CUdevice dev = 0;
    if (!all || d.cuInit(0) != 0 || d.cuDeviceGetCount(&count) != 0 || count == 0 ||
        d.cuDeviceGet(&dev, 0) != 0 || d.cuDevicePrimaryCtxRetain(&d.ctx, dev) != 0) {
      d.why = no_driver;
      return;
    }
    d.ok = true;
  });
  return d;
}

void pinned_free(void* p) {
  Driver& d = driver();
  CUcontext prev = nullptr;
  d.cuCtxPushCurrent(d.ctx);
  d.cuMemFreeHost(p);
  d.cuCtxPopCurrent(&prev);
}

}  // namespace

bool pinning_available() { return driver().ok; }

Tensor empty_pinned(const Shape& sizes, DType dtype) {
  Driver& d = driver();
  EMBER_CHECK(d.ok, d.why);
  int64_t numel = checked_numel(sizes);
  size_t nbytes = size_t(checked_mul(numel, int64_t(element_size(dtype)), "pin_memory"));
  void* p = nullptr;
  CUcontext prev = nullptr;
  EMBER_CHECK(d.cuCtxPushCurrent(d.ctx) == 0, "pin_memory: cannot make the CUDA context current");
  CUresult rc = d.cuMemHostAlloc(&p, nbytes ? nbytes : 1, kHostAllocPortable);
  d.cuCtxPopCurrent(&prev);
  EMBER_CHECK(rc == 0 && p, "pin_memory: cuMemHostAlloc of ", nbytes, " bytes failed (CUDA error ",
              rc, ")");
  DataPtr dp{p, p, &pinned_free};
  return from_blob(dp, nbytes, Device(), dtype, sizes, contiguous_strides(sizes), 0);
}

bool is_pinned(const Tensor& t) {
  return t.defined() && t.storage() && t.storage()->data.deleter == &pinned_free;
}

Tensor pin_memory(const Tensor& t) {
  EMBER_CHECK(t.device().type == DeviceType::CPU, "cannot pin '", dtype_name(t.dtype()),
              "' tensor on ", t.device().type == DeviceType::CUDA ? "cuda" : "a non-CPU",
              " device: only dense CPU tensors can be pinned");
  if (is_pinned(t)) return t;
  Tensor out = empty_pinned(t.sizes(), t.dtype());
  Tensor src = contiguous(t);
  if (src.numel())
    std::memcpy(out.data_ptr(), src.data_ptr(), size_t(src.numel()) * src.element_size());
  return out;
}

}  // namespace ember::data
