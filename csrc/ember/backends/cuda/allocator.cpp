// The CUDA caching allocator (pinned host memory is ember::data's, Note [One pinned host
// allocator] in data/pinned.cpp).
//
// Note [CUDA caching allocator]
// Device memory comes from cudaMalloc in segments and is never returned to the
// driver except by empty_cache() or when a cudaMalloc fails (then the cache is
// freed and the request retried once). Freed blocks stay in per-(device, stream)
// pools, split into a small pool (requests <= 1 MiB, carved from 2 MiB
// segments) and a large pool (rounded to 2 MiB, a larger cached block is split
// when the remainder is itself >= 1 MiB). A block is reused only by the stream
// it was allocated on; a block also used on other streams (Tensor.record_stream)
// waits, when freed, for events recorded on those streams before it returns to
// its pool. Statistics use PyTorch's names (memory_stats()).
#include <cuda_runtime.h>

#include <algorithm>
#include <deque>
#include <mutex>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/backends/cuda/cuda_check.h"

namespace ember::cuda {
namespace {

constexpr size_t kMinBlock = 512;
constexpr size_t kSmallSize = size_t(1) << 20;    // requests up to 1 MiB use the small pool
constexpr size_t kSmallBuffer = size_t(2) << 20;  // small-pool segments are 2 MiB
constexpr size_t kRoundLarge = size_t(2) << 20;   // large requests round to 2 MiB
constexpr size_t kMinLargeSplit = size_t(1) << 20;

size_t round_size(size_t n) {
  if (n < kMinBlock) return kMinBlock;
  return (n + kMinBlock - 1) / kMinBlock * kMinBlock;
}

struct Block {
  int device;
  cudaStream_t stream;
  size_t size;
  void* ptr;
  bool allocated = false;
  bool small;
  Block* prev = nullptr;  // neighbours inside the same segment (splitting)
  Block* next = nullptr;
  std::unordered_set<cudaStream_t> used_on;  // record_stream
  int pending_events = 0;
};

struct BlockLess {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return uintptr_t(a->stream) < uintptr_t(b->stream);
    if (a->size != b->size) return a->size < b->size;
    return uintptr_t(a->ptr) < uintptr_t(b->ptr);
  }
};

struct Stat {
  int64_t current = 0, peak = 0, allocated = 0, freed = 0;
  void add(int64_t n) {
    current += n;
    allocated += n;
    peak = std::max(peak, current);
  }
  void sub(int64_t n) {
    current -= n;
    freed += n;
  }
};

struct DeviceStats {
  Stat allocated_bytes, reserved_bytes, active_bytes, allocation, segment, active;
  Stat inactive_split_bytes, inactive_split;
  int64_t num_alloc_retries = 0, num_ooms = 0, num_device_alloc = 0, num_device_free = 0;
};

class CudaCachingAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    int dev = current_device();
    cudaStream_t stream = current_stream(dev);
    std::unique_lock<std::mutex> lk(mu_);
    process_events();
    size_t size = round_size(nbytes);
    bool small = size <= kSmallSize;
    auto& pool = small ? small_pool_ : large_pool_;
    Block key{dev, stream, size, nullptr};
    key.small = small;
    Block* b = nullptr;
    auto it = pool.lower_bound(&key);
    if (it != pool.end() && (*it)->device == dev && (*it)->stream == stream) {
      b = *it;
      pool.erase(it);
    }
    if (!b) {
      size_t seg = small ? kSmallBuffer : (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
      void* p = nullptr;
      cudaError_t err = device_malloc(dev, &p, seg);
      if (err != cudaSuccess) {
        // Free the cache and retry once.
        (void)cudaGetLastError();
        stats_[dev].num_alloc_retries++;
        free_cached(dev);
        err = device_malloc(dev, &p, seg);
      }
      if (err != cudaSuccess) {
        (void)cudaGetLastError();
        stats_[dev].num_ooms++;
        add_trace("oom", 0, int64_t(nbytes), stream, dev);
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        std::ostringstream os;
        os << "CUDA out of memory. Tried to allocate " << format_bytes(nbytes) << ". GPU " << dev
           << " has a total capacity of " << format_bytes(total_b) << " of which "
           << format_bytes(free_b) << " is free. Of the allocated memory "
           << format_bytes(stats_[dev].allocated_bytes.current) << " is allocated by ember, and "
           << format_bytes(stats_[dev].reserved_bytes.current - stats_[dev].allocated_bytes.current)
           << " is reserved by ember but unallocated."
           << (fraction_.count(dev) ? " A per-process memory fraction is set." : "") << " ("
           << cudaGetErrorString(err) << ")";
        throw OutOfMemory(os.str());
      }
      b = new Block{dev, stream, seg, p};
      b->small = small;
      stats_[dev].reserved_bytes.add(int64_t(seg));
      stats_[dev].segment.add(1);
      segments_.insert(b);
      add_trace("segment_alloc", uintptr_t(p), int64_t(seg), stream, dev);
    }
    // Split off the remainder when worth it.
    size_t remaining = b->size - size;
    if ((small && remaining >= kMinBlock) || (!small && remaining >= kMinLargeSplit)) {
      Block* rest = new Block{dev, stream, remaining, static_cast<char*>(b->ptr) + size};
      rest->small = small;
      rest->prev = b;
      rest->next = b->next;
      if (b->next) b->next->prev = rest;
      b->next = rest;
      b->size = size;
      pool.insert(rest);
      stats_[dev].inactive_split_bytes.add(int64_t(remaining));
    }
    b->allocated = true;
    live_[b->ptr] = b;
    auto& st = stats_[dev];
    st.allocated_bytes.add(int64_t(b->size));
    st.active_bytes.add(int64_t(b->size));
    st.allocation.add(1);
    st.active.add(1);
    add_trace("alloc", uintptr_t(b->ptr), int64_t(b->size), stream, dev);
    return DataPtr{b->ptr, b, &CudaCachingAllocator::release};
  }

  static void release(void* ctx);

  void free_block(Block* b) {
    std::lock_guard<std::mutex> lk(mu_);
    live_.erase(b->ptr);
    auto& st = stats_[b->device];
    st.allocated_bytes.sub(int64_t(b->size));
    st.allocation.sub(1);
    add_trace("free_requested", uintptr_t(b->ptr), int64_t(b->size), b->stream, b->device);
    if (!b->used_on.empty()) {
      // Reuse waits for the other streams' work queued so far.
      int prev = -1;
      cudaGetDevice(&prev);
      cudaSetDevice(b->device);
      for (cudaStream_t s : b->used_on) {
        cudaEvent_t e;
        if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess &&
            cudaEventRecord(e, s) == cudaSuccess) {
          events_.push_back({e, b});
          b->pending_events++;
        }
      }
      cudaSetDevice(prev);
      b->used_on.clear();
      if (b->pending_events > 0) return;
    }
    to_pool(b);
  }

  void record_stream(Block* b, cudaStream_t s) {
    std::lock_guard<std::mutex> lk(mu_);
    if (s != b->stream) b->used_on.insert(s);
  }

  void empty_cache() {
    std::lock_guard<std::mutex> lk(mu_);
    process_events();
    for (int d = 0; d < 64; ++d) free_cached(d);
  }

  int64_t allocated() {
    std::lock_guard<std::mutex> lk(mu_);
    int64_t n = 0;
    for (auto& kv : stats_) n += kv.second.allocated_bytes.current;
    return n;
  }
  int64_t reserved() {
    std::lock_guard<std::mutex> lk(mu_);
    int64_t n = 0;
    for (auto& kv : stats_) n += kv.second.reserved_bytes.current;
    return n;
  }

  std::map<std::string, int64_t> stats(int dev) {
    std::lock_guard<std::mutex> lk(mu_);
    std::map<std::string, int64_t> out;
    auto& st = stats_[dev];
    auto put = [&](const std::string& name, const Stat& s) {
      for (const char* pool : {"all", "large_pool", "small_pool"}) {
        // Per-pool breakdowns are not tracked separately: "all" carries the totals.
        if (std::string(pool) != "all") continue;
        out[name + "." + pool + ".current"] = s.current;
        out[name + "." + pool + ".peak"] = s.peak;
        out[name + "." + pool + ".allocated"] = s.allocated;
        out[name + "." + pool + ".freed"] = s.freed;
      }
    };
    put("allocated_bytes", st.allocated_bytes);
    put("reserved_bytes", st.reserved_bytes);
    put("active_bytes", st.active_bytes);
    put("allocation", st.allocation);
    put("segment", st.segment);
    put("active", st.active);
    put("inactive_split_bytes", st.inactive_split_bytes);
    out["num_alloc_retries"] = st.num_alloc_retries;
    out["num_ooms"] = st.num_ooms;
    out["num_device_alloc"] = st.num_device_alloc;
    out["num_device_free"] = st.num_device_free;
    return out;
  }

  void reset_peak(int dev) {
    std::lock_guard<std::mutex> lk(mu_);
    auto& st = stats_[dev];
    for (Stat* s : {&st.allocated_bytes, &st.reserved_bytes, &st.active_bytes, &st.allocation,
                    &st.segment, &st.active, &st.inactive_split_bytes})
      s->peak = s->current;
  }
  void reset_accumulated(int dev) {
    std::lock_guard<std::mutex> lk(mu_);
    auto& st = stats_[dev];
    for (Stat* s : {&st.allocated_bytes, &st.reserved_bytes, &st.active_bytes, &st.allocation,
                    &st.segment, &st.active, &st.inactive_split_bytes})
      s->allocated = s->freed = 0;
    st.num_alloc_retries = st.num_ooms = st.num_device_alloc = st.num_device_free = 0;
  }
  void set_fraction(int dev, double f) {
    std::lock_guard<std::mutex> lk(mu_);
    fraction_[dev] = f;
  }
  double get_fraction(int dev) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = fraction_.find(dev);
    return it == fraction_.end() ? 1.0 : it->second;
  }
  void set_history(bool enabled, bool trace, int64_t max_entries) {
    std::lock_guard<std::mutex> lk(mu_);
    history_ = enabled && trace;
    max_entries_ = std::max<int64_t>(max_entries, 0);
    if (!enabled) trace_.clear();
  }
  std::vector<SegmentInfo> segment_list() {
    std::lock_guard<std::mutex> lk(mu_);
    std::vector<SegmentInfo> out;
    for (Block* head : segments_) {
      int64_t total = 0, used = 0;
      for (Block* b = head; b; b = b->next) {
        total += int64_t(b->size);
        if (b->allocated) used += int64_t(b->size);
      }
      out.push_back(
          {head->device, uintptr_t(head->ptr), total, used, uintptr_t(head->stream), !head->small});
    }
    return out;
  }
  std::vector<TraceEntry> trace_list() {
    std::lock_guard<std::mutex> lk(mu_);
    return {trace_.begin(), trace_.end()};
  }

 private:
  cudaError_t device_malloc(int dev, void** p, size_t size) {
    auto it = fraction_.find(dev);
    if (it != fraction_.end()) {
      size_t free_b = 0, total_b = 0;
      cudaError_t e = cudaMemGetInfo(&free_b, &total_b);
      if (e != cudaSuccess) return e;
      if (double(stats_[dev].reserved_bytes.current + int64_t(size)) > it->second * double(total_b))
        return cudaErrorMemoryAllocation;
    }
    cudaError_t e = cudaMalloc(p, size);
    if (e == cudaSuccess) stats_[dev].num_device_alloc++;
    return e;
  }

  void to_pool(Block* b) {
    b->allocated = false;
    auto& st = stats_[b->device];
    st.active_bytes.sub(int64_t(b->size));
    st.active.sub(1);
    auto& pool = b->small ? small_pool_ : large_pool_;
    // Merge with free neighbours of the same segment.
    for (Block* n : {b->prev, b->next}) {
      if (!n || n->allocated || n->pending_events) continue;
      pool.erase(n);
      st.inactive_split_bytes.sub(int64_t(n->size));
      if (n == b->prev) {
        b->ptr = n->ptr;
        b->prev = n->prev;
        if (b->prev) b->prev->next = b;
        if (segments_.erase(n)) segments_.insert(b);
      } else {
        b->next = n->next;
        if (b->next) b->next->prev = b;
      }
      b->size += n->size;
      delete n;
    }
    if (b->prev || b->next) st.inactive_split_bytes.add(int64_t(b->size));
    pool.insert(b);
  }

  void process_events() {
    while (!events_.empty()) {
      auto& [e, b] = events_.front();
      if (cudaEventQuery(e) == cudaErrorNotReady) break;
      (void)cudaGetLastError();
      cudaEventDestroy(e);
      if (--b->pending_events == 0) to_pool(b);
      events_.pop_front();
    }
  }

  // Frees whole cached segments (every block of the segment free) of `dev`.
  void free_cached(int dev) {
    std::vector<Block*> heads;
    for (Block* h : segments_)
      if (h->device == dev && !h->next && !h->prev && !h->allocated && !h->pending_events)
        heads.push_back(h);
    for (Block* h : heads) {
      auto& pool = h->small ? small_pool_ : large_pool_;
      pool.erase(h);
      segments_.erase(h);
      int prev = -1;
      cudaGetDevice(&prev);
      cudaSetDevice(dev);
      cudaFree(h->ptr);
      cudaSetDevice(prev);
      stats_[dev].reserved_bytes.sub(int64_t(h->size));
      stats_[dev].segment.sub(1);
      stats_[dev].num_device_free++;
      add_trace("segment_free", uintptr_t(h->ptr), int64_t(h->size), h->stream, dev);
      delete h;
    }
  }

  void add_trace(const char* action, uintptr_t addr, int64_t size, cudaStream_t s, int dev) {
    if (!history_) return;
    trace_.push_back({action, addr, size, uintptr_t(s), dev});
    while (int64_t(trace_.size()) > max_entries_) trace_.pop_front();
  }

  static std::string format_bytes(size_t n) {
    std::ostringstream os;
    os.precision(2);
    os << std::fixed;
    if (n >= (size_t(1) << 30))
      os << double(n) / double(size_t(1) << 30) << " GiB";
    else if (n >= (size_t(1) << 20))
      os << double(n) / double(size_t(1) << 20) << " MiB";
    else if (n >= 1024)
      os << double(n) / 1024.0 << " KiB";
    else
      os << n << " bytes";
    return os.str();
  }

  std::mutex mu_;
  std::set<Block*, BlockLess> small_pool_, large_pool_;
  std::set<Block*> segments_;  // the first block of each segment
  std::unordered_map<void*, Block*> live_;
  std::deque<std::pair<cudaEvent_t, Block*>> events_;
  std::unordered_map<int, DeviceStats> stats_;
  std::unordered_map<int, double> fraction_;
  bool history_ = false;
  int64_t max_entries_ = 0;
  std::deque<TraceEntry> trace_;
};

CudaCachingAllocator& the_allocator() {
  static auto* a = new CudaCachingAllocator();  // leaked: storages may outlive statics
  return *a;
}

void CudaCachingAllocator::release(void* ctx) {
  the_allocator().free_block(static_cast<Block*>(ctx));
}

}  // namespace

Allocator* caching_allocator() { return &the_allocator(); }
void empty_cache() { the_allocator().empty_cache(); }
int64_t memory_allocated() { return the_allocator().allocated(); }
int64_t memory_reserved() { return the_allocator().reserved(); }
std::map<std::string, int64_t> memory_stats(int device) { return the_allocator().stats(device); }
void reset_peak_memory_stats(int device) { the_allocator().reset_peak(device); }
void reset_accumulated_memory_stats(int device) { the_allocator().reset_accumulated(device); }
void set_memory_fraction(int device, double f) { the_allocator().set_fraction(device, f); }
double get_memory_fraction(int device) { return the_allocator().get_fraction(device); }
void record_stream(void* ctx, cudaStream_t s) {
  the_allocator().record_stream(static_cast<Block*>(ctx), s);
}
void record_history(bool enabled, bool trace, int64_t max_entries) {
  the_allocator().set_history(enabled, trace, max_entries);
}
std::vector<SegmentInfo> segments() { return the_allocator().segment_list(); }
std::vector<TraceEntry> trace() { return the_allocator().trace_list(); }

bool is_pinned_ptr(const void* ptr) {
  if (!ptr) return false;
  cudaPointerAttributes attr;
  cudaError_t e = cudaPointerGetAttributes(&attr, ptr);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
}

}  // namespace ember::cuda
