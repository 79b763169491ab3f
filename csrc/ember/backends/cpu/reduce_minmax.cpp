// CPU kernels of amax/amin, max/min with indices, argmax/argmin, all/any and
// count_nonzero (see reduce_engine.h).
#include "ember/backends/cpu/capability.h"
#include "ember/backends/cpu/reduce_engine.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/reduce_math.h"
#include "ember/kernels/stubs/reduce.h"

namespace ember::cpu {
namespace {

template <typename M>
inline bool isnan_(M x) {
  return fn::is_nan(x);
}

// amax/amin: NaN wins (once a lane holds NaN, no comparison replaces it).
template <typename T, bool Max>
struct ExtremeOp {
  using acc_t = opmath_t<T>;
  static constexpr bool kIndexed = false;
  T* out;

  using Rule = reduce_math::Extreme<acc_t, Max>;
  acc_t init() const { return Rule::init(); }
  acc_t combine(acc_t a, acc_t b) const { return Rule::combine(a, b); }
  acc_t step(acc_t a, T x, int64_t) const { return combine(a, acc_t(x)); }
  void store(const acc_t& a, int64_t off) const { out[off] = T(a); }

  static constexpr bool kHasRow = true;
  acc_t row(const T* x, int64_t n, int64_t) const {
    if constexpr (kSimdExtreme<T>)
      if (n > 0) return simd_extreme<T, Max>(x, n);
    acc_t a = init();
    for (int64_t i = 0; i < n; ++i) a = combine(a, acc_t(x[i]));
    return a;
  }
};

// max/min with the index of the first extreme (the first NaN, if any).
template <typename T, bool Max>
struct IndexedOp {
  using M = opmath_t<T>;
  using Rule = reduce_math::ArgExtreme<M, Max>;
  using acc_t = typename Rule::Acc;
  static constexpr bool kIndexed = true;
  static constexpr bool kHasRow = true;
  T* out;  // may be null (argmax)
  int64_t* index;

  // A contiguous row: the extreme by SIMD, then the block holding its first position.
  acc_t row(const T* x, int64_t n, int64_t pos0) const {
    if (n == 0) return init();
    const ExtremeOp<T, Max> ext{nullptr};
    const M best = ext.row(x, n, 0);
    const bool nan = isnan_(best);
    constexpr int64_t B = 64;
    int64_t i = 0;
    for (; i + B <= n; i += B) {  // vectorized test of a whole block
      int hit = 0;
      for (int64_t j = 0; j < B; ++j) {
        const M v = M(x[i + j]);
        hit |= nan ? int(isnan_(v)) : int(v == best);
      }
      if (hit) break;
    }
    for (; i < n; ++i) {
      const M v = M(x[i]);
      if (nan ? isnan_(v) : v == best) break;
    }
    return {best, pos0 + i};
  }

  acc_t init() const { return Rule::init(); }
  acc_t step(acc_t a, T xv, int64_t pos) const { return Rule::step(a, M(xv), pos); }
  acc_t combine(acc_t a, acc_t b) const { return Rule::combine(a, b); }
  void store(const acc_t& a, int64_t off) const {
    if (out) out[off] = T(a.v);
    index[off] = a.i;
  }
};

void minmax_kernel(const ReduceArgs& a) {
  const auto kind = MinMaxKind(a.kind);
  dispatch_all(a.in.dtype(), "max", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = a.out.defined() ? a.out.data<T>() : nullptr;
    const Tensor& geo = a.out.defined() ? a.out : a.out2;
    switch (kind) {
      case MinMaxKind::Amax:
        return run_reduce<T>(a.in, geo, a.mask, ExtremeOp<T, true>{out});
      case MinMaxKind::Amin:
        return run_reduce<T>(a.in, geo, a.mask, ExtremeOp<T, false>{out});
      case MinMaxKind::MaxIdx:
        return run_reduce<T>(a.in, geo, a.mask, IndexedOp<T, true>{out, a.out2.data<int64_t>()});
      case MinMaxKind::MinIdx:
        return run_reduce<T>(a.in, geo, a.mask, IndexedOp<T, false>{out, a.out2.data<int64_t>()});
    }
  });
}

// all / any / count_nonzero. Whether an element is nonzero depends only on its bits: an
// integer (or bool) is nonzero when any bit is set, a float when any bit but the sign is
// (-0.0 is zero, NaN is not). So the kernel runs on the unsigned integer of the element's
// width with a mask that drops a float's sign bit: 4 element types instead of 10, and the
// 1-byte bool and uint8 outputs share one store (both hold 0 or 1). That is 12 instances
// instead of 50, half of this file's compile time, with the same integer loops.
template <typename U, typename O, int Kind>
struct LogicalOp {
  using acc_t = std::conditional_t<Kind == int(LogicalKind::CountNonzero), int64_t, bool>;
  static constexpr bool kIndexed = false;
  O* out;
  U mask;  // the bits that make an element nonzero

  acc_t init() const { return acc_t(Kind == int(LogicalKind::All)); }
  acc_t combine(acc_t a, acc_t b) const {
    if constexpr (Kind == int(LogicalKind::All))
      return a && b;
    else if constexpr (Kind == int(LogicalKind::Any))
      return a || b;
    else
      return a + b;
  }
  acc_t step(acc_t a, U x, int64_t) const { return combine(a, acc_t((x & mask) != 0)); }
  void store(const acc_t& a, int64_t off) const { out[off] = O(a); }

  // Contiguous rows: integer and/or/add reductions the compiler vectorizes; all/any
  // stop at the first deciding block.
  static constexpr bool kHasRow = true;
  acc_t row(const U* x, int64_t n, int64_t) const {
    const U m = mask;
    if constexpr (Kind == int(LogicalKind::CountNonzero)) {
      int64_t c = 0;
      for (int64_t i = 0; i < n; i += 4096) {  // narrow counters vectorize wider
        const int64_t e = std::min(n, i + 4096);
        uint32_t c32 = 0;
        for (int64_t j = i; j < e; ++j) c32 += uint32_t((x[j] & m) != 0);
        c += c32;
      }
      return c;
    } else {
      constexpr int64_t B = 1024;
      for (int64_t i = 0; i < n; i += B) {
        const int64_t e = std::min(n, i + B);
        int r = Kind == int(LogicalKind::All) ? 1 : 0;
        for (int64_t j = i; j < e; ++j) {
          if constexpr (Kind == int(LogicalKind::All))
            r &= int((x[j] & m) != 0);
          else
            r |= int((x[j] & m) != 0);
        }
        if (Kind == int(LogicalKind::All) ? !r : r) return Kind != int(LogicalKind::All);
      }
      return Kind == int(LogicalKind::All);
    }
  }
};

template <typename U, int Kind>
void logical_bits(const ReduceArgs& a, U mask) {
  using O = std::conditional_t<Kind == int(LogicalKind::CountNonzero), int64_t, uint8_t>;
  static_assert(sizeof(bool) == 1, "bool and uint8 outputs share one store");
  run_reduce<U>(a.in, a.out, a.mask, LogicalOp<U, O, Kind>{a.out.data<O>(), mask});
}

template <int Kind>
void logical_typed(const ReduceArgs& a) {
  switch (a.in.dtype()) {
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8:
      return logical_bits<uint8_t, Kind>(a, 0xFF);
    case DType::Int16:
      return logical_bits<uint16_t, Kind>(a, 0xFFFF);
    case DType::Float16:
    case DType::BFloat16:
      return logical_bits<uint16_t, Kind>(a, 0x7FFF);
    case DType::Int32:
      return logical_bits<uint32_t, Kind>(a, 0xFFFFFFFFu);
    case DType::Float32:
      return logical_bits<uint32_t, Kind>(a, 0x7FFFFFFFu);
    case DType::Int64:
      return logical_bits<uint64_t, Kind>(a, ~uint64_t(0));
    case DType::Float64:
      return logical_bits<uint64_t, Kind>(a, ~uint64_t(0) >> 1);
    default:
      EMBER_ERROR("all: unknown dtype ", dtype_name(a.in.dtype()));
  }
}

void logical_kernel(const ReduceArgs& a) {
  switch (LogicalKind(a.kind)) {
    case LogicalKind::All:
      return logical_typed<0>(a);
    case LogicalKind::Any:
      return logical_typed<1>(a);
    case LogicalKind::CountNonzero:
      return logical_typed<2>(a);
  }
}

EMBER_REGISTER_CPU_KERNELS(reduce_minmax) {
  constexpr int cpu = int(DeviceType::CPU);
  minmax_stub.fns[cpu] = &minmax_kernel;
  logical_stub.fns[cpu] = &logical_kernel;
}

}  // namespace
}  // namespace ember::cpu
