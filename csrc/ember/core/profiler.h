// The op profiler's recording side (ember.profiler collects and formats).
// See Note [Profiler recording].
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace ember {
class Tensor;
class TensorIterator;
}  // namespace ember

namespace ember::profiler {

// Note [Profiler recording]
// One global atomic flag says whether a profiler is collecting. Every kernel
// dispatch (DispatchStub::get(...)(...), kernels/dispatch.h), every autograd
// node the engine runs and every ember.profiler.record_function opens a
// RecordScope; when the flag is off that costs one relaxed atomic load. When it
// is on, the scope notes its name, thread, start/end (steady clock ns), input
// shapes (record_shapes) and the bytes allocated/freed while it was innermost
// (profile_memory, fed by the CPU allocator), and appends one Event to its
// thread's buffer. Buffers register in a global list so that stop() can drain
// every thread's events, including worker threads'.
extern std::atomic<bool> g_enabled;
inline bool enabled() { return g_enabled.load(std::memory_order_relaxed); }

enum class EventKind : int { Op = 0, UserScope = 1, Backward = 2, Memory = 3 };

struct Event {
  std::string name;
  int kind = 0;
  uint64_t tid = 0;
  int64_t start_ns = 0, end_ns = 0;
  int64_t correlation = 0;  // unique id of the scope
  int64_t parent = -1;      // correlation of the enclosing scope on this thread, -1 for none
  int depth = 0;
  std::vector<std::vector<int64_t>> shapes;  // record_shapes
  std::vector<std::string> dtypes;           // record_shapes
  int64_t self_alloc_bytes = 0;              // bytes allocated while this scope was innermost
  int64_t self_free_bytes = 0;               // bytes freed while this scope was innermost
  int64_t mem_bytes = 0;                     // Memory events: +allocated / -freed
  int64_t total_allocated = 0;               // Memory events: CPU bytes in use after it
};

struct Config {
  bool record_shapes = false;
  bool profile_memory = false;
  bool device = false;  // ProfilerActivity.CUDA: time CUDA kernel dispatches on their streams
};

// Note [Profiler device ranges]
// With ProfilerActivity.CUDA, each kernel dispatch on a CUDA tensor (BoundKernel, whose
// stub knows the device) also brackets its launches with a pair of CUDA events on the
// current stream. The CUDA backend owns the events (core links no CUDA): it installs
// these hooks when _C_cuda loads, and ember.profiler collects the timed ranges from it
// (_C_cuda._profiler_gpu_collect), keyed by the scope's correlation id, to give each op
// its device time and the trace its kernels and launch-to-kernel flow arrows.
struct DeviceHooks {
  void (*begin)(int64_t correlation) = nullptr;
  void (*end)(int64_t correlation) = nullptr;
};
void set_device_hooks(const DeviceHooks& hooks);

/// Starts collecting (raises RuntimeError if already collecting).
void start(const Config& cfg);
/// Stops collecting and returns every thread's events, sorted by start time.
std::vector<Event> stop();
/// Events so far (keeps collecting); used by schedule-driven profilers.
std::vector<Event> drain();
bool record_shapes();
bool profile_memory();
/// Monotonic clock in ns (the events' time base).
int64_t now_ns();

class RecordScope {
 public:
  explicit RecordScope(const char* name, EventKind kind = EventKind::Op, bool on_device = false) {
    if (enabled()) begin(name, kind, on_device);
  }
  RecordScope(const std::string& name, EventKind kind) {
    if (enabled()) begin(name.c_str(), kind, false);
  }
  ~RecordScope() {
    if (active_) end();
  }
  RecordScope(const RecordScope&) = delete;
  RecordScope& operator=(const RecordScope&) = delete;
  bool active() const { return active_; }
  bool wants_shapes() const { return active_ && record_shapes(); }
  void add_input(const Tensor& t);
  void add_input(const TensorIterator& it);
  template <typename T>
  void add_input(const T&) {}

 private:
  void begin(const char* name, EventKind kind, bool on_device);
  void end();
  bool active_ = false;
  int64_t device_range_ = 0;  // the correlation of the device range it opened, 0 for none
  size_t depth_ = 0;          // 1 + index of this scope on its thread's open-scope stack
  uint64_t gen_ = 0;          // the profiling session it was opened in
};

/// Opens/closes a scope by hand (ember.profiler.record_function): enter returns a
/// handle for exit; scopes opened while not profiling return 0 and exit(0) is a no-op.
int64_t enter(const std::string& name, EventKind kind);
void exit(int64_t handle);

/// Called by allocators: `bytes` > 0 allocated, < 0 freed; `in_use` the total after it.
void record_memory(int64_t bytes, int64_t in_use, bool cuda);

}  // namespace ember::profiler
