// Device queries, the per-thread current stream, and the Python-facing stream,
// event and pinned-memory entry points of ember._C_cuda.
#include <cuda_runtime.h>
#include <atomic>

#include <array>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/backends/cuda/cuda_check.h"
#include "ember/core/device_guard.h"

namespace ember::cuda {

int current_device() {
  // Without a driver or a device, cudaGetDevice fails with a driver-version error that
  // says nothing useful; every path that needs a device comes through here first.
  EMBER_CHECK(device_count() > 0,
              "Found no NVIDIA driver on your system, or no CUDA device is "
              "visible: ember.cuda.is_available() is False. Use device='cpu'.");
  int d = 0;
  EMBER_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

int multiprocessor_count() {
  static std::atomic<int> counts[64] = {};
  const int d = current_device();
  if (d >= 64) {
    int n = 0;
    EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, d));
    return n;
  }
  int n = counts[d].load(std::memory_order_relaxed);
  if (n == 0) {
    EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, d));
    counts[d].store(n, std::memory_order_relaxed);
  }
  return n;
}

int device_count() {
  static const int n = [] {
    int c = 0;
    if (cudaGetDeviceCount(&c) != cudaSuccess) {
      (void)cudaGetLastError();  // no driver or no device: not an error for a query
      return 0;
    }
    return c;
  }();
  return n;
}

namespace {
constexpr int kMaxDevices = 64;
thread_local std::array<cudaStream_t, kMaxDevices> t_current{};
}  // namespace

cudaStream_t current_stream(int device) {
  EMBER_CHECK(device >= 0 && device < kMaxDevices, "CUDA: invalid device index ", device);
  return t_current[device];
}

void set_current_stream(int device, cudaStream_t s) {
  EMBER_CHECK(device >= 0 && device < kMaxDevices, "CUDA: invalid device index ", device);
  t_current[device] = s;
}

namespace {

// The core's DeviceGuard hooks (Note [Device guard], core/device_guard.h), installed when this
// module is loaded.
const char* set_device_hook(int d) {
  if (d >= device_count()) return "invalid device ordinal (no such CUDA device)";
  const cudaError_t e = cudaSetDevice(d);
  if (e == cudaSuccess) return nullptr;
  (void)cudaGetLastError();
  return cudaGetErrorString(e);
}

struct InstallDeviceHooks {
  InstallDeviceHooks() {
    cuda_device_hooks.set = &set_device_hook;
    cuda_device_hooks.get = [] { return current_device(); };
  }
} install_device_hooks;

}  // namespace

}  // namespace ember::cuda
