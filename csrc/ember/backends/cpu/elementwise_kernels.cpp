// CPU kernels for the ops in ops.def, registered into the op front-ends' stubs.
#include "ember/backends/cpu/capability.h"
#include "ember/backends/cpu/loops.h"
#include "ember/kernels/elementwise.h"

namespace ember::cpu {
namespace {

template <typename F, Kind K>
void unary_kernel(TensorIterator& it) {
  DType dt = it.dtype(1);
  auto body = [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (K == Kind::PRED) unary_loop<bool, T>(it, F{});
    else unary_loop<T, T>(it, F{});
  };
  if constexpr (K == Kind::FLOAT || K == Kind::FLOATONLY) {
    dispatch_floating(dt, "unary", body);
  } else if constexpr (K == Kind::BITS) {
    EMBER_CHECK(!is_floating(dt), "bitwise op on floating tensor");
    switch (dt) {
      case DType::Bool: return unary_loop<bool, bool>(it, F{});
      case DType::UInt8: return unary_loop<uint8_t, uint8_t>(it, F{});
      case DType::Int8: return unary_loop<int8_t, int8_t>(it, F{});
      case DType::Int16: return unary_loop<int16_t, int16_t>(it, F{});
      case DType::Int32: return unary_loop<int32_t, int32_t>(it, F{});
      default: return unary_loop<int64_t, int64_t>(it, F{});
    }
  } else {
    dispatch_all(dt, "unary", body);
  }
}

template <typename F, bool AllowBool>
void integral_binary(TensorIterator& it) {
  switch (it.dtype(1)) {
    case DType::Bool:
      if constexpr (AllowBool) return binary_loop<bool, bool>(it, F{});
      EMBER_ERROR("op not implemented for 'bool'");
    case DType::UInt8: return binary_loop<uint8_t, uint8_t>(it, F{});
    case DType::Int8: return binary_loop<int8_t, int8_t>(it, F{});
    case DType::Int16: return binary_loop<int16_t, int16_t>(it, F{});
    case DType::Int32: return binary_loop<int32_t, int32_t>(it, F{});
    case DType::Int64: return binary_loop<int64_t, int64_t>(it, F{});
    default: EMBER_ERROR("integral kernel got ", dtype_name(it.dtype(1)));
  }
}

template <typename F>
void floating_binary(TensorIterator& it) {
  dispatch_floating(it.dtype(1), "binary", [&](auto tag) {
    using T = typename decltype(tag)::type;
    binary_loop<T, T>(it, F{});
  });
}

template <typename F, Kind K>
void binary_kernel(TensorIterator& it) {
  DType dt = it.dtype(1);
  if constexpr (K == Kind::BITS) {
    integral_binary<F, true>(it);
  } else if constexpr (K == Kind::COMPARE || K == Kind::LOGICAL) {
    dispatch_all(dt, "compare", [&](auto tag) {
      using T = typename decltype(tag)::type;
      binary_loop<bool, T>(it, F{});
    });
  } else if constexpr (std::is_same<F, fn::Atan2>::value) {
    floating_binary<F>(it);
  } else {
    // bool reaches only add/mul/maximum/minimum (checked by the front-end);
    // there + is "or" and * is "and", as PyTorch.
    if (dt == DType::Bool) {
      if constexpr (std::is_same<F, fn::Add>::value) return binary_loop<bool, bool>(it, fn::LogicalOr{});
      if constexpr (std::is_same<F, fn::Mul>::value) return binary_loop<bool, bool>(it, fn::LogicalAnd{});
      if constexpr (std::is_same<F, fn::Maximum>::value) return binary_loop<bool, bool>(it, fn::LogicalOr{});
      if constexpr (std::is_same<F, fn::Minimum>::value) return binary_loop<bool, bool>(it, fn::LogicalAnd{});
      EMBER_ERROR("op not implemented for 'bool'");
    }
    if (is_floating(dt)) return floating_binary<F>(it);
    integral_binary<F, false>(it);
  }
}

// Casting copy between any two dtypes.
void copy_kernel(TensorIterator& it) {
  DType od = it.dtype(0), id = it.dtype(1);
  if (od == id) {
    int64_t es = element_size(od);
    it.for_each([es](char** d, const int64_t* s, int64_t n) {
      if (s[0] == es && s[1] == es) {
        std::memcpy(d[0], d[1], size_t(n * es));
      } else {
        switch (es) {
          case 1: for (int64_t i = 0; i < n; ++i) d[0][i * s[0]] = d[1][i * s[1]]; break;
          case 2: for (int64_t i = 0; i < n; ++i) *reinterpret_cast<uint16_t*>(d[0] + i * s[0]) = *reinterpret_cast<const uint16_t*>(d[1] + i * s[1]); break;
          case 4: for (int64_t i = 0; i < n; ++i) *reinterpret_cast<uint32_t*>(d[0] + i * s[0]) = *reinterpret_cast<const uint32_t*>(d[1] + i * s[1]); break;
          default: for (int64_t i = 0; i < n; ++i) *reinterpret_cast<uint64_t*>(d[0] + i * s[0]) = *reinterpret_cast<const uint64_t*>(d[1] + i * s[1]); break;
        }
      }
    });
    return;
  }
  dispatch_all(od, "copy_", [&](auto otag) {
    using O = typename decltype(otag)::type;
    dispatch_all(id, "copy_", [&](auto itag) {
      using I = typename decltype(itag)::type;
      unary_loop<O, I>(it, [](opmath_t<I> x) {
        if constexpr (std::is_same<O, bool>::value) return bool(x != opmath_t<I>(0));
        else if constexpr (std::is_same<O, Half>::value || std::is_same<O, BFloat16>::value) return O(float(x));
        else return O(x);
      });
    });
  });
}

// One fixed-size element type per width, so the copy is a load and a store (a
// runtime-sized memcpy per element was a library call: 16 ns each).
template <typename U>
void where_loop(char** d, const int64_t* s, int64_t n) {
  constexpr int64_t es = sizeof(U);
  if (s[0] == es && s[1] == 1 && s[2] == es && s[3] == es) {
    U* o = reinterpret_cast<U*>(d[0]);
    const bool* c = reinterpret_cast<const bool*>(d[1]);
    const U* a = reinterpret_cast<const U*>(d[2]);
    const U* b = reinterpret_cast<const U*>(d[3]);
    for (int64_t i = 0; i < n; ++i) o[i] = c[i] ? a[i] : b[i];
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const bool c = *reinterpret_cast<const bool*>(d[1] + i * s[1]);
    U v;
    std::memcpy(&v, c ? d[2] + i * s[2] : d[3] + i * s[3], sizeof(U));
    std::memcpy(d[0] + i * s[0], &v, sizeof(U));
  }
}

void where_kernel(TensorIterator& it) {
  switch (element_size(it.dtype(0))) {
    case 1: return it.for_each(where_loop<uint8_t>);
    case 2: return it.for_each(where_loop<uint16_t>);
    case 4: return it.for_each(where_loop<uint32_t>);
    default: return it.for_each(where_loop<uint64_t>);
  }
}

void fill_kernel(TensorIterator& it, Scalar v) {
  dispatch_all(it.dtype(0), "fill_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T val = v.to<T>();
    it.for_each([val](char** d, const int64_t* s, int64_t n) {
      if (s[0] == sizeof(T)) {
        T* o = reinterpret_cast<T*>(d[0]);
        for (int64_t i = 0; i < n; ++i) o[i] = val;
      } else {
        for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(d[0] + i * s[0]) = val;
      }
    });
  });
}

struct Registrar {
  Registrar() {
    if (!EMBER_CPU_CAPABILITY_SELECTED()) return;  // another compiled copy registers
    constexpr int cpu = int(DeviceType::CPU);
#define EMBER_REG_UNARY(n, F, k) unary_stubs[int(UnaryOp::n)].fns[cpu] = &unary_kernel<fn::F, Kind::k>;
    EMBER_UNARY_OPS(EMBER_REG_UNARY)
#undef EMBER_REG_UNARY
#define EMBER_REG_BINARY(n, F, k) binary_stubs[int(BinaryOp::n)].fns[cpu] = &binary_kernel<fn::F, Kind::k>;
    EMBER_BINARY_OPS(EMBER_REG_BINARY)
#undef EMBER_REG_BINARY
    copy_stub.fns[cpu] = &copy_kernel;
    where_stub.fns[cpu] = &where_kernel;
    fill_stub.fns[cpu] = &fill_kernel;
  }
} g_registrar;

}  // namespace
}  // namespace ember::cpu
