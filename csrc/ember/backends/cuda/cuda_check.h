// Error checking for CUDA runtime calls: failures raise ember errors naming the call.
#pragma once
#include <cuda_runtime.h>

#include "ember/core/error.h"

#define EMBER_CUDA_CHECK(expr)                                                                    \
  do {                                                                                            \
    cudaError_t err_ = (expr);                                                                    \
    EMBER_CHECK(err_ == cudaSuccess, "CUDA error: ", cudaGetErrorString(err_), " (", #expr, ")"); \
  } while (0)

/// For files that include <cublas_v2.h>: cuBLAS status failures raise naming the call.
#define EMBER_CUBLAS_CHECK(expr)                                                                  \
  do {                                                                                            \
    cublasStatus_t st_ = (expr);                                                                  \
    EMBER_CHECK(st_ == CUBLAS_STATUS_SUCCESS, "cuBLAS error: ", cublasGetStatusString(st_), " (", \
                #expr, ")");                                                                      \
  } while (0)
