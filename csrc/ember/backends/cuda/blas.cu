// The CUDA GEMM (gemm_stub of kernels/stubs/linalg.h): cuBLAS for the floating
// dtypes (cublasGemmEx / cublasGemmStridedBatchedEx), a plain kernel for the
// integer dtypes, which cuBLAS does not multiply; and gemm_bias_stub, a Linear's
// product with its bias added in cuBLASLt's epilogue (Note [cuBLASLt bias epilogue]).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <climits>
#include <cstdint>
#include <vector>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/backends/cuda/cuda_check.h"
#include "ember/core/flags.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/registration.h"
#include "ember/kernels/stubs/linalg.h"

namespace ember::cuda {
namespace {

// Note [cuBLAS handles]
// One handle per thread and device, created on first use and never destroyed
// (destroying it at thread exit could run after the CUDA context is gone). Each
// call binds it to the caller's current stream first, so the GEMM is ordered
// with the other kernels of that stream. float32 runs CUBLAS_COMPUTE_32F (IEEE
// float32) unless ember.backends.cuda.matmul.allow_tf32 / set_float32_matmul_precision
// allow TF32 (CUBLAS_COMPUTE_32F_FAST_TF32); 16-bit products add
// CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION to the math mode when
// allow_{fp16,bf16}_reduced_precision_reduction is off (core/flags.h).
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
  const BackendFlags& flags = backend_flags();
  bool reduced_ok = true;  // 16-bit: may cuBLAS reduce in 16-bit precision
  switch (et) {
    case DType::Float32:
      dt = CUDA_R_32F;
      compute = flags.matmul_allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
      break;
    case DType::Float64:
      dt = CUDA_R_64F;
      compute = CUBLAS_COMPUTE_64F;
      break;
    case DType::Float16:
      dt = CUDA_R_16F;
      compute = CUBLAS_COMPUTE_32F;
      reduced_ok = flags.allow_fp16_reduced_precision_reduction.load(std::memory_order_relaxed);
      break;
    case DType::BFloat16:
      dt = CUDA_R_16BF;
      compute = CUBLAS_COMPUTE_32F;
      reduced_ok = flags.allow_bf16_reduced_precision_reduction.load(std::memory_order_relaxed);
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
  EMBER_CUBLAS_CHECK(cublasSetMathMode(
      h, reduced_ok ? CUBLAS_DEFAULT_MATH
                    : cublasMath_t(CUBLAS_DEFAULT_MATH |
                                   CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));

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

// Note [cuBLASLt bias epilogue]
// addmm(bias, x, w.t()) -- every Linear -- would copy the broadcast bias into the output
// and run the GEMM with beta = 1: an extra kernel writing the whole output. cuBLASLt adds
// a bias vector in the GEMM's epilogue instead (CUBLASLT_EPILOGUE_BIAS, as PyTorch's
// addmm does). In cuBLAS's column-major view the product is c^T = b^T a^T, so the bias
// runs along the rows of c^T: one value per column of c, which is what a Linear's bias
// is. Any status other than success (an unsupported dtype, layout or alignment) returns
// false and the caller takes the copy + gemm path: this is an optimization, never an
// error. The workspace (kLtWorkspace) comes from the caching allocator per call.
constexpr size_t kLtWorkspace = size_t(4) << 20;

cublasLtHandle_t lt_handle() {
  constexpr int kMaxDevices = 64;
  thread_local std::array<cublasLtHandle_t, kMaxDevices> handles{};
  const int dev = current_device();
  if (dev < 0 || dev >= kMaxDevices) return nullptr;
  cublasLtHandle_t& h = handles[size_t(dev)];
  if (!h && cublasLtCreate(&h) != CUBLAS_STATUS_SUCCESS) h = nullptr;
  return h;
}

// Owns the cuBLASLt descriptors of one call.
struct LtDescs {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtDescs() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

bool gemm_bias_kernel(const Tensor& c, const Tensor& a, const Tensor& b, const Tensor& bias,
                      Scalar alpha_s) {
  if (c.dim() != 2 || bias.dim() != 1 || bias.strides()[0] != 1 ||
      reinterpret_cast<uintptr_t>(bias.data_ptr()) % 16 != 0)
    return false;
  const int64_t m = c.sizes()[0], n = c.sizes()[1], k = a.sizes()[1];
  if (m == 0 || n == 0 || k == 0 || bias.sizes()[0] != n) return false;
  const MatrixLayout la = matrix_layout(m, k, a.strides()[0], a.strides()[1]);
  const MatrixLayout lb = matrix_layout(k, n, b.strides()[0], b.strides()[1]);
  const MatrixLayout lc = matrix_layout(m, n, c.strides()[0], c.strides()[1]);
  if (!la.ok || !lb.ok || !lc.ok || lc.trans) return false;
  if (!fits_int(m) || !fits_int(n) || !fits_int(k) || !fits_int(la.ld) || !fits_int(lb.ld) ||
      !fits_int(lc.ld))
    return false;
  cudaDataType dt;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType scale_type = CUDA_R_32F;
  const BackendFlags& flags = backend_flags();
  switch (c.dtype()) {
    case DType::Float32:
      dt = CUDA_R_32F;
      if (flags.matmul_allow_tf32()) compute = CUBLAS_COMPUTE_32F_FAST_TF32;
      break;
    case DType::Float16:
      if (!flags.allow_fp16_reduced_precision_reduction.load(std::memory_order_relaxed))
        return false;
      dt = CUDA_R_16F;
      break;
    case DType::BFloat16:
      if (!flags.allow_bf16_reduced_precision_reduction.load(std::memory_order_relaxed))
        return false;
      dt = CUDA_R_16BF;
      break;
    default:  // float64: the plain path
      return false;
  }
  cublasLtHandle_t h = lt_handle();
  if (!h) return false;
  LtDescs d;
  const cublasOperation_t opa = lb.trans ? CUBLAS_OP_T : CUBLAS_OP_N;  // cuBLAS's A is b
  const cublasOperation_t opb = la.trans ? CUBLAS_OP_T : CUBLAS_OP_N;  // cuBLAS's B is a
  const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
  const void* bias_ptr = bias.data_ptr();
  auto ok = [](cublasStatus_t st) { return st == CUBLAS_STATUS_SUCCESS; };
  if (!ok(cublasLtMatmulDescCreate(&d.op, compute, scale_type)) ||
      !ok(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof(opa))) ||
      !ok(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof(opb))) ||
      !ok(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                         sizeof(epilogue))) ||
      !ok(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr,
                                         sizeof(bias_ptr))))
    return false;
  // Stored shapes (rows x cols, column-major) of cuBLAS's A = b^T (n x k), B = a^T (k x m)
  // and C = c^T (n x m), before the transposes.
  const uint64_t a_rows = lb.trans ? uint64_t(k) : uint64_t(n);
  const uint64_t a_cols = lb.trans ? uint64_t(n) : uint64_t(k);
  const uint64_t b_rows = la.trans ? uint64_t(m) : uint64_t(k);
  const uint64_t b_cols = la.trans ? uint64_t(k) : uint64_t(m);
  if (!ok(cublasLtMatrixLayoutCreate(&d.a, dt, a_rows, a_cols, int64_t(lb.ld))) ||
      !ok(cublasLtMatrixLayoutCreate(&d.b, dt, b_rows, b_cols, int64_t(la.ld))) ||
      !ok(cublasLtMatrixLayoutCreate(&d.c, dt, uint64_t(n), uint64_t(m), int64_t(lc.ld))))
    return false;
  // The heuristic assumes 256-byte aligned operands unless told otherwise (views at an
  // offset are not).
  auto alignment = [](const void* p) {
    uint32_t al = 256;
    while (al > 1 && reinterpret_cast<uintptr_t>(p) % al != 0) al /= 2;
    return al;
  };
  const uint32_t al_a = alignment(b.data_ptr()), al_b = alignment(a.data_ptr()),
                 al_c = alignment(c.data_ptr());
  const size_t ws_bytes = kLtWorkspace;
  if (!ok(cublasLtMatmulPreferenceCreate(&d.pref)) ||
      !ok(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                               &ws_bytes, sizeof(ws_bytes))) ||
      !ok(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                               &al_a, sizeof(al_a))) ||
      !ok(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                               &al_b, sizeof(al_b))) ||
      !ok(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                               &al_c, sizeof(al_c))) ||
      !ok(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                               &al_c, sizeof(al_c))))
    return false;
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  if (!ok(cublasLtMatmulAlgoGetHeuristic(h, d.op, d.a, d.b, d.c, d.c, d.pref, 1, &heur, &found)) ||
      found == 0)
    return false;
  Tensor ws =
      empty(Shape{int64_t(std::max<size_t>(heur.workspaceSize, 1))}, DType::UInt8, c.device());
  const float alpha = float(alpha_s.to_double()), beta = 0.0f;
  return ok(cublasLtMatmul(h, d.op, &alpha, b.data_ptr(), d.a, a.data_ptr(), d.b, &beta,
                           c.data_ptr(), d.c, c.data_ptr(), d.c, &heur.algo, ws.data_ptr(),
                           heur.workspaceSize, current_stream()));
}

void gemm_kernel(const Tensor& c, const Tensor& a, const Tensor& b, Scalar beta, Scalar alpha) {
  if (is_floating(c.dtype())) return gemm_cublas(c, a, b, beta, alpha);
  gemm_integer(c, a, b, beta, alpha);
}

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, blas) {
  gemm_stub.fns[int(DeviceType::CUDA)] = &gemm_kernel;
  gemm_bias_stub.fns[int(DeviceType::CUDA)] = &gemm_bias_kernel;
}

}  // namespace ember::cuda
