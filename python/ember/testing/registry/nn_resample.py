"""Registry entries: padding and resampling."""
import numpy as np

from ... import tensor
from ...nn import functional as F
from . import ErrorCase, OpEntry, Sample

_NP_MODE = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
            "circular": "wrap"}


def _x(shape, device, dtype, seed=0):
    return tensor(np.random.default_rng(seed).standard_normal(shape), dtype=dtype, device=device)


def _np_pad(x, pad, mode="constant", value=None):
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    kw = {"constant_values": value or 0.0} if mode == "constant" else {}
    return np.pad(x, widths, mode=_NP_MODE[mode], **kw)


def _pad_samples(device, dtype):
    x = _x((2, 3, 4, 5), device, dtype)
    yield Sample((x, (1, 2, 0, 1)), dict(value=1.5), desc="constant")
    for mode in ("reflect", "replicate", "circular"):
        yield Sample((x, (2, 1, 3, 0)), dict(mode=mode), desc=mode)


def _np_pixel_shuffle(x, r):
    *lead, c, h, w = x.shape
    y = x.reshape(*lead, c // (r * r), r, r, h, w)
    n = len(lead)
    perm = list(range(n)) + [n, n + 3, n + 1, n + 4, n + 2]
    return y.transpose(perm).reshape(*lead, c // (r * r), h * r, w * r)


def _np_pixel_unshuffle(x, r):
    *lead, c, h, w = x.shape
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    n = len(lead)
    perm = list(range(n)) + [n, n + 2, n + 4, n + 1, n + 3]
    return y.transpose(perm).reshape(*lead, c * r * r, h // r, w // r)


def _interp_samples(device, dtype):
    x = _x((1, 2, 3, 4), device, dtype)
    yield Sample((x,), dict(size=(5, 3), mode="nearest"))
    yield Sample((x,), dict(scale_factor=1.5, mode="bilinear", align_corners=False))
    yield Sample((x,), dict(size=(4, 6), mode="bicubic", align_corners=True))
    yield Sample((_x((1, 2, 5), device, dtype),), dict(size=3, mode="linear"))


def _grid_samples(device, dtype):
    rng = np.random.default_rng(3)
    x = _x((1, 2, 3, 4), device, dtype)
    g = tensor(rng.uniform(-1.3, 1.3, (1, 2, 3, 2)), dtype=dtype, device=device)
    yield Sample((x, g), dict(padding_mode="zeros", align_corners=False))
    yield Sample((x, g), dict(padding_mode="border", align_corners=True))
    yield Sample((x, g), dict(padding_mode="reflection", align_corners=False))


def _affine_samples(device, dtype):
    yield Sample((_x((2, 2, 3), device, dtype), (2, 1, 3, 4)), dict(align_corners=False))
    yield Sample((_x((1, 3, 4), device, dtype), (1, 1, 2, 2, 3)), dict(align_corners=True))


def _pad_errors(device):
    x = tensor(np.zeros((1, 2, 3)), device=device)
    yield ErrorCase((x, (3, 3)), dict(mode="reflect"), RuntimeError, "reflect padding")
    yield ErrorCase((x, (1, 2, 3)), {}, RuntimeError, "divisible by 2")


ENTRIES = [
    OpEntry("nn.functional.pad", F.pad, _pad_samples, ref=_np_pad, errors=_pad_errors),
    OpEntry("nn.functional.interpolate", F.interpolate, _interp_samples, ref=None,
            aliases=("nn.functional.upsample", "nn.functional.upsample_nearest",
                     "nn.functional.upsample_bilinear"),
            note="forward checked against PyTorch and closed forms in tests/test_nn_resample.py"),
    OpEntry("nn.functional.pixel_shuffle", F.pixel_shuffle,
            lambda device, dtype: [Sample((_x((2, 8, 2, 3), device, dtype), 2))],
            ref=_np_pixel_shuffle),
    OpEntry("nn.functional.pixel_unshuffle", F.pixel_unshuffle,
            lambda device, dtype: [Sample((_x((2, 2, 4, 6), device, dtype), 2))],
            ref=_np_pixel_unshuffle),
    OpEntry("nn.functional.grid_sample", F.grid_sample, _grid_samples, ref=None,
            note="forward checked against PyTorch and identity grids in tests/test_nn_resample.py"),
    OpEntry("nn.functional.affine_grid", F.affine_grid, _affine_samples, ref=None,
            note="forward checked against closed forms in tests/test_nn_resample.py"),
]
