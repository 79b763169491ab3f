// Kernel slots of arange and linspace/logspace (front-ends in ops/factory.cpp).
// Backend-neutral: backends include this, never ops/factory.h.
#pragma once
#include <optional>

#include "ember/core/scalar.h"
#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/functors.h"

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

/// linspace's computation type for results of type T, shared by the backends: integral
/// results truncate the bounds first and step in double; floating ones compute in opmath.
template <typename T>
using linspace_t = std::conditional_t<std::is_integral<T>::value, double, opmath_t<T>>;
template <typename T>
linspace_t<T> linspace_bound(double x) {
  if constexpr (std::is_integral<T>::value)
    return linspace_t<T>(int64_t(x));
  else
    return linspace_t<T>(x);
}

}  // namespace ember
