// CPU kernels of the pooling family (Note [Pooling windows]): parallel over
// planes (batch x channels). Note [Regular pooling windows]: when the window table along w
// describes sliding windows (window o = positions o * stride - pad + k * dilation, k < kernel,
// clipped to the input), the kernels walk each output row with the window offset outermost and
// the output columns innermost, a strided loop the compiler vectorizes. avg_pool takes that path
// when no window was clipped; max_pool takes it for the columns whose window is whole and walks
// the tables for the clipped border columns. Every other geometry (adaptive) walks the tables.
// Compiled once per CPU capability (Note [CPU capability dispatch]).
// Float compares may be if-converted into SIMD selects (the max and the NaN test): FP
// exceptions are never inspected in ember.
#pragma GCC optimize("no-trapping-math")
#include "ember/backends/cpu/capability.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "ember/core/parallel.h"
#include "ember/kernels/functors.h"
#include "ember/kernels/stubs/nn_pool.h"

namespace ember::cpu {
namespace {

int64_t plane_grain(int64_t work) {
  return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(work, 1));
}

// A PoolDim of sliding windows: output o reads o * stride - pad + k * dilation for k < kernel,
// the positions outside [0, in) clipped (padding). Outputs [lo, hi) have their whole window
// inside the input; with no padding (and no ceil_mode overhang) that is every output.
struct Regular {
  bool ok = false;
  int64_t kernel = 1, stride = 1, dilation = 1, pad = 0, lo = 0, hi = 0;
  bool whole(int64_t out) const { return ok && lo == 0 && hi == out; }
};

Regular regular(const PoolDim& d) {
  Regular r;
  const int64_t out = d.out();
  if (out <= 0) return r;
  int64_t K = 0, first = -1, second = -1;
  for (int64_t o = 0; o < out; ++o) K = std::max(K, d.ptr[size_t(o) + 1] - d.ptr[size_t(o)]);
  if (K <= 0) return r;
  for (int64_t o = 0; o < out && second < 0; ++o)
    if (d.ptr[size_t(o) + 1] - d.ptr[size_t(o)] == K) (first < 0 ? first : second) = o;
  const int64_t s1 = d.idx[size_t(d.ptr[size_t(first)])];
  r.kernel = K;
  r.dilation = K > 1 ? d.idx[size_t(d.ptr[size_t(first)]) + 1] - s1 : 1;
  if (second >= 0) {
    const int64_t span = d.idx[size_t(d.ptr[size_t(second)])] - s1;
    if (span % (second - first) != 0) return r;
    r.stride = span / (second - first);
  } else if (out > 1) {
    return r;  // one full window among several: leave it to the table walk
  }
  r.pad = first * r.stride - s1;
  if (r.stride <= 0 || r.dilation <= 0) return r;
  // every window must be exactly the clipped sliding window
  for (int64_t o = 0; o < out; ++o) {
    int64_t a = d.ptr[size_t(o)];
    const int64_t end = d.ptr[size_t(o) + 1];
    for (int64_t k = 0; k < K; ++k) {
      const int64_t pos = o * r.stride - r.pad + k * r.dilation;
      if (pos < 0 || pos >= d.in) continue;
      if (a >= end || d.idx[size_t(a)] != pos) return r;
      ++a;
    }
    if (a != end) return r;
  }
  r.lo = std::clamp<int64_t>((r.pad + r.stride - 1) / r.stride, 0, out);  // first o*S - P >= 0
  r.hi = r.lo;
  while (r.hi < out && r.hi * r.stride - r.pad + (K - 1) * r.dilation < d.in) ++r.hi;
  r.ok = true;
  return r;
}

// Max over the window rows `rows` of the output columns [j0, j1) of one output row, all of
// whose windows lie inside the row: best/arg per column, the first maximum in window order
// (rows, then columns) and the first NaN winning, as the table walk.
template <typename T, typename A>
void max_row(const T* __restrict__ x, int64_t iw, const int64_t* rows, int64_t nrows,
             const Regular& w, int64_t j0, int64_t j1, A* __restrict__ best,
             int64_t* __restrict__ arg, T* __restrict__ dst, int64_t* __restrict__ ind) {
  const int64_t S = w.stride, n = j1 - j0, c0 = j0 * S - w.pad;  // column j0's window start
  {
    const int64_t base = rows[0] * iw + c0;
    const T* r0 = x + base;
    for (int64_t j = 0; j < n; ++j) {
      best[j] = A(r0[j * S]);
      arg[j] = base + j * S;
    }
  }
  for (int64_t a = 0; a < nrows; ++a) {
    const int64_t base = rows[a] * iw + c0;
    const T* r = x + base;
    for (int64_t c = a == 0 ? 1 : 0; c < w.kernel; ++c) {
      const int64_t off = c * w.dilation;
      for (int64_t j = 0; j < n; ++j) {
        const A v = A(r[j * S + off]);
        const A b = best[j];
        const bool take = v > b || (v != v && b == b);
        best[j] = take ? v : b;
        arg[j] = take ? base + j * S + off : arg[j];
      }
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    dst[j0 + j] = T(best[j]);
    ind[j0 + j] = arg[j];
  }
}

// The max (and its index) of output (i, j) of one plane by the window tables: the first
// maximum in window order, the first NaN winning; an empty window gives -inf, index 0.
template <typename T, typename A>
void max_window(const T* x, int64_t iw, const PoolGeom& g, int64_t i, int64_t j, T* dst,
                int64_t* ind) {
  A best = -std::numeric_limits<A>::infinity();
  int64_t bi = -1;
  for (int64_t a = g.h.ptr[size_t(i)]; a < g.h.ptr[size_t(i) + 1]; ++a) {
    const int64_t row = g.h.idx[size_t(a)] * iw;
    for (int64_t c = g.w.ptr[size_t(j)]; c < g.w.ptr[size_t(j) + 1]; ++c) {
      const int64_t pos = row + g.w.idx[size_t(c)];
      const A v = A(x[pos]);
      if (bi < 0 || v > best || std::isnan(v)) {
        best = v;
        bi = pos;
        if (std::isnan(v)) {
          *dst = T(best);
          *ind = bi;
          return;
        }
      }
    }
  }
  *dst = T(best);
  *ind = bi < 0 ? 0 : bi;
}

template <typename T>
void max_pool_impl(const Tensor& out, const Tensor& indices, const Tensor& input,
                   const PoolGeom& g) {
  using A = opmath_t<T>;
  const int64_t oh = g.h.out(), ow = g.w.out(), iw = g.w.in;
  const int64_t pin = g.h.in * iw, pout = oh * ow;
  const int64_t planes = pout ? out.numel() / pout : 0;
  const T* src = input.data<T>();
  T* dst = out.data<T>();
  int64_t* ind = indices.data<int64_t>();
  const Regular rw = regular(g.w);
  if (rw.ok) {
    // Sliding windows along w (padded or not): the columns whose window is inside the row
    // by max_row's vectorized walk, the few clipped ones at the borders by the tables.
    parallel_for(0, planes, plane_grain(pin), [&](int64_t b, int64_t e) {
      std::vector<A> best(static_cast<size_t>(ow));
      std::vector<int64_t> arg(static_cast<size_t>(ow));
      for (int64_t p = b; p < e; ++p) {
        const T* x = src + p * pin;
        for (int64_t i = 0; i < oh; ++i) {
          T* d = dst + p * pout + i * ow;
          int64_t* id = ind + p * pout + i * ow;
          const int64_t a0 = g.h.ptr[size_t(i)], na = g.h.ptr[size_t(i) + 1] - a0;
          const bool inner = na > 0 && rw.hi > rw.lo;
          for (int64_t j = 0; j < ow; ++j) {
            if (inner && j == rw.lo) j = rw.hi;
            if (j < ow) max_window<T, A>(x, iw, g, i, j, d + j, id + j);
          }
          if (inner)
            max_row<T, A>(x, iw, g.h.idx.data() + a0, na, rw, rw.lo, rw.hi, best.data(), arg.data(),
                          d, id);
        }
      }
    });
    return;
  }
  parallel_for(0, planes, plane_grain(pin), [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j)
          max_window<T, A>(src + p * pin, iw, g, i, j, dst + p * pout + i * ow + j,
                           ind + p * pout + i * ow + j);
  });
}

void max_pool_kernel(const Tensor& out, const Tensor& indices, const Tensor& input,
                     const PoolGeom& g) {
  dispatch_floating(input.dtype(), "max_pool2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    max_pool_impl<T>(out, indices, input, g);
  });
}

template <typename T>
void max_pool_backward_impl(const Tensor& gi, const Tensor& go, const Tensor& indices) {
  using A = opmath_t<T>;
  const int64_t planes = gi.sizes()[0], pin = gi.sizes()[1], pout = go.sizes()[1];
  const T* g = go.data<T>();
  const int64_t* ind = indices.data<int64_t>();
  T* dst = gi.data<T>();
  std::atomic<int64_t> bad{-1};
  // float and double accumulate straight into the gradient plane; half types in a float
  // plane that is rounded once at the end.
  constexpr bool kDirect = std::is_same<A, T>::value;
  parallel_for(0, planes, plane_grain(pin + pout), [&](int64_t b, int64_t e) {
    std::vector<A> buf(kDirect ? 0 : static_cast<size_t>(pin));
    for (int64_t p = b; p < e; ++p) {
      A* acc = kDirect ? reinterpret_cast<A*>(dst + p * pin) : buf.data();
      std::fill(acc, acc + pin, A(0));
      const int64_t* ip = ind + p * pout;
      const T* gp = g + p * pout;
      for (int64_t o = 0; o < pout; ++o) {
        const int64_t k = ip[o];
        if (k < 0 || k >= pin) {
          bad = k;
          continue;
        }
        acc[k] += A(gp[o]);
      }
      if (!kDirect)
        for (int64_t i = 0; i < pin; ++i) dst[p * pin + i] = T(acc[i]);
    }
  });
  EMBER_CHECK(bad.load() == -1, "max_pool backward: index ", bad.load(),
              " is out of range for an input plane of ", pin, " elements");
}

void max_pool_backward_kernel(const Tensor& gi, const Tensor& go, const Tensor& indices) {
  dispatch_floating(gi.dtype(), "max_pool2d_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    max_pool_backward_impl<T>(gi, go, indices);
  });
}

template <typename T>
void avg_pool_impl(const Tensor& out, const Tensor& in, const PoolGeom& g, bool backward) {
  using A = opmath_t<T>;
  const int64_t oh = g.h.out(), ow = g.w.out(), iw = g.w.in;
  const int64_t pin = g.h.in * iw, pout = oh * ow;
  const int64_t planes = pout ? (backward ? in.numel() : out.numel()) / pout : 0;
  const T* src = in.data<T>();
  T* dst = out.data<T>();
  const Regular rw = regular(g.w);
  if (rw.whole(ow)) {
    // Per output row: the factors f_j (rounded once from double, as the table walk), then
    // window offsets outermost, columns innermost.
    const int64_t S = rw.stride;
    parallel_for(0, planes, plane_grain(pin + pout), [&](int64_t b, int64_t e) {
      constexpr bool kDirect = std::is_same<A, T>::value;
      std::vector<A> buf(backward && !kDirect ? size_t(pin) : 0), row(static_cast<size_t>(ow)),
          fw(static_cast<size_t>(ow));
      A* __restrict__ r = row.data();
      A* __restrict__ f = fw.data();
      const double* ws = g.w.scale.data();
      for (int64_t p = b; p < e; ++p) {
        A* acc = nullptr;
        if (backward) {
          acc = kDirect ? reinterpret_cast<A*>(dst + p * pin) : buf.data();
          std::fill(acc, acc + pin, A(0));
        }
        for (int64_t i = 0; i < oh; ++i) {
          const double fi = g.scale * g.h.scale[size_t(i)];
          for (int64_t j = 0; j < ow; ++j) f[j] = A(fi * ws[j]);
          if (!backward) {
            const T* x = src + p * pin;
            std::fill(r, r + ow, A(0));
            for (int64_t a = g.h.ptr[i]; a < g.h.ptr[i + 1]; ++a) {
              const T* xr = x + g.h.idx[a] * iw;
              for (int64_t c = 0; c < rw.kernel; ++c) {
                const T* xc = xr + c * rw.dilation;
                for (int64_t j = 0; j < ow; ++j) r[j] += A(xc[j * S]);
              }
            }
            T* o = dst + p * pout + i * ow;
            for (int64_t j = 0; j < ow; ++j) o[j] = T(r[j] * f[j]);
          } else {
            const T* gr = src + p * pout + i * ow;
            for (int64_t j = 0; j < ow; ++j) r[j] = A(gr[j]) * f[j];
            for (int64_t a = g.h.ptr[i]; a < g.h.ptr[i + 1]; ++a) {
              A* ar = acc + g.h.idx[a] * iw;
              for (int64_t c = 0; c < rw.kernel; ++c) {
                A* __restrict__ ac = ar + c * rw.dilation;
                for (int64_t j = 0; j < ow; ++j) ac[j * S] += r[j];
              }
            }
          }
        }
        if (backward && !kDirect)
          for (int64_t k = 0; k < pin; ++k) dst[p * pin + k] = T(acc[k]);
      }
    });
    return;
  }
  parallel_for(0, planes, plane_grain(pin + pout), [&](int64_t b, int64_t e) {
    std::vector<A> acc(backward ? size_t(pin) : 0);
    for (int64_t p = b; p < e; ++p) {
      if (backward) std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          const A f = A(g.scale * g.h.scale[size_t(i)] * g.w.scale[size_t(j)]);
          if (!backward) {
            const T* x = src + p * pin;
            A s = 0;
            for (int64_t a = g.h.ptr[i]; a < g.h.ptr[i + 1]; ++a) {
              const T* row = x + g.h.idx[a] * iw;
              for (int64_t c = g.w.ptr[j]; c < g.w.ptr[j + 1]; ++c) s += A(row[g.w.idx[c]]);
            }
            dst[p * pout + i * ow + j] = T(s * f);
          } else {
            const A v = A(src[p * pout + i * ow + j]) * f;
            for (int64_t a = g.h.ptr[i]; a < g.h.ptr[i + 1]; ++a) {
              A* row = acc.data() + g.h.idx[a] * iw;
              for (int64_t c = g.w.ptr[j]; c < g.w.ptr[j + 1]; ++c) row[g.w.idx[c]] += v;
            }
          }
        }
      if (backward)
        for (int64_t i = 0; i < pin; ++i) dst[p * pin + i] = T(acc[size_t(i)]);
    }
  });
}

void avg_pool_kernel(const Tensor& out, const Tensor& in, const PoolGeom& g, bool backward) {
  dispatch_floating(in.dtype(), "avg_pool2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    avg_pool_impl<T>(out, in, g, backward);
  });
}

EMBER_REGISTER_CPU_KERNELS(nn_pool) {
  max_pool_stub.fns[int(DeviceType::CPU)] = max_pool_kernel;
  max_pool_backward_stub.fns[int(DeviceType::CPU)] = max_pool_backward_kernel;
  avg_pool_stub.fns[int(DeviceType::CPU)] = avg_pool_kernel;
}

}  // namespace
}  // namespace ember::cpu
