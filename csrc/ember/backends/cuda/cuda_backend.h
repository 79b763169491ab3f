// The CUDA backend's internal interface (device queries, allocator, kernels).
#pragma once
#include <cstdint>

#include "ember/core/allocator.h"

namespace ember::cuda {

/// Number of visible devices; 0 when there is no driver or no GPU.
int device_count();
int current_device();
/// The caching device allocator registered for DeviceType::CUDA.
Allocator* caching_allocator();
void empty_cache();
int64_t memory_allocated();
int64_t memory_reserved();
/// Registers the CUDA kernels (copy, fill) into the op stubs.
void register_kernels();

}  // namespace ember::cuda
