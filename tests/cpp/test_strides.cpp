// Strides, views and checked size arithmetic.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "ember/core/tensor.h"
#include "helpers.h"

using ember::DType;
using ember::ErrorKind;
using ember::Tensor;
using ember_test::raises;
using ember_test::vec;
using V = std::vector<int64_t>;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(Strides, ContiguousStrides) {
  EXPECT_EQ(vec(ember::contiguous_strides({2, 3, 4})), V({12, 4, 1}));
  EXPECT_EQ(vec(ember::contiguous_strides({5})), V({1}));
  EXPECT_EQ(vec(ember::contiguous_strides({})), V({}));
  // Size-0 and size-1 dims count as 1, as in PyTorch.
  EXPECT_EQ(vec(ember::contiguous_strides({2, 0, 3})), V({3, 3, 1}));
  EXPECT_EQ(vec(ember::contiguous_strides({2, 1, 3})), V({3, 3, 1}));
}

TEST(Strides, EmptyIsContiguousWithContiguousStrides) {
  Tensor t = ember::empty({2, 3, 4}, DType::Float32);
  EXPECT_EQ(vec(t.strides()), V({12, 4, 1}));
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.storage_offset(), 0);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_GE(t.storage()->nbytes, size_t(24 * 4));
  Tensor z = ember::empty({}, DType::Float64);
  EXPECT_EQ(z.dim(), 0);
  EXPECT_EQ(z.numel(), 1);
}

TEST(Strides, IsContiguous) {
  Tensor base = ember::empty({3, 4}, DType::Float32);
  EXPECT_FALSE(ember::make_view(base, {4, 3}, {1, 4}, 0).is_contiguous());  // transpose
  EXPECT_FALSE(ember::make_view(base, {3, 2}, {4, 2}, 0).is_contiguous());  // step 2
  EXPECT_TRUE(ember::make_view(base, {2, 4}, {4, 1}, 4).is_contiguous());   // row slice
  EXPECT_TRUE(ember::make_view(base, {1, 4}, {99, 1}, 0).is_contiguous());  // size-1 dim
  EXPECT_TRUE(ember::make_view(base, {0, 4}, {1, 7}, 0).is_contiguous());   // empty
}

TEST(Strides, ViewSharesStorageAndVersionCounter) {
  Tensor base = ember::empty({6}, DType::Int32);
  Tensor v = ember::make_view(base, {2, 3}, {3, 1}, 0);
  EXPECT_EQ(v.storage().get(), base.storage().get());
  EXPECT_EQ(v.data_ptr(), base.data_ptr());
  Tensor w = ember::make_view(base, {2}, {2}, 1);
  EXPECT_EQ(w.data_ptr(), base.data_ptr() + 4);
  uint32_t before = base.version();
  v.bump_version();
  EXPECT_EQ(base.version(), before + 1);
  EXPECT_EQ(w.version(), before + 1);
}

TEST(Strides, MakeViewIsBoundsChecked) {
  Tensor base = ember::empty({6}, DType::Float32);  // 24 bytes
  EXPECT_NO_THROW(ember::make_view(base, {2, 3}, {3, 1}, 0));
  EXPECT_NO_THROW(ember::make_view(base, {3}, {2}, 1));  // last element 5
  EXPECT_TRUE(raises([&] { ember::make_view(base, {2, 4}, {4, 1}, 0); }, ErrorKind::Runtime,
                     "out of bounds for storage of size 24"));
  EXPECT_TRUE(raises([&] { ember::make_view(base, {3}, {2}, 2); }, ErrorKind::Runtime,
                     "requiring a storage size of 28"));
  EXPECT_TRUE(raises([&] { ember::make_view(base, {2}, {1}, -1); }, ErrorKind::Runtime,
                     "negative storage offset"));
  EXPECT_TRUE(raises([&] { ember::make_view(base, {2}, {-1}, 3); }, ErrorKind::Runtime,
                     "negative strides"));
  EXPECT_TRUE(raises([&] { ember::make_view(base, {2, 3}, {1}, 0); }, ErrorKind::Runtime,
                     "mismatch in length of strides and shape"));
  EXPECT_TRUE(raises([&] { ember::make_view(base, {-1}, {1}, 0); }, ErrorKind::Runtime,
                     "negative dimension -1"));
  // An empty view may point anywhere (nothing is addressed).
  EXPECT_NO_THROW(ember::make_view(base, {0, 100}, {100, 1}, 6));
}

TEST(Strides, MakeViewOverflowIsAnErrorNotWraparound) {
  Tensor base = ember::empty({6}, DType::Float32);
  EXPECT_TRUE(raises([&] { ember::make_view(base, {2}, {kMax}, 0); }, ErrorKind::Runtime,
                     "integer overflow"));
  EXPECT_TRUE(raises([&] { ember::make_view(base, {3}, {kMax / 2 + 1}, 0); }, ErrorKind::Runtime,
                     "integer overflow"));
  EXPECT_TRUE(raises([&] { ember::make_view(base, {2}, {1}, kMax); }, ErrorKind::Runtime,
                     "integer overflow"));
  // Overflow in the element count itself.
  EXPECT_TRUE(
      raises([&] { ember::make_view(base, {int64_t(1) << 32, int64_t(1) << 32}, {0, 0}, 0); },
             ErrorKind::Runtime, "integer overflow"));
}

TEST(Strides, CheckedArithmetic) {
  EXPECT_EQ(ember::checked_mul(int64_t(1) << 31, int64_t(1) << 31, "t"), int64_t(1) << 62);
  EXPECT_EQ(ember::checked_add(kMax - 1, 1, "t"), kMax);
  EXPECT_TRUE(raises([] { ember::checked_mul(kMax, 2, "myop"); }, ErrorKind::Runtime,
                     "myop: integer overflow computing"));
  EXPECT_TRUE(raises([] { ember::checked_mul(int64_t(1) << 32, int64_t(1) << 31, "m"); },
                     ErrorKind::Runtime, "integer overflow"));
  EXPECT_TRUE(raises([] { ember::checked_add(kMax, 1, "myop"); }, ErrorKind::Runtime,
                     "myop: integer overflow computing"));
  EXPECT_EQ(ember::checked_numel({}), 1);
  EXPECT_EQ(ember::checked_numel({3, 0, 5}), 0);
  EXPECT_TRUE(raises([] { ember::checked_numel({int64_t(1) << 40, int64_t(1) << 40}); },
                     ErrorKind::Runtime, "integer overflow"));
  EXPECT_TRUE(
      raises([] { ember::checked_numel({2, -3}); }, ErrorKind::Runtime, "negative dimension -3"));
}

TEST(Strides, EmptyWithHugeSizesRaisesInsteadOfAllocating) {
  EXPECT_TRUE(raises([] { ember::empty({int64_t(1) << 40, int64_t(1) << 40}, DType::Float32); },
                     ErrorKind::Runtime, "integer overflow"));
  EXPECT_TRUE(raises([] { ember::empty({int64_t(1) << 62}, DType::Float64); }, ErrorKind::Runtime,
                     "integer overflow"));
}

TEST(Strides, WrapDim) {
  EXPECT_EQ(ember::wrap_dim(-1, 3), 2);
  EXPECT_EQ(ember::wrap_dim(-3, 3), 0);
  EXPECT_EQ(ember::wrap_dim(2, 3), 2);
  EXPECT_EQ(ember::wrap_dim(-1, 0), 0);  // a 0-d tensor accepts 0 and -1
  EXPECT_TRUE(raises([] { ember::wrap_dim(3, 3); }, ErrorKind::Index,
                     "Dimension out of range (expected to be in range of [-3, 2], but got 3)"));
  EXPECT_TRUE(raises([] { ember::wrap_dim(-4, 3); }, ErrorKind::Index, "but got -4"));
  EXPECT_TRUE(raises([] { ember::wrap_dim(0, 0, /*scalar_ok=*/false); }, ErrorKind::Index,
                     "has no dimensions"));
  Tensor t = ember::empty({2, 5}, DType::Int8);
  EXPECT_EQ(t.size(-1), 5);
  EXPECT_EQ(t.stride(0), 5);
  EXPECT_TRUE(raises([&] { t.size(2); }, ErrorKind::Index, "Dimension out of range"));
}

TEST(Strides, ShapeStr) {
  EXPECT_EQ(ember::shape_str({2, 3}), "[2, 3]");
  EXPECT_EQ(ember::shape_str({}), "[]");
}
