// The caching CPU allocator: alignment, reuse of freed blocks, statistics,
// the cache limit and thread safety.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "ember/core/allocator.h"
#include "ember/core/tensor.h"

using ember::CpuAllocatorStats;
using ember::DataPtr;

namespace {
void free_ptr(DataPtr& d) {
  if (d.deleter) d.deleter(d.ctx);
  d = DataPtr{};
}
bool aligned64(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }
}  // namespace

class CpuAllocator : public ::testing::Test {
 protected:
  void SetUp() override { ember::cpu_allocator_empty_cache(); }
  void TearDown() override { ember::cpu_allocator_empty_cache(); }
};

TEST_F(CpuAllocator, BlocksAreAlignedTo64Bytes) {
  std::vector<DataPtr> ptrs;
  for (size_t n : {size_t(0), size_t(1), size_t(3), size_t(63), size_t(65), size_t(1000),
                   size_t(1) << 20, (size_t(3) << 20) + 7})
    ptrs.push_back(ember::cpu_allocator()->allocate(n));
  for (DataPtr& d : ptrs) {
    EXPECT_NE(d.ptr, nullptr);
    EXPECT_TRUE(aligned64(d.ptr)) << d.ptr;
    EXPECT_NE(d.deleter, nullptr);
  }
  for (DataPtr& d : ptrs) free_ptr(d);
}

TEST_F(CpuAllocator, FreedBlockIsReused) {
  CpuAllocatorStats s0 = ember::cpu_allocator_stats();
  DataPtr a = ember::cpu_allocator()->allocate(1000);
  void* first = a.ptr;
  CpuAllocatorStats s1 = ember::cpu_allocator_stats();
  EXPECT_EQ(s1.cache_misses, s0.cache_misses + 1);
  EXPECT_EQ(s1.allocated_bytes, s0.allocated_bytes + 1024);  // rounded to a power of two
  free_ptr(a);
  CpuAllocatorStats s2 = ember::cpu_allocator_stats();
  EXPECT_EQ(s2.allocated_bytes, s0.allocated_bytes);
  EXPECT_EQ(s2.cached_bytes, s0.cached_bytes + 1024);
  // A request that rounds to the same size gets the same block back.
  DataPtr b = ember::cpu_allocator()->allocate(900);
  CpuAllocatorStats s3 = ember::cpu_allocator_stats();
  EXPECT_EQ(b.ptr, first);
  EXPECT_EQ(s3.cache_hits, s2.cache_hits + 1);
  EXPECT_EQ(s3.cache_misses, s2.cache_misses);
  EXPECT_EQ(s3.cached_bytes, s0.cached_bytes);
  free_ptr(b);
}

TEST_F(CpuAllocator, LargeBlocksRoundToWholeMiB) {
  const int64_t MiB = int64_t(1) << 20;
  CpuAllocatorStats s0 = ember::cpu_allocator_stats();
  DataPtr a = ember::cpu_allocator()->allocate(size_t(3 * MiB + 1));
  EXPECT_EQ(ember::cpu_allocator_stats().allocated_bytes, s0.allocated_bytes + 4 * MiB);
  void* p = a.ptr;
  free_ptr(a);
  DataPtr b = ember::cpu_allocator()->allocate(size_t(4 * MiB));  // same 4 MiB class
  EXPECT_EQ(b.ptr, p);
  free_ptr(b);
  DataPtr c = ember::cpu_allocator()->allocate(size_t(5 * MiB));  // a different class
  EXPECT_NE(c.ptr, nullptr);
  free_ptr(c);
}

TEST_F(CpuAllocator, TensorsReuseMemoryInSteadyState) {
  CpuAllocatorStats s0 = ember::cpu_allocator_stats();
  for (int i = 0; i < 5; ++i) {
    ember::Tensor t = ember::empty({1024, 1024}, ember::DType::Float32);
    EXPECT_TRUE(aligned64(t.data_ptr()));
  }
  CpuAllocatorStats s1 = ember::cpu_allocator_stats();
  EXPECT_EQ(s1.cache_misses - s0.cache_misses, 1);
  EXPECT_EQ(s1.cache_hits - s0.cache_hits, 4);
}

TEST_F(CpuAllocator, EmptyCache) {
  DataPtr a = ember::cpu_allocator()->allocate(4096);
  free_ptr(a);
  EXPECT_GE(ember::cpu_allocator_stats().cached_bytes, 4096);
  ember::cpu_allocator_empty_cache();
  EXPECT_EQ(ember::cpu_allocator_stats().cached_bytes, 0);
}

TEST_F(CpuAllocator, ConcurrentUseKeepsStatsConsistent) {
  CpuAllocatorStats s0 = ember::cpu_allocator_stats();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < 2000; ++i) {
        DataPtr d = ember::cpu_allocator()->allocate(size_t(64 << ((i + t) % 8)));
        static_cast<char*>(d.ptr)[0] = char(i);
        free_ptr(d);
      }
    });
  for (auto& th : threads) th.join();
  CpuAllocatorStats s1 = ember::cpu_allocator_stats();
  EXPECT_EQ(s1.allocated_bytes, s0.allocated_bytes);
  EXPECT_EQ((s1.cache_hits + s1.cache_misses) - (s0.cache_hits + s0.cache_misses), 8000);
}

TEST_F(CpuAllocator, AllocatorForCudaWithoutBackendRaises) {
  try {
    ember::allocator_for(ember::Device(ember::DeviceType::CUDA, 0));
    ADD_FAILURE() << "did not throw";
  } catch (const ember::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no allocator for device cuda:0"), std::string::npos)
        << e.what();
  }
}
