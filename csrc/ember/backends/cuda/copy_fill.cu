// CUDA copy (within the GPU, and between host and GPU) and fill, through the
// same TensorIterator geometry as the CPU loops.
#include <cuda_runtime.h>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/backends/cuda/cuda_check.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/elementwise_kernels.h"
#include "ember/kernels/registration.h"
#include "ember/ops/ops.h"  // copy_ (staging); see KNOWN in tests/test_layering.py

namespace ember::cuda {
namespace {

constexpr int kMaxDims = 12;

// Byte offsets of up to two operands for a linear index, from the iterator's
// (innermost-first) shape and strides.
struct OffsetCalc {
  int ndim;
  int64_t sizes[kMaxDims];
  int64_t strides[2][kMaxDims];

  __device__ void offsets(int64_t linear, int64_t* out) const {
    out[0] = 0;
    out[1] = 0;
    for (int d = 0; d < ndim; ++d) {
      int64_t i = linear % sizes[d];
      linear /= sizes[d];
      out[0] += i * strides[0][d];
      out[1] += i * strides[1][d];
    }
  }
};

OffsetCalc make_calc(const TensorIterator& it) {
  EMBER_CHECK(it.ndim() <= kMaxDims, "CUDA kernels support at most ", kMaxDims,
              " non-coalescible dimensions, got ", it.ndim());
  OffsetCalc c{};
  c.ndim = it.ndim();
  for (int d = 0; d < c.ndim; ++d) {
    c.sizes[d] = it.shape()[d];
    for (int t = 0; t < 2 && t < it.ntensors(); ++t) c.strides[t][d] = it.strides(t)[d];
  }
  return c;
}

template <typename O, typename I>
__global__ void cast_kernel(char* out, const char* in, OffsetCalc calc, int64_t n) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int64_t off[2];
  calc.offsets(i, off);
  // the CPU's conversion (CastTo); this once went through float for every pair, rounding
  // int64 and float64 values above 2^24
  *reinterpret_cast<O*>(out + off[0]) =
      elementwise::CastTo<O, I>{}(opmath_t<I>(*reinterpret_cast<const I*>(in + off[1])));
}

template <typename T>
__global__ void strided_copy_kernel(char* out, const char* in, OffsetCalc calc, int64_t n) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int64_t off[2];
  calc.offsets(i, off);
  *reinterpret_cast<T*>(out + off[0]) = *reinterpret_cast<const T*>(in + off[1]);
}

template <typename T>
__global__ void fill_kernel(char* out, OffsetCalc calc, T v, int64_t n) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int64_t off[2];
  calc.offsets(i, off);
  *reinterpret_cast<T*>(out + off[0]) = v;
}

// A contiguous fill: no offset arithmetic.
template <typename T>
__global__ void fill_contiguous_kernel(T* __restrict__ out, T v, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = v;
}

int blocks(int64_t n) { return int((n + 255) / 256); }

// Same-dtype copy within one device, any strides.
void device_copy(const TensorIterator& it) {
  int64_t n = it.numel();
  const Tensor &dst = it.tensor(0), &src = it.tensor(1);
  if (dst.is_contiguous() && src.is_contiguous() && dst.sizes() == src.sizes()) {
    // one copy-engine transfer: about twice the strided kernel's bandwidth
    EMBER_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(),
                                     size_t(n) * size_t(dst.element_size()),
                                     cudaMemcpyDeviceToDevice, current_stream()));
    return;
  }
  OffsetCalc calc = make_calc(it);
  switch (element_size(it.dtype(0))) {
    case 1:
      strided_copy_kernel<uint8_t>
          <<<blocks(n), 256, 0, current_stream()>>>(it.data(0), it.data(1), calc, n);
      break;
    case 2:
      strided_copy_kernel<uint16_t>
          <<<blocks(n), 256, 0, current_stream()>>>(it.data(0), it.data(1), calc, n);
      break;
    case 4:
      strided_copy_kernel<uint32_t>
          <<<blocks(n), 256, 0, current_stream()>>>(it.data(0), it.data(1), calc, n);
      break;
    default:
      strided_copy_kernel<uint64_t>
          <<<blocks(n), 256, 0, current_stream()>>>(it.data(0), it.data(1), calc, n);
      break;
  }
  EMBER_CUDA_CHECK(cudaGetLastError());
}

// A host<->device transfer ordered on the current stream; returns when it is done
// (non_blocking copies are synchronous in this backend).
void memcpy_sync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  cudaStream_t s = current_stream();
  EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, s));
  EMBER_CUDA_CHECK(cudaStreamSynchronize(s));
}

bool single_value(const Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.sizes()[d] != 1 && t.strides()[d] != 0) return false;
  return true;
}

void fill(TensorIterator& it, Scalar v);

// Note [Cross-device copy]
// Host<->device copies move bytes with cudaMemcpy only when both sides are
// contiguous and of one dtype. Otherwise the work is split: cast/restride on
// the side where the data already is, then one contiguous transfer.
void copy_kernel(TensorIterator& it) {
  const Tensor& dst = it.tensor(0);
  const Tensor& src = it.tensor(1);
  bool dst_gpu = dst.device().is_cuda(), src_gpu = src.device().is_cuda();
  int64_t n = it.numel();
  if (n == 0) return;
  if (dst_gpu && src_gpu) {
    if (dst.dtype() == src.dtype()) return device_copy(it);
    OffsetCalc calc = make_calc(it);
    dispatch_all(dst.dtype(), "copy_", [&](auto otag) {
      using O = typename decltype(otag)::type;
      dispatch_all(src.dtype(), "copy_", [&](auto itag) {
        using I = typename decltype(itag)::type;
        cast_kernel<O, I><<<blocks(n), 256, 0, current_stream()>>>(it.data(0), it.data(1), calc, n);
      });
    });
    EMBER_CUDA_CHECK(cudaGetLastError());
    return;
  }
  // One side is on the host. A single host value broadcast to the device (a Python number
  // moved to the GPU, x.copy_(0-d CPU tensor)) is a fill: the value travels as a kernel
  // argument, with no transfer and no synchronization.
  if (dst_gpu && single_value(src)) {
    Scalar v = local_scalar(make_view(src, Shape{}, Shape{}, src.storage_offset()), "copy_");
    return fill(it, v);
  }
  bool same = dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() &&
              dst.sizes() == src.sizes();
  if (same) {
    size_t bytes = size_t(n) * size_t(dst.element_size());
    memcpy_sync(dst.data_ptr(), src.data_ptr(), bytes,
                dst_gpu ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
    return;
  }
  if (src_gpu) {  // device -> host: make a contiguous device copy in dst's dtype, then transfer
    Tensor staged = empty(dst.sizes(), dst.dtype(), src.device());
    copy_(staged, src);
    Tensor host = empty(dst.sizes(), dst.dtype(), Device());
    copy_(host, staged);
    copy_(dst, host);
  } else {  // host -> device: make it contiguous in dst's dtype on the host, then transfer
    Tensor host = empty(dst.sizes(), dst.dtype(), Device());
    copy_(host, src);
    if (dst.is_contiguous()) {
      memcpy_sync(dst.data_ptr(), host.data_ptr(), size_t(n) * size_t(dst.element_size()),
                  cudaMemcpyHostToDevice);
    } else {
      Tensor staged = empty(dst.sizes(), dst.dtype(), dst.device());
      copy_(staged, host);
      copy_(dst, staged);
    }
  }
}

void fill(TensorIterator& it, Scalar v) {
  int64_t n = it.numel();
  const bool contiguous = it.tensor(0).is_contiguous();
  OffsetCalc calc = make_calc(it);
  dispatch_all(it.dtype(0), "fill_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (contiguous)
      fill_contiguous_kernel<T>
          <<<blocks(n), 256, 0, current_stream()>>>(reinterpret_cast<T*>(it.data(0)), v.to<T>(), n);
    else
      fill_kernel<T><<<blocks(n), 256, 0, current_stream()>>>(it.data(0), calc, v.to<T>(), n);
  });
  EMBER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, copy_fill) {
  constexpr int cuda = int(DeviceType::CUDA);
  copy_stub.fns[cuda] = &copy_kernel;
  fill_stub.fns[cuda] = &fill;
}

}  // namespace ember::cuda
