// CPU kernels of var/std (+ mean), median and the cumulative scans.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "ember/backends/cpu/capability.h"
#include "ember/backends/cpu/reduce_engine.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/reduce_math.h"
#include "ember/kernels/stubs/reduce.h"

namespace ember::cpu {
namespace {

// var/std: contiguous rows take two passes (mean, then squared deviations),
// which vectorizes and is exact to rounding; elsewhere Welford's update; parts
// merge with Chan's formula. Accumulates in double.
template <typename T, bool Std>
struct VarOp {
  using acc_t = reduce_math::Welford;
  static constexpr bool kIndexed = false;
  static constexpr bool kHasRow = true;
  T* out;
  T* mean_out;  // may be null
  double correction;

  acc_t init() const { return {0.0, 0.0, 0}; }
  acc_t step(acc_t a, T xv, int64_t) const { return reduce_math::welford_step(a, double(up(xv))); }
  acc_t combine(acc_t a, acc_t b) const { return reduce_math::welford_combine(a, b); }
  acc_t row(const T* x, int64_t n, int64_t) const {
    if (n == 0) return init();
    constexpr int L = 8;
    double s[L] = {}, q[L] = {};
    int64_t i = 0;
    for (; i + L <= n; i += L)
      for (int j = 0; j < L; ++j) s[j] += double(up(x[i + j]));
    double sum = 0;
    for (int j = 0; j < L; ++j) sum += s[j];
    for (; i < n; ++i) sum += double(up(x[i]));
    const double mean = sum / double(n);
    for (i = 0; i + L <= n; i += L)
      for (int j = 0; j < L; ++j) {
        const double d = double(up(x[i + j])) - mean;
        q[j] += d * d;
      }
    double m2 = 0;
    for (int j = 0; j < L; ++j) m2 += q[j];
    for (; i < n; ++i) {
      const double d = double(up(x[i])) - mean;
      m2 += d * d;
    }
    return {mean, m2, n};
  }
  void store(const acc_t& a, int64_t off) const {
    out[off] = to_out<T>(reduce_math::welford_finish(a, correction, Std));
    if (mean_out) mean_out[off] = to_out<T>(reduce_math::welford_mean(a));
  }
};

void var_kernel(const ReduceArgs& a) {
  dispatch_floating(a.in.dtype(), "var", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = a.out.data<T>();
    T* mean = a.out2.defined() ? a.out2.data<T>() : nullptr;
    if (VarKind(a.kind) == VarKind::Std)
      run_reduce<T>(a.in, a.out, a.mask, VarOp<T, true>{out, mean, a.p});
    else
      run_reduce<T>(a.in, a.out, a.mask, VarOp<T, false>{out, mean, a.p});
  });
}

// Median of each row of a contiguous [rows, n] input: the lower median
// ((n - 1) / 2-th smallest); a row holding NaN gives its first NaN.
void median_kernel(const ReduceArgs& a) {
  const int64_t rows = a.in.sizes()[0], n = a.in.sizes()[1];
  dispatch_numeric(a.in.dtype(), "median", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const T* x = a.in.data<T>();
    T* out = a.out.data<T>();
    int64_t* idx = a.out2.defined() ? a.out2.data<int64_t>() : nullptr;
    parallel_for(0, rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1)),
                 [&](int64_t b, int64_t e) {
                   std::vector<std::pair<M, int64_t>> buf(static_cast<size_t>(n));
                   for (int64_t r = b; r < e; ++r) {
                     const T* p = x + r * n;
                     int64_t pick = -1;
                     M val = M(0);
                     for (int64_t j = 0; j < n; ++j)
                       if (fn::is_nan(M(p[j]))) {
                         pick = j;
                         val = M(p[j]);
                         break;
                       }
                     if (pick < 0) {
                       for (int64_t j = 0; j < n; ++j) buf[size_t(j)] = {M(p[j]), j};
                       auto k = buf.begin() + (n - 1) / 2;
                       std::nth_element(
                           buf.begin(), k, buf.end(),
                           [](const auto& u, const auto& v) { return u.first < v.first; });
                       val = k->first;
                       pick = k->second;
                     }
                     out[r] = T(val);
                     if (idx) idx[r] = pick;
                   }
                 });
  });
}

// log(exp(a) + exp(b)) without overflow: the larger operand plus log1p of the other's
// exp relative to it. -inf is the identity; a NaN propagates; +inf absorbs.
template <typename A>
inline A log_add_exp(A a, A b) {
  if (std::isnan(a) || std::isnan(b)) return a + b;
  A m = a > b ? a : b;
  if (std::isinf(m)) return m;  // both -inf, or one +inf
  return m + std::log1p(std::exp(-std::fabs(a - b)));
}

// In-place inclusive scan of a contiguous tensor viewed as [O, L, I] (L: the
// scanned dim). Floats accumulate in double (float for 16-bit floats, as
// PyTorch's CPU kernel), integers in int64 with wrap-around. K: ScanKind.
template <typename T, int K>
void scan_typed(const Tensor& t, int64_t dim) {
  using A =
      std::conditional_t<std::is_floating_point<opmath_t<T>>::value,
                         std::conditional_t<std::is_same<opmath_t<T>, T>::value, double, float>,
                         int64_t>;
  constexpr bool Prod = K == int(ScanKind::Cumprod);
  constexpr bool Lse = K == int(ScanKind::LogCumSumExp);
  auto op = [](A a, A b) -> A {
    if constexpr (std::is_integral<A>::value)
      return Prod ? A(uint64_t(a) * uint64_t(b)) : A(uint64_t(a) + uint64_t(b));
    else if constexpr (Lse)
      return log_add_exp(a, b);
    else
      return Prod ? a * b : a + b;
  };
  const A init = Lse ? -std::numeric_limits<A>::infinity() : A(Prod ? 1 : 0);
  int64_t O = 1, I = 1;
  const int64_t L = t.sizes()[dim];
  for (int64_t d = 0; d < dim; ++d) O *= t.sizes()[d];
  for (int64_t d = dim + 1; d < t.dim(); ++d) I *= t.sizes()[d];
  if (t.numel() == 0) return;
  T* p = t.data<T>();
  if (I == 1) {
    parallel_for(0, O, std::max<int64_t>(1, kGrainSize / L), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        T* row = p + o * L;
        A acc = init;
        for (int64_t l = 0; l < L; ++l) {
          acc = op(acc, A(up(row[l])));
          row[l] = to_out<T>(acc);
        }
      }
    });
    return;
  }
  constexpr int64_t C = 256;
  const int64_t nch = (I + C - 1) / C;
  parallel_for(0, O * nch, std::max<int64_t>(1, kGrainSize / (C * L)), [&](int64_t b, int64_t e) {
    A acc[C];
    for (int64_t it = b; it < e; ++it) {
      const int64_t o = it / nch, c0 = (it % nch) * C, len = std::min(C, I - c0);
      for (int64_t c = 0; c < len; ++c) acc[c] = init;
      T* base = p + o * L * I + c0;
      for (int64_t l = 0; l < L; ++l) {
        T* row = base + l * I;
        for (int64_t c = 0; c < len; ++c) {
          acc[c] = op(acc[c], A(up(row[c])));
          row[c] = to_out<T>(acc[c]);
        }
      }
    }
  });
}

void scan_kernel(const ReduceArgs& a) {
  const int64_t dim = a.mask[0];
  reduce_math::dispatch_scan(a.kind, a.out.dtype(), [&](auto tag, auto kind) {
    scan_typed<typename decltype(tag)::type, decltype(kind)::value>(a.out, dim);
  });
}

EMBER_REGISTER_CPU_KERNELS(reduce_stats) {
  constexpr int cpu = int(DeviceType::CPU);
  var_stub.fns[cpu] = &var_kernel;
  median_stub.fns[cpu] = &median_kernel;
  scan_stub.fns[cpu] = &scan_kernel;
}

}  // namespace
}  // namespace ember::cpu
