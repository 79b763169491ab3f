// See api.h.
#include "ember/api/api.h"

#include <cstring>

#include "ember/ops/factory.h"
#include "ember/ops/ops.h"
#include "ember/ops/random.h"

namespace ember {

namespace {
Shape shape_of(IntList sizes) { return Shape(sizes.begin(), sizes.end()); }
}  // namespace

Tensor ones(IntList sizes, DType dtype, Device device) {
  return ones(shape_of(sizes), dtype, device);
}
Tensor zeros(IntList sizes, DType dtype, Device device) {
  return zeros(shape_of(sizes), dtype, device);
}
Tensor empty(IntList sizes, DType dtype, Device device) {
  return empty(shape_of(sizes), dtype, device);
}
Tensor full(IntList sizes, Scalar value, DType dtype, Device device) {
  return full(shape_of(sizes), value, dtype, device);
}
Tensor rand(IntList sizes, DType dtype, Device device) {
  return rand(shape_of(sizes), dtype, device);
}
Tensor randn(IntList sizes, DType dtype, Device device) {
  return randn(shape_of(sizes), dtype, device);
}
Tensor ones(const Shape& sizes) { return ones(sizes, DType::Float32, Device()); }
Tensor zeros(const Shape& sizes) { return zeros(sizes, DType::Float32, Device()); }
Tensor rand(const Shape& sizes) { return rand(sizes, DType::Float32, Device()); }
Tensor randn(const Shape& sizes) { return randn(sizes, DType::Float32, Device()); }
Tensor arange(int64_t end, DType dtype, Device device) {
  return arange(Scalar(int64_t(0)), Scalar(end), Scalar(int64_t(1)), dtype, device);
}

Tensor tensor(const std::vector<float>& values) {
  Tensor t = empty(Shape{int64_t(values.size())}, DType::Float32);
  if (!values.empty()) std::memcpy(t.data_ptr(), values.data(), values.size() * sizeof(float));
  return t;
}
Tensor tensor(const std::vector<int64_t>& values) {
  Tensor t = empty(Shape{int64_t(values.size())}, DType::Int64);
  if (!values.empty()) std::memcpy(t.data_ptr(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

void manual_seed(uint64_t seed) { default_generator()->manual_seed(seed); }

}  // namespace ember

std::ostream& operator<<(std::ostream& os, const ember::Tensor& t) { return os << t.str(); }
