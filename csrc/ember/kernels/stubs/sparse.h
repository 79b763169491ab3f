// Kernel slots of the sparse COO ops (front-ends in ops/sparse*.cpp, Note [Sparse COO
// tensors] in core/sparse.h). Backend-neutral: backends include this, never ops/sparse.h.
#pragma once
#include <cstdint>

#include "ember/core/scalar.h"
#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"

namespace ember {

/// coalesce: `indices` int64 [S, nnz] (any strides), `values` contiguous [nnz, block]
/// (block = product of the dense sizes, 1 when none), `sparse_sizes` the S sparse sizes
/// (their product fits int64). Returns the coalesced indices [S, n] and values [n, block]
/// (fresh contiguous tensors): entries sorted by their row-major linear index, duplicates
/// summed in one pass (Note [Coalesce] in backends/cpu/sparse_kernels.cpp).
struct CoalesceResult {
  Tensor indices, values;
};
using CoalesceFn = CoalesceResult (*)(const Tensor& indices, const Tensor& values,
                                      const Shape& sparse_sizes);

/// spmm: out [M, N] (contiguous, already holding beta * input or zeros) += alpha * S @ D,
/// S a 2-d sparse matrix given by `rows`, `cols` (int64 [nnz], contiguous) and `values`
/// (contiguous [nnz], out's dtype); D [K, N] with unit column stride. Duplicate (row, col)
/// entries add. `rows_sorted`: rows is non-decreasing (a coalesced S), so the kernel needs
/// no counting sort to group entries by row.
using SpmmFn = void (*)(const Tensor& out, const Tensor& rows, const Tensor& cols,
                        const Tensor& values, const Tensor& dense, Scalar alpha, bool rows_sorted);

/// sddmm: out [nnz] (contiguous) <- out[e] = dot(A[rows[e], :], B[cols[e], :]), the
/// product A @ B^T sampled at the entries (A [M, N], B [K, N], unit column strides).
using SddmmFn = void (*)(const Tensor& out, const Tensor& rows, const Tensor& cols, const Tensor& a,
                         const Tensor& b);

extern DispatchStub<CoalesceFn> coalesce_stub;
extern DispatchStub<SpmmFn> spmm_stub;
extern DispatchStub<SddmmFn> sddmm_stub;

}  // namespace ember
