// Resampling front-ends: F.pad, F.interpolate (nearest, nearest-exact, linear
// family, bicubic, area), pixel_shuffle/unshuffle, affine_grid and grid_sample.
// Written as composites of differentiable ember ops (index_select, gather,
// elementwise math, matmul), so their gradients of every order come from those.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ember/core/tensor.h"

namespace ember {

/// torch.nn.functional.pad: `pad` lists (before, after) pairs from the last dim
/// backwards; mode "constant" (any dims, negative pads crop), "reflect",
/// "replicate" or "circular" (the last 1-3 dims).
Tensor pad(const Tensor& input, const Shape& pad, const std::string& mode,
           std::optional<double> value);

/// F.interpolate with the output's spatial sizes already computed; `scales`
/// (one per spatial dim, or empty) are the user's scale factors, used for the
/// coordinate mapping as torch does when recompute_scale_factor is not set.
Tensor interpolate(const Tensor& input, const Shape& size, const std::vector<double>& scales,
                   const std::string& mode, bool align_corners);

Tensor pixel_shuffle(const Tensor& input, int64_t upscale_factor);
Tensor pixel_unshuffle(const Tensor& input, int64_t downscale_factor);

/// theta [N, 2, 3] and size [N, C, H, W] -> grid [N, H, W, 2] (or the 3-d form).
Tensor affine_grid(const Tensor& theta, const Shape& size, bool align_corners);
/// Samples input [N, C, H, W] at grid [N, Ho, Wo, 2] (x, y in [-1, 1]).
Tensor grid_sample(const Tensor& input, const Tensor& grid, const std::string& mode,
                   const std::string& padding_mode, bool align_corners);

}  // namespace ember
