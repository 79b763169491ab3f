// Reductions and scans: sum, mean, prod, amax/amin, max/min (with indices),
// argmax/argmin, all/any, count_nonzero, var/std (+ _mean), norm, logsumexp,
// median, cumsum/cumprod. PyTorch's signatures, result dtypes and errors.
#pragma once
#include <optional>
#include <utility>

#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/stubs/reduce.h"

namespace ember {

/// Dims to reduce: nullopt (or an empty list) means every dim.
using OptDims = std::optional<Shape>;

// The kernel interface (types, stubs): kernels/stubs/reduce.h.

// ---- front-ends --------------------------------------------------------------------------

/// torch.sum. Bool/integer inputs sum to int64 unless `dtype` is given.
Tensor sum(const Tensor& a, const OptDims& dims = std::nullopt, bool keepdim = false,
           std::optional<DType> dtype = std::nullopt);
/// sum into `out` (its dtype is the result dtype when `dtype` is not given).
const Tensor& sum_out(const Tensor& a, const OptDims& dims, bool keepdim,
                      std::optional<DType> dtype, const Tensor& out);
/// torch.mean. Floating inputs only (or an explicit floating `dtype`).
Tensor mean(const Tensor& a, const OptDims& dims = std::nullopt, bool keepdim = false,
            std::optional<DType> dtype = std::nullopt);
const Tensor& mean_out(const Tensor& a, const OptDims& dims, bool keepdim,
                       std::optional<DType> dtype, const Tensor& out);
/// torch.prod over one dim (nullopt: every element).
Tensor prod(const Tensor& a, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
            std::optional<DType> dtype = std::nullopt);
const Tensor& prod_out(const Tensor& a, std::optional<int64_t> dim, bool keepdim,
                       std::optional<DType> dtype, const Tensor& out);

/// torch.amax / amin: NaN propagates; an empty reduced dim raises.
Tensor amax(const Tensor& a, const OptDims& dims = std::nullopt, bool keepdim = false);
Tensor amin(const Tensor& a, const OptDims& dims = std::nullopt, bool keepdim = false);
const Tensor& amax_out(const Tensor& a, const OptDims& dims, bool keepdim, const Tensor& out);
const Tensor& amin_out(const Tensor& a, const OptDims& dims, bool keepdim, const Tensor& out);
/// x.max() / x.min(): 0-d result; raises on an empty input.
Tensor max(const Tensor& a);
Tensor min(const Tensor& a);
/// x.max(dim) / x.min(dim): (values, indices of the first extreme; the first NaN wins).
std::pair<Tensor, Tensor> max_dim(const Tensor& a, int64_t dim, bool keepdim = false);
std::pair<Tensor, Tensor> min_dim(const Tensor& a, int64_t dim, bool keepdim = false);
/// argmax/argmin; dim nullopt indexes the flattened input.
Tensor argmax(const Tensor& a, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& a, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);

/// torch.all / any: bool result (uint8 for a uint8 input, as PyTorch).
Tensor all(const Tensor& a, const OptDims& dims = std::nullopt, bool keepdim = false);
Tensor any(const Tensor& a, const OptDims& dims = std::nullopt, bool keepdim = false);
/// torch.count_nonzero: int64 result.
Tensor count_nonzero(const Tensor& a, const OptDims& dims = std::nullopt);

/// torch.var / std with `correction` (1 = unbiased). Floating inputs only.
Tensor var(const Tensor& a, const OptDims& dims = std::nullopt, double correction = 1,
           bool keepdim = false);
Tensor std(const Tensor& a, const OptDims& dims = std::nullopt, double correction = 1,
           bool keepdim = false);
/// (var, mean) and (std, mean) in one pass.
std::pair<Tensor, Tensor> var_mean(const Tensor& a, const OptDims& dims = std::nullopt,
                                   double correction = 1, bool keepdim = false);
std::pair<Tensor, Tensor> std_mean(const Tensor& a, const OptDims& dims = std::nullopt,
                                   double correction = 1, bool keepdim = false);

/// Vector p-norm (torch.norm / linalg.vector_norm): p in {0, 1, 2, inf, -inf, any float}.
Tensor norm(const Tensor& a, double p = 2, const OptDims& dims = std::nullopt, bool keepdim = false,
            std::optional<DType> dtype = std::nullopt);
/// log(sum(exp(a))) over `dims`, shifted by the max so it never overflows.
Tensor logsumexp(const Tensor& a, const OptDims& dims, bool keepdim = false);

/// Lower median of every element (NaN if any element is NaN; NaN for an empty input).
Tensor median(const Tensor& a);
/// (values, indices) of the lower median along `dim`.
std::pair<Tensor, Tensor> median_dim(const Tensor& a, int64_t dim, bool keepdim = false);

/// Inclusive cumulative sum / product along `dim`. Bool/integer inputs give int64.
Tensor cumsum(const Tensor& a, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor cumprod(const Tensor& a, int64_t dim, std::optional<DType> dtype = std::nullopt);
const Tensor& cumsum_out(const Tensor& a, int64_t dim, std::optional<DType> dtype,
                         const Tensor& out);
const Tensor& cumprod_out(const Tensor& a, int64_t dim, std::optional<DType> dtype,
                          const Tensor& out);
/// In place: a = cumsum(a, dim) (the dtype, if given, must be a's).
const Tensor& cumsum_(const Tensor& a, int64_t dim, std::optional<DType> dtype = std::nullopt);
const Tensor& cumprod_(const Tensor& a, int64_t dim, std::optional<DType> dtype = std::nullopt);

}  // namespace ember
