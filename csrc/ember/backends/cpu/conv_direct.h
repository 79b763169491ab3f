// Direct (im2col-free) float32 convolution kernels for small stride-1 2-d and 1-d
// convolutions on AVX2 + FMA CPUs (Note [Direct convolution] in conv_direct.cpp).
// Called by the per-image convolution kernels (backends/cpu/nn_conv.cpp) before
// they fall back to im2col + GEMM.
#pragma once
#include <cstdint>

#include "ember/core/tensor.h"
#include "ember/kernels/stubs/nn_conv.h"

namespace ember::cpu {

/// Switches the direct kernels off (or back on): the tests compare them with the
/// GEMM path on the same inputs. On by default.
void set_conv_direct_enabled(bool on);
bool conv_direct_enabled();
/// How many forward and backward calls the direct kernels have taken since startup:
/// the tests check which path ran (and that EMBER_CPU_CAPABILITY=default, or a CPU
/// without AVX2/FMA, never takes them).
int64_t conv_direct_calls();

/// y [N, Co, out...] <- conv(x, w) + bias (when defined): x, w contiguous float32, y
/// contiguous. Returns false, doing nothing, where the direct kernel does not apply
/// (dtype, groups, stride, sizes, CPU without AVX2/FMA, switched off).
bool conv_direct_forward(const Tensor& y, const Tensor& x, const Tensor& w, const Tensor& bias,
                         int64_t groups, const ConvGeom& g);

/// The input gradient gx and/or the weight gradient gw [Co, C * k_numel] (either
/// undefined when not wanted; contiguous, overwritten) as conv_bwd_images_stub.
/// Returns false, doing nothing, where the direct kernels do not apply to every
/// gradient asked for.
bool conv_direct_backward(const Tensor& gx, const Tensor& gw, const Tensor& x, const Tensor& w,
                          const Tensor& gy, int64_t groups, const ConvGeom& g);

}  // namespace ember::cpu
