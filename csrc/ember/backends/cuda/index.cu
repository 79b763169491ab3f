// CUDA kernels of the indexing stubs (kernels/stubs/index.h: index_gather, index_scatter,
// index_offsets, nonzero), of index_remap (kernels/stubs/join.h: flip, roll,
// repeat_interleave) and of scatter_reduce (kernels/stubs/surface_scan.h), with the CPU
// kernels' semantics (backends/cpu/index_kernels.cpp, join_kernels.cpp, surface_kernels.cpp):
//  * gather / plain scatter / offsets: one grid-stride thread per element of the
//    TensorIterator (loops.cuh's OffsetCalc); gathers and plain scatters move raw bytes of
//    the element's width. Plain scatters with duplicate indices: one of the writers wins
//    (unspecified which, as on the CPU's parallel loop and in PyTorch).
//  * scatter with accumulate (index_put_ accumulate=True, scatter_add, index_add): atomicAdd
//    for float/double/int32/int64, a CAS loop on the enclosing 32-bit word for the 8- and
//    16-bit types (float16/bfloat16 add in float and round once, as the CPU); bool ORs.
//    Floating sums of duplicates are added in an unspecified order (not bitwise the CPU's).
//  * index_offsets (index validation): bad indices never write; the kernel keeps the
//    smallest bad position with atomicMin, a one-thread kernel reads that index, one copy
//    back (a stream sync) tells the host, which raises (Note [CUDA bad indices]).
//  * nonzero: tiles of 4096 elements in row-major order; a count pass
//    (__syncthreads_count), an exclusive scan of the tile counts on one block, one copy back
//    of the total (the only sync: it sizes the output), then a write pass that places each
//    tile's nonzeros by warp ballots and a block prefix.
//  * index_remap: the host's per-dim offset tables are concatenated into one int64 upload
//    per call; one thread per output element sums its dims' table entries.
//  * scatter_reduce: a validate (+ identity fill when !include_self) pass, an atomic reduce
//    pass (atomicAdd / atomicMax / atomicMin where native, CAS loops elsewhere, the CPU's
//    NaN rules), and for mean a divide pass by the atomic counts; bad indices raise as on
//    the CPU (IndexError) after one copy back.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "ember/backends/cuda/loops.cuh"
#include "ember/core/flags.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/registration.h"
#include "ember/kernels/stubs/index.h"
#include "ember/kernels/stubs/join.h"
#include "ember/kernels/stubs/surface_scan.h"

namespace ember::cuda {
namespace {

using ull = unsigned long long;
constexpr ull kNoBad = ~ull(0);

// Gathers and plain scatters only move bytes: dispatch on the element size.
// ---- atomics ----------------------------------------------------------------------------

/// Atomically replaces *addr by f(*addr). 4- and 8-byte types CAS their own word; 1- and
/// 2-byte types CAS the aligned 32-bit word that holds them (the allocator's blocks are
/// 512-byte aligned, so that word never leaves the allocation).
template <typename T, typename F>
__device__ __forceinline__ void atomic_update(T* addr, F f) {
  if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
    using U = std::conditional_t<sizeof(T) == 4, unsigned int, ull>;
    U* p = reinterpret_cast<U*>(addr);
    U old = *p, assumed;
    do {
      assumed = old;
      T v;
      memcpy(&v, &assumed, sizeof(T));
      const T nv = f(v);
      U nu;
      memcpy(&nu, &nv, sizeof(T));
      if (nu == assumed) return;
      old = atomicCAS(p, assumed, nu);
    } while (old != assumed);
  } else {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2, "atomic_update: unsupported size");
    using B = std::conditional_t<sizeof(T) == 1, uint8_t, uint16_t>;
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    unsigned int* word = reinterpret_cast<unsigned int*>(a & ~uintptr_t(3));
    const unsigned shift = unsigned(a & 3u) * 8u;
    const unsigned mask = unsigned(B(~B(0))) << shift;
    unsigned old = *word, assumed;
    do {
      assumed = old;
      const B bits = B((assumed & mask) >> shift);
      T v;
      memcpy(&v, &bits, sizeof(T));
      const T nv = f(v);
      B nb;
      memcpy(&nb, &nv, sizeof(T));
      const unsigned nw = (assumed & ~mask) | (unsigned(nb) << shift);
      if (nw == assumed) return;
      old = atomicCAS(word, assumed, nw);
    } while (old != assumed);
  }
}

/// The compute type of scatter_reduce (the CPU's C): T, float for the 16-bit floats.
template <typename T>
using red_t =
    std::conditional_t<std::is_floating_point<T>::value || std::is_integral<T>::value, T, float>;

template <typename C>
__device__ __forceinline__ bool is_nan_(C v) {
  if constexpr (std::is_floating_point<C>::value)
    return v != v;
  else
    return false;
}

/// *dst = T(M(*dst) + x) atomically (M = opmath_t<T>), as the CPU's accumulate.
template <typename T, typename M>
__device__ __forceinline__ void atomic_add_to(T* dst, M x) {
  if constexpr (std::is_same<T, float>::value || std::is_same<T, double>::value) {
    atomicAdd(dst, x);
  } else if constexpr (std::is_same<T, int32_t>::value) {
    atomicAdd(reinterpret_cast<int*>(dst), int(x));
  } else if constexpr (std::is_same<T, int64_t>::value) {
    atomicAdd(reinterpret_cast<ull*>(dst), ull(x));
  } else {
    atomic_update(dst, [x](T o) { return T(M(o) + x); });
  }
}

// Note [CUDA bad indices]
// Kernels that validate indices never read or write through a bad one: they record the
// smallest bad position (in their iteration order) with atomicMin into a two-word device
// buffer initialised to all ones; a one-thread kernel then copies the index at that
// position into the second word, and the host copies both words back (one stream sync)
// and raises the CPU's error with that index. With one bad index the message is the
// CPU's; with several, the CPU's parallel loop may name another one.
struct BadIndex {
  Tensor buf;  // int64[2]: {position, index}
  ull* dev = nullptr;
  explicit BadIndex(Device device) {
    buf = empty(Shape{2}, DType::Int64, device);
    dev = reinterpret_cast<ull*>(buf.data_ptr());
    EMBER_CUDA_CHECK(cudaMemsetAsync(dev, 0xff, 2 * sizeof(ull), current_stream()));
  }
  /// Copies the result back (syncs the stream); true and *bad set when an index was bad.
  bool found(int64_t* bad) const {
    ull host[2];
    cudaStream_t s = current_stream();
    EMBER_CUDA_CHECK(cudaMemcpyAsync(host, dev, sizeof(host), cudaMemcpyDeviceToHost, s));
    EMBER_CUDA_CHECK(cudaStreamSynchronize(s));
    if (host[0] == kNoBad) return false;
    *bad = int64_t(host[1]);
    return true;
  }
};

// ---- gather / scatter ---------------------------------------------------------------------

// Operands {out, src, idx}: out = *(src + idx * step bytes).
template <typename T>
struct GatherBody {
  int64_t step;
  __device__ __forceinline__ void operator()(char* (&p)[3]) const {
    const int64_t k = *reinterpret_cast<const int64_t*>(p[2]);
    *reinterpret_cast<T*>(p[0]) = *reinterpret_cast<const T*>(p[1] + k * step);
  }
};

// Operands {dst, src, idx}: *(dst + idx * step bytes) = src.
template <typename T>
struct ScatterBody {
  int64_t step;
  __device__ __forceinline__ void operator()(char* (&p)[3]) const {
    const int64_t k = *reinterpret_cast<const int64_t*>(p[2]);
    *reinterpret_cast<T*>(p[0] + k * step) = *reinterpret_cast<const T*>(p[1]);
  }
};

// Operands {dst, src, idx}: *(dst + idx * step bytes) += alpha * src, atomically.
template <typename T>
struct ScatterAddBody {
  using M = opmath_t<T>;
  int64_t step;
  M alpha;
  bool unit;
  __device__ __forceinline__ void operator()(char* (&p)[3]) const {
    const int64_t k = *reinterpret_cast<const int64_t*>(p[2]);
    T* dst = reinterpret_cast<T*>(p[0] + k * step);
    const M v = M(*reinterpret_cast<const T*>(p[1]));
    if constexpr (std::is_same<T, bool>::value) {
      if (v && alpha) *dst = true;  // *dst || (v && alpha): every writer writes true
    } else {
      atomic_add_to<T, M>(dst, unit ? v : M(alpha * v));
    }
  }
};

void gather_kernel(TensorIterator& it, int64_t stride) {
  if (it.numel() == 0) return;
  dispatch_by_size(it.tensor(0).element_size(), "indexing", [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_iter<3>(it, GatherBody<T>{stride * int64_t(sizeof(T))});
  });
}

void scatter_kernel(TensorIterator& it, int64_t stride, bool accumulate, Scalar alpha) {
  if (it.numel() == 0) return;
  if (!accumulate) {
    dispatch_by_size(it.tensor(0).element_size(), "indexing", [&](auto tag) {
      using T = typename decltype(tag)::type;
      launch_iter<3>(it, ScatterBody<T>{stride * int64_t(sizeof(T))});
    });
    return;
  }
  // Float atomics add duplicates in an unspecified order. Under
  // use_deterministic_algorithms(True) one thread adds them in iteration order (the CPU's
  // order): deterministic, and slow for large inputs. Integer sums are exact either way.
  const bool serial = is_floating(it.dtype(0)) &&
                      backend_flags().deterministic_algorithms.load(std::memory_order_relaxed);
  dispatch_all(it.dtype(0), "index_put_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    launch_iter<3>(
        it, ScatterAddBody<T>{stride * int64_t(sizeof(T)), alpha.to<M>(), alpha.to_double() == 1.0},
        serial);
  });
}

// ---- index validation and offsets ------------------------------------------------------------

// Operands {offs, idx} (N == 2) or {idx} (N == 1).
template <int N>
__global__ void __launch_bounds__(kThreads)
    offsets_kernel_dev(OffsetCalc<N> calc, int64_t n, int64_t size, int64_t stride, int64_t lo,
                       ull* bad) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    char* p[N];
    calc.pointers(i, p);
    int64_t k = *reinterpret_cast<const int64_t*>(p[N - 1]);
    if (k < lo || k >= size) {
      atomicMin(bad, ull(i));
      continue;
    }
    if constexpr (N == 2) {
      if (k < 0) k += size;
      *reinterpret_cast<int64_t*>(p[0]) += k * stride;
    }
  }
}

// bad[1] <- the index at position bad[0] (when one was recorded).
template <int N>
__global__ void fetch_bad_kernel(OffsetCalc<N> calc, ull* bad) {
  if (bad[0] == kNoBad) return;
  char* p[N];
  calc.pointers(int64_t(bad[0]), p);
  bad[1] = ull(*reinterpret_cast<const int64_t*>(p[N - 1]));
}

template <int N>
bool run_offsets(TensorIterator& it, int64_t size, int64_t stride, int64_t lo, int64_t* bad) {
  BadIndex b(it.tensor(0).device());
  OffsetCalc<N> calc = make_offset_calc<N>(it);
  cudaStream_t s = current_stream();
  const int64_t n = it.numel();
  offsets_kernel_dev<N><<<grid_for(n), kThreads, 0, s>>>(calc, n, size, stride, lo, b.dev);
  EMBER_CUDA_CHECK(cudaGetLastError());
  fetch_bad_kernel<N><<<1, 1, 0, s>>>(calc, b.dev);
  EMBER_CUDA_CHECK(cudaGetLastError());
  return !b.found(bad);
}

bool offsets_kernel(TensorIterator& it, int64_t size, int64_t stride, bool allow_negative,
                    int64_t* bad) {
  if (it.numel() == 0) return true;
  const int64_t lo = allow_negative ? -size : 0;
  if (it.noutputs() == 1) return run_offsets<2>(it, size, stride, lo, bad);
  return run_offsets<1>(it, size, stride, lo, bad);
}

// ---- nonzero -----------------------------------------------------------------------------------

constexpr int kNzThreads = 256;
constexpr int kNzItems = 16;
constexpr int64_t kNzTile = int64_t(kNzThreads) * kNzItems;
constexpr int kMaxNzDims = 25;

struct NzGeom {
  int nd;
  bool contiguous;
  int64_t sizes[kMaxNzDims];
  int64_t strides[kMaxNzDims];

  // Element offset of row-major position i.
  __device__ __forceinline__ int64_t offset(int64_t i) const {
    if (contiguous) return i;
    int64_t off = 0;
    for (int d = nd - 1; d >= 0; --d) {
      off += (i % sizes[d]) * strides[d];
      i /= sizes[d];
    }
    return off;
  }
};

template <typename T>
__device__ __forceinline__ bool nz_at(const T* x, const NzGeom& g, int64_t i) {
  using M = opmath_t<T>;
  return M(x[g.offset(i)]) != M(0);
}

// counts[b] <- the number of nonzeros in tile b.
template <typename T>
__global__ void __launch_bounds__(kNzThreads)
    nz_count_kernel(const T* __restrict__ x, NzGeom g, int64_t n, int64_t* __restrict__ counts) {
  const int64_t base = int64_t(blockIdx.x) * kNzTile;
  int64_t c = 0;
  for (int j = 0; j < kNzItems; ++j) {
    const int64_t i = base + int64_t(j) * kNzThreads + threadIdx.x;
    c += __syncthreads_count(i < n && nz_at(x, g, i));
  }
  if (threadIdx.x == 0) counts[blockIdx.x] = c;
}

// Exclusive scan of counts[0, nb) in place by one block of 1024 threads; counts[nb] <- total.
__global__ void __launch_bounds__(1024) nz_scan_kernel(int64_t* counts, int64_t nb) {
  __shared__ int64_t warp_tot[32];
  __shared__ int64_t carry;
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  for (int64_t base = 0; base < nb; base += blockDim.x) {
    const int64_t i = base + threadIdx.x;
    const int64_t v = i < nb ? counts[i] : 0;
    int64_t incl = v;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
      const int64_t o = __shfl_up_sync(0xffffffffu, incl, off);
      if (lane >= off) incl += o;
    }
    if (lane == 31) warp_tot[warp] = incl;
    __syncthreads();
    if (warp == 0) {
      int64_t t = warp_tot[lane];  // blockDim.x == 1024: 32 warps
#pragma unroll
      for (int off = 1; off < 32; off <<= 1) {
        const int64_t o = __shfl_up_sync(0xffffffffu, t, off);
        if (lane >= off) t += o;
      }
      warp_tot[lane] = t;  // inclusive prefix of warp totals
    }
    __syncthreads();
    const int64_t before = carry + (warp > 0 ? warp_tot[warp - 1] : 0);
    if (i < nb) counts[i] = before + incl - v;
    __syncthreads();
    if (threadIdx.x == 0) carry += warp_tot[31];
    __syncthreads();
  }
  if (threadIdx.x == 0) counts[nb] = carry;
}

// Writes the row-major coordinates of tile b's nonzeros from row offsets[b] of out [*, nd].
template <typename T>
__global__ void __launch_bounds__(kNzThreads)
    nz_write_kernel(const T* __restrict__ x, NzGeom g, int64_t n,
                    const int64_t* __restrict__ offsets, int64_t* __restrict__ out) {
  constexpr int kWarps = kNzThreads / 32;
  __shared__ int warp_cnt[kWarps];
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
  const int64_t base = int64_t(blockIdx.x) * kNzTile;
  int64_t row = offsets[blockIdx.x];
  for (int j = 0; j < kNzItems; ++j) {
    const int64_t i = base + int64_t(j) * kNzThreads + threadIdx.x;
    const bool nz = i < n && nz_at(x, g, i);
    const unsigned m = __ballot_sync(0xffffffffu, nz);
    if (lane == 0) warp_cnt[warp] = __popc(m);
    __syncthreads();
    int before = __popc(m & ((1u << lane) - 1u)), total = 0;
    for (int w = 0; w < kWarps; ++w) {
      const int c = warp_cnt[w];
      if (w < warp) before += c;
      total += c;
    }
    if (nz) {
      int64_t* o = out + (row + before) * g.nd;
      int64_t rem = i;
      for (int d = g.nd - 1; d >= 0; --d) {
        o[d] = rem % g.sizes[d];
        rem /= g.sizes[d];
      }
    }
    row += total;
    __syncthreads();  // warp_cnt is rewritten by the next chunk
  }
}

Tensor nonzero_kernel(const Tensor& self) {
  const int64_t nd = self.dim(), n = self.numel();
  EMBER_CHECK(nd <= kMaxNzDims, "nonzero (CUDA): supports at most ", kMaxNzDims, " dims, got ", nd);
  const Device dev = self.device();
  if (n == 0) return empty(Shape{0, nd}, DType::Int64, dev);
  NzGeom g{};
  g.nd = int(nd);
  g.contiguous = self.is_contiguous();
  for (int64_t d = 0; d < nd; ++d) {
    g.sizes[d] = self.sizes()[d];
    g.strides[d] = self.strides()[d];
  }
  const int64_t nb = (n + kNzTile - 1) / kNzTile;
  EMBER_CHECK(nb < (int64_t(1) << 31), "nonzero (CUDA): tensor too large");
  Tensor counts = empty(Shape{nb + 1}, DType::Int64, dev);
  int64_t* cp = reinterpret_cast<int64_t*>(counts.data_ptr());
  cudaStream_t s = current_stream();
  int64_t total = 0;
  dispatch_all(self.dtype(), "nonzero", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = reinterpret_cast<const T*>(self.data_ptr());
    nz_count_kernel<T><<<unsigned(nb), kNzThreads, 0, s>>>(x, g, n, cp);
    EMBER_CUDA_CHECK(cudaGetLastError());
    nz_scan_kernel<<<1, 1024, 0, s>>>(cp, nb);
    EMBER_CUDA_CHECK(cudaGetLastError());
    EMBER_CUDA_CHECK(cudaMemcpyAsync(&total, cp + nb, sizeof(int64_t), cudaMemcpyDeviceToHost, s));
    EMBER_CUDA_CHECK(cudaStreamSynchronize(s));  // the output's size
  });
  Tensor out = empty(Shape{total, nd}, DType::Int64, dev);
  if (total == 0 || nd == 0) return out;
  dispatch_all(self.dtype(), "nonzero", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = reinterpret_cast<const T*>(self.data_ptr());
    nz_write_kernel<T><<<unsigned(nb), kNzThreads, 0, s>>>(
        x, g, n, cp, reinterpret_cast<int64_t*>(out.data_ptr()));
    EMBER_CUDA_CHECK(cudaGetLastError());
  });
  return out;
}

// ---- index remap (flip, roll, repeat_interleave) -------------------------------------------

constexpr int kMaxRemapDims = 25;

struct RemapGeom {
  int nd;
  int64_t sizes[kMaxRemapDims];
  int64_t start[kMaxRemapDims];  // of dim d's table in the concatenated tables
};

template <typename W>
__global__ void __launch_bounds__(kThreads)
    remap_kernel_dev(W* __restrict__ out, const W* __restrict__ in,
                     const int64_t* __restrict__ tables, RemapGeom g, int64_t n) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t rem = i, off = 0;
    for (int d = g.nd - 1; d >= 0; --d) {
      off += __ldg(tables + g.start[d] + rem % g.sizes[d]);
      rem /= g.sizes[d];
    }
    out[i] = in[off];
  }
}

void remap_kernel(const Tensor& out, const Tensor& in, const RemapTables& tables) {
  EMBER_CHECK(
      out.is_contiguous() && out.dtype() == in.dtype() && int64_t(tables.size()) == out.dim(),
      "index_remap: internal error: bad operands");
  EMBER_CHECK(out.dim() <= kMaxRemapDims, "index_remap (CUDA): supports at most ", kMaxRemapDims,
              " dims, got ", out.dim());
  const int64_t n = out.numel();
  if (n == 0) return;
  RemapGeom g{};
  g.nd = int(tables.size());
  std::vector<int64_t> flat;
  size_t total = 0;
  for (const auto& t : tables) total += t.size();
  flat.reserve(total);
  for (int d = 0; d < g.nd; ++d) {
    g.sizes[d] = int64_t(tables[size_t(d)].size());
    g.start[d] = int64_t(flat.size());
    flat.insert(flat.end(), tables[size_t(d)].begin(), tables[size_t(d)].end());
  }
  cudaStream_t s = current_stream();
  Tensor dev_tables;
  const int64_t* tp = nullptr;
  if (!flat.empty()) {
    // A pageable upload: cudaMemcpyAsync returns once `flat` is staged, so it may go.
    dev_tables = empty(Shape{int64_t(flat.size())}, DType::Int64, out.device());
    tp = reinterpret_cast<const int64_t*>(dev_tables.data_ptr());
    EMBER_CUDA_CHECK(cudaMemcpyAsync(const_cast<int64_t*>(tp), flat.data(),
                                     flat.size() * sizeof(int64_t), cudaMemcpyHostToDevice, s));
  }
  dispatch_by_size(in.element_size(), "indexing", [&](auto tag) {
    using W = typename decltype(tag)::type;
    remap_kernel_dev<W><<<grid_for(n), kThreads, 0, s>>>(
        reinterpret_cast<W*>(out.data_ptr()), reinterpret_cast<const W*>(in.data_ptr()), tp, g, n);
  });
  EMBER_CUDA_CHECK(cudaGetLastError());
}

// ---- scatter_reduce
// ------------------------------------------------------------------------------

constexpr int kMaxScatterDims = 25;

struct ScatterGeom {
  int nd, dim;
  int64_t limit;                      // out.sizes()[dim]
  int64_t isizes[kMaxScatterDims];    // index (and src) sizes, contiguous
  int64_t ostrides[kMaxScatterDims];  // out strides

  // out's element offset of index element i whose (valid) index is v.
  __device__ __forceinline__ int64_t offset(int64_t i, int64_t v) const {
    int64_t off = 0;
    for (int d = nd - 1; d >= 0; --d) {
      int64_t c = i % isizes[d];
      i /= isizes[d];
      if (d == dim) c = v < 0 ? v + limit : v;
      off += c * ostrides[d];
    }
    return off;
  }
};

// Validates every index (Note [CUDA bad indices]); with `fill`, out at every reached
// position <- id (the reduction's identity, for !include_self).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    scatter_check_kernel(T* __restrict__ out, const int64_t* __restrict__ ix, ScatterGeom g,
                         int64_t n, bool fill, T id, ull* bad) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t v = ix[i];
    if (v < -g.limit || v >= g.limit) {
      atomicMin(bad, ull(i));
      continue;
    }
    if (fill) out[g.offset(i, v)] = id;
  }
}

template <typename T>
__device__ __forceinline__ void scatter_combine(T* o, T sv, ScatterReduce k) {
  using C = red_t<T>;
  const C b = C(sv);
  switch (k) {
    case ScatterReduce::Prod:
      if constexpr (std::is_same<T, int32_t>::value || std::is_same<T, int64_t>::value) {
        using U = std::make_unsigned_t<T>;  // wraps like the CPU's product, without UB
        atomic_update(o, [b](T a) { return T(U(a) * U(b)); });
      } else {
        atomic_update(o, [b](T a) { return T(C(C(a) * b)); });
      }
      break;
    case ScatterReduce::Amax:
    case ScatterReduce::Amin: {
      const bool mx = k == ScatterReduce::Amax;
      if constexpr (std::is_same<T, int32_t>::value) {
        if (mx)
          atomicMax(reinterpret_cast<int*>(o), int(b));
        else
          atomicMin(reinterpret_cast<int*>(o), int(b));
      } else if constexpr (std::is_same<T, int64_t>::value) {
        if (mx)
          atomicMax(reinterpret_cast<long long*>(o), static_cast<long long>(b));
        else
          atomicMin(reinterpret_cast<long long*>(o), static_cast<long long>(b));
      } else {
        // The CPU's rule: a NaN (either side) wins, else the larger (smaller).
        atomic_update(o, [b, mx](T at) {
          const C a = C(at);
          const bool keep = (is_nan_(a) || (mx ? a >= b : a <= b)) && !is_nan_(b);
          return keep ? at : T(b);
        });
      }
      break;
    }
    default:  // Sum, Mean
      if constexpr (std::is_same<T, float>::value || std::is_same<T, double>::value) {
        atomicAdd(o, b);
      } else if constexpr (std::is_same<T, int32_t>::value) {
        atomicAdd(reinterpret_cast<int*>(o), int(b));
      } else if constexpr (std::is_same<T, int64_t>::value) {
        atomicAdd(reinterpret_cast<ull*>(o), ull(b));
      } else {
        atomic_update(o, [b](T a) { return T(C(C(a) + b)); });
      }
      break;
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    scatter_reduce_kernel_dev(T* __restrict__ out, const int64_t* __restrict__ ix,
                              const T* __restrict__ src, ScatterGeom g, int64_t n, ScatterReduce k,
                              ull* __restrict__ count) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t v = ix[i];
    if (v < -g.limit || v >= g.limit) continue;  // reported by scatter_check_kernel
    const int64_t off = g.offset(i, v);
    scatter_combine<T>(out + off, src[i], k);
    if (count) atomicAdd(count + off, ull(1));
  }
}

// Mean: out[j] /= count[j] (+1 with self) where some index reached j.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    scatter_mean_kernel(T* __restrict__ out, const ull* __restrict__ count, int64_t n, int extra) {
  using C = red_t<T>;
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += step) {
    const ull c = count[j];
    if (c == 0) continue;
    out[j] = T(C(C(out[j]) / C(int64_t(c) + extra)));
  }
}

// bad[1] <- ix[bad[0]] (when one was recorded).
__global__ void fetch_bad_index_kernel(const int64_t* ix, ull* bad) {
  if (bad[0] != kNoBad) bad[1] = ull(ix[bad[0]]);
}

void scatter_reduce_kernel(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                           ScatterReduce k, bool include_self) {
  const int64_t nd = index.dim(), n = index.numel();
  EMBER_CHECK(
      out.is_contiguous() && index.is_contiguous() && src.is_contiguous() && out.dim() == nd,
      "scatter_reduce: internal error: bad operands");
  EMBER_CHECK(nd <= kMaxScatterDims, "scatter_reduce (CUDA): supports at most ", kMaxScatterDims,
              " dims, got ", nd);
  if (n == 0) return;
  ScatterGeom g{};
  g.nd = int(nd);
  g.dim = int(dim);
  g.limit = out.sizes()[dim];
  for (int64_t d = 0; d < nd; ++d) {
    g.isizes[d] = index.sizes()[d];
    g.ostrides[d] = out.strides()[d];
  }
  const Device dev = out.device();
  cudaStream_t s = current_stream();
  BadIndex bad(dev);
  const int64_t* ix = reinterpret_cast<const int64_t*>(index.data_ptr());
  Tensor count;
  ull* cnt = nullptr;
  if (k == ScatterReduce::Mean) {
    count = empty(Shape{out.numel()}, DType::Int64, dev);
    cnt = reinterpret_cast<ull*>(count.data_ptr());
    EMBER_CUDA_CHECK(cudaMemsetAsync(cnt, 0, size_t(out.numel()) * sizeof(ull), s));
  }
  dispatch_all(out.dtype(), "scatter_reduce", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = red_t<T>;
    C id = k == ScatterReduce::Prod   ? C(1)
           : k == ScatterReduce::Amax ? std::numeric_limits<C>::lowest()
           : k == ScatterReduce::Amin ? std::numeric_limits<C>::max()
                                      : C(0);
    if constexpr (std::is_floating_point<C>::value) {
      if (k == ScatterReduce::Amax) id = -std::numeric_limits<C>::infinity();
      if (k == ScatterReduce::Amin) id = std::numeric_limits<C>::infinity();
    }
    T* o = reinterpret_cast<T*>(out.data_ptr());
    scatter_check_kernel<T>
        <<<grid_for(n), kThreads, 0, s>>>(o, ix, g, n, !include_self, T(id), bad.dev);
    EMBER_CUDA_CHECK(cudaGetLastError());
    // As scatter's accumulate: float sums and products of duplicates in a fixed order (one
    // thread, the CPU's order) under use_deterministic_algorithms; amax/amin are exact.
    const bool serial = std::is_floating_point<C>::value && k != ScatterReduce::Amax &&
                        k != ScatterReduce::Amin &&
                        backend_flags().deterministic_algorithms.load(std::memory_order_relaxed);
    scatter_reduce_kernel_dev<T><<<serial ? 1u : grid_for(n), serial ? 1 : kThreads, 0, s>>>(
        o, ix, reinterpret_cast<const T*>(src.data_ptr()), g, n, k, cnt);
    EMBER_CUDA_CHECK(cudaGetLastError());
    const int64_t m = out.numel();
    if (cnt && m > 0) {  // out can be empty while every index is bad (a 0-size dim)
      scatter_mean_kernel<T><<<grid_for(m), kThreads, 0, s>>>(o, cnt, m, include_self ? 1 : 0);
      EMBER_CUDA_CHECK(cudaGetLastError());
    }
  });
  fetch_bad_index_kernel<<<1, 1, 0, s>>>(ix, bad.dev);
  EMBER_CUDA_CHECK(cudaGetLastError());
  int64_t v = 0;
  EMBER_CHECK_INDEX(!bad.found(&v), "scatter_reduce(): index ", v,
                    " is out of bounds for dimension ", dim, " with size ", g.limit);
}

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, index) {
  constexpr int cuda = int(DeviceType::CUDA);
  index_gather_stub.fns[cuda] = &gather_kernel;
  index_scatter_stub.fns[cuda] = &scatter_kernel;
  index_offsets_stub.fns[cuda] = &offsets_kernel;
  nonzero_stub.fns[cuda] = &nonzero_kernel;
  index_remap_stub.fns[cuda] = &remap_kernel;
  scatter_reduce_stub.fns[cuda] = &scatter_reduce_kernel;
}

}  // namespace ember::cuda
