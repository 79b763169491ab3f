// The math of the reductions, written once for the CPU engine (backends/cpu/reduce_engine.h)
// and the CUDA engine (backends/cuda/reduce.cuh): the vector norms' accumulation rules, the
// extremes with and without their index, Welford's variance accumulator, and which (input,
// output) dtype pairs the sum kernel takes.
// Each backend wraps these in its engine's Op (init / step / combine / store), so the two
// devices accumulate alike and a fix to the math lands on both.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "ember/kernels/dispatch.h"
#include "ember/kernels/functors.h"
#include "ember/kernels/stubs/reduce.h"

namespace ember::reduce_math {

// ---- vector norms, accumulated in double ---------------------------------------------------

enum NormKind { kL0, kL1, kL2, kLinf, kLninf, kLp };

template <int Kind>
struct Norm {
  EMBER_HOST_DEVICE static double init() {
    return Kind == kLninf ? std::numeric_limits<double>::infinity() : 0.0;
  }
  // inf / -inf norms: the larger / smaller, and a NaN wins
  EMBER_HOST_DEVICE static double combine(double a, double b) {
    if constexpr (Kind == kLinf)
      return (b != b || b > a) ? b : a;
    else if constexpr (Kind == kLninf)
      return (b != b || b < a) ? b : a;
    else
      return a + b;
  }
  EMBER_HOST_DEVICE static double step(double a, double x, double p) {
    const double ax = std::fabs(x);
    if constexpr (Kind == kL0)
      return a + double(x != 0);
    else if constexpr (Kind == kL1)
      return a + ax;
    else if constexpr (Kind == kL2)
      return a + x * x;
    else if constexpr (Kind == kLp)
      return a + std::pow(ax, p);
    else
      return combine(a, ax);
  }
  EMBER_HOST_DEVICE static double finish(double a, double p) {
    if constexpr (Kind == kL2)
      return std::sqrt(a);
    else if constexpr (Kind == kLp)
      return std::pow(a, 1.0 / p);
    else
      return a;
  }
};

/// Calls f(std::integral_constant<int, Kind>{}) with the norm kind of order `p` (host).
template <typename F>
void with_norm_kind(double p, F&& f) {
  if (p == 0)
    f(std::integral_constant<int, kL0>{});
  else if (p == 1)
    f(std::integral_constant<int, kL1>{});
  else if (p == 2)
    f(std::integral_constant<int, kL2>{});
  else if (std::isinf(p) && p > 0)
    f(std::integral_constant<int, kLinf>{});
  else if (std::isinf(p))
    f(std::integral_constant<int, kLninf>{});
  else
    f(std::integral_constant<int, kLp>{});
}

// ---- amax / amin and max / min with indices ------------------------------------------------

/// amax / amin of accumulator type M (opmath): NaN wins, and once an accumulator holds NaN no
/// comparison replaces it. `combine` is branch-free, so that the CPU loop vectorizes.
template <typename M, bool Max>
struct Extreme {
  EMBER_HOST_DEVICE static M init() {
    if constexpr (std::is_same<M, bool>::value)
      return !Max;
    else if constexpr (std::is_floating_point<M>::value)
      return Max ? -std::numeric_limits<M>::infinity() : std::numeric_limits<M>::infinity();
    else
      return Max ? std::numeric_limits<M>::lowest() : std::numeric_limits<M>::max();
  }
  EMBER_HOST_DEVICE static M combine(M a, M b) {
    const bool take = fn::is_nan(b) | (Max ? b > a : b < a);
    return take ? b : a;
  }
};

/// max / min with the index of the extreme: the first position of the extreme, or of the
/// first NaN; an accumulator with index -1 is empty.
template <typename M, bool Max>
struct ArgExtreme {
  struct Acc {
    M v;
    int64_t i;
  };
  EMBER_HOST_DEVICE static Acc init() { return {M(0), -1}; }
  /// Strictly better: keeps the earliest of equals.
  EMBER_HOST_DEVICE static bool better(M x, M v) {
    if (fn::is_nan(v)) return false;
    if (fn::is_nan(x)) return true;
    return Max ? x > v : x < v;
  }
  EMBER_HOST_DEVICE static Acc step(Acc a, M x, int64_t pos) {
    if (a.i < 0 || better(x, a.v)) return {x, pos};
    return a;
  }
  /// Order-insensitive: among equal values (or NaNs) the smaller index wins.
  EMBER_HOST_DEVICE static Acc combine(Acc a, Acc b) {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    if (better(b.v, a.v) || (!better(a.v, b.v) && b.i < a.i)) return b;
    return a;
  }
};

// ---- var / std: Welford's update per element, Chan's formula to merge, in double ---------

struct Welford {
  double mean, m2;
  int64_t n;
};

EMBER_HOST_DEVICE inline Welford welford_step(Welford a, double x) {
  const int64_t n = a.n + 1;
  const double d = x - a.mean;
  const double mean = a.mean + d / double(n);
  return {mean, a.m2 + d * (x - mean), n};
}

EMBER_HOST_DEVICE inline Welford welford_combine(Welford a, Welford b) {
  if (a.n == 0) return b;
  if (b.n == 0) return a;
  const int64_t n = a.n + b.n;
  const double d = b.mean - a.mean, fb = double(b.n) / double(n);
  return {a.mean + d * fb, a.m2 + b.m2 + d * d * double(a.n) * fb, n};
}

/// The variance (or, with `std`, the standard deviation) with Bessel's `correction`; fewer
/// elements than the correction divide by 0 (inf or NaN, as PyTorch).
EMBER_HOST_DEVICE inline double welford_finish(const Welford& a, double correction, bool std) {
  const double dof = double(a.n) - correction;
  const double v = a.m2 / (dof > 0.0 ? dof : 0.0);
  return std ? std::sqrt(v) : v;
}

/// The mean that var_mean / std_mean return: NaN for no elements.
EMBER_HOST_DEVICE inline double welford_mean(const Welford& a) {
  return a.n ? a.mean : std::numeric_limits<double>::quiet_NaN();
}

// ---- sum / prod dtypes ---------------------------------------------------------------------

/// Calls f(TypeTag<I>{}, TypeTag<O>{}) for the sum kernel's input and output types: the same
/// dtype, or a bool or narrower integer input accumulated into int64 (host).
template <typename F>
void dispatch_sum_types(DType od, DType id, F&& f) {
  dispatch_all(od, "sum", [&](auto otag) {
    using O = typename decltype(otag)::type;
    if (id == od) return f(TypeTag<O>{}, otag);
    if constexpr (std::is_same<O, int64_t>::value) {
      switch (id) {
        case DType::Bool:
          return f(TypeTag<bool>{}, otag);
        case DType::UInt8:
          return f(TypeTag<uint8_t>{}, otag);
        case DType::Int8:
          return f(TypeTag<int8_t>{}, otag);
        case DType::Int16:
          return f(TypeTag<int16_t>{}, otag);
        case DType::Int32:
          return f(TypeTag<int32_t>{}, otag);
        default:
          break;
      }
    }
    EMBER_ERROR("sum kernel: unsupported dtypes ", dtype_name(id), " -> ", dtype_name(od));
  });
}

// ---- scans ---------------------------------------------------------------------------------

/// Calls f(TypeTag<T>{}, std::integral_constant<int, kind>{}) for a scan of `kind` (a ScanKind)
/// whose output is `dtype`: logcumsumexp takes floating dtypes, cumsum / cumprod any (host).
template <typename F>
void dispatch_scan(int kind, DType dtype, F&& f) {
  using K = ScanKind;
  if (K(kind) == K::LogCumSumExp) {
    dispatch_floating(dtype, "logcumsumexp", [&](auto tag) {
      f(tag, std::integral_constant<int, int(K::LogCumSumExp)>{});
    });
    return;
  }
  dispatch_all(dtype, "cumsum", [&](auto tag) {
    if (K(kind) == K::Cumprod)
      f(tag, std::integral_constant<int, int(K::Cumprod)>{});
    else
      f(tag, std::integral_constant<int, int(K::Cumsum)>{});
  });
}

}  // namespace ember::reduce_math
