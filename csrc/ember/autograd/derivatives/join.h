// Recording of the joining/rearranging (ops/join.h) and sorting (ops/sort.h)
// ops' autograd nodes; formulas in join.cpp. See Note [Recording].
#pragma once
#include <vector>

#include "ember/core/tensor.h"

namespace ember::autograd {

/// CatBackward0: each input gets its slice of the gradient along `dim` (wrapped),
/// cast back to its dtype; skipped 1-d empty inputs get zeros({0}).
void record_cat(const std::vector<Tensor>& inputs, int64_t dim, const Tensor& out);
/// StackBackward0: input i gets grad.select(dim, i), cast back to its dtype.
void record_stack(const std::vector<Tensor>& inputs, int64_t dim, const Tensor& out);
/// FlipBackward0: grad.flip(dims).
void record_flip(const Tensor& self, const Shape& dims, const Tensor& out);
/// RollBackward0: grad.roll(-shifts, dims) (no dims: the flattened roll).
void record_roll(const Tensor& self, const Shape& shifts, const Shape& dims, const Tensor& out);
/// RepeatBackward0: the gradient summed over the repeated copies.
void record_repeat(const Tensor& self, const Shape& repeats, const Tensor& out);
/// SortBackward0 / TopkBackward0 / KthvalueBackward0 on the values `out`: the
/// gradient scattered back to self's positions `indices` along `dim` (wrapped).
/// `squeezed`: out and indices lost `dim` (kthvalue with keepdim=False).
void record_value_selecting(const char* name, const Tensor& self, int64_t dim,
                            const Tensor& indices, bool squeezed, const Tensor& out);
/// A node whose backward raises "the derivative for '<op>' is not implemented."
/// (unique and friends: their outputs require grad in PyTorch but have no formula).
void record_not_implemented(const char* name, const char* op, const Tensor& self,
                            const Tensor& out);

}  // namespace ember::autograd
