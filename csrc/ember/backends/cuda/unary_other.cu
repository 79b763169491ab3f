// CUDA kernels of the unary ops of kernels/ops.def of every kind but FLOAT and
// FLOATONLY (those are meant for a separate unary_float.cu, compiled in parallel;
// not in the build yet): the shared functors and dtype policy
// (kernels/elementwise_kernels.h) over the CUDA loop (loops.cuh).
#include "ember/backends/cuda/loops.cuh"
#include "ember/kernels/elementwise_kernels.h"
#include "ember/kernels/registration.h"

namespace ember::cuda {
namespace {

template <typename F, Kind K>
void reg(UnaryOp op) {
  if constexpr (K != Kind::FLOAT && K != Kind::FLOATONLY)
    unary_stubs[int(op)].fns[int(DeviceType::CUDA)] = &elementwise::unary_kernel<F, K, CudaLoops>;
}

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, unary_other) {
#define EMBER_REG(n, F, k) reg<fn::F, Kind::k>(UnaryOp::n);
  EMBER_UNARY_OPS(EMBER_REG)
#undef EMBER_REG
}

}  // namespace ember::cuda
