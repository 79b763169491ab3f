// Scalar: a Python number on its way into an op. Remembers whether it was a
// bool, an int or a float, which is what type promotion needs.
#pragma once
#include <cmath>
#include <cstdint>

#include "ember/core/dtype.h"

namespace ember {

class Scalar {
 public:
  enum class Kind : int8_t { Bool, Int, Float };
  Scalar() : kind_(Kind::Int), i_(0) {}
  Scalar(bool b) : kind_(Kind::Bool), i_(b) {}
  Scalar(int v) : kind_(Kind::Int), i_(v) {}
  Scalar(int64_t v) : kind_(Kind::Int), i_(v) {}
  Scalar(double v) : kind_(Kind::Float), d_(v) {}

  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::Float; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  double to_double() const { return kind_ == Kind::Float ? d_ : double(i_); }
  int64_t to_int() const { return kind_ == Kind::Float ? int64_t(d_) : i_; }
  bool to_bool() const { return kind_ == Kind::Float ? d_ != 0 : i_ != 0; }
  template <typename T>
  T to() const;
  /// The dtype this scalar has on its own as a "wrapped number":
  /// bool, int64 or the default float dtype.
  DType wrapped_dtype() const {
    return kind_ == Kind::Bool ? DType::Bool : kind_ == Kind::Int ? DType::Int64 : default_dtype();
  }

 private:
  Kind kind_;
  union {
    int64_t i_;
    double d_;
  };
};

template <typename T>
inline T Scalar::to() const {
  if (kind_ == Kind::Float) return static_cast<T>(d_);
  return static_cast<T>(i_);
}
template <>
inline bool Scalar::to<bool>() const {
  return to_bool();
}
template <>
inline Half Scalar::to<Half>() const {
  return Half(float(to_double()));
}
template <>
inline BFloat16 Scalar::to<BFloat16>() const {
  return BFloat16(float(to_double()));
}

}  // namespace ember
