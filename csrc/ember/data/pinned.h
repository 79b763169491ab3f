// Pinned (page-locked) host memory for the DataLoader, through the CUDA driver
// API loaded at run time, so that the CPU-only core needs no CUDA to link.
#pragma once
#include <cstddef>

#include "ember/core/tensor.h"

namespace ember::data {

// Note [Pinned staging]
// Page-locked memory comes from cuMemHostAlloc(PORTABLE) in the primary context of
// device 0 (PORTABLE: every context sees it as pinned, including the one the CUDA
// backend's runtime uses), with libcuda.so.1 opened by dlopen on first use. Without a
// driver or a GPU, pinning raises RuntimeError as torch does; is_pinned() is false.

/// True when a CUDA driver with at least one device can be loaded.
bool pinning_available();
/// A new contiguous CPU tensor in pinned memory (RuntimeError without CUDA).
Tensor empty_pinned(const Shape& sizes, DType dtype);
/// A pinned contiguous copy of `t` (`t` itself when it is already pinned).
Tensor pin_memory(const Tensor& t);
/// True when `t`'s storage is pinned memory made here.
bool is_pinned(const Tensor& t);

}  // namespace ember::data
