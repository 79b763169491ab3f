// Error checking for CUDA runtime calls: failures raise ember errors naming the call.
#pragma once
#include <cuda_runtime.h>

#include "ember/core/error.h"

#define EMBER_CUDA_CHECK(expr)                                                                    \
  do {                                                                                            \
    cudaError_t err_ = (expr);                                                                    \
    EMBER_CHECK(err_ == cudaSuccess, "CUDA error: ", cudaGetErrorString(err_), " (", #expr, ")"); \
  } while (0)
