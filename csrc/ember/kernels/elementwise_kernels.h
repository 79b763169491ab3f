// The backend-neutral half of the elementwise kernels of kernels/ops.def: for each
// op the dtype policy of its Kind (which element types run, what the result type
// is, bool's special cases) and the casting copy's per-element conversion. A
// backend supplies only its loops, as a `Loops` type with
//
//   template <typename Out, typename In, typename F> static void unary(TensorIterator&, F);
//   template <typename Out, typename In, typename F> static void binary(TensorIterator&, F);
//
// (out[i] = f(in[i]) / f(a[i], b[i]) computed in opmath_t<In>), and registers
// unary_kernel<fn::Sin, Kind::FLOAT, Loops> etc. into the stubs of
// kernels/elementwise.h (see backends/cpu/elementwise_kernels.cpp).
#pragma once
#include <type_traits>

#include "ember/kernels/dispatch.h"
#include "ember/kernels/elementwise.h"
#include "ember/kernels/functors.h"
#include "ember/kernels/tensor_iterator.h"

namespace ember::elementwise {

/// The element type a unary op of kind K reads (operand 1's dtype, already
/// converted by the front-end) decides the loop: FLOAT/FLOATONLY take floating
/// types only, BITS integers and bool, PRED writes bool, the rest keep the type.
template <typename F, Kind K, typename Loops>
void unary_kernel(TensorIterator& it) {
  DType dt = it.dtype(1);
  auto body = [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (K == Kind::PRED)
      Loops::template unary<bool, T>(it, F{});
    else
      Loops::template unary<T, T>(it, F{});
  };
  if constexpr (K == Kind::FLOAT || K == Kind::FLOATONLY) {
    dispatch_floating(dt, "unary", body);
  } else if constexpr (K == Kind::BITS) {
    EMBER_CHECK(!is_floating(dt), "bitwise op on floating tensor");
    switch (dt) {
      case DType::Bool:
        return Loops::template unary<bool, bool>(it, F{});
      case DType::UInt8:
        return Loops::template unary<uint8_t, uint8_t>(it, F{});
      case DType::Int8:
        return Loops::template unary<int8_t, int8_t>(it, F{});
      case DType::Int16:
        return Loops::template unary<int16_t, int16_t>(it, F{});
      case DType::Int32:
        return Loops::template unary<int32_t, int32_t>(it, F{});
      default:
        return Loops::template unary<int64_t, int64_t>(it, F{});
    }
  } else {
    dispatch_all(dt, "unary", body);
  }
}

template <typename F, bool AllowBool, typename Loops>
void integral_binary(TensorIterator& it) {
  switch (it.dtype(1)) {
    case DType::Bool:
      if constexpr (AllowBool) return Loops::template binary<bool, bool>(it, F{});
      EMBER_ERROR("op not implemented for 'bool'");
    case DType::UInt8:
      return Loops::template binary<uint8_t, uint8_t>(it, F{});
    case DType::Int8:
      return Loops::template binary<int8_t, int8_t>(it, F{});
    case DType::Int16:
      return Loops::template binary<int16_t, int16_t>(it, F{});
    case DType::Int32:
      return Loops::template binary<int32_t, int32_t>(it, F{});
    case DType::Int64:
      return Loops::template binary<int64_t, int64_t>(it, F{});
    default:
      EMBER_ERROR("integral kernel got ", dtype_name(it.dtype(1)));
  }
}

template <typename F, typename Loops>
void floating_binary(TensorIterator& it) {
  dispatch_floating(it.dtype(1), "binary", [&](auto tag) {
    using T = typename decltype(tag)::type;
    Loops::template binary<T, T>(it, F{});
  });
}

/// Both inputs arrive in the compute dtype (the front-end promoted them); COMPARE
/// and LOGICAL write bool, FLOATING (atan2) runs floating types only, BITS integers
/// and bool, and on bool the arithmetic kinds run only add/mul/maximum/minimum.
template <typename F, Kind K, typename Loops>
void binary_kernel(TensorIterator& it) {
  DType dt = it.dtype(1);
  if constexpr (K == Kind::BITS) {
    integral_binary<F, true, Loops>(it);
  } else if constexpr (K == Kind::COMPARE || K == Kind::LOGICAL) {
    dispatch_all(dt, "compare", [&](auto tag) {
      using T = typename decltype(tag)::type;
      Loops::template binary<bool, T>(it, F{});
    });
  } else if constexpr (K == Kind::FLOATING) {
    floating_binary<F, Loops>(it);
  } else {
    // bool reaches only add/mul/maximum/minimum (checked by the front-end);
    // there + is "or" and * is "and", as PyTorch.
    if (dt == DType::Bool) {
      if constexpr (std::is_same<F, fn::Add>::value || std::is_same<F, fn::Maximum>::value)
        return Loops::template binary<bool, bool>(it, fn::LogicalOr{});
      if constexpr (std::is_same<F, fn::Mul>::value || std::is_same<F, fn::Minimum>::value)
        return Loops::template binary<bool, bool>(it, fn::LogicalAnd{});
      EMBER_ERROR("op not implemented for 'bool'");
    }
    if (is_floating(dt)) return floating_binary<F, Loops>(it);
    integral_binary<F, false, Loops>(it);
  }
}

/// The conversion of one element of the casting copy, from its opmath value:
/// nonzero is true, 16-bit floats round from float, the rest convert as C++ does.
template <typename O, typename I>
struct CastTo {
  EMBER_HOST_DEVICE O operator()(opmath_t<I> x) const {
    if constexpr (std::is_same<O, bool>::value)
      return bool(x != opmath_t<I>(0));
    else if constexpr (std::is_same<O, Half>::value || std::is_same<O, BFloat16>::value)
      return O(float(x));
    else
      return O(x);
  }
};

/// The casting copy between two different dtypes (operand 0 <- operand 1).
template <typename Loops>
void cast_copy(TensorIterator& it) {
  dispatch_all(it.dtype(0), "copy_", [&](auto otag) {
    using O = typename decltype(otag)::type;
    dispatch_all(it.dtype(1), "copy_", [&](auto itag) {
      using I = typename decltype(itag)::type;
      Loops::template unary<O, I>(it, CastTo<O, I>{});
    });
  });
}

}  // namespace ember::elementwise
