// The sparse COO kind of TensorImpl: indices + values (Note [Sparse COO tensors]).
#pragma once
#include <cstdint>

#include "ember/core/tensor.h"

namespace ember {

// Note [Sparse COO tensors]
// A sparse COO tensor of sizes [s_0, ..., s_{S-1}, d_0, ..., d_{D-1}] (S sparse dims, D
// dense dims) is a TensorImpl with layout SparseCoo whose `sparse` parts hold
//   indices: int64 [S, nnz], the coordinates of each stored entry in the sparse dims;
//   values:  [nnz, d_0, ..., d_{D-1}], the entry (a dense block when D > 0);
//   coalesced: the indices are sorted lexicographically (row-major over the sparse
//     dims) and unique. Uncoalesced tensors may repeat an index: its entries sum.
// The impl itself has the logical sizes, the values' dtype, numel = prod(sizes), an
// empty storage on the values' device (its version counter stands for the tensor's)
// and contiguous strides that nothing reads: data_ptr() raises LayoutError, so a
// strided-only op can never read a sparse tensor as dense memory (Note [Layout errors]).
// Aliases (detach, .data) share the indices and values tensors, not the parts struct,
// as PyTorch's shallow copy does: an op that replaces a tensor's indices (add_, zero_,
// coalesce's in-place flag) does not change its aliases, writes into values do.
struct SparseCooParts {
  Tensor indices;  // int64 [sparse_dim, nnz], on the values' device
  Tensor values;   // [nnz, dense sizes...]
  int64_t sparse_dim = 0;
  int64_t dense_dim = 0;
  bool coalesced = false;
};

/// A sparse COO tensor from its parts, without checking them against each other beyond
/// shapes (ops/sparse.cpp validates user input); `values` sets dtype and device.
Tensor make_sparse_coo(Tensor indices, Tensor values, const Shape& sizes, bool coalesced);
/// The parts of a sparse tensor; raises for a strided one naming `op`.
SparseCooParts& sparse_parts(const Tensor& t, const char* op = "sparse");
/// A new sparse impl over the same indices and values (detach, alias).
Tensor sparse_shallow_copy(const Tensor& t);

}  // namespace ember
