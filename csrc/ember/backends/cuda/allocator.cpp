// The CUDA caching allocator: freed blocks are kept per (device, rounded size)
// and reused, so steady-state training loops never call cudaMalloc/cudaFree.
// See Note [Caching host allocator] in core/allocator.cpp for the CPU twin.
#include <cuda_runtime.h>

#include <mutex>
#include <unordered_map>
#include <vector>

#include "ember/backends/cuda/cuda_check.h"
#include "ember/backends/cuda/cuda_backend.h"

namespace ember::cuda {
namespace {

constexpr size_t kMinBlock = 512;
constexpr size_t kLarge = size_t(1) << 20;

size_t round_size(size_t n) {
  if (n < kMinBlock) return kMinBlock;
  if (n < kLarge) return (n + kMinBlock - 1) / kMinBlock * kMinBlock;
  return (n + (size_t(2) << 20) - 1) / (size_t(2) << 20) * (size_t(2) << 20);
}

struct Ctx {
  void* p;
  size_t size;
  int device;
};

class CudaCachingAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    static const int devices = device_count();
    EMBER_CHECK(devices > 0, "Found no NVIDIA driver on your system, or no CUDA device is visible: "
                             "ember.cuda.is_available() is False. Use device='cpu'.");
    int dev = current_device();
    size_t size = round_size(nbytes);
    void* p = nullptr;
    {
      std::lock_guard<std::mutex> g(mu_);
      auto& bucket = free_[key(dev, size)];
      if (!bucket.empty()) {
        p = bucket.back();
        bucket.pop_back();
        cached_ -= int64_t(size);
      }
      allocated_ += int64_t(size);
    }
    if (!p) {
      cudaError_t err = cudaMalloc(&p, size);
      if (err == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        empty_cache();
        err = cudaMalloc(&p, size);
      }
      if (err != cudaSuccess) {
        std::lock_guard<std::mutex> g(mu_);
        allocated_ -= int64_t(size);
      }
      EMBER_CHECK(err == cudaSuccess, "CUDA out of memory. Tried to allocate ", nbytes,
                  " bytes on cuda:", dev, " (", cudaGetErrorString(err), ")");
    }
    return DataPtr{p, new Ctx{p, size, dev}, &CudaCachingAllocator::release};
  }

  static void release(void* ctx);

  void give_back(Ctx* c) {
    std::lock_guard<std::mutex> g(mu_);
    free_[key(c->device, c->size)].push_back(c->p);
    allocated_ -= int64_t(c->size);
    cached_ += int64_t(c->size);
  }

  void empty_cache() {
    std::unordered_map<uint64_t, std::vector<void*>> old;
    {
      std::lock_guard<std::mutex> g(mu_);
      old.swap(free_);
      cached_ = 0;
    }
    for (auto& kv : old)
      for (void* p : kv.second) cudaFree(p);
  }

  int64_t allocated() {
    std::lock_guard<std::mutex> g(mu_);
    return allocated_;
  }
  int64_t cached() {
    std::lock_guard<std::mutex> g(mu_);
    return cached_;
  }

 private:
  static uint64_t key(int dev, size_t size) { return (uint64_t(dev) << 56) | uint64_t(size); }
  std::mutex mu_;
  std::unordered_map<uint64_t, std::vector<void*>> free_;
  int64_t allocated_ = 0, cached_ = 0;
};

CudaCachingAllocator& the_allocator() {
  static auto* a = new CudaCachingAllocator();  // leaked: storages may outlive statics
  return *a;
}

void CudaCachingAllocator::release(void* ctx) {
  auto* c = static_cast<Ctx*>(ctx);
  the_allocator().give_back(c);
  delete c;
}

}  // namespace

Allocator* caching_allocator() { return &the_allocator(); }
void empty_cache() { the_allocator().empty_cache(); }
int64_t memory_allocated() { return the_allocator().allocated(); }
int64_t memory_reserved() { return the_allocator().allocated() + the_allocator().cached(); }

int current_device() {
  int d = 0;
  EMBER_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver or no device: not an error for a query
    return 0;
  }
  return n;
}

}  // namespace ember::cuda
