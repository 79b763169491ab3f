// CPU kernels of the sparse COO ops (kernels/stubs/sparse.h): coalesce, sparse x dense
// (spmm) and its sampled transpose product (sddmm). Compiled once per CPU capability
// (Note [CPU capability dispatch] in CMakeLists.txt): the row updates vectorize.
//
// Note [Coalesce]
// As PyTorch's CPU coalesce: linearize each entry's sparse index (row-major over the
// sparse sizes), sort the entries by it, and sum each run of equal keys in one pass. The
// sort is an LSD radix sort over only the bits the largest key needs; when the key and the
// entry's position fit one 64-bit word together (a 10k x 10k matrix with 1M entries needs
// 27 + 20 bits) the word (key << pos_bits | pos) is sorted alone, 8 bytes a move, and the
// stable passes keep equal keys in their original order. Histograms and scatters run per
// thread chunk (stable across chunks), then the runs are found per chunk and summed in
// parallel, each run added in its original order. Already sorted keys skip the sort.
#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <type_traits>
#include <vector>

#include "ember/backends/cpu/capability.h"
#include "ember/core/parallel.h"
#include "ember/kernels/functors.h"
#include "ember/kernels/stubs/sparse.h"

namespace ember::cpu {
namespace {

template <typename T>
std::unique_ptr<T[]> buffer(int64_t n) {
  return std::unique_ptr<T[]>(new T[size_t(std::max<int64_t>(n, 1))]);
}

int bit_width(uint64_t v) { return v ? 64 - __builtin_clzll(v) : 0; }

/// Number of chunks a parallel pass over n items uses (one per thread, at least 64k items).
int64_t num_chunks(int64_t n) {
  int64_t t = in_parallel_region() ? 1 : get_num_threads();
  return std::max<int64_t>(1, std::min<int64_t>(t, n / 65536));
}

// Stable LSD radix sort of `a` (n words) by bits [lo, lo + nbits); `tmp` is scratch of n
// words. Returns the buffer holding the result (a or tmp).
uint64_t* radix_sort(uint64_t* a, uint64_t* tmp, int64_t n, int lo, int nbits) {
  if (nbits <= 0 || n < 2) return a;
  const int passes = (nbits + 10) / 11;
  const int digit = (nbits + passes - 1) / passes;
  const int64_t buckets = int64_t(1) << digit;
  const int64_t chunks = num_chunks(n);
  const int64_t per = (n + chunks - 1) / chunks;
  std::vector<int64_t> hist(size_t(chunks * buckets));
  for (int p = 0; p < passes; ++p) {
    const int shift = lo + p * digit;
    const uint64_t mask = uint64_t(buckets - 1);
    std::fill(hist.begin(), hist.end(), 0);
    parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        int64_t* h = hist.data() + c * buckets;
        const int64_t e = std::min(n, (c + 1) * per);
        for (int64_t i = c * per; i < e; ++i) ++h[(a[i] >> shift) & mask];
      }
    });
    // Exclusive offsets, digit-major then chunk: chunk c's digit-d items follow chunk c-1's.
    int64_t sum = 0;
    for (int64_t d = 0; d < buckets; ++d)
      for (int64_t c = 0; c < chunks; ++c) {
        int64_t& h = hist[size_t(c * buckets + d)];
        int64_t v = h;
        h = sum;
        sum += v;
      }
    parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        int64_t* h = hist.data() + c * buckets;
        const int64_t e = std::min(n, (c + 1) * per);
        for (int64_t i = c * per; i < e; ++i) tmp[h[(a[i] >> shift) & mask]++] = a[i];
      }
    });
    std::swap(a, tmp);
  }
  return a;
}

// Entries sorted by key: `order[i]` is the original position of the i-th entry and
// `key_of(i)` its key. Fills run starts (first sorted position of each run of equal keys,
// plus n at the end).
template <typename KeyOf>
std::vector<int64_t> run_starts(int64_t n, const KeyOf& key_of) {
  const int64_t chunks = num_chunks(n);
  const int64_t per = (n + chunks - 1) / chunks;
  std::vector<int64_t> count(size_t(chunks) + 1, 0);
  parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      int64_t k = 0;
      const int64_t e = std::min(n, (c + 1) * per);
      for (int64_t i = c * per; i < e; ++i) k += (i == 0 || key_of(i) != key_of(i - 1));
      count[size_t(c) + 1] = k;
    }
  });
  for (int64_t c = 0; c < chunks; ++c) count[size_t(c) + 1] += count[size_t(c)];
  std::vector<int64_t> starts(size_t(count[size_t(chunks)]) + 1);
  parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      int64_t g = count[size_t(c)];
      const int64_t e = std::min(n, (c + 1) * per);
      for (int64_t i = c * per; i < e; ++i)
        if (i == 0 || key_of(i) != key_of(i - 1)) starts[size_t(g++)] = i;
    }
  });
  starts.back() = n;
  return starts;
}

CoalesceResult coalesce_kernel(const Tensor& indices, const Tensor& values,
                               const Shape& sparse_sizes) {
  const int64_t S = indices.sizes()[0], nnz = indices.sizes()[1];
  const int64_t block = values.sizes()[1];
  const int64_t* idx = indices.data<int64_t>();
  const int64_t is0 = indices.strides()[0], is1 = indices.strides()[1];
  Shape lin_stride(size_t(S), 1);
  for (int64_t d = S - 2; d >= 0; --d) lin_stride[d] = lin_stride[d + 1] * sparse_sizes[d + 1];

  // 1. Linear keys (nonnegative: indices were validated against the sizes).
  auto keys = buffer<int64_t>(nnz);
  parallel_for(0, nnz, 16384, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      int64_t k = 0;
      for (int64_t d = 0; d < S; ++d) k += idx[d * is0 + i * is1] * lin_stride[d];
      keys[i] = k;
    }
  });
  bool sorted = true;
  int64_t max_key = 0;
  for (int64_t i = 0; i < nnz; ++i) {
    if (i && keys[i] < keys[i - 1]) sorted = false;
    max_key = std::max(max_key, keys[i]);
  }

  // 2. Sorted order: `order[i]` the original position of the i-th entry, `skey(i)` its key.
  auto order = buffer<int64_t>(nnz);
  std::unique_ptr<uint64_t[]> words, scratch;
  const uint64_t* packed = nullptr;
  const int pos_bits = bit_width(uint64_t(std::max<int64_t>(nnz - 1, 0)));
  const int key_bits = bit_width(uint64_t(max_key));
  if (sorted) {
    std::iota(order.get(), order.get() + nnz, int64_t(0));
  } else if (key_bits + pos_bits <= 64) {
    words = buffer<uint64_t>(nnz);
    scratch = buffer<uint64_t>(nnz);
    parallel_for(0, nnz, 65536, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        words[i] = (pos_bits == 64 ? 0 : uint64_t(keys[i]) << pos_bits) | uint64_t(i);
    });
    packed = radix_sort(words.get(), scratch.get(), nnz, pos_bits, key_bits);
    const uint64_t pmask = pos_bits == 64 ? ~uint64_t(0) : (uint64_t(1) << pos_bits) - 1;
    parallel_for(0, nnz, 65536, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) order[i] = int64_t(packed[i] & pmask);
    });
  } else {
    std::iota(order.get(), order.get() + nnz, int64_t(0));
    std::stable_sort(order.get(), order.get() + nnz,
                     [&](int64_t x, int64_t y) { return keys[x] < keys[y]; });
  }
  // The i-th sorted key, read sequentially (from the packed words when they were sorted).
  const int key_shift = pos_bits;
  auto skey = [&](int64_t i) -> int64_t {
    if (packed) return int64_t(key_shift == 64 ? 0 : packed[i] >> key_shift);
    return sorted ? keys[i] : keys[order[i]];
  };

  // 3. Runs of equal keys, then one output entry per run.
  std::vector<int64_t> starts = run_starts(nnz, skey);
  const int64_t n_out = int64_t(starts.size()) - 1;
  CoalesceResult r;
  r.indices = empty(Shape{S, n_out}, DType::Int64, indices.device());
  r.values = empty(Shape{n_out, block}, values.dtype(), values.device());
  int64_t* oi = r.indices.data<int64_t>();
  const char* vin = values.data_ptr();
  char* vout = r.values.data_ptr();
  dispatch_all(values.dtype(), "coalesce", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = opmath_t<T>;
    const T* vi = reinterpret_cast<const T*>(vin);
    T* vo = reinterpret_cast<T*>(vout);
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(block, 1));
    parallel_for(0, n_out, grain, [&](int64_t g0, int64_t g1) {
      auto acc = buffer<Acc>(block);
      for (int64_t g = g0; g < g1; ++g) {
        const int64_t b = starts[size_t(g)], e = starts[size_t(g) + 1];
        const int64_t first = order[b];
        for (int64_t d = 0; d < S; ++d) oi[d * n_out + g] = idx[d * is0 + first * is1];
        T* dst = vo + g * block;
        if (e - b == 1) {
          std::memcpy(dst, vi + first * block, size_t(block) * sizeof(T));
          continue;
        }
        for (int64_t j = 0; j < block; ++j) acc[j] = Acc(vi[first * block + j]);
        for (int64_t i = b + 1; i < e; ++i) {
          const T* src = vi + order[i] * block;
          for (int64_t j = 0; j < block; ++j) acc[j] = acc[j] + Acc(src[j]);
        }
        for (int64_t j = 0; j < block; ++j) dst[j] = T(acc[j]);
      }
    });
  });
  return r;
}

// Row pointers of the entries grouped by row (rowptr [M + 1]) and, for unsorted rows, the
// entries in row order (a stable counting sort); `perm` stays empty for sorted rows.
void group_rows(const int64_t* rows, int64_t nnz, int64_t M, std::vector<int64_t>& rowptr,
                std::vector<int64_t>& perm, bool sorted) {
  rowptr.assign(size_t(M) + 1, 0);
  for (int64_t e = 0; e < nnz; ++e) ++rowptr[size_t(rows[e]) + 1];
  for (int64_t r = 0; r < M; ++r) rowptr[size_t(r) + 1] += rowptr[size_t(r)];
  if (sorted) return;
  perm.resize(size_t(nnz));
  std::vector<int64_t> next(rowptr.begin(), rowptr.end() - 1);
  for (int64_t e = 0; e < nnz; ++e) perm[size_t(next[size_t(rows[e])]++)] = e;
}

// Runs f(r0, r1) over row ranges holding about equal numbers of entries, in parallel.
template <typename F>
void for_rows_balanced(const std::vector<int64_t>& rowptr, int64_t N, const F& f) {
  const int64_t M = int64_t(rowptr.size()) - 1;
  const int64_t nnz = rowptr.back();
  const int64_t work = nnz * std::max<int64_t>(N, 1);
  int64_t parts = in_parallel_region() ? 1 : get_num_threads();
  parts = std::max<int64_t>(1, std::min<int64_t>(parts * 4, work / 32768));
  parallel_for(0, parts, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      // Rows whose first entry falls in this part's share of the entries.
      auto at = [&](int64_t q) {
        if (q >= parts) return M;
        const int64_t target = nnz * q / parts;
        return int64_t(std::lower_bound(rowptr.begin(), rowptr.end() - 1, target) - rowptr.begin());
      };
      int64_t r0 = p == 0 ? 0 : at(p), r1 = at(p + 1);
      if (r0 < r1) f(r0, r1);
    }
  });
}

void spmm_kernel(const Tensor& out, const Tensor& rows, const Tensor& cols, const Tensor& values,
                 const Tensor& dense, Scalar alpha, bool rows_sorted) {
  const int64_t M = out.sizes()[0], N = out.sizes()[1], nnz = rows.numel();
  if (M == 0 || N == 0 || nnz == 0) return;
  const int64_t* ri = rows.data<int64_t>();
  const int64_t* ci = cols.data<int64_t>();
  std::vector<int64_t> rowptr, perm;
  group_rows(ri, nnz, M, rowptr, perm, rows_sorted);
  const int64_t* pe = perm.empty() ? nullptr : perm.data();
  const int64_t ld = dense.strides()[0];
  dispatch_numeric(out.dtype(), "spmm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = opmath_t<T>;
    if constexpr (std::is_same_v<T, bool>) {
      return;  // refused by dispatch_numeric
    } else {
      const T* vals = values.data<T>();
      const T* D = dense.data<T>();
      T* O = out.data<T>();
      const Acc a = alpha.to<Acc>();
      for_rows_balanced(rowptr, N, [&](int64_t r0, int64_t r1) {
        auto acc = buffer<Acc>(N);
        Acc* __restrict ac = acc.get();
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t b = rowptr[size_t(r)], e = rowptr[size_t(r) + 1];
          if (b == e) continue;
          T* __restrict o = O + r * N;
          for (int64_t j = 0; j < N; ++j) ac[j] = Acc(0);
          for (int64_t k = b; k < e; ++k) {
            const int64_t ent = pe ? pe[k] : k;
            const Acc v = a * Acc(vals[ent]);
            const T* __restrict d = D + ci[ent] * ld;
            for (int64_t j = 0; j < N; ++j) ac[j] += v * Acc(d[j]);
          }
          for (int64_t j = 0; j < N; ++j) o[j] = T(Acc(o[j]) + ac[j]);
        }
      });
    }
  });
}

void sddmm_kernel(const Tensor& out, const Tensor& rows, const Tensor& cols, const Tensor& a,
                  const Tensor& b) {
  const int64_t nnz = out.numel(), N = a.sizes()[1];
  if (nnz == 0) return;
  const int64_t* ri = rows.data<int64_t>();
  const int64_t* ci = cols.data<int64_t>();
  const int64_t lda = a.strides()[0], ldb = b.strides()[0];
  dispatch_numeric(out.dtype(), "sddmm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = opmath_t<T>;
    if constexpr (std::is_same_v<T, bool>) {
      return;  // refused by dispatch_numeric
    } else {
      const T* A = a.data<T>();
      const T* B = b.data<T>();
      T* O = out.data<T>();
      const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(N, 1));
      parallel_for(0, nnz, grain, [&](int64_t e0, int64_t e1) {
        for (int64_t e = e0; e < e1; ++e) {
          const T* __restrict x = A + ri[e] * lda;
          const T* __restrict y = B + ci[e] * ldb;
          Acc s = Acc(0);
          for (int64_t j = 0; j < N; ++j) s += Acc(x[j]) * Acc(y[j]);
          O[e] = T(s);
        }
      });
    }
  });
}

EMBER_REGISTER_CPU_KERNELS(sparse) {
  constexpr int cpu = int(DeviceType::CPU);
  coalesce_stub.fns[cpu] = &coalesce_kernel;
  spmm_stub.fns[cpu] = &spmm_kernel;
  sddmm_stub.fns[cpu] = &sddmm_kernel;
}

}  // namespace
}  // namespace ember::cpu
