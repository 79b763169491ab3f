// CUDA kernels of the random fills (kernels/stubs/random.h). Same Philox counter
// layout as backends/cpu/random_kernels.cpp (Note [Philox streams]): element i of
// the contiguous output reads block offset + i / PER, lane i % PER, with the same
// PER per distribution and dtype and the same arithmetic. So for one seed:
//  * uniform_, random_ / randint, bernoulli_ (scalar and tensor p) and randperm
//    give bitwise the CPU's values: their arithmetic is integer or a correctly
//    rounded multiply and add (written with __dmul_rn / __dadd_rn, which nvcc does
//    not contract into an FMA; the CPU build, without -march=native, has no FMA);
//  * normal_ and exponential_ draw the same uniforms but go through the GPU's
//    log / cos / sin / log1p, which may differ from glibc's in the last bit.
// multinomial has no CUDA kernel yet.
#include <cuda_runtime.h>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/backends/cuda/cuda_check.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/registration.h"
#include "ember/kernels/stubs/random.h"

namespace ember::cuda {
namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;
constexpr int kThreads = 256;

// Runs gen(block, vals, i0, cnt) for every Philox block of the output; gen writes the
// block's `cnt` (<= PER) values, those of elements i0 .. i0 + cnt - 1.
template <typename T, int PER, typename Gen>
__global__ void fill_blocks_kernel(T* __restrict__ out, int64_t n, uint64_t seed, uint64_t offset,
                                   Gen gen) {
  const int64_t nb = (n + PER - 1) / PER;
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t b = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; b < nb; b += step) {
    const philox::Block blk = philox::block(seed, offset + uint64_t(b));
    const int64_t i0 = b * PER;
    const int cnt = int(n - i0 < PER ? n - i0 : PER);
    T vals[PER];
    gen(blk, vals, i0, cnt);
    for (int l = 0; l < cnt; ++l) out[i0 + l] = vals[l];
  }
}

template <typename T, int PER, typename Gen>
void fill_blocks(const Tensor& out, const RandomArgs& a, Gen gen) {
  EMBER_CHECK(out.is_contiguous(), "random fill (CUDA): output must be contiguous");
  const int64_t n = out.numel();
  if (n == 0) return;
  const int64_t nb = (n + PER - 1) / PER;
  const unsigned blocks = unsigned(std::min<int64_t>((nb + kThreads - 1) / kThreads, 1 << 16));
  fill_blocks_kernel<T, PER, Gen><<<blocks, kThreads, 0, current_stream()>>>(
      reinterpret_cast<T*>(out.data_ptr()), n, a.seed, a.offset, gen);
  EMBER_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
__device__ __forceinline__ T from_int64(int64_t x) {
  if constexpr (std::is_same<T, bool>::value)
    return x != 0;
  else if constexpr (std::is_same<T, Half>::value || std::is_same<T, BFloat16>::value)
    return T(float(x));
  else
    return static_cast<T>(x);
}

// ---- uniform ----------------------------------------------------------------------------
struct UniformDouble {
  double lo, hi, w;
  __device__ void operator()(const philox::Block& k, double* v, int64_t, int) const {
    for (int l = 0; l < 2; ++l) {
      const double x =
          __dadd_rn(lo, __dmul_rn(philox::to_unit_double(k.w[2 * l], k.w[2 * l + 1]), w));
      v[l] = (x >= hi && hi > lo) ? lo : x;
    }
  }
};
template <typename T>
struct UniformNarrow {
  double lo, hi, w;
  __device__ void operator()(const philox::Block& k, T* v, int64_t, int) const {
    constexpr int bits = philox::mantissa_bits<T>();
    for (int l = 0; l < 4; ++l) {
      const double x = __dadd_rn(lo, __dmul_rn(double(philox::to_unit_float(k.w[l], bits)), w));
      T t = T(float(x));
      if (double(float(t)) >= hi && hi > lo) t = T(float(lo));
      v[l] = t;
    }
  }
};

void uniform_kernel(const Tensor& out, const RandomArgs& a) {
  const double lo = a.a, hi = a.b, w = a.b - a.a;
  if (out.dtype() == DType::Float64)
    return fill_blocks<double, 2>(out, a, UniformDouble{lo, hi, w});
  dispatch_floating(out.dtype(), "uniform_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same<T, double>::value)
      fill_blocks<T, 4>(out, a, UniformNarrow<T>{lo, hi, w});
  });
}

// ---- normal (Box-Muller, as the CPU) ---------------------------------------------------------
struct NormalDouble {
  double mean, sd;
  __device__ void operator()(const philox::Block& k, double* v, int64_t, int) const {
    const double u1 = 1.0 - philox::to_unit_double(k.w[0], k.w[1]);
    const double u2 = philox::to_unit_double(k.w[2], k.w[3]);
    const double r = sqrt(-2.0 * log(u1));
    const double th = __dmul_rn(kTwoPi, u2);
    v[0] = __dadd_rn(mean, __dmul_rn(__dmul_rn(sd, r), cos(th)));
    v[1] = __dadd_rn(mean, __dmul_rn(__dmul_rn(sd, r), sin(th)));
  }
};
template <typename T>
struct NormalNarrow {
  double mean, sd;
  __device__ void operator()(const philox::Block& k, T* v, int64_t, int) const {
    for (int p = 0; p < 2; ++p) {
      const float u1 = 1.0f - philox::to_unit_float(k.w[2 * p]);
      const float u2 = philox::to_unit_float(k.w[2 * p + 1]);
      const float r = sqrtf(-2.0f * logf(u1));
      const float th = __fmul_rn(float(kTwoPi), u2);
      v[2 * p] = T(float(__dadd_rn(mean, __dmul_rn(sd, double(__fmul_rn(r, cosf(th)))))));
      v[2 * p + 1] = T(float(__dadd_rn(mean, __dmul_rn(sd, double(__fmul_rn(r, sinf(th)))))));
    }
  }
};

void normal_kernel(const Tensor& out, const RandomArgs& a) {
  const double mean = a.a, sd = a.b;
  if (out.dtype() == DType::Float64) return fill_blocks<double, 2>(out, a, NormalDouble{mean, sd});
  dispatch_floating(out.dtype(), "normal_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same<T, double>::value)
      fill_blocks<T, 4>(out, a, NormalNarrow<T>{mean, sd});
  });
}

// ---- exponential -------------------------------------------------------------------------
struct ExponentialDouble {
  double lambd;
  __device__ void operator()(const philox::Block& k, double* v, int64_t, int) const {
    for (int l = 0; l < 2; ++l)
      v[l] = -log1p(-philox::to_unit_double(k.w[2 * l], k.w[2 * l + 1])) / lambd;
  }
};
template <typename T>
struct ExponentialNarrow {
  double lambd;
  __device__ void operator()(const philox::Block& k, T* v, int64_t, int) const {
    for (int l = 0; l < 4; ++l)
      v[l] = T(float(-log1p(-double(philox::to_unit_float(k.w[l]))) / lambd));
  }
};

void exponential_kernel(const Tensor& out, const RandomArgs& a) {
  const double lambd = a.a;
  if (out.dtype() == DType::Float64)
    return fill_blocks<double, 2>(out, a, ExponentialDouble{lambd});
  dispatch_floating(out.dtype(), "exponential_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same<T, double>::value)
      fill_blocks<T, 4>(out, a, ExponentialNarrow<T>{lambd});
  });
}

// ---- random_ (integers from + (x mod range); range 0 stands for 2^64) -------------------------
template <typename T>
struct RandomSmall {  // 0 < range <= 2^32: one 32-bit word per value
  uint64_t from, range;
  __device__ void operator()(const philox::Block& k, T* v, int64_t, int) const {
    for (int l = 0; l < 4; ++l) v[l] = from_int64<T>(int64_t(from + uint64_t(k.w[l]) % range));
  }
};
template <typename T>
struct RandomBig {  // two words per value
  uint64_t from, range;
  __device__ void operator()(const philox::Block& k, T* v, int64_t, int) const {
    for (int l = 0; l < 2; ++l) {
      const uint64_t x = (uint64_t(k.w[2 * l + 1]) << 32) | k.w[2 * l];
      v[l] = from_int64<T>(int64_t(from + (range ? x % range : x)));
    }
  }
};

void random_kernel(const Tensor& out, const RandomArgs& a) {
  const uint64_t range = a.range, from = uint64_t(a.from);
  dispatch_all(out.dtype(), "random_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (range != 0 && range <= (uint64_t(1) << 32))
      fill_blocks<T, 4>(out, a, RandomSmall<T>{from, range});
    else
      fill_blocks<T, 2>(out, a, RandomBig<T>{from, range});
  });
}

// ---- bernoulli ------------------------------------------------------------------------------
template <typename T>
struct BernoulliScalar {
  double p;
  __device__ void operator()(const philox::Block& k, T* v, int64_t, int) const {
    for (int l = 0; l < 2; ++l)
      v[l] = from_int64<T>(philox::to_unit_double(k.w[2 * l], k.w[2 * l + 1]) < p);
  }
};
template <typename T>
struct BernoulliTensor {
  const double* p;  // contiguous, one per element
  __device__ void operator()(const philox::Block& k, T* v, int64_t i0, int cnt) const {
    for (int l = 0; l < cnt; ++l)
      v[l] = from_int64<T>(philox::to_unit_double(k.w[2 * l], k.w[2 * l + 1]) < p[i0 + l]);
  }
};

void bernoulli_scalar_kernel(const Tensor& out, const RandomArgs& a) {
  dispatch_all(out.dtype(), "bernoulli_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_blocks<T, 2>(out, a, BernoulliScalar<T>{a.a});
  });
}

void bernoulli_tensor_kernel(const Tensor& out, const Tensor& p, const RandomArgs& a) {
  EMBER_CHECK(p.device().is_cuda() && p.dtype() == DType::Float64 && p.is_contiguous() &&
                  p.numel() == out.numel(),
              "bernoulli_ (CUDA): p must be a contiguous float64 CUDA tensor of ", out.numel(),
              " elements");
  const double* pp = reinterpret_cast<const double*>(p.data_ptr());
  dispatch_all(out.dtype(), "bernoulli_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_blocks<T, 2>(out, a, BernoulliTensor<T>{pp});
  });
}

// ---- randperm: Fisher-Yates, step i using block offset + i, as the CPU
// --------------------------- Each step depends on the previous swaps, so one thread runs them all
// (O(n) on one GPU thread: correct and bitwise the CPU's permutation, but slow for large n).
__global__ void iota_kernel(int64_t* o, int64_t n) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) o[i] = i;
}
__global__ void fisher_yates_kernel(int64_t* o, int64_t n, uint64_t seed, uint64_t offset) {
  for (int64_t i = n - 1; i > 0; --i) {
    const philox::Block b = philox::block(seed, offset + uint64_t(i));
    const uint64_t x = (uint64_t(b.w[1]) << 32) | b.w[0];
    const int64_t j = int64_t(x % uint64_t(i + 1));
    const int64_t t = o[i];
    o[i] = o[j];
    o[j] = t;
  }
}

void randperm_kernel(const Tensor& out, const RandomArgs& a) {
  EMBER_CHECK(out.dtype() == DType::Int64 && out.is_contiguous(),
              "randperm (CUDA): expected a contiguous int64 output");
  const int64_t n = out.numel();
  if (n == 0) return;
  int64_t* o = reinterpret_cast<int64_t*>(out.data_ptr());
  const unsigned blocks = unsigned(std::min<int64_t>((n + kThreads - 1) / kThreads, 1 << 16));
  iota_kernel<<<blocks, kThreads, 0, current_stream()>>>(o, n);
  EMBER_CUDA_CHECK(cudaGetLastError());
  fisher_yates_kernel<<<1, 1, 0, current_stream()>>>(o, n, a.seed, a.offset);
  EMBER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, random) {
  constexpr int cuda = int(DeviceType::CUDA);
  random_stubs[int(Dist::Uniform)].fns[cuda] = &uniform_kernel;
  random_stubs[int(Dist::Normal)].fns[cuda] = &normal_kernel;
  random_stubs[int(Dist::Random)].fns[cuda] = &random_kernel;
  random_stubs[int(Dist::Bernoulli)].fns[cuda] = &bernoulli_scalar_kernel;
  random_stubs[int(Dist::Exponential)].fns[cuda] = &exponential_kernel;
  bernoulli_tensor_stub.fns[cuda] = &bernoulli_tensor_kernel;
  randperm_stub.fns[cuda] = &randperm_kernel;
}

}  // namespace ember::cuda
