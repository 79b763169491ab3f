// Reductions and statistics written with the core reductions (ops/surface.h).
#include <algorithm>
#include <cmath>

#include "ember/autograd/derivatives/formula.h"
#include "ember/autograd/functions.h"
#include "ember/autograd/record.h"
#include "ember/jit/trace_hook.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/join.h"
#include "ember/ops/linalg.h"
#include "ember/ops/reduce.h"
#include "ember/ops/sort.h"
#include "ember/ops/surface.h"
#include "ember/ops/view.h"

namespace ember {
namespace {

using B = BinaryOp;
using U = UnaryOp;

using namespace autograd::formula;  // S, plus, minus, mul, div, bin, un

bool read_bool(const Tensor& t) {
  Tensor c = to_device(to_dtype(t, DType::Bool), Device());
  return *reinterpret_cast<const bool*>(c.data_ptr());
}
double read_double(const Tensor& t) {
  Tensor c = to_device(to_dtype(t, DType::Float64), Device());
  return *reinterpret_cast<const double*>(c.data_ptr());
}

}  // namespace

Tensor nansum(const Tensor& a, const OptDimList& dims, bool keepdim, std::optional<DType> dtype) {
  EMBER_TRACE("aten::nansum(Tensor self, int[]? dim, bool keepdim, ScalarType? dtype) -> Tensor",
              nansum, a, dims, keepdim, dtype);
  Tensor x = is_floating(a.dtype()) ? where(un(U::isnan, a), S(0.0), a) : a;
  return sum(x, dims, keepdim, dtype);
}

Tensor nanmean(const Tensor& a, const OptDimList& dims, bool keepdim, std::optional<DType> dtype) {
  EMBER_TRACE("aten::nanmean(Tensor self, int[]? dim, bool keepdim, ScalarType? dtype) -> Tensor",
              nanmean, a, dims, keepdim, dtype);
  EMBER_CHECK(is_floating(dtype.value_or(a.dtype())),
              "nanmean(): expected input to have floating point dtype but got ",
              dtype_name(a.dtype()));
  Tensor cnt = sum(un(U::logical_not, un(U::isnan, a)), dims, keepdim);
  return bin(B::div, nansum(a, dims, keepdim, dtype), cnt);
}

std::pair<Tensor, Tensor> aminmax(const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  EMBER_TRACE("aten::aminmax(Tensor self, int? dim, bool keepdim) -> (Tensor, Tensor)", aminmax, a,
              dim, keepdim);
  if (dim) {
    EMBER_CHECK(a.dim() == 0 || a.sizes()[wrap_dim(*dim, a.dim())] != 0,
                "aminmax(): Expected reduction dim ", *dim, " to have non-zero size.");
    return {amin(a, Shape{*dim}, keepdim), amax(a, Shape{*dim}, keepdim)};
  }
  EMBER_CHECK(a.numel() > 0,
              "aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
              "identity.");
  Tensor lo = amin(a, std::nullopt, false), hi = amax(a, std::nullopt, false);
  if (keepdim) {
    Shape ones(static_cast<size_t>(a.dim()), 1);
    lo = reshape(lo, ones);
    hi = reshape(hi, ones);
  }
  return {lo, hi};
}

Tensor diff(const Tensor& a, int64_t n, int64_t dim, const std::optional<Tensor>& prepend,
            const std::optional<Tensor>& append) {
  EMBER_TRACE("aten::diff(Tensor self, int n, int dim, Tensor? prepend, Tensor? append) -> Tensor",
              diff, a, n, dim, prepend, append);
  EMBER_CHECK(a.dim() >= 1, "diff expects input to be at least one-dimensional");
  EMBER_CHECK(n >= 0, "order must be non-negative but got ", n);
  dim = wrap_dim(dim, a.dim());
  std::vector<Tensor> parts;
  if (prepend)
    parts.push_back(prepend->dim() == 0 ? expand(reshape(*prepend, Shape(a.dim(), 1)),
                                                 [&] {
                                                   Shape s = a.sizes();
                                                   s[dim] = 1;
                                                   return s;
                                                 }())
                                        : *prepend);
  parts.push_back(a);
  if (append)
    parts.push_back(append->dim() == 0 ? expand(reshape(*append, Shape(a.dim(), 1)),
                                                [&] {
                                                  Shape s = a.sizes();
                                                  s[dim] = 1;
                                                  return s;
                                                }())
                                       : *append);
  Tensor x = parts.size() > 1 ? cat(parts, dim) : a;
  for (int64_t i = 0; i < n && x.sizes()[dim] > 0; ++i) {
    int64_t len = x.sizes()[dim] - 1;
    Tensor hi = narrow(x, dim, 1, len), lo = narrow(x, dim, 0, len);
    x = x.dtype() == DType::Bool ? bin(B::logical_xor, hi, lo) : bin(B::sub, hi, lo);
  }
  return x;
}

// The forward scan of logcumsumexp (ScanKind::LogCumSumExp: a running-max scan, so
// values far apart along the line neither overflow nor underflow to -inf).
static Tensor logcumsumexp_scan(const Tensor& x, int64_t dim) {
  Tensor out = clone(contiguous(x));
  if (x.dim() == 0 || x.numel() == 0) return out;
  ReduceArgs args;
  args.out = out;
  args.mask = Shape{dim};
  args.kind = int(ScanKind::LogCumSumExp);
  scan_stub.get(x.device())(args);
  return out;
}

// PyTorch's logcumsumexp_backward: the gradient is a reversed logcumsumexp of
// log|grad| - result, split by the sign of grad, so it is finite wherever the forward is.
static Tensor logcumsumexp_backward(const Tensor& grad, const Tensor& self, const Tensor& result,
                                    int64_t dim) {
  if (grad.numel() == 0) return zeros(grad.sizes(), grad.dtype(), grad.device());
  auto reverse_lcse = [dim](const Tensor& t) {
    return flip(logcumsumexp(flip(t, Shape{dim}), dim), Shape{dim});
  };
  Tensor lowest = S(-finfo_max(grad.dtype()));
  Tensor log_abs = un(U::log, un(U::abs, grad));
  Tensor zero = S(0.0);
  Tensor log_pos = where(bin(B::gt, grad, zero), log_abs, lowest);
  Tensor log_neg = where(bin(B::lt, grad, zero), log_abs, lowest);
  Tensor pos = un(U::exp, bin(B::add, reverse_lcse(bin(B::sub, log_pos, result)), self));
  Tensor neg = un(U::exp, bin(B::add, reverse_lcse(bin(B::sub, log_neg, result)), self));
  return bin(B::sub, pos, neg);
}

Tensor logcumsumexp(const Tensor& a, int64_t dim) {
  EMBER_TRACE("aten::logcumsumexp(Tensor self, int dim) -> Tensor", logcumsumexp, a, dim);
  Tensor x = is_floating(a.dtype()) ? a : to_dtype(a, default_dtype());
  int64_t d = wrap_dim(dim, x.dim());
  autograd::RecordScope rs({&x});
  Tensor out = logcumsumexp_scan(x, d);
  rs.done();
  if (rs.rec) {
    auto node = autograd::record(
        "LogcumsumexpBackward0", {&x}, out,
        [d](autograd::LambdaNode& n, autograd::variable_list&& g) -> autograd::variable_list {
          Tensor self = n.unpack(0), result = n.unpack(1);
          if (self.dim() == 0) return {g[0]};
          return {logcumsumexp_backward(g[0], self, result, d)};
        });
    node->saved.emplace_back(x, false);
    node->saved.emplace_back(out, true);
  }
  return out;
}

Tensor cov(const Tensor& a, int64_t correction, const std::optional<Tensor>& fweights,
           const std::optional<Tensor>& aweights) {
  EMBER_TRACE(
      "aten::cov(Tensor self, int correction, Tensor? fweights, Tensor? aweights) -> Tensor", cov,
      a, correction, fweights, aweights);
  EMBER_CHECK(a.dim() <= 2,
              "cov(): expected input to have two or fewer dimensions but got an input with ",
              a.dim(), " dimensions");
  Tensor x = a.dim() < 2 ? reshape(a, Shape{1, -1}) : a;
  if (!is_floating(x.dtype())) x = to_dtype(x, default_dtype());
  int64_t nobs = x.sizes()[1];
  std::optional<Tensor> w;
  if (fweights) {
    EMBER_CHECK(fweights->dim() <= 1,
                "cov(): expected fweights to have one or fewer dimensions but got fweights with ",
                fweights->dim(), " dimensions");
    EMBER_CHECK(!is_floating(fweights->dtype()),
                "cov(): expected fweights to have integral dtype but got fweights with ",
                dtype_name(fweights->dtype()), " dtype");
    EMBER_CHECK(fweights->numel() == nobs,
                "cov(): expected fweights to have the same numel as there are observations in the "
                "input but got ",
                fweights->numel(), " != ", nobs);
    EMBER_CHECK(nobs == 0 || read_double(amin(*fweights)) >= 0,
                "cov(): fweights cannot be negative");
    w = *fweights;
  }
  if (aweights) {
    EMBER_CHECK(aweights->dim() <= 1,
                "cov(): expected aweights to have one or fewer dimensions but got aweights with ",
                aweights->dim(), " dimensions");
    EMBER_CHECK(is_floating(aweights->dtype()),
                "cov(): expected aweights to have floating point dtype but got aweights with ",
                dtype_name(aweights->dtype()), " dtype");
    EMBER_CHECK(aweights->numel() == nobs,
                "cov(): expected aweights to have the same numel as there are observations in the "
                "input but got ",
                aweights->numel(), " != ", nobs);
    EMBER_CHECK(nobs == 0 || read_double(amin(*aweights)) >= 0,
                "cov(): aweights cannot be negative");
    w = w ? bin(B::mul, *w, *aweights) : *aweights;
  }
  Tensor wsum = w ? sum(*w) : wrap_scalar(Scalar(nobs));
  Tensor avg = w ? bin(B::div, sum(bin(B::mul, x, *w), Shape{1}), wsum) : mean(x, Shape{1});
  Tensor norm_factor;
  if (w && aweights && correction != 0)
    norm_factor =
        bin(B::sub, wsum,
            bin(B::div, bin(B::mul, sum(bin(B::mul, *w, *aweights)), S(double(correction))), wsum));
  else
    norm_factor = bin(B::sub, wsum, S(double(correction)));
  norm_factor = clamp(to_dtype(norm_factor, x.dtype()), S(0.0), std::nullopt);
  Tensor xm = bin(B::sub, x, unsqueeze(avg, 1));
  Tensor xw = w ? bin(B::mul, xm, *w) : xm;
  Tensor c = bin(B::div, mm(xw, t(xm)), norm_factor);
  // A single variable gives a 0-d result, as NumPy and PyTorch.
  return (a.dim() < 2 || x.sizes()[0] == 1) ? reshape(c, Shape{}) : c;
}

Tensor corrcoef(const Tensor& a) {
  EMBER_TRACE("aten::corrcoef(Tensor self) -> Tensor", corrcoef, a);
  EMBER_CHECK(a.dim() <= 2,
              "corrcoef(): expected input to have two or fewer dimensions but got an input with ",
              a.dim(), " dimensions");
  Tensor c = cov(a, 1, std::nullopt, std::nullopt);
  if (c.dim() == 0) return bin(B::div, c, c);
  Tensor d = diagonal(c, 0, 0, 1);
  Tensor sd = un(U::sqrt, d);
  c = bin(B::div, c, unsqueeze(sd, 1));
  c = bin(B::div, c, unsqueeze(sd, 0));
  return clamp(c, S(-1.0), S(1.0));
}

Tensor dist(const Tensor& a, const Tensor& b, double p) {
  EMBER_TRACE("aten::dist(Tensor self, Tensor b, float p) -> Tensor", dist, a, b, p);
  return norm(bin(B::sub, a, b), p);
}

Tensor renorm(const Tensor& a, double p, int64_t dim, double maxnorm) {
  EMBER_TRACE("aten::renorm(Tensor self, float p, int dim, float maxnorm) -> Tensor", renorm, a, p,
              dim, maxnorm);
  EMBER_CHECK(p > 0, "renorm: non-positive-norm not supported");
  EMBER_CHECK(maxnorm >= 0, "renorm: expected maxnorm to be >= 0 but got ", maxnorm);
  EMBER_CHECK(a.dim() > 1, "renorm: input needs at least 2 dimensions, got ", a.dim(),
              " dimensions");
  dim = wrap_dim(dim, a.dim());
  Shape others;
  for (int64_t i = 0; i < a.dim(); ++i)
    if (i != dim) others.push_back(i);
  Tensor nrm = norm(a, p, others, true);
  Tensor factor = where(bin(B::gt, nrm, S(maxnorm)),
                        bin(B::div, S(maxnorm), bin(B::add, nrm, S(1e-7))), S(1.0));
  return bin(B::mul, a, factor);
}

Tensor quantile(const Tensor& a, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                const std::string& interpolation, bool ignore_nan) {
  EMBER_TRACE(
      "aten::quantile(Tensor self, Tensor q, int? dim, bool keepdim, str interpolation, bool "
      "ignore_nan) -> Tensor",
      quantile, a, q, dim, keepdim, interpolation, ignore_nan);
  const char* op = ignore_nan ? "nanquantile()" : "quantile()";
  EMBER_CHECK(a.numel() > 0, op, " input tensor must be non-empty");
  EMBER_CHECK(q.dim() <= 1, op, " q must be a scalar or 1D tensor");
  EMBER_CHECK(a.dtype() == DType::Float32 || a.dtype() == DType::Float64, op,
              " input tensor must be either float or double dtype");
  EMBER_CHECK(q.dtype() == a.dtype(), op, " q tensor must be same dtype as the input tensor");
  EMBER_CHECK(interpolation == "linear" || interpolation == "lower" || interpolation == "higher" ||
                  interpolation == "midpoint" || interpolation == "nearest",
              op, " interpolation must be one of linear, lower, higher, midpoint or nearest. Got ",
              interpolation);
  if (q.numel())
    EMBER_CHECK(read_bool(all(bin(B::logical_and, bin(B::ge, q, S(0.0)), bin(B::le, q, S(1.0))))),
                op, " q values must be in the range [0, 1]");
  // Work on a [..., n] layout: the reduced dim last (everything flattened when dim is None).
  Tensor x;
  Shape out_shape;
  if (!dim) {
    x = reshape(a, Shape{-1});
    if (keepdim) out_shape = Shape(static_cast<size_t>(a.dim()), 1);
  } else {
    int64_t d = wrap_dim(*dim, a.dim());
    x = a.dim() == 0 ? reshape(a, Shape{1}) : movedim(a, Shape{d}, Shape{-1});
    for (int64_t i = 0; i < a.dim(); ++i) {
      if (i != d)
        out_shape.push_back(a.sizes()[i]);
      else if (keepdim)
        out_shape.push_back(1);
    }
  }
  int64_t n = x.sizes().back();
  Tensor sorted = std::get<0>(sort(x, -1));
  Tensor nan_mask = un(U::isnan, sorted);
  Tensor k = ignore_nan ? sum(un(U::logical_not, nan_mask), Shape{-1}, true)
                        : full(Shape{}, Scalar(n), DType::Int64, a.device());
  Tensor qv = reshape(q, Shape{-1});
  int64_t nq = qv.numel();
  // pos: [nq, ..., 1]
  Shape qshape{nq};
  for (int64_t i = 0; i < x.dim(); ++i) qshape.push_back(1);
  Tensor qb = reshape(qv, qshape);
  Tensor kf = to_dtype(k, a.dtype());
  Tensor pos = bin(B::mul, qb, clamp(bin(B::sub, kf, S(1.0)), S(0.0), std::nullopt));
  if (interpolation == "lower")
    pos = un(U::floor, pos);
  else if (interpolation == "higher")
    pos = un(U::ceil, pos);
  else if (interpolation == "nearest")
    pos = un(U::round, pos);
  Tensor lo = un(U::floor, pos), hi = un(U::ceil, pos);
  Tensor lo_i = clamp(to_dtype(lo, DType::Int64), wrap_scalar(Scalar(int64_t(0))),
                      wrap_scalar(Scalar(n - 1)));
  Tensor hi_i = clamp(to_dtype(hi, DType::Int64), wrap_scalar(Scalar(int64_t(0))),
                      wrap_scalar(Scalar(n - 1)));
  Shape ex{nq};
  for (int64_t s : sorted.sizes()) ex.push_back(s);
  Shape idx_shape = ex;
  idx_shape.back() = 1;
  Tensor se = expand(unsqueeze(sorted, 0), ex);
  Tensor vlo = gather(se, -1, contiguous(expand(lo_i, idx_shape)));
  Tensor vhi = gather(se, -1, contiguous(expand(hi_i, idx_shape)));
  Tensor r;
  if (interpolation == "midpoint")
    r = bin(B::mul, bin(B::add, vlo, vhi), S(0.5));
  else
    r = lerp(vlo, vhi, bin(B::sub, pos, lo));
  r = squeeze(r, Shape{-1});  // [nq, ...]
  // NaN rules: quantile gives NaN for any NaN in the line; nanquantile for an all-NaN line.
  Tensor line_nan = ignore_nan ? bin(B::eq, squeeze(k, Shape{-1}), wrap_scalar(Scalar(int64_t(0))))
                               : any(nan_mask, Shape{-1});
  r = where(line_nan, S(NAN), r);
  Shape final_shape;
  if (q.dim() == 1) final_shape.push_back(nq);
  for (int64_t s : out_shape) final_shape.push_back(s);
  return reshape(r, final_shape);
}

Tensor take_along_dim(const Tensor& a, const Tensor& indices, std::optional<int64_t> dim) {
  EMBER_TRACE("aten::take_along_dim(Tensor self, Tensor indices, int? dim) -> Tensor",
              take_along_dim, a, indices, dim);
  EMBER_CHECK(indices.dtype() == DType::Int64,
              "ember.take_along_dim(): dtype of indices should be Long but got ",
              dtype_name(indices.dtype()));
  if (!dim) return gather(reshape(a, Shape{-1}), 0, reshape(indices, Shape{-1}));
  EMBER_CHECK(a.dim() == indices.dim(),
              "ember.take_along_dim(): input and indices should have the same number of "
              "dimensions, but got ",
              a.dim(), " dimensions for input, and ", indices.dim(), " dimensions for indices");
  int64_t d = wrap_dim(*dim, a.dim());
  Shape sa = a.sizes(), si = indices.sizes();
  Shape ba, bi;
  for (int64_t i = 0; i < a.dim(); ++i) {
    if (i == d) {
      ba.push_back(sa[i]);
      bi.push_back(si[i]);
      continue;
    }
    EMBER_CHECK(sa[i] == si[i] || sa[i] == 1 || si[i] == 1, "The size of tensor a (", sa[i],
                ") must match the size of tensor b (", si[i], ") at non-singleton dimension ", i);
    int64_t s = sa[i] == 1 ? si[i] : sa[i];
    ba.push_back(s);
    bi.push_back(s);
  }
  return gather(expand(a, ba), d, contiguous(expand(indices, bi)));
}

Tensor bincount(const Tensor& a, const std::optional<Tensor>& weights, int64_t minlength) {
  EMBER_TRACE("aten::bincount(Tensor self, Tensor? weights, int minlength) -> Tensor", bincount, a,
              weights, minlength);
  EMBER_CHECK(a.dim() == 1, "bincount only supports 1-d non-negative integral inputs.");
  EMBER_CHECK(!is_floating(a.dtype()) && a.dtype() != DType::Bool,
              "\"bincount_cpu\" not implemented for '", dtype_name(a.dtype()), "'");
  EMBER_CHECK(minlength >= 0, "minlength should be >= 0");
  if (weights)
    EMBER_CHECK(weights->dim() == 1 && weights->numel() == a.numel(),
                "weights should be 1-d and have the same length as input");
  int64_t len = minlength;
  if (a.numel()) {
    EMBER_CHECK(read_double(amin(a)) >= 0,
                "bincount only supports 1-d non-negative integral inputs.");
    len = std::max<int64_t>(len, int64_t(read_double(amax(a))) + 1);
  }
  Tensor idx = to_dtype(a, DType::Int64);
  if (!weights) {
    Tensor out = zeros(Shape{len}, DType::Int64, a.device());
    return index_add(out, 0, idx, ones(Shape{a.numel()}, DType::Int64, a.device()),
                     Scalar(int64_t(1)));
  }
  DType wt = is_floating(weights->dtype()) ? weights->dtype() : DType::Float64;
  Tensor out = zeros(Shape{len}, wt, a.device());
  return index_add(out, 0, idx, to_dtype(*weights, wt), Scalar(int64_t(1)));
}

Tensor histc(const Tensor& a, int64_t bins, double mn, double mx) {
  EMBER_TRACE("aten::histc(Tensor self, int bins, float min, float max) -> Tensor", histc, a, bins,
              mn, mx);
  EMBER_CHECK(is_floating(a.dtype()), "\"histogram_cpu\" not implemented for '",
              dtype_name(a.dtype()), "'");
  EMBER_CHECK(bins > 0, "ember.histc: bins must be > 0, but got ", bins, " for bins");
  EMBER_CHECK(mx >= mn, "ember.histc: max must be larger than min");
  autograd::GradModeGuard no_grad(false);
  if (mn == mx && a.numel()) {
    mn = read_double(amin(a));
    mx = read_double(amax(a));
  }
  if (mn == mx) {
    mn -= 1;
    mx += 1;
  }
  EMBER_CHECK(std::isfinite(mn) && std::isfinite(mx), "ember.histc: range of [", mn, ", ", mx,
              "] is not finite");
  // PyTorch's arithmetic: the edges rounded to the input's dtype and
  // (x - min) * bins / (max - min) in that dtype (float32 puts 0.7f in bin 7 of 10 on [0, 1],
  // where float64 arithmetic on the widened value gave bin 6).
  const DType ct = a.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  auto round_to = [ct](double v) { return ct == DType::Float32 ? double(float(v)) : v; };
  const double lo = round_to(mn), hi = round_to(mx), span = round_to(hi - lo);
  Tensor x = to_dtype(reshape(a, Shape{-1}), ct);
  Tensor inside = bin(B::logical_and, bin(B::ge, x, S(lo)), bin(B::le, x, S(hi)));
  Tensor pos =
      un(U::floor, bin(B::div, bin(B::mul, bin(B::sub, x, S(lo)), S(double(bins))), S(span)));
  Tensor b = clamp(to_dtype(where(inside, pos, S(0.0)), DType::Int64),
                   wrap_scalar(Scalar(int64_t(0))), wrap_scalar(Scalar(bins - 1)));
  Tensor out = zeros(Shape{bins}, a.dtype(), a.device());
  return index_add(out, 0, b, to_dtype(inside, a.dtype()), Scalar(int64_t(1)));
}

}  // namespace ember

namespace ember {

Tensor nanmedian(const Tensor& a) {
  EMBER_TRACE("aten::nanmedian(Tensor self) -> Tensor", nanmedian, a);
  EMBER_CHECK(a.numel() > 0, "nanmedian() input tensor cannot be empty");
  Tensor flat = reshape(a, Shape{-1});
  Tensor sorted = std::get<0>(sort(flat, 0));  // NaN sorts last
  Tensor k = is_floating(a.dtype()) ? sum(unary(UnaryOp::logical_not, unary(UnaryOp::isnan, flat)))
                                    : full(Shape{}, Scalar(a.numel()), DType::Int64, a.device());
  Tensor idx = clamp(
      binary(BinaryOp::floor_divide, binary(BinaryOp::sub, k, wrap_scalar(Scalar(int64_t(1)))),
             wrap_scalar(Scalar(int64_t(2)))),
      wrap_scalar(Scalar(int64_t(0))), std::nullopt);
  return reshape(gather(sorted, 0, reshape(idx, Shape{1})), Shape{});
}

std::pair<Tensor, Tensor> nanmedian_dim(const Tensor& a, int64_t dim, bool keepdim) {
  EMBER_TRACE("aten::nanmedian.dim(Tensor self, int dim, bool keepdim) -> (Tensor, Tensor)",
              nanmedian_dim, a, dim, keepdim);
  if (a.dim() == 0) return {clone(a), zeros(Shape{}, DType::Int64, a.device())};
  dim = wrap_dim(dim, a.dim());
  EMBER_CHECK_INDEX(a.sizes()[dim] > 0, "nanmedian(): Expected reduction dim ", dim,
                    " to have non-zero size.");
  auto [sorted, order] = sort(a, dim);
  Tensor k = is_floating(a.dtype())
                 ? sum(unary(UnaryOp::logical_not, unary(UnaryOp::isnan, a)), Shape{dim}, true)
                 : full(Shape{}, Scalar(a.sizes()[dim]), DType::Int64, a.device());
  Tensor idx = clamp(
      binary(BinaryOp::floor_divide, binary(BinaryOp::sub, k, wrap_scalar(Scalar(int64_t(1)))),
             wrap_scalar(Scalar(int64_t(2)))),
      wrap_scalar(Scalar(int64_t(0))), std::nullopt);
  Shape is = a.sizes();
  is[dim] = 1;
  idx = contiguous(expand(idx, is));
  Tensor v = gather(sorted, dim, idx), i = gather(order, dim, idx);
  if (!keepdim) {
    v = squeeze(v, Shape{dim});
    i = squeeze(i, Shape{dim});
  }
  return {v, i};
}

}  // namespace ember

namespace ember {

std::pair<Tensor, Tensor> histogram(const Tensor& a, const std::optional<Tensor>& bin_edges,
                                    int64_t bins, std::optional<std::pair<double, double>> range,
                                    const std::optional<Tensor>& weight, bool density) {
  EMBER_CHECK(is_floating(a.dtype()),
              "ember.histogram: input tensor and bins tensors should have the same dtype, "
              "and be floating point (got ",
              dtype_name(a.dtype()), ")");
  if (weight)
    EMBER_CHECK(weight->sizes() == a.sizes(),
                "ember.histogram: if weight tensor is provided it should have the same "
                "shape as the input tensor excluding its innermost dimension");
  autograd::GradModeGuard no_grad(false);
  Tensor x = reshape(a, Shape{-1});
  Tensor edges;
  if (bin_edges) {
    EMBER_CHECK(bin_edges->dim() == 1 && bin_edges->numel() >= 1,
                "ember.histogram: bins tensor should have one dimension");
    edges = to_dtype(*bin_edges, a.dtype());
  } else {
    EMBER_CHECK(bins > 0, "ember.histogram(): bins must be > 0, but got ", bins, " for bins");
    double lo = 0, hi = 0;
    if (range) {
      lo = range->first;
      hi = range->second;
      EMBER_CHECK(lo <= hi, "ember.histogram: min should not exceed max, but got min ", lo, " max ",
                  hi);
    } else if (x.numel()) {
      lo = read_double(amin(x));
      hi = read_double(amax(x));
    }
    if (lo == hi) {
      lo -= 0.5;
      hi += 0.5;
    }
    EMBER_CHECK(std::isfinite(lo) && std::isfinite(hi), "ember.histogram: range of [", lo, ", ", hi,
                "] is not finite");
    edges = linspace(lo, hi, bins + 1, a.dtype(), a.device());
  }
  int64_t nb = edges.numel() - 1;
  Tensor hist = zeros(Shape{std::max<int64_t>(nb, 0)}, a.dtype(), a.device());
  if (nb > 0 && x.numel()) {
    Tensor lo_e = select(edges, 0, 0), hi_e = select(edges, 0, nb);
    Tensor inside = bin(B::logical_and, bin(B::ge, x, lo_e), bin(B::le, x, hi_e));
    Tensor pos = binary(B::sub, searchsorted(contiguous(edges), contiguous(x), false, true),
                        wrap_scalar(Scalar(int64_t(1))));
    pos = clamp(pos, wrap_scalar(Scalar(int64_t(0))), wrap_scalar(Scalar(nb - 1)));
    Tensor w = weight ? to_dtype(reshape(*weight, Shape{-1}), a.dtype())
                      : ones(x.sizes(), a.dtype(), a.device());
    w = where(inside, w, zeros(Shape{}, a.dtype(), a.device()));
    hist = index_add(hist, 0, pos, w, Scalar(int64_t(1)));
  }
  if (density && nb > 0) {
    Tensor widths = bin(B::sub, narrow(edges, 0, 1, nb), narrow(edges, 0, 0, nb));
    hist = bin(B::div, hist, bin(B::mul, sum(hist), widths));
  }
  return {hist, edges};
}

Tensor matrix_exp(const Tensor& a) {
  EMBER_TRACE("aten::matrix_exp(Tensor self) -> Tensor", matrix_exp, a);
  EMBER_CHECK(a.dim() >= 2 && a.sizes()[a.dim() - 1] == a.sizes()[a.dim() - 2],
              "linalg.matrix_exp: A must be batches of square matrices, but they are ",
              a.dim() >= 2 ? a.sizes()[a.dim() - 2] : 0, " by ",
              a.dim() >= 1 ? a.sizes().back() : 0, " matrices");
  EMBER_CHECK(is_floating(a.dtype()),
              "linalg.matrix_exp: Expected a floating point tensor as input. Got ",
              dtype_name(a.dtype()));
  int64_t n = a.sizes().back();
  Tensor I = expand(eye(n, std::nullopt, a.dtype(), a.device()), a.sizes());
  if (a.numel() == 0) return clone(I);
  // Scaling and squaring: exp(A) = exp(A / 2^s)^(2^s) with ||A / 2^s||_1 <= 1/2, where an
  // 18-term Taylor series is exact to double precision.
  double nrm;
  {
    autograd::GradModeGuard no_grad(false);
    nrm = read_double(amax(sum(unary(U::abs, a), Shape{-2})));
  }
  int s = 0;
  if (std::isfinite(nrm) && nrm > 0.5) s = int(std::ceil(std::log2(nrm / 0.5)));
  Tensor X = s ? bin(B::div, a, S(std::ldexp(1.0, s))) : a;
  Tensor E = I, term = I;
  for (int k = 1; k <= 18; ++k) {
    term = bin(B::div, matmul(term, X), S(double(k)));
    E = bin(B::add, E, term);
  }
  for (int i = 0; i < s; ++i) E = matmul(E, E);
  return E;
}

}  // namespace ember
