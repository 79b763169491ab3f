// CUDA kernels of sum / prod / mean, the vector norms and var / std (+ mean), on
// the engine of reduce.cuh. Accumulation follows the CPU kernels: floating sums,
// norms and variances in double (float16/bfloat16 included), integer sums and
// products in int64 wrapping modulo 2^64.
#include <cmath>

#include "ember/backends/cuda/reduce.cuh"
#include "ember/kernels/dispatch.h"

namespace ember::cuda {
namespace {

template <typename T, typename O, bool Prod>
struct SumOp {
  static constexpr bool kFloat =
      std::is_floating_point<opmath_t<T>>::value || std::is_floating_point<opmath_t<O>>::value;
  using acc_t = std::conditional_t<kFloat, double, int64_t>;
  O* out;
  double scale;

  __device__ acc_t init() const { return acc_t(Prod ? 1 : 0); }
  __device__ acc_t combine(acc_t a, acc_t b) const {
    if constexpr (std::is_integral<acc_t>::value)  // wraps on overflow, like PyTorch
      return Prod ? acc_t(uint64_t(a) * uint64_t(b)) : acc_t(uint64_t(a) + uint64_t(b));
    else
      return Prod ? a * b : a + b;
  }
  __device__ acc_t step(acc_t a, T x, int64_t) const { return combine(a, acc_t(opmath_t<T>(x))); }
  __device__ void store(const acc_t& a, int64_t k) const {
    if constexpr (std::is_integral<acc_t>::value)
      out[k] = to_out<O>(a);
    else
      out[k] = to_out<O>(a * scale);
  }
};

template <typename T, typename O>
void sum_typed(const ReduceArgs& a) {
  O* out = reinterpret_cast<O*>(a.out.data_ptr());
  if (SumKind(a.kind) == SumKind::Prod)
    run_reduce<T>(a.in, a.mask, SumOp<T, O, true>{out, 1.0});
  else
    run_reduce<T>(a.in, a.mask, SumOp<T, O, false>{out, a.scale});
}

void sum_kernel(const ReduceArgs& a) {
  const DType od = a.out.dtype(), id = a.in.dtype();
  dispatch_all(od, "sum", [&](auto otag) {
    using O = typename decltype(otag)::type;
    if (id == od) return sum_typed<O, O>(a);
    if constexpr (std::is_same<O, int64_t>::value) {
      switch (id) {
        case DType::Bool:
          return sum_typed<bool, O>(a);
        case DType::UInt8:
          return sum_typed<uint8_t, O>(a);
        case DType::Int8:
          return sum_typed<int8_t, O>(a);
        case DType::Int16:
          return sum_typed<int16_t, O>(a);
        case DType::Int32:
          return sum_typed<int32_t, O>(a);
        default:
          break;
      }
    }
    EMBER_ERROR("sum kernel: unsupported dtypes ", dtype_name(id), " -> ", dtype_name(od));
  });
}

// ---- norms ------------------------------------------------------------------------------

enum NormKind { kL0, kL1, kL2, kLinf, kLninf, kLp };

template <typename T, int Kind>
struct NormOp {
  using acc_t = double;
  T* out;
  double p;

  __device__ acc_t init() const { return Kind == kLninf ? double(INFINITY) : 0.0; }
  __device__ acc_t combine(acc_t a, acc_t b) const {
    if constexpr (Kind == kLinf)
      return (b != b || b > a) ? b : a;
    else if constexpr (Kind == kLninf)
      return (b != b || b < a) ? b : a;
    else
      return a + b;
  }
  __device__ acc_t step(acc_t a, T xv, int64_t) const {
    const double x = double(opmath_t<T>(xv));
    const double ax = fabs(x);
    if constexpr (Kind == kL0)
      return a + double(x != 0);
    else if constexpr (Kind == kL1)
      return a + ax;
    else if constexpr (Kind == kL2)
      return a + x * x;
    else if constexpr (Kind == kLp)
      return a + pow(ax, p);
    else
      return combine(a, ax);
  }
  __device__ void store(const acc_t& a, int64_t k) const {
    double r = a;
    if constexpr (Kind == kL2)
      r = sqrt(a);
    else if constexpr (Kind == kLp)
      r = pow(a, 1.0 / p);
    out[k] = to_out<T>(r);
  }
};

void norm_kernel(const ReduceArgs& a) {
  dispatch_floating(a.in.dtype(), "norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = reinterpret_cast<T*>(a.out.data_ptr());
    const double p = a.p;
    if (p == 0)
      run_reduce<T>(a.in, a.mask, NormOp<T, kL0>{out, p});
    else if (p == 1)
      run_reduce<T>(a.in, a.mask, NormOp<T, kL1>{out, p});
    else if (p == 2)
      run_reduce<T>(a.in, a.mask, NormOp<T, kL2>{out, p});
    else if (std::isinf(p) && p > 0)
      run_reduce<T>(a.in, a.mask, NormOp<T, kLinf>{out, p});
    else if (std::isinf(p))
      run_reduce<T>(a.in, a.mask, NormOp<T, kLninf>{out, p});
    else
      run_reduce<T>(a.in, a.mask, NormOp<T, kLp>{out, p});
  });
}

// ---- var / std: Welford per thread, Chan's formula across threads, in double ---------------

struct VarAcc {
  double mean, m2;
  int64_t n;
};

template <typename T, bool Std>
struct VarOp {
  using acc_t = VarAcc;
  T* out;
  T* mean_out;  // may be null
  double correction;

  __device__ acc_t init() const { return {0.0, 0.0, 0}; }
  __device__ acc_t step(acc_t a, T xv, int64_t) const {
    const double x = double(opmath_t<T>(xv));
    const int64_t n = a.n + 1;
    const double d = x - a.mean;
    const double mean = a.mean + d / double(n);
    return {mean, a.m2 + d * (x - mean), n};
  }
  __device__ acc_t combine(acc_t a, acc_t b) const {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    const int64_t n = a.n + b.n;
    const double d = b.mean - a.mean, fb = double(b.n) / double(n);
    return {a.mean + d * fb, a.m2 + b.m2 + d * d * double(a.n) * fb, n};
  }
  __device__ void store(const acc_t& a, int64_t k) const {
    double v = a.m2 / fmax(0.0, double(a.n) - correction);
    if (Std) v = sqrt(v);
    out[k] = to_out<T>(v);
    if (mean_out) mean_out[k] = to_out<T>(a.n ? a.mean : double(NAN));
  }
};

void var_kernel(const ReduceArgs& a) {
  dispatch_floating(a.in.dtype(), "var", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = reinterpret_cast<T*>(a.out.data_ptr());
    T* mean = a.out2.defined() ? reinterpret_cast<T*>(a.out2.data_ptr()) : nullptr;
    if (VarKind(a.kind) == VarKind::Std)
      run_reduce<T>(a.in, a.mask, VarOp<T, true>{out, mean, a.p});
    else
      run_reduce<T>(a.in, a.mask, VarOp<T, false>{out, mean, a.p});
  });
}

}  // namespace

void register_reduce_kernels() {
  constexpr int cuda = int(DeviceType::CUDA);
  sum_stub.fns[cuda] = &sum_kernel;
  norm_stub.fns[cuda] = &norm_kernel;
  var_stub.fns[cuda] = &var_kernel;
  register_reduce_minmax_kernels();
}

}  // namespace ember::cuda
