// Factories: tensors made from sizes, ranges and other tensors' geometry.
// (full, zeros and scalar_tensor live in ops.h; tensor(data) is built by the
// Python binding, which walks the nested Python data.)
#pragma once
#include <optional>

#include "ember/core/scalar.h"
#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/stubs/factory.h"

namespace ember {

// The kernel interface (types, stubs): kernels/stubs/factory.h.

Tensor ones(const Shape& sizes, DType dtype, Device device = Device());
/// An uninitialized tensor like `a`: same sizes; same strides when `a` is
/// non-overlapping and dense (PyTorch's preserve_format), contiguous otherwise.
Tensor empty_like(const Tensor& a, std::optional<DType> dtype = std::nullopt,
                  std::optional<Device> device = std::nullopt);
/// The dtype `full` gives a fill value when none is asked for: bool, int64 or the default float.
DType full_dtype(Scalar fill);

/// Values from start to end (exclusive) by step. dtype: int64 when all three
/// are integral, else the default dtype, unless given.
Tensor arange(Scalar start, Scalar end, Scalar step, std::optional<DType> dtype = std::nullopt,
              Device device = Device());
/// The number of elements arange(start, end, step) has for `dtype` (validates the arguments).
int64_t arange_size(Scalar start, Scalar end, Scalar step, DType dtype);
/// `steps` evenly spaced values from start to end inclusive.
Tensor linspace(double start, double end, int64_t steps, DType dtype, Device device = Device());
/// base ** linspace(start, end, steps).
Tensor logspace(double start, double end, int64_t steps, double base, DType dtype,
                Device device = Device());
/// An n x m matrix with ones on the diagonal.
Tensor eye(int64_t n, std::optional<int64_t> m, DType dtype, Device device = Device());

}  // namespace ember
