// The operands of a generated fusion kernel as its launch sees them, for the CPU
// (python/compile.cpp) and CUDA (backends/cuda/fusion.cpp) runners alike: Note
// [Generated kernel ABI].
#pragma once
#include <cstdint>
#include <vector>

#include "ember/core/tensor.h"

namespace ember {

/// What a fusion kernel is called with: the operands' data pointers, the meta block
/// [flat, nd, sizes[nd], strides[nops][nd]] and the number of work items (elements, or
/// rows when the kernel reduces over its last dimension).
struct FusionArgs {
  std::vector<char*> ptrs;
  std::vector<int64_t> meta;
  int64_t work = 0;
};

/// Checks the operands of a fusion kernel (defined, on `device`, broadcastable to
/// `shape`) and builds its arguments. `scalar[k]`: operand k is a single element the
/// kernel reads once in its flat loop. `rows` > 0: one work item per row of the last
/// `rows` dimensions.
FusionArgs fusion_args(const std::vector<Tensor>& ts, const std::vector<int64_t>& shape,
                       const std::vector<bool>& scalar, int64_t rows, Device device);

}  // namespace ember
