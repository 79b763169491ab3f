"""nn modules: upsampling, unfold/fold, pixel shuffle and padding layers, as torch.nn."""
from .. import functional as F
from .module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "Unfold", "Fold",
           "PixelShuffle", "PixelUnshuffle", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ReflectionPad1d", "ReflectionPad2d",
           "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d",
           "CircularPad1d", "CircularPad2d", "CircularPad3d"]


class Upsample(Module):
    """Resizes [N, C, *spatial] inputs by F.interpolate."""
    __constants__ = ["size", "scale_factor", "mode", "align_corners", "name",
                     "recompute_scale_factor"]

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        self.scale_factor = float(scale_factor) if isinstance(scale_factor, (int, float)) \
            else (tuple(float(f) for f in scale_factor) if scale_factor else None)
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        if self.scale_factor is not None:
            info = "scale_factor=" + repr(self.scale_factor)
        else:
            info = "size=" + repr(self.size)
        return info + ", mode=" + repr(self.mode)


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling of [N, C, H, W]."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling of [N, C, H, W] with align_corners=True."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class Unfold(Module):
    """Extracts sliding local blocks: [N, C, H, W] -> [N, C*kh*kw, L]."""
    __constants__ = ["kernel_size", "dilation", "padding", "stride"]

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = \
            kernel_size, dilation, padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return ("kernel_size={kernel_size}, dilation={dilation}, padding={padding}, "
                "stride={stride}".format(**self.__dict__))


class Fold(Module):
    """Combines sliding local blocks into an image: [N, C*kh*kw, L] -> [N, C, H, W]."""
    __constants__ = ["output_size", "kernel_size", "dilation", "padding", "stride"]

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self):
        return ("output_size={output_size}, kernel_size={kernel_size}, dilation={dilation}, "
                "padding={padding}, stride={stride}".format(**self.__dict__))


class PixelShuffle(Module):
    """[*, C*r*r, H, W] -> [*, C, H*r, W*r]."""
    __constants__ = ["upscale_factor"]

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """[*, C, H*r, W*r] -> [*, C*r*r, H, W]."""
    __constants__ = ["downscale_factor"]

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class _PadNd(Module):
    __constants__ = ["padding", "mode", "value"]
    _nsp = 1
    _mode = "constant"

    def __init__(self, padding, value=None):
        super().__init__()
        n = 2 * self._nsp
        self.padding = (int(padding),) * n if isinstance(padding, int) else tuple(padding)
        if len(self.padding) != n:
            raise ValueError(f"{type(self).__name__}: expected padding to be an int or a tuple "
                             f"of {n} ints, got {padding!r}")
        self.value = value

    def forward(self, input):
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        if self._mode == "constant":
            return f"padding={self.padding}, value={self.value}"
        return f"padding={self.padding}"


class ConstantPad1d(_PadNd):
    """Pads the last 1 dim(s) with a constant value."""
    _nsp = 1

    def __init__(self, padding, value):
        super().__init__(padding, float(value))


class ZeroPad1d(_PadNd):
    """Pads the last 1 dim(s) with zeros."""
    _nsp = 1

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"padding={self.padding}"


class ReflectionPad1d(_PadNd):
    """Pads the last 1 dim(s) with the reflection of the input (edge not repeated)."""
    _nsp = 1
    _mode = "reflect"


class ReplicationPad1d(_PadNd):
    """Pads the last 1 dim(s) by repeating the edge values."""
    _nsp = 1
    _mode = "replicate"


class CircularPad1d(_PadNd):
    """Pads the last 1 dim(s) circularly (wrapping around)."""
    _nsp = 1
    _mode = "circular"


class ConstantPad2d(_PadNd):
    """Pads the last 2 dim(s) with a constant value."""
    _nsp = 2

    def __init__(self, padding, value):
        super().__init__(padding, float(value))


class ZeroPad2d(_PadNd):
    """Pads the last 2 dim(s) with zeros."""
    _nsp = 2

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"padding={self.padding}"


class ReflectionPad2d(_PadNd):
    """Pads the last 2 dim(s) with the reflection of the input (edge not repeated)."""
    _nsp = 2
    _mode = "reflect"


class ReplicationPad2d(_PadNd):
    """Pads the last 2 dim(s) by repeating the edge values."""
    _nsp = 2
    _mode = "replicate"


class CircularPad2d(_PadNd):
    """Pads the last 2 dim(s) circularly (wrapping around)."""
    _nsp = 2
    _mode = "circular"


class ConstantPad3d(_PadNd):
    """Pads the last 3 dim(s) with a constant value."""
    _nsp = 3

    def __init__(self, padding, value):
        super().__init__(padding, float(value))


class ZeroPad3d(_PadNd):
    """Pads the last 3 dim(s) with zeros."""
    _nsp = 3

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"padding={self.padding}"


class ReflectionPad3d(_PadNd):
    """Pads the last 3 dim(s) with the reflection of the input (edge not repeated)."""
    _nsp = 3
    _mode = "reflect"


class ReplicationPad3d(_PadNd):
    """Pads the last 3 dim(s) by repeating the edge values."""
    _nsp = 3
    _mode = "replicate"


class CircularPad3d(_PadNd):
    """Pads the last 3 dim(s) circularly (wrapping around)."""
    _nsp = 3
    _mode = "circular"
