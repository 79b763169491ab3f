// CPU kernels of sum / prod / mean and the vector norms (see reduce_engine.h).
#include "ember/backends/cpu/capability.h"
#include "ember/backends/cpu/reduce_engine.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/reduce_math.h"
#include "ember/kernels/stubs/reduce.h"

namespace ember::cpu {
namespace {

// Note [Accurate float sums]
// Floating sums accumulate in double. Contiguous rows are summed in blocks of
// 4096 elements by 64 independent float (double for float64) lanes, which the
// compiler turns into SIMD adds; each block's total is added in double (the rest of
// a row, 16 lanes at a time, then one by one). Every lane adds at most 64 values, so
// the error stays at a few ulps of the result even for 1e8 elements, at the speed of
// a plain float loop. 64 lanes are 8 AVX2 vectors: 8 independent add chains keep
// the adder busy and enough loads in flight. With 16 lanes (2 chains) each add
// waited for the previous one's latency, and a sum of 4M floats on 2 threads took
// ~300 us (PyTorch ~230 us); with 64 lanes ~170 us. The outer layout accumulates
// straight into doubles (a vectorized convert-and-add).
// A sum that reads kStreamsMinBytes or more (more than the last-level cache holds) walks
// each row as kStreams equal parts at once, 16 lanes each. One sequential stream per core
// left memory-level parallelism unused: the hardware prefetcher restarts at every 4 KiB
// page, and four streams keep four of them in flight. A sum of 16M floats in NumPy's memory
// (4 KiB pages) on 2 threads took 1.38-1.96 ms as one stream and 0.95-1.07 ms as four
// (PyTorch 1.16-1.48 ms in the same minutes). From the cache the streams lose (1M floats on
// one thread: 65 against 88 us), hence the threshold.
constexpr int kStreams = 4;
constexpr int64_t kStreamsMinBytes = int64_t(32) << 20;
constexpr int64_t kLongRow = 2048;

template <typename T, typename O, bool Prod>
struct SumOp {
  static constexpr bool kFloat = std::is_floating_point<opmath_t<T>>::value;
  using acc_t =
      std::conditional_t<kFloat || std::is_floating_point<opmath_t<O>>::value, double, int64_t>;
  static constexpr bool kIndexed = false;
  static constexpr bool kHasRow = !Prod && kFloat;
  O* out;
  double scale;
  bool streams = false;  // sum rows as kStreams interleaved streams (see the Note)

  acc_t init() const { return acc_t(Prod ? 1 : 0); }
  static acc_t combine(acc_t a, acc_t b) {
    if constexpr (std::is_integral<acc_t>::value)  // wraps on overflow, like PyTorch
      return Prod ? acc_t(uint64_t(a) * uint64_t(b)) : acc_t(uint64_t(a) + uint64_t(b));
    else
      return Prod ? a * b : a + b;
  }
  acc_t step(acc_t a, T x, int64_t) const { return combine(a, acc_t(up(x))); }
  void store(const acc_t& a, int64_t off) const {
    if constexpr (std::is_integral<acc_t>::value)
      out[off] = to_out<O>(a);
    else
      out[off] = to_out<O>(a * scale);
  }
  /// Adds x[i, ...) in blocks of B = 64 * L elements by L lanes into `total` while L
  /// elements are left; advances i.
  using lane_t = std::conditional_t<std::is_same<T, double>::value, double, float>;
  /// The sum of L lanes in double, combined pairwise: log2(L) dependent adds, not L (they
  /// vectorize).
  template <int L>
  static double combine_lanes(const lane_t (&l)[L]) {
    double d[L];
    for (int j = 0; j < L; ++j) d[j] = double(l[j]);
    for (int w = L / 2; w >= 1; w /= 2)
      for (int j = 0; j < w; ++j) d[j] += d[j + w];
    return d[0];
  }
  template <int L>
  static void add_lanes(const T* x, int64_t& i, int64_t n, double& total) {
    constexpr int64_t B = 64 * L;
    while (i + L <= n) {
      lane_t l[L] = {};
      const int64_t e = i + (std::min(n, i + B) - i) / L * L;
      for (; i < e; i += L)
        for (int j = 0; j < L; ++j) l[j] += lane_t(up(x[i + j]));
      total += combine_lanes<L>(l);
    }
  }
  /// Adds kStreams equal parts of x[0, kStreams * len) at once, each in 16 lanes (the 64
  /// lanes of add_lanes<64>), into `total`.
  static void add_streams(const T* x, int64_t len, double& total) {
    constexpr int L = 16;
    constexpr int64_t B = 64 * L;
    double part[kStreams] = {};
    int64_t i = 0;
    while (i + L <= len) {
      lane_t l[kStreams][L] = {};
      const int64_t e = i + (std::min(len, i + B) - i) / L * L;
      for (; i < e; i += L)
        for (int q = 0; q < kStreams; ++q)
          for (int j = 0; j < L; ++j) l[q][j] += lane_t(up(x[q * len + i + j]));
      for (int q = 0; q < kStreams; ++q) part[q] += combine_lanes<L>(l[q]);
    }
    for (int q = 0; q < kStreams; ++q)
      for (int64_t k = i; k < len; ++k) part[q] += double(up(x[q * len + k]));
    for (int q = 0; q < kStreams; ++q) total += part[q];
  }
  acc_t row(const T* x, int64_t n, int64_t) const {
    double total = 0;
    int64_t i = 0;
    if (streams && n >= kStreams * 1024) {
      add_streams(x, n / kStreams, total);
      i = n / kStreams * kStreams;
    }
    // 8 AVX2 (4 AVX-512) add chains for long rows (see the Note); a short row would spend
    // more on combining 64 lanes than on adding (65536 rows of 256: 2.3 ms against 1.6)
    if (n >= kLongRow) add_lanes<64>(x, i, n, total);
    add_lanes<16>(x, i, n, total);  // a short row, or what is left of a long one
    for (; i < n; ++i) total += double(up(x[i]));
    return total;
  }
};

template <typename T, typename O>
void sum_typed(const ReduceArgs& a) {
  O* out = a.out.data<O>();
  if (SumKind(a.kind) == SumKind::Prod) {
    run_reduce<T>(a.in, a.out, a.mask, SumOp<T, O, true>{out, 1.0});
  } else {
    const bool streams = a.in.numel() * int64_t(sizeof(T)) >= kStreamsMinBytes;
    run_reduce<T>(a.in, a.out, a.mask, SumOp<T, O, false>{out, a.scale, streams});
  }
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
  static constexpr bool kIndexed = false;
  T* out;
  double p;

  acc_t init() const { return Rule::init(); }
  acc_t combine(acc_t a, acc_t b) const { return Rule::combine(a, b); }
  acc_t step(acc_t a, T xv, int64_t) const { return Rule::step(a, double(up(xv)), p); }
  void store(const acc_t& a, int64_t off) const { out[off] = to_out<T>(Rule::finish(a, p)); }
};

void norm_kernel(const ReduceArgs& a) {
  dispatch_floating(a.in.dtype(), "norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce_math::with_norm_kind(a.p, [&](auto kind) {
      run_reduce<T>(a.in, a.out, a.mask, NormOp<T, decltype(kind)::value>{a.out.data<T>(), a.p});
    });
  });
}

EMBER_REGISTER_CPU_KERNELS(reduce) {
  constexpr int cpu = int(DeviceType::CPU);
  sum_stub.fns[cpu] = &sum_kernel;
  norm_stub.fns[cpu] = &norm_kernel;
}

}  // namespace
}  // namespace ember::cpu
