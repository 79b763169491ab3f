"""Image transforms as functions: on PIL images (through Pillow) and on ember tensors of
shape [..., C, H, W] (as tensor ops, so a whole batch goes at once).

Index and weight tables (which source rows/columns, interpolation weights) are computed
with NumPy over one image's height or width; the pixels themselves only ever move through
ember's C++ ops (index_select, matmul, where, ...).
"""
import math
import numbers

import numpy as np

import ember

try:
    from PIL import Image
except ImportError:  # Pillow is optional
    Image = None


_INT_RANGE = {ember.uint8: (0, 255), ember.int8: (-128, 127), ember.int16: (-(2 ** 15), 2 ** 15 - 1),
              ember.int32: (-(2 ** 31), 2 ** 31 - 1), ember.int64: (-(2 ** 63), 2 ** 63 - 1)}


def _int_max(dtype):
    if dtype not in _INT_RANGE:
        raise TypeError(f"expected an integer or floating image dtype, got {dtype}")
    return float(_INT_RANGE[dtype][1])


def _is_pil(img):
    return Image is not None and isinstance(img, Image.Image)


def _check_tensor_image(img, op):
    if not isinstance(img, ember.Tensor):
        raise TypeError(f"{op}: img should be a PIL Image or an ember Tensor, got {type(img)}")
    if img.dim() < 2:
        raise ValueError(f"{op}: expected a tensor image with at least 2 dims ([..., H, W]), "
                         f"got shape {tuple(img.shape)}")


def get_image_size(img):
    """[width, height]."""
    if _is_pil(img):
        return list(img.size)
    _check_tensor_image(img, "get_image_size")
    return [img.shape[-1], img.shape[-2]]


def _setup_size(size, what="size"):
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    size = tuple(size)
    if len(size) == 1:
        return int(size[0]), int(size[0])
    if len(size) != 2:
        raise ValueError(f"Please provide only two dimensions (h, w) for {what}.")
    return int(size[0]), int(size[1])


# ---- conversion ------------------------------------------------------------------------------


def to_tensor(pic):
    """PIL image or ndarray/tensor (HW or HWC) -> CHW tensor; uint8 scaled to float in [0, 1]."""
    if _is_pil(pic):
        arr = np.asarray(pic)
        if pic.mode == "1":
            arr = arr.astype(np.uint8) * 255
    elif isinstance(pic, np.ndarray):
        arr = pic
    elif isinstance(pic, ember.Tensor):
        arr = None
    else:
        raise TypeError(f"pic should be PIL Image, ndarray or ember Tensor. Got {type(pic)}")
    if arr is not None:
        if arr.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {arr.ndim} dimensions.")
        t = ember.from_numpy(np.ascontiguousarray(arr))
    else:
        t = pic
        if t.dim() not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {t.dim()} dimensions.")
    t = t.unsqueeze(0) if t.dim() == 2 else t.permute(2, 0, 1)
    t = t.contiguous()
    if t.dtype == ember.uint8:
        return t.to(ember.get_default_dtype()).div(255)
    return t


def _to_tensor_batched(x):
    """ToTensor on a batch of grey images: uint8 N×H×W -> float N×1×H×W in [0, 1]."""
    x = x.unsqueeze(1)
    if x.dtype == ember.uint8:
        return x.to(ember.get_default_dtype()).div(255)
    return x


def pil_to_tensor(pic):
    """PIL image -> uint8 CHW tensor (no scaling)."""
    if not _is_pil(pic):
        raise TypeError(f"pic should be PIL Image. Got {type(pic)}")
    arr = np.asarray(pic)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    return ember.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))


def to_pil_image(pic, mode=None):
    """CHW tensor or HWC ndarray -> PIL image (float data scaled by 255)."""
    if Image is None:
        raise RuntimeError("to_pil_image needs Pillow (pip install pillow)")
    if isinstance(pic, ember.Tensor):
        t = pic.detach()
        if t.dim() == 2:
            t = t.unsqueeze(0)
        if t.is_floating_point():
            t = t.mul(255).to(ember.uint8)
        arr = t.permute(1, 2, 0).contiguous().cpu().numpy()
    else:
        arr = np.asarray(pic)
        if arr.ndim == 2:
            arr = arr[:, :, None]
        if arr.dtype.kind == "f":
            arr = (arr * 255).astype(np.uint8)
    if arr.shape[2] == 1:
        return Image.fromarray(arr[:, :, 0])
    return Image.fromarray(arr) if mode is None else Image.fromarray(arr).convert(mode)


def convert_image_dtype(image, dtype=ember.float32):
    """Converts an image tensor's dtype, rescaling between integer ranges and [0, 1]."""
    if not isinstance(image, ember.Tensor):
        raise TypeError("Input img should be Tensor Image")
    if image.dtype == dtype:
        return image
    src_float, dst_float = image.is_floating_point(), ember.empty((), dtype=dtype).is_floating_point()
    if src_float and dst_float:
        return image.to(dtype)
    if src_float:
        if (image.dtype == ember.float32 and dtype in (ember.int32, ember.int64)) or \
                (image.dtype == ember.float64 and dtype == ember.int64):
            raise RuntimeError(f"The cast from {image.dtype} to {dtype} cannot be performed safely.")
        max_val = _int_max(dtype)
        return image.mul(max_val + 1.0 - 1e-3).to(dtype)
    in_max = _int_max(image.dtype)
    if dst_float:
        return image.to(dtype).div(in_max)
    out_max = _int_max(dtype)
    return image.to(ember.float64).mul((out_max + 1) / (in_max + 1)).floor().to(dtype) \
        if out_max > in_max else image.to(ember.float64).div((in_max + 1) / (out_max + 1)).floor().to(dtype)


# ---- colour and value ------------------------------------------------------------------------


def normalize(tensor, mean, std, inplace=False):
    """(tensor - mean) / std per channel of a float [..., C, H, W] tensor."""
    _check_tensor_image(tensor, "normalize")
    if not tensor.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.dim() < 3:
        raise ValueError("Expected tensor to be a tensor image of size (..., C, H, W). Got "
                         f"tensor.size() = {tuple(tensor.shape)}")
    mean_t = ember.as_tensor(mean, dtype=tensor.dtype)
    std_t = ember.as_tensor(std, dtype=tensor.dtype)
    if bool((std_t == 0).any()):
        raise ValueError(f"std evaluated to zero after conversion to {tensor.dtype}, leading to "
                         "division by zero.")
    if mean_t.dim() == 1:
        mean_t = mean_t.view(-1, 1, 1)
    if std_t.dim() == 1:
        std_t = std_t.view(-1, 1, 1)
    if inplace:
        return tensor.sub_(mean_t).div_(std_t)
    return tensor.sub(mean_t).div(std_t)


def rgb_to_grayscale(img, num_output_channels=1):
    """ITU-R 601-2 luma of an RGB [..., 3, H, W] tensor (grey images pass through)."""
    if _is_pil(img):
        out = img.convert("L")
        return out if num_output_channels == 1 else Image.merge("RGB", [out] * 3)
    _check_tensor_image(img, "rgb_to_grayscale")
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    c = img.shape[-3]
    if c == 1:
        l_img = img
    elif c == 3:
        r, g, b = img.unbind(dim=-3)
        l_img = (0.2989 * r.float() + 0.587 * g.float() + 0.114 * b.float()).to(img.dtype).unsqueeze(-3)
    else:
        raise TypeError(f"Input image tensor permitted channel values are [1, 3], but found {c}")
    if num_output_channels == 3:
        return l_img.expand(*l_img.shape[:-3], 3, *l_img.shape[-2:]).contiguous()
    return l_img


# ---- geometry ---------------------------------------------------------------------------------


def hflip(img):
    if _is_pil(img):
        return img.transpose(Image.FLIP_LEFT_RIGHT)
    _check_tensor_image(img, "hflip")
    return img.flip(-1)


def vflip(img):
    if _is_pil(img):
        return img.transpose(Image.FLIP_TOP_BOTTOM)
    _check_tensor_image(img, "vflip")
    return img.flip(-2)


def crop(img, top, left, height, width):
    """The [top:top+height, left:left+width] window; zero-padded where it leaves the image."""
    if _is_pil(img):
        return img.crop((left, top, left + width, top + height))
    _check_tensor_image(img, "crop")
    h, w = img.shape[-2], img.shape[-1]
    right, bottom = left + width, top + height
    if left < 0 or top < 0 or right > w or bottom > h:
        pads = [max(-left, 0), max(-top, 0), max(right - w, 0), max(bottom - h, 0)]
        img = img[..., max(top, 0):min(bottom, h), max(left, 0):min(right, w)]
        return pad(img, pads, fill=0)
    return img[..., top:bottom, left:right]


def center_crop(img, output_size):
    th, tw = _setup_size(output_size, "output_size")
    w, h = get_image_size(img)
    if tw > w or th > h:
        pads = [(tw - w) // 2 if tw > w else 0, (th - h) // 2 if th > h else 0,
                (tw - w + 1) // 2 if tw > w else 0, (th - h + 1) // 2 if th > h else 0]
        img = pad(img, pads, fill=0)
        w, h = get_image_size(img)
        if tw == w and th == h:
            return img
    top = int(round((h - th) / 2.0))
    left = int(round((w - tw) / 2.0))
    return crop(img, top, left, th, tw)


def _parse_padding(padding):
    if isinstance(padding, numbers.Number):
        p = int(padding)
        return [p, p, p, p]
    padding = [int(p) for p in padding]
    if len(padding) == 1:
        return padding * 4
    if len(padding) == 2:
        return [padding[0], padding[1], padding[0], padding[1]]
    if len(padding) == 4:
        return padding
    raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple")


def _pad_index(n, before, after, mode):
    """Source index of each padded position along one axis (edge/reflect/symmetric)."""
    pos = np.arange(-before, n + after)
    if mode == "edge":
        return np.clip(pos, 0, n - 1)
    if mode == "reflect":
        if n == 1:
            return np.zeros_like(pos)
        period = 2 * (n - 1)
        m = np.mod(pos, period)
        return np.where(m < n, m, period - m)
    period = 2 * n  # symmetric
    m = np.mod(pos, period)
    return np.where(m < n, m, period - 1 - m)


def pad(img, padding, fill=0, padding_mode="constant"):
    """Pads the last two dims by [left, top, right, bottom] (an int or 2-tuple expands)."""
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    left, top, right, bottom = _parse_padding(padding)
    if _is_pil(img):
        arr = np.asarray(img)
        pw = ((top, bottom), (left, right)) + (((0, 0),) if arr.ndim == 3 else ())
        if padding_mode == "constant":
            out = np.pad(arr, pw, mode="constant", constant_values=fill)
        else:
            out = np.pad(arr, pw, mode=padding_mode)
        return Image.fromarray(out)
    _check_tensor_image(img, "pad")
    h, w = img.shape[-2], img.shape[-1]
    if min(left, top, right, bottom) < 0:
        # Negative padding crops.
        img = img[..., max(-top, 0):h - max(-bottom, 0), max(-left, 0):w - max(-right, 0)]
        left, top, right, bottom = (max(p, 0) for p in (left, top, right, bottom))
        h, w = img.shape[-2], img.shape[-1]
    if padding_mode == "constant":
        out = ember.full((*img.shape[:-2], h + top + bottom, w + left + right), fill, dtype=img.dtype,
                         device=img.device)
        out[..., top:top + h, left:left + w] = img
        return out
    if padding_mode == "reflect" and (max(left, right) >= w or max(top, bottom) >= h):
        raise ValueError(f"reflect padding of ({left}, {top}, {right}, {bottom}) must be smaller "
                         f"than the image size {h}x{w}")
    rows = ember.from_numpy(_pad_index(h, top, bottom, padding_mode).astype(np.int64)).to(img.device)
    cols = ember.from_numpy(_pad_index(w, left, right, padding_mode).astype(np.int64)).to(img.device)
    return img.index_select(-2, rows).index_select(-1, cols)


def _interp_matrix(n_in, n_out, mode, antialias):
    """(n_out, n_in) weights of 1-D resampling, align_corners=False (PyTorch's convention)."""
    scale = n_in / n_out
    if mode == "nearest":
        src = np.minimum(np.floor(np.arange(n_out) * scale).astype(np.int64), n_in - 1)
        m = np.zeros((n_out, n_in))
        m[np.arange(n_out), src] = 1.0
        return m
    centers = (np.arange(n_out) + 0.5) * scale - 0.5
    if antialias and scale > 1:
        # The triangle filter stretched to the source spacing (PIL's bilinear).
        support = scale
        src = np.arange(n_in)
        wts = np.maximum(0.0, 1.0 - np.abs(src[None, :] - centers[:, None]) / support)
        return wts / wts.sum(axis=1, keepdims=True)
    c = np.maximum(centers, 0.0)
    i0 = np.minimum(np.floor(c).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    frac = c - i0
    m = np.zeros((n_out, n_in))
    np.add.at(m, (np.arange(n_out), i0), 1.0 - frac)
    np.add.at(m, (np.arange(n_out), i1), frac)
    return m


def _output_size(h, w, size, max_size):
    oh, ow = _requested_size(h, w, size, max_size)
    if oh <= 0 or ow <= 0 or h <= 0 or w <= 0:
        raise ValueError(f"resize: input and output sizes must be positive, got an image of size "
                         f"(h={h}, w={w}) and size={size!r} (output (h={oh}, w={ow}))")
    return oh, ow


def _requested_size(h, w, size, max_size):
    if isinstance(size, numbers.Number) or len(size) == 1:
        s = int(size if isinstance(size, numbers.Number) else size[0])
        short, long = (w, h) if w <= h else (h, w)
        if short <= 0:
            return (s, 0) if w <= h else (0, s)
        new_short, new_long = s, int(s * long / short)
        if max_size is not None:
            if max_size <= s:
                raise ValueError(f"max_size = {max_size} must be strictly greater than the requested "
                                 f"size for the smaller edge size = {size}")
            if new_long > max_size:
                new_short, new_long = int(max_size * new_short / new_long), max_size
        return (new_long, new_short) if w <= h else (new_short, new_long)
    return int(size[0]), int(size[1])


def resize(img, size, interpolation="bilinear", max_size=None, antialias=True):
    """Resizes to ``size`` ((h, w), or the shorter edge when an int). Tensors: bilinear or
    nearest resampling written as two small matrix products (rows, then columns)."""
    interpolation = getattr(interpolation, "value", interpolation)
    if interpolation not in ("bilinear", "nearest"):
        raise ValueError(f"resize: interpolation {interpolation!r} is not supported (bilinear or nearest)")
    w, h = get_image_size(img)
    oh, ow = _output_size(h, w, size, max_size)
    if _is_pil(img):
        return img.resize((ow, oh), Image.BILINEAR if interpolation == "bilinear" else Image.NEAREST)
    if (oh, ow) == (h, w):
        return img
    dtype = img.dtype
    x = img if img.is_floating_point() else img.to(ember.float32)
    if interpolation == "nearest" or not antialias or (oh >= h and ow >= w):
        # ember.nn.functional.interpolate on a [N, C, H, W] view of the leading dims.
        from ...nn import functional as nnf
        x4 = x.reshape(-1, 1, h, w)
        kw = {} if interpolation == "nearest" else {"align_corners": False}
        out = nnf.interpolate(x4, size=(oh, ow), mode=interpolation, **kw).reshape(*x.shape[:-2], oh, ow)
    else:
        # Antialiased downscale (PIL's triangle filter stretched to the source spacing), which
        # interpolate does not do: two small resampling matrices, rows then columns.
        ry = ember.from_numpy(_interp_matrix(h, oh, interpolation, antialias)).to(device=x.device, dtype=x.dtype)
        rx = ember.from_numpy(_interp_matrix(w, ow, interpolation, antialias).T.copy()).to(device=x.device,
                                                                                         dtype=x.dtype)
        out = ember.matmul(ember.matmul(ry, x), rx)
    if dtype != x.dtype:
        out = out.round().clamp(float(_INT_RANGE[dtype][0]), _int_max(dtype)).to(dtype)
    return out


def rotate(img, angle, interpolation="nearest", expand=False, center=None, fill=0):
    """Rotates counter-clockwise by ``angle`` degrees about ``center`` (default the middle).

    Tensors: ember.nn.functional.grid_sample at the inverse-rotated position of each output
    pixel (nearest or bilinear); positions outside the image get ``fill``."""
    interpolation = getattr(interpolation, "value", interpolation)
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError(f"rotate: interpolation {interpolation!r} is not supported (nearest or bilinear)")
    if _is_pil(img):
        resample = Image.NEAREST if interpolation == "nearest" else Image.BILINEAR
        return img.rotate(angle, resample=resample, expand=expand, center=center, fillcolor=fill)
    _check_tensor_image(img, "rotate")
    h, w = img.shape[-2], img.shape[-1]
    cx, cy = ((w - 1) * 0.5, (h - 1) * 0.5) if center is None else (float(center[0]), float(center[1]))
    a = math.radians(angle)
    cos, sin = math.cos(a), math.sin(a)
    oh, ow = h, w
    ocx, ocy = cx, cy
    if expand:
        corners = np.array([[-cx, -cy], [w - 1 - cx, -cy], [-cx, h - 1 - cy], [w - 1 - cx, h - 1 - cy]])
        rx_ = corners[:, 0] * cos + corners[:, 1] * sin
        ry_ = -corners[:, 0] * sin + corners[:, 1] * cos
        ow = int(math.ceil(rx_.max() - rx_.min() - 1e-6)) + 1
        oh = int(math.ceil(ry_.max() - ry_.min() - 1e-6)) + 1
        ocx, ocy = (ow - 1) * 0.5, (oh - 1) * 0.5
    # The inverse rotation taking each output pixel centre to its source position, written
    # in grid_sample's normalized coordinates (align_corners=False): with j - ocx = u*ow/2 + dx0
    # (u the normalized output x), sx = cos*(j - ocx) - sin*(i - ocy) + cx and
    # x_in = (2*sx + 1)/w - 1; likewise for y (image y points down: counter-clockwise on screen).
    dx0, dy0 = (ow - 1) * 0.5 - ocx, (oh - 1) * 0.5 - ocy
    theta = np.array([[[cos * ow / w, -sin * oh / w, (2 / w) * (cos * dx0 - sin * dy0 + cx) + 1 / w - 1],
                       [sin * ow / h, cos * oh / h, (2 / h) * (sin * dx0 + cos * dy0 + cy) + 1 / h - 1]]])
    from ...nn import functional as nnf
    lead = img.shape[:-2]
    dtype = img.dtype
    x = (img if img.is_floating_point() else img.to(ember.float32)).reshape(1, -1, h, w)
    # A ones channel marks where the samples came from inside the image (torchvision's trick).
    x = ember.cat([x, ember.ones(1, 1, h, w, dtype=x.dtype, device=x.device)], dim=1)
    g = nnf.affine_grid(ember.from_numpy(theta).to(device=x.device, dtype=x.dtype), [1, x.shape[1], oh, ow], align_corners=False)
    sampled = nnf.grid_sample(x, g, mode=interpolation, padding_mode="zeros", align_corners=False)
    vals, mask = sampled[:, :-1], sampled[:, -1:]
    fill_t = ember.full((), float(fill), dtype=x.dtype)
    if interpolation == "nearest":
        out = ember.where(mask < 0.5, fill_t, vals)
    else:
        out = vals * mask + (1.0 - mask) * fill_t
    if dtype != out.dtype:
        out = out.round().to(dtype)
    return out.reshape(*lead, oh, ow)
