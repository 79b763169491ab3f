// CUDA kernels of the pooling family (kernels/stubs/nn_pool.h), walking the window
// tables of Note [Pooling windows] like the CPU kernels (backends/cpu/nn_pool.cpp).
// The host tables (PoolGeom) are packed into one int64 buffer (the doubles bit-cast)
// and kept on the device per geometry (Note [Pool table cache]), so a training loop
// uploads each geometry once.
//  * max_pool: one thread per output element (grid-stride), the CPU's scan order, its
//    first maximum and NaN rule.
//  * avg_pool forward: one thread per output element, the window sum in opmath_t times
//    the weight computed in double as the CPU does.
//  * avg_pool backward (the adjoint): a deterministic gather, one thread per input
//    element. Inverse tables (for each input position the outputs whose window holds it,
//    in increasing order) are built on the host, so each input adds its contributions
//    in the CPU's order: the same bits.
//  * max_pool_backward: the stub gets only the indices, no geometry, so it scatters:
//    one thread per grad_output element, atomicAdd in opmath_t (straight into grad_input
//    for float32 / float64, into a float scratch for float16 / bfloat16, then rounded
//    once). Where windows overlap, two outputs may hit one input and the float order of
//    their sum is not fixed (last-bit differences from the CPU, run to run). The indices
//    are the forward kernel's (autograd is the only caller), so there is no range check
//    to read back and no host synchronization; an index outside the plane is skipped.
#include <cuda_runtime.h>

#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/backends/cuda/cuda_check.h"
#include "ember/core/flags.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/functors.h"
#include "ember/kernels/registration.h"
#include "ember/kernels/stubs/nn_pool.h"

namespace ember::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }

/// One pooled dim's tables on the device (pointers into the packed buffer).
struct DevDim {
  const int64_t* ptr;   // out + 1: window o is idx[ptr[o] .. ptr[o + 1])
  const int64_t* idx;   // input positions of the windows
  const double* scale;  // out: the average weights
  const int64_t* iptr;  // in + 1 (backward only): input t is held by the windows
  const int64_t* iout;  // iout[iptr[t] .. iptr[t + 1]), increasing
  int64_t in, out;
};
struct DevGeom {
  DevDim h, w;
  double scale;
};

// Note [Pool table cache]
// A training loop pools with the same geometry every step, and an upload per call from
// pageable memory may make the driver synchronize with the stream. So the packed tables
// are kept on the device, keyed by their bytes and the device: the first call with a
// geometry uploads them (cudaMalloc + a synchronous copy, once), later calls launch at
// once. The cache holds at most kMaxCachedGeoms tables (then calls upload per call
// through the caching allocator, as before); its memory is never freed, since kernels
// queued on any stream may still read it, and is not counted by memory_allocated().
constexpr size_t kMaxCachedGeoms = 256;
constexpr size_t kMaxCachedBytes = size_t(1) << 20;

int64_t* cached_tables(const std::vector<int64_t>& buf, Device device) {
  const size_t bytes = buf.size() * sizeof(int64_t);
  if (buf.empty() || bytes > kMaxCachedBytes) return nullptr;
  static std::mutex mu;
  static std::unordered_map<std::string, int64_t*> cache;
  std::string key(reinterpret_cast<const char*>(buf.data()), bytes);
  key.append(reinterpret_cast<const char*>(&device.index), sizeof device.index);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= kMaxCachedGeoms) return nullptr;
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError();  // clear the error: the caller falls back to the caching allocator
    return nullptr;
  }
  // A plain cudaMemcpy from pageable memory may return before its DMA lands (and runs on
  // the legacy stream, which does not order ember's non-blocking streams): copy on the
  // current stream and wait, so kernels on any stream read the finished tables.
  cudaStream_t stream = current_stream();
  EMBER_CUDA_CHECK(cudaMemcpyAsync(p, buf.data(), bytes, cudaMemcpyHostToDevice, stream));
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
  cache.emplace(std::move(key), static_cast<int64_t*>(p));
  return static_cast<int64_t*>(p);
}

/// The packed tables of g on x's device; `inverse` adds the inverse tables. The returned
/// tensor owns the memory `dg` points into and must outlive the launches.
Tensor upload_geom(const PoolGeom& g, bool inverse, Device device, DevGeom& dg) {
  std::vector<int64_t> buf;
  struct Off {
    size_t ptr, idx, scale, iptr, iout;
  } off[2];
  const PoolDim* dims[2] = {&g.h, &g.w};
  for (int d = 0; d < 2; ++d) {
    const PoolDim& pd = *dims[d];
    EMBER_CHECK(pd.scale.size() + 1 == pd.ptr.size(), "pool (CUDA): malformed window tables");
    off[d].ptr = buf.size();
    buf.insert(buf.end(), pd.ptr.begin(), pd.ptr.end());
    off[d].idx = buf.size();
    buf.insert(buf.end(), pd.idx.begin(), pd.idx.end());
    off[d].scale = buf.size();
    for (double s : pd.scale) {
      int64_t bits;
      std::memcpy(&bits, &s, sizeof bits);
      buf.push_back(bits);
    }
    off[d].iptr = off[d].iout = buf.size();
    if (inverse) {
      // For each input position, the windows holding it, in increasing window order.
      std::vector<int64_t> iptr(size_t(pd.in) + 1, 0);
      for (int64_t t : pd.idx) {
        EMBER_CHECK(t >= 0 && t < pd.in, "pool (CUDA): window position out of range");
        ++iptr[size_t(t) + 1];
      }
      for (int64_t t = 0; t < pd.in; ++t) iptr[size_t(t) + 1] += iptr[size_t(t)];
      std::vector<int64_t> fill(iptr.begin(), iptr.end() - 1), iout(pd.idx.size());
      for (int64_t o = 0; o < pd.out(); ++o)
        for (int64_t a = pd.ptr[size_t(o)]; a < pd.ptr[size_t(o) + 1]; ++a)
          iout[size_t(fill[size_t(pd.idx[size_t(a)])]++)] = o;
      off[d].iptr = buf.size();
      buf.insert(buf.end(), iptr.begin(), iptr.end());
      off[d].iout = buf.size();
      buf.insert(buf.end(), iout.begin(), iout.end());
    }
  }
  Tensor t;
  int64_t* base = cached_tables(buf, device);
  if (!base) {
    t = empty(Shape{int64_t(std::max<size_t>(buf.size(), 1))}, DType::Int64, device);
    base = reinterpret_cast<int64_t*>(t.data_ptr());
    if (!buf.empty())
      EMBER_CUDA_CHECK(cudaMemcpyAsync(base, buf.data(), buf.size() * sizeof(int64_t),
                                       cudaMemcpyHostToDevice, current_stream()));
  }
  DevDim* out[2] = {&dg.h, &dg.w};
  for (int d = 0; d < 2; ++d) {
    out[d]->ptr = base + off[d].ptr;
    out[d]->idx = base + off[d].idx;
    out[d]->scale = reinterpret_cast<const double*>(base + off[d].scale);
    out[d]->iptr = base + off[d].iptr;
    out[d]->iout = base + off[d].iout;
    out[d]->in = dims[d]->in;
    out[d]->out = dims[d]->out();
  }
  dg.scale = g.scale;
  return t;
}

unsigned grid_for(int64_t n) {
  return unsigned(std::max<int64_t>(1, std::min<int64_t>((n + kThreads - 1) / kThreads, 1 << 20)));
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    max_pool_kernel(T* __restrict__ out, int64_t* __restrict__ ind, const T* __restrict__ src,
                    DevGeom g, int64_t total) {
  using A = opmath_t<T>;
  const int64_t ow = g.w.out, pout = g.h.out * ow, iw = g.w.in, pin = g.h.in * iw;
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += step) {
    const int64_t p = t / pout, rem = t - p * pout, i = rem / ow, j = rem - i * ow;
    const T* x = src + p * pin;
    A best = -A(INFINITY);
    int64_t bi = -1;
    bool done = false;
    const int64_t c0 = g.w.ptr[j], c1 = g.w.ptr[j + 1];
    for (int64_t a = g.h.ptr[i], a1 = g.h.ptr[i + 1]; a < a1 && !done; ++a) {
      const int64_t row = g.h.idx[a] * iw;
      for (int64_t c = c0; c < c1; ++c) {
        const int64_t pos = row + g.w.idx[c];
        const A v = A(x[pos]);
        if (bi < 0 || v > best || isnan(v)) {
          best = v;
          bi = pos;
          if (isnan(v)) {
            done = true;
            break;
          }
        }
      }
    }
    out[t] = T(best);
    ind[t] = bi < 0 ? 0 : bi;
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    avg_pool_fwd_kernel(T* __restrict__ out, const T* __restrict__ src, DevGeom g, int64_t total) {
  using A = opmath_t<T>;
  const int64_t ow = g.w.out, pout = g.h.out * ow, iw = g.w.in, pin = g.h.in * iw;
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += step) {
    const int64_t p = t / pout, rem = t - p * pout, i = rem / ow, j = rem - i * ow;
    const A f = A(__dmul_rn(__dmul_rn(g.scale, g.h.scale[i]), g.w.scale[j]));
    const T* x = src + p * pin;
    A s = 0;
    const int64_t c0 = g.w.ptr[j], c1 = g.w.ptr[j + 1];
    for (int64_t a = g.h.ptr[i], a1 = g.h.ptr[i + 1]; a < a1; ++a) {
      const T* row = x + g.h.idx[a] * iw;
      for (int64_t c = c0; c < c1; ++c) s += A(row[g.w.idx[c]]);
    }
    out[t] = T(mul_rn(s, f));
  }
}

// out [planes, h, w] <- sum over the outputs (i, j) whose windows hold (y, x) of
// in[p, i, j] * weight(i, j), in increasing (i, j) order as the CPU's scatter adds them.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    avg_pool_bwd_kernel(T* __restrict__ out, const T* __restrict__ src, DevGeom g, int64_t total) {
  using A = opmath_t<T>;
  const int64_t ow = g.w.out, pout = g.h.out * ow, iw = g.w.in, pin = g.h.in * iw;
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += step) {
    const int64_t p = t / pin, rem = t - p * pin, y = rem / iw, x = rem - y * iw;
    const T* go = src + p * pout;
    A acc = 0;
    const int64_t c0 = g.w.iptr[x], c1 = g.w.iptr[x + 1];
    for (int64_t a = g.h.iptr[y], a1 = g.h.iptr[y + 1]; a < a1; ++a) {
      const int64_t i = g.h.iout[a];
      const double hs = __dmul_rn(g.scale, g.h.scale[i]);
      for (int64_t c = c0; c < c1; ++c) {
        const int64_t j = g.w.iout[c];
        const A f = A(__dmul_rn(hs, g.w.scale[j]));
        acc += mul_rn(A(go[i * ow + j]), f);
      }
    }
    out[t] = T(acc);
  }
}

// grad_input (or the float scratch `acc`) += grad_out at the indices. The indices are the
// forward kernel's, always in [0, pin); one outside is skipped, never written through.
template <typename T, typename A>
__global__ void __launch_bounds__(kThreads)
    max_pool_bwd_kernel(A* __restrict__ acc, const T* __restrict__ go,
                        const int64_t* __restrict__ ind, int64_t pin, int64_t pout, int64_t total) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += step) {
    const int64_t k = ind[t];
    if (k >= 0 && k < pin) atomicAdd(acc + (t / pout) * pin + k, A(go[t]));
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    round_kernel(T* __restrict__ out, const float* __restrict__ in, int64_t n) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < n; t += step)
    out[t] = T(in[t]);
}

void check_contig(const Tensor& t, int64_t n, const char* op, const char* what) {
  EMBER_CHECK(t.is_contiguous() && t.numel() == n, op, " (CUDA): expected ", what,
              " contiguous with ", n, " elements");
}

void max_pool(const Tensor& out, const Tensor& indices, const Tensor& input, const PoolGeom& g) {
  const char* op = "max_pool2d";
  const int64_t pout = g.h.out() * g.w.out(), pin = g.h.in * g.w.in;
  const int64_t planes = pout ? out.numel() / pout : 0;
  const int64_t total = planes * pout;
  check_contig(out, total, op, "output");
  check_contig(indices, total, op, "indices");
  check_contig(input, planes * pin, op, "input");
  EMBER_CHECK(indices.dtype() == DType::Int64, op, " (CUDA): expected int64 indices");
  if (total == 0) return;
  DevGeom dg;
  Tensor keep = upload_geom(g, false, input.device(), dg);
  dispatch_floating(input.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    max_pool_kernel<T><<<grid_for(total), kThreads, 0, current_stream()>>>(
        reinterpret_cast<T*>(out.data_ptr()), reinterpret_cast<int64_t*>(indices.data_ptr()),
        reinterpret_cast<const T*>(input.data_ptr()), dg, total);
  });
  EMBER_CUDA_CHECK(cudaGetLastError());
}

void max_pool_backward(const Tensor& gi, const Tensor& go, const Tensor& indices) {
  const char* op = "max_pool2d_backward";
  const int64_t planes = gi.sizes()[0], pin = gi.sizes()[1], pout = go.sizes()[1];
  check_contig(gi, planes * pin, op, "grad_input");
  check_contig(go, planes * pout, op, "grad_output");
  check_contig(indices, planes * pout, op, "indices");
  EMBER_CHECK(indices.dtype() == DType::Int64, op, " (CUDA): expected int64 indices");
  const int64_t n_in = planes * pin, total = planes * pout;
  if (n_in == 0) return;
  check_nondeterministic_allowed("max_pool2d_backward_cuda");
  cudaStream_t stream = current_stream();
  const int64_t* ind = reinterpret_cast<const int64_t*>(indices.data_ptr());
  dispatch_floating(gi.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = opmath_t<T>;
    const T* gop = reinterpret_cast<const T*>(go.data_ptr());
    if constexpr (std::is_same<T, A>::value) {  // float32 / float64: add in place
      T* gip = reinterpret_cast<T*>(gi.data_ptr());
      EMBER_CUDA_CHECK(cudaMemsetAsync(gip, 0, size_t(n_in) * sizeof(T), stream));
      if (total > 0)
        max_pool_bwd_kernel<T, A>
            <<<grid_for(total), kThreads, 0, stream>>>(gip, gop, ind, pin, pout, total);
    } else {  // 16-bit floats: sum in a float scratch, round once
      Tensor scratch = empty(Shape{n_in}, DType::Float32, gi.device());
      float* sp = reinterpret_cast<float*>(scratch.data_ptr());
      EMBER_CUDA_CHECK(cudaMemsetAsync(sp, 0, size_t(n_in) * sizeof(float), stream));
      if (total > 0)
        max_pool_bwd_kernel<T, float>
            <<<grid_for(total), kThreads, 0, stream>>>(sp, gop, ind, pin, pout, total);
      EMBER_CUDA_CHECK(cudaGetLastError());
      round_kernel<T>
          <<<grid_for(n_in), kThreads, 0, stream>>>(reinterpret_cast<T*>(gi.data_ptr()), sp, n_in);
    }
  });
  EMBER_CUDA_CHECK(cudaGetLastError());
}

void avg_pool(const Tensor& out, const Tensor& in, const PoolGeom& g, bool backward) {
  const char* op = "avg_pool2d";
  const int64_t pout = g.h.out() * g.w.out(), pin = g.h.in * g.w.in;
  const int64_t planes = pout ? (backward ? in.numel() : out.numel()) / pout : 0;
  check_contig(out, planes * (backward ? pin : pout), op, "output");
  check_contig(in, planes * (backward ? pout : pin), op, "input");
  const int64_t total = out.numel();
  if (total == 0) return;
  DevGeom dg;
  Tensor keep = upload_geom(g, backward, in.device(), dg);
  dispatch_floating(in.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = reinterpret_cast<T*>(out.data_ptr());
    const T* s = reinterpret_cast<const T*>(in.data_ptr());
    if (backward)
      avg_pool_bwd_kernel<T><<<grid_for(total), kThreads, 0, current_stream()>>>(o, s, dg, total);
    else
      avg_pool_fwd_kernel<T><<<grid_for(total), kThreads, 0, current_stream()>>>(o, s, dg, total);
  });
  EMBER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, pool) {
  constexpr int cuda = int(DeviceType::CUDA);
  max_pool_stub.fns[cuda] = &max_pool;
  max_pool_backward_stub.fns[cuda] = &max_pool_backward;
  avg_pool_stub.fns[cuda] = &avg_pool;
}

}  // namespace ember::cuda
