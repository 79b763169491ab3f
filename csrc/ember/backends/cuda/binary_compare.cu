// CUDA kernels of the comparisons and logical binary ops of kernels/ops.def (kinds
// COMPARE, LOGICAL; bool result), and of where and lerp: the shared functors and dtype
// policy (kernels/elementwise_kernels.h) over the CUDA loop (loops.cuh). The
// arithmetic kinds (ARITH, TRUEDIV, FLOATING, BITS) are meant for a separate
// binary_arith.cu, not in the build yet.
#include "ember/backends/cuda/loops.cuh"
#include "ember/kernels/elementwise_kernels.h"
#include "ember/kernels/registration.h"

namespace ember::cuda {
namespace {

template <typename F, Kind K>
void reg(BinaryOp op) {
  if constexpr (K == Kind::COMPARE || K == Kind::LOGICAL)
    binary_stubs[int(op)].fns[int(DeviceType::CUDA)] = &elementwise::binary_kernel<F, K, CudaLoops>;
}

// where: out <- cond ? a : b, moved as raw elements of out's width (a and b have
// out's dtype, cond is bool), as the CPU kernel.
template <typename U>
struct WhereBody {
  __device__ __forceinline__ void operator()(char* (&p)[4]) const {
    const bool c = *reinterpret_cast<const bool*>(p[1]);
    *reinterpret_cast<U*>(p[0]) = *reinterpret_cast<const U*>(c ? p[2] : p[3]);
  }
};

void where_kernel(TensorIterator& it) {
  switch (element_size(it.dtype(0))) {
    case 1:
      return launch_iter<4>(it, WhereBody<uint8_t>{});
    case 2:
      return launch_iter<4>(it, WhereBody<uint16_t>{});
    case 4:
      return launch_iter<4>(it, WhereBody<uint32_t>{});
    case 8:
      return launch_iter<4>(it, WhereBody<uint64_t>{});
    default:
      EMBER_ERROR("where: unsupported element size ", element_size(it.dtype(0)));
  }
}

// lerp: fn::Lerp in opmath_t over out, start, end, weight (all of out's dtype).
template <typename T>
struct LerpBody {
  __device__ __forceinline__ void operator()(char* (&p)[4]) const {
    using M = opmath_t<T>;
    auto in = [&](int k) { return M(*reinterpret_cast<const T*>(p[k])); };
    *reinterpret_cast<T*>(p[0]) = T(fn::Lerp{}(in(1), in(2), in(3)));
  }
};

void lerp_kernel(TensorIterator& it) {
  dispatch_floating(it.dtype(0), "lerp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_iter<4>(it, LerpBody<T>{});
  });
}

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, binary_compare) {
#define EMBER_REG(n, F, k) reg<fn::F, Kind::k>(BinaryOp::n);
  EMBER_BINARY_OPS(EMBER_REG)
#undef EMBER_REG
  where_stub.fns[int(DeviceType::CUDA)] = &where_kernel;
  lerp_stub.fns[int(DeviceType::CUDA)] = &lerp_kernel;
}

}  // namespace ember::cuda
