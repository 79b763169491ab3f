// Random fills beyond ops/random.h: geometric_, log_normal_, cauchy_ and poisson.
#pragma once
#include "ember/core/tensor.h"
#include "ember/ops/random.h"

namespace ember {

/// Trials up to the first success of Bernoulli(p), p in (0, 1): values 1, 2, ...
const Tensor& geometric_(const Tensor& self, double p, const Generator& gen = nullptr);
/// exp(Normal(mean, std)).
const Tensor& log_normal_(const Tensor& self, double mean = 1, double std = 2,
                          const Generator& gen = nullptr);
/// Cauchy(median, sigma).
const Tensor& cauchy_(const Tensor& self, double median = 0, double sigma = 1,
                      const Generator& gen = nullptr);
/// A Poisson draw per element with the element as its rate (same dtype as `rates`).
Tensor poisson(const Tensor& rates, const Generator& gen = nullptr);

}  // namespace ember
