// Kernel slots of cummax/cummin, mode and scatter_reduce (front-ends in ops/surface_scan.cpp).
// Backend-neutral: backends include this, never ops/surface_scan.h.
#pragma once
#include <string>
#include <utility>

#include "ember/core/scalar.h"
#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"

namespace ember {

/// values/indices (contiguous, shape of self) <- running max (or min) of each row of
/// `self` (contiguous, the scanned dim last). NaN propagates; ties take the later index.
using CumMaxMinFn = void (*)(const Tensor& values, const Tensor& indices, const Tensor& self,
                             bool is_max);
/// values/indices (one per row) <- the most frequent value of each row of `self`
/// (contiguous [rows, n]); ties pick the smallest value, its last index.
using ModeFn = void (*)(const Tensor& values, const Tensor& indices, const Tensor& self);
/// Reductions of scatter_reduce / index_reduce.
enum class ScatterReduce { Sum, Prod, Mean, Amax, Amin };
/// out (contiguous, already holding self) <- out[index] reduce= src along dim; `index` and `src`
/// contiguous with index's shape. Positions no index reaches keep self; with !include_self the
/// reached ones start from the reduction's identity. Mean divides by the number of
/// contributions (+1 for self when included).
using ScatterReduceFn = void (*)(const Tensor& out, int64_t dim, const Tensor& index,
                                 const Tensor& src, ScatterReduce reduce, bool include_self);
extern DispatchStub<CumMaxMinFn> cummaxmin_stub;
extern DispatchStub<ScatterReduceFn> scatter_reduce_stub;
extern DispatchStub<ModeFn> mode_stub;

}  // namespace ember
