// Kernel stubs of the normalization family: per-row statistics (layer, group and
// instance norm) and per-channel statistics (batch norm).
#pragma once
#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"

namespace ember {

/// Rows of x (R, L) contiguous: mean[r], rstd[r] = 1 / sqrt(biased var + eps), and
/// y[r, j] = (x[r, j] - mean[r]) * rstd[r] (* w[j] + b[j] when w / b are defined: the
/// layer-norm affine, fused). All contiguous, x's dtype.
using RowNormKernel = void (*)(const Tensor& y, const Tensor& mean, const Tensor& rstd,
                               const Tensor& x, const Tensor& w, const Tensor& b, double eps);
extern DispatchStub<RowNormKernel> row_norm_stub;
/// The row normalization's backward: with gh = g * w[j] (g when w is undefined) and
/// xhat = (x - mean) * rstd, gx[r] = rstd[r] * (gh[r] - mean(gh[r]) - xhat[r] *
/// mean(gh[r] * xhat[r])); when defined, gw[j] = sum_r g * xhat and gb[j] = sum_r g.
using RowNormBackwardKernel = void (*)(const Tensor& gx, const Tensor& gw, const Tensor& gb,
                                       const Tensor& g, const Tensor& x, const Tensor& mean,
                                       const Tensor& rstd, const Tensor& w);
extern DispatchStub<RowNormBackwardKernel> row_norm_backward_stub;

/// x (N, C, S) contiguous: per-channel mean and biased variance (C), in x's dtype.
using ChannelStatsKernel = void (*)(const Tensor& mean, const Tensor& var, const Tensor& x);
extern DispatchStub<ChannelStatsKernel> channel_stats_stub;
/// g, x (N, C, S) contiguous: sum_g[c] = sum g, sum_dot[c] = sum g * (x - mean[c]).
using ChannelGradSumsKernel = void (*)(const Tensor& sum_g, const Tensor& sum_dot, const Tensor& g,
                                       const Tensor& x, const Tensor& mean);
extern DispatchStub<ChannelGradSumsKernel> channel_grad_sums_stub;
/// out = p * a[c] + (q defined ? q * b[c] : 0) + c[c] over (N, C, S) contiguous tensors.
using ChannelAffineKernel = void (*)(const Tensor& out, const Tensor& p, const Tensor& a,
                                     const Tensor& q, const Tensor& b, const Tensor& c);
extern DispatchStub<ChannelAffineKernel> channel_affine_stub;

}  // namespace ember
