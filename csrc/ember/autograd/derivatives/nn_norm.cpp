// Derivatives of the fused normalizations. First-order backward runs the fused
// kernels (row_norm_backward, batch_norm_backward); under create_graph the same
// formulas run in recorded ops with the statistics recomputed from x, so the
// result differentiates again, exactly.
#include "ember/autograd/derivatives/nn_norm.h"
#include "ember/autograd/derivatives/formula.h"

#include "ember/autograd/record.h"
#include "ember/kernels/stubs/nn_norm.h"
#include "ember/ops/ops.h"
#include "ember/ops/reduce.h"
#include "ember/ops/view.h"

namespace ember::autograd {
namespace {
using B = BinaryOp;
using U = UnaryOp;
using namespace formula;  // S, plus, minus, mul, div, bin, un

/// rstd * (gh - mean(gh) - xhat * mean(gh * xhat)) over `dims`, in recorded ops.
Tensor normalized_grad(const Tensor& gh, const Tensor& xhat, const Tensor& rstd,
                       const Shape& dims) {
  Tensor mg = mean(gh, dims, true), mgx = mean(mul(gh, xhat), dims, true);
  return mul(rstd, minus(minus(gh, mg), mul(xhat, mgx)));
}

Shape ncs(const Tensor& x) {
  int64_t s = 1;
  for (int64_t d = 2; d < x.dim(); ++d) s *= x.sizes()[d];
  return Shape{x.sizes()[0], x.sizes()[1], s};
}

}  // namespace

void record_row_norm(const char* name, const Tensor& x, const Tensor& w, const Tensor& b,
                     const Tensor& out, const Tensor& mean_t, const Tensor& rstd_t,
                     const RowNormLayout& L) {
  const Shape w_sizes = w.defined() ? w.sizes() : Shape{};
  const Shape b_sizes = b.defined() ? b.sizes() : Shape{};
  auto node = record(
      name, {&x, &w, &b}, out,
      [L, mean_t, rstd_t, w_sizes, b_sizes](LambdaNode& n, variable_list&& g) -> variable_list {
        Tensor x = n.unpack(0), w = n.unpack(1);
        const bool want_gx = n.should_compute_output(0), want_gw = n.should_compute_output(1),
                   want_gb = n.should_compute_output(2);
        if (x.numel() > 0 && !grad_enabled() && L.affine == L.rows) {
          // Layer norm, first order: one fused pass for gx and the parameter gradients.
          const int64_t C = L.rows[1];
          Tensor gx_r = want_gx ? empty(L.rows, x.dtype(), x.device()) : Tensor();
          Tensor gw_k = want_gw ? empty(Shape{C}, x.dtype(), x.device()) : Tensor();
          Tensor gb_k = want_gb ? empty(Shape{C}, x.dtype(), x.device()) : Tensor();
          Tensor wk = w.defined() ? contiguous(reshape(w, Shape{C})) : Tensor();
          row_norm_backward_stub.get(x.device())(
              gx_r, gw_k, gb_k, contiguous(reshape(g[0], L.rows)), contiguous(reshape(x, L.rows)),
              mean_t, rstd_t, wk);
          return {want_gx ? reshape(gx_r, x.sizes()) : Tensor(),
                  want_gw ? reshape(gw_k, w_sizes) : Tensor(),
                  want_gb ? reshape(gb_k, b_sizes) : Tensor()};
        }
        Tensor ga = reshape(g[0], L.affine);
        Tensor gh = w.defined() ? mul(ga, reshape(w, L.param_view)) : ga;
        Tensor gx, xhat;
        if (x.numel() == 0) {
          gx = zeros(x.sizes(), x.dtype(), x.device());
          xhat = reshape(gx, L.affine);
        } else if (grad_enabled()) {
          Tensor xr = reshape(x, L.rows);
          Tensor mu = mean(xr, Shape{1}, true);
          Tensor rs = unary(U::rsqrt, plus(var(xr, Shape{1}, 0, true), S(L.eps)));
          Tensor xhat_r = mul(minus(xr, mu), rs);
          gx = reshape(normalized_grad(reshape(gh, L.rows), xhat_r, rs, Shape{1}), x.sizes());
          xhat = reshape(xhat_r, L.affine);
        } else {
          Tensor xr = contiguous(reshape(x, L.rows));
          Tensor gx_r = empty(L.rows, x.dtype(), x.device());
          row_norm_backward_stub.get(x.device())(gx_r, Tensor(), Tensor(),
                                                 contiguous(reshape(gh, L.rows)), xr, mean_t,
                                                 rstd_t, Tensor());
          gx = reshape(gx_r, x.sizes());
          if (want_gw)
            xhat = reshape(mul(minus(xr, unsqueeze(mean_t, 1)), unsqueeze(rstd_t, 1)), L.affine);
        }
        Tensor gw, gb;
        if (n.should_compute_output(1)) gw = reshape(sum(mul(ga, xhat), L.param_dims), w_sizes);
        if (n.should_compute_output(2)) gb = reshape(sum(ga, L.param_dims), b_sizes);
        return {n.should_compute_output(0) ? gx : Tensor(), gw, gb};
      });
  node->saved.emplace_back(x, false);
  node->saved.emplace_back(w, false);
}

BatchNormGrads batch_norm_backward(const Tensor& g, const Tensor& x, const Tensor& w,
                                   const Tensor& mean_t, const Tensor& invstd, bool training) {
  const Shape s = ncs(x);
  const int64_t C = s[1];
  const double M = double(s[0]) * double(s[2]);
  Tensor x3 = contiguous(reshape(x, s)), g3 = contiguous(reshape(g, s));
  Tensor sum_g = zeros(Shape{C}, x.dtype(), x.device());
  Tensor sum_dot = zeros(Shape{C}, x.dtype(), x.device());
  if (x.numel() > 0) channel_grad_sums_stub.get(x.device())(sum_g, sum_dot, g3, x3, mean_t);
  Tensor a = contiguous(w.defined() ? mul(invstd, w) : invstd);
  Tensor gx3 = empty(s, x.dtype(), x.device());
  if (x.numel() > 0) {
    if (training) {
      Tensor k2 = contiguous(unary(U::neg, div(mul(mul(a, mul(invstd, invstd)), sum_dot), S(M))));
      Tensor k3 = contiguous(minus(unary(U::neg, div(mul(a, sum_g), S(M))), mul(mean_t, k2)));
      channel_affine_stub.get(x.device())(gx3, g3, a, x3, k2, k3);
    } else {
      channel_affine_stub.get(x.device())(gx3, g3, a, Tensor(), Tensor(),
                                          zeros(Shape{C}, x.dtype(), x.device()));
    }
  }
  return {reshape(gx3, x.sizes()), mul(sum_dot, invstd), sum_g};
}

void record_batch_norm(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& out,
                       const Tensor& mean_t, const Tensor& invstd, bool training, double eps) {
  auto node =
      record("NativeBatchNormBackward0", {&x, &w, &b}, out,
             [mean_t, invstd, training, eps](LambdaNode& n, variable_list&& g) -> variable_list {
               Tensor x = n.unpack(0), w = n.unpack(1);
               Tensor gx, gw, gb;
               if (grad_enabled()) {
                 const Shape s = ncs(x);
                 const Shape dims{0, 2}, cv{s[1], 1};
                 Tensor x3 = reshape(x, s), g3 = reshape(g[0], s);
                 Tensor wv = w.defined() ? reshape(w, cv) : Tensor();
                 Tensor xhat;
                 if (training) {
                   Tensor mu = mean(x3, dims, true);
                   Tensor rs = unary(U::rsqrt, plus(var(x3, dims, 0, true), S(eps)));
                   xhat = mul(minus(x3, mu), rs);
                   Tensor gh = wv.defined() ? mul(g3, wv) : g3;
                   gx = normalized_grad(gh, xhat, rs, dims);
                 } else {
                   Tensor rs = reshape(invstd, cv);
                   xhat = mul(minus(x3, reshape(mean_t, cv)), rs);
                   gx = mul(g3, wv.defined() ? mul(wv, rs) : rs);
                 }
                 gx = reshape(gx, x.sizes());
                 if (n.should_compute_output(1)) gw = sum(mul(g3, xhat), dims);
                 if (n.should_compute_output(2)) gb = sum(g3, dims);
               } else {
                 BatchNormGrads r = batch_norm_backward(g[0], x, w, mean_t, invstd, training);
                 gx = r.gx;
                 gw = r.gw;
                 gb = r.gb;
               }
               return {n.should_compute_output(0) ? gx : Tensor(),
                       n.should_compute_output(1) ? gw : Tensor(),
                       n.should_compute_output(2) ? gb : Tensor()};
             });
  node->saved.emplace_back(x, false);
  node->saved.emplace_back(w, false);
}

}  // namespace ember::autograd
