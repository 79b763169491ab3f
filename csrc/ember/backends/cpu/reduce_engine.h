// The CPU reduction engine: one driver for every reduction kernel. A reduction
// is described by an "Op" (accumulator, init, step, combine, store); the
// engine picks the loop for the layout and the thread split.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/backends/cpu/capability.h"
#include "ember/core/parallel.h"
#include "ember/core/tensor.h"
#include "ember/kernels/functors.h"

namespace ember::cpu {
// One copy per compiled CPU capability (capability.h): never merged across them.
inline namespace EMBER_CPU_NS {

// Note [Reduction layouts]
// The input's dims split into kept dims (one output element each) and reduced
// dims. Size-1 dims are dropped, kept dims are ordered by input stride, and
// adjacent dims that are contiguous with each other are merged. Reduced dims
// are reordered by stride too unless the op reports positions (argmax: its
// index is the row-major position over the reduced dims, so their order stays).
// Then:
//  * inner (reduced innermost dim has stride 1): each output reduces
//    contiguous rows with several independent accumulators, which vectorizes;
//  * outer (kept innermost dim has stride 1): a chunk of outputs is accumulated
//    row by row, out[k] = step(out[k], x[r][k]), which vectorizes over k;
//  * otherwise the same per-output loop as "inner" walks a strided row.
// Threads split the outputs; when there are fewer outputs than threads, they
// split the reduced range instead and the partial results are combined in
// order (so argmax's first-index rule still holds).
//
// An Op provides:
//   using acc_t;  static constexpr bool kIndexed;  (step/combine use positions)
//   acc_t init();  acc_t step(acc_t, T x, int64_t pos);  acc_t combine(acc_t a, acc_t b)
//   (a holds earlier positions than b);  void store(const acc_t&, int64_t out_offset)
//   optional: static constexpr bool kHasRow; acc_t row(const T* x, int64_t n, int64_t pos0)

/// Walks an N-d index space keeping two element offsets (input and output).
struct Walker {
  Shape size, s0, s1, idx;
  int64_t off0 = 0, off1 = 0;
  Walker() = default;
  Walker(Shape sz, Shape a, Shape b) : size(std::move(sz)), s0(std::move(a)), s1(std::move(b)) {
    idx.resize(size.size(), 0);
  }
  void seek(int64_t lin) {
    off0 = off1 = 0;
    for (int64_t d = int64_t(size.size()) - 1; d >= 0; --d) {
      idx[d] = lin % size[d];
      lin /= size[d];
      off0 += idx[d] * s0[d];
      off1 += idx[d] * s1[d];
    }
  }
  void next() {
    for (int64_t d = int64_t(size.size()) - 1; d >= 0; --d) {
      off0 += s0[d];
      off1 += s1[d];
      if (++idx[d] < size[d]) return;
      off0 -= s0[d] * size[d];
      off1 -= s1[d] * size[d];
      idx[d] = 0;
    }
  }
};

/// The layout of one reduction (see Note [Reduction layouts]); strides in elements.
struct ReduceGeom {
  Shape ksize, kin, kout;  // kept dims, outer to inner
  Shape rsize, rin;        // reduced dims, outer to inner
  int64_t K = 1, R = 1;
};

inline ReduceGeom make_geom(const Tensor& in, const Tensor& out, const Shape& mask,
                            bool keep_order) {
  struct Dim {
    int64_t size, sin, sout;
  };
  std::vector<Dim> kept, red;
  for (int64_t d = 0; d < in.dim(); ++d) {
    Dim x{in.sizes()[d], in.strides()[d], out.strides()[d]};
    if (mask[d])
      red.push_back(x);
    else
      kept.push_back(x);
  }
  ReduceGeom g;
  for (auto& x : kept) g.K *= x.size;
  for (auto& x : red) g.R *= x.size;
  auto by_stride = [](const Dim& a, const Dim& b) { return a.sin > b.sin; };
  std::stable_sort(kept.begin(), kept.end(), by_stride);
  if (!keep_order) std::stable_sort(red.begin(), red.end(), by_stride);
  for (auto& x : kept) {
    if (x.size == 1) continue;
    if (!g.ksize.empty() && g.kin.back() == x.sin * x.size && g.kout.back() == x.sout * x.size) {
      g.ksize.back() *= x.size;
      g.kin.back() = x.sin;
      g.kout.back() = x.sout;
    } else {
      g.ksize.push_back(x.size);
      g.kin.push_back(x.sin);
      g.kout.push_back(x.sout);
    }
  }
  for (auto& x : red) {
    if (x.size == 1) continue;
    if (!g.rsize.empty() && g.rin.back() == x.sin * x.size) {
      g.rsize.back() *= x.size;
      g.rin.back() = x.sin;
    } else {
      g.rsize.push_back(x.size);
      g.rin.push_back(x.sin);
    }
  }
  if (g.rsize.empty()) {  // nothing (or only size-1 dims) reduced: one-element rows
    g.rsize.push_back(1);
    g.rin.push_back(0);
  }
  return g;
}

template <typename Op>
struct HasRow {
  template <typename U>
  static constexpr bool get(decltype(U::kHasRow)*) {
    return U::kHasRow;
  }
  template <typename U>
  static constexpr bool get(...) {
    return false;
  }
  static constexpr bool value = get<Op>(nullptr);
};

/// Reduces x[0..n) (stride `st`) whose first element is at reduced position pos0.
template <typename T, typename Op>
typename Op::acc_t reduce_row(const Op& op, const T* x, int64_t n, int64_t st, int64_t pos0) {
  using A = typename Op::acc_t;
  if (st == 1) {
    if constexpr (HasRow<Op>::value) return op.row(x, n, pos0);
    constexpr int L = 8;
    if (n >= 4 * L) {
      A l[L];
      for (int j = 0; j < L; ++j) l[j] = op.init();
      int64_t i = 0;
      for (; i + L <= n; i += L)
        for (int j = 0; j < L; ++j) l[j] = op.step(l[j], x[i + j], pos0 + i + j);
      A acc = l[0];
      for (int j = 1; j < L; ++j) acc = op.combine(acc, l[j]);
      for (; i < n; ++i) acc = op.step(acc, x[i], pos0 + i);
      return acc;
    }
  }
  A acc = op.init();
  for (int64_t i = 0; i < n; ++i) acc = op.step(acc, x[i * st], pos0 + i);
  return acc;
}

/// Reduces reduced positions [b, e) of the output whose input offset is `base`.
template <typename T, typename Op>
typename Op::acc_t reduce_range(const Op& op, const ReduceGeom& g, const T* base, int64_t b,
                                int64_t e) {
  using A = typename Op::acc_t;
  if (g.rsize.size() == 1) return reduce_row<T>(op, base + b * g.rin[0], e - b, g.rin[0], b);
  const int64_t n = g.rsize.back(), st = g.rin.back();
  const size_t outer = g.rsize.size() - 1;
  Walker w(Shape(g.rsize.begin(), g.rsize.begin() + outer),
           Shape(g.rin.begin(), g.rin.begin() + outer), Shape(outer, 0));
  w.seek(b / n);
  int64_t j = b % n;
  A acc = op.init();
  bool first = true;
  while (b < e) {
    int64_t len = std::min(n - j, e - b);
    A r = reduce_row<T>(op, base + w.off0 + j * st, len, st, b);
    acc = first ? r : op.combine(acc, r);
    first = false;
    b += len;
    j = 0;
    w.next();
  }
  return acc;
}

// Note [Short rows]
// Rows of 2 to 4 contiguous elements, back to back (x.amax(1) of [N, 4], a sum over xyz or RGB):
// one output per reduce_row call costs a call, its set-up and its scalar tail per 2-4 elements.
// With R a compile-time constant, a block of outputs is reduced across the block instead (output
// c folds x[c * R + r] for r = 0..R-1, in order, as reduce_row does), which GCC vectorizes with
// strided loads, and the results are stored after. Float and double inputs take it, with plain
// accumulators or argmax's (value, index) pairs (stepped in order: the first extreme, or the
// first NaN, wins as before); var's Welford pairs keep their two-pass rows.
template <typename T, typename Op>
constexpr bool kShortRows = std::is_floating_point<T>::value &&
                            (Op::kIndexed || std::is_arithmetic<typename Op::acc_t>::value);

template <int64_t R, typename T, typename Op>
void reduce_short_rows(const Op& op, const T* x, int64_t K, int64_t so) {
  using A = typename Op::acc_t;
  constexpr int64_t B = 256;
  parallel_for(0, (K + B - 1) / B, std::max<int64_t>(1, kGrainSize / (B * R)),
               [&](int64_t bb, int64_t be) {
                 A acc[B];
                 for (int64_t blk = bb; blk < be; ++blk) {
                   const int64_t k0 = blk * B, n = std::min(B, K - k0);
                   const T* p = x + k0 * R;
                   const A init = op.init();
                   for (int64_t c = 0; c < n; ++c) {
                     A a = init;
                     for (int64_t r = 0; r < R; ++r) a = op.step(a, p[c * R + r], r);
                     acc[c] = a;
                   }
                   for (int64_t c = 0; c < n; ++c) op.store(acc[c], (k0 + c) * so);
                 }
               });
}

/// Runs the reduction `op` of `in` (element type T) into the outputs `op` holds.
template <typename T, typename Op>
void run_reduce(const Tensor& in, const Tensor& out, const Shape& mask, const Op& op) {
  using A = typename Op::acc_t;
  ReduceGeom g = make_geom(in, out, mask, Op::kIndexed);
  if (g.K == 0) return;
  const T* x = in.data<T>();
  const int64_t R = g.R, K = g.K;
  const int nthreads = in_parallel_region() ? 1 : get_num_threads();
  Walker kw(g.ksize, g.kin, g.kout);
  if (R == 0) {
    for (int64_t k = 0; k < K; ++k, kw.next()) op.store(op.init(), kw.off1);
    return;
  }
  const bool inner = g.rin.back() == 1;
  const bool outer = !inner && !g.kin.empty() && g.kin.back() == 1;

  if (outer) {
    // Accumulate chunks of up to C contiguous outputs row by row; a chunk covers
    // whole rows when they fit, so the input streams sequentially.
    constexpr int64_t C = 2048;
    const int64_t m = g.ksize.back(), nch = (m + C - 1) / C, ko_n = K / m;
    const int64_t csz = std::min(m, C);
    const size_t ko_d = g.ksize.size() - 1;
    const Shape ks(g.ksize.begin(), g.ksize.begin() + ko_d),
        ki(g.kin.begin(), g.kin.begin() + ko_d), kt(g.kout.begin(), g.kout.begin() + ko_d);
    const int64_t ostep = g.kout.back();
    const int64_t items = ko_n * nch;
    // Adds reduced positions [rb, re) of work item `it` into acc[0, len).
    // Out of line: it has two callers below, and each inlined copy of its loop cost compile
    // time (Note [Kernel compile time] in loops.h) for nothing, as it runs once per work item.
    auto accumulate = [&](int64_t it, int64_t rb, int64_t re, A* acc) __attribute__((noinline)) {
      Walker ow(ks, ki, kt);
      ow.seek(it / nch);
      const int64_t c0 = (it % nch) * C, len = std::min(C, m - c0);
      Walker rw(g.rsize, g.rin, Shape(g.rsize.size(), 0));
      rw.seek(rb);
      const T* p0 = x + ow.off0 + c0;
      for (int64_t r = rb; r < re; ++r, rw.next()) {
        const T* p = p0 + rw.off0;
        for (int64_t c = 0; c < len; ++c) acc[c] = op.step(acc[c], p[c], r);
      }
      return std::make_pair(ow.off1 + c0 * ostep, len);
    };
    if (items >= nthreads || items * csz * R < 4 * kGrainSize) {
      parallel_for(0, items, std::max<int64_t>(1, kGrainSize / (csz * R)),
                   [&](int64_t ib, int64_t ie) {
                     std::unique_ptr<A[]> acc(new A[static_cast<size_t>(csz)]);
                     for (int64_t it = ib; it < ie; ++it) {
                       std::fill(acc.get(), acc.get() + csz, op.init());
                       auto [o, len] = accumulate(it, 0, R, acc.get());
                       for (int64_t c = 0; c < len; ++c) op.store(acc[c], o + c * ostep);
                     }
                   });
      return;
    }
    // Few items: split the reduced range; partial accumulators combine in order.
    const int64_t nsplit = std::min<int64_t>(nthreads, R);
    std::unique_ptr<A[]> part(new A[static_cast<size_t>(nsplit * csz)]);
    for (int64_t it = 0; it < items; ++it) {
      int64_t o = 0, len = 0;
      parallel_for(0, nsplit, 1, [&](int64_t sb, int64_t se) {
        for (int64_t sp = sb; sp < se; ++sp) {
          A* pa = part.get() + sp * csz;
          std::fill(pa, pa + csz, op.init());
          auto r = accumulate(it, R * sp / nsplit, R * (sp + 1) / nsplit, pa);
          if (sp == 0) std::tie(o, len) = r;
        }
      });
      for (int64_t c = 0; c < len; ++c) {
        A a = part[c];
        for (int64_t sp = 1; sp < nsplit; ++sp) a = op.combine(a, part[sp * csz + c]);
        op.store(a, o + c * ostep);
      }
    }
    return;
  }

  // Per-output loop (contiguous or strided rows).
  if (K >= nthreads || K * R < kGrainSize || nthreads == 1) {
    if (g.rsize.size() == 1 && g.ksize.size() == 1) {
      // One reduced and one kept dim (x.amax(1) of [N, 4]): output k reduces the row at
      // k * kin, with no walker and no range split per output. Short rows cost mostly that
      // overhead: [1M, 4] amax over dim 1 went from 18.3 to 13.0 ms at 1 thread (PyTorch 4.5), sum
      // from 17.5 to 11.7 ms (13.4).
      const int64_t si = g.kin[0], so = g.kout[0], st = g.rin[0];
      if constexpr (kShortRows<T, Op>) {
        if (st == 1 && si == R && R >= 2 && R <= 4) {  // Note [Short rows]
          if (R == 2) return reduce_short_rows<2, T>(op, x, K, so);
          if (R == 3) return reduce_short_rows<3, T>(op, x, K, so);
          return reduce_short_rows<4, T>(op, x, K, so);
        }
      }
      parallel_for(0, K, std::max<int64_t>(1, kGrainSize / R), [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) op.store(reduce_row<T>(op, x + k * si, R, st, 0), k * so);
      });
      return;
    }
    parallel_for(0, K, std::max<int64_t>(1, kGrainSize / R), [&](int64_t b, int64_t e) {
      Walker w(g.ksize, g.kin, g.kout);
      w.seek(b);
      for (int64_t k = b; k < e; ++k, w.next())
        op.store(reduce_range<T>(op, g, x + w.off0, 0, R), w.off1);
    });
    return;
  }
  // Few outputs, long rows: split each reduction across threads.
  const int64_t nchunks = std::min<int64_t>(nthreads * 4, std::max<int64_t>(1, R / kGrainSize));
  std::unique_ptr<A[]> part(
      new A[static_cast<size_t>(nchunks)]);  // not vector<bool>: threads write
  for (int64_t k = 0; k < K; ++k, kw.next()) {
    const T* base = x + kw.off0;
    parallel_for(0, nchunks, 1, [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c)
        part[c] = reduce_range<T>(op, g, base, R * c / nchunks, R * (c + 1) / nchunks);
    });
    A acc = part[0];
    for (int64_t c = 1; c < nchunks; ++c) acc = op.combine(acc, part[c]);
    op.store(acc, kw.off1);
  }
}

/// True for the types simd_extreme handles (GCC/Clang vector extensions).
template <typename T>
constexpr bool kSimdExtreme = std::is_arithmetic<T>::value && !std::is_same<T, bool>::value;

/// max (or min) of x[0, n), n >= 1; NaN if any element is NaN. Compilers do not
/// vectorize a NaN-propagating max on their own, so this spells out the SIMD.
template <typename T, bool Max>
T simd_extreme(const T* x, int64_t n) {
  typedef T V __attribute__((vector_size(32)));
  constexpr int W = int(32 / sizeof(T));
  auto pick = [](auto a, auto b) { return Max ? (b > a ? b : a) : (b < a ? b : a); };
  int64_t i = 0;
  T r = x[0];
  bool any_nan = false;
  if (n >= 4 * W) {
    V m[4];
    std::memcpy(m, x, sizeof(m));
    auto nan = m[0] != m[0];
    for (int k = 1; k < 4; ++k) nan |= m[k] != m[k];
    for (i = 4 * W; i + 4 * W <= n; i += 4 * W) {
      V b[4];
      std::memcpy(b, x + i, sizeof(b));
      for (int k = 0; k < 4; ++k) {
        m[k] = Max ? (b[k] > m[k] ? b[k] : m[k]) : (b[k] < m[k] ? b[k] : m[k]);
        nan |= b[k] != b[k];
      }
    }
    r = m[0][0];
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < W; ++j) r = pick(r, T(m[k][j]));
    for (int j = 0; j < W; ++j) any_nan |= nan[j] != 0;
  }
  for (; i < n; ++i) {
    r = pick(r, x[i]);
    any_nan |= x[i] != x[i];
  }
  if constexpr (std::is_floating_point<T>::value)
    if (any_nan) return std::numeric_limits<T>::quiet_NaN();
  return r;
}

/// Widens a stored value to its compute type (float for the 16-bit floats).
template <typename T>
inline opmath_t<T> up(T x) {
  return opmath_t<T>(x);
}
/// Converts an accumulator to the stored type (16-bit floats round from float).
template <typename O, typename A>
inline O to_out(A a) {
  if constexpr (std::is_same<O, Half>::value || std::is_same<O, BFloat16>::value)
    return O(float(a));
  else
    return O(a);
}

}  // namespace EMBER_CPU_NS
}  // namespace ember::cpu
