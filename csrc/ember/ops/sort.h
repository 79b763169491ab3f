// Sorting and searching ops: sort, argsort, msort, topk, kthvalue, unique,
// unique_consecutive, searchsorted, bucketize.
#pragma once
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/stubs/sort.h"

namespace ember {

// Note [NaN ordering]
// As in PyTorch, NaN compares greater than every number (and equal to other
// NaNs) in sort, argsort, topk, kthvalue and unique: ascending sorts put NaNs
// last, descending sorts put them first, topk(largest=True) picks them first.
// unique never merges two NaNs (NaN != NaN). searchsorted uses PyTorch's
// comparisons `!(x >= v)` / `!(x > v)`, which place a NaN value after
// everything.

// The kernel interface (types, stubs): kernels/stubs/sort.h.

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
