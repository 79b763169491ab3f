// Sorting and searching ops: sort, argsort, msort, topk, kthvalue, unique,
// unique_consecutive, searchsorted, bucketize.
#pragma once
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"

namespace ember {

// Note [NaN ordering]
// As in PyTorch, NaN compares greater than every number (and equal to other
// NaNs) in sort, argsort, topk, kthvalue and unique: ascending sorts put NaNs
// last, descending sorts put them first, topk(largest=True) picks them first.
// unique never merges two NaNs (NaN != NaN). searchsorted uses PyTorch's
// comparisons `!(x >= v)` / `!(x > v)`, which place a NaN value after
// everything.

/// values/indices (contiguous, shaped like self) <- self sorted along dim.
using SortFn = void (*)(const Tensor& values, const Tensor& indices, const Tensor& self,
                        int64_t dim, bool descending, bool stable);
/// values/indices (contiguous, size k along dim) <- the k largest/smallest along dim.
using TopkFn = void (*)(const Tensor& values, const Tensor& indices, const Tensor& self,
                        int64_t k, int64_t dim, bool largest, bool sorted);
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

/// (values, indices) of self sorted along dim; stable keeps equal elements in input order.
std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim = -1, bool descending = false,
                                bool stable = false);
/// The indices of sort.
Tensor argsort(const Tensor& self, int64_t dim = -1, bool descending = false, bool stable = false);
/// sort along dim 0, values only.
Tensor msort(const Tensor& self);
/// (values, indices) of the k largest (or smallest) elements along dim.
std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim = -1,
                                bool largest = true, bool sorted = true);
/// (values, indices) of the k-th smallest element (k counts from 1) along dim.
std::tuple<Tensor, Tensor> kthvalue(const Tensor& self, int64_t k, int64_t dim = -1,
                                    bool keepdim = false);
/// (output, inverse, counts): the sorted unique elements (dim = nullopt) or unique slices
/// along dim. inverse/counts are undefined unless requested.
std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& self, bool sorted = true,
                                          bool return_inverse = false, bool return_counts = false,
                                          std::optional<int64_t> dim = std::nullopt);
/// Like unique, but only merges runs of equal consecutive elements (or slices).
std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& self,
                                                      bool return_inverse = false,
                                                      bool return_counts = false,
                                                      std::optional<int64_t> dim = std::nullopt);
/// Indices where `values` would be inserted into the innermost dim of `sorted_sequence`
/// to keep it sorted. side ("left"/"right") overrides right; sorter orders an unsorted sequence.
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool out_int32 = false,
                    bool right = false, const std::optional<std::string>& side = std::nullopt,
                    const std::optional<Tensor>& sorter = std::nullopt);
/// The bucket of each input element among 1-d `boundaries` (searchsorted with swapped args).
Tensor bucketize(const Tensor& input, const Tensor& boundaries, bool out_int32 = false,
                 bool right = false);

}  // namespace ember
