// The CUDA kernels of the LAPACK stubs (kernels/stubs/lapack.h, Note [Batched LAPACK
// stubs]) behind ember.linalg: cuSOLVER and cuBLAS on the current stream, the whole batch
// per call (Note [CUDA LAPACK]). Factorizations write their per-matrix `info` into the
// info tensor on the device; nothing here waits for the GPU (the front-end reads `info`
// once). A small kernel turns getrf's output into determinants (lu_det_stub).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/backends/cuda/cuda_check.h"
#include "ember/backends/cuda/loops.cuh"
#include "ember/backends/cuda/reduce.cuh"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/registration.h"
#include "ember/kernels/stubs/lapack.h"
#include "ember/ops/ops.h"
#include "ember/ops/view.h"

#define EMBER_CUSOLVER_CHECK(expr)                                                              \
  do {                                                                                          \
    cusolverStatus_t st_ = (expr);                                                              \
    EMBER_CHECK(st_ == CUSOLVER_STATUS_SUCCESS, "cuSOLVER error ", int(st_), " (", #expr, ")"); \
  } while (0)

namespace ember::cuda {
namespace {

// Note [CUDA LAPACK]
// Handles: one cusolverDn handle (with its cusolverDnParams_t) and one cuBLAS handle per
// thread and device, created on first use and never destroyed, each bound to the
// caller's current stream before every use (as Note [cuBLAS handles] in blas.cu).
// Workspaces: device bytes from ember's caching allocator (a UInt8 tensor, freed back to
// the cache on the stream when the kernel returns), host workspaces as std::vector;
// every workspace is queried once per batch and reused by each matrix.
// Which routine: batches of small matrices run as one batched call (the cuBLAS
// getrf/getrs/trsm batched routines for n < kBatchedMax, cuSOLVER's potrfBatched for n
// <= kPotrfBatchedMax, the Jacobi syevjBatched / gesvdjBatched for sizes <= 32, their
// limit); single or large matrices loop over the batch with the single-matrix routine
// (cusolverDn getrf/getrs, cublas trsm, Xpotrf, Xsyevd, gesvdj, Xgeqrf, orgqr), each
// writing its own info. getrf/getrs use the legacy 32-bit cuSOLVER entry points because
// they take LAPACK's int32 pivots directly (the 64-bit Xgetrf wants int64 pivots; sizes
// are < INT_MAX by check_input). The SVD is the Jacobi gesvdj (any m, n; singular values
// descending; info = min(m, n) + 1 when it does not converge), not a divide-and-conquer
// gesdd as on the CPU: the factors agree up to the signs of singular-vector pairs.
constexpr int64_t kBatchedMax = 512;
constexpr int64_t kPotrfBatchedMax = 256;
constexpr int64_t kJacobiBatchedMax = 32;
constexpr int64_t kMaxBatch = int64_t(1) << 30;  // the batched routines take an int count

constexpr int kMaxDevices = 64;

int checked_device() {
  const int dev = current_device();
  EMBER_CHECK(dev >= 0 && dev < kMaxDevices, "CUDA: invalid device index ", dev);
  return dev;
}

struct SolverHandle {
  cusolverDnHandle_t h = nullptr;
  cusolverDnParams_t params = nullptr;
};

SolverHandle& solver() {
  thread_local std::array<SolverHandle, kMaxDevices> handles{};
  const int dev = checked_device();
  SolverHandle& s = handles[size_t(dev)];
  if (!s.h) {
    EMBER_CUSOLVER_CHECK(cusolverDnCreate(&s.h));
    EMBER_CUSOLVER_CHECK(cusolverDnCreateParams(&s.params));
  }
  EMBER_CUSOLVER_CHECK(cusolverDnSetStream(s.h, current_stream(dev)));
  return s;
}

cublasHandle_t blas() {
  thread_local std::array<cublasHandle_t, kMaxDevices> handles{};
  const int dev = checked_device();
  cublasHandle_t& h = handles[size_t(dev)];
  if (!h) {
    EMBER_CUBLAS_CHECK(cublasCreate(&h));
    EMBER_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
  }
  EMBER_CUBLAS_CHECK(cublasSetStream(h, current_stream(dev)));
  return h;
}

template <typename T>
T* ptr(const Tensor& t) {
  return reinterpret_cast<T*>(t.data_ptr());
}

template <typename F>
void dispatch_real(DType dt, F f) {
  if (dt == DType::Float64)
    f(double{});
  else
    f(float{});
}

template <typename T>
constexpr cudaDataType cuda_type() {
  return sizeof(T) == 8 ? CUDA_R_64F : CUDA_R_32F;
}

/// Device bytes from the caching allocator (at least 1).
Tensor device_bytes(size_t bytes, Device d) {
  return empty(Shape{int64_t(std::max<size_t>(bytes, 1))}, DType::UInt8, d);
}

cublasFillMode_t fill(bool upper) {
  return upper ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
}

// ptrs[i] = base + i * stride: the pointer arrays of the batched routines, built on the
// device (no host array, no copy).
template <typename T>
__global__ void pointer_array_kernel(T** ptrs, T* base, int64_t stride, int64_t count) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    ptrs[i] = base + i * stride;
}

/// A device array of `count` pointers base + i * stride (kept alive by the returned tensor).
template <typename T>
Tensor pointer_array(T* base, int64_t stride, int64_t count, Device d) {
  Tensor t = device_bytes(size_t(count) * sizeof(T*), d);
  pointer_array_kernel<T><<<grid_for(count), kThreads, 0, current_stream()>>>(
      reinterpret_cast<T**>(t.data_ptr()), base, stride, count);
  EMBER_CUDA_CHECK(cudaGetLastError());
  return t;
}

// ---- the typed routine tables ---------------------------------------------------------

template <typename T>
struct Lapack;

template <>
struct Lapack<float> {
  static constexpr auto getrf_buffer = cusolverDnSgetrf_bufferSize;
  static constexpr auto getrf = cusolverDnSgetrf;
  static constexpr auto getrs = cusolverDnSgetrs;
  static constexpr auto getrf_batched = cublasSgetrfBatched;
  static constexpr auto getrs_batched = cublasSgetrsBatched;
  static constexpr auto trsm = cublasStrsm;
  static constexpr auto trsm_batched = cublasStrsmBatched;
  static constexpr auto potrf_batched = cusolverDnSpotrfBatched;
  static constexpr auto gesvdj_buffer = cusolverDnSgesvdj_bufferSize;
  static constexpr auto gesvdj = cusolverDnSgesvdj;
  static constexpr auto gesvdj_batched_buffer = cusolverDnSgesvdjBatched_bufferSize;
  static constexpr auto gesvdj_batched = cusolverDnSgesvdjBatched;
  static constexpr auto syevj_batched_buffer = cusolverDnSsyevjBatched_bufferSize;
  static constexpr auto syevj_batched = cusolverDnSsyevjBatched;
  static constexpr auto orgqr_buffer = cusolverDnSorgqr_bufferSize;
  static constexpr auto orgqr = cusolverDnSorgqr;
};

template <>
struct Lapack<double> {
  static constexpr auto getrf_buffer = cusolverDnDgetrf_bufferSize;
  static constexpr auto getrf = cusolverDnDgetrf;
  static constexpr auto getrs = cusolverDnDgetrs;
  static constexpr auto getrf_batched = cublasDgetrfBatched;
  static constexpr auto getrs_batched = cublasDgetrsBatched;
  static constexpr auto trsm = cublasDtrsm;
  static constexpr auto trsm_batched = cublasDtrsmBatched;
  static constexpr auto potrf_batched = cusolverDnDpotrfBatched;
  static constexpr auto gesvdj_buffer = cusolverDnDgesvdj_bufferSize;
  static constexpr auto gesvdj = cusolverDnDgesvdj;
  static constexpr auto gesvdj_batched_buffer = cusolverDnDgesvdjBatched_bufferSize;
  static constexpr auto gesvdj_batched = cusolverDnDgesvdjBatched;
  static constexpr auto syevj_batched_buffer = cusolverDnDsyevjBatched_bufferSize;
  static constexpr auto syevj_batched = cusolverDnDsyevjBatched;
  static constexpr auto orgqr_buffer = cusolverDnDorgqr_bufferSize;
  static constexpr auto orgqr = cusolverDnDorgqr;
};

// ---- LU --------------------------------------------------------------------------------

void getrf_kernel(const Tensor& a, const Tensor& ipiv, const Tensor& info, int64_t batch,
                  int64_t n) {
  const Device d = a.device();
  dispatch_real(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using L = Lapack<T>;
    T* pa = ptr<T>(a);
    int* pp = ptr<int>(ipiv);
    int* pi = ptr<int>(info);
    const int in = int(n);
    if (batch > 1 && n < kBatchedMax) {
      cublasHandle_t h = blas();
      for (int64_t b0 = 0; b0 < batch; b0 += kMaxBatch) {
        const int64_t nb = std::min(kMaxBatch, batch - b0);
        Tensor arr = pointer_array<T>(pa + b0 * n * n, n * n, nb, d);
        EMBER_CUBLAS_CHECK(L::getrf_batched(h, in, reinterpret_cast<T**>(arr.data_ptr()), in,
                                            pp + b0 * n, pi + b0, int(nb)));
      }
      return;
    }
    SolverHandle& s = solver();
    int lwork = 0;
    EMBER_CUSOLVER_CHECK(L::getrf_buffer(s.h, in, in, pa, in, &lwork));
    Tensor work = device_bytes(size_t(std::max(lwork, 1)) * sizeof(T), d);
    for (int64_t i = 0; i < batch; ++i)
      EMBER_CUSOLVER_CHECK(
          L::getrf(s.h, in, in, pa + i * n * n, in, ptr<T>(work), pp + i * n, pi + i));
  });
}

void getrs_kernel(const Tensor& lu, const Tensor& ipiv, const Tensor& b, int64_t batch, int64_t n,
                  int64_t nrhs, bool trans) {
  const Device d = lu.device();
  const cublasOperation_t op = trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  dispatch_real(lu.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using L = Lapack<T>;
    T* pa = ptr<T>(lu);
    T* pb = ptr<T>(b);
    const int* pp = ptr<int>(ipiv);
    const int in = int(n), ik = int(nrhs);
    if (batch > 1 && n < kBatchedMax) {
      cublasHandle_t h = blas();
      for (int64_t b0 = 0; b0 < batch; b0 += kMaxBatch) {
        const int64_t nb = std::min(kMaxBatch, batch - b0);
        Tensor aa = pointer_array<T>(pa + b0 * n * n, n * n, nb, d);
        Tensor ba = pointer_array<T>(pb + b0 * n * nrhs, n * nrhs, nb, d);
        int host_info = 0;  // argument errors only
        EMBER_CUBLAS_CHECK(L::getrs_batched(
            h, op, in, ik, reinterpret_cast<const T* const*>(aa.data_ptr()), in, pp + b0 * n,
            reinterpret_cast<T* const*>(ba.data_ptr()), in, &host_info, int(nb)));
        EMBER_CHECK(host_info == 0, "linalg.lu_solve (CUDA): getrsBatched argument ", -host_info,
                    " is invalid");
      }
      return;
    }
    SolverHandle& s = solver();
    Tensor scratch = empty(Shape{1}, DType::Int32, d);  // argument errors only
    for (int64_t i = 0; i < batch; ++i)
      EMBER_CUSOLVER_CHECK(L::getrs(s.h, op, in, ik, pa + i * n * n, in, pp + i * n,
                                    pb + i * n * nrhs, in, ptr<int>(scratch)));
  });
}

// ---- triangular solve -------------------------------------------------------------------

void trtrs_kernel(const Tensor& a, const Tensor& b, int64_t batch, int64_t n, int64_t nrhs,
                  bool upper, bool unit) {
  const Device d = a.device();
  const cublasDiagType_t diag = unit ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT;
  dispatch_real(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using L = Lapack<T>;
    T* pa = ptr<T>(a);
    T* pb = ptr<T>(b);
    const int in = int(n), ik = int(nrhs);
    const T one = T(1);
    cublasHandle_t h = blas();
    if (batch > 1 && n < kBatchedMax) {
      for (int64_t b0 = 0; b0 < batch; b0 += kMaxBatch) {
        const int64_t nb = std::min(kMaxBatch, batch - b0);
        Tensor aa = pointer_array<T>(pa + b0 * n * n, n * n, nb, d);
        Tensor ba = pointer_array<T>(pb + b0 * n * nrhs, n * nrhs, nb, d);
        EMBER_CUBLAS_CHECK(
            L::trsm_batched(h, CUBLAS_SIDE_LEFT, fill(upper), CUBLAS_OP_N, diag, in, ik, &one,
                            reinterpret_cast<const T* const*>(aa.data_ptr()), in,
                            reinterpret_cast<T* const*>(ba.data_ptr()), in, int(nb)));
      }
      return;
    }
    for (int64_t i = 0; i < batch; ++i)
      EMBER_CUBLAS_CHECK(L::trsm(h, CUBLAS_SIDE_LEFT, fill(upper), CUBLAS_OP_N, diag, in, ik, &one,
                                 pa + i * n * n, in, pb + i * n * nrhs, in));
  });
}

// ---- Cholesky ---------------------------------------------------------------------------

void potrf_kernel(const Tensor& a, const Tensor& info, int64_t batch, int64_t n) {
  const Device d = a.device();
  dispatch_real(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using L = Lapack<T>;
    T* pa = ptr<T>(a);
    int* pi = ptr<int>(info);
    SolverHandle& s = solver();
    if (batch > 1 && n <= kPotrfBatchedMax) {
      for (int64_t b0 = 0; b0 < batch; b0 += kMaxBatch) {
        const int64_t nb = std::min(kMaxBatch, batch - b0);
        Tensor arr = pointer_array<T>(pa + b0 * n * n, n * n, nb, d);
        EMBER_CUSOLVER_CHECK(L::potrf_batched(s.h, CUBLAS_FILL_MODE_LOWER, int(n),
                                              reinterpret_cast<T**>(arr.data_ptr()), int(n),
                                              pi + b0, int(nb)));
      }
      return;
    }
    constexpr cudaDataType dt = cuda_type<T>();
    size_t dev_bytes = 0, host_bytes = 0;
    EMBER_CUSOLVER_CHECK(cusolverDnXpotrf_bufferSize(s.h, s.params, CUBLAS_FILL_MODE_LOWER, n, dt,
                                                     pa, n, dt, &dev_bytes, &host_bytes));
    Tensor work = device_bytes(dev_bytes, d);
    std::vector<char> host_work(std::max<size_t>(host_bytes, 1));
    for (int64_t i = 0; i < batch; ++i)
      EMBER_CUSOLVER_CHECK(cusolverDnXpotrf(s.h, s.params, CUBLAS_FILL_MODE_LOWER, n, dt,
                                            pa + i * n * n, n, dt, work.data_ptr(), dev_bytes,
                                            host_work.data(), host_bytes, pi + i));
  });
}

// ---- SVD ---------------------------------------------------------------------------------

// The Jacobi routines' settings (PyTorch's): convergence to the dtype's epsilon, at most
// kJacobiSweeps sweeps.
constexpr int kJacobiSweeps = 400;

template <typename T>
struct GesvdjParams {
  gesvdjInfo_t p = nullptr;
  GesvdjParams() {
    EMBER_CUSOLVER_CHECK(cusolverDnCreateGesvdjInfo(&p));
    EMBER_CUSOLVER_CHECK(
        cusolverDnXgesvdjSetTolerance(p, double(std::numeric_limits<T>::epsilon())));
    EMBER_CUSOLVER_CHECK(cusolverDnXgesvdjSetMaxSweeps(p, kJacobiSweeps));
  }
  ~GesvdjParams() { cusolverDnDestroyGesvdjInfo(p); }
  GesvdjParams(const GesvdjParams&) = delete;
  GesvdjParams& operator=(const GesvdjParams&) = delete;
};

// Matrix i of a contiguous (batch, r, c) tensor, as an r x c tensor (a view).
Tensor mat(const Tensor& t3, int64_t i) { return select(t3, 0, i); }

// The SVD of matrix i by cuSOLVER's QR-iteration gesvd (Xgesvd), for a matrix on which the
// Jacobi gesvdj did not converge; from `keep`, the batch's input (batch, n, m). gesvd
// needs rows >= cols, so a wide matrix is factored as A^T = U' S V'^T, i.e. U = V',
// V^T = U'^T. Writes s, u, vt and info of matrix i (all as gesdd_stub lays them out).
template <typename T>
void gesvd_one(const Tensor& keep, const Tensor& s3, const Tensor& u3, const Tensor& vt3,
               const Tensor& info, int64_t i, int64_t m, int64_t n, char jobz) {
  const Device d = keep.device();
  const DType dtype = keep.dtype();
  const bool tall = m >= n, vectors = jobz != 'N';
  const int64_t gm = tall ? m : n, gn = tall ? n : m, k = gn;
  const int64_t cu = jobz == 'A' ? gm : k;  // columns of gesvd's U, rows of its V^T
  const int64_t rv = jobz == 'A' ? gn : k;
  Tensor g = empty(Shape{gn, gm}, dtype, d);  // column-major gm x gn
  copy_(g, tall ? mat(keep, i) : transpose(mat(keep, i), 0, 1));
  // Tall: U and V^T straight into u and vt; wide: into buffers transposed below.
  Tensor tu = vectors && !tall ? empty(Shape{cu, gm}, dtype, d) : Tensor();
  Tensor tv = vectors && !tall ? empty(Shape{gn, rv}, dtype, d) : Tensor();
  T* pu = !vectors ? nullptr : tall ? ptr<T>(mat(u3, i)) : ptr<T>(tu);
  T* pv = !vectors ? nullptr : tall ? ptr<T>(mat(vt3, i)) : ptr<T>(tv);
  T* ps = ptr<T>(mat(s3, i));
  int* pi = ptr<int>(info) + i;
  SolverHandle& s = solver();
  constexpr cudaDataType dt = cuda_type<T>();
  const signed char job = static_cast<signed char>(jobz);
  const int64_t ldv = std::max<int64_t>(rv, 1);
  size_t dev_bytes = 0, host_bytes = 0;
  EMBER_CUSOLVER_CHECK(cusolverDnXgesvd_bufferSize(s.h, s.params, job, job, gm, gn, dt,
                                                   g.data_ptr(), gm, dt, ps, dt, pu, gm, dt, pv,
                                                   ldv, dt, &dev_bytes, &host_bytes));
  Tensor work = device_bytes(dev_bytes, d);
  std::vector<char> host_work(std::max<size_t>(host_bytes, 1));
  EMBER_CUSOLVER_CHECK(cusolverDnXgesvd(s.h, s.params, job, job, gm, gn, dt, g.data_ptr(), gm, dt,
                                        ps, dt, pu, gm, dt, pv, ldv, dt, work.data_ptr(), dev_bytes,
                                        host_work.data(), host_bytes, pi));
  if (vectors && !tall) {
    // tu: U' (n x cu, tensor [j][c] = U'(c, j)); tv: V'^T (m x m, tensor [r][j] = V'^T(j, r)).
    // u_i[j][r] = U(r, j) = V'(r, j) = V'^T(j, r) = tv[r][j]; vt_i[c][j] = V^T(j, c) =
    // U'(c, j) = tu[j][c].
    copy_(mat(u3, i), transpose(tv, 0, 1));
    copy_(mat(vt3, i), transpose(tu, 0, 1));
  }
}

void gesdd_kernel(const Tensor& a, const Tensor& s_out, const Tensor& u, const Tensor& vt,
                  const Tensor& info, int64_t batch, int64_t m, int64_t n, char jobz) {
  const Device d = a.device();
  const int64_t k = std::min(m, n);
  const bool vectors = jobz != 'N';
  const int64_t ucols = jobz == 'A' ? m : k, vrows = jobz == 'A' ? n : k;
  const cusolverEigMode_t mode = vectors ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
  const int im = int(m), in = int(n);
  // The input, kept for the gesvd fallback (gesvdj destroys it): one O(m n) copy.
  Tensor keep = empty(Shape{batch, n, m}, a.dtype(), d);
  copy_(keep, reshape(a, Shape{batch, n, m}));
  dispatch_real(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using L = Lapack<T>;
    T* pa = ptr<T>(a);
    T* ps = ptr<T>(s_out);
    int* pi = ptr<int>(info);
    SolverHandle& s = solver();
    GesvdjParams<T> params;
    if (batch > 1 && m <= kJacobiBatchedMax && n <= kJacobiBatchedMax) {
      // gesvdjBatched always forms the full U (m x m) and V (n x n) of each matrix.
      Tensor ufull = empty(Shape{batch, m, m}, a.dtype(), d);  // matrix b: U column-major
      Tensor vfull = empty(Shape{batch, n, n}, a.dtype(), d);  // matrix b: V column-major
      int lwork = 0;
      const int64_t chunk0 = std::min(kMaxBatch, batch);
      EMBER_CUSOLVER_CHECK(L::gesvdj_batched_buffer(s.h, mode, im, in, pa, im, ps, ptr<T>(ufull),
                                                    im, ptr<T>(vfull), in, &lwork, params.p,
                                                    int(chunk0)));
      Tensor work = device_bytes(size_t(std::max(lwork, 1)) * sizeof(T), d);
      for (int64_t b0 = 0; b0 < batch; b0 += kMaxBatch) {
        const int64_t nb = std::min(kMaxBatch, batch - b0);
        EMBER_CUSOLVER_CHECK(L::gesvdj_batched(
            s.h, mode, im, in, pa + b0 * m * n, im, ps + b0 * k, ptr<T>(ufull) + b0 * m * m, im,
            ptr<T>(vfull) + b0 * n * n, in, ptr<T>(work), lwork, pi + b0, params.p, int(nb)));
      }
      if (vectors) {
        // u (batch, ucols, m): the first ucols columns of U; vt (batch, n, vrows) holds
        // V^T column-major, i.e. vt[b, c, r] = V[c, r] = vfull[b, r, c].
        // (u and vt have the front-end's batch shape: viewed as (batch, ., .) here.)
        copy_(reshape(u, Shape{batch, ucols, m}), narrow(ufull, 1, 0, ucols));
        copy_(reshape(vt, Shape{batch, n, vrows}), transpose(narrow(vfull, 1, 0, vrows), 1, 2));
      }
    } else {
      // One matrix at a time: U straight into u (m x ucols, ld m, econ for 'S'); V (n x
      // vrows, ld n) into a buffer that one strided copy transposes into vt at the end.
      const int econ = jobz == 'S' ? 1 : 0;
      Tensor vbuf = vectors ? empty(Shape{batch, vrows, n}, a.dtype(), d) : Tensor();
      T* pu = vectors ? ptr<T>(u) : nullptr;
      T* pv = vectors ? ptr<T>(vbuf) : nullptr;
      int lwork = 0;
      EMBER_CUSOLVER_CHECK(
          L::gesvdj_buffer(s.h, mode, econ, im, in, pa, im, ps, pu, im, pv, in, &lwork, params.p));
      Tensor work = device_bytes(size_t(std::max(lwork, 1)) * sizeof(T), d);
      for (int64_t i = 0; i < batch; ++i)
        EMBER_CUSOLVER_CHECK(L::gesvdj(s.h, mode, econ, im, in, pa + i * m * n, im, ps + i * k,
                                       pu ? pu + i * m * ucols : nullptr, im,
                                       pv ? pv + i * vrows * n : nullptr, in, ptr<T>(work), lwork,
                                       pi + i, params.p));
      if (vectors) copy_(reshape(vt, Shape{batch, n, vrows}), transpose(vbuf, 1, 2));
    }
    // Jacobi may stop short of convergence (info = min(m, n) + 1) on hard inputs where
    // LAPACK's gesdd succeeds; as PyTorch, those matrices are redone with gesvd. This reads
    // info back (the one sync, which the front-end's read of info would make anyway).
    Tensor hinfo = to_device(info, Device());
    const int32_t* hi = reinterpret_cast<const int32_t*>(hinfo.data_ptr());
    Tensor s3 = reshape(s_out, Shape{batch, k});
    Tensor u3 = vectors ? reshape(u, Shape{batch, ucols, m}) : Tensor();
    Tensor vt3 = vectors ? reshape(vt, Shape{batch, n, vrows}) : Tensor();
    for (int64_t i = 0; i < batch; ++i)
      if (hi[i] > 0) gesvd_one<T>(keep, s3, u3, vt3, info, i, m, n, jobz);
  });
}

// ---- symmetric eigendecomposition -----------------------------------------------------------

struct SyevjParams {
  syevjInfo_t p = nullptr;
  SyevjParams() { EMBER_CUSOLVER_CHECK(cusolverDnCreateSyevjInfo(&p)); }
  ~SyevjParams() { cusolverDnDestroySyevjInfo(p); }
  SyevjParams(const SyevjParams&) = delete;
  SyevjParams& operator=(const SyevjParams&) = delete;
};

void syevd_kernel(const Tensor& a, const Tensor& w, const Tensor& info, int64_t batch, int64_t n,
                  bool vectors, char uplo) {
  const Device d = a.device();
  const cusolverEigMode_t mode = vectors ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
  const cublasFillMode_t ul = fill(uplo == 'U');
  dispatch_real(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using L = Lapack<T>;
    T* pa = ptr<T>(a);
    T* pw = ptr<T>(w);
    int* pi = ptr<int>(info);
    SolverHandle& s = solver();
    if (batch > 1 && n <= kJacobiBatchedMax) {
      SyevjParams params;  // eigenvalues sorted ascending (the default)
      EMBER_CUSOLVER_CHECK(
          cusolverDnXsyevjSetTolerance(params.p, double(std::numeric_limits<T>::epsilon())));
      EMBER_CUSOLVER_CHECK(cusolverDnXsyevjSetMaxSweeps(params.p, kJacobiSweeps));
      int lwork = 0;
      EMBER_CUSOLVER_CHECK(L::syevj_batched_buffer(s.h, mode, ul, int(n), pa, int(n), pw, &lwork,
                                                   params.p, int(std::min(kMaxBatch, batch))));
      Tensor work = device_bytes(size_t(std::max(lwork, 1)) * sizeof(T), d);
      for (int64_t b0 = 0; b0 < batch; b0 += kMaxBatch) {
        const int64_t nb = std::min(kMaxBatch, batch - b0);
        EMBER_CUSOLVER_CHECK(L::syevj_batched(s.h, mode, ul, int(n), pa + b0 * n * n, int(n),
                                              pw + b0 * n, ptr<T>(work), lwork, pi + b0, params.p,
                                              int(nb)));
      }
      return;
    }
    constexpr cudaDataType dt = cuda_type<T>();
    size_t dev_bytes = 0, host_bytes = 0;
    EMBER_CUSOLVER_CHECK(cusolverDnXsyevd_bufferSize(s.h, s.params, mode, ul, n, dt, pa, n, dt, pw,
                                                     dt, &dev_bytes, &host_bytes));
    Tensor work = device_bytes(dev_bytes, d);
    std::vector<char> host_work(std::max<size_t>(host_bytes, 1));
    for (int64_t i = 0; i < batch; ++i)
      EMBER_CUSOLVER_CHECK(cusolverDnXsyevd(s.h, s.params, mode, ul, n, dt, pa + i * n * n, n, dt,
                                            pw + i * n, dt, work.data_ptr(), dev_bytes,
                                            host_work.data(), host_bytes, pi + i));
  });
}

// ---- QR ------------------------------------------------------------------------------------

void geqrf_kernel(const Tensor& a, const Tensor& tau, int64_t batch, int64_t m, int64_t n,
                  int64_t a_stride, int64_t tau_stride) {
  const Device d = a.device();
  dispatch_real(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* pa = ptr<T>(a);
    T* pt = ptr<T>(tau);
    SolverHandle& s = solver();
    constexpr cudaDataType dt = cuda_type<T>();
    size_t dev_bytes = 0, host_bytes = 0;
    EMBER_CUSOLVER_CHECK(cusolverDnXgeqrf_bufferSize(s.h, s.params, m, n, dt, pa, m, dt, pt, dt,
                                                     &dev_bytes, &host_bytes));
    Tensor work = device_bytes(dev_bytes, d);
    std::vector<char> host_work(std::max<size_t>(host_bytes, 1));
    Tensor scratch = empty(Shape{1}, DType::Int32, d);  // argument errors only
    for (int64_t i = 0; i < batch; ++i)
      EMBER_CUSOLVER_CHECK(cusolverDnXgeqrf(s.h, s.params, m, n, dt, pa + i * a_stride, m, dt,
                                            pt + i * tau_stride, dt, work.data_ptr(), dev_bytes,
                                            host_work.data(), host_bytes, ptr<int>(scratch)));
  });
}

void orgqr_kernel(const Tensor& a, const Tensor& tau, int64_t batch, int64_t m, int64_t n,
                  int64_t k, int64_t a_stride, int64_t tau_stride) {
  const Device d = a.device();
  dispatch_real(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using L = Lapack<T>;
    T* pa = ptr<T>(a);
    const T* pt = ptr<T>(tau);
    SolverHandle& s = solver();
    int lwork = 0;
    EMBER_CUSOLVER_CHECK(L::orgqr_buffer(s.h, int(m), int(n), int(k), pa, int(m), pt, &lwork));
    Tensor work = device_bytes(size_t(std::max(lwork, 1)) * sizeof(T), d);
    Tensor scratch = empty(Shape{1}, DType::Int32, d);  // argument errors only
    for (int64_t i = 0; i < batch; ++i)
      EMBER_CUSOLVER_CHECK(L::orgqr(s.h, int(m), int(n), int(k), pa + i * a_stride, int(m),
                                    pt + i * tau_stride, ptr<T>(work), lwork, ptr<int>(scratch)));
  });
}

// ---- determinants from the LU ------------------------------------------------------------------

// log|U_jj| summed in double and the parity of the sign flips (row swaps and negative
// pivots) of one matrix.
struct DetAcc {
  double log_abs;
  int flips;
};
struct DetOp {
  __device__ DetAcc init() const { return {0.0, 0}; }
  __device__ DetAcc combine(DetAcc a, DetAcc b) const {
    return {a.log_abs + b.log_abs, a.flips + b.flips};
  }
};

constexpr int kDetThreads = 128;

// One block per matrix: the threads stride over the diagonal (as the CPU's loop, in
// double), then a block reduction; thread 0 writes sign, log|det| and det.
template <typename T>
__global__ void __launch_bounds__(kDetThreads)
    lu_det_kernel_impl(const T* lu, const int* ipiv, const int* info, T* sign, T* logabs, T* det,
                       int64_t batch, int64_t n) {
  __shared__ DetAcc smem[32];
  const DetOp op;
  for (int64_t i = blockIdx.x; i < batch; i += gridDim.x) {
    const T* m = lu + i * n * n;
    const int* p = ipiv + i * n;
    DetAcc acc = op.init();
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const double dj = double(m[j * n + j]);
      acc.flips += (p[j] != j + 1) + (dj < 0);
      acc.log_abs += log(fabs(dj));
    }
    acc = block_reduce(acc, op, smem);
    if (threadIdx.x == 0) {
      double s, l;
      if (info[i] > 0) {
        s = 0;
        l = -INFINITY;
      } else {
        s = (acc.flips & 1) ? -1.0 : 1.0;
        l = acc.log_abs;
      }
      sign[i] = T(s);
      logabs[i] = T(l);
      det[i] = T(s == 0 ? 0.0 : s * exp(l));
    }
  }
}

void lu_det_kernel(const Tensor& lu, const Tensor& ipiv, const Tensor& info, const Tensor& sign,
                   const Tensor& logabs, const Tensor& det, int64_t batch, int64_t n) {
  if (batch <= 0) return;
  dispatch_real(lu.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const unsigned blocks = unsigned(std::min<int64_t>(batch, int64_t(1) << 16));
    lu_det_kernel_impl<T><<<blocks, kDetThreads, 0, current_stream()>>>(
        ptr<T>(lu), ptr<int>(ipiv), ptr<int>(info), ptr<T>(sign), ptr<T>(logabs), ptr<T>(det),
        batch, n);
    EMBER_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, linalg) {
  constexpr int cuda = int(DeviceType::CUDA);
  getrf_stub.fns[cuda] = &getrf_kernel;
  getrs_stub.fns[cuda] = &getrs_kernel;
  trtrs_stub.fns[cuda] = &trtrs_kernel;
  potrf_stub.fns[cuda] = &potrf_kernel;
  gesdd_stub.fns[cuda] = &gesdd_kernel;
  syevd_stub.fns[cuda] = &syevd_kernel;
  geqrf_stub.fns[cuda] = &geqrf_kernel;
  orgqr_stub.fns[cuda] = &orgqr_kernel;
  lu_det_stub.fns[cuda] = &lu_det_kernel;
}

}  // namespace ember::cuda
