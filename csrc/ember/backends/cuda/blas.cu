// The CUDA GEMM (gemm_stub of kernels/stubs/linalg.h): cuBLAS for the floating
// dtypes (cublasGemmEx / cublasGemmStridedBatchedEx), a plain kernel for the
// integer dtypes, which cuBLAS does not multiply.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <climits>
#include <cstdint>
#include <vector>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/backends/cuda/cuda_check.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/stubs/linalg.h"

#define EMBER_CUBLAS_CHECK(expr)                                                                  \
  do {                                                                                            \
    cublasStatus_t st_ = (expr);                                                                  \
    EMBER_CHECK(st_ == CUBLAS_STATUS_SUCCESS, "cuBLAS error: ", cublasGetStatusString(st_), " (", \
                #expr, ")");                                                                      \
  } while (0)

namespace ember::cuda {
namespace {

// Note [cuBLAS handles]
// One handle per thread and device, created on first use and never destroyed
// (destroying it at thread exit could run after the CUDA context is gone). Each
// call binds it to the caller's current stream first, so the GEMM is ordered
// with the other kernels of that stream. The math mode is CUBLAS_DEFAULT_MATH
// and float32 runs CUBLAS_COMPUTE_32F: no TF32 (ember has no allow_tf32 switch).
cublasHandle_t handle() {
  constexpr int kMaxDevices = 64;
  thread_local std::array<cublasHandle_t, kMaxDevices> handles{};
  const int dev = current_device();
  EMBER_CHECK(dev >= 0 && dev < kMaxDevices, "CUDA: invalid device index ", dev);
  cublasHandle_t& h = handles[size_t(dev)];
  if (!h) {
    EMBER_CUBLAS_CHECK(cublasCreate(&h));
    EMBER_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
  }
  EMBER_CUBLAS_CHECK(cublasSetStream(h, current_stream(dev)));
  return h;
}

// Element offsets of every matrix of `t` over its leading `nd` dims (row-major order of
// the batch index; strides may be 0 for broadcast dims), as the CPU kernel.
std::vector<int64_t> batch_offsets(const Tensor& t, int64_t nd) {
  int64_t count = 1;
  for (int64_t d = 0; d < nd; ++d) count *= t.sizes()[d];
  std::vector<int64_t> offs(size_t(std::max<int64_t>(count, 0)));
  std::vector<int64_t> idx(size_t(nd), 0);
  int64_t off = 0;
  for (int64_t i = 0; i < count; ++i) {
    offs[size_t(i)] = off;
    for (int64_t d = nd - 1; d >= 0; --d) {
      off += t.strides()[d];
      if (++idx[size_t(d)] < t.sizes()[d]) break;
      off -= t.strides()[d] * t.sizes()[d];
      idx[size_t(d)] = 0;
    }
  }
  return offs;
}

/// The common stride of `offs` when it is an arithmetic progression from 0.
bool uniform_stride(const std::vector<int64_t>& offs, int64_t& stride) {
  stride = offs.size() > 1 ? offs[1] - offs[0] : 0;
  for (size_t i = 0; i < offs.size(); ++i)
    if (offs[i] != int64_t(i) * stride) return false;
  return true;
}

bool fits_int(int64_t v) { return v >= 0 && v <= int64_t(INT_MAX); }

// c (row-major m x n) = alpha * a (m x k) @ b (k x n) + beta * c, as the column-major
// product c^T = b^T a^T: cuBLAS's first operand is b, its second a (Note [Matrix layout]).
void gemm_cublas(const Tensor& c, const Tensor& a, const Tensor& b, Scalar beta_s, Scalar alpha_s) {
  const int64_t nd = c.dim() - 2;
  const int64_t m = c.sizes()[nd], n = c.sizes()[nd + 1], k = a.sizes()[nd + 1];
  const MatrixLayout la = matrix_layout(m, k, a.strides()[nd], a.strides()[nd + 1]);
  const MatrixLayout lb = matrix_layout(k, n, b.strides()[nd], b.strides()[nd + 1]);
  const MatrixLayout lc = matrix_layout(m, n, c.strides()[nd], c.strides()[nd + 1]);
  EMBER_CHECK(la.ok && lb.ok && lc.ok && !lc.trans,
              "matmul (CUDA): operands must have BLAS-friendly layouts (front-end bug)");
  EMBER_CHECK(fits_int(m) && fits_int(n) && fits_int(k) && fits_int(la.ld) && fits_int(lb.ld) &&
                  fits_int(lc.ld),
              "matmul (CUDA): sizes ", m, "x", k, " @ ", k, "x", n,
              " exceed cuBLAS's 32-bit dimensions");

  cudaDataType dt;
  cublasComputeType_t compute;
  const DType et = c.dtype();
  switch (et) {
    case DType::Float32:
      dt = CUDA_R_32F;
      compute = CUBLAS_COMPUTE_32F;
      break;
    case DType::Float64:
      dt = CUDA_R_64F;
      compute = CUBLAS_COMPUTE_64F;
      break;
    case DType::Float16:
      dt = CUDA_R_16F;
      compute = CUBLAS_COMPUTE_32F;
      break;
    case DType::BFloat16:
      dt = CUDA_R_16BF;
      compute = CUBLAS_COMPUTE_32F;
      break;
    default:
      EMBER_ERROR("matmul (CUDA): cuBLAS path got ", dtype_name(et));
  }
  // alpha / beta in the compute type: double for float64, float otherwise.
  const double alpha_d = alpha_s.to_double(), beta_d = beta_s.to_double();
  const float alpha_f = float(alpha_d), beta_f = float(beta_d);
  const void* alpha = et == DType::Float64 ? static_cast<const void*>(&alpha_d)
                                           : static_cast<const void*>(&alpha_f);
  const void* beta =
      et == DType::Float64 ? static_cast<const void*>(&beta_d) : static_cast<const void*>(&beta_f);

  const cublasOperation_t opb = lb.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opa = la.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int64_t es = c.element_size();
  const char* pa = a.data_ptr();
  const char* pb = b.data_ptr();
  char* pc = c.data_ptr();
  const std::vector<int64_t> oa = batch_offsets(a, nd), ob = batch_offsets(b, nd),
                             oc = batch_offsets(c, nd);
  const int64_t count = int64_t(oc.size());
  if (count == 0) return;
  cublasHandle_t h = handle();

  int64_t sa = 0, sb = 0, sc = 0;
  const bool strided = count > 1 && fits_int(count) && uniform_stride(oa, sa) &&
                       uniform_stride(ob, sb) && uniform_stride(oc, sc) && sa > 0 && sb > 0 &&
                       sc > 0;
  if (strided) {
    EMBER_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        h, opb, opa, int(n), int(m), int(k), alpha, pb, dt, int(lb.ld), (long long)sb, pa, dt,
        int(la.ld), (long long)sa, beta, pc, dt, int(lc.ld), (long long)sc, int(count), compute,
        CUBLAS_GEMM_DEFAULT));
    return;
  }
  // One call per matrix (a single matrix, or batch strides cuBLAS's strided form cannot take,
  // such as broadcast operands with stride 0).
  for (int64_t i = 0; i < count; ++i) {
    EMBER_CUBLAS_CHECK(
        cublasGemmEx(h, opb, opa, int(n), int(m), int(k), alpha, pb + ob[size_t(i)] * es, dt,
                     int(lb.ld), pa + oa[size_t(i)] * es, dt, int(la.ld), beta,
                     pc + oc[size_t(i)] * es, dt, int(lc.ld), compute, CUBLAS_GEMM_DEFAULT));
  }
}

// ---- integer GEMM: one thread per element of c, accumulating in uint64 (wraps as the CPU) ----

constexpr int kMaxBatchDims = 8;

struct IntGemmGeom {
  int nbatch;
  int64_t bsize[kMaxBatchDims], bsa[kMaxBatchDims], bsb[kMaxBatchDims], bsc[kMaxBatchDims];
  int64_t m, n, k;
  int64_t asr, asc, bsr, bsc_, csr, csc;
};

template <typename T>
__global__ void int_gemm_kernel(T* c, const T* a, const T* b, IntGemmGeom g, int64_t total,
                                uint64_t alpha, uint64_t beta, bool beta_zero) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
    const int64_t j = e % g.n, i = (e / g.n) % g.m;
    int64_t bi = e / (g.n * g.m);
    int64_t oa = 0, ob = 0, oc = 0;
    for (int d = g.nbatch - 1; d >= 0; --d) {
      const int64_t x = bi % g.bsize[d];
      bi /= g.bsize[d];
      oa += x * g.bsa[d];
      ob += x * g.bsb[d];
      oc += x * g.bsc[d];
    }
    const T* ar = a + oa + i * g.asr;
    const T* bc = b + ob + j * g.bsc_;
    uint64_t acc = 0;
    for (int64_t p = 0; p < g.k; ++p)
      acc += uint64_t(int64_t(ar[p * g.asc])) * uint64_t(int64_t(bc[p * g.bsr]));
    T* dst = c + oc + i * g.csr + j * g.csc;
    uint64_t r = alpha * acc;
    if (!beta_zero) r += beta * uint64_t(int64_t(*dst));
    *dst = T(int64_t(r));
  }
}

void gemm_integer(const Tensor& c, const Tensor& a, const Tensor& b, Scalar beta_s,
                  Scalar alpha_s) {
  const int64_t nd = c.dim() - 2;
  EMBER_CHECK(nd <= kMaxBatchDims, "matmul (CUDA): at most ", kMaxBatchDims,
              " batch dims for integer dtypes, got ", nd);
  IntGemmGeom g{};
  g.nbatch = int(nd);
  for (int64_t d = 0; d < nd; ++d) {
    g.bsize[d] = c.sizes()[d];
    g.bsa[d] = a.strides()[d];
    g.bsb[d] = b.strides()[d];
    g.bsc[d] = c.strides()[d];
  }
  g.m = c.sizes()[nd];
  g.n = c.sizes()[nd + 1];
  g.k = a.sizes()[nd + 1];
  g.asr = a.strides()[nd];
  g.asc = a.strides()[nd + 1];
  g.bsr = b.strides()[nd];
  g.bsc_ = b.strides()[nd + 1];
  g.csr = c.strides()[nd];
  g.csc = c.strides()[nd + 1];
  const int64_t total = c.numel();
  if (total == 0) return;
  const uint64_t alpha = uint64_t(alpha_s.to_int()), beta = uint64_t(beta_s.to_int());
  const bool beta_zero = beta_s.to_double() == 0.0;
  const unsigned blocks = unsigned(std::min<int64_t>((total + 255) / 256, int64_t(1) << 16));
  dispatch_numeric(c.dtype(), "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral<T>::value) {
      int_gemm_kernel<T><<<blocks, 256, 0, current_stream()>>>(
          reinterpret_cast<T*>(c.data_ptr()), reinterpret_cast<const T*>(a.data_ptr()),
          reinterpret_cast<const T*>(b.data_ptr()), g, total, alpha, beta, beta_zero);
    } else {
      EMBER_ERROR("matmul (CUDA): integer kernel got ", dtype_name(c.dtype()));
    }
  });
  EMBER_CUDA_CHECK(cudaGetLastError());
}

void gemm_kernel(const Tensor& c, const Tensor& a, const Tensor& b, Scalar beta, Scalar alpha) {
  if (is_floating(c.dtype())) return gemm_cublas(c, a, b, beta, alpha);
  gemm_integer(c, a, b, beta, alpha);
}

}  // namespace

void register_blas_kernels() { gemm_stub.fns[int(DeviceType::CUDA)] = &gemm_kernel; }

}  // namespace ember::cuda
