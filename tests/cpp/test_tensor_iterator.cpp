// TensorIterator: dimension reordering and coalescing, and for_each visiting
// every element exactly once with the right pointers.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "ember/core/parallel.h"
#include "ember/core/tensor.h"
#include "ember/kernels/tensor_iterator.h"
#include "helpers.h"

using ember::DType;
using ember::Shape;
using ember::Tensor;
using ember::TensorIterator;
using ember_test::vec;
using V = std::vector<int64_t>;

namespace {

// A contiguous int64 tensor holding 0, 1, 2, ... (element k has value k).
Tensor iota(const Shape& sizes) {
  Tensor t = ember::empty(sizes, DType::Int64);
  int64_t* p = t.data<int64_t>();
  std::iota(p, p + t.numel(), int64_t(0));
  return t;
}

// The values of `t` in logical row-major order, read by walking its strides.
std::vector<int64_t> logical_values(const Tensor& t) {
  std::vector<int64_t> out;
  int64_t nd = t.dim();
  std::vector<int64_t> idx(size_t(nd), 0);
  for (int64_t k = 0; k < t.numel(); ++k) {
    int64_t off = 0;
    for (int64_t d = 0; d < nd; ++d) off += idx[d] * t.strides()[d];
    out.push_back(t.data<int64_t>()[off]);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[d] < t.sizes()[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// Copies `src` into a fresh contiguous tensor through the iterator.
Tensor copy_through_iterator(const Tensor& src, int64_t grain = TensorIterator::kGrainSizeDefault) {
  Tensor out = ember::empty(src.sizes(), DType::Int64);
  TensorIterator it({out, src}, 1, src.sizes());
  it.for_each(
      [](char** data, const int64_t* strides, int64_t n) {
        for (int64_t i = 0; i < n; ++i)
          std::memcpy(data[0] + i * strides[0], data[1] + i * strides[1], sizeof(int64_t));
      },
      grain);
  return out;
}

}  // namespace

TEST(TensorIterator, ContiguousOperandsCoalesceToOneDim) {
  Tensor out = ember::empty({2, 3, 4}, DType::Float32);
  Tensor a = ember::empty({2, 3, 4}, DType::Float32);
  Tensor b = ember::empty({2, 3, 4}, DType::Float32);
  TensorIterator it({out, a, b}, 1, {2, 3, 4});
  EXPECT_EQ(vec(it.shape()), V({24}));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(vec(it.strides(i)), V({4}));  // bytes
  EXPECT_TRUE(it.is_contiguous());
  EXPECT_EQ(it.numel(), 24);
  EXPECT_EQ(it.ntensors(), 3);
  EXPECT_EQ(it.noutputs(), 1);
}

TEST(TensorIterator, SizeOneDimsDoNotBreakCoalescing) {
  Tensor out = ember::empty({3, 1, 4, 1}, DType::Float64);
  Tensor a = ember::empty({3, 1, 4, 1}, DType::Float64);
  TensorIterator it({out, a}, 1, {3, 1, 4, 1});
  EXPECT_EQ(vec(it.shape()), V({12}));
  EXPECT_EQ(vec(it.strides(0)), V({8}));
  EXPECT_EQ(vec(it.strides(1)), V({8}));
}

TEST(TensorIterator, TransposedInputKeepsTwoDims) {
  // out is contiguous [4, 3]; a is the transpose of a contiguous [3, 4].
  Tensor base = ember::empty({3, 4}, DType::Float32);
  Tensor a = ember::make_view(base, {4, 3}, {1, 4}, 0);
  Tensor out = ember::empty({4, 3}, DType::Float32);
  TensorIterator it({out, a}, 1, {4, 3});
  // The output decides the order: innermost is its last dim (size 3).
  EXPECT_EQ(vec(it.shape()), V({3, 4}));
  EXPECT_EQ(vec(it.strides(0)), V({4, 12}));
  EXPECT_EQ(vec(it.strides(1)), V({16, 4}));
  EXPECT_FALSE(it.is_contiguous());
}

TEST(TensorIterator, AllTransposedOperandsAreReorderedAndCoalesced) {
  Tensor b1 = ember::empty({3, 4}, DType::Float32), b2 = ember::empty({3, 4}, DType::Float32);
  Tensor out = ember::make_view(b1, {4, 3}, {1, 4}, 0);
  Tensor a = ember::make_view(b2, {4, 3}, {1, 4}, 0);
  TensorIterator it({out, a}, 1, {4, 3});
  EXPECT_EQ(vec(it.shape()), V({12}));
  EXPECT_EQ(vec(it.strides(0)), V({4}));
  EXPECT_EQ(vec(it.strides(1)), V({4}));
}

TEST(TensorIterator, PermutedThreeDimOperandsCoalesce) {
  // A [2, 3, 4] storage viewed with dims permuted to (2, 0, 1): every operand
  // permuted the same way walks memory in order.
  Tensor b1 = ember::empty({2, 3, 4}, DType::Int32), b2 = ember::empty({2, 3, 4}, DType::Int32);
  Tensor out = ember::make_view(b1, {4, 2, 3}, {1, 12, 4}, 0);
  Tensor a = ember::make_view(b2, {4, 2, 3}, {1, 12, 4}, 0);
  TensorIterator it({out, a}, 1, {4, 2, 3});
  EXPECT_EQ(vec(it.shape()), V({24}));
  EXPECT_EQ(vec(it.strides(1)), V({4}));
}

TEST(TensorIterator, RowBroadcastGetsStrideZero) {
  Tensor out = ember::empty({4, 5}, DType::Float32);
  Tensor a = ember::empty({4, 5}, DType::Float32);
  Tensor b = ember::empty({5}, DType::Float32);
  TensorIterator it({out, a, b}, 1, {4, 5});
  EXPECT_EQ(vec(it.shape()), V({5, 4}));
  EXPECT_EQ(vec(it.strides(0)), V({4, 20}));
  EXPECT_EQ(vec(it.strides(1)), V({4, 20}));
  EXPECT_EQ(vec(it.strides(2)), V({4, 0}));
}

TEST(TensorIterator, ColumnBroadcastGetsStrideZero) {
  Tensor out = ember::empty({4, 5}, DType::Float32);
  Tensor b = ember::empty({4, 1}, DType::Float32);
  TensorIterator it({out, b}, 1, {4, 5});
  EXPECT_EQ(vec(it.shape()), V({5, 4}));
  EXPECT_EQ(vec(it.strides(0)), V({4, 20}));
  EXPECT_EQ(vec(it.strides(1)), V({0, 4}));
}

TEST(TensorIterator, ScalarBroadcastCoalescesWithStrideZero) {
  Tensor out = ember::empty({2, 3}, DType::Float32);
  Tensor s = ember::empty({}, DType::Float32);
  TensorIterator it({out, s}, 1, {2, 3});
  EXPECT_EQ(vec(it.shape()), V({6}));
  EXPECT_EQ(vec(it.strides(1)), V({0}));
}

TEST(TensorIterator, ExpandedViewFromExpandTo) {
  Tensor b = iota({3});
  Tensor e = ember::expand_to(b, {2, 3});
  EXPECT_EQ(vec(e.strides()), V({0, 1}));
  EXPECT_EQ(e.storage().get(), b.storage().get());
  Tensor out = copy_through_iterator(e);
  EXPECT_EQ(logical_values(out), V({0, 1, 2, 0, 1, 2}));
  EXPECT_TRUE(ember_test::raises([&] { ember::expand_to(b, {2, 4}); }, ember::ErrorKind::Runtime,
                                 "must match the existing size (3)"));
}

TEST(TensorIterator, BroadcastShapes) {
  EXPECT_EQ(vec(ember::broadcast_shapes({2, 1, 4}, {3, 1})), V({2, 3, 4}));
  EXPECT_EQ(vec(ember::broadcast_shapes({}, {5})), V({5}));
  EXPECT_EQ(vec(ember::broadcast_shapes({0}, {1})), V({0}));
  EXPECT_TRUE(ember_test::raises([] { ember::broadcast_shapes({2, 3}, {2}); },
                                 ember::ErrorKind::Runtime,
                                 "The size of tensor a (3) must match the size of tensor b (2) at "
                                 "non-singleton dimension 1"));
}

TEST(TensorIterator, ZeroDimRunsTheLoopOnce) {
  Tensor out = ember::empty({}, DType::Int64);
  Tensor a = iota({});
  a.data<int64_t>()[0] = 42;
  int calls = 0;
  TensorIterator it({out, a}, 1, {});
  EXPECT_EQ(it.ndim(), 0);
  it.for_each([&](char** data, const int64_t*, int64_t n) {
    ++calls;
    EXPECT_EQ(n, 1);
    std::memcpy(data[0], data[1], 8);
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(out.data<int64_t>()[0], 42);
}

TEST(TensorIterator, EmptyNeverCallsTheLoop) {
  Tensor out = ember::empty({3, 0, 2}, DType::Float32);
  TensorIterator it({out}, 1, {3, 0, 2});
  EXPECT_EQ(it.numel(), 0);
  it.for_each([](char**, const int64_t*, int64_t) { ADD_FAILURE() << "loop called on empty"; });
}

TEST(TensorIterator, ForEachReadsStridedViewsCorrectly) {
  // A [6, 8] storage, sliced with steps and transposed: rows 1,3,5 and columns 0,3,6.
  Tensor base = iota({6, 8});
  Tensor v = ember::make_view(base, {3, 3}, {16, 3}, 8);
  Tensor vt = ember::make_view(base, {3, 3}, {3, 16}, 8);
  EXPECT_EQ(logical_values(copy_through_iterator(v)), V({8, 11, 14, 24, 27, 30, 40, 43, 46}));
  EXPECT_EQ(logical_values(copy_through_iterator(vt)), V({8, 24, 40, 11, 27, 43, 14, 30, 46}));
}

TEST(TensorIterator, ForEachVisitsEveryElementOnceInParallel) {
  int saved = ember::get_num_threads();
  ember::set_num_threads(3);
  // 3-D, non-contiguous input (a permuted, step-2 slice) of > grain elements.
  Tensor base = iota({64, 40, 100});
  Tensor v = ember::make_view(base, {50, 32, 40}, {2, 8000, 100}, 0);
  std::vector<int64_t> expected = logical_values(v);
  Tensor out = copy_through_iterator(v, /*grain=*/1000);
  EXPECT_EQ(logical_values(out), expected);

  // Count visits: every output element incremented exactly once.
  Tensor counts = ember::empty({50, 32, 40}, DType::Int64);
  std::memset(counts.data_ptr(), 0, size_t(counts.numel()) * 8);
  TensorIterator it({counts}, 1, counts.sizes());
  it.for_each(
      [](char** data, const int64_t* strides, int64_t n) {
        for (int64_t i = 0; i < n; ++i) ++*reinterpret_cast<int64_t*>(data[0] + i * strides[0]);
      },
      1000);
  for (int64_t k = 0; k < counts.numel(); ++k) ASSERT_EQ(counts.data<int64_t>()[k], 1) << k;
  ember::set_num_threads(saved);
}

TEST(TensorIterator, SerialForEachOverSubRangesMatchesWholeRange) {
  Tensor base = iota({5, 7, 4});
  Tensor v = ember::make_view(base, {4, 5, 3}, {1, 28, 8}, 2);  // permuted + offset
  std::vector<int64_t> expected = logical_values(v);
  Tensor out = ember::empty(v.sizes(), DType::Int64);
  TensorIterator it({out, v}, 1, v.sizes());
  auto loop = [](char** data, const int64_t* strides, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(data[0] + i * strides[0], data[1] + i * strides[1], 8);
  };
  // Ragged chunks that start and end mid-row.
  for (int64_t b = 0; b < it.numel(); b += 7)
    it.serial_for_each(loop, b, std::min(b + 7, it.numel()));
  EXPECT_EQ(logical_values(out), expected);
}
