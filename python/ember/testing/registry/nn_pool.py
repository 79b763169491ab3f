"""Registry entries: pooling (NumPy references by loops over windows)."""
import math

import numpy as np

from ... import tensor
from ...nn import functional as F
from . import ErrorCase, OpEntry, Sample


def _distinct(shape, device, dtype, seed=0):
    """Distinct values, so max pooling has no ties (gradcheck needs a unique argmax)."""
    rng = np.random.default_rng(seed)
    return tensor(rng.permutation(int(np.prod(shape))).reshape(shape) / 10.0, dtype=dtype,
                  device=device)


def _out(n, k, s, p, d, ceil):
    num = n + 2 * p - d * (k - 1) - 1
    o = (-(-num // s) if ceil else num // s) + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


def _as2d(x, nsp):
    return x[..., None, :] if nsp == 1 else x


def _norm(v, nsp, default=None):
    if v is None:
        v = default
    t = (v,) * nsp if np.isscalar(v) else tuple(v)
    return ((1,) + t) if nsp == 1 else t


def _padn(v, nsp):
    t = (v,) * nsp if np.isscalar(v) else tuple(v)
    return ((0,) + t) if nsp == 1 else t


def _np_max(nsp, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
            return_indices=False, x=None):
    k = _norm(kernel_size, nsp)
    s = _norm(stride, nsp, kernel_size)
    p, d = _padn(padding, nsp), _norm(dilation, nsp)
    y = _as2d(x, nsp)
    H, W = y.shape[-2:]
    oh, ow = _out(H, k[0], s[0], p[0], d[0], ceil_mode), _out(W, k[1], s[1], p[1], d[1], ceil_mode)
    out = np.full(y.shape[:-2] + (oh, ow), -np.inf)
    idx = np.zeros(out.shape, dtype=np.int64)
    for i in range(oh):
        for j in range(ow):
            first = True
            for a in range(k[0]):
                for b in range(k[1]):
                    h, w = i * s[0] - p[0] + a * d[0], j * s[1] - p[1] + b * d[1]
                    if 0 <= h < H and 0 <= w < W:
                        v = y[..., h, w]
                        m = np.ones(v.shape, bool) if first else v > out[..., i, j]
                        out[..., i, j] = np.where(m, v, out[..., i, j])
                        idx[..., i, j] = np.where(m, h * W + w, idx[..., i, j])
                        first = False
    if nsp == 1:
        out, idx = out[..., 0, :], idx[..., 0, :]
    return (out, idx) if return_indices else out


def _np_avg(nsp, x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
            divisor_override=None):
    k, s = _norm(kernel_size, nsp), _norm(stride, nsp, kernel_size)
    p = _padn(padding, nsp)
    y = _as2d(x, nsp)
    H, W = y.shape[-2:]
    oh, ow = _out(H, k[0], s[0], p[0], 1, ceil_mode), _out(W, k[1], s[1], p[1], 1, ceil_mode)
    out = np.zeros(y.shape[:-2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * s[0] - p[0], j * s[1] - p[1]
            h1, w1 = min(h0 + k[0], H + p[0]), min(w0 + k[1], W + p[1])
            size = (h1 - h0) * (w1 - w0)
            a0, b0, a1, b1 = max(h0, 0), max(w0, 0), min(h1, H), min(w1, W)
            div = divisor_override or (size if count_include_pad else (a1 - a0) * (b1 - b0))
            out[..., i, j] = y[..., a0:a1, b0:b1].sum(axis=(-1, -2)) / div
    return out[..., 0, :] if nsp == 1 else out


def _np_adaptive(nsp, fn, x, output_size, return_indices=False):
    osz = _norm(output_size, nsp)
    y = _as2d(x, nsp)
    H, W = y.shape[-2:]
    out = np.zeros(y.shape[:-2] + osz)
    for i in range(osz[0]):
        for j in range(osz[1]):
            h0, h1 = (i * H) // osz[0], math.ceil((i + 1) * H / osz[0])
            w0, w1 = (j * W) // osz[1], math.ceil((j + 1) * W / osz[1])
            out[..., i, j] = fn(y[..., h0:h1, w0:w1], axis=(-1, -2))
    return out[..., 0, :] if nsp == 1 else out


def _max_samples(nsp):
    def samples(device, dtype):
        sp = (7, 6)[:nsp] if nsp == 2 else (9,)
        yield Sample((_distinct((2, 2, *sp), device, dtype), 2), desc="k2")
        yield Sample((_distinct((2, *sp), device, dtype, 1), 3),
                     dict(stride=2, padding=1, dilation=1, ceil_mode=True), desc="unbatched ceil")
        yield Sample((_distinct((1, 2, *sp), device, dtype, 2), 2),
                     dict(stride=1, dilation=2), desc="dilated")
    return samples


def _avg_samples(nsp):
    def samples(device, dtype):
        sp = (6, 5)[:nsp] if nsp == 2 else (9,)
        rng = np.random.default_rng(nsp)
        x = tensor(rng.standard_normal((2, 2, *sp)), dtype=dtype, device=device)
        yield Sample((x, 2), desc="k2")
        yield Sample((x, 3), dict(stride=2, padding=1, ceil_mode=True, count_include_pad=False),
                     desc="ceil exclude pad")
        if nsp == 2:
            yield Sample((x, 2), dict(divisor_override=3), desc="divisor_override")
    return samples


def _adaptive_samples(nsp, distinct):
    def samples(device, dtype):
        sp = (7, 5)[:nsp] if nsp == 2 else (9,)
        if distinct:
            x = _distinct((2, 2, *sp), device, dtype)
        else:
            x = tensor(np.random.default_rng(0).standard_normal((2, 2, *sp)), dtype=dtype,
                       device=device)
        yield Sample((x, (3, 2) if nsp == 2 else 4))
        yield Sample((x[0], 1), desc="unbatched global")
    return samples


def _unpool_samples(nsp):
    def samples(device, dtype):
        sp = (4, 6)[:nsp] if nsp == 2 else (8,)
        x = _distinct((2, 2, *sp), device, dtype)
        out, idx = (F.max_pool2d if nsp == 2 else F.max_pool1d)(x, 2, return_indices=True)
        yield Sample((out.detach(), idx, 2))
    return samples


def _np_unpool(nsp, x, indices, kernel_size, stride=None, padding=0, output_size=None):
    k, s = _norm(kernel_size, nsp), _norm(stride, nsp, kernel_size)
    sp = x.shape[-nsp:]
    osz = [(sp[i] - 1) * s[-nsp + i] - 0 + k[-nsp + i] for i in range(nsp)]
    flat = np.zeros(x.shape[:-nsp] + (int(np.prod(osz)),))
    lead = x.shape[:-nsp]
    np.put_along_axis(flat, indices.reshape(lead + (-1,)), x.reshape(lead + (-1,)), -1)
    return flat.reshape(lead + tuple(osz))


def _pool_errors(fn):
    def errors(device):
        yield ErrorCase((tensor(np.zeros((1, 1, 2, 2)), device=device), 3), {}, RuntimeError,
                        "is smaller than the")
        yield ErrorCase((tensor(np.zeros((1, 1, 8, 8)), device=device), 2), dict(padding=2),
                        RuntimeError, "pad should be at most half")
    return errors


ENTRIES = [
    OpEntry(f"nn.functional.max_pool{n}d", getattr(F, f"max_pool{n}d"), _max_samples(n),
            ref=lambda x, *a, n=n, **k: _np_max(n, *a, x=x, **k),
            aliases=(f"nn.functional.max_pool{n}d_with_indices",),
            errors=_pool_errors(F.max_pool2d) if n == 2 else None)
    for n in (1, 2)
] + [
    OpEntry(f"nn.functional.avg_pool{n}d", getattr(F, f"avg_pool{n}d"), _avg_samples(n),
            ref=lambda x, *a, n=n, **k: _np_avg(n, x, *a, **k),
            errors=_pool_errors(F.avg_pool2d) if n == 2 else None)
    for n in (1, 2)
] + [
    OpEntry(f"nn.functional.adaptive_avg_pool{n}d", getattr(F, f"adaptive_avg_pool{n}d"),
            _adaptive_samples(n, False),
            ref=lambda x, o, n=n: _np_adaptive(n, np.mean, x, o))
    for n in (1, 2)
] + [
    OpEntry(f"nn.functional.adaptive_max_pool{n}d", getattr(F, f"adaptive_max_pool{n}d"),
            _adaptive_samples(n, True),
            ref=lambda x, o, n=n: _np_adaptive(n, np.max, x, o),
            aliases=(f"nn.functional.adaptive_max_pool{n}d_with_indices",))
    for n in (1, 2)
] + [
    OpEntry(f"nn.functional.max_unpool{n}d", getattr(F, f"max_unpool{n}d"), _unpool_samples(n),
            ref=lambda x, i, *a, n=n, **k: _np_unpool(n, x, i, *a, **k))
    for n in (1, 2)
]
