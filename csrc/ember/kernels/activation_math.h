// The pointwise activations and their first derivatives (activation_stub,
// activation_backward_stub: kernels/stubs/nn_activation.h), written once for the CPU
// (backends/cpu/nn_activation.cpp) and CUDA (backends/cuda/nn_activation.cu) kernels.
//
// Note [Activation math]
// One functor per Act computes in opmath_t (float for the 16-bit floats). The
// transcendental functions come from the backend's math policy `M`: the CPU's is
// nn_vec.h's branch-free SIMD-friendly exp / expm1 / log1p / tanh / erf, CUDA's the CUDA
// math library (expf, log1pf, ...). Both policies also give the standard normal cdf (and
// pdf) that gelu needs, each in its best form: on the CPU float, the erfc-like tail of
// nn_vec.h (no 1 + erf cancellation for x < 0); on CUDA float, 0.5 erfcf(-x / sqrt 2); in
// double, 0.5 (1 + erf(x / sqrt 2)) on both. Untaken branches are selects, so a NaN / inf
// gradient never leaks into a zero. for_activation / for_activation_backward hold the one
// switch on Act: they hand the backend's loop the functor for `act`, so each Act x dtype
// is its own instantiation of the loop and the switch runs once per call, not per element;
// activation_kernel / activation_backward_kernel are the stubs' entry points, given a
// backend's math policy and loops.
#pragma once
#include "ember/core/error.h"
#include "ember/kernels/functors.h"
#include "ember/kernels/stubs/nn_activation.h"

// Forced inline: a file instantiates some 120 of these, past GCC's unit-growth limit, and an
// out-of-line call per element keeps a CPU loop scalar.
#if defined(__CUDACC__)
#define EMBER_ACT_F __host__ __device__ __forceinline__
#else
#define EMBER_ACT_F __attribute__((always_inline)) inline
#endif

namespace ember::act {

constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)
constexpr double kGeluBeta = 0.79788456080286535588;    // sqrt(2 / pi)
constexpr double kGeluKappa = 0.044715;

// ---- forward functors: A operator()(A x) --------------------------------------------

template <typename A, typename M>
struct GeluF {  // x cdf(x)
  EMBER_ACT_F A operator()(A x) const { return x * M::normal_cdf(x); }
};
template <typename A, typename M>
struct GeluTanhF {
  EMBER_ACT_F A operator()(A x) const {
    const A inner = A(kGeluBeta) * (x + A(kGeluKappa) * x * x * x);
    return A(0.5) * x * (A(1) + M::tanh(inner));
  }
};
template <typename A, typename M>
struct SiluF {
  EMBER_ACT_F A operator()(A x) const { return x / (A(1) + M::exp(-x)); }
};
template <typename A, typename M>
struct SoftplusF {  // a = beta, b = threshold
  A a, b;
  EMBER_ACT_F A operator()(A x) const {
    const A z = x * a;
    return z > b ? x : M::log1p(M::exp(z)) / a;
  }
};
template <typename A, typename M>
struct MishF {
  EMBER_ACT_F A operator()(A x) const { return x * M::tanh(M::log1p(M::exp(x))); }
};
template <typename A, typename M>
struct EluF {  // neg = alpha * scale, b = scale, c = input_scale
  A neg, b, c;
  EMBER_ACT_F A operator()(A x) const { return x <= A(0) ? M::expm1(x * c) * neg : x * b; }
};
template <typename A, typename M>
struct LeakyReluF {
  A a;
  EMBER_ACT_F A operator()(A x) const { return x > A(0) ? x : x * a; }
};
template <typename A, typename M>
struct HardtanhF {
  A a, b;
  EMBER_ACT_F A operator()(A x) const { return x <= a ? a : (x >= b ? b : x); }
};
template <typename A, typename M>
struct HardswishF {  // x * clamp(x + 3, 0, 6) / 6, as PyTorch
  EMBER_ACT_F A operator()(A x) const {
    A c = x + A(3);
    c = c < A(0) ? A(0) : c;
    c = c > A(6) ? A(6) : c;
    return x * c / A(6);
  }
};
template <typename A, typename M>
struct HardsigmoidF {
  EMBER_ACT_F A operator()(A x) const {
    return x <= A(-3) ? A(0) : (x >= A(3) ? A(1) : x / A(6) + A(0.5));
  }
};
template <typename A, typename M>
struct LogsigmoidF {  // min(x, 0) - log1p(exp(-|x|)): never overflows
  EMBER_ACT_F A operator()(A x) const {
    const A m = x < A(0) ? x : A(0);
    return (x != x ? x : m) - M::log1p(M::exp(-M::fabs(x)));
  }
};
template <typename A, typename M>
struct HardshrinkF {
  A a;
  EMBER_ACT_F A operator()(A x) const { return x >= -a && x <= a ? A(0) : x; }
};
template <typename A, typename M>
struct SoftshrinkF {  // 0 * x in the dead zone keeps a NaN, as PyTorch
  A a;
  EMBER_ACT_F A operator()(A x) const { return x > a ? x - a : (x < -a ? x + a : A(0) * x); }
};
template <typename A, typename M>
struct ThresholdF {
  A a, b;
  EMBER_ACT_F A operator()(A x) const { return x <= a ? b : x; }
};

// ---- backward functors: A operator()(A g, A x) -------------------------------------

template <typename A, typename M>
EMBER_ACT_F A sigmoid_of(A x) {
  return A(1) / (A(1) + M::exp(-x));
}

template <typename A, typename M>
struct GeluB {
  EMBER_ACT_F A operator()(A g, A x) const {
    A pdf;
    const A cdf = M::normal_cdf_pdf(x, pdf);
    return g * (cdf + x * pdf);
  }
};
template <typename A, typename M>
struct GeluTanhB {
  EMBER_ACT_F A operator()(A g, A x) const {
    const A x2 = x * x;
    const A t = M::tanh(A(kGeluBeta) * (x + A(kGeluKappa) * x2 * x));
    const A du = A(kGeluBeta) * (A(1) + A(3 * kGeluKappa) * x2);
    return g * (A(0.5) * (A(1) + t) + A(0.5) * x * (A(1) - t * t) * du);
  }
};
template <typename A, typename M>
struct SiluB {
  EMBER_ACT_F A operator()(A g, A x) const {
    const A s = sigmoid_of<A, M>(x);
    return g * s * (A(1) + x * (A(1) - s));
  }
};
template <typename A, typename M>
struct SoftplusB {  // g * sigmoid(z): no inf / inf
  A a, b;
  EMBER_ACT_F A operator()(A g, A x) const {
    const A z = x * a;
    return z > b ? g : g / (A(1) + M::exp(-z));
  }
};
template <typename A, typename M>
struct MishB {
  EMBER_ACT_F A operator()(A g, A x) const {
    const A s = sigmoid_of<A, M>(x);
    const A t = M::tanh(M::log1p(M::exp(x)));
    return g * (t + x * s * (A(1) - t * t));
  }
};
template <typename A, typename M>
struct EluB {  // from the input
  A neg, b, c;
  EMBER_ACT_F A operator()(A g, A x) const {
    return x <= A(0) ? g * c * neg * M::exp(x * c) : g * b;
  }
};
template <typename A, typename M>
struct EluResultB {  // y = neg * (exp(x c) - 1) where y <= 0, so exp(x c) = y / neg + 1
  A neg, b, c;
  EMBER_ACT_F A operator()(A g, A y) const { return y <= A(0) ? g * c * (y + neg) : g * b; }
};
template <typename A, typename M>
struct LeakyReluB {
  A a;
  EMBER_ACT_F A operator()(A g, A x) const { return x > A(0) ? g : g * a; }
};
template <typename A, typename M>
struct HardtanhB {
  A a, b;
  EMBER_ACT_F A operator()(A g, A x) const { return x <= a || x >= b ? A(0) : g; }
};
template <typename A, typename M>
struct HardswishB {
  EMBER_ACT_F A operator()(A g, A x) const {
    return x < A(-3) ? A(0) : (x <= A(3) ? g * (x / A(3) + A(0.5)) : g);
  }
};
template <typename A, typename M>
struct HardsigmoidB {
  EMBER_ACT_F A operator()(A g, A x) const { return x > A(-3) && x < A(3) ? g / A(6) : A(0); }
};
template <typename A, typename M>
struct LogsigmoidB {  // sigmoid(-x), from z = exp(-|x|) without overflow
  EMBER_ACT_F A operator()(A g, A x) const {
    const A z = M::exp(-M::fabs(x));
    const A q = z / (A(1) + z);
    return g * (x < A(0) ? A(1) - q : q);
  }
};
template <typename A, typename M>
struct ShrinkB {  // hardshrink and softshrink
  A a;
  EMBER_ACT_F A operator()(A g, A x) const { return x >= -a && x <= a ? A(0) : g; }
};
template <typename A, typename M>
struct ThresholdB {
  A a;
  EMBER_ACT_F A operator()(A g, A x) const { return x <= a ? A(0) : g; }
};

// ---- the one switch on Act ------------------------------------------------------------

/// Calls `run(functor)` with the forward functor of `act` (host code).
template <typename A, typename M, typename Run>
void for_activation(Act act, ActParams p, Run&& run) {
  const A a = A(p.a), b = A(p.b), c = A(p.c);
  switch (act) {
    case Act::gelu:
      return run(GeluF<A, M>{});
    case Act::gelu_tanh:
      return run(GeluTanhF<A, M>{});
    case Act::silu:
      return run(SiluF<A, M>{});
    case Act::softplus:
      return run(SoftplusF<A, M>{a, b});
    case Act::mish:
      return run(MishF<A, M>{});
    case Act::elu:
      return run(EluF<A, M>{a * b, b, c});
    case Act::leaky_relu:
      return run(LeakyReluF<A, M>{a});
    case Act::hardtanh:
      return run(HardtanhF<A, M>{a, b});
    case Act::hardswish:
      return run(HardswishF<A, M>{});
    case Act::hardsigmoid:
      return run(HardsigmoidF<A, M>{});
    case Act::logsigmoid:
      return run(LogsigmoidF<A, M>{});
    case Act::hardshrink:
      return run(HardshrinkF<A, M>{a});
    case Act::softshrink:
      return run(SoftshrinkF<A, M>{a});
    case Act::threshold:
      return run(ThresholdF<A, M>{a, b});
    default:
      EMBER_ERROR("activation: unknown activation ", int(act));
  }
}

/// Calls `run(functor)` with the backward functor of `act`: gx = functor(g, x), or
/// functor(g, y) from the result when `is_result` (elu and the ops whose derivative the
/// result determines).
template <typename A, typename M, typename Run>
void for_activation_backward(Act act, ActParams p, bool is_result, Run&& run) {
  const A a = A(p.a), b = A(p.b), c = A(p.c);
  switch (act) {
    case Act::gelu:
      return run(GeluB<A, M>{});
    case Act::gelu_tanh:
      return run(GeluTanhB<A, M>{});
    case Act::silu:
      return run(SiluB<A, M>{});
    case Act::softplus:
      return run(SoftplusB<A, M>{a, b});
    case Act::mish:
      return run(MishB<A, M>{});
    case Act::elu:
      if (is_result) return run(EluResultB<A, M>{a * b, b, c});
      return run(EluB<A, M>{a * b, b, c});
    case Act::leaky_relu:
      return run(LeakyReluB<A, M>{a});
    case Act::hardtanh:
      return run(HardtanhB<A, M>{a, b});
    case Act::hardswish:
      return run(HardswishB<A, M>{});
    case Act::hardsigmoid:
      return run(HardsigmoidB<A, M>{});
    case Act::logsigmoid:
      return run(LogsigmoidB<A, M>{});
    case Act::hardshrink:
    case Act::softshrink:
      return run(ShrinkB<A, M>{a});
    case Act::threshold:
      return run(ThresholdB<A, M>{a});
    default:
      EMBER_ERROR("activation_backward: unknown activation ", int(act));
  }
}

// ---- the stubs' entry points ----------------------------------------------------------

/// activation_stub's kernel for a backend: `M` its math policy, `Loops` its loops
/// (`Loops::template unary<T>(it, f)` over (out, x), `binary<T>(it, f)` over (gx, g, x)).
template <typename M, typename Loops>
void activation_kernel(TensorIterator& it, Act act, ActParams p) {
  dispatch_floating(it.dtype(1), "activation", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_activation<opmath_t<T>, M>(act, p, [&](auto f) { Loops::template unary<T>(it, f); });
  });
}

/// activation_backward_stub's kernel for a backend (as activation_kernel).
template <typename M, typename Loops>
void activation_backward_kernel(TensorIterator& it, Act act, ActParams p, bool is_result) {
  dispatch_floating(it.dtype(2), "activation_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_activation_backward<opmath_t<T>, M>(act, p, is_result,
                                            [&](auto f) { Loops::template binary<T>(it, f); });
  });
}

}  // namespace ember::act
