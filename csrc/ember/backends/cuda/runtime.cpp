// Device queries, the per-thread current stream, and the Python-facing stream,
// event and pinned-memory entry points of ember._C_cuda.
#include <cuda_runtime.h>

#include <array>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/backends/cuda/cuda_check.h"

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

}  // namespace ember::cuda
