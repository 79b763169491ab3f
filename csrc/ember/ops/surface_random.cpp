// Random fills beyond ops/random.cpp's kernels, as transforms of its uniform and
// normal draws (so they use the same generators and are reproducible with them):
// geometric_, log_normal_, cauchy_ and poisson.
#include <cmath>

#include "ember/autograd/derivatives/formula.h"
#include "ember/autograd/record.h"
#include "ember/jit/trace_hook.h"
#include "ember/ops/random.h"
#include "ember/ops/reduce.h"
#include "ember/ops/surface_random.h"

namespace ember {
namespace {

using B = BinaryOp;
using U = UnaryOp;
using namespace autograd::formula;  // S, plus, minus, mul, div, bin, un

const Tensor& write_fill(const Tensor& self, const Tensor& values, const char* op) {
  autograd::check_inplace(self, op);
  autograd::GradModeGuard no_grad(false);
  return copy_(self, values);
}

Tensor uniform_like(const Tensor& self, const Generator& gen) {
  Tensor u = empty(self.sizes(), DType::Float64, self.device());
  uniform_(u, 0.0, 1.0, gen);
  return u;
}

}  // namespace

const Tensor& geometric_(const Tensor& self, double p, const Generator& gen) {
  EMBER_TRACE_RANDOM("aten::geometric_(Tensor self, float p, Generator? generator=None) -> Tensor",
                     geometric_, self, p, gen);
  EMBER_CHECK(p > 0 && p < 1, "geometric_ expects p to be in (0, 1), but got p=", p);
  autograd::GradModeGuard no_grad(false);
  // The number of Bernoulli(p) trials up to the first success: ceil(log(1 - u) / log(1 - p)).
  Tensor u = uniform_like(self, gen);
  Tensor k = unary(U::ceil, binary(B::div, unary(U::log1p, unary(U::neg, u)), S(std::log1p(-p))));
  return write_fill(self, clamp(k, S(1.0), std::nullopt), "geometric_");
}

const Tensor& log_normal_(const Tensor& self, double mean, double std, const Generator& gen) {
  EMBER_TRACE_RANDOM(
      "aten::log_normal_(Tensor self, float mean=1, float std=2, Generator? generator=None) -> "
      "Tensor",
      log_normal_, self, mean, std, gen);
  EMBER_CHECK(is_floating(self.dtype()), "log_normal_ expects a floating point tensor, but got ",
              dtype_name(self.dtype()));
  EMBER_CHECK(std > 0, "log_normal_ expects std > 0.0, but found std=", std);
  autograd::GradModeGuard no_grad(false);
  Tensor z = empty(self.sizes(), DType::Float64, self.device());
  normal_(z, mean, std, gen);
  return write_fill(self, unary(U::exp, z), "log_normal_");
}

const Tensor& cauchy_(const Tensor& self, double median, double sigma, const Generator& gen) {
  EMBER_TRACE_RANDOM(
      "aten::cauchy_(Tensor self, float median=0, float sigma=1, Generator? generator=None) -> "
      "Tensor",
      cauchy_, self, median, sigma, gen);
  EMBER_CHECK(is_floating(self.dtype()), "cauchy_ expects a floating point tensor, but got ",
              dtype_name(self.dtype()));
  EMBER_CHECK(sigma > 0, "cauchy_ expects sigma > 0.0, but found sigma=", sigma);
  autograd::GradModeGuard no_grad(false);
  Tensor u = uniform_like(self, gen);
  Tensor c = binary(
      B::add, S(median),
      binary(B::mul, S(sigma), unary(U::tan, binary(B::mul, S(M_PI), binary(B::sub, u, S(0.5))))));
  return write_fill(self, c, "cauchy_");
}

Tensor poisson(const Tensor& rates, const Generator& gen) {
  EMBER_TRACE_RANDOM("aten::poisson(Tensor rates, Generator? generator=None) -> Tensor", poisson,
                     rates, gen);
  EMBER_CHECK(is_floating(rates.dtype()), "\"poisson_cpu\" not implemented for '",
              dtype_name(rates.dtype()), "'");
  autograd::GradModeGuard no_grad(false);
  Tensor lam = to_dtype(rates, DType::Float64);
  if (lam.numel()) {
    Tensor bad = to_device(
        any(binary(B::logical_or, binary(B::lt, lam, S(0.0)), unary(U::isnan, lam))), Device());
    EMBER_CHECK(!*reinterpret_cast<const bool*>(bad.data_ptr()),
                "invalid Poisson rate, expected rate to be non-negative");
  }
  // Inversion by sequential search, for all elements at once; rates above 500 are split
  // into Poisson(500) parts (a sum of Poissons is Poisson), so exp(-rate) never underflows.
  Tensor total = zeros(lam.sizes(), DType::Float64, lam.device());
  Tensor left = lam;
  for (int part = 0; part < 1000000; ++part) {
    Tensor any_left = to_device(any(binary(B::gt, left, S(0.0))), Device());
    if (lam.numel() == 0 || !*reinterpret_cast<const bool*>(any_left.data_ptr())) break;
    Tensor l = clamp(left, std::nullopt, S(500.0));
    left = binary(B::sub, left, l);
    Tensor u = uniform_like(lam, gen);
    Tensor p = unary(U::exp, unary(U::neg, l)), F = p,
           k = zeros(lam.sizes(), DType::Float64, lam.device());
    for (int it = 0; it < 100000; ++it) {
      Tensor more = binary(B::gt, u, F);
      Tensor m = to_device(any(more), Device());
      if (!*reinterpret_cast<const bool*>(m.data_ptr())) break;
      k = binary(B::add, k, to_dtype(more, DType::Float64));
      p = where(more, binary(B::div, binary(B::mul, p, l), k), p);
      F = where(more, binary(B::add, F, p), F);
      // Round-off can stall F just below u far in the tail: stop those elements.
      u = where(binary(B::logical_and, more, binary(B::eq, p, S(0.0))), S(0.0), u);
    }
    total = binary(B::add, total, k);
  }
  return to_dtype(total, rates.dtype());
}

}  // namespace ember
