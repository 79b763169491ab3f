// Derivatives of the reductions and scans (ops/reduce.h): the record_* calls
// the front-ends make under a RecordScope, and the named backward formulas,
// all written with ember ops so that create_graph=True differentiates them again.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ember/core/tensor.h"
#include "ember/ops/reduce.h"

namespace ember::autograd {

// Note [Reduction gradients]
// A reduction's gradient is laid out like its input: the output gradient gets
// its reduced dims back as size-1 dims (when keepdim=False) and broadcasts.
// Which inputs receive it: every one (sum, mean), the ones equal to the result
// split evenly (amax/amin, global max/min/median: ties share the gradient, as
// PyTorch), or the one at the returned index (max/min/median with dim). A
// forward that promoted (dtype=) casts the gradient back to the input dtype.
// Formulas with zeros in the input (prod, cumprod) never divide by the input
// there; under grad mode they use forms that stay exact as functions of the
// input, so their own derivatives (create_graph) are correct too.

/// How one reduction mapped its input to its output.
struct ReduceInfo {
  Shape in_sizes;
  std::vector<int64_t> rdims;  // reduced dims, wrapped and ascending (empty for 0-d input)
  bool keepdim = false;
  DType in_dtype = DType::Float32;
  int64_t count = 1;  // input elements per output element
};
/// The ReduceInfo of reducing `a` over `dims` (nullopt / empty: every dim).
ReduceInfo reduce_info(const Tensor& a, const OptDims& dims, bool keepdim);

/// `g` (shaped like the result) with the reduced dims restored as size-1 dims.
Tensor restore_reduced_dims(const Tensor& g, const ReduceInfo& r);

// ---- record calls (each returns without recording for non-floating results) ----

/// SumBackward0 (no dims) / SumBackward1, MeanBackward0 / MeanBackward1.
void record_sum(const Tensor& in, const Tensor& out, const OptDims& dims, bool keepdim, bool mean);
/// ProdBackward0 (every element) / ProdBackward1 (one dim).
void record_prod(const Tensor& in, const Tensor& out, std::optional<int64_t> dim, bool keepdim);
/// AmaxBackward0 / AminBackward0: the gradient split evenly among ties.
void record_amax(const Tensor& in, const Tensor& out, const OptDims& dims, bool keepdim,
                 bool is_max);
/// Global max/min/median (MaxBackward1, MinBackward1, MedianBackward0): the
/// gradient split evenly among the elements equal to the result (NaN: the NaNs).
void record_evenly(const char* name, const Tensor& in, const Tensor& out);
/// max/min/median with dim (MaxBackward0, MinBackward0, MedianBackward1): the
/// gradient goes to the element at `indices`.
void record_value_selecting(const char* name, const Tensor& in, const Tensor& values,
                            const Tensor& indices, int64_t dim, bool keepdim);
/// VarBackward0 / StdBackward0.
void record_var(const Tensor& in, const Tensor& out, const OptDims& dims, double correction,
                bool keepdim, bool is_std);
/// VarMeanBackward0 / StdMeanBackward0 (two differentiable outputs).
void record_var_mean(const Tensor& in, const Tensor& var_or_std, const Tensor& mean,
                     const OptDims& dims, double correction, bool keepdim, bool is_std);
/// NormBackward1 (NormBackward3 when a dtype was given).
void record_norm(const Tensor& in, const Tensor& out, double p, const OptDims& dims, bool keepdim,
                 bool has_dtype);
/// LogsumexpBackward0.
void record_logsumexp(const Tensor& in, const Tensor& out, const OptDims& dims, bool keepdim);
/// CumsumBackward0 / CumprodBackward0.
void record_cumsum(const Tensor& in, const Tensor& out, int64_t dim);
void record_cumprod(const Tensor& in, const Tensor& out, int64_t dim);

// ---- named formulas ----

/// w flipped, cumulatively summed and flipped back along `dim`: out[k] = sum_{i>=k} w[i].
Tensor reversed_cumsum(const Tensor& w, int64_t dim);
/// d prod / d x for a keepdim-shaped `grad` and `result`, reducing `dim` (nullopt: all).
Tensor prod_backward(const Tensor& grad, const Tensor& x, const Tensor& result,
                     std::optional<int64_t> dim);
/// d cumprod / d x along `dim`, correct with zeros in `x`.
Tensor cumprod_backward(const Tensor& grad, const Tensor& x, int64_t dim, const Tensor& output);
/// d var / d x for a keepdim-shaped `grad`.
Tensor var_backward(const Tensor& grad, const Tensor& x, const ReduceInfo& r, double correction);
/// d norm_p / d x for keepdim-shaped `grad` and `norm`; undefined for p = 0.
Tensor norm_backward(const Tensor& grad, const Tensor& x, const Tensor& norm, double p,
                     const ReduceInfo& r);

}  // namespace ember::autograd
