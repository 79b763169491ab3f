// cuDNN loaded at run time (backends/cuda/conv.cu): never a link-time dependency of
// _C_cuda, so the module imports where libcudnn is absent. Note [cuDNN at run time].
#pragma once
#include <cstdint>

namespace ember::cuda {

/// The version of the cuDNN that conv.cu loaded with dlopen (e.g. 91900), loading it on
/// the first call; 0 when no usable libcudnn (version 8 or later) was found.
int64_t cudnn_version();

}  // namespace ember::cuda
