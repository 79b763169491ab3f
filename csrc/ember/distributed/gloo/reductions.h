// The reduction functions the gloo backend hands Gloo: c[i] = a[i] (op) b[i] for every dtype
// and ReduceOp, plain loops the compiler vectorizes; float16/bfloat16 compute in float, bool
// sums are "or" and products "and".
#pragma once
#include <cstddef>
#include <type_traits>

#include "ember/core/dtype.h"
#include "ember/distributed/process_group.h"

namespace ember::distributed::gloo_reductions {

template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

template <typename T, typename Op>
void reduce_loop(void* c, const void* a, const void* b, size_t n) {
  T* out = static_cast<T*>(c);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  Op op;
  for (size_t i = 0; i < n; ++i) out[i] = T(op(Acc<T>(x[i]), Acc<T>(y[i])));
}

struct Sum {
  template <typename A>
  A operator()(A a, A b) const {
    if constexpr (std::is_same_v<A, bool>)
      return a || b;
    else
      return a + b;
  }
};
struct Prod {
  template <typename A>
  A operator()(A a, A b) const {
    if constexpr (std::is_same_v<A, bool>)
      return a && b;
    else
      return a * b;
  }
};
struct Min {
  template <typename A>
  A operator()(A a, A b) const {
    if constexpr (std::is_floating_point_v<A>)
      if (a != a) return a;  // NaN propagates, as torch.minimum
    return b < a ? b : a;
  }
};
struct Max {
  template <typename A>
  A operator()(A a, A b) const {
    if constexpr (std::is_floating_point_v<A>)
      if (a != a) return a;
    return a < b ? b : a;
  }
};
struct BitAnd {
  template <typename A>
  A operator()(A a, A b) const {
    if constexpr (std::is_integral_v<A>)
      return A(a & b);
    else
      return a;
  }
};
struct BitOr {
  template <typename A>
  A operator()(A a, A b) const {
    if constexpr (std::is_integral_v<A>)
      return A(a | b);
    else
      return a;
  }
};
struct BitXor {
  template <typename A>
  A operator()(A a, A b) const {
    if constexpr (std::is_integral_v<A>)
      return A(a ^ b);
    else
      return a;
  }
};

using ReduceFn = void (*)(void*, const void*, const void*, size_t);

template <typename T>
ReduceFn reduce_fn(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG:
      return &reduce_loop<T, Sum>;
    case ReduceOp::PRODUCT:
      return &reduce_loop<T, Prod>;
    case ReduceOp::MIN:
      return &reduce_loop<T, Min>;
    case ReduceOp::MAX:
      return &reduce_loop<T, Max>;
    case ReduceOp::BAND:
      return &reduce_loop<T, BitAnd>;
    case ReduceOp::BOR:
      return &reduce_loop<T, BitOr>;
    case ReduceOp::BXOR:
      return &reduce_loop<T, BitXor>;
    default:
      EMBER_CHECK(false, "gloo: unsupported reduction ", reduce_op_name(op));
  }
}

}  // namespace ember::distributed::gloo_reductions
