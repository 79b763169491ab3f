// Kernel slots of advanced indexing and nonzero (front-ends in ops/index.cpp).
// Backend-neutral: backends include this, never ops/index.h.
#pragma once
#include <optional>
#include <vector>

#include "ember/core/scalar.h"
#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/tensor_iterator.h"

namespace ember {

// ---- kernels (see Note [Advanced indexing]; Note [Kernel registry]) -------------
/// operands {out, src, idx(int64)}: out = *(src + (idx * stride) elements).
using IndexGatherFn = void (*)(TensorIterator& it, int64_t stride);
/// operands {dst, src, idx(int64)}: *(dst + idx*stride) = src, or += alpha*src
/// when accumulate (run serially so duplicate indices add up).
using IndexScatterFn = void (*)(TensorIterator& it, int64_t stride, bool accumulate, Scalar alpha);
/// operands {offs(int64, may be undefined -> validate only), idx(int64)}:
/// checks lo <= idx < size (lo is -size when negatives are allowed), then
/// offs += wrap(idx) * stride. Returns false and sets *bad to the first bad index.
using IndexOffsetsFn = bool (*)(TensorIterator& it, int64_t size, int64_t stride,
                                bool allow_negative, int64_t* bad);
/// Row-major coordinates [n, ndim] of self's nonzero elements (n counted first).
using NonzeroFn = Tensor (*)(const Tensor& self);

extern DispatchStub<IndexGatherFn> index_gather_stub;
extern DispatchStub<IndexScatterFn> index_scatter_stub;
extern DispatchStub<IndexOffsetsFn> index_offsets_stub;
extern DispatchStub<NonzeroFn> nonzero_stub;

}  // namespace ember
