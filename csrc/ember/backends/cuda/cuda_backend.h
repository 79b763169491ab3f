// The CUDA backend's internal interface (device queries, allocator, streams, kernels).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ember/core/allocator.h"
#include "ember/core/error.h"

namespace ember::cuda {

/// Number of visible devices; 0 when there is no driver or no GPU.
int device_count();
int current_device();
/// The current device's multiprocessor count (read once per device).
int multiprocessor_count();

/// The calling thread's current stream on `device` (0: the legacy default stream).
cudaStream_t current_stream(int device);
inline cudaStream_t current_stream() { return current_stream(current_device()); }
void set_current_stream(int device, cudaStream_t s);

/// Raised by the caching allocator when a request cannot be met even after
/// freeing the cache; ember.cuda.OutOfMemoryError in Python.
class OutOfMemory : public Error {
 public:
  explicit OutOfMemory(const std::string& msg) : Error(ErrorKind::Runtime, msg) {}
};

/// The caching device allocator registered for DeviceType::CUDA.
/// See Note [CUDA caching allocator] in allocator.cpp.
Allocator* caching_allocator();
void empty_cache();
int64_t memory_allocated();
int64_t memory_reserved();
/// PyTorch-named statistics ("allocated_bytes.all.current", ...).
std::map<std::string, int64_t> memory_stats(int device);
void reset_peak_memory_stats(int device);
void reset_accumulated_memory_stats(int device);
void set_memory_fraction(int device, double fraction);
double get_memory_fraction(int device);
/// Marks the block holding `ptr` as used by `stream`: its reuse waits for the
/// work queued on `stream` at the time the block is freed.
void record_stream(void* ctx, cudaStream_t stream);
/// Allocation history (_record_memory_history) and the allocator state (_snapshot).
void record_history(bool enabled, bool trace, int64_t max_entries);
struct SegmentInfo {
  int device;
  uintptr_t address;
  int64_t total_size, allocated_size;
  uintptr_t stream;
  bool is_large;
};
struct TraceEntry {
  std::string action;  // "alloc" / "free_requested" / "segment_alloc" / "segment_free" / "oom"
  uintptr_t addr;
  int64_t size;
  uintptr_t stream;
  int device;
};
std::vector<SegmentInfo> segments();
std::vector<TraceEntry> trace();

/// ProfilerActivity.CUDA (profiler_ranges.cpp, Note [Profiler device ranges]): the hooks
/// core's RecordScope calls, the start of a collection (one base event per device), and
/// the timed ranges collected so far, in the host clock of profiler::now_ns.
struct GpuRange {
  int64_t correlation;
  int device;
  uintptr_t stream;
  int64_t start_ns, end_ns;
};
void install_profiler_hooks();
void profiler_gpu_start();
std::vector<GpuRange> profiler_gpu_collect();

/// True when `ptr` lies in memory from cudaHostAlloc / cudaHostRegister.
bool is_pinned_ptr(const void* ptr);

}  // namespace ember::cuda
