// Kernel stubs of the normalization family: per-row statistics (layer, group and
// instance norm) and per-channel statistics (batch norm).
#pragma once
#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"

namespace ember {

/// Rows of x (R, L) contiguous: mean[r], rstd[r] = 1 / sqrt(biased var + eps), and
/// xn[r, j] = (x[r, j] - mean[r]) * rstd[r]. All contiguous, x's dtype.
using RowNormKernel = void (*)(const Tensor& xn, const Tensor& mean, const Tensor& rstd,
                               const Tensor& x, double eps);
extern DispatchStub<RowNormKernel> row_norm_stub;
/// gx[r] = rstd[r] * (gh[r] - mean(gh[r]) - xhat[r] * mean(gh[r] * xhat[r])), the row
/// normalization's backward given gh (the gradient of xn), x, mean and rstd.
using RowNormBackwardKernel = void (*)(const Tensor& gx, const Tensor& gh, const Tensor& x,
                                       const Tensor& mean, const Tensor& rstd);
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
