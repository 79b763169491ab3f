#include "ember/core/allocator.h"

#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "ember/core/error.h"

namespace ember {

// Note [Caching host allocator]
// Freed blocks go to a free list keyed by their rounded size instead of back
// to the OS. A large malloc is an mmap, and every first touch of its pages
// faults (0.6-6 us per page on our VMs): a 64 MiB temporary costs ~90 ms the
// first time and ~4 ms when reused. Sizes round up to a power of two below
// 1 MiB and to a multiple of 1 MiB above, so that shapes that vary a little
// still hit. The cache is bounded (default 2 GiB); past the bound blocks are
// returned to the OS. empty_cache() returns everything.
namespace {

constexpr size_t kAlign = 64;
constexpr size_t kMiB = size_t(1) << 20;

size_t round_size(size_t n) {
  if (n == 0) return kAlign;
  if (n < kMiB) {
    size_t r = kAlign;
    while (r < n) r <<= 1;
    return r;
  }
  return (n + kMiB - 1) / kMiB * kMiB;
}

class CachingCpuAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    size_t size = round_size(nbytes);
    void* p = nullptr;
    {
      std::lock_guard<std::mutex> g(mu_);
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        p = it->second.back();
        it->second.pop_back();
        cached_ -= int64_t(size);
        ++hits_;
      } else {
        ++misses_;
      }
      allocated_ += int64_t(size);
    }
    if (!p) {
      p = std::aligned_alloc(kAlign, size);
      if (!p) {
        std::lock_guard<std::mutex> g(mu_);
        allocated_ -= int64_t(size);
        EMBER_ERROR("CPU allocator: out of memory allocating ", nbytes, " bytes");
      }
    }
    return DataPtr{p, new Ctx{p, size}, &CachingCpuAllocator::release};
  }

  static void release(void* ctx);

  void give_back(void* p, size_t size) {
    bool keep;
    {
      std::lock_guard<std::mutex> g(mu_);
      allocated_ -= int64_t(size);
      keep = cached_ + int64_t(size) <= limit_;
      if (keep) {
        free_[size].push_back(p);
        cached_ += int64_t(size);
      }
    }
    if (!keep) std::free(p);
  }

  CpuAllocatorStats stats() {
    std::lock_guard<std::mutex> g(mu_);
    return {allocated_, cached_, hits_, misses_};
  }
  void empty_cache() {
    std::unordered_map<size_t, std::vector<void*>> old;
    {
      std::lock_guard<std::mutex> g(mu_);
      old.swap(free_);
      cached_ = 0;
    }
    for (auto& kv : old)
      for (void* p : kv.second) std::free(p);
  }
  void set_limit(int64_t b) {
    limit_ = b;
    if (cached_ > limit_) empty_cache();
  }

 private:
  // The deleter context carries the pointer and its rounded size.
  struct Ctx {
    void* p;
    size_t size;
  };

  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  int64_t allocated_ = 0, cached_ = 0, hits_ = 0, misses_ = 0;
  int64_t limit_ = int64_t(2) << 30;
};

CachingCpuAllocator& the_cpu_allocator() {
  // Leaked on purpose: tensors may be freed during interpreter shutdown.
  static auto* a = new CachingCpuAllocator();
  return *a;
}

void CachingCpuAllocator::release(void* ctx) {
  auto* c = static_cast<Ctx*>(ctx);
  the_cpu_allocator().give_back(c->p, c->size);
  delete c;
}

Allocator* g_allocators[kNumDeviceTypes] = {nullptr, nullptr};

}  // namespace

Allocator* cpu_allocator() { return &the_cpu_allocator(); }
CpuAllocatorStats cpu_allocator_stats() { return the_cpu_allocator().stats(); }
void cpu_allocator_empty_cache() { the_cpu_allocator().empty_cache(); }
void cpu_allocator_set_limit(int64_t bytes) { the_cpu_allocator().set_limit(bytes); }

void (*lazy_device_init_hook)(DeviceType t) = nullptr;

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
