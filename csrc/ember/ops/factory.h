// Factories: tensors made from sizes, ranges and other tensors' geometry.
// (full, zeros and scalar_tensor live in ops.h; tensor(data) is built by the
// Python binding, which walks the nested Python data.)
#pragma once
#include <optional>

#include "ember/core/scalar.h"
#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"

namespace ember {

/// Fills a contiguous tensor with start + i * step (computed in int64 for
/// integral dtypes, double for floating ones).
extern DispatchStub<void (*)(const Tensor& out, Scalar start, Scalar step)> arange_stub;
/// Fills a contiguous 1-D tensor of `steps` points from start to end, PyTorch's
/// symmetric formula (the first half counts up from start, the second down from end);
/// with `log_base` set, writes base ** value instead (logspace).
extern DispatchStub<void (*)(const Tensor& out, double start, double end,
                             std::optional<double> log_base)>
    linspace_stub;

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
