#include "ember/core/allocator.h"
#include "ember/core/profiler.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "ember/core/device_guard.h"
#include "ember/core/error.h"
#include "ember/core/tls.h"

namespace ember {

// Note [Caching host allocator]
// Freed blocks go to a free list keyed by their rounded size instead of back
// to the OS. A large malloc is an mmap, and every first touch of its pages
// faults (0.6-6 us per page on our VMs): a 64 MiB temporary costs ~90 ms the
// first time and ~4 ms when reused. Sizes round up to a power of two below
// 1 MiB and to a multiple of 1 MiB above, so that shapes that vary a little
// still hit. The cache is bounded (default 2 GiB); past the bound blocks are
// returned to the OS. empty_cache() returns everything. Small blocks are
// also kept in a per-thread cache (no lock on the hot path of small ops).
namespace {

constexpr size_t kAlign = 64;
constexpr size_t kMiB = size_t(1) << 20;
// Blocks carry their rounded size in a 64-byte header before the data, so a
// DataPtr needs no separate context allocation.
constexpr size_t kHeader = 64;
// Small blocks (<= 64 KiB) are also cached per thread without locking.
constexpr int kSmallClasses = 11;  // 64 B .. 64 KiB, powers of two
constexpr size_t kThreadCacheDepth = 64;

size_t round_size(size_t n) {
  if (n == 0) return kAlign;
  if (n < kMiB) {
    size_t r = kAlign;
    while (r < n) r <<= 1;
    return r;
  }
  return (n + kMiB - 1) / kMiB * kMiB;
}

int small_class(size_t size) {
  if (size > (kAlign << (kSmallClasses - 1))) return -1;
  return __builtin_ctzll(size) - 6;  // size is a power of two >= 64
}

size_t& header_size(void* base) { return *static_cast<size_t*>(base); }

// Note [Huge pages for large host blocks]
// A 64 MiB tensor spans 16384 4-KiB pages, and a streaming kernel over it (a sum, an add)
// takes a TLB miss on each: measured here, a two-thread float sum over 64 MiB ran at ~24 GB/s
// on 4-KiB pages and ~35 GB/s on 2-MiB pages. Linux backs a region with transparent huge pages
// when it is 2-MiB aligned and madvise(MADV_HUGEPAGE)d (the default THP mode is "madvise").
// So blocks of 2 MiB and more are 2-MiB aligned, span whole huge pages, and are advised. The
// kernel may compact memory on the first fault, which the cache pays once per block.
// EMBER_HUGE_PAGES=0 turns it off.
constexpr size_t kHugePage = size_t(2) << 20;

bool huge_pages_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("EMBER_HUGE_PAGES");
    return !(e && e[0] == '0');
  }();
  return on;
}

void* allocate_block(size_t size) {
  if (size + kHeader < kHugePage || !huge_pages_enabled())
    return std::aligned_alloc(kAlign, size + kHeader);
  const size_t total = (size + kHeader + kHugePage - 1) / kHugePage * kHugePage;
  void* base = std::aligned_alloc(kHugePage, total);
#ifdef MADV_HUGEPAGE
  if (base) madvise(base, total, MADV_HUGEPAGE);  // advice only: failure changes nothing
#endif
  return base;
}

class CachingCpuAllocator;
CachingCpuAllocator& the_cpu_allocator();

// Per-thread free lists of small blocks; returned to the shared cache at thread exit.
struct ThreadCache {
  std::vector<void*> bins[kSmallClasses];
  ~ThreadCache();
};
// The hot path reads only the initial-exec pointer (Note [Initial-exec thread-locals]); the
// object itself is a general-dynamic thread_local made on the thread's first small block.
// After the object died at thread exit (a tensor freed by a later thread-local destructor)
// the pointer stays null and `dead` is set, and blocks go to the shared cache.
EMBER_TLS_FAST thread_local ThreadCache* t_cache_ptr = nullptr;
EMBER_TLS_FAST thread_local bool t_cache_dead = false;

ThreadCache* thread_cache() {
  if (ThreadCache* c = t_cache_ptr) return c;
  if (t_cache_dead) return nullptr;
  static thread_local ThreadCache cache;
  t_cache_ptr = &cache;
  return &cache;
}

class CachingCpuAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    size_t size = round_size(nbytes);
    void* base = nullptr;
    int cls = small_class(size);
    ThreadCache* tc = cls >= 0 ? thread_cache() : nullptr;
    if (tc && !tc->bins[cls].empty()) {
      base = tc->bins[cls].back();
      tc->bins[cls].pop_back();
      cached_ -= int64_t(size);
      ++hits_;
    } else {
      std::lock_guard<std::mutex> g(mu_);
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        base = it->second.back();
        it->second.pop_back();
        cached_ -= int64_t(size);
        ++hits_;
      } else {
        ++misses_;
      }
    }
    if (!base) {
      base = allocate_block(size);
      EMBER_CHECK(base, "CPU allocator: out of memory allocating ", nbytes, " bytes");
      header_size(base) = size;
    }
    int64_t in_use = allocated_ += int64_t(size);
    for (int64_t p = peak_.load(std::memory_order_relaxed);
         in_use > p && !peak_.compare_exchange_weak(p, in_use, std::memory_order_relaxed);) {
    }
    if (profiler::enabled()) profiler::record_memory(int64_t(size), in_use, false);
    void* data = static_cast<char*>(base) + kHeader;
    return DataPtr{data, data, &CachingCpuAllocator::release};
  }

  static void release(void* data) {
    the_cpu_allocator().give_back(static_cast<char*>(data) - kHeader);
  }

  void give_back(void* base) {
    size_t size = header_size(base);
    int64_t in_use = allocated_ -= int64_t(size);
    if (profiler::enabled()) profiler::record_memory(-int64_t(size), in_use, false);
    int cls = small_class(size);
    ThreadCache* tc = cls >= 0 ? thread_cache() : nullptr;
    if (tc && tc->bins[cls].size() < kThreadCacheDepth && cached_ + int64_t(size) <= limit_) {
      tc->bins[cls].push_back(base);
      cached_ += int64_t(size);
      return;
    }
    to_shared(base, size);
  }

  void to_shared(void* base, size_t size) {
    bool keep;
    {
      std::lock_guard<std::mutex> g(mu_);
      keep = cached_ + int64_t(size) <= limit_;
      if (keep) free_[size].push_back(base);
    }
    if (keep)
      cached_ += int64_t(size);
    else
      std::free(base);
  }

  CpuAllocatorStats stats() {
    return {allocated_.load(), cached_.load(), hits_.load(), misses_.load(), peak_.load()};
  }

  void reset_peak() { peak_ = allocated_.load(); }

  void empty_cache() {
    std::unordered_map<size_t, std::vector<void*>> old;
    {
      std::lock_guard<std::mutex> g(mu_);
      old.swap(free_);
    }
    for (auto& kv : old) {
      for (void* p : kv.second) std::free(p);
      cached_ -= int64_t(kv.first * kv.second.size());
    }
    ThreadCache* tc = thread_cache();
    if (!tc) return;
    for (auto& bin : tc->bins) {  // this thread's small blocks too
      for (void* p : bin) {
        cached_ -= int64_t(header_size(p));
        std::free(p);
      }
      bin.clear();
    }
  }

 private:
  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  std::atomic<int64_t> allocated_{0}, cached_{0}, hits_{0}, misses_{0}, peak_{0};
  static constexpr int64_t limit_ = int64_t(2) << 30;  // cached bytes kept at most
};

CachingCpuAllocator& the_cpu_allocator() {
  // Leaked on purpose: tensors may be freed during interpreter shutdown.
  static auto* a = new CachingCpuAllocator();
  return *a;
}

ThreadCache::~ThreadCache() {
  t_cache_ptr = nullptr;
  t_cache_dead = true;
  for (auto& bin : bins) {
    for (void* p : bin) the_cpu_allocator().to_shared(p, header_size(p));
    bin.clear();
  }
}

Allocator* g_allocators[kNumDeviceTypes] = {nullptr, nullptr};

}  // namespace

Allocator* cpu_allocator() { return &the_cpu_allocator(); }
CpuAllocatorStats cpu_allocator_stats() { return the_cpu_allocator().stats(); }
void cpu_allocator_reset_peak() { the_cpu_allocator().reset_peak(); }
void cpu_allocator_empty_cache() { the_cpu_allocator().empty_cache(); }

void (*lazy_device_init_hook)(DeviceType t) = nullptr;
DeviceHooks cuda_device_hooks;  // Note [Device guard]; set by ember._C_cuda

Allocator* allocator_for(Device d) {
  if (d.is_cpu()) return cpu_allocator();
  Allocator* a = g_allocators[int(d.type)];
  if (!a && lazy_device_init_hook) {
    lazy_device_init_hook(d.type);
    a = g_allocators[int(d.type)];
  }
  EMBER_CHECK(a, "no allocator for device ", d.str(),
              ": ember was built without CUDA or the CUDA backend is not loaded "
              "(ember.cuda.is_available() is False)");
  return a;
}

void register_allocator(DeviceType t, Allocator* a) { g_allocators[int(t)] = a; }

}  // namespace ember
