// See Note [Profiler recording] in profiler.h.
#include "ember/core/profiler.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>

#include "ember/core/error.h"
#include "ember/core/tensor.h"

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace ember::profiler {

std::atomic<bool> g_enabled{false};

namespace {

struct ThreadBuffer {
  std::mutex mu;
  std::vector<Event> done;  // closed scopes and memory events
};

struct Global {
  std::mutex mu;
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  Config cfg;
  uint64_t generation = 0;  // bumped by start(): stale open scopes are dropped
  std::atomic<int64_t> next_id{1};
};

Global& global() {
  static Global* g = new Global();  // leaked: threads may record during exit
  return *g;
}

uint64_t this_tid() {
#if defined(__linux__)
  return uint64_t(::syscall(SYS_gettid));
#else
  return uint64_t(std::hash<std::thread::id>()(std::this_thread::get_id()));
#endif
}

struct ThreadState {
  std::shared_ptr<ThreadBuffer> buf;
  std::vector<Event> open;  // the open-scope stack
  uint64_t generation = 0;
  uint64_t tid = 0;
};

ThreadState& tstate() {
  thread_local ThreadState st;
  Global& g = global();
  if (!st.buf) {
    st.buf = std::make_shared<ThreadBuffer>();
    st.tid = this_tid();
    std::lock_guard<std::mutex> lk(g.mu);
    g.buffers.push_back(st.buf);
  }
  return st;
}

// The generation as seen by recording threads (read without the global lock).
std::atomic<uint64_t> g_generation{0};

ThreadState& fresh_tstate() {
  ThreadState& st = tstate();
  uint64_t gen = g_generation.load(std::memory_order_acquire);
  if (st.generation != gen) {
    st.open.clear();
    st.generation = gen;
  }
  return st;
}

std::vector<Event> collect(bool stop_after) {
  Global& g = global();
  std::vector<Event> out;
  {
    std::lock_guard<std::mutex> lk(g.mu);
    if (stop_after) g_enabled.store(false, std::memory_order_release);
    for (auto& b : g.buffers) {
      std::lock_guard<std::mutex> blk(b->mu);
      for (auto& e : b->done) out.push_back(std::move(e));
      b->done.clear();
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Event& a, const Event& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.depth < b.depth;
  });
  return out;
}

}  // namespace

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void start(const Config& cfg) {
  Global& g = global();
  std::lock_guard<std::mutex> lk(g.mu);
  EMBER_CHECK(!g_enabled.load(),
              "profiler: a profiler is already collecting; "
              "only one ember.profiler.profile can be active at a time");
  for (auto& b : g.buffers) {
    std::lock_guard<std::mutex> blk(b->mu);
    b->done.clear();
  }
  g.cfg = cfg;
  g_generation.store(++g.generation, std::memory_order_release);
  g_enabled.store(true, std::memory_order_release);
}

std::vector<Event> stop() { return collect(true); }
std::vector<Event> drain() { return collect(false); }
bool record_shapes() { return global().cfg.record_shapes; }
bool profile_memory() { return global().cfg.profile_memory; }

namespace {
DeviceHooks g_device_hooks;
}  // namespace

void set_device_hooks(const DeviceHooks& hooks) { g_device_hooks = hooks; }

void RecordScope::begin(const char* name, EventKind kind, bool on_device) {
  ThreadState& st = fresh_tstate();
  Event e;
  e.name = name;
  e.kind = int(kind);
  e.tid = st.tid;
  e.correlation = global().next_id.fetch_add(1, std::memory_order_relaxed);
  e.parent = st.open.empty() ? -1 : st.open.back().correlation;
  e.depth = int(st.open.size());
  st.open.push_back(std::move(e));
  depth_ = st.open.size();
  gen_ = st.generation;
  active_ = true;
  if (on_device && global().cfg.device && g_device_hooks.begin) {
    device_range_ = st.open.back().correlation;
    g_device_hooks.begin(device_range_);
  }
  st.open.back().start_ns = now_ns();
}

void RecordScope::end() {
  int64_t t = now_ns();
  active_ = false;
  if (device_range_) g_device_hooks.end(device_range_);
  ThreadState& st = tstate();
  // A scope that outlived its profiling session (or whose stack was reset) is dropped.
  if (gen_ != st.generation || st.generation != g_generation.load(std::memory_order_acquire) ||
      st.open.size() != depth_)
    return;
  Event e = std::move(st.open.back());
  st.open.pop_back();
  e.end_ns = t;
  if (!enabled()) return;
  std::lock_guard<std::mutex> lk(st.buf->mu);
  st.buf->done.push_back(std::move(e));
}

void RecordScope::add_input(const Tensor& t) {
  if (!active_) return;
  ThreadState& st = tstate();
  if (st.open.size() != depth_ || gen_ != st.generation) return;
  Event& e = st.open.back();
  if (!t.defined()) {
    e.shapes.emplace_back();
    e.dtypes.emplace_back("");
    return;
  }
  e.shapes.emplace_back(t.sizes().begin(), t.sizes().end());
  e.dtypes.emplace_back(dtype_name(t.dtype()));
}

// RecordScope::add_input(const TensorIterator&) is defined in kernels/tensor_iterator.cpp:
// core includes nothing above it.

namespace {
thread_local std::vector<std::pair<int64_t, std::unique_ptr<RecordScope>>> t_manual;
thread_local int64_t t_manual_next = 1;
}  // namespace

int64_t enter(const std::string& name, EventKind kind) {
  if (!enabled()) return 0;
  auto s = std::make_unique<RecordScope>(name, kind);
  if (!s->active()) return 0;
  int64_t h = t_manual_next++;
  t_manual.emplace_back(h, std::move(s));
  return h;
}

void exit(int64_t handle) {
  if (handle == 0) return;
  // Closes the scope and any manual scope opened inside it and left open.
  for (size_t i = t_manual.size(); i-- > 0;) {
    if (t_manual[i].first == handle) {
      while (t_manual.size() > i) t_manual.pop_back();
      return;
    }
  }
}

void record_memory(int64_t bytes, int64_t in_use, bool cuda) {
  if (!enabled() || !profile_memory()) return;
  ThreadState& st = fresh_tstate();
  if (!st.open.empty()) {
    if (bytes > 0)
      st.open.back().self_alloc_bytes += bytes;
    else
      st.open.back().self_free_bytes -= bytes;
  }
  Event e;
  e.name = "[memory]";
  e.kind = int(EventKind::Memory);
  e.tid = st.tid;
  e.start_ns = e.end_ns = now_ns();
  e.parent = st.open.empty() ? -1 : st.open.back().correlation;
  e.depth = int(st.open.size());
  e.mem_bytes = bytes;
  e.total_allocated = in_use;
  e.dtypes.emplace_back(cuda ? "cuda" : "cpu");
  std::lock_guard<std::mutex> lk(st.buf->mu);
  st.buf->done.push_back(std::move(e));
}

}  // namespace ember::profiler
