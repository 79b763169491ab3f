// CPU kernels for the ops in kernels/ops.def: the loops (loops.h) plugged into the
// backend-neutral dtype policy of kernels/elementwise_kernels.h, registered into the
// stubs of kernels/elementwise.h; plus copy, where and fill.
// Float compares may be if-converted into SIMD selects (as in nn_activation.cpp): without
// this GCC keeps the branch-free exp / tanh of nn_vec.h scalar. FP exceptions are never
// inspected in ember, and the results do not change.
#pragma GCC optimize("no-trapping-math")
#include "ember/kernels/elementwise_kernels.h"
#include "ember/backends/cpu/capability.h"
#include "ember/backends/cpu/loops.h"
#include "ember/backends/cpu/nn_vec.h"

namespace ember::cpu {
namespace {

// Note [Vectorized float transcendentals]
// The shared functors (kernels/functors.h) call std::exp, std::tanh, ...: one libm call per
// element, which keeps a loop scalar. For float math (float, and half/bfloat16, which compute
// in float) this backend swaps in the branch-free versions of nn_vec.h, which GCC vectorizes:
// 2.5-6x faster on one thread, within a few ulp. Double keeps libm. exp_f scales by 2^k as
// two normal factors rather than selecting among normal, subnormal and overflow results:
// exp of 1M floats on one thread went from 1.03 to 0.59 ms (PyTorch 1.08), sigmoid from
// 1.30 to 0.80 ms (0.98), and everything built on it (silu, tanh, elu, softplus) with it.
template <typename F>
struct VecFloat {
  static constexpr bool kHas = false;
};
#define EMBER_VEC_FLOAT(Functor, expr)                        \
  template <>                                                 \
  struct VecFloat<fn::Functor> {                              \
    static constexpr bool kHas = true;                        \
    static EMBER_VEC_INLINE float f(float x) { return expr; } \
  };
EMBER_VEC_FLOAT(Exp, vec::exp_f(x))
EMBER_VEC_FLOAT(Expm1, vec::expm1_f(x))
EMBER_VEC_FLOAT(Tanh, vec::tanh_f(x))
EMBER_VEC_FLOAT(Sigmoid, 1.0f / (1.0f + vec::exp_f(-x)))
#undef EMBER_VEC_FLOAT

// The loops this backend gives the backend-neutral kernels of
// kernels/elementwise_kernels.h (dtype policy per Kind, casts).
struct CpuLoops {
  template <typename Out, typename In, typename F>
  static void unary(TensorIterator& it, F f) {
    if constexpr (VecFloat<F>::kHas && std::is_same<opmath_t<In>, float>::value)
      unary_loop<Out, In>(it,
                          [](float x) __attribute__((always_inline)) { return VecFloat<F>::f(x); });
    else if constexpr (std::is_same<F, elementwise::CastTo<Half, In>>::value)
      // The cast's float result is rounded to float16 by the loop, eight at a time with F16C
      // (Note [Half loops]), instead of by Half's portable conversion in the functor.
      unary_loop<Out, In>(it,
                          [](opmath_t<In> x) __attribute__((always_inline)) { return float(x); });
    else
      unary_loop<Out, In>(it, f);
  }
  template <typename Out, typename In, typename F>
  static void binary(TensorIterator& it, F f) {
    if constexpr (std::is_same<F, fn::Pow>::value && std::is_floating_point<opmath_t<In>>::value) {
      if (it.numel() > 0 && it.tensor(2).numel() == 1 && pow_by_scalar<Out, In>(it)) return;
    }
    binary_loop<Out, In>(it, f);
  }

  // Note [pow by a scalar]
  // x ** e with one exponent for every element: the exponents models use take arithmetic
  // instead of a libm pow call per element (18x faster at e = 2, which the loop then
  // vectorizes), as PyTorch's CPU kernel does: 2 -> x * x, 3 -> x * x * x, 0.5 -> sqrt,
  // -0.5 -> 1 / sqrt, -1 -> 1 / x, -2 -> 1 / (x * x), 1 -> x. Like PyTorch's, sqrt gives
  // -0 for -0 and NaN for -inf where pow(x, 0.5) gives +0 and +inf; the rest agree with
  // pow up to one rounding. False: no fast form for this exponent.
  template <typename Out, typename In>
  static bool pow_by_scalar(TensorIterator& it) {
    using A = opmath_t<In>;
    const A e = A(*reinterpret_cast<const In*>(it.data(2)));
    auto run = [&](auto g) {
      binary_loop<Out, In>(it, g);
      return true;
    };
    if (e == A(2)) return run([](A a, A) __attribute__((always_inline)) { return a * a; });
    if (e == A(3)) return run([](A a, A) __attribute__((always_inline)) { return a * a * a; });
    if (e == A(0.5)) return run([](A a, A) __attribute__((always_inline)) { return std::sqrt(a); });
    if (e == A(-0.5))
      return run([](A a, A) __attribute__((always_inline)) { return A(1) / std::sqrt(a); });
    if (e == A(-1)) return run([](A a, A) __attribute__((always_inline)) { return A(1) / a; });
    if (e == A(-2))
      return run([](A a, A) __attribute__((always_inline)) { return A(1) / (a * a); });
    if (e == A(1)) return run([](A a, A) __attribute__((always_inline)) { return a; });
    return false;
  }
};

// Casting copy between any two dtypes.
void copy_kernel(TensorIterator& it) {
  DType od = it.dtype(0), id = it.dtype(1);
  if (od == id) {
    int64_t es = element_size(od);
    it.for_each([es](char** d, const int64_t* s, int64_t n) {
      if (s[0] == es && s[1] == es) {
        std::memcpy(d[0], d[1], size_t(n * es));
      } else if (s[0] == es && s[1] == 0) {
        // One source element for a contiguous run: a fill, which vectorizes (the contiguous()
        // of an expanded gradient, as sum's backward makes, took 4x a copy one by one).
        switch (es) {
          case 1:
            std::memset(d[0], *reinterpret_cast<const uint8_t*>(d[1]), size_t(n));
            break;
          case 2:
            std::fill_n(reinterpret_cast<uint16_t*>(d[0]), n,
                        *reinterpret_cast<const uint16_t*>(d[1]));
            break;
          case 4:
            std::fill_n(reinterpret_cast<uint32_t*>(d[0]), n,
                        *reinterpret_cast<const uint32_t*>(d[1]));
            break;
          default:
            std::fill_n(reinterpret_cast<uint64_t*>(d[0]), n,
                        *reinterpret_cast<const uint64_t*>(d[1]));
            break;
        }
      } else {
        switch (es) {
          case 1:
            for (int64_t i = 0; i < n; ++i) d[0][i * s[0]] = d[1][i * s[1]];
            break;
          case 2:
            for (int64_t i = 0; i < n; ++i)
              *reinterpret_cast<uint16_t*>(d[0] + i * s[0]) =
                  *reinterpret_cast<const uint16_t*>(d[1] + i * s[1]);
            break;
          case 4:
            for (int64_t i = 0; i < n; ++i)
              *reinterpret_cast<uint32_t*>(d[0] + i * s[0]) =
                  *reinterpret_cast<const uint32_t*>(d[1] + i * s[1]);
            break;
          default:
            for (int64_t i = 0; i < n; ++i)
              *reinterpret_cast<uint64_t*>(d[0] + i * s[0]) =
                  *reinterpret_cast<const uint64_t*>(d[1] + i * s[1]);
            break;
        }
      }
    });
    return;
  }
  // float16 <-> float32, contiguous: one conversion pass (Note [Half loops]).
  if (it.is_contiguous() && ((od == DType::Float32 && id == DType::Float16) ||
                             (od == DType::Float16 && id == DType::Float32))) {
    it.for_each([od](char** d, const int64_t*, int64_t n) {
      if (od == DType::Float32)
        half_to_float(reinterpret_cast<const Half*>(d[1]), reinterpret_cast<float*>(d[0]), n);
      else
        float_to_half(reinterpret_cast<const float*>(d[1]), reinterpret_cast<Half*>(d[0]), n);
    });
    return;
  }
  elementwise::cast_copy<CpuLoops>(it);
}

// One fixed-size element type per width, so the copy is a load and a store (a
// runtime-sized memcpy per element was a library call: 16 ns each).
// A contiguous output and condition; each value operand contiguous or one broadcast value
// (where(mask, 0, grad), relu's backward, is the common case): a loop that vectorizes.
template <typename U, bool AllA, bool AllB>
void where_contiguous(char** d, int64_t n) {
  U* __restrict o = reinterpret_cast<U*>(d[0]);
  // Read as bytes: a bool view of other bytes (x.view(bool)) then still means "nonzero".
  const uint8_t* __restrict c = reinterpret_cast<const uint8_t*>(d[1]);
  const U* __restrict a = reinterpret_cast<const U*>(d[2]);
  const U* __restrict b = reinterpret_cast<const U*>(d[3]);
  const U a0 = *a, b0 = *b;
  // Both values are read and blended by a mask: a select whose loads were conditional
  // stayed a scalar branch.
  for (int64_t i = 0; i < n; ++i) {
    const U av = AllA ? a[i] : a0, bv = AllB ? b[i] : b0;
    const U m = U(U(0) - U(c[i] != 0));
    o[i] = U((av & m) | (bv & U(~m)));
  }
}

template <typename U>
void where_loop(char** d, const int64_t* s, int64_t n) {
  constexpr int64_t es = sizeof(U);
  if (n > 0 && s[0] == es && s[1] == 1 && (s[2] == es || s[2] == 0) && (s[3] == es || s[3] == 0)) {
    if (s[2] == es && s[3] == es) return where_contiguous<U, true, true>(d, n);
    if (s[2] == es) return where_contiguous<U, true, false>(d, n);
    if (s[3] == es) return where_contiguous<U, false, true>(d, n);
    return where_contiguous<U, false, false>(d, n);
  }
  for (int64_t i = 0; i < n; ++i) {
    const bool c = *reinterpret_cast<const uint8_t*>(d[1] + i * s[1]) != 0;  // bytes, as above
    U v;
    std::memcpy(&v, c ? d[2] + i * s[2] : d[3] + i * s[3], sizeof(U));
    std::memcpy(d[0] + i * s[0], &v, sizeof(U));
  }
}

void where_kernel(TensorIterator& it) {
  switch (element_size(it.dtype(0))) {
    case 1:
      return it.for_each(where_loop<uint8_t>);
    case 2:
      return it.for_each(where_loop<uint16_t>);
    case 4:
      return it.for_each(where_loop<uint32_t>);
    default:
      return it.for_each(where_loop<uint64_t>);
  }
}

// lerp (fn::Lerp) in one pass. The contiguous case, with a tensor weight or one weight
// for every element (the optimizers' and EMA's `a.lerp_(b, 0.1)`), vectorizes; the composite
// it replaces was eight ops and 3x PyTorch's time.
template <typename T>
void lerp_loop(char** d, const int64_t* s, int64_t n) {
  using M = opmath_t<T>;
  constexpr int64_t es = sizeof(T);
  const fn::Lerp f;
  if (s[0] == es && s[1] == es && s[2] == es && (s[3] == es || s[3] == 0)) {
    T* __restrict o = reinterpret_cast<T*>(d[0]);
    const T* __restrict a = reinterpret_cast<const T*>(d[1]);
    const T* __restrict b = reinterpret_cast<const T*>(d[2]);
    const T* __restrict w = reinterpret_cast<const T*>(d[3]);
    const bool w1 = s[3] == 0;
    if constexpr (kHalfVec<T>) {
      // float16 through float chunks, converted eight at a time (Note [Half loops])
      float fa[kHalfChunk], fb[kHalfChunk], fw[kHalfChunk];
      const float w0 = float(*w);
      for (int64_t c = 0; c < n; c += kHalfChunk) {
        const int64_t m = std::min(kHalfChunk, n - c);
        half_to_float(a + c, fa, m);
        half_to_float(b + c, fb, m);
        if (w1) {
          for (int64_t j = 0; j < m; ++j) fa[j] = f(fa[j], fb[j], w0);
        } else {
          half_to_float(w + c, fw, m);
          for (int64_t j = 0; j < m; ++j) fa[j] = f(fa[j], fb[j], fw[j]);
        }
        float_to_half(fa, o + c, m);
      }
    } else if (w1) {
      const M w0 = M(*w);
      for (int64_t i = 0; i < n; ++i) o[i] = T(f(M(a[i]), M(b[i]), w0));
    } else {
      for (int64_t i = 0; i < n; ++i) o[i] = T(f(M(a[i]), M(b[i]), M(w[i])));
    }
    return;
  }
  auto at = [&](int k, int64_t i) { return M(*reinterpret_cast<const T*>(d[k] + i * s[k])); };
  for (int64_t i = 0; i < n; ++i)
    *reinterpret_cast<T*>(d[0] + i * s[0]) = T(f(at(1, i), at(2, i), at(3, i)));
}

void lerp_kernel(TensorIterator& it) {
  dispatch_floating(it.dtype(0), "lerp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    it.for_each(lerp_loop<T>);
  });
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

EMBER_REGISTER_CPU_KERNELS(elementwise) {
  constexpr int cpu = int(DeviceType::CPU);
#define EMBER_REG_UNARY(n, F, k) \
  unary_stubs[int(UnaryOp::n)].fns[cpu] = &elementwise::unary_kernel<fn::F, Kind::k, CpuLoops>;
  EMBER_UNARY_OPS(EMBER_REG_UNARY)
#undef EMBER_REG_UNARY
#define EMBER_REG_BINARY(n, F, k) \
  binary_stubs[int(BinaryOp::n)].fns[cpu] = &elementwise::binary_kernel<fn::F, Kind::k, CpuLoops>;
  EMBER_BINARY_OPS(EMBER_REG_BINARY)
#undef EMBER_REG_BINARY
  copy_stub.fns[cpu] = &copy_kernel;
  where_stub.fns[cpu] = &where_kernel;
  lerp_stub.fns[cpu] = &lerp_kernel;
  fill_stub.fns[cpu] = &fill_kernel;
}

}  // namespace
}  // namespace ember::cpu
