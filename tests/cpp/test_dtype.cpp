// Type promotion against PyTorch's table, per-dtype facts, and the kernel
// registry's explicit "not implemented" slots.
#include <gtest/gtest.h>

#include "ember/core/device.h"
#include "ember/core/dtype.h"
#include "ember/kernels/dispatch.h"
#include "helpers.h"

using ember::DType;

namespace {
constexpr DType b1 = DType::Bool, u1 = DType::UInt8, i1 = DType::Int8, i2 = DType::Int16,
                i4 = DType::Int32, i8 = DType::Int64, f2 = DType::Float16, bf = DType::BFloat16,
                f4 = DType::Float32, f8 = DType::Float64;
constexpr DType kOrder[] = {b1, u1, i1, i2, i4, i8, f2, bf, f4, f8};

// torch.promote_types(row, column), printed by PyTorch itself (c10's
// _promoteTypesLookup restricted to ember's dtypes).
constexpr DType kTorchTable[10][10] = {
    /*          b1  u1  i1  i2  i4  i8  f2  bf  f4  f8 */
    /* b1 */ {b1, u1, i1, i2, i4, i8, f2, bf, f4, f8},
    /* u1 */ {u1, u1, i2, i2, i4, i8, f2, bf, f4, f8},
    /* i1 */ {i1, i2, i1, i2, i4, i8, f2, bf, f4, f8},
    /* i2 */ {i2, i2, i2, i2, i4, i8, f2, bf, f4, f8},
    /* i4 */ {i4, i4, i4, i4, i4, i8, f2, bf, f4, f8},
    /* i8 */ {i8, i8, i8, i8, i8, i8, f2, bf, f4, f8},
    /* f2 */ {f2, f2, f2, f2, f2, f2, f2, f4, f4, f8},
    /* bf */ {bf, bf, bf, bf, bf, bf, f4, bf, f4, f8},
    /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f4, f4, f8},
    /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
};
}  // namespace

TEST(Promotion, MatchesPyTorchForEveryPair) {
  for (int r = 0; r < 10; ++r)
    for (int c = 0; c < 10; ++c)
      EXPECT_EQ(ember::promote_types(kOrder[r], kOrder[c]), kTorchTable[r][c])
          << ember::dtype_name(kOrder[r]) << " with " << ember::dtype_name(kOrder[c]);
}

TEST(Promotion, IsSymmetricAndIdempotent) {
  for (DType a : kOrder) {
    EXPECT_EQ(ember::promote_types(a, a), a);
    for (DType b : kOrder) EXPECT_EQ(ember::promote_types(a, b), ember::promote_types(b, a));
  }
}

TEST(DTypes, ElementSizesAndNames) {
  const int64_t sizes[] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};
  const char* names[] = {"bool",  "uint8",   "int8",     "int16",   "int32",
                         "int64", "float16", "bfloat16", "float32", "float64"};
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(ember::element_size(kOrder[i]), sizes[i]);
    EXPECT_STREQ(ember::dtype_name(kOrder[i]), names[i]);
  }
  EXPECT_EQ(ember::legacy_type_name(f4), "ember.FloatTensor");
  EXPECT_EQ(ember::legacy_type_name(i8), "ember.LongTensor");
}

TEST(DTypes, Categories) {
  for (DType t : {f2, bf, f4, f8}) EXPECT_TRUE(ember::is_floating(t));
  for (DType t : {b1, u1, i1, i8}) EXPECT_FALSE(ember::is_floating(t));
  EXPECT_TRUE(ember::is_integral(u1, false));
  EXPECT_FALSE(ember::is_integral(b1, false));
  EXPECT_TRUE(ember::is_integral(b1, true));
  EXPECT_FALSE(ember::is_integral(f4, true));
  EXPECT_FALSE(ember::is_signed(u1));
  EXPECT_TRUE(ember::is_signed(i1));
}

TEST(DTypes, DefaultDtypeAcceptsOnlyFloatingTypes) {
  EXPECT_EQ(ember::default_dtype(), f4);
  ember::set_default_dtype(f8);
  EXPECT_EQ(ember::default_dtype(), f8);
  ember::set_default_dtype(f4);
  EXPECT_TRUE(ember_test::raises([] { ember::set_default_dtype(DType::Int64); },
                                 ember::ErrorKind::Type, "only floating-point types"));
  EXPECT_EQ(ember::default_dtype(), f4);
}

TEST(DTypes, DispatchPicksTheCppType) {
  for (DType t : kOrder) {
    int64_t size = ember::dispatch_all(t, "t", [t](auto tag) {
      using T = typename decltype(tag)::type;
      EXPECT_EQ(ember::dtype_of<T>::value, t);
      return int64_t(sizeof(T));
    });
    EXPECT_EQ(size, ember::element_size(t));
  }
  EXPECT_TRUE(ember_test::raises([] { ember::dispatch_floating(i4, "erf", [](auto) {}); },
                                 ember::ErrorKind::Runtime, "\"erf\" not implemented for 'int32'"));
  EXPECT_TRUE(ember_test::raises([] { ember::dispatch_numeric(b1, "neg", [](auto) {}); },
                                 ember::ErrorKind::Runtime, "\"neg\" not implemented for 'bool'"));
}

TEST(Registry, EmptySlotRaisesNamingTheBackend) {
  static ember::DispatchStub<int (*)()> stub("my_kernel");
  stub.fns[int(ember::DeviceType::CPU)] = [] { return 7; };
  EXPECT_EQ(stub.get(ember::Device())(), 7);
  EXPECT_TRUE(ember_test::raises([] { stub.get(ember::Device(ember::DeviceType::CUDA, 0)); },
                                 ember::ErrorKind::Runtime,
                                 "\"my_kernel\" not implemented for 'CUDA'"));
}

TEST(Device, Parse) {
  EXPECT_TRUE(ember::Device::parse("cpu").is_cpu());
  ember::Device d = ember::Device::parse("cuda:1");
  EXPECT_TRUE(d.is_cuda());
  EXPECT_EQ(d.index, 1);
  EXPECT_EQ(d.str(), "cuda:1");
  EXPECT_EQ(ember::Device::parse("cuda").str(), "cuda");
  EXPECT_TRUE(ember_test::raises([] { ember::Device::parse("tpu"); }, ember::ErrorKind::Runtime,
                                 "Expected one of cpu, cuda"));
  EXPECT_TRUE(ember_test::raises([] { ember::Device::parse("cuda:x"); }, ember::ErrorKind::Runtime,
                                 "Invalid device string"));
}
