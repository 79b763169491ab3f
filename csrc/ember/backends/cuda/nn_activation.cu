// CUDA kernels of the fused pointwise activations, activation_stub and
// activation_backward_stub (kernels/stubs/nn_activation.h): gelu (erf and tanh
// forms), silu, softplus, mish, elu (selu / celu through it), leaky_relu, hardtanh,
// hardswish, hardsigmoid, logsigmoid, hardshrink, softshrink, threshold, and their
// first derivatives (elu / leaky_relu / hardtanh / threshold also from the result).
// One functor per Act, each the CPU kernel's formula (backends/cpu/nn_activation.cpp)
// with the CUDA math library (expf, log1pf, tanhf, erfcf, ...) in place of nn_vec.h's
// SIMD helpers, computing in opmath_t (float for 16-bit floats). Every Act x dtype is
// its own instantiation of loops.cuh's grid-stride iterator kernel (launch_iter), so
// the switch on Act runs once on the host, not per element. Untaken branches are
// selects, so a NaN / inf gradient never leaks into a zero, as on the CPU.
#include <cuda_runtime.h>

#include "ember/backends/cuda/loops.cuh"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/registration.h"
#include "ember/kernels/stubs/nn_activation.h"

namespace ember::cuda {
namespace {

constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)
constexpr double kGeluBeta = 0.79788456080286535588;    // sqrt(2 / pi)
constexpr double kGeluKappa = 0.044715;

// The CUDA math library by compute type (float: the single-precision functions).
__device__ __forceinline__ float exp_(float x) { return expf(x); }
__device__ __forceinline__ double exp_(double x) { return exp(x); }
__device__ __forceinline__ float expm1_(float x) { return expm1f(x); }
__device__ __forceinline__ double expm1_(double x) { return expm1(x); }
__device__ __forceinline__ float log1p_(float x) { return log1pf(x); }
__device__ __forceinline__ double log1p_(double x) { return log1p(x); }
__device__ __forceinline__ float tanh_(float x) { return tanhf(x); }
__device__ __forceinline__ double tanh_(double x) { return tanh(x); }
__device__ __forceinline__ float fabs_(float x) { return fabsf(x); }
__device__ __forceinline__ double fabs_(double x) { return fabs(x); }

/// The standard normal cdf of x: 0.5 erfc(-x / sqrt 2) in float (no 1 + erf cancellation
/// for x < 0, like the CPU's normal_tail_f); the CPU's 0.5 (1 + erf(x / sqrt 2)) in double.
__device__ __forceinline__ float normal_cdf(float x) { return 0.5f * erfcf(-x * float(kSqrt1_2)); }
__device__ __forceinline__ double normal_cdf(double x) { return 0.5 * (1.0 + erf(x * kSqrt1_2)); }

template <typename A>
__device__ __forceinline__ A sigmoid_of(A x) {
  return A(1) / (A(1) + exp_(-x));
}

// ---- forward functors: A operator()(A x) --------------------------------------------

/// gelu(x) = x cdf(x), in the CPU's order of operations for double.
__device__ __forceinline__ float gelu_of(float x) { return x * normal_cdf(x); }
__device__ __forceinline__ double gelu_of(double x) { return 0.5 * x * (1.0 + erf(x * kSqrt1_2)); }

template <typename A>
struct GeluF {
  __device__ A operator()(A x) const { return gelu_of(x); }
};
template <typename A>
struct GeluTanhF {
  __device__ A operator()(A x) const {
    const A inner = A(kGeluBeta) * (x + A(kGeluKappa) * x * x * x);
    return A(0.5) * x * (A(1) + tanh_(inner));
  }
};
template <typename A>
struct SiluF {
  __device__ A operator()(A x) const { return x / (A(1) + exp_(-x)); }
};
template <typename A>
struct SoftplusF {  // a = beta, b = threshold
  A a, b;
  __device__ A operator()(A x) const {
    const A z = x * a;
    return z > b ? x : log1p_(exp_(z)) / a;
  }
};
template <typename A>
struct MishF {
  __device__ A operator()(A x) const { return x * tanh_(log1p_(exp_(x))); }
};
template <typename A>
struct EluF {  // neg = alpha * scale, b = scale, c = input_scale
  A neg, b, c;
  __device__ A operator()(A x) const { return x <= A(0) ? expm1_(x * c) * neg : x * b; }
};
template <typename A>
struct LeakyReluF {
  A a;
  __device__ A operator()(A x) const { return x > A(0) ? x : x * a; }
};
template <typename A>
struct HardtanhF {
  A a, b;
  __device__ A operator()(A x) const { return x <= a ? a : (x >= b ? b : x); }
};
template <typename A>
struct HardswishF {  // x * clamp(x + 3, 0, 6) / 6, as PyTorch
  __device__ A operator()(A x) const {
    A c = x + A(3);
    c = c < A(0) ? A(0) : c;
    c = c > A(6) ? A(6) : c;
    return x * c / A(6);
  }
};
template <typename A>
struct HardsigmoidF {
  __device__ A operator()(A x) const {
    return x <= A(-3) ? A(0) : (x >= A(3) ? A(1) : x / A(6) + A(0.5));
  }
};
template <typename A>
struct LogsigmoidF {  // min(x, 0) - log1p(exp(-|x|)): never overflows
  __device__ A operator()(A x) const {
    const A m = x < A(0) ? x : A(0);
    return (x != x ? x : m) - log1p_(exp_(-fabs_(x)));
  }
};
template <typename A>
struct HardshrinkF {
  A a;
  __device__ A operator()(A x) const { return x >= -a && x <= a ? A(0) : x; }
};
template <typename A>
struct SoftshrinkF {  // 0 * x in the dead zone keeps a NaN, as PyTorch
  A a;
  __device__ A operator()(A x) const { return x > a ? x - a : (x < -a ? x + a : A(0) * x); }
};
template <typename A>
struct ThresholdF {
  A a, b;
  __device__ A operator()(A x) const { return x <= a ? b : x; }
};

// ---- backward functors: A operator()(A g, A x) -------------------------------------

template <typename A>
struct GeluB {
  __device__ A operator()(A g, A x) const {
    const A pdf = exp_(A(-0.5) * x * x) * A(kInvSqrt2Pi);
    return g * (normal_cdf(x) + x * pdf);
  }
};
template <typename A>
struct GeluTanhB {
  __device__ A operator()(A g, A x) const {
    const A x2 = x * x;
    const A t = tanh_(A(kGeluBeta) * (x + A(kGeluKappa) * x2 * x));
    const A du = A(kGeluBeta) * (A(1) + A(3 * kGeluKappa) * x2);
    return g * (A(0.5) * (A(1) + t) + A(0.5) * x * (A(1) - t * t) * du);
  }
};
template <typename A>
struct SiluB {
  __device__ A operator()(A g, A x) const {
    const A s = sigmoid_of(x);
    return g * s * (A(1) + x * (A(1) - s));
  }
};
template <typename A>
struct SoftplusB {  // g * sigmoid(z): no inf / inf
  A a, b;
  __device__ A operator()(A g, A x) const {
    const A z = x * a;
    return z > b ? g : g / (A(1) + exp_(-z));
  }
};
template <typename A>
struct MishB {
  __device__ A operator()(A g, A x) const {
    const A s = sigmoid_of(x);
    const A t = tanh_(log1p_(exp_(x)));
    return g * (t + x * s * (A(1) - t * t));
  }
};
template <typename A>
struct EluB {  // from the input
  A neg, b, c;
  __device__ A operator()(A g, A x) const { return x <= A(0) ? g * c * neg * exp_(x * c) : g * b; }
};
template <typename A>
struct EluResultB {  // y = neg * (exp(x c) - 1) where y <= 0, so exp(x c) = y / neg + 1
  A neg, b, c;
  __device__ A operator()(A g, A y) const { return y <= A(0) ? g * c * (y + neg) : g * b; }
};
template <typename A>
struct LeakyReluB {
  A a;
  __device__ A operator()(A g, A x) const { return x > A(0) ? g : g * a; }
};
template <typename A>
struct HardtanhB {
  A a, b;
  __device__ A operator()(A g, A x) const { return x <= a || x >= b ? A(0) : g; }
};
template <typename A>
struct HardswishB {
  __device__ A operator()(A g, A x) const {
    return x < A(-3) ? A(0) : (x <= A(3) ? g * (x / A(3) + A(0.5)) : g);
  }
};
template <typename A>
struct HardsigmoidB {
  __device__ A operator()(A g, A x) const { return x > A(-3) && x < A(3) ? g / A(6) : A(0); }
};
template <typename A>
struct LogsigmoidB {  // sigmoid(-x), from z = exp(-|x|) without overflow
  __device__ A operator()(A g, A x) const {
    const A z = exp_(-fabs_(x));
    const A q = z / (A(1) + z);
    return g * (x < A(0) ? A(1) - q : q);
  }
};
template <typename A>
struct ShrinkB {  // hardshrink and softshrink
  A a;
  __device__ A operator()(A g, A x) const { return x >= -a && x <= a ? A(0) : g; }
};
template <typename A>
struct ThresholdB {
  A a;
  __device__ A operator()(A g, A x) const { return x <= a ? A(0) : g; }
};

template <typename T, typename F>
void fwd(TensorIterator& it, F f) {
  launch_iter<2>(it, UnaryBody<T, T, F>{f});
}
template <typename T, typename F>
void bwd(TensorIterator& it, F f) {
  launch_iter<3>(it, BinaryBody<T, T, F>{f});
}

template <typename T>
void activation_typed(TensorIterator& it, Act act, ActParams p) {
  using A = opmath_t<T>;
  const A a = A(p.a), b = A(p.b), c = A(p.c);
  switch (act) {
    case Act::gelu:
      return fwd<T>(it, GeluF<A>{});
    case Act::gelu_tanh:
      return fwd<T>(it, GeluTanhF<A>{});
    case Act::silu:
      return fwd<T>(it, SiluF<A>{});
    case Act::softplus:
      return fwd<T>(it, SoftplusF<A>{a, b});
    case Act::mish:
      return fwd<T>(it, MishF<A>{});
    case Act::elu:
      return fwd<T>(it, EluF<A>{a * b, b, c});
    case Act::leaky_relu:
      return fwd<T>(it, LeakyReluF<A>{a});
    case Act::hardtanh:
      return fwd<T>(it, HardtanhF<A>{a, b});
    case Act::hardswish:
      return fwd<T>(it, HardswishF<A>{});
    case Act::hardsigmoid:
      return fwd<T>(it, HardsigmoidF<A>{});
    case Act::logsigmoid:
      return fwd<T>(it, LogsigmoidF<A>{});
    case Act::hardshrink:
      return fwd<T>(it, HardshrinkF<A>{a});
    case Act::softshrink:
      return fwd<T>(it, SoftshrinkF<A>{a});
    case Act::threshold:
      return fwd<T>(it, ThresholdF<A>{a, b});
    default:
      EMBER_ERROR("activation: unknown activation ", int(act));
  }
}

template <typename T>
void activation_backward_typed(TensorIterator& it, Act act, ActParams p, bool is_result) {
  using A = opmath_t<T>;
  const A a = A(p.a), b = A(p.b), c = A(p.c);
  switch (act) {
    case Act::gelu:
      return bwd<T>(it, GeluB<A>{});
    case Act::gelu_tanh:
      return bwd<T>(it, GeluTanhB<A>{});
    case Act::silu:
      return bwd<T>(it, SiluB<A>{});
    case Act::softplus:
      return bwd<T>(it, SoftplusB<A>{a, b});
    case Act::mish:
      return bwd<T>(it, MishB<A>{});
    case Act::elu:
      if (is_result) return bwd<T>(it, EluResultB<A>{a * b, b, c});
      return bwd<T>(it, EluB<A>{a * b, b, c});
    case Act::leaky_relu:
      return bwd<T>(it, LeakyReluB<A>{a});
    case Act::hardtanh:
      return bwd<T>(it, HardtanhB<A>{a, b});
    case Act::hardswish:
      return bwd<T>(it, HardswishB<A>{});
    case Act::hardsigmoid:
      return bwd<T>(it, HardsigmoidB<A>{});
    case Act::logsigmoid:
      return bwd<T>(it, LogsigmoidB<A>{});
    case Act::hardshrink:
    case Act::softshrink:
      return bwd<T>(it, ShrinkB<A>{a});
    case Act::threshold:
      return bwd<T>(it, ThresholdB<A>{a});
    default:
      EMBER_ERROR("activation_backward: unknown activation ", int(act));
  }
}

void activation_kernel(TensorIterator& it, Act act, ActParams p) {
  dispatch_floating(it.dtype(1), "activation",
                    [&](auto tag) { activation_typed<typename decltype(tag)::type>(it, act, p); });
}

void activation_backward_kernel(TensorIterator& it, Act act, ActParams p, bool is_result) {
  dispatch_floating(it.dtype(2), "activation_backward", [&](auto tag) {
    activation_backward_typed<typename decltype(tag)::type>(it, act, p, is_result);
  });
}

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, nn_activation) {
  constexpr int cuda = int(DeviceType::CUDA);
  activation_stub.fns[cuda] = &activation_kernel;
  activation_backward_stub.fns[cuda] = &activation_backward_kernel;
}

}  // namespace ember::cuda
