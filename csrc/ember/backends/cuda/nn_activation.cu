// CUDA kernels of the fused pointwise activations, activation_stub and
// activation_backward_stub (kernels/stubs/nn_activation.h): gelu (erf and tanh
// forms), silu, softplus, mish, elu (selu / celu through it), leaky_relu, hardtanh,
// hardswish, hardsigmoid, logsigmoid, hardshrink, softshrink, threshold, and their
// first derivatives (elu / leaky_relu / hardtanh / threshold also from the result).
// The functors are kernels/activation_math.h's, shared with the CPU (Note [Activation
// math]); here they get the CUDA math library (expf, log1pf, tanhf, erfcf, ...) in place
// of nn_vec.h's SIMD helpers, computing in opmath_t (float for 16-bit floats). Every Act x dtype is
// its own instantiation of loops.cuh's grid-stride iterator kernel (launch_iter), so
// the switch on Act runs once on the host, not per element. Untaken branches are
// selects, so a NaN / inf gradient never leaks into a zero, as on the CPU.
#include <cuda_runtime.h>

#include "ember/backends/cuda/loops.cuh"
#include "ember/kernels/activation_math.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/registration.h"
#include "ember/kernels/stubs/nn_activation.h"

namespace ember::cuda {
namespace {

using act::kInvSqrt2Pi;
using act::kSqrt1_2;

/// Note [Activation math]'s policy for CUDA: the CUDA math library by compute type
/// (float: the single-precision functions).
struct CudaMath {
  __host__ __device__ static float exp(float x) { return expf(x); }
  __host__ __device__ static double exp(double x) { return ::exp(x); }
  __host__ __device__ static float expm1(float x) { return expm1f(x); }
  __host__ __device__ static double expm1(double x) { return ::expm1(x); }
  __host__ __device__ static float log1p(float x) { return log1pf(x); }
  __host__ __device__ static double log1p(double x) { return ::log1p(x); }
  __host__ __device__ static float tanh(float x) { return tanhf(x); }
  __host__ __device__ static double tanh(double x) { return ::tanh(x); }
  __host__ __device__ static float fabs(float x) { return fabsf(x); }
  __host__ __device__ static double fabs(double x) { return ::fabs(x); }
  /// The standard normal cdf: 0.5 erfc(-x / sqrt 2) in float (no 1 + erf cancellation for
  /// x < 0, like the CPU's normal tail); 0.5 (1 + erf(x / sqrt 2)) in double, as the CPU.
  __host__ __device__ static float normal_cdf(float x) {
    return 0.5f * erfcf(-x * float(kSqrt1_2));
  }
  __host__ __device__ static double normal_cdf(double x) {
    return 0.5 * (1.0 + ::erf(x * kSqrt1_2));
  }
  template <typename A>
  __host__ __device__ static A normal_cdf_pdf(A x, A& pdf) {
    pdf = exp(A(-0.5) * x * x) * A(kInvSqrt2Pi);
    return normal_cdf(x);
  }
};

/// The loops activation_math.h's entry points run the functors in: loops.cuh's iterator
/// kernels.
struct ActLoops {
  template <typename T, typename F>
  static void unary(TensorIterator& it, F f) {
    launch_iter<2>(it, UnaryBody<T, T, F>{f});
  }
  template <typename T, typename F>
  static void binary(TensorIterator& it, F f) {
    launch_iter<3>(it, BinaryBody<T, T, F>{f});
  }
};

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, nn_activation) {
  constexpr int cuda = int(DeviceType::CUDA);
  activation_stub.fns[cuda] = &act::activation_kernel<CudaMath, ActLoops>;
  activation_backward_stub.fns[cuda] = &act::activation_backward_kernel<CudaMath, ActLoops>;
}

}  // namespace ember::cuda
