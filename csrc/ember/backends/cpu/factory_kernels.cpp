// CPU kernels of the range factories (arange, linspace, logspace).
#include <cmath>

#include "ember/backends/cpu/capability.h"
#include "ember/core/parallel.h"
#include "ember/kernels/functors.h"
#include "ember/kernels/stubs/factory.h"

namespace ember::cpu {
namespace {

template <typename T>
T cast_value(double v) {
  if constexpr (std::is_same<T, bool>::value)
    return v != 0;
  else if constexpr (std::is_same<T, Half>::value || std::is_same<T, BFloat16>::value)
    return T(float(v));
  else if constexpr (std::is_integral<T>::value)
    return static_cast<T>(static_cast<int64_t>(v));
  else
    return static_cast<T>(v);
}

void arange_kernel(const Tensor& out, Scalar start, Scalar step) {
  dispatch_all(out.dtype(), "arange", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    if constexpr (std::is_integral<T>::value) {
      const int64_t s = start.to_int(), d = step.to_int();
      parallel_for(0, out.numel(), kGrainSize, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = static_cast<T>(s + i * d);
      });
    } else {
      const double s = start.to_double(), d = step.to_double();
      parallel_for(0, out.numel(), kGrainSize, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = cast_value<T>(s + double(i) * d);
      });
    }
  });
}

void linspace_kernel(const Tensor& out, double start, double end, std::optional<double> base) {
  const int64_t steps = out.numel();
  dispatch_all(out.dtype(), "linspace", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = linspace_t<T>;
    const C s = linspace_bound<T>(start);
    const C e = linspace_bound<T>(end);
    T* o = out.data<T>();
    if (steps == 1) {
      o[0] = cast_value<T>(base ? std::pow(*base, double(s)) : double(s));
      return;
    }
    const C step = (e - s) / C(steps - 1);
    const int64_t half = steps / 2;
    parallel_for(0, steps, kGrainSize, [&](int64_t b, int64_t en) {
      for (int64_t i = b; i < en; ++i) {
        C v = i < half ? C(s + step * C(i)) : C(e - step * C(steps - i - 1));
        o[i] = cast_value<T>(base ? std::pow(*base, double(v)) : double(v));
      }
    });
  });
}

EMBER_REGISTER_CPU_KERNELS(factory) {
  constexpr int cpu = int(DeviceType::CPU);
  arange_stub.fns[cpu] = &arange_kernel;
  linspace_stub.fns[cpu] = &linspace_kernel;
}

}  // namespace
}  // namespace ember::cpu
