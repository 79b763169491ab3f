// CPU kernels of the fused softmax / log_softmax (forward and backward): one pass
// for the max, one for the sum of exponentials, one to write, all in opmath.
// A reduction over the last dim works on rows; over another dim it walks blocks
// of the contiguous inner dim so the loops stay unit-stride.
// And the fused pointwise activations (gelu, silu, softplus, elu, ...) and their
// first derivatives: one pass over the TensorIterator, the math in opmath with the
// branch-free float exp / log1p / tanh / erf of nn_vec.h so the loops vectorize.
// Compiled once per CPU capability (Note [CPU capability dispatch]).
// Float compares may be if-converted into SIMD selects: without this the compiler
// keeps the branch-free exp / max loops of nn_vec.h scalar (FP exceptions are never
// inspected in ember).
#pragma GCC optimize("no-trapping-math")
#include "ember/backends/cpu/capability.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ember/backends/cpu/loops.h"
#include "ember/backends/cpu/nn_vec.h"
#include "ember/core/parallel.h"
#include "ember/kernels/functors.h"
#include "ember/kernels/stubs/nn_activation.h"

namespace ember::cpu {
namespace {

constexpr int64_t kBlock = 256;  // inner columns per task for a non-last dim

template <typename T>
void softmax_typed(const Tensor& out, const Tensor& in, SoftmaxShape s, bool log) {
  using A = opmath_t<T>;
  const T* x = in.data<T>();
  T* y = out.data<T>();
  const int64_t n = s.dim, inner = s.inner;
  if (inner == 1) {
    const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1));
    parallel_for(0, s.outer, grain, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* xr = x + r * n;
        T* yr = y + r * n;
        const A m = vec::max_of<A>(n, [&](int64_t j) { return A(xr[j]); });
        // exp(x - m) with m = -inf (an all -inf row) would be NaN: shift by 0 instead.
        const A shift = std::isinf(m) && m < 0 ? A(0) : m;
        if (log) {
          const A sum = vec::sum_of<A>(n, [&](int64_t j) { return vec::exp<A>(A(xr[j]) - shift); });
          const A off = shift + std::log(sum);
          for (int64_t j = 0; j < n; ++j) yr[j] = T(A(xr[j]) - off);
        } else {
          A sum;
          if constexpr (std::is_same<T, A>::value) {
            for (int64_t j = 0; j < n; ++j) yr[j] = vec::exp<A>(xr[j] - shift);
            sum = vec::sum_of<A>(n, [&](int64_t j) { return yr[j]; });
            const A inv = A(1) / sum;
            for (int64_t j = 0; j < n; ++j) yr[j] *= inv;
          } else {
            sum = vec::sum_of<A>(n, [&](int64_t j) { return vec::exp<A>(A(xr[j]) - shift); });
            const A inv = A(1) / sum;
            for (int64_t j = 0; j < n; ++j) yr[j] = T(vec::exp<A>(A(xr[j]) - shift) * inv);
          }
        }
      }
    });
    return;
  }
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  const int64_t tasks = s.outer * blocks;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n * kBlock, 1));
  parallel_for(0, tasks, grain, [&](int64_t b, int64_t e) {
    std::vector<A> mx(kBlock), sm(kBlock);
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / blocks, j0 = (t % blocks) * kBlock;
      const int64_t w = std::min(kBlock, inner - j0);
      const T* xo = x + o * n * inner + j0;
      T* yo = y + o * n * inner + j0;
      std::fill(mx.begin(), mx.begin() + w, -std::numeric_limits<A>::infinity());
      std::fill(sm.begin(), sm.begin() + w, A(0));
      for (int64_t d = 0; d < n; ++d)
        for (int64_t j = 0; j < w; ++j) mx[j] = std::max(mx[j], A(xo[d * inner + j]));
      for (int64_t d = 0; d < n; ++d)
        for (int64_t j = 0; j < w; ++j) sm[j] += vec::exp<A>(A(xo[d * inner + j]) - mx[j]);
      if (log) {
        for (int64_t j = 0; j < w; ++j) mx[j] += std::log(sm[j]);
        for (int64_t d = 0; d < n; ++d)
          for (int64_t j = 0; j < w; ++j) yo[d * inner + j] = T(A(xo[d * inner + j]) - mx[j]);
      } else {
        for (int64_t j = 0; j < w; ++j) sm[j] = A(1) / sm[j];
        for (int64_t d = 0; d < n; ++d)
          for (int64_t j = 0; j < w; ++j)
            yo[d * inner + j] = T(vec::exp<A>(A(xo[d * inner + j]) - mx[j]) * sm[j]);
      }
    }
  });
}

template <typename T>
void softmax_backward_typed(const Tensor& gx, const Tensor& g, const Tensor& y, SoftmaxShape s,
                            bool log) {
  using A = opmath_t<T>;
  const T* gp = g.data<T>();
  const T* yp = y.data<T>();
  T* out = gx.data<T>();
  const int64_t n = s.dim, inner = s.inner;
  if (inner == 1) {
    parallel_for(0, s.outer, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t r = b; r < e; ++r) {
                     const T* gr = gp + r * n;
                     const T* yr = yp + r * n;
                     T* o = out + r * n;
                     if (log) {
                       const A sg = vec::sum_of<A>(n, [&](int64_t j) { return A(gr[j]); });
                       for (int64_t j = 0; j < n; ++j)
                         o[j] = T(A(gr[j]) - vec::exp<A>(A(yr[j])) * sg);
                     } else {
                       const A sgy =
                           vec::sum_of<A>(n, [&](int64_t j) { return A(gr[j]) * A(yr[j]); });
                       for (int64_t j = 0; j < n; ++j) o[j] = T(A(yr[j]) * (A(gr[j]) - sgy));
                     }
                   }
                 });
    return;
  }
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  const int64_t tasks = s.outer * blocks;
  const int64_t grain =
      std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n * std::min(inner, kBlock), 1));
  parallel_for(0, tasks, grain, [&](int64_t b, int64_t e) {
    std::vector<A> acc(size_t(std::min(inner, kBlock)));
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / blocks, j0 = (t % blocks) * kBlock;
      const int64_t w = std::min(kBlock, inner - j0);
      const int64_t base = o * n * inner + j0;
      std::fill(acc.begin(), acc.begin() + w, A(0));
      for (int64_t d = 0; d < n; ++d) {
        const int64_t k = base + d * inner;
        for (int64_t j = 0; j < w; ++j) acc[j] += log ? A(gp[k + j]) : A(gp[k + j]) * A(yp[k + j]);
      }
      for (int64_t d = 0; d < n; ++d) {
        const int64_t k = base + d * inner;
        if (log) {
          for (int64_t j = 0; j < w; ++j)
            out[k + j] = T(A(gp[k + j]) - vec::exp<A>(A(yp[k + j])) * acc[j]);
        } else {
          for (int64_t j = 0; j < w; ++j) out[k + j] = T(A(yp[k + j]) * (A(gp[k + j]) - acc[j]));
        }
      }
    }
  });
}

void softmax_kernel(const Tensor& out, const Tensor& in, SoftmaxShape s, bool log) {
  dispatch_floating(in.dtype(), log ? "log_softmax" : "softmax", [&](auto tag) {
    softmax_typed<typename decltype(tag)::type>(out, in, s, log);
  });
}

void softmax_backward_kernel(const Tensor& gx, const Tensor& g, const Tensor& y, SoftmaxShape s,
                             bool log) {
  dispatch_floating(y.dtype(), log ? "log_softmax_backward" : "softmax_backward", [&](auto tag) {
    softmax_backward_typed<typename decltype(tag)::type>(gx, g, y, s, log);
  });
}

// ---- pointwise activations ---------------------------------------------------------

// The activation lambdas are forced inline into their loops: this file instantiates
// some 120 of them, past GCC's unit-growth limit, and an out-of-line call per element
// keeps the loop scalar.
#define EMBER_ACT_INLINE __attribute__((always_inline))

constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)
constexpr double kGeluBeta = 0.79788456080286535588;    // sqrt(2 / pi)
constexpr double kGeluKappa = 0.044715;

/// The loops of the activations: loops.h's unary / binary loops, but the functor is
/// copied into a local inside the contiguous loop. A lambda's captured constants
/// (alpha, beta, ...) otherwise stay loads from the closure in memory, which GCC cannot
/// prove the output stores leave alone, and the loop stays scalar.
template <typename T, typename F>
void act_unary_loop(TensorIterator& it, F f) {
  using A = opmath_t<T>;
  const bool stream = stream_output(it);
  it.for_each([f, stream](char** d, const int64_t* s, int64_t n) {
    if (s[0] == sizeof(T) && s[1] == sizeof(T)) {
      const T* __restrict x = reinterpret_cast<const T*>(d[1]);
      contiguous_out(stream, reinterpret_cast<T*>(d[0]), n,
                     [&](T* __restrict o, int64_t b, int64_t e) {
                       const F fl = f;
                       for (int64_t i = b; i < e; ++i) o[i - b] = T(fl(A(x[i])));
                     });
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(d[0] + i * s[0]) =
            T(f(A(*reinterpret_cast<const T*>(d[1] + i * s[1]))));
    }
  });
}

template <typename T, typename F>
void act_binary_loop(TensorIterator& it, F f) {
  using A = opmath_t<T>;
  const bool stream = stream_output(it);
  it.for_each([f, stream](char** d, const int64_t* s, int64_t n) {
    if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T)) {
      const T* __restrict g = reinterpret_cast<const T*>(d[1]);
      const T* __restrict x = reinterpret_cast<const T*>(d[2]);
      contiguous_out(stream, reinterpret_cast<T*>(d[0]), n,
                     [&](T* __restrict o, int64_t b, int64_t e) {
                       const F fl = f;
                       for (int64_t i = b; i < e; ++i) o[i - b] = T(fl(A(g[i]), A(x[i])));
                     });
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(d[0] + i * s[0]) =
            T(f(A(*reinterpret_cast<const T*>(d[1] + i * s[1])),
                A(*reinterpret_cast<const T*>(d[2] + i * s[2]))));
    }
  });
}

template <typename A>
inline A sigmoid_of(A x) {
  return A(1) / (A(1) + vec::exp<A>(-x));
}

/// Runs `f(tag-typed constants...)` for the forward of `act` on the iterator (out, x).
template <typename T>
void activation_typed(TensorIterator& it, Act act, ActParams p) {
  using A = opmath_t<T>;
  const A a = A(p.a), b = A(p.b), c = A(p.c);
  switch (act) {
    case Act::gelu:
      if constexpr (std::is_same<A, float>::value)
        return act_unary_loop<T>(it, [](float x) EMBER_ACT_INLINE {
          float g;
          const float q = vec::normal_tail_f(x, g);
          return x * (x >= 0.0f ? 1.0f - q : q);
        });
      return act_unary_loop<T>(it, [](A x) EMBER_ACT_INLINE {
        return A(0.5) * x * (A(1) + vec::erf<A>(x * A(kSqrt1_2)));
      });
    case Act::gelu_tanh:
      return act_unary_loop<T>(it, [](A x) EMBER_ACT_INLINE {
        const A inner = A(kGeluBeta) * (x + A(kGeluKappa) * x * x * x);
        return A(0.5) * x * (A(1) + vec::tanh<A>(inner));
      });
    case Act::silu:
      return act_unary_loop<T>(it,
                               [](A x) EMBER_ACT_INLINE { return x / (A(1) + vec::exp<A>(-x)); });
    case Act::softplus:  // a = beta, b = threshold
      return act_unary_loop<T>(it, [a, b](A x) EMBER_ACT_INLINE {
        const A z = x * a;
        return z > b ? x : vec::log1p<A>(vec::exp<A>(z)) / a;
      });
    case Act::mish:
      return act_unary_loop<T>(
          it, [](A x) EMBER_ACT_INLINE { return x * vec::tanh<A>(vec::log1p<A>(vec::exp<A>(x))); });
    case Act::elu: {  // a = alpha, b = scale, c = input_scale
      const A neg = a * b;
      return act_unary_loop<T>(it, [neg, b, c](A x) EMBER_ACT_INLINE {
        return x <= A(0) ? vec::expm1<A>(x * c) * neg : x * b;
      });
    }
    case Act::leaky_relu:
      return act_unary_loop<T>(it, [a](A x) EMBER_ACT_INLINE { return x > A(0) ? x : x * a; });
    case Act::hardtanh:
      return act_unary_loop<T>(
          it, [a, b](A x) EMBER_ACT_INLINE { return x <= a ? a : (x >= b ? b : x); });
    case Act::hardswish:
      return act_unary_loop<T>(it,
                               [](A x) EMBER_ACT_INLINE {  // x * clamp(x + 3, 0, 6) / 6, as PyTorch
                                 A c = x + A(3);
                                 c = c < A(0) ? A(0) : c;
                                 c = c > A(6) ? A(6) : c;
                                 return x * c / A(6);
                               });
    case Act::hardsigmoid:
      return act_unary_loop<T>(it, [](A x) EMBER_ACT_INLINE {
        return x <= A(-3) ? A(0) : (x >= A(3) ? A(1) : x / A(6) + A(0.5));
      });
    case Act::logsigmoid:  // min(x, 0) - log1p(exp(-|x|)): never overflows
      return act_unary_loop<T>(it, [](A x) EMBER_ACT_INLINE {
        const A m = x < A(0) ? x : A(0);
        return (x != x ? x : m) - vec::log1p<A>(vec::exp<A>(-std::fabs(x)));
      });
    case Act::hardshrink:
      return act_unary_loop<T>(it,
                               [a](A x) EMBER_ACT_INLINE { return x >= -a && x <= a ? A(0) : x; });
    case Act::softshrink:  // 0 * x in the dead zone keeps a NaN, as PyTorch
      return act_unary_loop<T>(
          it, [a](A x) EMBER_ACT_INLINE { return x > a ? x - a : (x < -a ? x + a : A(0) * x); });
    case Act::threshold:
      return act_unary_loop<T>(it, [a, b](A x) EMBER_ACT_INLINE { return x <= a ? b : x; });
    default:
      EMBER_ERROR("activation: unknown activation ", int(act));
  }
}

/// gx = g * act'(x) on the iterator (gx, g, x). Every untaken branch is a select,
/// so a NaN / inf gradient never leaks into the zeros (0, not 0 * inf).
template <typename T>
void activation_backward_typed(TensorIterator& it, Act act, ActParams p, bool is_result) {
  using A = opmath_t<T>;
  const A a = A(p.a), b = A(p.b), c = A(p.c);
  switch (act) {
    case Act::gelu:
      if constexpr (std::is_same<A, float>::value)
        return act_binary_loop<T>(it, [](float g, float x) EMBER_ACT_INLINE {
          float e;
          const float q = vec::normal_tail_f(x, e);
          const float cdf = x >= 0.0f ? 1.0f - q : q;
          return g * (cdf + x * (e * float(kInvSqrt2Pi)));
        });
      return act_binary_loop<T>(it, [](A g, A x) EMBER_ACT_INLINE {
        const A cdf = A(0.5) * (A(1) + vec::erf<A>(x * A(kSqrt1_2)));
        const A pdf = vec::exp<A>(A(-0.5) * x * x) * A(kInvSqrt2Pi);
        return g * (cdf + x * pdf);
      });
    case Act::gelu_tanh:
      return act_binary_loop<T>(it, [](A g, A x) EMBER_ACT_INLINE {
        const A x2 = x * x;
        const A t = vec::tanh<A>(A(kGeluBeta) * (x + A(kGeluKappa) * x2 * x));
        const A du = A(kGeluBeta) * (A(1) + A(3 * kGeluKappa) * x2);
        return g * (A(0.5) * (A(1) + t) + A(0.5) * x * (A(1) - t * t) * du);
      });
    case Act::silu:
      return act_binary_loop<T>(it, [](A g, A x) EMBER_ACT_INLINE {
        const A s = sigmoid_of(x);
        return g * s * (A(1) + x * (A(1) - s));
      });
    case Act::softplus:  // a = beta, b = threshold
      return act_binary_loop<T>(it,
                                [a, b](A g, A x) EMBER_ACT_INLINE {  // g * sigmoid(z): no inf / inf
                                  const A z = x * a;
                                  return z > b ? g : g / (A(1) + vec::exp<A>(-z));
                                });
    case Act::mish:
      return act_binary_loop<T>(it, [](A g, A x) EMBER_ACT_INLINE {
        const A s = sigmoid_of(x);
        const A t = vec::tanh<A>(vec::log1p<A>(vec::exp<A>(x)));
        return g * (t + x * s * (A(1) - t * t));
      });
    case Act::elu: {  // a = alpha, b = scale, c = input_scale
      const A neg = a * b;
      if (is_result)  // y = neg * (exp(x c) - 1) where y <= 0, so exp(x c) = y / neg + 1
        return act_binary_loop<T>(it, [neg, b, c](A g, A y) EMBER_ACT_INLINE {
          return y <= A(0) ? g * c * (y + neg) : g * b;
        });
      return act_binary_loop<T>(it, [neg, b, c](A g, A x) EMBER_ACT_INLINE {
        return x <= A(0) ? g * c * neg * vec::exp<A>(x * c) : g * b;
      });
    }
    case Act::leaky_relu:
      return act_binary_loop<T>(it,
                                [a](A g, A x) EMBER_ACT_INLINE { return x > A(0) ? g : g * a; });
    case Act::hardtanh:
      return act_binary_loop<T>(
          it, [a, b](A g, A x) EMBER_ACT_INLINE { return x <= a || x >= b ? A(0) : g; });
    case Act::hardswish:
      return act_binary_loop<T>(it, [](A g, A x) EMBER_ACT_INLINE {
        return x < A(-3) ? A(0) : (x <= A(3) ? g * (x / A(3) + A(0.5)) : g);
      });
    case Act::hardsigmoid:
      return act_binary_loop<T>(
          it, [](A g, A x) EMBER_ACT_INLINE { return x > A(-3) && x < A(3) ? g / A(6) : A(0); });
    case Act::logsigmoid:  // sigmoid(-x), from z = exp(-|x|) without overflow
      return act_binary_loop<T>(it, [](A g, A x) EMBER_ACT_INLINE {
        const A z = vec::exp<A>(-std::fabs(x));
        const A q = z / (A(1) + z);
        return g * (x < A(0) ? A(1) - q : q);
      });
    case Act::hardshrink:
    case Act::softshrink:
      return act_binary_loop<T>(
          it, [a](A g, A x) EMBER_ACT_INLINE { return x >= -a && x <= a ? A(0) : g; });
    case Act::threshold:
      return act_binary_loop<T>(it, [a](A g, A x) EMBER_ACT_INLINE { return x <= a ? A(0) : g; });
    default:
      EMBER_ERROR("activation_backward: unknown activation ", int(act));
  }
  (void)c;
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

EMBER_REGISTER_CPU_KERNELS(nn_activation) {
  softmax_stub.fns[int(DeviceType::CPU)] = &softmax_kernel;
  softmax_backward_stub.fns[int(DeviceType::CPU)] = &softmax_backward_kernel;
  activation_stub.fns[int(DeviceType::CPU)] = &activation_kernel;
  activation_backward_stub.fns[int(DeviceType::CPU)] = &activation_backward_kernel;
}

}  // namespace
}  // namespace ember::cpu
