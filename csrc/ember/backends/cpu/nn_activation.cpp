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
#include "ember/kernels/activation_math.h"
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
// The math is kernels/activation_math.h's (Note [Activation math]), shared with CUDA; the
// CPU gives it nn_vec.h's branch-free functions so the loops below vectorize.

using act::kInvSqrt2Pi;
using act::kSqrt1_2;

/// Note [Activation math]'s policy for the CPU.
struct VecMath {
#define EMBER_VEC_MATH(f)       \
  template <typename A>         \
  EMBER_ACT_F static A f(A x) { \
    return vec::f<A>(x);        \
  }
  EMBER_VEC_MATH(exp)
  EMBER_VEC_MATH(expm1)
  EMBER_VEC_MATH(log1p)
  EMBER_VEC_MATH(tanh)
#undef EMBER_VEC_MATH
  template <typename A>
  EMBER_ACT_F static A fabs(A x) {
    return std::fabs(x);
  }
  // float: 1 - Q(x) from nn_vec.h's normal tail, which also gives exp(-x^2 / 2)
  EMBER_ACT_F static float normal_cdf_pdf(float x, float& pdf) {
    float e;
    const float q = vec::normal_tail_f(x, e);
    pdf = e * float(kInvSqrt2Pi);
    return x >= 0.0f ? 1.0f - q : q;
  }
  EMBER_ACT_F static float normal_cdf(float x) {
    float pdf;
    return normal_cdf_pdf(x, pdf);
  }
  EMBER_ACT_F static double normal_cdf(double x) {
    return 0.5 * (1.0 + vec::erf<double>(x * kSqrt1_2));
  }
  EMBER_ACT_F static double normal_cdf_pdf(double x, double& pdf) {
    pdf = vec::exp<double>(-0.5 * x * x) * kInvSqrt2Pi;
    return normal_cdf(x);
  }
};

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
                       unary_span(o, x, b, e, fl);  // float16: Note [Half loops]
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
                       binary_span<true, true>(o, g, x, b, e, fl);  // float16: Note [Half loops]
                     });
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(d[0] + i * s[0]) =
            T(f(A(*reinterpret_cast<const T*>(d[1] + i * s[1])),
                A(*reinterpret_cast<const T*>(d[2] + i * s[2]))));
    }
  });
}

/// The loops activation_math.h's entry points run the functors in.
struct ActLoops {
  template <typename T, typename F>
  static void unary(TensorIterator& it, F f) {
    act_unary_loop<T>(it, f);
  }
  template <typename T, typename F>
  static void binary(TensorIterator& it, F f) {
    act_binary_loop<T>(it, f);
  }
};

EMBER_REGISTER_CPU_KERNELS(nn_activation) {
  softmax_stub.fns[int(DeviceType::CPU)] = &softmax_kernel;
  softmax_backward_stub.fns[int(DeviceType::CPU)] = &softmax_backward_kernel;
  activation_stub.fns[int(DeviceType::CPU)] = &act::activation_kernel<VecMath, ActLoops>;
  activation_backward_stub.fns[int(DeviceType::CPU)] =
      &act::activation_backward_kernel<VecMath, ActLoops>;
}

}  // namespace
}  // namespace ember::cpu
