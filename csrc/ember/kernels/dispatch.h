// dtype dispatch and the kernel registry.
#pragma once
#include "ember/core/device.h"
#include "ember/core/dtype.h"
#include "ember/core/error.h"

namespace ember {

template <typename T> struct TypeTag { using type = T; };

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

/// Like dispatch_all for floating dtypes; raises naming the op otherwise.
template <typename F>
decltype(auto) dispatch_floating(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::Float16: return f(TypeTag<Half>{});
    case DType::BFloat16: return f(TypeTag<BFloat16>{});
    case DType::Float32: return f(TypeTag<float>{});
    case DType::Float64: return f(TypeTag<double>{});
    default: EMBER_ERROR('"', op, "\" not implemented for '", dtype_name(dtype), "'");
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
template <typename Fn>
struct DispatchStub {
  const char* name;
  Fn fns[kNumDeviceTypes] = {};
  constexpr explicit DispatchStub(const char* n) : name(n) {}
  Fn get(Device d) const {
    Fn f = fns[int(d.type)];
    EMBER_CHECK(f, '"', name, "\" not implemented for '", d.is_cpu() ? "CPU" : "CUDA", "'");
    return f;
  }
};

}  // namespace ember
