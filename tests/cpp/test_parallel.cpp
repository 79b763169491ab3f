// parallel_for: exact coverage of the range, exception propagation, nested
// calls running inline, and thread-count settings.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "ember/core/parallel.h"
#include "helpers.h"

class ParallelFor : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = ember::get_num_threads();
    ember::set_num_threads(4);  // more threads than this machine's cores is fine
  }
  void TearDown() override { ember::set_num_threads(saved_); }
  int saved_ = 1;
};

TEST_F(ParallelFor, CoversTheRangeExactlyOnce) {
  for (int64_t begin : {0, 17}) {
    const int64_t end = begin + 100003;
    std::vector<std::atomic<int>> hits(static_cast<size_t>(end));
    std::atomic<int> chunks{0};
    ember::parallel_for(begin, end, 1000, [&](int64_t b, int64_t e) {
      EXPECT_LT(b, e);
      EXPECT_GE(b, begin);
      EXPECT_LE(e, end);
      ++chunks;
      for (int64_t i = b; i < e; ++i) ++hits[size_t(i)];
    });
    for (int64_t i = 0; i < end; ++i) ASSERT_EQ(hits[size_t(i)].load(), i >= begin ? 1 : 0) << i;
    EXPECT_GE(chunks.load(), 2);
    EXPECT_LE(chunks.load(), 4);
  }
}

TEST_F(ParallelFor, UsesSeveralThreads) {
  std::mutex mu;
  std::set<std::thread::id> ids;
  ember::parallel_for(0, 4, 1, [&](int64_t, int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::lock_guard<std::mutex> g(mu);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_GE(ids.size(), 2u);
}

TEST_F(ParallelFor, SmallRangesRunInlineOnTheCaller) {
  auto caller = std::this_thread::get_id();
  int calls = 0;
  ember::parallel_for(5, 105, 1000, [&](int64_t b, int64_t e) {
    ++calls;
    EXPECT_EQ(b, 5);
    EXPECT_EQ(e, 105);
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_FALSE(ember::in_parallel_region());
  });
  EXPECT_EQ(calls, 1);
}

TEST_F(ParallelFor, EmptyAndReversedRangesDoNothing) {
  int calls = 0;
  ember::parallel_for(10, 10, 1, [&](int64_t, int64_t) { ++calls; });
  ember::parallel_for(10, 3, 1, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST_F(ParallelFor, OneThreadRunsInline) {
  ember::set_num_threads(1);
  EXPECT_EQ(ember::get_num_threads(), 1);
  int calls = 0;
  ember::parallel_for(0, 1 << 20, 1, [&](int64_t b, int64_t e) {
    ++calls;
    EXPECT_EQ(e - b, 1 << 20);
  });
  EXPECT_EQ(calls, 1);
}

TEST_F(ParallelFor, ExceptionsPropagateToTheCaller) {
  EXPECT_TRUE(ember_test::raises(
      [] {
        ember::parallel_for(0, 1000, 10, [](int64_t b, int64_t e) {
          if (b <= 500 && 500 < e) ember::raise(ember::ErrorKind::Index, "index 500 is bad");
        });
      },
      ember::ErrorKind::Index, "index 500 is bad"));
  // The pool is still usable afterwards.
  std::atomic<int64_t> sum{0};
  ember::parallel_for(0, 1000, 10, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) sum += i;
  });
  EXPECT_EQ(sum.load(), 999 * 1000 / 2);
}

TEST_F(ParallelFor, NestedCallsRunInline) {
  std::atomic<int64_t> total{0};
  std::atomic<bool> nested_ok{true};
  ember::parallel_for(0, 8, 1, [&](int64_t b, int64_t e) {
    EXPECT_TRUE(ember::in_parallel_region());
    auto outer = std::this_thread::get_id();
    for (int64_t i = b; i < e; ++i) {
      int inner_calls = 0;
      ember::parallel_for(0, 1000, 1, [&](int64_t ib, int64_t ie) {
        ++inner_calls;
        if (std::this_thread::get_id() != outer) nested_ok = false;
        total += ie - ib;
      });
      if (inner_calls != 1) nested_ok = false;
    }
  });
  EXPECT_TRUE(nested_ok.load());
  EXPECT_EQ(total.load(), 8 * 1000);
  EXPECT_FALSE(ember::in_parallel_region());
}

TEST_F(ParallelFor, SetNumThreadsValidates) {
  EXPECT_TRUE(ember_test::raises([] { ember::set_num_threads(0); }, ember::ErrorKind::Runtime,
                                 "set_num_threads expects a positive integer, got 0"));
  EXPECT_EQ(ember::get_num_threads(), 4);
  ember::set_num_threads(2);
  EXPECT_EQ(ember::get_num_threads(), 2);
}
