// DeviceGuard: a kernel runs on its tensors' device, not on whichever is current.
#pragma once
#include "ember/core/device.h"
#include "ember/core/error.h"

namespace ember {

// Note [Device guard]
// A CUDA tensor names its device (cuda:1), but the CUDA runtime launches kernels, allocates
// and picks streams and cuBLAS handles on the thread's *current* device. Like PyTorch's
// DeviceGuard, every CUDA kernel call (BoundKernel, kernels/dispatch.h) and every CUDA
// allocation (make_storage) runs under a DeviceGuard for its device: when that device is not
// current it is made current for the call and the previous one restored afterwards (also when
// the kernel throws). When it already is current the guard costs one cudaGetDevice.
//
// The core knows no CUDA: ember._C_cuda installs the two hooks when it is loaded
// (backends/cuda/runtime.cpp). Without them (a CPU-only build, or before the backend loads)
// the guard does nothing; there is then no CUDA tensor to guard.
struct DeviceHooks {
  int (*get)() = nullptr;             // the current device; throws on a CUDA error
  const char* (*set)(int) = nullptr;  // makes a device current; an error message or nullptr
};
extern DeviceHooks cuda_device_hooks;

/// `d` with its index filled in: a tensor always names its device ("cuda" made now is
/// cuda:<current>), as PyTorch's do, so that tensors made with device="cuda" and with
/// device="cuda:0" compare equal in every same-device check.
inline Device resolve_device(Device d) {
  if (d.type == DeviceType::CUDA && d.index < 0 && cuda_device_hooks.get)
    d.index = int16_t(cuda_device_hooks.get());
  return d;
}

class DeviceGuard {
 public:
  explicit DeviceGuard(Device d) {
    if (d.type != DeviceType::CUDA || d.index < 0 || !cuda_device_hooks.get) return;
    const int cur = cuda_device_hooks.get();
    if (cur == d.index) return;
    const char* err = cuda_device_hooks.set(d.index);
    EMBER_CHECK(!err, "cannot make ", d.str(), " the current device: ", err);
    prev_ = cur;
  }
  ~DeviceGuard() {
    if (prev_ >= 0) cuda_device_hooks.set(prev_);  // restoring a device that was current
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = -1;
};

}  // namespace ember
