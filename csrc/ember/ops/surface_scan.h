// cummax / cummin and mode: front-ends (ops/surface_scan.cpp) and their kernel stubs
// (CPU kernels in backends/cpu/surface_kernels.cpp).
#pragma once
#include <string>
#include <utility>

#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/stubs/surface_scan.h"

namespace ember {

// The kernel interface (types, stubs): kernels/stubs/surface_scan.h.

std::pair<Tensor, Tensor> cummax(const Tensor& a, int64_t dim);
std::pair<Tensor, Tensor> cummin(const Tensor& a, int64_t dim);
std::pair<Tensor, Tensor> mode(const Tensor& a, int64_t dim, bool keepdim);
/// reduce: "sum", "prod", "mean", "amax", "amin".
Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self);
/// index_reduce: scatter_reduce along dim with a 1-D index selecting whole slices of source.
Tensor index_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                    const std::string& reduce, bool include_self);

}  // namespace ember
