// CUDA kernels of the recurrent layers' fused per-step gate math (kernels/stubs/nn_rnn.h):
// rnn_step_fwd, rnn_step_bwd and rnn_accumulate. The GEMMs of a step run through
// gemm_stub (cuBLAS) in ops/nn_rnn.cpp; these kernels do the elementwise rest of one time
// step with one thread per (row, hidden unit), grid-stride, on the current stream, with
// the CPU kernel's formulas (backends/cpu/nn_rnn.cpp) in the tensor's dtype (float32 or
// float64, as the CPU). float's exp and tanh are device copies of nn_rnn_math.h's
// (Cephes expf, tanh = 1 - 2 / (exp(2|x|) + 1) with the odd series near 0), so the
// results agree with the CPU to a few ulp (nvcc may fuse multiply-adds the CPU does not);
// float64 uses exp and tanh.
#include <cuda_runtime.h>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/backends/cuda/cuda_check.h"
#include "ember/backends/cuda/loops.cuh"
#include "ember/kernels/registration.h"
#include "ember/kernels/stubs/nn_rnn.h"

namespace ember::cuda {
namespace {

// nn_vec.h's exp_f (Cephes): x = k ln2 + r, the polynomial of r, 2^k applied as two
// normal-float factors so that overflow and subnormal results need no branch.
__device__ __forceinline__ float exp_f(float x) {
  const float xc = fminf(89.0f, fmaxf(-104.0f, x));  // NaN -> -104
  const float fx = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (xc - fx * 0.693359375f) + fx * 2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  const int k = int(fx), k1 = k >> 1, k2 = k - k1;
  const float p1 = __int_as_float((k1 + 127) << 23), p2 = __int_as_float((k2 + 127) << 23);
  const float res = (y * p1) * p2;
  return x != x ? x : res;
}

__device__ __forceinline__ float exp_(float x) { return exp_f(x); }
__device__ __forceinline__ double exp_(double x) { return exp(x); }

template <typename T>
__device__ __forceinline__ T sigm(T x) {
  return T(1) / (T(1) + exp_(-x));
}

// nn_rnn_math.h's tanh_.
__device__ __forceinline__ float tanh_(float x) {
  const float ax = x < 0 ? -x : x;
  const float e = exp_f(2.0f * ax);
  const float big = 1.0f - 2.0f / (e + 1.0f);
  const float x2 = ax * ax;
  const float small =
      ax * (1.0f + x2 * (-0.333333333f + x2 * (0.133333333f + x2 * (-0.0539682540f))));
  const float t = ax < 0.0625f ? small : big;
  return x < 0 ? -t : t;
}
__device__ __forceinline__ double tanh_(double x) { return tanh(x); }

// Row r, unit j of a [rows, H] step. Pointers are the tensors' data (undefined ones null).
template <typename T>
struct FwdPtrs {
  T* gates;
  const T* hgates;
  const T* h_prev;
  const T* c_prev;
  T* c_new;
  T* h_new;
  T* hn_out;
};

template <typename T>
__global__ void __launch_bounds__(kThreads)
    step_fwd_kernel(FwdPtrs<T> p, RnnMode mode, int64_t rows, int64_t H) {
  const int64_t n = rows * H, step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < n; t += step) {
    const int64_t r = t / H, j = t - r * H;
    switch (mode) {
      case RnnMode::RnnTanh: {
        T* g = p.gates + r * H + j;
        *g = tanh_(*g);
        break;
      }
      case RnnMode::RnnRelu: {
        T* g = p.gates + r * H + j;
        *g = *g > T(0) ? *g : T(0);
        break;
      }
      case RnnMode::Lstm: {
        T* g = p.gates + r * 4 * H + j;
        const T i = sigm(g[0]), f = sigm(g[H]), c = tanh_(g[2 * H]), o = sigm(g[3 * H]);
        g[0] = i;
        g[H] = f;
        g[2 * H] = c;
        g[3 * H] = o;
        const T cc = f * p.c_prev[t] + i * c;
        p.c_new[t] = cc;
        p.h_new[t] = o * tanh_(cc);
        break;
      }
      case RnnMode::Gru: {
        T* g = p.gates + r * 3 * H + j;
        const T* hg = p.hgates + r * 3 * H + j;
        const T rr = sigm(g[0] + hg[0]), z = sigm(g[H] + hg[H]);
        const T hnj = hg[2 * H];
        const T nn = tanh_(g[2 * H] + rr * hnj);
        g[0] = rr;
        g[H] = z;
        g[2 * H] = nn;
        p.hn_out[t] = hnj;
        p.h_new[t] = (T(1) - z) * nn + z * p.h_prev[t];
        break;
      }
    }
  }
}

template <typename T>
struct BwdPtrs {
  const T* dh;
  T* dc;
  const T* gates;
  const T* c_prev;
  const T* h_prev;
  const T* hn;
  T* dgates;
  T* dhgates;
  T* dh_direct;
};

template <typename T>
__global__ void __launch_bounds__(kThreads)
    step_bwd_kernel(BwdPtrs<T> p, RnnMode mode, int64_t rows, int64_t H) {
  const int64_t n = rows * H, step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < n; t += step) {
    const int64_t r = t / H, j = t - r * H;
    const T dh = p.dh[t];
    switch (mode) {
      case RnnMode::RnnTanh: {
        const T g = p.gates[t];
        p.dgates[t] = dh * (T(1) - g * g);
        break;
      }
      case RnnMode::RnnRelu:
        p.dgates[t] = p.gates[t] > T(0) ? dh : T(0);
        break;
      case RnnMode::Lstm: {
        const T* g = p.gates + r * 4 * H + j;
        T* dg = p.dgates + r * 4 * H + j;
        const T i = g[0], f = g[H], c = g[2 * H], o = g[3 * H], cp = p.c_prev[t];
        const T cc = f * cp + i * c;
        const T tc = tanh_(cc);
        const T dcc = p.dc[t] + dh * o * (T(1) - tc * tc);
        dg[0] = dcc * c * i * (T(1) - i);
        dg[H] = dcc * cp * f * (T(1) - f);
        dg[2 * H] = dcc * i * (T(1) - c * c);
        dg[3 * H] = dh * tc * o * (T(1) - o);
        p.dc[t] = dcc * f;
        break;
      }
      case RnnMode::Gru: {
        const T* g = p.gates + r * 3 * H + j;
        T* dx = p.dgates + r * 3 * H + j;
        T* dhg = p.dhgates + r * 3 * H + j;
        const T rr = g[0], z = g[H], nn = g[2 * H];
        const T dn = dh * (T(1) - z) * (T(1) - nn * nn);
        const T dz = dh * (p.h_prev[t] - nn) * z * (T(1) - z);
        const T dr = dn * p.hn[t] * rr * (T(1) - rr);
        dx[0] = dr;
        dx[H] = dz;
        dx[2 * H] = dn;
        dhg[0] = dr;
        dhg[H] = dz;
        dhg[2 * H] = dn * rr;
        p.dh_direct[t] = dh * z;
        break;
      }
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    accumulate_kernel(T* __restrict__ a, const T* __restrict__ b, int64_t n) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) a[i] += b[i];
}

template <typename T>
T* ptr(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

template <typename T>
void step_fwd(const RnnStepFwdArgs& a) {
  const int64_t n = a.rows * a.hidden;
  if (n == 0) return;
  FwdPtrs<T> p{ptr<T>(a.gates), ptr<T>(a.hgates), ptr<T>(a.h_prev), ptr<T>(a.c_prev),
               ptr<T>(a.c_new), ptr<T>(a.h_new),  ptr<T>(a.hn_out)};
  step_fwd_kernel<T><<<grid_for(n), kThreads, 0, current_stream()>>>(p, a.mode, a.rows, a.hidden);
  EMBER_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void step_bwd(const RnnStepBwdArgs& a) {
  const int64_t n = a.rows * a.hidden;
  if (n == 0) return;
  BwdPtrs<T> p{ptr<T>(a.dh),     ptr<T>(a.dc),      ptr<T>(a.gates),
               ptr<T>(a.c_prev), ptr<T>(a.h_prev),  ptr<T>(a.hn),
               ptr<T>(a.dgates), ptr<T>(a.dhgates), ptr<T>(a.dh_direct)};
  step_bwd_kernel<T><<<grid_for(n), kThreads, 0, current_stream()>>>(p, a.mode, a.rows, a.hidden);
  EMBER_CUDA_CHECK(cudaGetLastError());
}

void step_fwd_entry(const RnnStepFwdArgs& a) {
  if (a.gates.dtype() == DType::Float64) return step_fwd<double>(a);
  EMBER_CHECK(a.gates.dtype() == DType::Float32, "rnn: unsupported dtype ",
              dtype_name(a.gates.dtype()));
  step_fwd<float>(a);
}

void step_bwd_entry(const RnnStepBwdArgs& a) {
  if (a.gates.dtype() == DType::Float64) return step_bwd<double>(a);
  EMBER_CHECK(a.gates.dtype() == DType::Float32, "rnn: unsupported dtype ",
              dtype_name(a.gates.dtype()));
  step_bwd<float>(a);
}

void accumulate_entry(const Tensor& a, const Tensor& b) {
  const int64_t n = a.numel();
  if (n == 0) return;
  if (a.dtype() == DType::Float64) {
    accumulate_kernel<double>
        <<<grid_for(n), kThreads, 0, current_stream()>>>(a.data<double>(), b.data<double>(), n);
  } else {
    EMBER_CHECK(a.dtype() == DType::Float32, "rnn: unsupported dtype ", dtype_name(a.dtype()));
    accumulate_kernel<float>
        <<<grid_for(n), kThreads, 0, current_stream()>>>(a.data<float>(), b.data<float>(), n);
  }
  EMBER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, rnn) {
  rnn_step_fwd_stub.fns[int(DeviceType::CUDA)] = &step_fwd_entry;
  rnn_step_bwd_stub.fns[int(DeviceType::CUDA)] = &step_bwd_entry;
  rnn_accumulate_stub.fns[int(DeviceType::CUDA)] = &accumulate_entry;
}

}  // namespace ember::cuda
