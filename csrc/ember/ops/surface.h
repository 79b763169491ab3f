// The everyday torch.* names beyond the core families: shape helpers, views
// with PyTorch's extra spellings, numeric composites and small reductions.
// Each is written with the core front-ends (so autograd comes from the
// primitives they call) unless it records a node of its own.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ember/autograd/record.h"
#include "ember/core/scalar.h"
#include "ember/core/tensor.h"
#include "ember/ops/ops.h"
#include "ember/ops/out.h"

namespace ember {

/// The layout `clone`/`empty_like` give a result (torch.memory_format).
enum class MemoryFormat { Preserve, Contiguous, ChannelsLast, ChannelsLast3d };

// ---- in-place composites ---------------------------------------------------------
/// The in-place form of an out-of-place op `f`: `self <- f(self)`. Under autograd `f`
/// runs on a recorded clone and self's history is rebased (Note [In-place ops under autograd]).
const Tensor& inplace_composite(const Tensor& self, const char* name,
                                const std::vector<const Tensor*>& others,
                                const std::function<Tensor(const Tensor&)>& f);
/// Writes `result` into `out` as PyTorch's out= does: an `out` of another shape is
/// resized (ops/out.h resize_output); the dtype must be castable; `out` on result's device.
const Tensor& write_out(const Tensor& result, const Tensor& out, const char* op);

// ---- allocation --------------------------------------------------------------------
/// An uninitialized tensor with the given strides over a storage just large enough.
Tensor empty_strided(const Shape& sizes, const Shape& strides, DType dtype,
                     Device device = Device());
/// Strides of a new tensor laid out like `a` (dims ordered by `a`'s strides); `a`'s own
/// strides when it is non-overlapping and dense.
Shape preserve_strides(const Tensor& a);
Tensor empty_like_format(const Tensor& a, MemoryFormat fmt,
                         std::optional<DType> dtype = std::nullopt);
Tensor clone(const Tensor& a, MemoryFormat fmt);

// ---- views and shapes ------------------------------------------------------------------
Tensor ravel(const Tensor& a);
Tensor adjoint(const Tensor& a);
Tensor mT(const Tensor& a);
Tensor numpy_T(const Tensor& a);
std::vector<Tensor> tensor_split(const Tensor& a, int64_t sections, int64_t dim);
std::vector<Tensor> tensor_split(const Tensor& a, const std::vector<int64_t>& indices, int64_t dim);
/// hsplit/vsplit/dsplit: `which` is 'h', 'v' or 'd'.
std::vector<Tensor> hvd_split(const Tensor& a, char which, int64_t sections);
std::vector<Tensor> hvd_split(const Tensor& a, char which, const std::vector<int64_t>& indices);
Tensor narrow_copy(const Tensor& a, int64_t dim, int64_t start, int64_t length);
Tensor broadcast_to(const Tensor& a, const Shape& shape);
std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& ts);
std::vector<Tensor> meshgrid(const std::vector<Tensor>& ts, const std::string& indexing);
Tensor block_diag(const std::vector<Tensor>& ts);
Tensor cartesian_prod(const std::vector<Tensor>& ts);
Tensor combinations(const Tensor& a, int64_t r, bool with_replacement);
Tensor rot90(const Tensor& a, int64_t k, const Shape& dims);
Tensor tril_indices(int64_t row, int64_t col, int64_t offset, DType dtype,
                    Device device = Device());
Tensor triu_indices(int64_t row, int64_t col, int64_t offset, DType dtype,
                    Device device = Device());
Tensor diag(const Tensor& a, int64_t diagonal);
Tensor diag_embed(const Tensor& a, int64_t offset, int64_t dim1, int64_t dim2);
Tensor diagflat(const Tensor& a, int64_t offset);
Tensor vander(const Tensor& x, std::optional<int64_t> n, bool increasing);
/// Tensor.unfold: windows of `size` every `step` along `dim`, as a new last dim (a view).
Tensor unfold(const Tensor& a, int64_t dim, int64_t size, int64_t step);
/// Tensor.sum_to_size: sums broadcast dims away so the result has `size`.
Tensor sum_to_size_checked(const Tensor& a, const Shape& size);
bool is_nonzero(const Tensor& a);
/// fill_diagonal_(value, wrap) on a tensor with >= 2 dims (all equal beyond 2).
const Tensor& fill_diagonal_(const Tensor& a, Scalar value, bool wrap);

// In-place metadata changes (squeeze_, t_, ...): `a` takes the geometry of `v`, a view of it.
const Tensor& set_geometry_(const Tensor& a, const Tensor& v, const char* op);
/// resize_: keeps the storage when large enough, otherwise grows it (old data kept).
const Tensor& resize_(const Tensor& a, const Shape& sizes);

// ---- numerics -------------------------------------------------------------------------
bool equal(const Tensor& a, const Tensor& b);
Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan);
bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan);
Tensor isposinf(const Tensor& a);
Tensor isneginf(const Tensor& a);
Tensor isreal(const Tensor& a);
Tensor signbit(const Tensor& a);
Tensor sgn(const Tensor& a);
Tensor positive(const Tensor& a);
Tensor heaviside(const Tensor& a, const Tensor& values);
Tensor copysign(const Tensor& a, const Tensor& b);
Tensor hypot(const Tensor& a, const Tensor& b);
/// The next representable value after a toward b (float32/float64).
Tensor nextafter(const Tensor& a, const Tensor& b);
Tensor logaddexp(const Tensor& a, const Tensor& b);
Tensor logaddexp2(const Tensor& a, const Tensor& b);
Tensor xlogy(const Tensor& a, const Tensor& b);
Tensor logit(const Tensor& a, std::optional<double> eps);
Tensor sinc(const Tensor& a);
Tensor deg2rad(const Tensor& a);
Tensor rad2deg(const Tensor& a);
Tensor float_power(const Tensor& a, const Tensor& b);
Tensor fmax(const Tensor& a, const Tensor& b);
Tensor fmin(const Tensor& a, const Tensor& b);
Tensor gcd(const Tensor& a, const Tensor& b);
Tensor lcm(const Tensor& a, const Tensor& b);
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b);
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b);
Tensor clamp_min(const Tensor& a, const Tensor& min);
Tensor clamp_max(const Tensor& a, const Tensor& max);
Tensor ldexp(const Tensor& a, const Tensor& b);
std::pair<Tensor, Tensor> frexp(const Tensor& a);
/// polygamma(n, x): digamma for n = 0, else (-1)^(n+1) n! zeta(n + 1, x) by Euler-Maclaurin
/// (accurate for x > -3; written in ember ops, so it differentiates to any order).
Tensor polygamma(int64_t n, const Tensor& x);
/// The multivariate log-gamma of dimension p.
Tensor mvlgamma(const Tensor& x, int64_t p);
Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value);
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, Scalar value);

// ---- reductions and statistics ------------------------------------------------------------
using OptDimList = std::optional<Shape>;
Tensor nansum(const Tensor& a, const OptDimList& dims, bool keepdim, std::optional<DType> dtype);
Tensor nanmean(const Tensor& a, const OptDimList& dims, bool keepdim, std::optional<DType> dtype);
/// nanmedian: the lower median of the non-NaN values (NaN when all are NaN).
Tensor nanmedian(const Tensor& a);
std::pair<Tensor, Tensor> nanmedian_dim(const Tensor& a, int64_t dim, bool keepdim);
std::pair<Tensor, Tensor> aminmax(const Tensor& a, std::optional<int64_t> dim, bool keepdim);
Tensor diff(const Tensor& a, int64_t n, int64_t dim, const std::optional<Tensor>& prepend,
            const std::optional<Tensor>& append);
Tensor logcumsumexp(const Tensor& a, int64_t dim);
Tensor cov(const Tensor& a, int64_t correction, const std::optional<Tensor>& fweights,
           const std::optional<Tensor>& aweights);
Tensor corrcoef(const Tensor& a);
Tensor dist(const Tensor& a, const Tensor& b, double p);
Tensor renorm(const Tensor& a, double p, int64_t dim, double maxnorm);
/// quantile/nanquantile with interpolation 'linear', 'lower', 'higher', 'midpoint', 'nearest'.
Tensor quantile(const Tensor& a, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                const std::string& interpolation, bool ignore_nan);
Tensor take_along_dim(const Tensor& a, const Tensor& indices, std::optional<int64_t> dim);
/// histogram: (hist, bin_edges) with `bins` equal bins over `range` (data min/max when
/// none) or the given edges; out-of-range values are dropped; density normalizes.
std::pair<Tensor, Tensor> histogram(const Tensor& a, const std::optional<Tensor>& bin_edges, int64_t bins,
                                    std::optional<std::pair<double, double>> range,
                                    const std::optional<Tensor>& weight, bool density);
/// The matrix exponential (scaling and squaring over a Taylor series; differentiable).
Tensor matrix_exp(const Tensor& a);
Tensor bincount(const Tensor& a, const std::optional<Tensor>& weights, int64_t minlength);
Tensor histc(const Tensor& a, int64_t bins, double min, double max);

// ---- indexing composites -----------------------------------------------------------------
Tensor index_fill(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& value);
Tensor index_copy(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& source);
Tensor masked_scatter(const Tensor& a, const Tensor& mask, const Tensor& source);
Tensor put(const Tensor& a, const Tensor& index, const Tensor& source, bool accumulate);

// ---- linear algebra composites ---------------------------------------------------------------
/// einsum over the BLAS: the equation is parsed, each operand's repeated indices are taken
/// as diagonals, indices seen by one operand only are summed, and pairs are contracted with bmm.
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands);
Tensor tensordot(const Tensor& a, const Tensor& b, const Shape& dims_a, const Shape& dims_b);
Tensor tensordot(const Tensor& a, const Tensor& b, int64_t dims);
Tensor kron(const Tensor& a, const Tensor& b);
Tensor inner(const Tensor& a, const Tensor& b);
Tensor cross(const Tensor& a, const Tensor& b, std::optional<int64_t> dim);
Tensor matrix_power(const Tensor& a, int64_t n);

}  // namespace ember
