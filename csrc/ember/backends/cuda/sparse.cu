// CUDA kernels of the sparse COO ops (kernels/stubs/sparse.h): coalesce, sparse x dense
// (spmm) and the sampled product (sddmm), with the CPU kernels' results
// (backends/cpu/sparse_kernels.cpp).
//  * coalesce: a linear key per entry (row-major over the sparse sizes), a stable
//    cub::DeviceRadixSort of (key, position) over only the bits the largest possible key
//    needs, run heads flagged and numbered by an inclusive scan; the one host read is the
//    number of runs (the output's nnz, as PyTorch's CUDA coalesce). Each output element
//    sums its run in the original order (deterministic, no atomics).
//  * spmm: entries grouped by row (row pointers by binary search over sorted rows; unsorted
//    rows are first radix-sorted by row, stably). float32/float64 go to cuSPARSE's CSR SpMM
//    (cusparseSpMM, the library's tuned kernels); the other dtypes, and every dtype under
//    EMBER_CUDA_SPMM=kernel, to a warp-per-row kernel whose lanes walk the output columns
//    and add each entry's scaled dense row in entry order (deterministic).
//  * sddmm: a warp per entry, a dot product reduced with shuffles.
#include <cuda_runtime.h>
#include <cusparse.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/backends/cuda/cuda_check.h"
#include "ember/backends/cuda/reduce.cuh"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/functors.h"
#include "ember/kernels/registration.h"
#include "ember/kernels/stubs/sparse.h"

#define EMBER_CUSPARSE_CHECK(expr)                                                               \
  do {                                                                                           \
    cusparseStatus_t st_ = (expr);                                                               \
    EMBER_CHECK(st_ == CUSPARSE_STATUS_SUCCESS, "cuSPARSE error: ", cusparseGetErrorString(st_), \
                " (", #expr, ")");                                                               \
  } while (0)

namespace ember::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxSparseDims = 32;

unsigned blocks_for(int64_t n, int threads = kThreads) {
  return unsigned(
      std::max<int64_t>(1, std::min<int64_t>((n + threads - 1) / threads, int64_t(1) << 20)));
}
Tensor scratch_bytes(Device dev, int64_t bytes) {
  return empty(Shape{std::max<int64_t>(bytes, 1)}, DType::UInt8, dev);
}
template <typename X>
X* dptr(const Tensor& t) {
  return reinterpret_cast<X*>(t.data_ptr());
}
int bit_width(uint64_t v) { return v ? 64 - __builtin_clzll(v) : 0; }

#define EMBER_GRID_STRIDE(i, n)                                             \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += int64_t(blockDim.x) * gridDim.x)

// ---- coalesce ------------------------------------------------------------------------------

struct LinStrides {
  int64_t v[kMaxSparseDims];
};

__global__ void keys_kernel(const int64_t* idx, int64_t s0, int64_t s1, int S, LinStrides ls,
                            int64_t nnz, uint64_t* keys, int64_t* pos) {
  EMBER_GRID_STRIDE(i, nnz) {
    int64_t k = 0;
    for (int d = 0; d < S; ++d) k += idx[d * s0 + i * s1] * ls.v[d];
    keys[i] = uint64_t(k);
    pos[i] = i;
  }
}

__global__ void heads_kernel(const uint64_t* keys, int64_t n, int64_t* flag) {
  EMBER_GRID_STRIDE(i, n) { flag[i] = (i == 0 || keys[i] != keys[i - 1]) ? 1 : 0; }
}

__global__ void starts_kernel(const uint64_t* keys, const int64_t* segid, int64_t n, int64_t n_out,
                              int64_t* starts) {
  EMBER_GRID_STRIDE(i, n) {
    if (i == 0 || keys[i] != keys[i - 1]) starts[segid[i] - 1] = i;
    if (i == 0) starts[n_out] = n;
  }
}

__global__ void gather_indices_kernel(const int64_t* idx, int64_t s0, int64_t s1, int S,
                                      const int64_t* order, const int64_t* starts, int64_t n_out,
                                      int64_t* out) {
  EMBER_GRID_STRIDE(t, n_out * S) {
    const int64_t d = t / n_out, g = t % n_out;
    out[d * n_out + g] = idx[d * s0 + order[starts[g]] * s1];
  }
}

template <typename T>
__global__ void sum_runs_kernel(const T* vals, const int64_t* order, const int64_t* starts,
                                int64_t n_out, int64_t block, T* out) {
  using Acc = opmath_t<T>;
  EMBER_GRID_STRIDE(t, n_out * block) {
    const int64_t g = t / block, j = t % block;
    Acc acc = Acc(vals[order[starts[g]] * block + j]);
    for (int64_t k = starts[g] + 1; k < starts[g + 1]; ++k)
      acc = acc + Acc(vals[order[k] * block + j]);
    out[t] = T(acc);
  }
}

CoalesceResult coalesce_kernel_cuda(const Tensor& indices, const Tensor& values,
                                    const Shape& sparse_sizes) {
  const int64_t S = indices.sizes()[0], nnz = indices.sizes()[1];
  const int64_t block = values.sizes()[1];
  EMBER_CHECK(S <= kMaxSparseDims, "coalesce (CUDA): at most ", kMaxSparseDims,
              " sparse dims, got ", S);
  const Device dev = values.device();
  const cudaStream_t stream = current_stream();
  LinStrides ls{};
  int64_t total = 1;
  for (int64_t d = S - 1; d >= 0; --d) {
    ls.v[d] = total;
    total *= std::max<int64_t>(sparse_sizes[d], 1);
  }
  const int bits = std::max(1, bit_width(uint64_t(std::max<int64_t>(total - 1, 0))));
  Tensor kbuf = scratch_bytes(dev, 2 * nnz * int64_t(sizeof(uint64_t)));
  Tensor pbuf = scratch_bytes(dev, 3 * nnz * int64_t(sizeof(int64_t)));
  uint64_t* k0 = dptr<uint64_t>(kbuf);
  uint64_t* k1 = k0 + nnz;
  int64_t* p0 = dptr<int64_t>(pbuf);
  int64_t* p1 = p0 + nnz;
  int64_t* seg = p1 + nnz;
  const int64_t* idx = indices.data<int64_t>();
  const int64_t s0 = indices.strides()[0], s1 = indices.strides()[1];
  keys_kernel<<<blocks_for(nnz), kThreads, 0, stream>>>(idx, s0, s1, int(S), ls, nnz, k0, p0);
  EMBER_CUDA_CHECK(cudaGetLastError());
  size_t tb = 0, tb2 = 0;
  EMBER_CUDA_CHECK(
      cub::DeviceRadixSort::SortPairs(nullptr, tb, k0, k1, p0, p1, nnz, 0, bits, stream));
  EMBER_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, tb2, p0, seg, nnz, stream));
  Tensor temp = scratch_bytes(dev, int64_t(std::max(tb, tb2)));
  EMBER_CUDA_CHECK(
      cub::DeviceRadixSort::SortPairs(temp.data_ptr(), tb, k0, k1, p0, p1, nnz, 0, bits, stream));
  // p0 is free again: the head flags, then their running count (each run's number + 1).
  heads_kernel<<<blocks_for(nnz), kThreads, 0, stream>>>(k1, nnz, p0);
  EMBER_CUDA_CHECK(cudaGetLastError());
  tb2 = std::max(tb, tb2);
  EMBER_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp.data_ptr(), tb2, p0, seg, nnz, stream));
  int64_t n_out = 0;
  EMBER_CUDA_CHECK(
      cudaMemcpyAsync(&n_out, seg + nnz - 1, sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
  Tensor starts_t = scratch_bytes(dev, (n_out + 1) * int64_t(sizeof(int64_t)));
  int64_t* starts = dptr<int64_t>(starts_t);
  starts_kernel<<<blocks_for(nnz), kThreads, 0, stream>>>(k1, seg, nnz, n_out, starts);
  EMBER_CUDA_CHECK(cudaGetLastError());
  CoalesceResult r;
  r.indices = empty(Shape{S, n_out}, DType::Int64, dev);
  r.values = empty(Shape{n_out, block}, values.dtype(), dev);
  if (S > 0 && n_out > 0) {
    gather_indices_kernel<<<blocks_for(n_out * S), kThreads, 0, stream>>>(
        idx, s0, s1, int(S), p1, starts, n_out, r.indices.data<int64_t>());
    EMBER_CUDA_CHECK(cudaGetLastError());
  }
  if (n_out * block > 0) {
    dispatch_all(values.dtype(), "coalesce", [&](auto tag) {
      using T = typename decltype(tag)::type;
      sum_runs_kernel<T><<<blocks_for(n_out * block), kThreads, 0, stream>>>(
          values.data<T>(), p1, starts, n_out, block, r.values.data<T>());
    });
    EMBER_CUDA_CHECK(cudaGetLastError());
  }
  return r;
}

// ---- spmm ------------------------------------------------------------------------------------

__global__ void row_pointers_kernel(const int64_t* rows, int64_t nnz, int64_t M, int64_t* ptr) {
  EMBER_GRID_STRIDE(r, M + 1) {
    int64_t lo = 0, hi = nnz;  // first entry with row >= r
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (rows[mid] < r)
        lo = mid + 1;
      else
        hi = mid;
    }
    ptr[r] = lo;
  }
}

__global__ void iota_kernel(int64_t* p, int64_t n) {
  EMBER_GRID_STRIDE(i, n) { p[i] = i; }
}

// The columns and values of the entries in row order (cuSPARSE's CSR layout).
template <typename U>
__global__ void gather_pairs_kernel(const int64_t* perm, int64_t n, const int64_t* ci, int64_t* co,
                                    const U* vi, U* vo) {
  EMBER_GRID_STRIDE(k, n) {
    const int64_t e = perm[k];
    co[k] = ci[e];
    vo[k] = vi[e];
  }
}

// One warp per row; its lanes walk the row's output columns. out already holds beta * input.
template <typename T>
__global__ void spmm_rows_kernel(const int64_t* rowptr, const int64_t* perm, const int64_t* cols,
                                 const T* vals, const T* dense, int64_t ld, int64_t M, int64_t N,
                                 opmath_t<T> alpha, T* out) {
  using Acc = opmath_t<T>;
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t r = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; r < M; r += warps) {
    const int64_t b = rowptr[r], e = rowptr[r + 1];
    if (b == e) continue;
    for (int64_t j = lane; j < N; j += 32) {
      Acc acc = Acc(0);
      for (int64_t k = b; k < e; ++k) {
        const int64_t ent = perm ? perm[k] : k;
        acc = acc + Acc(vals[ent]) * Acc(dense[cols[ent] * ld + j]);
      }
      out[r * N + j] = T(Acc(out[r * N + j]) + alpha * acc);
    }
  }
}

// Note [cuSPARSE handles]: as the cuBLAS handles (blas.cu), one per thread and device,
// bound to the caller's current stream before each call.
cusparseHandle_t sparse_handle() {
  constexpr int kMaxDevices = 64;
  thread_local std::array<cusparseHandle_t, kMaxDevices> handles{};
  const int dev = current_device();
  EMBER_CHECK(dev >= 0 && dev < kMaxDevices, "CUDA: invalid device index ", dev);
  cusparseHandle_t& h = handles[size_t(dev)];
  if (!h) EMBER_CUSPARSE_CHECK(cusparseCreate(&h));
  EMBER_CUSPARSE_CHECK(cusparseSetStream(h, current_stream()));
  return h;
}

bool use_cusparse(DType dt) {
  static const bool kernel_only = [] {
    const char* e = std::getenv("EMBER_CUDA_SPMM");
    return e && std::strcmp(e, "kernel") == 0;
  }();
  return !kernel_only && (dt == DType::Float32 || dt == DType::Float64);
}

// out [M, N] += alpha * A @ D through cusparseSpMM, A in CSR (64-bit indices).
void spmm_cusparse(const Tensor& out, const int64_t* rowptr, const Tensor& cols,
                   const Tensor& values, const Tensor& dense, Scalar alpha_s) {
  const int64_t M = out.sizes()[0], N = out.sizes()[1], K = dense.sizes()[0];
  const int64_t nnz = values.numel();
  const bool f64 = out.dtype() == DType::Float64;
  const cudaDataType dt = f64 ? CUDA_R_64F : CUDA_R_32F;
  const double a64 = alpha_s.to_double(), b64 = 1.0;
  const float a32 = float(a64), b32 = 1.0f;
  const void* alpha = f64 ? static_cast<const void*>(&a64) : static_cast<const void*>(&a32);
  const void* beta = f64 ? static_cast<const void*>(&b64) : static_cast<const void*>(&b32);
  cusparseHandle_t h = sparse_handle();
  cusparseSpMatDescr_t A = nullptr;
  cusparseDnMatDescr_t B = nullptr, C = nullptr;
  EMBER_CUSPARSE_CHECK(cusparseCreateCsr(
      &A, M, K, nnz, const_cast<int64_t*>(rowptr), const_cast<int64_t*>(cols.data<int64_t>()),
      values.data_ptr(), CUSPARSE_INDEX_64I, CUSPARSE_INDEX_64I, CUSPARSE_INDEX_BASE_ZERO, dt));
  EMBER_CUSPARSE_CHECK(
      cusparseCreateDnMat(&B, K, N, dense.strides()[0], dense.data_ptr(), dt, CUSPARSE_ORDER_ROW));
  EMBER_CUSPARSE_CHECK(cusparseCreateDnMat(&C, M, N, N, out.data_ptr(), dt, CUSPARSE_ORDER_ROW));
  size_t bytes = 0;
  EMBER_CUSPARSE_CHECK(cusparseSpMM_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                               CUSPARSE_OPERATION_NON_TRANSPOSE, alpha, A, B, beta,
                                               C, dt, CUSPARSE_SPMM_ALG_DEFAULT, &bytes));
  Tensor work = scratch_bytes(out.device(), int64_t(bytes));
  EMBER_CUSPARSE_CHECK(cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                    CUSPARSE_OPERATION_NON_TRANSPOSE, alpha, A, B, beta, C, dt,
                                    CUSPARSE_SPMM_ALG_DEFAULT, work.data_ptr()));
  cusparseDestroySpMat(A);
  cusparseDestroyDnMat(B);
  cusparseDestroyDnMat(C);
}

void spmm_kernel_cuda(const Tensor& out, const Tensor& rows, const Tensor& cols,
                      const Tensor& values, const Tensor& dense, Scalar alpha, bool rows_sorted) {
  const int64_t M = out.sizes()[0], N = out.sizes()[1], nnz = rows.numel();
  if (M == 0 || N == 0 || nnz == 0) return;
  const Device dev = out.device();
  const cudaStream_t stream = current_stream();
  Tensor ptr_t = scratch_bytes(dev, (M + 1) * int64_t(sizeof(int64_t)));
  int64_t* rowptr = dptr<int64_t>(ptr_t);
  const int64_t* sorted_rows = rows.data<int64_t>();
  Tensor sort_buf, temp;
  const int64_t* perm = nullptr;
  Tensor cols_g = cols, vals_g = values;
  if (!rows_sorted) {
    // A stable radix sort of the entries by row gives each row's entries in input order.
    sort_buf = scratch_bytes(dev, 3 * nnz * int64_t(sizeof(int64_t)));
    int64_t* r1 = dptr<int64_t>(sort_buf);
    int64_t* p0 = r1 + nnz;
    int64_t* p1 = p0 + nnz;
    iota_kernel<<<blocks_for(nnz), kThreads, 0, stream>>>(p0, nnz);
    EMBER_CUDA_CHECK(cudaGetLastError());
    const int bits = std::max(1, bit_width(uint64_t(M - 1)));
    size_t tb = 0;
    EMBER_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, tb, rows.data<int64_t>(), r1, p0, p1,
                                                     nnz, 0, bits, stream));
    temp = scratch_bytes(dev, int64_t(tb));
    EMBER_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data_ptr(), tb, rows.data<int64_t>(), r1,
                                                     p0, p1, nnz, 0, bits, stream));
    sorted_rows = r1;
    perm = p1;
  }
  row_pointers_kernel<<<blocks_for(M + 1), kThreads, 0, stream>>>(sorted_rows, nnz, M, rowptr);
  EMBER_CUDA_CHECK(cudaGetLastError());
  if (use_cusparse(out.dtype())) {
    if (perm) {
      // cuSPARSE's CSR wants the columns and values in row order.
      cols_g = empty(Shape{nnz}, DType::Int64, dev);
      vals_g = empty(Shape{nnz}, values.dtype(), dev);
      dispatch_by_size(values.element_size(), "spmm", [&](auto tag) {
        using U = typename decltype(tag)::type;
        gather_pairs_kernel<U><<<blocks_for(nnz), kThreads, 0, stream>>>(
            perm, nnz, cols.data<int64_t>(), cols_g.data<int64_t>(),
            reinterpret_cast<const U*>(values.data_ptr()), reinterpret_cast<U*>(vals_g.data_ptr()));
      });
      EMBER_CUDA_CHECK(cudaGetLastError());
    }
    spmm_cusparse(out, rowptr, cols_g, vals_g, dense, alpha);
    return;
  }
  dispatch_numeric(out.dtype(), "spmm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    spmm_rows_kernel<T><<<blocks_for(M * 32), kThreads, 0, stream>>>(
        rowptr, perm, cols.data<int64_t>(), values.data<T>(), dense.data<T>(), dense.strides()[0],
        M, N, alpha.to<opmath_t<T>>(), out.data<T>());
  });
  EMBER_CUDA_CHECK(cudaGetLastError());
}

// ---- sddmm -----------------------------------------------------------------------------------

template <typename T>
__global__ void sddmm_warp_kernel(const int64_t* rows, const int64_t* cols, const T* a, int64_t lda,
                                  const T* b, int64_t ldb, int64_t nnz, int64_t N, T* out) {
  using Acc = opmath_t<T>;
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t e = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; e < nnz;
       e += warps) {
    const T* x = a + rows[e] * lda;
    const T* y = b + cols[e] * ldb;
    Acc s = Acc(0);
    for (int64_t j = lane; j < N; j += 32) s = s + Acc(x[j]) * Acc(y[j]);
    for (int off = 16; off > 0; off /= 2) s = s + shfl_down_any(s, off);
    if (lane == 0) out[e] = T(s);
  }
}

void sddmm_kernel_cuda(const Tensor& out, const Tensor& rows, const Tensor& cols, const Tensor& a,
                       const Tensor& b) {
  const int64_t nnz = out.numel(), N = a.sizes()[1];
  if (nnz == 0) return;
  const cudaStream_t stream = current_stream();
  dispatch_numeric(out.dtype(), "sddmm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    sddmm_warp_kernel<T><<<blocks_for(nnz * 32), kThreads, 0, stream>>>(
        rows.data<int64_t>(), cols.data<int64_t>(), a.data<T>(), a.strides()[0], b.data<T>(),
        b.strides()[0], nnz, N, out.data<T>());
  });
  EMBER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, sparse) {
  constexpr int cuda = int(DeviceType::CUDA);
  coalesce_stub.fns[cuda] = &coalesce_kernel_cuda;
  spmm_stub.fns[cuda] = &spmm_kernel_cuda;
  sddmm_stub.fns[cuda] = &sddmm_kernel_cuda;
}

}  // namespace ember::cuda
