// Helpers shared by the LAPACK front-ends (ops/linalg_lapack.cpp: solvers, determinants,
// LU and composites; ops/linalg_decompositions.cpp: Cholesky, SVD, eigh, QR). Not public API.
#pragma once
#include <algorithm>
#include <climits>
#include <string>

#include "ember/autograd/derivatives/formula.h"
#include "ember/autograd/functions.h"
#include "ember/autograd/record.h"
#include "ember/kernels/stubs/lapack.h"
#include "ember/ops/factory.h"
#include "ember/ops/linalg.h"
#include "ember/ops/ops.h"
#include "ember/ops/view.h"

namespace ember::lapack_detail {

using B = BinaryOp;
using U = UnaryOp;
using autograd::LambdaNode;
using autograd::variable_list;

using autograd::formula::S;
inline Tensor tmul(const Tensor& a, const Tensor& b) { return binary(B::mul, a, b); }
inline Tensor tsub(const Tensor& a, const Tensor& b) { return binary(B::sub, a, b); }
inline Tensor tadd(const Tensor& a, const Tensor& b) { return binary(B::add, a, b); }
inline Tensor tdiv(const Tensor& a, const Tensor& b) { return binary(B::div, a, b); }
inline Tensor mT_(const Tensor& a) { return transpose(a, -2, -1); }
inline Tensor negate(const Tensor& a) { return unary(U::neg, a); }

inline int64_t rows(const Tensor& a) { return a.sizes()[a.dim() - 2]; }
inline int64_t cols(const Tensor& a) { return a.sizes()[a.dim() - 1]; }

inline void check_input(const Tensor& A, const char* op, bool square) {
  EMBER_CHECK(A.dim() >= 2, op, ": The input tensor A must have at least 2 dimensions.");
  EMBER_CHECK(A.dtype() == DType::Float32 || A.dtype() == DType::Float64, op,
              ": Expected a floating point or complex tensor as input. Got ",
              scalar_type_name(A.dtype()));
  if (square)
    EMBER_CHECK(rows(A) == cols(A), op, ": A must be batches of square matrices, but they are ",
                rows(A), " by ", cols(A), " matrices");
  EMBER_CHECK(rows(A) < INT_MAX && cols(A) < INT_MAX, op,
              ": matrix dimensions exceed LAPACK's 32-bit sizes");
}

// The second operand of a solver on A's device (the kernels read both on one device).
inline void check_device(const Tensor& A, const Tensor& B, const char* op) {
  EMBER_CHECK(A.device().type == B.device().type, op,
              ": Expected all tensors to be on the same device, but found at least two devices, ",
              A.device().str(), " and ", B.device().str(), "!");
}

inline int64_t batch_of(const Tensor& a) {
  int64_t b = 1;
  for (int64_t i = 0; i + 2 < a.dim(); ++i) b = checked_mul(b, a.sizes()[i], "linalg batch");
  return b;
}

inline Shape batch_shape(const Tensor& a) {
  Shape s;
  for (int64_t i = 0; i + 2 < a.dim(); ++i) s.push_back(a.sizes()[i]);
  return s;
}

inline Shape cat_shape(Shape s, std::initializer_list<int64_t> tail) {
  for (int64_t v : tail) s.push_back(v);
  return s;
}

// A column-major copy: shape (..., cols, rows), contiguous; matrix i starts at i * rows * cols.
// One copy, always a fresh buffer (LAPACK overwrites it).
inline Tensor colmajor(const Tensor& a) {
  Tensor t = mT_(a);
  Tensor r = empty(t.sizes(), t.dtype(), t.device());
  copy_(r, t);
  return r;
}

// Note [Batched LAPACK]
// The front-ends run each LAPACK primitive once over the whole batch through its stub
// (kernels/stubs/lapack.h, Note [Batched LAPACK stubs]). On the CPU
// (backends/cpu/lapack_kernels.cpp) a batch of equal-sized problems runs as
// chunk(begin, end) over the matrices: on the thread pool with the LAPACK single-threaded
// (blas::SerialScope) when there is more than one matrix and more than one thread, else
// inline (where one large matrix keeps OpenBLAS's own threads). Each chunk allocates its
// workspace once; workspace sizes are queried once per batch. On CUDA
// (backends/cuda/linalg.cu) cuSOLVER / cuBLAS run the batch on the current stream. Each
// matrix's `info` is kept in an int32 tensor on the input's device; the front-end reads it
// once (host_info) and raises for the first failing matrix in batch order, so the error
// does not depend on the scheduling.

// `info` readable on the host: itself on the CPU, else one copy (which waits for the
// stream: the only host sync of a linalg op, on its error-checking path).
inline Tensor host_info(const Tensor& info) {
  return info.device().is_cpu() ? info : to_device(info, Device());
}

// The index of the first matrix whose info is > 0 (-1 when none) and its info.
inline int64_t first_failure(const Tensor& info_host, int64_t batch, int& code) {
  const int32_t* p = reinterpret_cast<const int32_t*>(info_host.data_ptr());
  for (int64_t i = 0; i < batch; ++i)
    if (p[i] > 0) {
      code = p[i];
      return i;
    }
  code = 0;
  return -1;
}

inline std::string batch_prefix(int64_t batch, int64_t i) {
  return batch > 1 ? "(Batch element " + std::to_string(i) + "): " : "";
}

inline Shape broadcast_batch(const Shape& a, const Shape& b, const char* op) {
  size_t nd = std::max(a.size(), b.size());
  Shape r(nd);
  for (size_t i = 0; i < nd; ++i) {
    int64_t x = i + a.size() >= nd ? a[i + a.size() - nd] : 1;
    int64_t y = i + b.size() >= nd ? b[i + b.size() - nd] : 1;
    EMBER_CHECK(x == y || x == 1 || y == 1, op,
                ": the batch dimensions of A and B do not broadcast: ", shape_str(a), " and ",
                shape_str(b));
    r[i] = x == 1 ? y : x;
  }
  return r;
}

}  // namespace ember::lapack_detail
