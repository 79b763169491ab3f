// Kernel stubs of the convolution family (im2col, col2im and the layout moves
// around the GEMM); front-ends in ops/nn_conv.cpp, CPU kernels in
// backends/cpu/nn_conv.cpp.
#pragma once
#include <cstdint>

#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"

namespace ember {

/// The geometry of one convolution, always with three spatial dims (a 1-d or
/// 2-d convolution has leading spatial sizes of 1, kernel 1, stride 1, no padding).
/// `in` is the image's spatial size, `out` the number of kernel positions per dim.
struct ConvGeom {
  int64_t channels = 0;  // image channels (all groups)
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0}, dil[3] = {1, 1, 1};
  int64_t in_numel() const { return in[0] * in[1] * in[2]; }
  int64_t out_numel() const { return out[0] * out[1] * out[2]; }
  int64_t k_numel() const { return k[0] * k[1] * k[2]; }
};

/// cols [channels * k_numel, nb * out_numel] (contiguous) <- the patches of the
/// contiguous images `input` [nb, channels, in...]; out-of-image taps are 0.
/// Row c * k_numel + kidx, column n * out_numel + pos.
using Im2colKernel = void (*)(const Tensor& cols, const Tensor& input, const ConvGeom& g);
extern DispatchStub<Im2colKernel> im2col_stub;

/// image [nb, channels, in...] (contiguous, overwritten) <- the sum of every
/// column of `cols` (laid out as im2col's) at the taps it came from: the adjoint
/// of im2col.
using Col2imKernel = void (*)(const Tensor& image, const Tensor& cols, const ConvGeom& g);
extern DispatchStub<Col2imKernel> col2im_stub;

/// dst [nb, c, l] (contiguous) <- src [c, nb * l] (contiguous) transposed by blocks,
/// plus bias[c] when `bias` is defined. With `to_cnl`, the reverse move:
/// dst [c, nb * l] <- src [nb, c, l] (bias must be undefined).
using ConvLayoutKernel = void (*)(const Tensor& dst, const Tensor& src, const Tensor& bias,
                                  int64_t nb, int64_t c, int64_t l, bool to_cnl);
extern DispatchStub<ConvLayoutKernel> conv_layout_stub;

/// Note [Convolution per image]
/// y [N, Co, out...] <- conv(x, w) (+ bias when defined) with one task per image:
/// the image's im2col into a per-thread buffer, then one single-threaded BLAS GEMM
/// per group straight into y's image (blas::SerialScope). x and w contiguous, y
/// contiguous and overwritten. Returns false, doing nothing, where it does not
/// apply (dtype other than float32/float64, the BLAS off, sizes past its ints):
/// the caller then takes the batch-chunk path (Note [Convolution layout]).
using ConvFwdImagesKernel = bool (*)(const Tensor& y, const Tensor& x, const Tensor& w,
                                     const Tensor& bias, int64_t groups, const ConvGeom& g);
extern DispatchStub<ConvFwdImagesKernel> conv_fwd_images_stub;

/// The input gradient gx [N, C, in...] and the weight gradient gw [Co, C/groups *
/// k_numel] of the same convolution, either undefined when not wanted (both
/// contiguous, overwritten), image by image as above; the weight gradient sums
/// per-slab partials in a fixed order, so the result does not depend on the
/// thread count. Returns false where it does not apply.
using ConvBwdImagesKernel = bool (*)(const Tensor& gx, const Tensor& gw, const Tensor& x,
                                     const Tensor& w, const Tensor& gy, int64_t groups,
                                     const ConvGeom& g);
extern DispatchStub<ConvBwdImagesKernel> conv_bwd_images_stub;

/// Note [oneDNN convolution]: an optional engine tried before every other path, with
/// the signatures of the per-image kernels (x, w, gy need not be contiguous). A
/// backend without one leaves the slots empty; a kernel declines (returns false,
/// doing nothing) for a geometry, dtype or pass it does not take.
extern DispatchStub<ConvFwdImagesKernel> conv_engine_fwd_stub;
extern DispatchStub<ConvBwdImagesKernel> conv_engine_bwd_stub;

}  // namespace ember
