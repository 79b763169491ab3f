// ember.compile's CUDA fusion kernels (fusion.cpp): loading NVRTC's images and launching them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ember/core/tensor.h"

namespace ember::cuda {

/// Threads per block of an elementwise fused kernel; of a row kernel (a warp per row).
/// The generated sources' __launch_bounds__ say the same (python/ember/_compile/_cuda.py).
constexpr int64_t kFusionThreads = 256;
constexpr int64_t kFusionRowThreads = 128;
/// The kernel parameter space every architecture and driver accepts.
constexpr int64_t kFusionMaxArgBytes = 4096;

/// Loads a CUBIN or PTX image holding `extern "C" __global__ ember_kernel(EmberArgs)`
/// whose argument block is `nargs` int64 words; returns its handle.
int64_t fusion_load(const std::string& image, int64_t nargs);

/// Launches a loaded kernel over `ts` (inputs, then outputs) on the current stream of
/// their device: `shape` is the iteration shape, `scalar` marks single elements read once,
/// `rows` > 0 makes it a row kernel (one warp per row of the last dimension).
void fusion_launch(int64_t handle, const std::vector<Tensor>& ts, const std::vector<int64_t>& shape,
                   const std::vector<bool>& scalar, int64_t rows);

}  // namespace ember::cuda
