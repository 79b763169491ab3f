"""Transform classes (torchvision.transforms' names and arguments).

Each works on a PIL image or an ember tensor [..., C, H, W]. Those that can also run on
a whole batch in one go (deterministic ones, and the flips with a per-sample coin) say so
with ``_batched(x)``: the DataLoader then applies the dataset's transform to each gathered
batch instead of sample by sample (see ``batched_transform``).
"""
import numbers

import ember

from . import functional as F

__all__ = ["Compose", "ToTensor", "PILToTensor", "ToPILImage", "Normalize", "Lambda", "RandomCrop",
           "CenterCrop", "RandomHorizontalFlip", "RandomVerticalFlip", "Pad", "Resize",
           "RandomRotation", "ConvertImageDtype", "Grayscale", "InterpolationMode"]


class InterpolationMode:
    NEAREST = "nearest"
    BILINEAR = "bilinear"


class Compose:
    """Applies the transforms in order."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"{self.__class__.__name__}({body}\n)"


class ToTensor:
    """PIL image / ndarray / tensor, HW or HWC -> float CHW tensor; uint8 divided by 255."""

    def __call__(self, pic):
        return F.to_tensor(pic)

    def _batched(self, x):
        return F._to_tensor_batched(x)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


class PILToTensor:
    """PIL image -> uint8 CHW tensor, values unchanged."""

    def __call__(self, pic):
        return F.pil_to_tensor(pic)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


class ToPILImage:
    def __init__(self, mode=None):
        self.mode = mode

    def __call__(self, pic):
        return F.to_pil_image(pic, self.mode)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


class ConvertImageDtype:
    def __init__(self, dtype):
        self.dtype = dtype

    def __call__(self, image):
        return F.convert_image_dtype(image, self.dtype)

    _batched = __call__

    def __repr__(self):
        return f"{self.__class__.__name__}(dtype={self.dtype})"


class Normalize:
    """(x - mean) / std per channel."""

    def __init__(self, mean, std, inplace=False):
        self.mean, self.std, self.inplace = mean, std, inplace

    def __call__(self, tensor):
        return F.normalize(tensor, self.mean, self.std, self.inplace)

    _batched = __call__

    def __repr__(self):
        return f"{self.__class__.__name__}(mean={self.mean}, std={self.std})"


class Lambda:
    """A user function as a transform."""

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {repr(type(lambd).__name__)}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


class CenterCrop:
    def __init__(self, size):
        self.size = F._setup_size(size)

    def __call__(self, img):
        return F.center_crop(img, self.size)

    _batched = __call__

    def __repr__(self):
        return f"{self.__class__.__name__}(size={self.size})"


class Pad:
    def __init__(self, padding, fill=0, padding_mode="constant"):
        if not isinstance(padding, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate padding arg")
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def __call__(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)

    _batched = __call__

    def __repr__(self):
        return f"{self.__class__.__name__}(padding={self.padding}, fill={self.fill}, padding_mode={self.padding_mode})"


class RandomCrop:
    """A random window of ``size`` (after optional padding), drawn with ember's RNG."""

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        self.size = F._setup_size(size)
        self.padding, self.pad_if_needed, self.fill, self.padding_mode = padding, pad_if_needed, fill, padding_mode

    @staticmethod
    def get_params(img, output_size):
        w, h = F.get_image_size(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size {(h, w)}")
        if w == tw and h == th:
            return 0, 0, h, w
        i = int(ember.randint(0, h - th + 1, size=(1,)).item())
        j = int(ember.randint(0, w - tw + 1, size=(1,)).item())
        return i, j, th, tw

    def __call__(self, img):
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        w, h = F.get_image_size(img)
        th, tw = self.size
        if self.pad_if_needed and w < tw:
            img = F.pad(img, [tw - w, 0], self.fill, self.padding_mode)
        if self.pad_if_needed and h < th:
            img = F.pad(img, [0, th - h], self.fill, self.padding_mode)
        i, j, h, w = self.get_params(img, self.size)
        return F.crop(img, i, j, h, w)

    def __repr__(self):
        return f"{self.__class__.__name__}(size={self.size}, padding={self.padding})"


class _RandomFlip:
    _fn = None

    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, img):
        if float(ember.rand(1).item()) < self.p:
            return type(self)._fn(img)
        return img

    def _batched(self, x):
        # One coin per sample of the batch (dim 0).
        if x.dim() < 3:
            return self(x)
        flip = ember.rand(x.shape[0]) < self.p
        mask = flip.view(-1, *([1] * (x.dim() - 1)))
        return ember.where(mask, type(self)._fn(x), x)

    def __repr__(self):
        return f"{self.__class__.__name__}(p={self.p})"


class RandomHorizontalFlip(_RandomFlip):
    _fn = staticmethod(F.hflip)


class RandomVerticalFlip(_RandomFlip):
    _fn = staticmethod(F.vflip)


class Resize:
    def __init__(self, size, interpolation="bilinear", max_size=None, antialias=True):
        self.size, self.interpolation, self.max_size, self.antialias = size, interpolation, max_size, antialias

    def __call__(self, img):
        return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias)

    _batched = __call__

    def __repr__(self):
        return f"{self.__class__.__name__}(size={self.size}, interpolation={self.interpolation})"


class RandomRotation:
    """Rotation by an angle drawn uniformly from ``degrees`` (a number d means (-d, d))."""

    def __init__(self, degrees, interpolation="nearest", expand=False, center=None, fill=0):
        if isinstance(degrees, numbers.Number):
            if degrees < 0:
                raise ValueError("If degrees is a single number, it must be positive.")
            degrees = (-degrees, degrees)
        elif len(degrees) != 2:
            raise ValueError("If degrees is a sequence, it must be of len 2.")
        self.degrees = [float(d) for d in degrees]
        self.interpolation, self.expand, self.center, self.fill = interpolation, expand, center, fill

    @staticmethod
    def get_params(degrees):
        return float(ember.empty(1).uniform_(float(degrees[0]), float(degrees[1])).item())

    def __call__(self, img):
        angle = self.get_params(self.degrees)
        return F.rotate(img, angle, self.interpolation, self.expand, self.center, self.fill)

    def __repr__(self):
        return f"{self.__class__.__name__}(degrees={self.degrees})"


class Grayscale:
    def __init__(self, num_output_channels=1):
        self.num_output_channels = num_output_channels

    def __call__(self, img):
        return F.rgb_to_grayscale(img, self.num_output_channels)

    _batched = __call__

    def __repr__(self):
        return f"{self.__class__.__name__}(num_output_channels={self.num_output_channels})"


def batched_transform(transform):
    """A function applying `transform` to a uint8 N×H×W batch at once, or None when some
    step cannot (a random crop, a Lambda, ...). The batch must start with ToTensor or
    PILToTensor, as a per-sample pipeline on PIL images would."""
    steps = transform.transforms if isinstance(transform, Compose) else [transform]
    if not steps:
        return None
    if isinstance(steps[0], PILToTensor):
        fns = [lambda x: x.unsqueeze(1)]
    elif isinstance(steps[0], ToTensor):
        fns = [steps[0]._batched]
    else:
        return None
    for s in steps[1:]:
        f = getattr(s, "_batched", None)
        if f is None:
            return None
        fns.append(f)

    def run(x):
        for f in fns:
            x = f(x)
        return x
    return run
