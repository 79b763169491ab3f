// CUDA kernels of sort, topk, kthvalue, searchsorted and unique (kernels/stubs/sort.h), median
// (kernels/stubs/reduce.h) and mode (kernels/stubs/surface_scan.h), with the CPU kernels'
// results (backends/cpu/sort_kernels.cpp, reduce_stats.cpp, surface_kernels.cpp) and Note
// [NaN ordering] of ops/sort.h: NaN sorts as the largest value, -0.0 equals 0.0.
//  * Every element maps to an unsigned radix key (radix_key) whose order is the CPU's
//    comparison order: the sign bit flipped for signed integers; for floats the IEEE trick,
//    every NaN canonicalised to the largest key and -0.0 to +0.0. Descending complements the
//    key. A stable ascending sort of (key, position) is then the CPU's stable sort: ties, and
//    NaNs, in input order, NaNs last (first when descending). Every sort here is stable.
//  * Rows of up to 4096 elements: one block per row, cub::BlockRadixSort (stable) on
//    (key, position) in shared memory, coalesced reads and writes. Longer rows:
//    cub::DeviceRadixSort of every element with its flat position (32-bit when it fits) as
//    the value, then (several rows) a second stable radix sort by row number, so a few long
//    rows still use the whole GPU.
//  * Values are read back from the input at the sorted positions (keys are not inverted),
//    so -0.0 and NaN payloads come out as they went in.
//  * topk, kthvalue, median and mode sort a copy of the rows, then pick: topk the first k
//    (largest: a descending sort, NaNs first), kthvalue the (k-1)-th, median the (n-1)/2-th
//    or the row's first NaN, mode the last element of the first longest run of equal keys
//    (a block per row). A full sort costs O(n log n) where a selection could be O(n).
//  * searchsorted: a thread per value, the CPU's binary search and comparisons.
//  * unique: rows are sorted on the device (an [n, m] matrix lexicographically by m stable
//    radix sorts, last column first) and grouped by a flag scan. The stub returns host
//    std::vectors, so the group tables are copied back to the host at the end (this and the
//    group count are the only synchronisations).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cub/block/block_exchange.cuh>
#include <cub/block/block_radix_sort.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <type_traits>
#include <vector>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/backends/cuda/cuda_check.h"
#include "ember/backends/cuda/reduce.cuh"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/registration.h"
#include "ember/kernels/stubs/reduce.h"
#include "ember/kernels/stubs/sort.h"
#include "ember/kernels/stubs/surface_scan.h"

namespace ember::cuda {
namespace {

// ---- keys -----------------------------------------------------------------------------------

template <int Bytes>
struct UIntOf;
template <>
struct UIntOf<1> {
  using type = uint8_t;
};
template <>
struct UIntOf<2> {
  using type = uint16_t;
};
template <>
struct UIntOf<4> {
  using type = uint32_t;
};
template <>
struct UIntOf<8> {
  using type = uint64_t;
};
/// The radix key type of T: an unsigned integer of T's width.
template <typename T>
using key_u = typename UIntOf<int(sizeof(T))>::type;

/// The CPU's comparison type: float for the 16-bit floats.
template <typename T>
using cmp_t = opmath_t<T>;

template <typename T>
constexpr bool kIsFloat = std::is_floating_point<T>::value || std::is_same<T, Half>::value ||
                          std::is_same<T, BFloat16>::value;

/// IEEE bits -> order-preserving key; `abs` is bits without the sign, `nan_above` the
/// largest non-NaN magnitude (infinity).
template <typename U>
__device__ __forceinline__ U float_key(U bits, U sign, U inf) {
  const U abs = U(bits & U(~sign));
  if (abs > inf) return U(~U(0));  // every NaN: the largest key
  if (abs == 0) bits = 0;          // -0.0 equals 0.0
  return (bits & sign) ? U(~bits) : U(bits | sign);
}

/// An unsigned key whose order is the CPU's (NaN largest, -0.0 == 0.0).
template <typename T>
__device__ __forceinline__ key_u<T> radix_key(T v) {
  using U = key_u<T>;
  if constexpr (std::is_same<T, bool>::value) {
    return U(v ? 1 : 0);
  } else if constexpr (std::is_same<T, Half>::value) {
    return float_key<U>(v.x, U(0x8000u), U(0x7c00u));
  } else if constexpr (std::is_same<T, BFloat16>::value) {
    return float_key<U>(v.x, U(0x8000u), U(0x7f80u));
  } else if constexpr (std::is_same<T, float>::value) {
    return float_key<U>(__float_as_uint(v), U(0x80000000u), U(0x7f800000u));
  } else if constexpr (std::is_same<T, double>::value) {
    return float_key<U>(U(__double_as_longlong(v)), U(0x8000000000000000ull),
                        U(0x7ff0000000000000ull));
  } else if constexpr (std::is_signed<T>::value) {
    return U(U(v) ^ (U(1) << (sizeof(T) * 8 - 1)));
  } else {
    return U(v);
  }
}

template <typename T>
__device__ __forceinline__ key_u<T> sort_key(T v, bool descending) {
  const key_u<T> k = radix_key(v);
  return descending ? key_u<T>(~k) : k;
}

template <typename T>
__device__ __forceinline__ bool is_nan_value(T v) {
  if constexpr (kIsFloat<T>) {
    const cmp_t<T> c = cmp_t<T>(v);
    return c != c;
  } else {
    return false;
  }
}

// ---- row geometry -----------------------------------------------------------------------------

constexpr int kMaxRowDims = 16;

/// The rows of a tensor along `dim`: row r counts the other dims in order (outer to inner,
/// as the CPU's row_offset), so for a contiguous result [outer, n, inner] r = o * inner + i.
struct RowGeom {
  int nd = 0;  // the other dims, size-1 dims dropped and mergeable neighbours merged
  int64_t size[kMaxRowDims], stride[kMaxRowDims];
  int64_t n = 1, st = 0;  // the sorted dim
  int64_t rows = 1;

  __device__ __forceinline__ int64_t row_offset(int64_t r) const {
    int64_t off = 0;
    for (int d = nd - 1; d >= 0; --d) {
      off += (r % size[d]) * stride[d];
      r /= size[d];
    }
    return off;
  }
};

RowGeom make_row_geom(const Tensor& t, int64_t dim) {
  RowGeom g;
  std::vector<int64_t> sz, st;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d == dim) continue;
    const int64_t size = t.sizes()[d], stride = t.strides()[d];
    g.rows *= size;
    if (size == 1) continue;
    if (!sz.empty() && st.back() == stride * size) {
      sz.back() *= size;
      st.back() = stride;
    } else {
      sz.push_back(size);
      st.push_back(stride);
    }
  }
  EMBER_CHECK(sz.size() <= size_t(kMaxRowDims), "sort (CUDA): at most ", kMaxRowDims,
              " non-mergeable dims besides the sorted one are supported, got ", sz.size());
  g.nd = int(sz.size());
  for (int i = 0; i < g.nd; ++i) {
    g.size[i] = sz[size_t(i)];
    g.stride[i] = st[size_t(i)];
  }
  g.n = t.sizes()[dim];
  g.st = t.strides()[dim];
  return g;
}

unsigned capped(int64_t blocks) {
  return unsigned(std::max<int64_t>(1, std::min<int64_t>(blocks, int64_t(1) << 20)));
}
unsigned grid_for_n(int64_t n, int threads = 256) { return capped((n + threads - 1) / threads); }
int row_threads(int64_t n) {
  return n >= 512 ? 512 : int(std::max<int64_t>(32, (n + 31) / 32 * 32));
}

/// Device scratch memory from the caching allocator (freed, stream-ordered, when dropped).
Tensor scratch(Device dev, int64_t bytes) {
  return empty(Shape{std::max<int64_t>(bytes, 1)}, DType::UInt8, dev);
}
template <typename X>
X* ptr(const Tensor& t) {
  return reinterpret_cast<X*>(t.data_ptr());
}

// ---- the segmented sort -----------------------------------------------------------------------

// One block per row of n <= THREADS * ITEMS elements. The keys are read striped (coalesced),
// padded with the largest key, and exchanged into a blocked arrangement, where thread t holds
// positions t * ITEMS + i: the radix sort is stable in that order, so equal keys stay in input
// order and the padding after every real element. The sorted pairs come out striped, so the
// writes are coalesced too.
template <typename T, int THREADS, int ITEMS>
__global__ void __launch_bounds__(THREADS)
    sort_rows_small_kernel(const T* __restrict__ in, RowGeom g, bool descending, T* __restrict__ sv,
                           int64_t* __restrict__ si) {
  using U = key_u<T>;
  using Sort = cub::BlockRadixSort<U, THREADS, ITEMS, int>;
  using Exchange = cub::BlockExchange<U, THREADS, ITEMS>;
  __shared__ union {
    typename Sort::TempStorage sort;
    typename Exchange::TempStorage exchange;
  } tmp;
  const int n = int(g.n);
  for (int64_t r = blockIdx.x; r < g.rows; r += gridDim.x) {
    const T* src = in + g.row_offset(r);
    U keys[ITEMS];
    int pos[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const int p = i * THREADS + int(threadIdx.x);
      keys[i] = p < n ? sort_key(src[p * g.st], descending) : U(~U(0));
    }
    Exchange(tmp.exchange).StripedToBlocked(keys);
    __syncthreads();  // tmp is reused by the sort
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) pos[i] = int(threadIdx.x) * ITEMS + i;
    Sort(tmp.sort).SortBlockedToStriped(keys, pos);
    T* vr = sv + r * n;
    int64_t* ir = si + r * n;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const int p = i * THREADS + int(threadIdx.x);
      if (p < n) {
        ir[p] = pos[i];
        vr[p] = src[int64_t(pos[i]) * g.st];
      }
    }
    __syncthreads();  // tmp is reused by the next row
  }
}

template <typename T, typename P>
__global__ void make_keys_kernel(const T* __restrict__ in, RowGeom g, int64_t total,
                                 bool descending, key_u<T>* __restrict__ keys,
                                 P* __restrict__ pos) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
    const int64_t r = e / g.n, j = e - r * g.n;
    keys[e] = sort_key(in[g.row_offset(r) + j * g.st], descending);
    pos[e] = P(e);
  }
}

template <typename P>
__global__ void row_keys_kernel(const P* __restrict__ pos, int64_t total, int64_t n,
                                uint32_t* __restrict__ rk) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step)
    rk[e] = uint32_t(int64_t(pos[e]) / n);
}

// Flat sorted positions -> values and in-row indices of the [rows, n] result.
template <typename T, typename P>
__global__ void gather_sorted_kernel(const T* __restrict__ in, RowGeom g, int64_t total,
                                     const P* __restrict__ pos, T* __restrict__ sv,
                                     int64_t* __restrict__ si) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
    const int64_t p = int64_t(pos[e]), r = p / g.n, j = p - r * g.n;
    si[e] = j;
    sv[e] = in[g.row_offset(r) + j * g.st];
  }
}

template <typename T, int THREADS, int ITEMS>
void launch_small(const T* in, const RowGeom& g, bool descending, T* sv, int64_t* si) {
  sort_rows_small_kernel<T, THREADS, ITEMS>
      <<<capped(g.rows), THREADS, 0, current_stream()>>>(in, g, descending, sv, si);
  EMBER_CUDA_CHECK(cudaGetLastError());
}

constexpr int64_t kSmallRow = 4096;

/// Rows longer than kSmallRow: a device-wide stable radix sort of (key, flat position), then
/// (several rows) a stable radix sort of the positions by row. Positions are 32-bit when the
/// element count allows, which halves the values each radix pass moves.
template <typename T, typename P>
void sort_rows_long(const T* in, const RowGeom& g, Device dev, bool descending, T* sv,
                    int64_t* si) {
  using U = key_u<T>;
  const int64_t total = g.rows * g.n;
  const cudaStream_t stream = current_stream();
  EMBER_CHECK(g.rows < (int64_t(1) << 32), "sort (CUDA): too many rows (", g.rows, ")");
  Tensor kbuf = scratch(dev, 2 * total * int64_t(sizeof(U)));
  Tensor pbuf = scratch(dev, 2 * total * int64_t(sizeof(P)));
  U* k0 = ptr<U>(kbuf);
  U* k1 = k0 + total;
  P* p0 = ptr<P>(pbuf);
  P* p1 = p0 + total;
  make_keys_kernel<T, P><<<grid_for_n(total), 256, 0, stream>>>(in, g, total, descending, k0, p0);
  EMBER_CUDA_CHECK(cudaGetLastError());
  size_t tb = 0, tb2 = 0;
  EMBER_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, tb, k0, k1, p0, p1, total, 0,
                                                   int(sizeof(U) * 8), stream));
  Tensor rbuf;
  uint32_t *r0 = nullptr, *r1 = nullptr;
  int row_bits = 0;
  if (g.rows > 1) {
    while ((int64_t(1) << row_bits) < g.rows) ++row_bits;
    rbuf = scratch(dev, 2 * total * int64_t(sizeof(uint32_t)));
    r0 = ptr<uint32_t>(rbuf);
    r1 = r0 + total;
    EMBER_CUDA_CHECK(
        cub::DeviceRadixSort::SortPairs(nullptr, tb2, r0, r1, p1, p0, total, 0, row_bits, stream));
  }
  tb = std::max(tb, tb2);
  Tensor temp = scratch(dev, int64_t(tb));
  EMBER_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data_ptr(), tb, k0, k1, p0, p1, total, 0,
                                                   int(sizeof(U) * 8), stream));
  const P* sorted = p1;
  if (g.rows > 1) {
    row_keys_kernel<P><<<grid_for_n(total), 256, 0, stream>>>(p1, total, g.n, r0);
    EMBER_CUDA_CHECK(cudaGetLastError());
    EMBER_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data_ptr(), tb, r0, r1, p1, p0, total, 0,
                                                     row_bits, stream));
    sorted = p0;
  }
  gather_sorted_kernel<T, P><<<grid_for_n(total), 256, 0, stream>>>(in, g, total, sorted, sv, si);
  EMBER_CUDA_CHECK(cudaGetLastError());
}

/// Stable sort of every row of `self` along `dim` into the contiguous [rows, n] buffers
/// sv (values) and si (int64 positions in the row).
template <typename T>
void sort_rows(const Tensor& self, int64_t dim, bool descending, T* sv, int64_t* si) {
  const RowGeom g = make_row_geom(self, dim);
  const int64_t total = g.rows * g.n;
  if (total == 0) return;
  const T* in = reinterpret_cast<const T*>(self.data_ptr());
  if (g.n <= 64) return launch_small<T, 32, 2>(in, g, descending, sv, si);
  if (g.n <= 256) return launch_small<T, 64, 4>(in, g, descending, sv, si);
  if (g.n <= 1024) return launch_small<T, 128, 8>(in, g, descending, sv, si);
  if (g.n <= kSmallRow) return launch_small<T, 256, 16>(in, g, descending, sv, si);
  if (total <= int64_t(UINT32_MAX))
    sort_rows_long<T, uint32_t>(in, g, self.device(), descending, sv, si);
  else
    sort_rows_long<T, int64_t>(in, g, self.device(), descending, sv, si);
}

// out[o, j, i] (contiguous [outer, kk, inner]) <- sorted row (o * inner + i), position start + j.
template <typename T>
__global__ void pick_kernel(const T* __restrict__ sv, const int64_t* __restrict__ si, int64_t n,
                            int64_t start, int64_t kk, int64_t inner, int64_t total,
                            T* __restrict__ ov, int64_t* __restrict__ oi) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
    const int64_t i = e % inner, t = e / inner, j = t % kk, o = t / kk;
    const int64_t src = (o * inner + i) * n + start + j;
    ov[e] = sv[src];
    oi[e] = si[src];
  }
}

void check_out(const Tensor& values, const Tensor& indices, const char* op) {
  EMBER_CHECK(values.is_contiguous() && indices.is_contiguous() && indices.dtype() == DType::Int64,
              op, " (CUDA): expected contiguous values and int64 indices");
}

/// values/indices (contiguous, size kk along dim) <- positions [start, start + kk) of the
/// rows of self sorted along dim.
template <typename T>
void sort_and_pick(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t dim,
                   bool descending, int64_t start, int64_t kk) {
  const int64_t n = self.sizes()[dim];
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < self.dim(); ++d) inner *= self.sizes()[d];
  const int64_t total = values.numel();
  if (total == 0 || self.numel() == 0) return;
  if (inner == 1 && start == 0 && kk == n) {  // the full sort, already in the result's layout
    sort_rows<T>(self, dim, descending, ptr<T>(values), ptr<int64_t>(indices));
    return;
  }
  Tensor sv = empty(Shape{self.numel()}, self.dtype(), self.device());
  Tensor si = empty(Shape{self.numel()}, DType::Int64, self.device());
  sort_rows<T>(self, dim, descending, ptr<T>(sv), ptr<int64_t>(si));
  pick_kernel<T><<<grid_for_n(total), 256, 0, current_stream()>>>(
      ptr<T>(sv), ptr<int64_t>(si), n, start, kk, inner, total, ptr<T>(values),
      ptr<int64_t>(indices));
  EMBER_CUDA_CHECK(cudaGetLastError());
}

void sort_kernel(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t dim,
                 bool descending, bool stable) {
  (void)stable;  // always stable, which an unstable sort allows
  check_out(values, indices, "sort");
  dispatch_all(self.dtype(), "sort", [&](auto tag) {
    using T = typename decltype(tag)::type;
    sort_and_pick<T>(values, indices, self, dim, descending, 0, self.sizes()[dim]);
  });
}

// topk: the CPU's order is NaNs first (as the largest) then descending, ties by lower index,
// which is the stable descending sort; smallest is the stable ascending one.
void topk_kernel(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t k,
                 int64_t dim, bool largest, bool sorted) {
  (void)sorted;  // the k elements always come out sorted, which sorted=False allows
  check_out(values, indices, "topk");
  dispatch_numeric(self.dtype(), "topk", [&](auto tag) {
    using T = typename decltype(tag)::type;
    sort_and_pick<T>(values, indices, self, dim, largest, 0, k);
  });
}

// kthvalue: the k-th of the stable ascending order (NaNs last, ties by lower index).
void kthvalue_kernel(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t k,
                     int64_t dim) {
  check_out(values, indices, "kthvalue");
  dispatch_numeric(self.dtype(), "kthvalue", [&](auto tag) {
    using T = typename decltype(tag)::type;
    sort_and_pick<T>(values, indices, self, dim, false, k - 1, 1);
  });
}

// ---- median / mode -----------------------------------------------------------------------------

// The lower median ((n - 1) / 2-th smallest) of each sorted row, or the row's first NaN: NaNs
// sort last in input order, so the first sorted NaN is the first in the row.
template <typename T>
__global__ void median_pick_kernel(const T* __restrict__ sv, const int64_t* __restrict__ si,
                                   int64_t rows, int64_t n, T* __restrict__ out,
                                   int64_t* __restrict__ oi) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; r < rows; r += step) {
    const T* v = sv + r * n;
    int64_t p = (n - 1) / 2;
    if (is_nan_value(v[n - 1])) {
      int64_t lo = 0, hi = n - 1;
      while (lo < hi) {
        const int64_t mid = lo + ((hi - lo) >> 1);
        if (is_nan_value(v[mid]))
          hi = mid;
        else
          lo = mid + 1;
      }
      p = lo;
    }
    out[r] = v[p];
    if (oi) oi[r] = si[r * n + p];
  }
}

void median_kernel(const ReduceArgs& a) {
  EMBER_CHECK(a.in.dim() == 2 && a.in.is_contiguous() && a.out.is_contiguous(),
              "median (CUDA): expected a contiguous 2-d input");
  const int64_t rows = a.in.sizes()[0], n = a.in.sizes()[1];
  if (rows == 0 || n == 0) return;
  dispatch_numeric(a.in.dtype(), "median", [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor sv = empty(Shape{rows * n}, a.in.dtype(), a.in.device());
    Tensor si = empty(Shape{rows * n}, DType::Int64, a.in.device());
    sort_rows<T>(a.in, 1, false, ptr<T>(sv), ptr<int64_t>(si));
    int64_t* oi = a.out2.defined() ? ptr<int64_t>(a.out2) : nullptr;
    median_pick_kernel<T><<<grid_for_n(rows), 256, 0, current_stream()>>>(
        ptr<T>(sv), ptr<int64_t>(si), rows, n, ptr<T>(a.out), oi);
    EMBER_CUDA_CHECK(cudaGetLastError());
  });
}

/// A run of equal keys in a sorted row: its length and last position.
struct Run {
  int64_t len, end;
};
/// The longest run; among equal lengths the first (smallest value), as the CPU.
struct LongestRun {
  using acc_t = Run;
  __device__ Run init() const { return {-1, 0}; }
  __device__ Run combine(Run a, Run b) const {
    if (a.len != b.len) return a.len > b.len ? a : b;
    return a.end < b.end ? a : b;
  }
};

// One block per sorted row: each run's last position finds the run's start by a binary search
// for its key, then the block keeps the longest run. The mode's index is the run's last
// (largest) index, since the stable sort keeps equal values in index order.
template <typename T>
__global__ void mode_rows_kernel(const T* __restrict__ sv, const int64_t* __restrict__ si,
                                 int64_t rows, int64_t n, T* __restrict__ out,
                                 int64_t* __restrict__ oi) {
  using U = key_u<T>;
  __shared__ Run smem[32];
  const LongestRun op;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* v = sv + r * n;
    Run best = op.init();
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const U kj = radix_key(v[j]);
      if (j + 1 < n && radix_key(v[j + 1]) == kj) continue;
      int64_t lo = 0, hi = j;
      while (lo < hi) {
        const int64_t mid = lo + ((hi - lo) >> 1);
        if (radix_key(v[mid]) < kj)
          lo = mid + 1;
        else
          hi = mid;
      }
      best = op.combine(best, Run{j - lo + 1, j});
    }
    best = block_reduce(best, op, smem);
    if (threadIdx.x == 0) {
      out[r] = v[best.end];
      oi[r] = si[r * n + best.end];
    }
  }
}

void mode_kernel(const Tensor& values, const Tensor& indices, const Tensor& self) {
  EMBER_CHECK(self.dim() == 2 && values.is_contiguous() && indices.is_contiguous(),
              "mode (CUDA): expected a 2-d input and contiguous results");
  const int64_t rows = self.sizes()[0], n = self.sizes()[1];
  if (rows == 0 || n == 0) return;
  dispatch_all(self.dtype(), "mode", [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor sv = empty(Shape{rows * n}, self.dtype(), self.device());
    Tensor si = empty(Shape{rows * n}, DType::Int64, self.device());
    sort_rows<T>(self, 1, false, ptr<T>(sv), ptr<int64_t>(si));
    mode_rows_kernel<T><<<capped(rows), row_threads(n), 0, current_stream()>>>(
        ptr<T>(sv), ptr<int64_t>(si), rows, n, ptr<T>(values), ptr<int64_t>(indices));
    EMBER_CUDA_CHECK(cudaGetLastError());
  });
}

// ---- searchsorted ------------------------------------------------------------------------------

// PyTorch's binary searches (as the CPU kernel): lower bound finds the first x with x >= v,
// upper bound the first x with x > v, written as negations so NaNs sort last.
template <typename T, typename O>
__global__ void searchsorted_kernel(O* __restrict__ out, const T* __restrict__ bd,
                                    const T* __restrict__ vals, const int64_t* __restrict__ srt,
                                    int64_t total, int64_t m, int64_t per_row, bool batched,
                                    bool right) {
  using K = cmp_t<T>;
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const int64_t row = batched ? i / per_row : 0;
    const T* seq = bd + row * m;
    const int64_t* s = srt ? srt + row * m : nullptr;
    const K v = K(vals[i]);
    int64_t lo = 0, hi = m;
    while (lo < hi) {
      const int64_t mid = lo + ((hi - lo) >> 1);
      const K x = K(seq[s ? s[mid] : mid]);
      const bool go_right = right ? !(x > v) : !(x >= v);
      if (go_right)
        lo = mid + 1;
      else
        hi = mid;
    }
    out[i] = O(lo);
  }
}

// The op layer has checked the sorter's values (in range), so the kernel trusts them.
void searchsorted_kernel_cuda(const Tensor& out, const Tensor& boundaries, const Tensor& values,
                              const Tensor& sorter, bool right) {
  const int64_t m = boundaries.sizes().back();
  const bool batched = boundaries.dim() > 1;
  const int64_t per_row = values.dim() == 0 ? 1 : values.sizes().back();
  const int64_t total = values.numel();
  EMBER_CHECK(boundaries.is_contiguous() && values.is_contiguous() && out.is_contiguous() &&
                  (!sorter.defined() || sorter.is_contiguous()),
              "searchsorted (CUDA): expected contiguous tensors");
  if (total == 0) return;
  const int64_t* srt = sorter.defined() ? ptr<int64_t>(sorter) : nullptr;
  dispatch_numeric(values.dtype(), "searchsorted", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* bd = ptr<T>(boundaries);
    const T* vals = ptr<T>(values);
    if (out.dtype() == DType::Int32)
      searchsorted_kernel<T, int32_t><<<grid_for_n(total), 256, 0, current_stream()>>>(
          ptr<int32_t>(out), bd, vals, srt, total, m, per_row, batched, right);
    else
      searchsorted_kernel<T, int64_t><<<grid_for_n(total), 256, 0, current_stream()>>>(
          ptr<int64_t>(out), bd, vals, srt, total, m, per_row, batched, right);
    EMBER_CUDA_CHECK(cudaGetLastError());
  });
}

// ---- unique -------------------------------------------------------------------------------------

__global__ void iota_kernel(int64_t* __restrict__ p, int64_t n) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) p[i] = i;
}

// keys[i] <- the key of column c of row order[i] of the [n, m] matrix x.
template <typename T>
__global__ void column_keys_kernel(const T* __restrict__ x, const int64_t* __restrict__ order,
                                   int64_t n, int64_t m, int64_t c, key_u<T>* __restrict__ keys) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    keys[i] = radix_key(x[order[i] * m + c]);
}

// flag[i] <- 1 where row order[i] starts a group: it differs from row order[i - 1] (compared
// as the CPU: in cmp_t, so NaN never equals NaN and -0.0 equals 0.0).
template <typename T>
__global__ void group_flags_kernel(const T* __restrict__ x, const int64_t* __restrict__ order,
                                   int64_t n, int64_t m, int64_t* __restrict__ flag) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    bool start = i == 0;
    if (!start) {
      const T* a = x + order[i - 1] * m;
      const T* b = x + order[i] * m;
      for (int64_t j = 0; j < m && !start; ++j) start = !(cmp_t<T>(a[j]) == cmp_t<T>(b[j]));
    }
    flag[i] = start ? 1 : 0;
  }
}

// gid holds the inclusive scan of the flags: row order[i] is in group gid[i] - 1.
__global__ void group_scatter_kernel(const int64_t* __restrict__ order,
                                     const int64_t* __restrict__ flag,
                                     const int64_t* __restrict__ gid, int64_t n,
                                     int64_t* __restrict__ first, int64_t* __restrict__ start,
                                     int64_t* __restrict__ inverse) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t g = gid[i] - 1;
    if (flag[i]) {
      first[g] = order[i];
      start[g] = i;
    }
    inverse[order[i]] = g;
  }
}

__global__ void group_counts_kernel(const int64_t* __restrict__ start, int64_t u, int64_t n,
                                    int64_t* __restrict__ counts) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < u; g += step)
    counts[g] = (g + 1 < u ? start[g + 1] : n) - start[g];
}

// The CPU sorts single elements unstably and rows stably; both give the same groups, inverse
// and counts. The index of a group's first row may differ among equal elements (only -0.0 /
// 0.0 can tell them apart in the output).
void unique_rows_kernel(const Tensor& rows, bool consecutive, std::vector<int64_t>& first,
                        std::vector<int64_t>& inverse, std::vector<int64_t>& counts) {
  const int64_t n = rows.sizes()[0];
  const int64_t m = rows.dim() == 1 ? 1 : rows.sizes()[1];
  first.clear(), inverse.clear(), counts.clear();
  EMBER_CHECK(rows.is_contiguous(), "unique (CUDA): expected contiguous rows");
  if (n == 0) return;
  const Device dev = rows.device();
  const cudaStream_t stream = current_stream();
  Tensor ibuf = scratch(dev, 7 * n * int64_t(sizeof(int64_t)));
  int64_t* order = ptr<int64_t>(ibuf);
  int64_t* order2 = order + n;
  int64_t* flag = order + 2 * n;
  int64_t* gid = order + 3 * n;
  int64_t* d_first = order + 4 * n;
  int64_t* d_start = order + 5 * n;
  int64_t* d_inverse = order + 6 * n;
  iota_kernel<<<grid_for_n(n), 256, 0, stream>>>(order, n);
  EMBER_CUDA_CHECK(cudaGetLastError());
  dispatch_all(rows.dtype(), "unique", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using U = key_u<T>;
    const T* x = ptr<T>(rows);
    if (!consecutive) {  // lexicographic: stable radix sorts by each column, last one first
      Tensor kbuf = scratch(dev, 2 * n * int64_t(sizeof(U)));
      U* k0 = ptr<U>(kbuf);
      U* k1 = k0 + n;
      size_t tb = 0;
      EMBER_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, tb, k0, k1, order, order2, n, 0,
                                                       int(sizeof(U) * 8), stream));
      Tensor temp = scratch(dev, int64_t(tb));
      for (int64_t c = m - 1; c >= 0; --c) {
        column_keys_kernel<T><<<grid_for_n(n), 256, 0, stream>>>(x, order, n, m, c, k0);
        EMBER_CUDA_CHECK(cudaGetLastError());
        EMBER_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data_ptr(), tb, k0, k1, order, order2,
                                                         n, 0, int(sizeof(U) * 8), stream));
        std::swap(order, order2);
      }
    }
    group_flags_kernel<T><<<grid_for_n(n), 256, 0, stream>>>(x, order, n, m, flag);
    EMBER_CUDA_CHECK(cudaGetLastError());
  });
  size_t tb = 0;
  EMBER_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, tb, flag, gid, n, stream));
  Tensor temp = scratch(dev, int64_t(tb));
  EMBER_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp.data_ptr(), tb, flag, gid, n, stream));
  int64_t u = 0;
  EMBER_CUDA_CHECK(
      cudaMemcpyAsync(&u, gid + n - 1, sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
  group_scatter_kernel<<<grid_for_n(n), 256, 0, stream>>>(order, flag, gid, n, d_first, d_start,
                                                          d_inverse);
  EMBER_CUDA_CHECK(cudaGetLastError());
  int64_t* d_counts = gid;  // gid is free once the scatter (queued before) has run
  group_counts_kernel<<<grid_for_n(u), 256, 0, stream>>>(d_start, u, n, d_counts);
  EMBER_CUDA_CHECK(cudaGetLastError());
  first.resize(size_t(u));
  counts.resize(size_t(u));
  inverse.resize(size_t(n));
  // Host results (the stub's interface): copied back, then the stream is synchronised.
  EMBER_CUDA_CHECK(cudaMemcpyAsync(first.data(), d_first, size_t(u) * sizeof(int64_t),
                                   cudaMemcpyDeviceToHost, stream));
  EMBER_CUDA_CHECK(cudaMemcpyAsync(counts.data(), d_counts, size_t(u) * sizeof(int64_t),
                                   cudaMemcpyDeviceToHost, stream));
  EMBER_CUDA_CHECK(cudaMemcpyAsync(inverse.data(), d_inverse, size_t(n) * sizeof(int64_t),
                                   cudaMemcpyDeviceToHost, stream));
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, sort) {
  constexpr int cuda = int(DeviceType::CUDA);
  sort_stub.fns[cuda] = &sort_kernel;
  topk_stub.fns[cuda] = &topk_kernel;
  kthvalue_stub.fns[cuda] = &kthvalue_kernel;
  unique_rows_stub.fns[cuda] = &unique_rows_kernel;
  searchsorted_stub.fns[cuda] = &searchsorted_kernel_cuda;
  median_stub.fns[cuda] = &median_kernel;
  mode_stub.fns[cuda] = &mode_kernel;
}

}  // namespace ember::cuda
