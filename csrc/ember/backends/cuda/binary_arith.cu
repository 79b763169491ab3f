// CUDA kernels of the arithmetic binary ops of kernels/ops.def (kinds ARITH,
// TRUEDIV, FLOATING, BITS): the shared functors and dtype policy
// (kernels/elementwise_kernels.h) over the CUDA loop (loops.cuh). The comparisons,
// logical ops and where are in binary_compare.cu (compiled in parallel).
#include "ember/backends/cuda/loops.cuh"
#include "ember/kernels/elementwise_kernels.h"
#include "ember/kernels/registration.h"

namespace ember::cuda {
namespace {

template <typename F, Kind K>
void reg(BinaryOp op) {
  if constexpr (K != Kind::COMPARE && K != Kind::LOGICAL)
    binary_stubs[int(op)].fns[int(DeviceType::CUDA)] = &elementwise::binary_kernel<F, K, CudaLoops>;
}

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, binary_arith) {
#define EMBER_REG(n, F, k) reg<fn::F, Kind::k>(BinaryOp::n);
  EMBER_BINARY_OPS(EMBER_REG)
#undef EMBER_REG
}

}  // namespace ember::cuda
