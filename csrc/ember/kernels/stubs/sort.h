// Kernel slots of sort, topk, kthvalue, unique and searchsorted (front-ends in ops/sort.cpp).
// Backend-neutral: backends include this, never ops/sort.h.
#pragma once
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ember/core/scalar.h"
#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"

namespace ember {

/// values/indices (contiguous, shaped like self) <- self sorted along dim.
using SortFn = void (*)(const Tensor& values, const Tensor& indices, const Tensor& self,
                        int64_t dim, bool descending, bool stable);
/// values/indices (contiguous, size k along dim) <- the k largest/smallest along dim.
using TopkFn = void (*)(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t k,
                        int64_t dim, bool largest, bool sorted);
/// values/indices (contiguous, size 1 along dim) <- the k-th smallest (1-based) along dim.
using KthvalueFn = void (*)(const Tensor& values, const Tensor& indices, const Tensor& self,
                            int64_t k, int64_t dim);
/// Unique rows of a contiguous 2-d `rows` ([n, m]; a 1-d tensor is [n, 1]): the index of
/// the first row of each group in output order, the group of each row, each group's size.
/// consecutive: groups are runs of equal rows; otherwise rows are sorted first.
using UniqueRowsFn = void (*)(const Tensor& rows, bool consecutive, std::vector<int64_t>& first,
                              std::vector<int64_t>& inverse, std::vector<int64_t>& counts);
/// out (int32/int64, shaped like values) <- insertion points of contiguous `values`
/// in contiguous `boundaries` (1-d, or batched over all but the last dim); `sorter`
/// is undefined or an int64 tensor shaped like boundaries.
using SearchsortedFn = void (*)(const Tensor& out, const Tensor& boundaries, const Tensor& values,
                                const Tensor& sorter, bool right);

extern DispatchStub<SortFn> sort_stub;
extern DispatchStub<TopkFn> topk_stub;
extern DispatchStub<KthvalueFn> kthvalue_stub;
extern DispatchStub<UniqueRowsFn> unique_rows_stub;
extern DispatchStub<SearchsortedFn> searchsorted_stub;

}  // namespace ember
