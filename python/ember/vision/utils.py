"""make_grid and save_image (torchvision.utils)."""
import math
import struct
import zlib

import numpy as np

import ember

__all__ = ["make_grid", "save_image"]


def make_grid(tensor, nrow=8, padding=2, normalize=False, value_range=None, scale_each=False,
              pad_value=0.0):
    """Lays a batch of images (B×C×H×W, or a list of C×H×W) out as one C×H'×W' grid with
    ``nrow`` images per row, ``padding`` pixels of ``pad_value`` between them. Grey images
    become 3-channel. ``normalize`` maps ``value_range`` (default: the min and max, per image
    with ``scale_each``) to [0, 1]."""
    if isinstance(tensor, (list, tuple)):
        tensor = ember.stack(list(tensor), dim=0)
    if not isinstance(tensor, ember.Tensor):
        raise TypeError(f"tensor or list of tensors expected, got {type(tensor)}")
    if tensor.dim() == 2:
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 3:
        if tensor.size(0) == 1:
            tensor = ember.cat((tensor, tensor, tensor), 0)
        tensor = tensor.unsqueeze(0)
    if tensor.dim() != 4:
        raise ValueError(f"make_grid: expected a 2-, 3- or 4-D tensor, got shape {tuple(tensor.shape)}")
    if tensor.size(1) == 1:
        tensor = ember.cat((tensor, tensor, tensor), 1)
    if normalize:
        tensor = tensor.clone()
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError("value_range has to be a tuple (min, max) if specified. min and max are numbers")
        if scale_each:
            if value_range is not None:
                low = ember.full((tensor.size(0), 1, 1, 1), float(value_range[0]), dtype=tensor.dtype)
                high = ember.full((tensor.size(0), 1, 1, 1), float(value_range[1]), dtype=tensor.dtype)
            else:
                flat = tensor.reshape(tensor.size(0), -1)
                low = flat.amin(1).view(-1, 1, 1, 1)
                high = flat.amax(1).view(-1, 1, 1, 1)
            tensor = ember.minimum(ember.maximum(tensor, low), high)
            tensor = (tensor - low) / ember.clamp(high - low, min=1e-5)
        else:
            low, high = value_range if value_range is not None else (float(tensor.min()), float(tensor.max()))
            tensor = tensor.clamp(min=low, max=high).sub(low).div(max(high - low, 1e-5))
    if tensor.size(0) == 1:
        return tensor.squeeze(0)
    n, c, h, w = tensor.shape
    xmaps = min(nrow, n)
    ymaps = int(math.ceil(float(n) / xmaps))
    hp, wp = h + padding, w + padding
    # Every cell is the image with `padding` rows/columns of pad_value before it.
    cells = ember.full((ymaps * xmaps, c, hp, wp), pad_value, dtype=tensor.dtype)
    cells[:n, :, padding:, padding:] = tensor
    body = cells.view(ymaps, xmaps, c, hp, wp).permute(2, 0, 3, 1, 4).reshape(c, ymaps * hp, xmaps * wp)
    grid = ember.full((c, ymaps * hp + padding, xmaps * wp + padding), pad_value, dtype=tensor.dtype)
    grid[:, :ymaps * hp, :xmaps * wp] = body
    return grid


def _png_bytes(arr):
    """A PNG (8-bit grey, RGB or RGBA) of an H×W or H×W×C uint8 array, with zlib."""
    if arr.ndim == 2:
        arr = arr[:, :, None]
    h, w, c = arr.shape
    color = {1: 0, 3: 2, 4: 6, 2: 4}[c]
    raw = np.concatenate([np.zeros((h, 1), np.uint8), arr.reshape(h, w * c)], axis=1).tobytes()

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def to_uint8_hwc(grid):
    """A C×H×W float image in [0, 1] as an H×W×C uint8 array (rounded, clamped)."""
    return grid.detach().mul(255).add(0.5).clamp(0, 255).permute(1, 2, 0).to(ember.uint8).contiguous().cpu().numpy()


def save_image(tensor, fp, format=None, **kwargs):
    """Saves a tensor (or batch, laid out by make_grid with ``kwargs``) as an image file:
    through Pillow when installed, else as a PNG written here."""
    grid = make_grid(tensor, **kwargs)
    arr = to_uint8_hwc(grid)
    try:
        from PIL import Image
    except ImportError:
        Image = None
    if Image is not None:
        img = Image.fromarray(arr[:, :, 0] if arr.shape[2] == 1 else arr)
        img.save(fp, format=format)
        return
    if format is not None and format.lower() != "png":
        raise ValueError(f"save_image: without Pillow only PNG can be written, not {format}")
    data = _png_bytes(arr)
    if hasattr(fp, "write"):
        fp.write(data)
    else:
        with open(fp, "wb") as f:
            f.write(data)
