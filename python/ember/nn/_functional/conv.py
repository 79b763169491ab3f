"""nn.functional: convolution, pooling, unfold/fold, padding and resampling.

Argument normalization only (ints to tuples, 'same'/'valid' padding, default
strides); the math is C++ (``ember._C._convolution`` and friends).
"""
import math
import warnings
from numbers import Integral, Real

from ... import _C

__all__ = [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "unfold", "fold",
    "max_pool1d", "max_pool2d", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices", "max_unpool1d", "max_unpool2d",
    "pad", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear",
    "pixel_shuffle", "pixel_unshuffle", "affine_grid", "grid_sample",
]


def _ntuple(x, n, op, name):
    """``x`` as a tuple of ``n`` ints (an int repeats); TypeError/RuntimeError as torch."""
    if isinstance(x, bool):
        raise TypeError(f"{op}(): argument '{name}' must be int or tuple of ints, not bool")
    if isinstance(x, Integral):
        return (int(x),) * n
    try:
        t = tuple(x)
    except TypeError:
        raise TypeError(f"{op}(): argument '{name}' must be int or tuple of ints, "
                        f"not {type(x).__name__}") from None
    for v in t:
        if isinstance(v, bool) or not isinstance(v, Integral):
            raise TypeError(f"{op}(): argument '{name}' must be int or tuple of ints, "
                            f"but found element of type {type(v).__name__}")
    if len(t) == 1 and n > 1:
        t = t * n
    if len(t) != n:
        raise RuntimeError(f"{op}: expected {name} to be a single integer value or a list of "
                           f"{n} values to match the convolution dimensions, but got {name}={list(t)}")
    return tuple(int(v) for v in t)


def _conv(op, nsp, input, weight, bias, stride, padding, dilation, groups):
    stride = _ntuple(stride, nsp, op, "stride")
    dilation = _ntuple(dilation, nsp, op, "dilation")
    if isinstance(padding, str):
        if padding == "valid":
            lo = hi = (0,) * nsp
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError(f"{op}: padding='same' is not supported for strided "
                                   f"convolutions (stride={stride})")
            if weight.dim() != nsp + 2:
                lo = hi = (0,) * nsp  # the C++ front-end reports the weight's rank
            else:
                total = [d * (k - 1) for d, k in zip(dilation, weight.shape[2:])]
                lo = tuple(t // 2 for t in total)
                hi = tuple(t - t // 2 for t in total)
        else:
            raise RuntimeError(f"{op}: Invalid padding string: {padding!r} (expected 'valid' "
                               "or 'same')")
    else:
        lo = hi = _ntuple(padding, nsp, op, "padding")
    if not isinstance(groups, Integral) or isinstance(groups, bool):
        raise TypeError(f"{op}(): argument 'groups' must be int, not {type(groups).__name__}")
    return _C._convolution(input, weight, bias, list(stride), list(lo), list(hi), list(dilation),
                           False, [0] * nsp, int(groups), op)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution over an input [N, C, L] (or [C, L])."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution over an input [N, C, H, W] (or [C, H, W])."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution over an input [N, C, D, H, W] (or [C, D, H, W])."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_t(op, nsp, input, weight, bias, stride, padding, output_padding, groups, dilation):
    stride = _ntuple(stride, nsp, op, "stride")
    padding = _ntuple(padding, nsp, op, "padding")
    output_padding = _ntuple(output_padding, nsp, op, "output_padding")
    dilation = _ntuple(dilation, nsp, op, "dilation")
    if not isinstance(groups, Integral) or isinstance(groups, bool):
        raise TypeError(f"{op}(): argument 'groups' must be int, not {type(groups).__name__}")
    return _C._convolution(input, weight, bias, list(stride), list(padding), list(padding),
                           list(dilation), True, list(output_padding), int(groups), op)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Transposed 1-D convolution (the gradient of conv1d in its input)."""
    return _conv_t("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding,
                   groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Transposed 2-D convolution (the gradient of conv2d in its input)."""
    return _conv_t("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding,
                   groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Transposed 3-D convolution."""
    return _conv_t("conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding,
                   groups, dilation)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding local blocks of a batched image: [N, C, H, W] -> [N, C*kh*kw, L]."""
    p = lambda v, n: list(_ntuple(v, 2, "unfold", n))  # noqa: E731
    return _C._im2col(input, p(kernel_size, "kernel_size"), p(dilation, "dilation"),
                      p(padding, "padding"), p(stride, "stride"))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sums sliding local blocks back into an image: [N, C*kh*kw, L] -> [N, C, H, W]."""
    p = lambda v, n: list(_ntuple(v, 2, "fold", n))  # noqa: E731
    return _C._col2im(input, p(output_size, "output_size"), p(kernel_size, "kernel_size"),
                      p(dilation, "dilation"), p(padding, "padding"), p(stride, "stride"))


# ---- pooling --------------------------------------------------------------------------------


def _pool_args(op, nsp, kernel_size, stride, padding, dilation=1):
    k = _ntuple(kernel_size, nsp, op, "kernel_size")
    s = k if stride is None or (not isinstance(stride, Integral) and len(stride) == 0) \
        else _ntuple(stride, nsp, op, "stride")
    return list(k), list(s), list(_ntuple(padding, nsp, op, "padding")), \
        list(_ntuple(dilation, nsp, op, "dilation"))


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    k, s, p, d = _pool_args("max_pool1d", 1, kernel_size, stride, padding, dilation)
    return _C._max_pool(input, 1, k, s, p, d, bool(ceil_mode), "max_pool1d")


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    k, s, p, d = _pool_args("max_pool2d", 2, kernel_size, stride, padding, dilation)
    return _C._max_pool(input, 2, k, s, p, d, bool(ceil_mode), "max_pool2d")


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """1-D max pooling over [N, C, L] (or [C, L])."""
    out, idx = max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2-D max pooling over [N, C, H, W] (or [C, H, W])."""
    out, idx = max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """1-D average pooling."""
    k, s, p, _ = _pool_args("avg_pool1d", 1, kernel_size, stride, padding)
    return _C._avg_pool(input, 1, k, s, p, bool(ceil_mode), bool(count_include_pad), None,
                        "avg_pool1d")


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-D average pooling."""
    k, s, p, _ = _pool_args("avg_pool2d", 2, kernel_size, stride, padding)
    return _C._avg_pool(input, 2, k, s, p, bool(ceil_mode), bool(count_include_pad),
                        divisor_override, "avg_pool2d")


def _adaptive_size(op, nsp, input, output_size):
    if isinstance(output_size, Integral) and not isinstance(output_size, bool):
        return [int(output_size)] * nsp
    t = list(output_size)
    if len(t) != nsp:
        raise ValueError(f"{op}: output_size must be an int or a tuple of {nsp} values, "
                         f"got {output_size!r}")
    sp = input.shape[input.dim() - nsp:]
    return [int(sp[i]) if v is None else int(v) for i, v in enumerate(t)]


def adaptive_avg_pool1d(input, output_size):
    """Average pooling to a fixed output length."""
    return _C._adaptive_avg_pool(input, 1, _adaptive_size("adaptive_avg_pool1d", 1, input,
                                                          output_size), "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to a fixed output size (None keeps the input's size)."""
    return _C._adaptive_avg_pool(input, 2, _adaptive_size("adaptive_avg_pool2d", 2, input,
                                                          output_size), "adaptive_avg_pool2d")


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    return _C._adaptive_max_pool(input, 1, _adaptive_size("adaptive_max_pool1d", 1, input,
                                                          output_size), "adaptive_max_pool1d")


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    return _C._adaptive_max_pool(input, 2, _adaptive_size("adaptive_max_pool2d", 2, input,
                                                          output_size), "adaptive_max_pool2d")


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max pooling to a fixed output length."""
    out, idx = adaptive_max_pool1d_with_indices(input, output_size)
    return (out, idx) if return_indices else out


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max pooling to a fixed output size."""
    out, idx = adaptive_max_pool2d_with_indices(input, output_size)
    return (out, idx) if return_indices else out


def _unpool_size(op, nsp, input, kernel_size, stride, padding, output_size):
    k, s, p, _ = _pool_args(op, nsp, kernel_size, stride, padding)
    sp = input.shape[input.dim() - nsp:]
    default = [(sp[i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(nsp)]
    if output_size is None:
        return default
    out = [int(v) for v in output_size]
    if len(out) == nsp + 2 or (len(out) == nsp + 1 and input.dim() == nsp + 1):
        out = out[len(out) - nsp:]
    if len(out) != nsp:
        raise ValueError(f"{op}: output_size must have {nsp} or {nsp + 2} elements, "
                         f"but it has {len(out)}")
    for i in range(nsp):
        lo, hi = default[i] - s[i], default[i] + s[i]
        if not lo < out[i] < hi:
            raise ValueError(f"{op}: invalid output_size {tuple(output_size)} (dim {i} must be "
                             f"between {lo + 1} and {hi - 1})")
    return out


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of max_pool1d: scatters input to the positions in indices."""
    o = _unpool_size("max_unpool1d", 1, input, kernel_size, stride, padding, output_size)
    return _C._max_unpool(input, indices, 1, o, "max_unpool1d")


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of max_pool2d: scatters input to the positions in indices."""
    o = _unpool_size("max_unpool2d", 2, input, kernel_size, stride, padding, output_size)
    return _C._max_unpool(input, indices, 2, o, "max_unpool2d")


# ---- padding and resampling -----------------------------------------------------------------


def pad(input, pad, mode="constant", value=None):
    """Pads the last len(pad) // 2 dims: pad = (left, right, top, bottom, ...)."""
    try:
        p = [int(v) for v in pad]
    except TypeError:
        raise TypeError(f"pad(): argument 'pad' must be tuple of ints, not "
                        f"{type(pad).__name__}") from None
    return _C._pad(input, p, mode, None if value is None else float(value))


_INTERP_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear",
                 "area")


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resizes input [N, C, *spatial] to ``size`` or by ``scale_factor``."""
    if mode not in _INTERP_MODES:
        raise NotImplementedError(f"interpolate: unknown mode {mode!r}, expected one of "
                                  f"{', '.join(_INTERP_MODES)}")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported by ember")
    if mode in ("nearest", "nearest-exact", "area"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    nsp = input.dim() - 2
    if nsp < 1:
        raise NotImplementedError(f"interpolate: expected a 3-D, 4-D or 5-D input, but got "
                                  f"input of shape {list(input.shape)}")
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined" if size is not None
                         else "either size or scale_factor should be defined")
    sp = list(input.shape[2:])
    scales = []
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != nsp:
                raise ValueError(f"Input and output must have the same number of spatial "
                                 f"dimensions, but got input with spatial dimensions of {sp} and "
                                 f"output size of {list(size)}. Please provide input tensor in "
                                 "(N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                                 "...,oK) format.")
            out = [int(v) for v in size]
        else:
            out = [int(size)] * nsp
    else:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != nsp:
                raise ValueError(f"Input and scale_factor must have the same number of spatial "
                                 f"dimensions, but got input with spatial dimensions of {sp} and "
                                 f"scale_factor of shape {list(scale_factor)}.")
            sf = [float(v) for v in scale_factor]
        else:
            if not isinstance(scale_factor, Real):
                raise TypeError(f"interpolate: scale_factor must be a float or a tuple of "
                                f"floats, not {type(scale_factor).__name__}")
            sf = [float(scale_factor)] * nsp
        out = [int(math.floor(s * f)) for s, f in zip(sp, sf)]
        if not recompute_scale_factor and mode != "area":
            scales = sf
    return _C._interpolate(input, out, scales, mode, bool(align_corners))


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of interpolate."""
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: interpolate(..., mode='nearest')."""
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use "
                  "nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: interpolate(..., mode='bilinear', align_corners=True)."""
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use "
                  "nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pixel_shuffle(input, upscale_factor):
    """[*, C*r*r, H, W] -> [*, C, H*r, W*r]."""
    return _C._pixel_shuffle(input, int(upscale_factor))


def pixel_unshuffle(input, downscale_factor):
    """[*, C, H*r, W*r] -> [*, C*r*r, H, W]."""
    return _C._pixel_unshuffle(input, int(downscale_factor))


def affine_grid(theta, size, align_corners=None):
    """Sampling grid [N, H, W, 2] (or [N, D, H, W, 3]) of the affine maps theta."""
    if align_corners is None:
        align_corners = False
    return _C._affine_grid(theta, [int(v) for v in size], bool(align_corners))


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Samples input [N, C, H, W] at the normalized (x, y) locations of grid [N, Ho, Wo, 2]."""
    if align_corners is None:
        align_corners = False
    return _C._grid_sample(input, grid, mode, padding_mode, bool(align_corners))
