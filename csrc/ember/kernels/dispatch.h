// dtype dispatch and the kernel registry.
#pragma once
#include "ember/core/device.h"
#include "ember/core/device_guard.h"
#include "ember/core/dtype.h"
#include "ember/core/error.h"
#include "ember/core/profiler.h"
#include "ember/core/trace_state.h"

#include <utility>

namespace ember {

template <typename T>
struct TypeTag {
  using type = T;
};

/// Calls f(TypeTag<T>{}) with the C++ type T of `dtype`, for every dtype.
template <typename F>
decltype(auto) dispatch_all(DType dtype, const char* op, F&& f) {
  switch (dtype) {
#define EMBER_CASE(c, n, p, k) \
  case DType::n:               \
    return f(TypeTag<c>{});
    EMBER_FORALL_DTYPES(EMBER_CASE)
#undef EMBER_CASE
    default:
      EMBER_ERROR(op, ": unknown dtype");
  }
}

/// Calls f(TypeTag<U>{}) with the unsigned integer type U of `size` bytes (1, 2, 4 or 8):
/// for kernels that only move elements (gathers, scatters, copies); raises for other sizes.
template <typename F>
void dispatch_by_size(int64_t size, const char* op, F&& f) {
  switch (size) {
    case 1:
      return f(TypeTag<uint8_t>{});
    case 2:
      return f(TypeTag<uint16_t>{});
    case 4:
      return f(TypeTag<uint32_t>{});
    case 8:
      return f(TypeTag<uint64_t>{});
    default:
      EMBER_ERROR(op, ": unsupported element size ", size);
  }
}

/// Like dispatch_all for floating dtypes; raises naming the op otherwise.
template <typename F>
decltype(auto) dispatch_floating(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::Float16:
      return f(TypeTag<Half>{});
    case DType::BFloat16:
      return f(TypeTag<BFloat16>{});
    case DType::Float32:
      return f(TypeTag<float>{});
    case DType::Float64:
      return f(TypeTag<double>{});
    default:
      EMBER_ERROR('"', op, "\" not implemented for '", dtype_name(dtype), "'");
  }
}

/// Numeric dtypes (everything but bool).
template <typename F>
decltype(auto) dispatch_numeric(DType dtype, const char* op, F&& f) {
  EMBER_CHECK(dtype != DType::Bool, '"', op, "\" not implemented for 'bool'");
  return dispatch_all(dtype, op, std::forward<F>(f));
}

// Note [Kernel registry]
// Each kernel family has a DispatchStub: one function pointer per device type.
// The CPU backend fills its slots at static-initialization time; the CUDA
// backend (the separate _C_cuda module) fills its slots when it is loaded. An
// empty slot raises "<op> not implemented for 'CUDA'": there is never a silent
// fallback that copies to the CPU.
//
// get() returns the kernel wrapped in a BoundKernel: calling it runs the kernel
// inside a profiler::RecordScope named after the stub (Note [Profiler
// recording]). When no profiler is collecting that is one relaxed atomic load.
template <typename Fn>
struct BoundKernel;
template <typename R, typename... A>
struct BoundKernel<R (*)(A...)> {
  using FnPtr = R (*)(A...);
  FnPtr fn;
  const char* name;
  Device device;  // a CUDA kernel runs with its device current (Note [Device guard]) and is
                  // timed on its stream under ProfilerActivity.CUDA
  template <typename... U>
  R operator()(U&&... u) const {
    if (device.is_cpu()) return call(std::forward<U>(u)...);
    DeviceGuard guard(device);
    return call(std::forward<U>(u)...);
  }
  template <typename... U>
  R call(U&&... u) const {
    if (!profiler::enabled()) return fn(std::forward<U>(u)...);
    profiler::RecordScope scope(name, profiler::EventKind::Op, !device.is_cpu());
    if (scope.wants_shapes()) (scope.add_input(u), ...);
    return fn(std::forward<U>(u)...);
  }
  operator FnPtr() const { return fn; }
};

template <typename Fn>
struct DispatchStub {
  const char* name;
  Fn fns[kNumDeviceTypes] = {};
  constexpr explicit DispatchStub(const char* n) : name(n) {}
  BoundKernel<Fn> get(Device d) const {
    if (trace_state::outermost()) trace_state::untraced(name);  // Note [Tracing] (jit/tracer.h)
    Fn f = fns[int(d.type)];
    EMBER_CHECK(f, '"', name, "\" not implemented for '", d.is_cpu() ? "CPU" : "CUDA", "'");
    return BoundKernel<Fn>{f, name, d};
  }
};

}  // namespace ember
