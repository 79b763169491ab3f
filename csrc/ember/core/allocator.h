// Allocators. A DataPtr owns memory through a (ctx, deleter) pair so that the
// same Storage can hold ember-allocated memory, NumPy's or a DLPack producer's.
#pragma once
#include <cstddef>
#include <cstdint>

#include "ember/core/device.h"

namespace ember {

struct DataPtr {
  void* ptr = nullptr;
  void* ctx = nullptr;               // handed to deleter
  void (*deleter)(void*) = nullptr;  // null: not owned
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual DataPtr allocate(size_t nbytes) = 0;
};

/// Statistics of the caching host allocator.
struct CpuAllocatorStats {
  int64_t allocated_bytes, cached_bytes, cache_hits, cache_misses;
  int64_t peak_allocated_bytes;  // the most allocated_bytes has been since the last reset
};

/// The CPU allocator: 64-byte aligned, caches freed blocks so that steady-state
/// loops reuse warm pages instead of paying first-touch faults.
/// See Note [Caching host allocator] in allocator.cpp.
Allocator* cpu_allocator();
CpuAllocatorStats cpu_allocator_stats();
/// Restarts peak_allocated_bytes from the bytes allocated now.
void cpu_allocator_reset_peak();
void cpu_allocator_empty_cache();

/// The allocator for a device (CUDA's is registered by the CUDA backend,
/// loaded on first use through `lazy_device_init_hook`).
Allocator* allocator_for(Device d);
/// Set by the Python layer: loads the backend for a device type (ember.cuda's
/// lazy init), raising a clear error when it cannot.
extern void (*lazy_device_init_hook)(DeviceType t);
void register_allocator(DeviceType t, Allocator* a);

}  // namespace ember
