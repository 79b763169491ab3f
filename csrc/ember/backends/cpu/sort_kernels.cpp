// CPU kernels of sort, topk, kthvalue, unique and searchsorted. Rows along the
// sorted dim are independent and run in parallel; NaN ordering follows
// Note [NaN ordering] in ops/sort.h.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/backends/cpu/capability.h"
#include "ember/core/parallel.h"
#include "ember/kernels/stubs/sort.h"

namespace ember::cpu {
namespace {

// Keys are compared in a native type: float for the 16-bit floats.
template <typename T>
struct KeyOf {
  using type = T;
};
template <>
struct KeyOf<Half> {
  using type = float;
};
template <>
struct KeyOf<BFloat16> {
  using type = float;
};
template <typename T>
using key_t = typename KeyOf<T>::type;

/// a < b with NaN greater than every number and equivalent to other NaNs.
template <typename K>
inline bool nan_less(K a, K b) {
  if constexpr (std::is_floating_point<K>::value)
    return a < b || (std::isnan(b) && !std::isnan(a));
  else
    return a < b;
}

/// Element offset of row `r` of `t`: the row walks `dim`, r counts the other dims in order.
int64_t row_offset(const Tensor& t, int64_t dim, int64_t r) {
  int64_t off = 0;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    if (d == dim) continue;
    int64_t s = t.sizes()[d];
    off += (r % s) * t.strides()[d];
    r /= s;
  }
  return off;
}

// Runs body(row, buf) over every row along `dim` of `self` in parallel; buf
// holds the row as (key, index) pairs in input order.
template <typename T, typename F>
void for_each_row(const Tensor& self, int64_t dim, const F& body) {
  using K = key_t<T>;
  const int64_t n = self.sizes()[dim], st = self.strides()[dim];
  const int64_t rows = self.numel() / n;
  const T* base = self.data<T>();
  // A row costs about n log n; give each thread rows worth ~kGrainSize elements.
  parallel_for(0, rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1)),
               [&](int64_t r0, int64_t r1) {
                 std::vector<std::pair<K, int64_t>> buf(static_cast<size_t>(n));
                 for (int64_t r = r0; r < r1; ++r) {
                   const T* src = base + row_offset(self, dim, r);
                   for (int64_t j = 0; j < n; ++j) buf[j] = {K(src[j * st]), j};
                   body(r, buf);
                 }
               });
}

// Writes the first `k` pairs of buf into row r of values/indices.
template <typename T, typename K>
void write_row(const Tensor& values, const Tensor& indices, int64_t dim, int64_t r,
               const std::vector<std::pair<K, int64_t>>& buf, int64_t k) {
  T* v = values.data<T>() + row_offset(values, dim, r);
  int64_t* ix = indices.data<int64_t>() + row_offset(indices, dim, r);
  int64_t vs = values.strides()[dim], is = indices.strides()[dim];
  for (int64_t j = 0; j < k; ++j) {
    v[j * vs] = T(buf[j].first);
    ix[j * is] = buf[j].second;
  }
}

template <typename K>
bool is_nan_key(K k) {
  if constexpr (std::is_floating_point<K>::value)
    return std::isnan(k);
  else
    return false;
}

// Moves NaNs (in input order) to the end of buf, or to the front when
// `nan_first`, and returns the range [lo, hi) of the numbers. Comparisons on
// that range then need no NaN test (see Note [NaN ordering]).
template <typename K>
std::pair<size_t, size_t> split_nans(std::vector<std::pair<K, int64_t>>& buf, bool nan_first) {
  using P = std::pair<K, int64_t>;
  auto nan = [](const P& p) { return is_nan_key(p.first); };
  if constexpr (std::is_floating_point<K>::value) {
    if (std::any_of(buf.begin(), buf.end(), nan)) {
      if (nan_first) {
        auto mid = std::stable_partition(buf.begin(), buf.end(), nan);
        return {size_t(mid - buf.begin()), buf.size()};
      }
      auto mid = std::stable_partition(buf.begin(), buf.end(), [&](const P& p) { return !nan(p); });
      return {0, size_t(mid - buf.begin())};
    }
  }
  return {0, buf.size()};
}

void sort_kernel(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t dim,
                 bool descending, bool stable) {
  dispatch_all(self.dtype(), "sort", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using P = std::pair<key_t<T>, int64_t>;
    auto asc = [](const P& a, const P& b) { return a.first < b.first; };
    auto desc = [](const P& a, const P& b) { return b.first < a.first; };
    for_each_row<T>(self, dim, [&](int64_t r, std::vector<P>& buf) {
      auto [lo, hi] = split_nans(buf, descending);
      auto b = buf.begin() + lo, e = buf.begin() + hi;
      if (stable)
        descending ? std::stable_sort(b, e, desc) : std::stable_sort(b, e, asc);
      else
        descending ? std::sort(b, e, desc) : std::sort(b, e, asc);
      write_row<T>(values, indices, dim, r, buf, int64_t(buf.size()));
    });
  });
}

// Puts the k best elements (largest or smallest, NaN counting as largest) in
// buf[0, k), best first; equal values go to the lower index.
template <typename K>
void select_k(std::vector<std::pair<K, int64_t>>& buf, int64_t k, bool largest) {
  using P = std::pair<K, int64_t>;
  auto [lo, hi] = split_nans(buf, largest);
  size_t kk = std::min<size_t>(size_t(k), hi);
  if (kk <= lo) return;  // the first k are all NaN
  auto before = [largest](const P& a, const P& b) {
    if (a.first != b.first) return largest ? b.first < a.first : a.first < b.first;
    return a.second < b.second;
  };
  auto b = buf.begin() + lo, e = buf.begin() + hi, kth = buf.begin() + kk;
  if (kth < e) std::nth_element(b, kth - 1, e, before);
  std::sort(b, kth, before);
}

void topk_kernel(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t k,
                 int64_t dim, bool largest, bool sorted) {
  (void)sorted;  // sorted=False allows any order; sorting k elements is cheap
  dispatch_numeric(self.dtype(), "topk", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using P = std::pair<key_t<T>, int64_t>;
    for_each_row<T>(self, dim, [&](int64_t r, std::vector<P>& buf) {
      select_k(buf, k, largest);
      write_row<T>(values, indices, dim, r, buf, k);
    });
  });
}

void kthvalue_kernel(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t k,
                     int64_t dim) {
  dispatch_numeric(self.dtype(), "kthvalue", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using P = std::pair<key_t<T>, int64_t>;
    for_each_row<T>(self, dim, [&](int64_t r, std::vector<P>& buf) {
      select_k(buf, k, /*largest=*/false);
      std::swap(buf[0], buf[k - 1]);
      write_row<T>(values, indices, dim, r, buf, 1);
    });
  });
}

// Groups `order` (row indices in output order) into runs of equal rows.
template <typename Eq>
void group_rows(const std::vector<int64_t>& order, const Eq& eq, std::vector<int64_t>& first,
                std::vector<int64_t>& inverse, std::vector<int64_t>& counts) {
  inverse.assign(order.size(), 0);
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || !eq(order[i - 1], order[i])) {
      first.push_back(order[i]);
      counts.push_back(0);
    }
    inverse[order[i]] = int64_t(first.size()) - 1;
    ++counts.back();
  }
}

void unique_rows_kernel(const Tensor& rows, bool consecutive, std::vector<int64_t>& first,
                        std::vector<int64_t>& inverse, std::vector<int64_t>& counts) {
  const int64_t n = rows.sizes()[0];
  const int64_t m = rows.dim() == 1 ? 1 : rows.sizes()[1];
  first.clear(), inverse.clear(), counts.clear();
  dispatch_all(rows.dtype(), "unique", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using K = key_t<T>;
    const T* p = rows.data<T>();
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), int64_t(0));
    if (m == 1) {  // elements: sort (key, index) pairs, NaNs last
      std::vector<std::pair<K, int64_t>> buf(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) buf[i] = {K(p[i]), i};
      if (!consecutive) {
        size_t hi = split_nans(buf, false).second;
        std::sort(buf.begin(), buf.begin() + hi,
                  [](const auto& a, const auto& b) { return a.first < b.first; });
      }
      for (int64_t i = 0; i < n; ++i) order[i] = buf[i].second;
      group_rows(
          order, [&](int64_t a, int64_t b) { return K(p[a]) == K(p[b]); }, first, inverse, counts);
      return;
    }
    auto less = [&](int64_t a, int64_t b) {  // lexicographic
      const T *x = p + a * m, *y = p + b * m;
      for (int64_t j = 0; j < m; ++j) {
        K u(x[j]), v(y[j]);
        if (nan_less(u, v)) return true;
        if (nan_less(v, u)) return false;
      }
      return false;
    };
    auto equal = [&](int64_t a, int64_t b) {
      const T *x = p + a * m, *y = p + b * m;
      for (int64_t j = 0; j < m; ++j)
        if (!(K(x[j]) == K(y[j]))) return false;
      return true;
    };
    if (!consecutive) std::stable_sort(order.begin(), order.end(), less);
    group_rows(order, equal, first, inverse, counts);
  });
}

// PyTorch's binary searches: lower bound finds the first x with x >= v, upper
// bound the first x with x > v, written as negations so NaNs sort last.
template <typename K, typename Get>
int64_t search(int64_t n, K v, bool right, const Get& at) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + ((hi - lo) >> 1);
    K x = at(mid);
    bool go_right = right ? !(x > v) : !(x >= v);
    if (go_right)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

void searchsorted_kernel(const Tensor& out, const Tensor& boundaries, const Tensor& values,
                         const Tensor& sorter, bool right) {
  const int64_t m = boundaries.sizes().back();
  const bool batched = boundaries.dim() > 1;
  const int64_t per_row = values.dim() == 0 ? 1 : values.sizes().back();
  const int64_t* srt = sorter.defined() ? sorter.data<int64_t>() : nullptr;
  dispatch_numeric(values.dtype(), "searchsorted", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using K = key_t<T>;
    const T* bd = boundaries.data<T>();
    const T* vals = values.data<T>();
    parallel_for(0, values.numel(), 4096, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        int64_t row = batched ? i / per_row : 0;
        const T* seq = bd + row * m;
        int64_t pos;
        if (srt) {
          const int64_t* s = srt + row * m;
          pos = search<K>(m, K(vals[i]), right, [&](int64_t j) { return K(seq[s[j]]); });
        } else {
          pos = search<K>(m, K(vals[i]), right, [&](int64_t j) { return K(seq[j]); });
        }
        if (out.dtype() == DType::Int32)
          out.data<int32_t>()[i] = int32_t(pos);
        else
          out.data<int64_t>()[i] = pos;
      }
    });
  });
}

EMBER_REGISTER_CPU_KERNELS(sort) {
  constexpr int cpu = int(DeviceType::CPU);
  sort_stub.fns[cpu] = &sort_kernel;
  topk_stub.fns[cpu] = &topk_kernel;
  kthvalue_stub.fns[cpu] = &kthvalue_kernel;
  unique_rows_stub.fns[cpu] = &unique_rows_kernel;
  searchsorted_stub.fns[cpu] = &searchsorted_kernel;
}

}  // namespace
}  // namespace ember::cpu
