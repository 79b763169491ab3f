// CUDA kernels of the floating unary ops of kernels/ops.def (kinds FLOAT and
// FLOATONLY): the shared functors and dtype policy (kernels/elementwise_kernels.h)
// over the CUDA loop (loops.cuh). Split from unary_other.cu so nvcc compiles the
// two halves in parallel.
#include "ember/backends/cuda/loops.cuh"
#include "ember/kernels/elementwise_kernels.h"
#include "ember/kernels/registration.h"

namespace ember::cuda {
namespace {

template <typename F, Kind K>
void reg(UnaryOp op) {
  if constexpr (K == Kind::FLOAT || K == Kind::FLOATONLY)
    unary_stubs[int(op)].fns[int(DeviceType::CUDA)] = &elementwise::unary_kernel<F, K, CudaLoops>;
}

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, unary_float) {
#define EMBER_REG(n, F, k) reg<fn::F, Kind::k>(UnaryOp::n);
  EMBER_UNARY_OPS(EMBER_REG)
#undef EMBER_REG
}

}  // namespace ember::cuda
