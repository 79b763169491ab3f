// CPU kernels of ops/surface_scan.h: cummax/cummin and mode, one row per task.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "ember/backends/cpu/capability.h"
#include "ember/core/parallel.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/stubs/surface_scan.h"

namespace ember::cpu {
namespace {

template <typename T>
bool is_nan_(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v);
  else
    return false;
}

void cummaxmin_kernel(const Tensor& values, const Tensor& indices, const Tensor& self,
                      bool is_max) {
  int64_t n = self.sizes().back(), rows = self.numel() / n;
  dispatch_all(self.dtype(), "cummax", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = std::conditional_t<std::is_floating_point_v<T> || std::is_integral_v<T>, T, float>;
    const T* src = reinterpret_cast<const T*>(self.data_ptr());
    T* out = reinterpret_cast<T*>(values.data_ptr());
    int64_t* idx = reinterpret_cast<int64_t*>(indices.data_ptr());
    parallel_for(0, rows, std::max<int64_t>(1, 32768 / n), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const T* s = src + r * n;
        T* o = out + r * n;
        int64_t* ix = idx + r * n;
        C best = C(s[0]);
        int64_t bi = 0;
        for (int64_t j = 0; j < n; ++j) {
          C v = C(s[j]);
          if (!is_nan_(best) && (is_nan_(v) || (is_max ? v >= best : v <= best))) {
            best = v;
            bi = j;
          }
          o[j] = T(best);
          ix[j] = bi;
        }
      }
    });
  });
}

void mode_kernel(const Tensor& values, const Tensor& indices, const Tensor& self) {
  int64_t rows = self.sizes()[0], n = self.sizes()[1];
  dispatch_all(self.dtype(), "mode", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = std::conditional_t<std::is_floating_point_v<T> || std::is_integral_v<T>, T, float>;
    const T* src = reinterpret_cast<const T*>(self.data_ptr());
    T* out = reinterpret_cast<T*>(values.data_ptr());
    int64_t* idx = reinterpret_cast<int64_t*>(indices.data_ptr());
    parallel_for(0, rows, std::max<int64_t>(1, 4096 / n), [&](int64_t r0, int64_t r1) {
      std::vector<std::pair<C, int64_t>> e(static_cast<size_t>(n));
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t j = 0; j < n; ++j) e[j] = {C(src[r * n + j]), j};
        // NaNs sort last (and count as equal to each other).
        std::sort(e.begin(), e.end(), [](const auto& a, const auto& b) {
          bool an = is_nan_(a.first), bn = is_nan_(b.first);
          if (an || bn) return !an && bn ? true : (an && bn ? a.second < b.second : false);
          return a.first < b.first || (a.first == b.first && a.second < b.second);
        });
        int64_t best_len = 0, best_end = 0;
        for (int64_t j = 0; j < n;) {
          int64_t k = j + 1;
          auto same = [&](const C& x, const C& y) { return (is_nan_(x) && is_nan_(y)) || x == y; };
          while (k < n && same(e[k].first, e[j].first)) ++k;
          if (k - j > best_len) {
            best_len = k - j;
            best_end = k - 1;
          }
          j = k;
        }
        out[r] = T(e[best_end].first);
        idx[r] = e[best_end].second;
      }
    });
  });
}

// Sequential over the index (several sources may hit one position).
void scatter_reduce_kernel(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                           ScatterReduce k, bool include_self) {
  int64_t nd = index.dim(), n = index.numel();
  const Shape& isz = index.sizes();
  const Shape& ost = out.strides();
  Shape ist = contiguous_strides(isz);
  const int64_t* ix = reinterpret_cast<const int64_t*>(index.data_ptr());
  int64_t limit = out.sizes()[dim];
  // Output offset of index element i.
  auto out_offset = [&](int64_t i) {
    int64_t off = 0, rem = i;
    for (int64_t d = 0; d < nd; ++d) {
      int64_t c = rem / ist[d];
      rem -= c * ist[d];
      if (d == dim) {
        int64_t v = ix[i];
        EMBER_CHECK_INDEX(v >= -limit && v < limit, "scatter_reduce(): index ", v,
                          " is out of bounds for dimension ", dim, " with size ", limit);
        c = v < 0 ? v + limit : v;
      }
      off += c * ost[d];
    }
    return off;
  };
  std::vector<int64_t> offs(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) offs[i] = out_offset(i);
  dispatch_all(out.dtype(), "scatter_reduce", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = std::conditional_t<std::is_floating_point_v<T> || std::is_integral_v<T>, T, float>;
    T* o = reinterpret_cast<T*>(out.data_ptr());
    const T* sv = reinterpret_cast<const T*>(src.data_ptr());
    std::vector<int64_t> count;
    if (k == ScatterReduce::Mean) count.assign(static_cast<size_t>(out.numel()), 0);
    if (!include_self) {
      C id = k == ScatterReduce::Prod   ? C(1)
             : k == ScatterReduce::Amax ? std::numeric_limits<C>::lowest()
             : k == ScatterReduce::Amin ? std::numeric_limits<C>::max()
                                        : C(0);
      if constexpr (std::is_floating_point_v<C>) {
        if (k == ScatterReduce::Amax) id = -std::numeric_limits<C>::infinity();
        if (k == ScatterReduce::Amin) id = std::numeric_limits<C>::infinity();
      }
      for (int64_t i = 0; i < n; ++i) o[offs[i]] = T(id);
    }
    for (int64_t i = 0; i < n; ++i) {
      C a = C(o[offs[i]]), b = C(sv[i]);
      C r;
      switch (k) {
        case ScatterReduce::Prod:
          r = C(a * b);
          break;
        case ScatterReduce::Amax:
          r = (is_nan_(a) || a >= b) && !is_nan_(b) ? a : b;
          break;
        case ScatterReduce::Amin:
          r = (is_nan_(a) || a <= b) && !is_nan_(b) ? a : b;
          break;
        default:
          r = C(a + b);
          break;
      }
      o[offs[i]] = T(r);
      if (k == ScatterReduce::Mean) count[offs[i]]++;
    }
    if (k == ScatterReduce::Mean) {
      for (int64_t i = 0; i < n; ++i) {
        int64_t off = offs[i];
        if (count[off] <= 0) continue;
        C c = C(count[off] + (include_self ? 1 : 0));
        if constexpr (std::is_integral_v<C>)
          o[off] = T(C(o[off]) / c);  // floor for non-negative
        else
          o[off] = T(C(o[off]) / c);
        count[off] = -1;  // divided once
      }
    }
  });
}

EMBER_REGISTER_CPU_KERNELS(surface) {
  constexpr int cpu = int(DeviceType::CPU);
  cummaxmin_stub.fns[cpu] = &cummaxmin_kernel;
  mode_stub.fns[cpu] = &mode_kernel;
  scatter_reduce_stub.fns[cpu] = &scatter_reduce_kernel;
}

}  // namespace
}  // namespace ember::cpu
