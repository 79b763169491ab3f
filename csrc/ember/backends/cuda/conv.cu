// CUDA kernels of the convolution family (kernels/stubs/nn_conv.h); the front-end is
// ops/nn_conv.cpp, the CPU kernels backends/cpu/nn_conv.cpp.
//  * im2col: one thread per (channel, image, output position), looping over the kernel
//    taps; a warp writes 32 neighbouring positions of one cols row (coalesced). A raw
//    copy of the element bits (2, 4 or 8 bytes, as the CPU), zeros outside the image.
//  * col2im: one thread per image element gathering the columns that read it, in the
//    kernel-tap order the CPU adds them (so the result is the CPU's, bit for bit, and
//    deterministic: no atomics), accumulating in opmath_t.
//  * conv_layout: one thread per element of dst ([C, N*L] <-> [N, C, L], plus bias).
//  With these the front-end's im2col + cuBLAS GEMM path (Note [Convolution layout])
//  runs every convolution on CUDA: the implicit-GEMM-style fallback.
//  * conv_fwd_images / conv_bwd_images: cuDNN (forward, backward data, backward filter)
//    for float32/float64/float16/bfloat16, loaded at run time (Note [cuDNN at run time]);
//    they return false, and the front-end takes the im2col path, wherever cuDNN is
//    missing, disabled (ember.backends.cudnn.enabled) or fails for a geometry.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <vector>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/backends/cuda/cuda_check.h"
#include "ember/backends/cuda/cudnn_loader.h"
#include "ember/backends/cuda/loops.cuh"
#include "ember/core/flags.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/functors.h"
#include "ember/kernels/registration.h"
#include "ember/kernels/stubs/nn_conv.h"

#if defined(__has_include)
#if __has_include(<cudnn.h>)
#include <cudnn.h>
#define EMBER_HAVE_CUDNN 1
#endif
#endif

namespace ember::cuda {
namespace {

// ---- im2col / col2im / layout -------------------------------------------------------------

// ConvGeom with its products, passed to the kernels by value.
struct KGeom {
  int64_t C = 0, nb = 0;
  int64_t in[3], out[3], k[3], stride[3], pad[3], dil[3];
  int64_t K = 0, L = 0, plane = 0;  // k_numel, out_numel, in_numel
};

KGeom kgeom(const ConvGeom& g, int64_t nb) {
  KGeom r;
  r.C = g.channels;
  r.nb = nb;
  for (int i = 0; i < 3; ++i) {
    r.in[i] = g.in[i];
    r.out[i] = g.out[i];
    r.k[i] = g.k[i];
    r.stride[i] = g.stride[i];
    r.pad[i] = g.pad[i];
    r.dil[i] = g.dil[i];
  }
  r.K = g.k_numel();
  r.L = g.out_numel();
  r.plane = g.in_numel();
  return r;
}

// Index arithmetic in 32 bits where every offset fits (the divisions are the cost).
bool fits32(std::initializer_list<int64_t> ns) {
  for (int64_t n : ns)
    if (n < 0 || n >= int64_t(INT_MAX)) return false;
  return true;
}

// ... and every intermediate of the position arithmetic (o * stride - pad + k * dil, with
// pads and strides as large as the front-end allows).
bool geom_fits32(const ConvGeom& g) {
  for (int i = 0; i < 3; ++i) {
    const double span = double(g.out[i]) * double(g.stride[i]) + double(g.pad[i]) +
                        double(g.k[i]) * double(g.dil[i]) + double(g.in[i]);
    if (!(span < double(INT_MAX))) return false;
  }
  return true;
}

// cols [C * K, nb * L] <- the patches of img [nb, C, in...]. Thread t = (c * nb + n) * L + pos.
template <typename U, typename I>
__global__ void __launch_bounds__(kThreads)
    im2col_kernel(U* __restrict__ cols, const U* __restrict__ img, KGeom g, int64_t total) {
  const I L = I(g.L), nb = I(g.nb), ld = nb * L;
  const I O1 = I(g.out[1]), O2 = I(g.out[2]);
  const I in0 = I(g.in[0]), in1 = I(g.in[1]), in2 = I(g.in[2]);
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += step) {
    const I e = I(t);
    const I pos = e % L, cn = e / L;
    const I n = cn % nb, c = cn / nb;
    const I ow = pos % O2, q = pos / O2;
    const I oh = q % O1, od = q / O1;
    const I d0 = od * I(g.stride[0]) - I(g.pad[0]);
    const I h0 = oh * I(g.stride[1]) - I(g.pad[1]);
    const I w0 = ow * I(g.stride[2]) - I(g.pad[2]);
    const U* src = img + (n * I(g.C) + c) * I(g.plane);
    U* dst = cols + c * I(g.K) * ld + n * L + pos;
    for (I kd = 0; kd < I(g.k[0]); ++kd) {
      const I id = d0 + kd * I(g.dil[0]);
      const bool vd = id >= 0 && id < in0;
      for (I kh = 0; kh < I(g.k[1]); ++kh) {
        const I ih = h0 + kh * I(g.dil[1]);
        const bool vh = vd && ih >= 0 && ih < in1;
        for (I kw = 0; kw < I(g.k[2]); ++kw, dst += ld) {
          const I iw = w0 + kw * I(g.dil[2]);
          *dst = (vh && iw >= 0 && iw < in2) ? src[(id * in1 + ih) * in2 + iw] : U(0);
        }
      }
    }
  }
}

template <typename U>
void im2col_launch(const Tensor& cols, const Tensor& input, const ConvGeom& g) {
  const KGeom kg = kgeom(g, input.sizes()[0]);
  const int64_t total = kg.C * kg.nb * kg.L;
  if (total == 0 || kg.K == 0) return;
  U* dst = reinterpret_cast<U*>(cols.data_ptr());
  const U* src = reinterpret_cast<const U*>(input.data_ptr());
  if (fits32({cols.numel(), input.numel(), total}) && geom_fits32(g))
    im2col_kernel<U, int32_t>
        <<<grid_for(total), kThreads, 0, current_stream()>>>(dst, src, kg, total);
  else
    im2col_kernel<U, int64_t>
        <<<grid_for(total), kThreads, 0, current_stream()>>>(dst, src, kg, total);
  EMBER_CUDA_CHECK(cudaGetLastError());
}

void check_contiguous(const Tensor& t, const char* op, const char* what) {
  EMBER_CHECK(t.is_contiguous(), op, " (CUDA): expected a contiguous ", what, " (front-end bug)");
}

void im2col_cuda(const Tensor& cols, const Tensor& input, const ConvGeom& g) {
  check_contiguous(cols, "im2col", "column matrix");
  check_contiguous(input, "im2col", "input");
  switch (input.element_size()) {
    case 2:
      return im2col_launch<uint16_t>(cols, input, g);
    case 4:
      return im2col_launch<uint32_t>(cols, input, g);
    case 8:
      return im2col_launch<uint64_t>(cols, input, g);
    default:
      EMBER_ERROR("im2col: unsupported element size");
  }
}

// img [nb, C, in...] <- the sum over the taps (kd, kh, kw), in that order, of the column
// entries read from each image element (the CPU's order of additions).
template <typename T, typename I>
__global__ void __launch_bounds__(kThreads)
    col2im_kernel(T* __restrict__ img, const T* __restrict__ cols, KGeom g, int64_t total) {
  using A = opmath_t<T>;
  const I L = I(g.L), ld = I(g.nb) * L;
  const I in0 = I(g.in[0]), in1 = I(g.in[1]), in2 = I(g.in[2]);
  const I O0 = I(g.out[0]), O1 = I(g.out[1]), O2 = I(g.out[2]);
  const I s0 = I(g.stride[0]), s1 = I(g.stride[1]), s2 = I(g.stride[2]);
  const I K1 = I(g.k[1]), K2 = I(g.k[2]);
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += step) {
    const I e = I(t);
    const I iw = e % in2, q0 = e / in2;
    const I ih = q0 % in1, q1 = q0 / in1;
    const I id = q1 % in0, nc = q1 / in0;
    const I c = nc % I(g.C), n = nc / I(g.C);
    const T* base = cols + c * I(g.K) * ld + n * L;
    A acc = A(0);
    // tap k of a dim reads output position o where o * s = i + pad - k * dil: that
    // difference only decreases with k, so the loops stop once it is negative
    for (I kd = 0; kd < I(g.k[0]); ++kd) {
      const I td = id + I(g.pad[0]) - kd * I(g.dil[0]);
      if (td < 0) break;
      if (td % s0 != 0 || td / s0 >= O0) continue;
      const I od = td / s0;
      for (I kh = 0; kh < K1; ++kh) {
        const I th = ih + I(g.pad[1]) - kh * I(g.dil[1]);
        if (th < 0) break;
        if (th % s1 != 0 || th / s1 >= O1) continue;
        const I oh = th / s1;
        for (I kw = 0; kw < K2; ++kw) {
          const I tw = iw + I(g.pad[2]) - kw * I(g.dil[2]);
          if (tw < 0) break;
          if (tw % s2 != 0 || tw / s2 >= O2) continue;
          const I row = (kd * K1 + kh) * K2 + kw;
          acc += A(base[row * ld + (od * O1 + oh) * O2 + tw / s2]);
        }
      }
    }
    img[e] = T(acc);
  }
}

void col2im_cuda(const Tensor& image, const Tensor& cols, const ConvGeom& g) {
  check_contiguous(image, "col2im", "image");
  check_contiguous(cols, "col2im", "column matrix");
  const KGeom kg = kgeom(g, image.sizes()[0]);
  const int64_t total = image.numel();
  dispatch_numeric(image.dtype(), "col2im", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same<T, bool>::value) {
      if (total == 0) return;
      T* dst = reinterpret_cast<T*>(image.data_ptr());
      const T* src = reinterpret_cast<const T*>(cols.data_ptr());
      if (fits32({cols.numel(), total}) && geom_fits32(g))
        col2im_kernel<T, int32_t>
            <<<grid_for(total), kThreads, 0, current_stream()>>>(dst, src, kg, total);
      else
        col2im_kernel<T, int64_t>
            <<<grid_for(total), kThreads, 0, current_stream()>>>(dst, src, kg, total);
      EMBER_CUDA_CHECK(cudaGetLastError());
    }
  });
}

// dst [nb, c, l] <- src [c, nb * l] (+ bias[ci * bs], added in opmath_t as the CPU).
template <typename T, typename I>
__global__ void __launch_bounds__(kThreads)
    to_ncl_kernel(T* __restrict__ dst, const T* __restrict__ src, const T* __restrict__ bias,
                  int64_t bs, int64_t nb_, int64_t c_, int64_t l_, int64_t total) {
  using A = opmath_t<T>;
  const I nb = I(nb_), c = I(c_), l = I(l_);
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += step) {
    const I e = I(t);
    const I j = e % l, nci = e / l;
    const I ci = nci % c, n = nci / c;
    const T v = src[(ci * nb + n) * l + j];
    dst[e] = bias ? T(A(v) + A(bias[int64_t(ci) * bs])) : v;
  }
}

// dst [c, nb * l] <- src [nb, c, l].
template <typename T, typename I>
__global__ void __launch_bounds__(kThreads)
    to_cnl_kernel(T* __restrict__ dst, const T* __restrict__ src, int64_t nb_, int64_t c_,
                  int64_t l_, int64_t total) {
  const I c = I(c_), l = I(l_), row = I(nb_) * l;
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += step) {
    const I e = I(t);
    const I r = e % row, ci = e / row;
    const I j = r % l, n = r / l;
    dst[e] = src[(n * c + ci) * l + j];
  }
}

void conv_layout_cuda(const Tensor& dst, const Tensor& src, const Tensor& bias, int64_t nb,
                      int64_t c, int64_t l, bool to_cnl) {
  check_contiguous(dst, "convolution", "output");
  check_contiguous(src, "convolution", "input");
  dispatch_numeric(dst.dtype(), "convolution", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same<T, bool>::value) {
      const int64_t total = nb * c * l;
      if (total == 0) return;
      T* d = reinterpret_cast<T*>(dst.data_ptr());
      const T* s = reinterpret_cast<const T*>(src.data_ptr());
      const bool small = fits32({total});
      if (to_cnl) {
        EMBER_CHECK(!bias.defined(), "convolution (CUDA): no bias in the [C, N*L] direction");
        if (small)
          to_cnl_kernel<T, int32_t>
              <<<grid_for(total), kThreads, 0, current_stream()>>>(d, s, nb, c, l, total);
        else
          to_cnl_kernel<T, int64_t>
              <<<grid_for(total), kThreads, 0, current_stream()>>>(d, s, nb, c, l, total);
      } else {
        const T* b = bias.defined() ? reinterpret_cast<const T*>(bias.data_ptr()) : nullptr;
        const int64_t bs = bias.defined() ? bias.strides()[0] : 0;
        if (small)
          to_ncl_kernel<T, int32_t>
              <<<grid_for(total), kThreads, 0, current_stream()>>>(d, s, b, bs, nb, c, l, total);
        else
          to_ncl_kernel<T, int64_t>
              <<<grid_for(total), kThreads, 0, current_stream()>>>(d, s, b, bs, nb, c, l, total);
      }
      EMBER_CUDA_CHECK(cudaGetLastError());
    }
  });
}

// y [N, Co, L] += bias[co * bs] (after cuDNN's forward), in opmath_t.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    add_bias_kernel(T* __restrict__ y, const T* __restrict__ bias, int64_t bs, int64_t co,
                    int64_t l, int64_t total) {
  using A = opmath_t<T>;
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += step)
    y[t] = T(A(y[t]) + A(bias[((t / l) % co) * bs]));
}

// ---- Note [cuDNN at run time] -------------------------------------------------------------
// cuDNN is never linked: the wheel must import where libcudnn is absent. On first use
// libcudnn.so.9 (then libcudnn.so) is opened with dlopen and the handful of legacy
// convolution entry points are resolved into a table; cudnn.h is included only for its
// types and enums (without it at build time the cuDNN path is compiled out). A missing
// library, a version before 8, a missing symbol or a failing handle disables the path:
// the stubs return false and the front-end runs im2col + cuBLAS. ember.cuda preloads the
// nvidia.cudnn pip package's library (RTLD_GLOBAL) so that dlopen finds it beside
// PyTorch's wheels.
//
// Handles: one per thread and device (as cuBLAS's, Note [cuBLAS handles]; a cuDNN handle
// must not be used by two threads at once), never destroyed, bound to the current stream
// before each call. Descriptors: NCHW (a 2-d geometry: 1-d and 2-d convolutions) or NCDHW,
// packed, with the group count; compute in float for the 16-bit types and float32, double
// for float64. Math: float32 takes CUDNN_FMA_MATH (IEEE float32) unless
// ember.backends.cudnn.allow_tf32; the 16-bit types may use tensor cores. Algorithms:
// cudnnGet*Algorithm_v7's heuristic list, cached per geometry, filtered by status (and by
// determinism under ember.backends.cudnn.deterministic / use_deterministic_algorithms);
// the first whose workspace (an ember tensor from the caching allocator) can be allocated
// runs. Any error status marks the geometry as failed (cached): false, im2col from then on.
// With ember.backends.cudnn.benchmark, the first call of a geometry times the algorithms
// instead (cudnnFind*AlgorithmEx) and the fastest usable one runs from then on.
#ifdef EMBER_HAVE_CUDNN

struct CudnnApi {
  int64_t version = 0;
  decltype(&cudnnGetVersion) GetVersion = nullptr;
  decltype(&cudnnCreate) Create = nullptr;
  decltype(&cudnnSetStream) SetStream = nullptr;
  decltype(&cudnnCreateTensorDescriptor) CreateTensorDescriptor = nullptr;
  decltype(&cudnnSetTensorNdDescriptor) SetTensorNdDescriptor = nullptr;
  decltype(&cudnnDestroyTensorDescriptor) DestroyTensorDescriptor = nullptr;
  decltype(&cudnnCreateFilterDescriptor) CreateFilterDescriptor = nullptr;
  decltype(&cudnnSetFilterNdDescriptor) SetFilterNdDescriptor = nullptr;
  decltype(&cudnnDestroyFilterDescriptor) DestroyFilterDescriptor = nullptr;
  decltype(&cudnnCreateConvolutionDescriptor) CreateConvolutionDescriptor = nullptr;
  decltype(&cudnnSetConvolutionNdDescriptor) SetConvolutionNdDescriptor = nullptr;
  decltype(&cudnnSetConvolutionGroupCount) SetConvolutionGroupCount = nullptr;
  decltype(&cudnnSetConvolutionMathType) SetConvolutionMathType = nullptr;
  decltype(&cudnnDestroyConvolutionDescriptor) DestroyConvolutionDescriptor = nullptr;
  decltype(&cudnnGetConvolutionForwardAlgorithm_v7) GetFwdAlgo = nullptr;
  decltype(&cudnnGetConvolutionBackwardDataAlgorithm_v7) GetBwdDataAlgo = nullptr;
  decltype(&cudnnGetConvolutionBackwardFilterAlgorithm_v7) GetBwdFilterAlgo = nullptr;
  decltype(&cudnnConvolutionForward) ConvolutionForward = nullptr;
  decltype(&cudnnConvolutionBackwardData) ConvolutionBackwardData = nullptr;
  decltype(&cudnnConvolutionBackwardFilter) ConvolutionBackwardFilter = nullptr;
  // optional (ember.backends.cudnn.benchmark)
  decltype(&cudnnFindConvolutionForwardAlgorithmEx) FindFwdAlgo = nullptr;
  decltype(&cudnnFindConvolutionBackwardDataAlgorithmEx) FindBwdDataAlgo = nullptr;
  decltype(&cudnnFindConvolutionBackwardFilterAlgorithmEx) FindBwdFilterAlgo = nullptr;
};

const CudnnApi* load_cudnn() {
  void* lib = nullptr;
  for (const char* name : {"libcudnn.so.9", "libcudnn.so"}) {
    lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib) break;
  }
  if (!lib) return nullptr;
  static CudnnApi api;
  bool ok = true;
  auto sym = [&](auto& fn, const char* name) {
    void* p = dlsym(lib, name);
    if (!p) ok = false;
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  sym(api.GetVersion, "cudnnGetVersion");
  sym(api.Create, "cudnnCreate");
  sym(api.SetStream, "cudnnSetStream");
  sym(api.CreateTensorDescriptor, "cudnnCreateTensorDescriptor");
  sym(api.SetTensorNdDescriptor, "cudnnSetTensorNdDescriptor");
  sym(api.DestroyTensorDescriptor, "cudnnDestroyTensorDescriptor");
  sym(api.CreateFilterDescriptor, "cudnnCreateFilterDescriptor");
  sym(api.SetFilterNdDescriptor, "cudnnSetFilterNdDescriptor");
  sym(api.DestroyFilterDescriptor, "cudnnDestroyFilterDescriptor");
  sym(api.CreateConvolutionDescriptor, "cudnnCreateConvolutionDescriptor");
  sym(api.SetConvolutionNdDescriptor, "cudnnSetConvolutionNdDescriptor");
  sym(api.SetConvolutionGroupCount, "cudnnSetConvolutionGroupCount");
  sym(api.SetConvolutionMathType, "cudnnSetConvolutionMathType");
  sym(api.DestroyConvolutionDescriptor, "cudnnDestroyConvolutionDescriptor");
  sym(api.GetFwdAlgo, "cudnnGetConvolutionForwardAlgorithm_v7");
  sym(api.GetBwdDataAlgo, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
  sym(api.GetBwdFilterAlgo, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
  sym(api.ConvolutionForward, "cudnnConvolutionForward");
  sym(api.ConvolutionBackwardData, "cudnnConvolutionBackwardData");
  sym(api.ConvolutionBackwardFilter, "cudnnConvolutionBackwardFilter");
  if (!ok) return nullptr;  // (the library stays open: harmless, and it may be shared)
  sym(api.FindFwdAlgo, "cudnnFindConvolutionForwardAlgorithmEx");  // optional: null if absent
  sym(api.FindBwdDataAlgo, "cudnnFindConvolutionBackwardDataAlgorithmEx");
  sym(api.FindBwdFilterAlgo, "cudnnFindConvolutionBackwardFilterAlgorithmEx");
  api.version = int64_t(api.GetVersion());
  // the legacy API with these signatures and enums: cuDNN 8 and 9
  if (api.version < 8000) return nullptr;
  return &api;
}

const CudnnApi* cudnn() {
  static const CudnnApi* api = load_cudnn();  // once (thread-safe static init)
  return api;
}

constexpr int kMaxDevices = 64;

// The calling thread's handle on the current device bound to its current stream, or
// null where cuDNN cannot be used there (creation failed: remembered per device).
cudnnHandle_t cudnn_handle(const CudnnApi& api) {
  static std::array<std::atomic<bool>, kMaxDevices> failed{};
  thread_local std::array<cudnnHandle_t, kMaxDevices> handles{};
  const int dev = current_device();
  if (dev < 0 || dev >= kMaxDevices || failed[size_t(dev)].load()) return nullptr;
  cudnnHandle_t& h = handles[size_t(dev)];
  if (!h && api.Create(&h) != CUDNN_STATUS_SUCCESS) {
    h = nullptr;
    failed[size_t(dev)].store(true);
    return nullptr;
  }
  if (api.SetStream(h, current_stream(dev)) != CUDNN_STATUS_SUCCESS) return nullptr;
  return h;
}

// Descriptors, destroyed with their owner.
struct Descs {
  const CudnnApi& api;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  explicit Descs(const CudnnApi& a) : api(a) {}
  ~Descs() {
    if (x) api.DestroyTensorDescriptor(x);
    if (y) api.DestroyTensorDescriptor(y);
    if (w) api.DestroyFilterDescriptor(w);
    if (conv) api.DestroyConvolutionDescriptor(conv);
  }
  Descs(const Descs&) = delete;
  Descs& operator=(const Descs&) = delete;
};

enum class Pass { Fwd = 0, BwdData = 1, BwdFilter = 2 };

// A geometry's cache key: every size of the call and the switches that change the choice.
using Key = std::vector<int64_t>;

struct Candidate {
  int algo;
  size_t memory;
  cudnnMathType_t math;
};

struct CacheEntry {
  bool queried = false, failed = false;
  std::vector<Candidate> candidates;
};

std::mutex g_cache_mutex;
std::map<Key, CacheEntry>& cache() {
  static auto* m = new std::map<Key, CacheEntry>();  // never destroyed (exit order)
  return *m;
}

struct Setup {
  cudnnDataType_t data, compute;
  cudnnMathType_t math;
  bool fp32_ieee;  // float32 without TF32: every algorithm runs with CUDNN_FMA_MATH
  int nd;          // spatial dims of the descriptors: 2 or 3
  int xdims[5], ydims[5], wdims[5], pad[3], stride[3], dil[3];
};

bool fits_int(int64_t v) { return v >= 0 && v <= int64_t(INT_MAX); }

// The descriptor sizes of a convolution of x [N, C, in...] with w [Co, C/G, k...]; false
// where cuDNN cannot take it (dtype, sizes past its ints or 2^31 elements per tensor).
bool make_setup(Setup& s, DType dt, int64_t N, int64_t Co, int64_t groups, const ConvGeom& g) {
  const BackendFlags& flags = backend_flags();
  s.fp32_ieee = false;
  switch (dt) {
    case DType::Float32:
      s.data = s.compute = CUDNN_DATA_FLOAT;
      s.fp32_ieee = !flags.cudnn_allow_tf32.load(std::memory_order_relaxed);
      s.math = s.fp32_ieee ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
      break;
    case DType::Float64:
      s.data = s.compute = CUDNN_DATA_DOUBLE;
      s.math = CUDNN_DEFAULT_MATH;
      break;
    case DType::Float16:
      s.data = CUDNN_DATA_HALF;
      s.compute = CUDNN_DATA_FLOAT;
      s.math = CUDNN_TENSOR_OP_MATH;
      break;
    case DType::BFloat16:
      s.data = CUDNN_DATA_BFLOAT16;
      s.compute = CUDNN_DATA_FLOAT;
      s.math = CUDNN_TENSOR_OP_MATH;
      break;
    default:
      return false;
  }
  const int64_t C = g.channels;
  if (groups <= 0 || C % groups != 0 || Co % groups != 0) return false;
  // a depth of 1 with no depth padding (every 1-d and 2-d convolution): NCHW
  const bool two = g.in[0] == 1 && g.out[0] == 1 && g.k[0] == 1 && g.pad[0] == 0;
  s.nd = two ? 2 : 3;
  const int first = two ? 1 : 0;
  const int64_t xs[5] = {N, C, 0, 0, 0}, ys[5] = {N, Co, 0, 0, 0},
                ws[5] = {Co, C / groups, 0, 0, 0};
  int64_t nx = N * C, ny = N * Co, nw = Co * (C / groups);
  for (int i = 0; i < 5; ++i) {
    int64_t xv = xs[i], yv = ys[i], wv = ws[i];
    if (i >= 2) {
      const int j = first + i - 2;
      if (j > 2) break;
      xv = g.in[j];
      yv = g.out[j];
      wv = g.k[j];
      if (!fits_int(g.pad[j]) || !fits_int(g.stride[j]) || !fits_int(g.dil[j])) return false;
      if (!fits_int(g.in[j]) || !fits_int(g.k[j]) || g.k[j] <= 0) return false;
      // cuDNN pads both sides by pad: where the front-end's sizes come from another
      // padding ('same' with an even dilated kernel pads one more on the high side) or
      // from a transposed convolution's output_padding >= stride, the sizes do not match
      // cuDNN's and the im2col path runs
      const int64_t dk = g.dil[j] * (g.k[j] - 1) + 1, padded = g.in[j] + 2 * g.pad[j];
      if (padded < dk || (padded - dk) / g.stride[j] + 1 != g.out[j]) return false;
      s.pad[i - 2] = int(g.pad[j]);
      s.stride[i - 2] = int(g.stride[j]);
      s.dil[i - 2] = int(g.dil[j]);
      nx *= xv;
      ny *= yv;
      nw *= wv;
    }
    if (!fits_int(xv) || !fits_int(yv) || !fits_int(wv)) return false;
    s.xdims[i] = int(xv);
    s.ydims[i] = int(yv);
    s.wdims[i] = int(wv);
  }
  // (the products above cannot overflow: each tensor exists with that many elements)
  return nx > 0 && ny > 0 && nw > 0 && nx < INT_MAX && ny < INT_MAX && nw < INT_MAX;
}

bool set_tensor(const CudnnApi& api, cudnnTensorDescriptor_t& d, cudnnDataType_t dt,
                const int* dims, int nbdims) {
  if (api.CreateTensorDescriptor(&d) != CUDNN_STATUS_SUCCESS) {
    d = nullptr;
    return false;
  }
  int strides[5];
  int64_t st = 1;
  for (int i = nbdims - 1; i >= 0; --i) {
    strides[i] = int(st);
    st *= dims[i];
  }
  return api.SetTensorNdDescriptor(d, dt, nbdims, dims, strides) == CUDNN_STATUS_SUCCESS;
}

bool make_descs(Descs& d, const Setup& s) {
  const CudnnApi& api = d.api;
  const int nb = s.nd + 2;
  if (!set_tensor(api, d.x, s.data, s.xdims, nb) || !set_tensor(api, d.y, s.data, s.ydims, nb))
    return false;
  if (api.CreateFilterDescriptor(&d.w) != CUDNN_STATUS_SUCCESS) {
    d.w = nullptr;
    return false;
  }
  if (api.SetFilterNdDescriptor(d.w, s.data, CUDNN_TENSOR_NCHW, nb, s.wdims) !=
      CUDNN_STATUS_SUCCESS)
    return false;
  if (api.CreateConvolutionDescriptor(&d.conv) != CUDNN_STATUS_SUCCESS) {
    d.conv = nullptr;
    return false;
  }
  return api.SetConvolutionNdDescriptor(d.conv, s.nd, s.pad, s.stride, s.dil,
                                        CUDNN_CROSS_CORRELATION, s.compute) == CUDNN_STATUS_SUCCESS;
}

// The usable algorithms of `pass` in the heuristic's order (the math type and groups set).
template <typename Perf, typename Query>
bool query_candidates(std::vector<Candidate>& out, const Setup& s, bool deterministic, Query q) {
  constexpr int kMaxAlgos = 16;
  Perf perf[kMaxAlgos];
  int count = 0;
  if (q(kMaxAlgos, &count, perf) != CUDNN_STATUS_SUCCESS) return false;
  for (int i = 0; i < std::min(count, kMaxAlgos); ++i) {
    const Perf& p = perf[i];
    if (p.status != CUDNN_STATUS_SUCCESS) continue;
    if (deterministic && p.determinism != CUDNN_DETERMINISTIC) continue;
    // IEEE float32: no algorithm that needs tensor-op math (TF32)
    if (s.fp32_ieee &&
        (p.mathType == CUDNN_TENSOR_OP_MATH || p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
      continue;
    out.push_back(Candidate{int(p.algo), p.memory, s.fp32_ieee ? CUDNN_FMA_MATH : p.mathType});
  }
  return true;
}

// What cudnn_pass did: ran, declined having written nothing, or failed after writing to
// the output (a failed launch, or a benchmark that timed the algorithms on it).
enum class Ran { Done, Declined, Dirty };

// Runs one pass of the convolution described by the tensors: y = conv(x, w) (Fwd),
// gx = conv_transpose(gy, w) (BwdData) or gw = the weight gradient of (x, gy) (BwdFilter),
// the output overwritten.
Ran cudnn_pass(Pass pass, void* out, const void* a, const void* b, const Tensor& ref, int64_t N,
               int64_t Co, int64_t groups, const ConvGeom& g) {
  const CudnnApi* api = cudnn();
  if (!api) return Ran::Declined;
  Setup s;
  if (!make_setup(s, ref.dtype(), N, Co, groups, g)) return Ran::Declined;
  const BackendFlags& flags = backend_flags();
  const bool deterministic = flags.cudnn_deterministic.load(std::memory_order_relaxed) ||
                             flags.deterministic_algorithms.load(std::memory_order_relaxed);
  const bool benchmark = flags.cudnn_benchmark.load(std::memory_order_relaxed);
  Key key{int64_t(pass), current_device(), int64_t(ref.dtype()), N, Co, groups, g.channels};
  key.insert(key.end(), {int64_t(s.fp32_ieee), int64_t(deterministic), int64_t(benchmark)});
  for (int i = 0; i < 3; ++i)
    for (int64_t v : {g.in[i], g.out[i], g.k[i], g.stride[i], g.pad[i], g.dil[i]}) key.push_back(v);
  {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    auto it = cache().find(key);
    if (it != cache().end() && it->second.failed) return Ran::Declined;
  }
  cudnnHandle_t h = cudnn_handle(*api);
  if (!h) return Ran::Declined;
  bool wrote = false;  // whether `out` may have been written
  auto fail = [&] {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    cache()[key].failed = true;
    return wrote ? Ran::Dirty : Ran::Declined;
  };
  Descs d(*api);
  if (!make_descs(d, s)) return fail();
  if (api->SetConvolutionGroupCount(d.conv, int(groups)) != CUDNN_STATUS_SUCCESS ||
      api->SetConvolutionMathType(d.conv, s.math) != CUDNN_STATUS_SUCCESS)
    return fail();

  std::vector<Candidate> cands;
  bool known = false;
  {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    auto it = cache().find(key);
    if (it != cache().end() && it->second.queried) {
      cands = it->second.candidates;
      known = true;
    }
  }
  if (!known) {
    bool ok = false;
    switch (pass) {
      case Pass::Fwd:
        ok = query_candidates<cudnnConvolutionFwdAlgoPerf_t>(
            cands, s, deterministic, [&](int req, int* cnt, cudnnConvolutionFwdAlgoPerf_t* p) {
              return api->GetFwdAlgo(h, d.x, d.w, d.conv, d.y, req, cnt, p);
            });
        break;
      case Pass::BwdData:
        ok = query_candidates<cudnnConvolutionBwdDataAlgoPerf_t>(
            cands, s, deterministic, [&](int req, int* cnt, cudnnConvolutionBwdDataAlgoPerf_t* p) {
              return api->GetBwdDataAlgo(h, d.w, d.y, d.conv, d.x, req, cnt, p);
            });
        break;
      case Pass::BwdFilter:
        ok = query_candidates<cudnnConvolutionBwdFilterAlgoPerf_t>(
            cands, s, deterministic,
            [&](int req, int* cnt, cudnnConvolutionBwdFilterAlgoPerf_t* p) {
              return api->GetBwdFilterAlgo(h, d.x, d.y, d.conv, d.w, req, cnt, p);
            });
        break;
    }
    if (!ok || cands.empty()) return fail();
    if (benchmark && api->FindFwdAlgo && api->FindBwdDataAlgo && api->FindBwdFilterAlgo) {
      // ember.backends.cudnn.benchmark: time the algorithms (cudnnFind*AlgorithmEx, on
      // the call's own tensors; the output is overwritten by the run below) with the
      // largest workspace the heuristic's candidates ask for, where it can be allocated
      size_t ws_max = 0;
      for (const Candidate& c : cands) ws_max = std::max(ws_max, c.memory);
      Tensor fws;
      try {
        if (ws_max) fws = empty(Shape{int64_t(ws_max)}, DType::UInt8, ref.device());
      } catch (const OutOfMemory&) {
        ws_max = 0;
      }
      void* fp = fws.defined() ? fws.data_ptr() : nullptr;
      std::vector<Candidate> timed;
      bool fok = false;
      wrote = true;
      switch (pass) {
        case Pass::Fwd:
          fok = query_candidates<cudnnConvolutionFwdAlgoPerf_t>(
              timed, s, deterministic, [&](int req, int* cnt, cudnnConvolutionFwdAlgoPerf_t* p) {
                return api->FindFwdAlgo(h, d.x, a, d.w, b, d.conv, d.y, out, req, cnt, p, fp,
                                        ws_max);
              });
          break;
        case Pass::BwdData:
          fok = query_candidates<cudnnConvolutionBwdDataAlgoPerf_t>(
              timed, s, deterministic,
              [&](int req, int* cnt, cudnnConvolutionBwdDataAlgoPerf_t* p) {
                return api->FindBwdDataAlgo(h, d.w, a, d.y, b, d.conv, d.x, out, req, cnt, p, fp,
                                            ws_max);
              });
          break;
        case Pass::BwdFilter:
          fok = query_candidates<cudnnConvolutionBwdFilterAlgoPerf_t>(
              timed, s, deterministic,
              [&](int req, int* cnt, cudnnConvolutionBwdFilterAlgoPerf_t* p) {
                return api->FindBwdFilterAlgo(h, d.x, a, d.y, b, d.conv, d.w, out, req, cnt, p, fp,
                                              ws_max);
              });
          break;
      }
      // (a failed timing keeps the heuristic's order; Find sorts by time)
      if (fok && !timed.empty()) cands = timed;
    }
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    CacheEntry& e = cache()[key];
    e.queried = true;
    e.candidates = cands;
  }

  // the first candidate whose workspace can be allocated
  const Device dev = ref.device();
  Tensor ws;
  const Candidate* pick = nullptr;
  for (const Candidate& c : cands) {
    if (c.memory == 0) {
      pick = &c;
      break;
    }
    try {
      ws = empty(Shape{int64_t(c.memory)}, DType::UInt8, dev);
      pick = &c;
      break;
    } catch (const OutOfMemory&) {
      continue;
    }
  }
  // (not cached as failed: memory may be free next time)
  if (!pick) return wrote ? Ran::Dirty : Ran::Declined;
  if (api->SetConvolutionMathType(d.conv, pick->math) != CUDNN_STATUS_SUCCESS) return fail();
  void* wsp = ws.defined() ? ws.data_ptr() : nullptr;
  const size_t wsb = ws.defined() ? pick->memory : 0;
  const double one_d = 1.0, zero_d = 0.0;
  const float one_f = 1.f, zero_f = 0.f;
  const bool dbl = s.data == CUDNN_DATA_DOUBLE;
  const void* one = dbl ? static_cast<const void*>(&one_d) : static_cast<const void*>(&one_f);
  const void* zero = dbl ? static_cast<const void*>(&zero_d) : static_cast<const void*>(&zero_f);
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  wrote = true;
  switch (pass) {
    case Pass::Fwd:  // out = y, a = x, b = w
      st = api->ConvolutionForward(h, one, d.x, a, d.w, b, d.conv,
                                   cudnnConvolutionFwdAlgo_t(pick->algo), wsp, wsb, zero, d.y, out);
      break;
    case Pass::BwdData:  // out = gx, a = w, b = gy
      st = api->ConvolutionBackwardData(h, one, d.w, a, d.y, b, d.conv,
                                        cudnnConvolutionBwdDataAlgo_t(pick->algo), wsp, wsb, zero,
                                        d.x, out);
      break;
    case Pass::BwdFilter:  // out = gw, a = x, b = gy
      st = api->ConvolutionBackwardFilter(h, one, d.x, a, d.y, b, d.conv,
                                          cudnnConvolutionBwdFilterAlgo_t(pick->algo), wsp, wsb,
                                          zero, d.w, out);
      break;
  }
  if (st != CUDNN_STATUS_SUCCESS) return fail();
  return Ran::Done;
}

bool cudnn_usable(const Tensor& t) {
  if (!backend_flags().cudnn_enabled.load(std::memory_order_relaxed)) return false;
  const DType dt = t.dtype();
  if (dt != DType::Float32 && dt != DType::Float64 && dt != DType::Float16 && dt != DType::BFloat16)
    return false;
  return cudnn() != nullptr;
}

bool conv_fwd_images_cuda(const Tensor& y, const Tensor& x, const Tensor& w, const Tensor& bias,
                          int64_t groups, const ConvGeom& g) {
  if (!cudnn_usable(x)) return false;
  if (!x.is_contiguous() || !w.is_contiguous() || !y.is_contiguous()) return false;
  const int64_t N = x.sizes()[0], Co = w.sizes()[0];
  // (y is overwritten by the im2col path after a failure)
  if (cudnn_pass(Pass::Fwd, y.data_ptr(), x.data_ptr(), w.data_ptr(), x, N, Co, groups, g) !=
      Ran::Done)
    return false;
  if (bias.defined()) {
    const int64_t total = y.numel(), L = g.out_numel();
    dispatch_floating(y.dtype(), "convolution", [&](auto tag) {
      using T = typename decltype(tag)::type;
      add_bias_kernel<T><<<grid_for(total), kThreads, 0, current_stream()>>>(
          reinterpret_cast<T*>(y.data_ptr()), reinterpret_cast<const T*>(bias.data_ptr()),
          bias.strides()[0], Co, L, total);
    });
    EMBER_CUDA_CHECK(cudaGetLastError());
  }
  return true;
}

bool conv_bwd_images_cuda(const Tensor& gx, const Tensor& gw, const Tensor& x, const Tensor& w,
                          const Tensor& gy, int64_t groups, const ConvGeom& g) {
  // (x is a stand-in when gw is not wanted, w when gx is not: neither is then read)
  if (!gx.defined() && !gw.defined()) return false;
  if (!cudnn_usable(gy)) return false;
  if (!gy.is_contiguous() || (gx.defined() && (!gx.is_contiguous() || !w.is_contiguous())) ||
      (gw.defined() && (!gw.is_contiguous() || !x.is_contiguous())))
    return false;
  const int64_t N = gy.sizes()[0], Co = gy.sizes()[1];
  // gw must be the zeros the caller's fallback accumulates into when this returns false
  // (gx and y are overwritten by it)
  auto reset_gw = [&] {
    EMBER_CUDA_CHECK(cudaMemsetAsync(gw.data_ptr(), 0, size_t(gw.numel() * gw.element_size()),
                                     current_stream()));
  };
  if (gw.defined()) {
    const Ran r = cudnn_pass(Pass::BwdFilter, gw.data_ptr(), x.data_ptr(), gy.data_ptr(), gy, N, Co,
                             groups, g);
    if (r == Ran::Dirty) reset_gw();
    if (r != Ran::Done) return false;
  }
  if (gx.defined() && cudnn_pass(Pass::BwdData, gx.data_ptr(), w.data_ptr(), gy.data_ptr(), gy, N,
                                 Co, groups, g) != Ran::Done) {
    if (gw.defined()) reset_gw();
    return false;
  }
  return true;
}

#endif  // EMBER_HAVE_CUDNN

}  // namespace

int64_t cudnn_version() {
#ifdef EMBER_HAVE_CUDNN
  const CudnnApi* api = cudnn();
  return api ? api->version : 0;
#else
  return 0;
#endif
}

EMBER_REGISTER_KERNELS(CUDA, conv) {
  constexpr int cuda = int(DeviceType::CUDA);
  im2col_stub.fns[cuda] = &im2col_cuda;
  col2im_stub.fns[cuda] = &col2im_cuda;
  conv_layout_stub.fns[cuda] = &conv_layout_cuda;
#ifdef EMBER_HAVE_CUDNN
  conv_fwd_images_stub.fns[cuda] = &conv_fwd_images_cuda;
  conv_bwd_images_stub.fns[cuda] = &conv_bwd_images_cuda;
#endif
}

}  // namespace ember::cuda
