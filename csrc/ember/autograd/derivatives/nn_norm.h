// Recording of the fused normalizations (derivatives/nn_norm.cpp).
#pragma once
#include <optional>

#include "ember/core/tensor.h"

namespace ember::autograd {

/// How a row normalization lays its tensor out: x reshaped to `rows` (R, L) is
/// normalized per row; x reshaped to `affine` is multiplied by weight viewed as
/// `param_view` (and the bias added); the parameter gradients sum `param_dims` of it.
struct RowNormLayout {
  Shape rows, affine, param_view, param_dims;
  double eps = 1e-5;
};
/// NativeLayerNormBackward0 / NativeGroupNormBackward0; saves x, weight, mean, rstd.
void record_row_norm(const char* name, const Tensor& x, const Tensor& weight, const Tensor& bias,
                     const Tensor& out, const Tensor& mean, const Tensor& rstd,
                     const RowNormLayout& layout);
/// NativeBatchNormBackward0. x3 is x as (N, C, S); mean/invstd (C) are the batch
/// statistics (training) or the running ones (eval).
void record_batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& out,
                       const Tensor& mean, const Tensor& invstd, bool training, double eps);

/// The batch-norm input gradient and parameter sums (the fused backward, first order).
struct BatchNormGrads {
  Tensor gx, gw, gb;
};
BatchNormGrads batch_norm_backward(const Tensor& g, const Tensor& x, const Tensor& weight,
                                   const Tensor& mean, const Tensor& invstd, bool training);

}  // namespace ember::autograd
