// Data types. EMBER_FORALL_DTYPES is the one list; everything per-dtype
// (names, sizes, dispatch, Python objects) is generated from it.
#pragma once
#include <cstdint>
#include <string>

#include "ember/core/half.h"

namespace ember {

// _(C++ type, enum name, python name, category) ; category: b=bool i=int f=float
#define EMBER_FORALL_DTYPES(_)                \
  _(bool, Bool, bool, b)                      \
  _(uint8_t, UInt8, uint8, i)                 \
  _(int8_t, Int8, int8, i)                    \
  _(int16_t, Int16, int16, i)                 \
  _(int32_t, Int32, int32, i)                 \
  _(int64_t, Int64, int64, i)                 \
  _(::ember::Half, Float16, float16, f)       \
  _(::ember::BFloat16, BFloat16, bfloat16, f) \
  _(float, Float32, float32, f)               \
  _(double, Float64, float64, f)

enum class DType : int8_t {
#define EMBER_ENUM(c, n, p, k) n,
  EMBER_FORALL_DTYPES(EMBER_ENUM)
#undef EMBER_ENUM
      NumDTypes
};
constexpr int kNumDTypes = int(DType::NumDTypes);

/// Bytes per element.
inline int64_t element_size(DType t) {
  switch (t) {
#define EMBER_SIZE(c, n, p, k) \
  case DType::n:               \
    return sizeof(c);
    EMBER_FORALL_DTYPES(EMBER_SIZE)
#undef EMBER_SIZE
    default:
      return 0;
  }
}

/// "float32", "int64", ...
const char* dtype_name(DType t);
/// PyTorch's ScalarType name as its messages spell it: "Float", "Long", "Bool", "Half",
/// "BFloat16", ... (torch's `str(scalar_type)` in C++ errors).
const char* scalar_type_name(DType t);
/// PyTorch's legacy tensor-type name used in messages: "ember.FloatTensor".
std::string legacy_type_name(DType t);

inline bool is_floating(DType t) {
  return t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32 || t == DType::Float64;
}
inline bool is_integral(DType t, bool include_bool) {
  return (t >= DType::UInt8 && t <= DType::Int64) || (include_bool && t == DType::Bool);
}
inline bool is_signed(DType t) { return t != DType::Bool && t != DType::UInt8; }

/// PyTorch's promote_types: the smallest dtype both values fit in.
DType promote_types(DType a, DType b);

template <typename T>
struct dtype_of;
#define EMBER_DTYPE_OF(c, n, p, k)           \
  template <>                                \
  struct dtype_of<c> {                       \
    static constexpr DType value = DType::n; \
  };
EMBER_FORALL_DTYPES(EMBER_DTYPE_OF)
#undef EMBER_DTYPE_OF

/// The default floating dtype (float32 unless set_default_dtype changed it).
DType default_dtype();
void set_default_dtype(DType t);

}  // namespace ember
