// CUDA kernels of sum / prod / mean, the vector norms and var / std (+ mean), on
// the engine of reduce.cuh. Accumulation follows the CPU kernels: floating sums,
// norms and variances in double (float16/bfloat16 included), integer sums and
// products in int64 wrapping modulo 2^64.
#include <cmath>

#include "ember/backends/cuda/reduce.cuh"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/reduce_math.h"
#include "ember/kernels/registration.h"

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
  reduce_math::dispatch_sum_types(a.out.dtype(), a.in.dtype(), [&](auto itag, auto otag) {
    sum_typed<typename decltype(itag)::type, typename decltype(otag)::type>(a);
  });
}

// ---- norms ------------------------------------------------------------------------------

template <typename T, int Kind>
struct NormOp {
  using acc_t = double;
  using Rule = reduce_math::Norm<Kind>;
  T* out;
  double p;

  __device__ acc_t init() const { return Rule::init(); }
  __device__ acc_t combine(acc_t a, acc_t b) const { return Rule::combine(a, b); }
  __device__ acc_t step(acc_t a, T xv, int64_t) const {
    return Rule::step(a, double(opmath_t<T>(xv)), p);
  }
  __device__ void store(const acc_t& a, int64_t k) const { out[k] = to_out<T>(Rule::finish(a, p)); }
};

void norm_kernel(const ReduceArgs& a) {
  dispatch_floating(a.in.dtype(), "norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce_math::with_norm_kind(a.p, [&](auto kind) {
      run_reduce<T>(a.in, a.mask,
                    NormOp<T, decltype(kind)::value>{reinterpret_cast<T*>(a.out.data_ptr()), a.p});
    });
  });
}

// ---- var / std: Welford per thread, Chan's formula across threads, in double ---------------

template <typename T, bool Std>
struct VarOp {
  using acc_t = reduce_math::Welford;
  T* out;
  T* mean_out;  // may be null
  double correction;

  __device__ acc_t init() const { return {0.0, 0.0, 0}; }
  __device__ acc_t step(acc_t a, T xv, int64_t) const {
    return reduce_math::welford_step(a, double(opmath_t<T>(xv)));
  }
  __device__ acc_t combine(acc_t a, acc_t b) const { return reduce_math::welford_combine(a, b); }
  __device__ void store(const acc_t& a, int64_t k) const {
    out[k] = to_out<T>(reduce_math::welford_finish(a, correction, Std));
    if (mean_out) mean_out[k] = to_out<T>(reduce_math::welford_mean(a));
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

EMBER_REGISTER_KERNELS(CUDA, reduce_sum) {
  constexpr int cuda = int(DeviceType::CUDA);
  sum_stub.fns[cuda] = &sum_kernel;
  norm_stub.fns[cuda] = &norm_kernel;
  var_stub.fns[cuda] = &var_kernel;
}

}  // namespace ember::cuda
