// Kernel registration: how a backend's kernels reach the op stubs.
#pragma once
#include <string>
#include <vector>

#include "ember/core/device.h"

namespace ember {

// Note [Kernel registration]
// Every backend file that implements kernels fills its stub slots itself, at static
// initialization of the library holding it: the CPU kernels when libember_core is loaded,
// the CUDA kernels when ember._C_cuda is. There is no central list to edit: a new kernel
// file registers with
//
//     EMBER_REGISTER_KERNELS(CUDA, pool) {          // or EMBER_REGISTER_CPU_KERNELS(pool)
//       max_pool_stub.fns[int(DeviceType::CUDA)] = &max_pool;
//       ...
//     }
//
// and is picked up by the build's source glob. The stubs themselves are constant-initialized
// (DispatchStub's constructor is constexpr), so a registration that runs before any other
// dynamic initializer still finds them ready; registration bodies only store pointers and
// must not throw (an exception at static initialization would terminate the process).
//
// Each registration also records its family name per device, which
// ember._C._kernel_families(device) returns: tests/test_kernel_registration.py checks it
// against the families the sources declare, so a file whose registration was dropped (a
// static library's unreferenced object, a misspelt condition) fails a test instead of
// raising "not implemented for 'CUDA'" at a user.

/// Records that `family`'s kernels registered on `device` (thread-safe; callable during
/// static initialization).
void record_kernel_family(DeviceType device, const char* family);
/// The families registered on `device` so far, in registration order.
std::vector<std::string> kernel_families(DeviceType device);

struct KernelRegistration {
  KernelRegistration(DeviceType device, const char* family, bool enabled, void (*fn)()) {
    if (!enabled) return;
    fn();
    record_kernel_family(device, family);
  }
};

}  // namespace ember

/// Defines the body of `family`'s registration on `device` (CPU or CUDA), run when
/// `enabled` holds (see Note [Kernel registration]).
#define EMBER_REGISTER_KERNELS_IF(device, family, enabled)                                  \
  static void ember_register_##family##_kernels();                                          \
  [[maybe_unused]] static const ::ember::KernelRegistration ember_##family##_registration{  \
      ::ember::DeviceType::device, #family, (enabled), &ember_register_##family##_kernels}; \
  static void ember_register_##family##_kernels()
#define EMBER_REGISTER_KERNELS(device, family) EMBER_REGISTER_KERNELS_IF(device, family, true)
