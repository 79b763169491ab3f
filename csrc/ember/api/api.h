// The C++ API's conveniences beyond the op front-ends (what <ember/ember.h> adds for C++
// programs): factories with PyTorch's defaults, grad-mode guards and printing.
#pragma once
#include <initializer_list>
#include <ostream>
#include <vector>

#include "ember/autograd/grad_mode.h"
#include "ember/core/scalar.h"
#include "ember/core/tensor.h"

namespace ember {

using IntList = std::initializer_list<int64_t>;

/// ember.ones / zeros / empty / full / rand / randn with the default dtype (float32) on
/// the CPU unless given: `ember::ones({1, 3, 224, 224})`.
Tensor ones(IntList sizes, DType dtype = DType::Float32, Device device = Device());
Tensor zeros(IntList sizes, DType dtype = DType::Float32, Device device = Device());
Tensor empty(IntList sizes, DType dtype = DType::Float32, Device device = Device());
Tensor full(IntList sizes, Scalar value, DType dtype = DType::Float32, Device device = Device());
Tensor rand(IntList sizes, DType dtype = DType::Float32, Device device = Device());
Tensor randn(IntList sizes, DType dtype = DType::Float32, Device device = Device());
Tensor ones(const Shape& sizes);
Tensor zeros(const Shape& sizes);
Tensor rand(const Shape& sizes);
Tensor randn(const Shape& sizes);
Tensor arange(int64_t end, DType dtype = DType::Int64, Device device = Device());
/// A 1-d float32 tensor holding `values` (a copy), optionally viewed as `sizes`.
Tensor tensor(const std::vector<float>& values);
Tensor tensor(const std::vector<int64_t>& values);
/// ember.manual_seed.
void manual_seed(uint64_t seed);

/// No autograd history inside its scope (Python's `with ember.no_grad():`).
struct NoGradGuard {
  autograd::GradModeGuard guard{false};
};

}  // namespace ember

/// Prints a tensor as Python's repr does: "tensor([[-0.2698, -0.0381]])".
std::ostream& operator<<(std::ostream& os, const ember::Tensor& t);
