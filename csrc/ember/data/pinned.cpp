#include "ember/data/pinned.h"

#include "ember/ops/ops.h"

#include <dlfcn.h>

#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

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
               load(lib, "cuMemHostAlloc", d.cuMemHostAlloc);
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

// Note [One pinned host allocator]
// Every pinned buffer in ember comes from here: the DataLoader's staging, Tensor.pin_memory()
// and the CUDA backend's pinned copies (ember._C_cuda calls pin_memory/is_pinned below; it
// has no allocator of its own). Freed buffers are cached by their power-of-two rounded size
// and reused, as PyTorch's CachingHostAllocator does, because cuMemHostAlloc costs
// milliseconds and the loader pins a new batch every step. Reuse needs no stream events
// while host-to-device copies from pinned memory are synchronous (the CUDA backend's
// non_blocking copies are; see docs/ARCHITECTURE.md).
struct Block {
  void* ptr;
  size_t size;
};

struct Cache {
  std::mutex mu;
  std::unordered_map<size_t, std::vector<void*>> free;
};

Cache& cache() {
  static auto* c = new Cache();  // leaked: pinned storages may outlive static destructors
  return *c;
}

size_t round_size(size_t n) {
  if (n > (size_t(1) << 62)) return n;  // cuMemHostAlloc fails on it, with the size named
  size_t r = 512;
  while (r < n) r <<= 1;
  return r;
}

void pinned_release(void* ctx) {
  auto* b = static_cast<Block*>(ctx);
  {
    std::lock_guard<std::mutex> lk(cache().mu);
    cache().free[b->size].push_back(b->ptr);
  }
  delete b;
}

void* pinned_alloc(size_t size) {
  {
    std::lock_guard<std::mutex> lk(cache().mu);
    auto it = cache().free.find(size);
    if (it != cache().free.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      return p;
    }
  }
  Driver& d = driver();
  void* p = nullptr;
  CUcontext prev = nullptr;
  EMBER_CHECK(d.cuCtxPushCurrent(d.ctx) == 0, "pin_memory: cannot make the CUDA context current");
  CUresult rc = d.cuMemHostAlloc(&p, size, kHostAllocPortable);
  d.cuCtxPopCurrent(&prev);
  EMBER_CHECK(rc == 0 && p, "pin_memory: cuMemHostAlloc of ", size,
              " bytes of page-locked memory failed (CUDA error ", rc, ")");
  return p;
}

}  // namespace

bool pinning_available() { return driver().ok; }

Tensor empty_pinned(const Shape& sizes, DType dtype) {
  Driver& d = driver();
  EMBER_CHECK(d.ok, d.why);
  int64_t numel = checked_numel(sizes);
  size_t nbytes = size_t(checked_mul(numel, int64_t(element_size(dtype)), "pin_memory"));
  size_t size = round_size(nbytes);
  void* p = pinned_alloc(size);
  DataPtr dp{p, new Block{p, size}, &pinned_release};
  return from_blob(dp, nbytes, Device(), dtype, sizes, contiguous_strides(sizes), 0);
}

bool is_pinned(const Tensor& t) {
  return t.defined() && t.storage() && t.storage()->data.deleter == &pinned_release;
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
