// Derivatives of cdist, written with ember ops so create_graph differentiates them
// again. With d = x1_i - x2_j (per feature) and dist_ij the p-norm of d, the
// gradient of x1_i sums t_ij over j and that of x2_j sums -t_ij over i, where
// (PyTorch's _cdist_backward, per p):
//   p = 0:      t = 0
//   p = 1:      t = g * sign(d)
//   p = 2:      t = g * d / dist                      (0 where dist = 0)
//   p = inf:    t = g * sign(d) * (|d| == dist)
//   otherwise:  t = g * sign(d) |d|^(p-1) / dist^(p-1)  (0 where dist = 0; for p < 1
//               also where d = 0)
// The matrix-product path (PyTorch's _euclidean_dist_backward) uses r = g / dist
// (0 where dist = 0): grad x1 = x1 * sum_j r - r @ x2, grad x2 = x2 * sum_i r - r^T @ x1.
// Divisions by a zero distance divide by 1 instead and are then masked, so neither
// the gradient nor its own derivative sees a NaN there.
#include "ember/autograd/derivatives/distance.h"
#include "ember/autograd/derivatives/formula.h"

#include <cmath>

#include "ember/autograd/record.h"
#include "ember/ops/factory.h"
#include "ember/ops/linalg.h"
#include "ember/ops/reduce.h"
#include "ember/ops/view.h"

namespace ember::autograd {
namespace {

using B = BinaryOp;
using U = UnaryOp;
using namespace formula;  // S, plus, minus, mul, div, bin, un

/// num / den where den != 0, else 0.
Tensor masked_div(const Tensor& num, const Tensor& den) {
  Tensor zero = binary(B::eq, den, S(0.0));
  return where(zero, S(0.0), div(num, where(zero, S(1.0), den)));
}

Tensor mT(const Tensor& a) { return transpose(a, -2, -1); }

// t of the header comment, shape (..., P, R, M).
Tensor cdist_terms(const Tensor& g, const Tensor& x1, const Tensor& x2, double p,
                   const Tensor& res) {
  Tensor d = binary(B::sub, unsqueeze(x1, -2), unsqueeze(x2, -3));
  Tensor gg = unsqueeze(g, -1), dist = unsqueeze(res, -1);
  if (p == 1) return mul(unary(U::sign, d), gg);
  if (p == 2) return mul(d, masked_div(gg, dist));
  if (std::isinf(p)) {
    Tensor at_max = binary(B::eq, unary(U::abs, d), dist);
    return mul(mul(unary(U::sign, d), at_max), gg);
  }
  Tensor ad = unary(U::abs, d);
  if (p < 1) ad = where(binary(B::eq, d, S(0.0)), S(1.0), ad);  // masked below by sign(d) = 0
  Tensor num = mul(unary(U::sign, d), binary(B::pow, ad, S(p - 1)));
  Tensor zero = binary(B::eq, dist, S(0.0));
  Tensor den = binary(B::pow, where(zero, S(1.0), dist), S(p - 1));
  return where(zero, S(0.0), mul(div(num, den), gg));
}

}  // namespace

void record_cdist(const Tensor& x1, const Tensor& x2, const Tensor& out, double p) {
  const Shape s1 = x1.sizes(), s2 = x2.sizes();
  auto node =
      record("CdistBackward0", {&x1, &x2}, out,
             [s1, s2, p](LambdaNode& n, variable_list&& g) -> variable_list {
               Tensor a = n.unpack(0), b = n.unpack(1), res = n.unpack(2);
               if (p == 0)
                 return {zeros(s1, a.dtype(), a.device()), zeros(s2, b.dtype(), b.device())};
               Tensor t = cdist_terms(g[0], a, b, p, res);
               Tensor ga, gb;
               if (n.should_compute_output(0)) ga = sum_to_size(sum(t, Shape{-2}), s1);
               if (n.should_compute_output(1))
                 gb = sum_to_size(unary(U::neg, sum(t, Shape{-3})), s2);
               return {ga, gb};
             });
  node->saved.emplace_back(x1, false);
  node->saved.emplace_back(x2, false);
  node->saved.emplace_back(out, true);
}

void record_euclidean_dist(const Tensor& x1, const Tensor& x2, const Tensor& out) {
  const Shape s1 = x1.sizes(), s2 = x2.sizes();
  auto node = record(
      "EuclideanDistBackward0", {&x1, &x2}, out,
      [s1, s2](LambdaNode& n, variable_list&& g) -> variable_list {
        Tensor a = n.unpack(0), b = n.unpack(1), res = n.unpack(2);
        Tensor r = masked_div(g[0], res);
        Tensor ga, gb;
        if (n.should_compute_output(0))
          ga = sum_to_size(binary(B::sub, mul(a, sum(r, Shape{-1}, true)), matmul(r, b)), s1);
        if (n.should_compute_output(1))
          gb = sum_to_size(
              binary(B::sub, mul(b, unsqueeze(sum(r, Shape{-2}), -1)), matmul(mT(r), a)), s2);
        return {ga, gb};
      });
  node->saved.emplace_back(x1, false);
  node->saved.emplace_back(x2, false);
  node->saved.emplace_back(out, true);
}

}  // namespace ember::autograd
