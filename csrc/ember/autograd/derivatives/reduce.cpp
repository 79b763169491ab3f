// Derivatives of the reductions and scans (Note [Reduction gradients]),
// written with ember ops so that create_graph=True differentiates them again.
#include "ember/autograd/derivatives/reduce.h"

#include <algorithm>
#include <cmath>

#include "ember/autograd/derivatives/formula.h"
#include "ember/autograd/record.h"
#include "ember/ops/factory.h"
#include "ember/ops/join.h"
#include "ember/ops/view.h"

namespace ember::autograd {
namespace {

using B = BinaryOp;
using U = UnaryOp;

using namespace formula;
Tensor zero_like(const Tensor& t) { return scalar_tensor(Scalar(0.0), t.dtype(), t.device()); }
Tensor one_like(const Tensor& t) { return scalar_tensor(Scalar(1.0), t.dtype(), t.device()); }

Shape as_shape(const std::vector<int64_t>& v) { return Shape(v.begin(), v.end()); }

/// True when any element of `x` is zero (one host read of a bool).
bool has_zero(const Tensor& x) {
  Tensor r = any(eq(x, S(0.0)));
  if (r.device() != Device()) r = to_device(r, Device());
  return *r.data<bool>();
}

/// flip along one dim (FlipBackward0 records, so formulas built on it differentiate again).
Tensor flip_dim(const Tensor& x, int64_t dim) { return flip(x, Shape{dim}); }

/// [fill, x[0], ..., x[n-2]] along `dim` (written through a view copy, so it records CopySlices).
Tensor shift_in(const Tensor& x, int64_t dim, double fill) {
  const int64_t n = x.sizes()[dim];
  Tensor out = full(x.sizes(), Scalar(fill), x.dtype(), x.device());
  if (n > 1) copy_(narrow(out, dim, 1, n - 1), narrow(x, dim, 0, n - 1));
  return out;
}

/// Positions 0..n-1 along `dim` of a rank-`nd` tensor, shaped [1, .., n, .., 1].
Tensor positions(int64_t n, int64_t dim, int64_t nd, Device device) {
  Shape s(size_t(nd), 1);
  s[dim] = n;
  return reshape(arange(Scalar(int64_t(0)), Scalar(n), Scalar(int64_t(1)), DType::Int64, device),
                 s);
}

/// The elements of `x` equal to the keepdim-shaped `value`, NaN matching NaN.
Tensor equal_or_both_nan(const Tensor& x, const Tensor& value) {
  return lor(eq(x, value), land(unary(U::isnan, x), unary(U::isnan, value)));
}

// Exclusive products prod_{j<k} x_j * prod_{j>k} x_j along `dim`: exact with zeros.
Tensor prod_safe_zeros_backward(const Tensor& grad, const Tensor& x, int64_t dim) {
  if (x.numel() == 0 || x.sizes()[dim] == 1) return expand(grad, x.sizes());
  Tensor before = cumprod(shift_in(x, dim, 1.0), dim);
  Tensor after = flip_dim(cumprod(shift_in(flip_dim(x, dim), dim, 1.0), dim), dim);
  return mul(grad, mul(before, after));
}

// O(n) cumprod gradient with zeros, for the first derivative only: before the
// first zero z, sum_{i>=k} g_i out_i / x_k; at z, the products with x_z as 1;
// after z, 0.
Tensor cumprod_backward_zeros_linear(const Tensor& g, const Tensor& x, int64_t dim,
                                     const Tensor& out) {
  Tensor is_zero = eq(x, S(0.0));
  Tensor nzeros = cumsum(is_zero, dim);
  Tensor before = eq(nzeros, S(0.0));
  Tensor first = land(is_zero, eq(nzeros, S(1.0)));
  Tensor a = div(reversed_cumsum(mul(g, out), dim), where(before, x, one_like(x)));
  Tensor b = reversed_cumsum(mul(g, cumprod(where(first, one_like(x), x), dim)), dim);
  return where(before, a, where(first, b, zero_like(a)));
}

// O(n^2) cumprod gradient that is exact as a function of x (used under grad
// mode): grad_k = sum_{i>=k} g_i prod_{j<=i, j!=k} x_j, the products taken as
// cumprods of x with x_k replaced by 1, one row per k.
Tensor cumprod_backward_zeros_quadratic(const Tensor& g, const Tensor& x, int64_t dim) {
  const int64_t n = x.sizes()[dim];
  Tensor xm = movedim(x, Shape{dim}, Shape{-1});
  Tensor gm = movedim(g, Shape{dim}, Shape{-1});
  Tensor idx = arange(Scalar(int64_t(0)), Scalar(n), Scalar(int64_t(1)), DType::Int64, x.device());
  Tensor k = unsqueeze(idx, 1), j = unsqueeze(idx, 0);
  Tensor rows = where(eq(k, j), one_like(x), unsqueeze(xm, -2));  // [..., k, j]
  Tensor terms = mul(cumprod(rows, -1), unsqueeze(gm, -2));       // [..., k, i]
  Tensor r = sum(where(binary(B::ge, j, k), terms, zero_like(terms)), Shape{-1});
  return movedim(r, Shape{-1}, Shape{dim});
}

Tensor sum_backward(const Tensor& g, const ReduceInfo& r) {
  // An empty input gets a fresh empty gradient, never a stride-0 view of one
  // (the overlap check of in-place accumulation rejects those).
  if (g.numel() == 0 || r.count == 0) return zeros(r.in_sizes, g.dtype(), g.device());
  return expand(restore_reduced_dims(g, r), r.in_sizes);
}

// (grad / ties) * mask, as PyTorch's scale_grad_by_count (a NaN row gets NaN).
Tensor amax_backward(const Tensor& g, const Tensor& x, const Tensor& result, const ReduceInfo& r) {
  Tensor mask = eq(x, restore_reduced_dims(result, r));
  Tensor count = sum(mask, as_shape(r.rdims), true);
  return mul(div(restore_reduced_dims(g, r), count), as_float(mask, g));
}

Tensor evenly_distribute_backward(const Tensor& g, const Tensor& x, const Tensor& value) {
  Tensor mask = equal_or_both_nan(x, value);
  return where(mask, div(g, sum(mask)), zero_like(g));
}

Tensor value_selecting_backward(const Tensor& g, const Tensor& indices, const Shape& in_sizes,
                                int64_t dim, bool keepdim) {
  const int64_t nd = int64_t(in_sizes.size());
  if (nd == 0) return g;
  Tensor gk = keepdim ? g : unsqueeze(g, dim);
  Tensor ik = keepdim ? indices : unsqueeze(indices, dim);
  Tensor mask = eq(positions(in_sizes[dim], dim, nd, g.device()), ik);
  return expand(where(mask, gk, zero_like(gk)), in_sizes);
}

Tensor std_backward(const Tensor& g, const Tensor& result, const Tensor& x, const ReduceInfo& r,
                    double correction) {
  // grad / (2 std), 0 where std == 0 (as PyTorch, a constant input gets a zero gradient).
  Tensor gs = where(eq(result, S(0.0)), zero_like(g), div(g, mul(result, S(2.0))));
  return var_backward(restore_reduced_dims(gs, r), x, r, correction);
}

Tensor mean_backward(const Tensor& g, const ReduceInfo& r) {
  return div(sum_backward(g, r), S(double(r.count)));
}

}  // namespace

ReduceInfo reduce_info(const Tensor& a, const OptDims& dims, bool keepdim) {
  ReduceInfo r;
  r.in_sizes = a.sizes();
  r.keepdim = keepdim;
  r.in_dtype = a.dtype();
  const int64_t nd = a.dim();
  if (nd > 0) {
    if (!dims || dims->empty()) {
      for (int64_t d = 0; d < nd; ++d) r.rdims.push_back(d);
    } else {
      for (int64_t d : *dims) r.rdims.push_back(wrap_dim(d, nd));
      std::sort(r.rdims.begin(), r.rdims.end());
    }
  }
  for (int64_t d : r.rdims) r.count *= a.sizes()[d];
  return r;
}

Tensor restore_reduced_dims(const Tensor& g, const ReduceInfo& r) {
  if (r.keepdim || g.dim() == int64_t(r.in_sizes.size())) return g;
  Tensor t = g;
  for (int64_t d : r.rdims) t = unsqueeze(t, d);
  return t;
}

Tensor reversed_cumsum(const Tensor& w, int64_t dim) {
  return flip_dim(cumsum(flip_dim(w, dim), dim), dim);
}

Tensor prod_backward(const Tensor& grad, const Tensor& x, const Tensor& result,
                     std::optional<int64_t> dim) {
  if (x.dim() == 0) return grad;
  if (!has_zero(x)) return mul(grad, div(result, x));
  if (!grad_enabled()) {
    // First derivative only: rows without zeros get grad * result / x, a row's
    // only zero gets the product of the others, rows with more zeros get 0.
    Tensor is_zero = eq(x, S(0.0));
    Tensor nz = dim ? sum(is_zero, Shape{*dim}, true) : sum(is_zero);
    Tensor safe = where(is_zero, one_like(x), x);
    Tensor others = dim ? prod(safe, *dim, true) : prod(safe);
    Tensor lone = land(is_zero, eq(nz, S(1.0)));
    Tensor plain = mul(grad, div(result, safe));
    return where(eq(nz, S(0.0)), plain, where(lone, mul(grad, others), zero_like(plain)));
  }
  if (dim) return prod_safe_zeros_backward(grad, x, *dim);
  Tensor flat = reshape(x, Shape{x.numel()});
  return reshape(prod_safe_zeros_backward(reshape(grad, Shape{1}), flat, 0), x.sizes());
}

Tensor cumprod_backward(const Tensor& grad, const Tensor& x, int64_t dim, const Tensor& output) {
  if (x.numel() <= 1 || x.sizes()[dim] == 1) return grad;
  if (!has_zero(x)) return div(reversed_cumsum(mul(output, grad), dim), x);
  if (!grad_enabled()) return cumprod_backward_zeros_linear(grad, x, dim, output);
  return cumprod_backward_zeros_quadratic(grad, x, dim);
}

Tensor var_backward(const Tensor& grad, const Tensor& x, const ReduceInfo& r, double correction) {
  const double scale = 2.0 / std::max(0.0, double(r.count) - correction);
  Tensor centered = minus(x, mean(x, as_shape(r.rdims), true));
  return mul(mul(restore_reduced_dims(grad, r), S(scale)), centered);
}

Tensor norm_backward(const Tensor& grad, const Tensor& x, const Tensor& norm, double p,
                     const ReduceInfo& r) {
  Tensor g = restore_reduced_dims(grad, r), nk = restore_reduced_dims(norm, r);
  Tensor zero = zero_like(g);
  if (p == 0.0) return Tensor();
  if (p == 1.0) return mul(unary(U::sign, x), g);
  if (p == 2.0) return mul(g, where(eq(nk, S(0.0)), zero, div(x, nk)));
  if (std::isinf(p)) {
    // Ties of |x| with the norm share the gradient; NaNs count as ties.
    Tensor ax = unary(U::abs, x);
    Tensor mask = lor(eq(ax, nk), unary(U::isnan, ax));
    Tensor share = mul(div(g, sum(mask, as_shape(r.rdims), true)), as_float(mask, g));
    return mul(unary(U::sign, x), share);
  }
  Tensor ax = unary(U::abs, x);
  if (p < 1.0) {
    Tensor scaled =
        mul(unary(U::sign, x), where(eq(x, S(0.0)), zero_like(x), binary(B::pow, ax, S(p - 1))));
    return mul(mul(scaled, g), binary(B::pow, nk, S(1 - p)));
  }
  Tensor scaled = p < 2.0 ? mul(unary(U::sign, x), binary(B::pow, ax, S(p - 1)))
                          : mul(x, binary(B::pow, ax, S(p - 2)));
  Tensor scale = where(eq(nk, S(0.0)), zero, div(g, binary(B::pow, nk, S(p - 1))));
  return mul(scaled, scale);
}

// ---- record calls ---------------------------------------------------------------------------

void record_sum(const Tensor& in, const Tensor& out, const OptDims& dims, bool keepdim,
                bool is_mean) {
  if (!is_floating(out.dtype())) return;
  const char* name = is_mean ? (dims ? "MeanBackward1" : "MeanBackward0")
                             : (dims ? "SumBackward1" : "SumBackward0");
  ReduceInfo r = reduce_info(in, dims, keepdim);
  record(name, {&in}, out, [r, is_mean](LambdaNode&, variable_list&& g) -> variable_list {
    return {cast_grad(is_mean ? mean_backward(g[0], r) : sum_backward(g[0], r), r.in_dtype)};
  });
}

void record_prod(const Tensor& in, const Tensor& out, std::optional<int64_t> dim, bool keepdim) {
  if (!is_floating(out.dtype())) return;
  ReduceInfo r = reduce_info(in, dim ? OptDims(Shape{*dim}) : std::nullopt, keepdim);
  std::optional<int64_t> d;
  if (dim && in.dim() > 0) d = wrap_dim(*dim, in.dim());
  auto node = record(dim ? "ProdBackward1" : "ProdBackward0", {&in}, out,
                     [r, d](LambdaNode& n, variable_list&& g) -> variable_list {
                       Tensor x = n.unpack(0), result = n.unpack(1);
                       x = cast_grad(x, result.dtype());
                       Tensor gx = prod_backward(restore_reduced_dims(g[0], r), x,
                                                 restore_reduced_dims(result, r), d);
                       return {cast_grad(gx, r.in_dtype)};
                     });
  node->saved.emplace_back(in, false);
  node->saved.emplace_back(out, true);
}

void record_amax(const Tensor& in, const Tensor& out, const OptDims& dims, bool keepdim,
                 bool is_max) {
  if (!is_floating(out.dtype())) return;
  ReduceInfo r = reduce_info(in, dims, keepdim);
  auto node = record(is_max ? "AmaxBackward0" : "AminBackward0", {&in}, out,
                     [r](LambdaNode& n, variable_list&& g) -> variable_list {
                       return {amax_backward(g[0], n.unpack(0), n.unpack(1), r)};
                     });
  node->saved.emplace_back(in, false);
  node->saved.emplace_back(out, true);
}

void record_evenly(const char* name, const Tensor& in, const Tensor& out) {
  if (!is_floating(out.dtype())) return;
  auto node = record(name, {&in}, out, [](LambdaNode& n, variable_list&& g) -> variable_list {
    return {evenly_distribute_backward(g[0], n.unpack(0), n.unpack(1))};
  });
  node->saved.emplace_back(in, false);
  node->saved.emplace_back(out, true);
}

void record_value_selecting(const char* name, const Tensor& in, const Tensor& values,
                            const Tensor& indices, int64_t dim, bool keepdim) {
  if (!is_floating(values.dtype())) return;
  const int64_t d = in.dim() ? wrap_dim(dim, in.dim()) : 0;
  Shape sizes = in.sizes();
  auto node = record(name, {&in}, values,
                     [sizes, d, keepdim](LambdaNode& n, variable_list&& g) -> variable_list {
                       return {value_selecting_backward(g[0], n.unpack(0), sizes, d, keepdim)};
                     });
  node->saved.emplace_back(indices, false);
}

void record_var(const Tensor& in, const Tensor& out, const OptDims& dims, double correction,
                bool keepdim, bool is_std) {
  if (!is_floating(out.dtype())) return;
  ReduceInfo r = reduce_info(in, dims, keepdim);
  auto node = record(is_std ? "StdBackward0" : "VarBackward0", {&in}, out,
                     [r, correction, is_std](LambdaNode& n, variable_list&& g) -> variable_list {
                       Tensor x = n.unpack(0);
                       if (is_std) return {std_backward(g[0], n.unpack(1), x, r, correction)};
                       return {var_backward(g[0], x, r, correction)};
                     });
  node->saved.emplace_back(in, false);
  node->saved.emplace_back(is_std ? out : Tensor(), true);
}

void record_var_mean(const Tensor& in, const Tensor& var_or_std, const Tensor& mean,
                     const OptDims& dims, double correction, bool keepdim, bool is_std) {
  if (!is_floating(mean.dtype())) return;
  ReduceInfo r = reduce_info(in, dims, keepdim);
  auto node =
      record_multi(is_std ? "StdMeanBackward0" : "VarMeanBackward0", {in}, {var_or_std, mean},
                   [r, correction, is_std](LambdaNode& n, variable_list&& g) -> variable_list {
                     Tensor x = n.unpack(0), gx;
                     if (g[0].defined())
                       gx = is_std ? std_backward(g[0], n.unpack(1), x, r, correction)
                                   : var_backward(g[0], x, r, correction);
                     if (g.size() > 1 && g[1].defined()) {
                       Tensor gm = mean_backward(g[1], r);
                       gx = gx.defined() ? binary(B::add, gx, gm) : gm;
                     }
                     return {gx};
                   });
  node->saved.emplace_back(in, false);
  node->saved.emplace_back(is_std ? var_or_std : Tensor(), true);
}

void record_norm(const Tensor& in, const Tensor& out, double p, const OptDims& dims, bool keepdim,
                 bool has_dtype) {
  if (!is_floating(out.dtype())) return;
  ReduceInfo r = reduce_info(in, dims, keepdim);
  auto node = record(has_dtype ? "NormBackward3" : "NormBackward1", {&in}, out,
                     [r, p](LambdaNode& n, variable_list&& g) -> variable_list {
                       Tensor norm = n.unpack(1);
                       Tensor x = cast_grad(n.unpack(0), norm.dtype());
                       return {cast_grad(norm_backward(g[0], x, norm, p, r), r.in_dtype)};
                     });
  node->saved.emplace_back(in, false);
  node->saved.emplace_back(out, true);
}

void record_logsumexp(const Tensor& in, const Tensor& out, const OptDims& dims, bool keepdim) {
  if (!is_floating(out.dtype())) return;
  ReduceInfo r = reduce_info(in, dims, keepdim);
  auto node = record("LogsumexpBackward0", {&in}, out,
                     [r](LambdaNode& n, variable_list&& g) -> variable_list {
                       // grad * softmax(x): exp(x - logsumexp) never overflows.
                       Tensor x = n.unpack(0), result = restore_reduced_dims(n.unpack(1), r);
                       Tensor w = unary(U::exp, minus(x, result));
                       return {cast_grad(mul(restore_reduced_dims(g[0], r), w), r.in_dtype)};
                     });
  node->saved.emplace_back(in, false);
  node->saved.emplace_back(out, true);
}

void record_cumsum(const Tensor& in, const Tensor& out, int64_t dim) {
  if (!is_floating(out.dtype())) return;
  const int64_t d = in.dim() ? wrap_dim(dim, in.dim()) : 0;
  const DType in_dtype = in.dtype();
  record("CumsumBackward0", {&in}, out,
         [d, in_dtype](LambdaNode&, variable_list&& g) -> variable_list {
           Tensor gx = g[0];
           if (gx.dim() > 0 && gx.numel() > 1 && gx.sizes()[d] > 1) gx = reversed_cumsum(gx, d);
           return {cast_grad(gx, in_dtype)};
         });
}

void record_cumprod(const Tensor& in, const Tensor& out, int64_t dim) {
  if (!is_floating(out.dtype())) return;
  const int64_t d = in.dim() ? wrap_dim(dim, in.dim()) : 0;
  const DType in_dtype = in.dtype();
  auto node = record("CumprodBackward0", {&in}, out,
                     [d, in_dtype](LambdaNode& n, variable_list&& g) -> variable_list {
                       Tensor output = n.unpack(1);
                       Tensor x = cast_grad(n.unpack(0), output.dtype());
                       if (x.dim() == 0) return {cast_grad(g[0], in_dtype)};
                       return {cast_grad(cumprod_backward(g[0], x, d, output), in_dtype)};
                     });
  node->saved.emplace_back(in, false);
  node->saved.emplace_back(out, true);
}

}  // namespace ember::autograd
