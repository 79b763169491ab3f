// CUDA kernels of amax/amin, max/min with indices, argmax/argmin, all/any and
// count_nonzero, on the engine of reduce.cuh (semantics of backends/cpu/reduce_minmax.cpp:
// NaN wins; an index is the first position of the extreme, or of the first NaN).
#include "ember/backends/cuda/reduce.cuh"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/reduce_math.h"
#include "ember/kernels/registration.h"

namespace ember::cuda {
namespace {

// amax/amin: NaN wins (once an accumulator holds NaN, no comparison replaces it).
template <typename T, bool Max>
struct ExtremeOp {
  using acc_t = opmath_t<T>;
  T* out;

  using Rule = reduce_math::Extreme<acc_t, Max>;
  __device__ acc_t init() const { return Rule::init(); }
  __device__ acc_t combine(acc_t a, acc_t b) const { return Rule::combine(a, b); }
  __device__ acc_t step(acc_t a, T x, int64_t) const { return combine(a, acc_t(x)); }
  __device__ void store(const acc_t& a, int64_t k) const { out[k] = T(a); }
};

// max/min with the index of the first extreme (the first NaN, if any).
template <typename T, bool Max>
struct IndexedOp {
  using M = opmath_t<T>;
  using Rule = reduce_math::ArgExtreme<M, Max>;
  using acc_t = typename Rule::Acc;
  T* out;  // may be null (argmax)
  int64_t* index;

  __device__ acc_t init() const { return Rule::init(); }
  __device__ acc_t step(acc_t a, T xv, int64_t pos) const { return Rule::step(a, M(xv), pos); }
  __device__ acc_t combine(acc_t a, acc_t b) const { return Rule::combine(a, b); }
  __device__ void store(const acc_t& a, int64_t k) const {
    if (out) out[k] = T(a.v);
    index[k] = a.i;
  }
};

void minmax_kernel(const ReduceArgs& a) {
  const auto kind = MinMaxKind(a.kind);
  dispatch_all(a.in.dtype(), "max", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = a.out.defined() ? reinterpret_cast<T*>(a.out.data_ptr()) : nullptr;
    int64_t* idx = a.out2.defined() ? reinterpret_cast<int64_t*>(a.out2.data_ptr()) : nullptr;
    switch (kind) {
      case MinMaxKind::Amax:
        return run_reduce<T>(a.in, a.mask, ExtremeOp<T, true>{out});
      case MinMaxKind::Amin:
        return run_reduce<T>(a.in, a.mask, ExtremeOp<T, false>{out});
      case MinMaxKind::MaxIdx:
        EMBER_CHECK(idx, "max: missing index output");
        return run_reduce<T>(a.in, a.mask, IndexedOp<T, true>{out, idx});
      case MinMaxKind::MinIdx:
        EMBER_CHECK(idx, "min: missing index output");
        return run_reduce<T>(a.in, a.mask, IndexedOp<T, false>{out, idx});
    }
  });
}

// all / any / count_nonzero.
template <typename T, typename O, int Kind>
struct LogicalOp {
  using acc_t = std::conditional_t<Kind == int(LogicalKind::CountNonzero), int64_t, bool>;
  O* out;

  __device__ acc_t init() const { return acc_t(Kind == int(LogicalKind::All)); }
  __device__ acc_t combine(acc_t a, acc_t b) const {
    if constexpr (Kind == int(LogicalKind::All))
      return a && b;
    else if constexpr (Kind == int(LogicalKind::Any))
      return a || b;
    else
      return a + b;
  }
  __device__ acc_t step(acc_t a, T x, int64_t) const {
    return combine(a, acc_t(opmath_t<T>(x) != opmath_t<T>(0)));
  }
  __device__ void store(const acc_t& a, int64_t k) const { out[k] = O(a); }
};

template <typename O, int Kind>
void logical_typed(const ReduceArgs& a) {
  dispatch_all(a.in.dtype(), "all", [&](auto tag) {
    using T = typename decltype(tag)::type;
    run_reduce<T>(a.in, a.mask, LogicalOp<T, O, Kind>{reinterpret_cast<O*>(a.out.data_ptr())});
  });
}

void logical_kernel(const ReduceArgs& a) {
  const bool u8 = a.out.dtype() == DType::UInt8;
  switch (LogicalKind(a.kind)) {
    case LogicalKind::All:
      return u8 ? logical_typed<uint8_t, 0>(a) : logical_typed<bool, 0>(a);
    case LogicalKind::Any:
      return u8 ? logical_typed<uint8_t, 1>(a) : logical_typed<bool, 1>(a);
    case LogicalKind::CountNonzero:
      return logical_typed<int64_t, 2>(a);
  }
}

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, reduce_minmax) {
  constexpr int cuda = int(DeviceType::CUDA);
  minmax_stub.fns[cuda] = &minmax_kernel;
  logical_stub.fns[cuda] = &logical_kernel;
}

}  // namespace ember::cuda
