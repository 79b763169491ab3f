"""Registry entries: convolutions and unfold/fold (NumPy references by direct sums)."""
import itertools

import numpy as np

from ... import tensor
from ...nn import functional as F
from . import ErrorCase, OpEntry, Sample


def _t(rng, shape, device, dtype):
    return tensor(rng.standard_normal(shape), dtype=dtype, device=device)


def _tup(v, n):
    return (v,) * n if np.isscalar(v) else tuple(v)


def np_conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    nsp = w.ndim - 2
    st, dl = _tup(stride, nsp), _tup(dilation, nsp)
    if padding == "same":
        tot = [d * (k - 1) for d, k in zip(dl, w.shape[2:])]
        lo, hi = [t // 2 for t in tot], [t - t // 2 for t in tot]
    elif padding == "valid":
        lo = hi = (0,) * nsp
    else:
        lo = hi = _tup(padding, nsp)
    xp = np.pad(x, [(0, 0)] * (x.ndim - nsp) + list(zip(lo, hi)))
    if x.ndim == nsp + 1:
        return np_conv(x[None], w, b, stride, padding, dilation, groups)[0]
    co, cg = w.shape[:2]
    ks = w.shape[2:]
    osp = [(xp.shape[2 + i] - dl[i] * (ks[i] - 1) - 1) // st[i] + 1 for i in range(nsp)]
    out = np.zeros((x.shape[0], co, *osp))
    cog = co // groups
    for g in range(groups):
        for k in itertools.product(*[range(v) for v in ks]):
            sl = tuple(slice(k[i] * dl[i], k[i] * dl[i] + st[i] * (osp[i] - 1) + 1, st[i])
                       for i in range(nsp))
            xs = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + sl]
            out[:, g * cog:(g + 1) * cog] += np.einsum(
                "nc...,oc->no...", xs, w[(slice(g * cog, (g + 1) * cog), slice(None)) + k])
    if b is not None:
        out += b.reshape((1, co) + (1,) * nsp)
    return out


def np_conv_t(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    nsp = w.ndim - 2
    st, pd, op, dl = (_tup(v, nsp) for v in (stride, padding, output_padding, dilation))
    cog, ks = w.shape[1], w.shape[2:]
    full = [(x.shape[2 + i] - 1) * st[i] + dl[i] * (ks[i] - 1) + 1 + op[i] for i in range(nsp)]
    out = np.zeros((x.shape[0], cog * groups, *full))
    cig = x.shape[1] // groups
    for g in range(groups):
        for k in itertools.product(*[range(v) for v in ks]):
            sl = tuple(slice(k[i] * dl[i], k[i] * dl[i] + st[i] * (x.shape[2 + i] - 1) + 1, st[i])
                       for i in range(nsp))
            out[(slice(None), slice(g * cog, (g + 1) * cog)) + sl] += np.einsum(
                "nc...,co->no...", x[:, g * cig:(g + 1) * cig],
                w[(slice(g * cig, (g + 1) * cig), slice(None)) + k])
    out = out[(slice(None), slice(None)) + tuple(slice(pd[i], full[i] - pd[i]) for i in range(nsp))]
    if b is not None:
        out = out + b.reshape((1, -1) + (1,) * nsp)
    return out


def np_unfold(x, kernel_size, dilation=1, padding=0, stride=1):
    k, d, p, s = (_tup(v, 2) for v in (kernel_size, dilation, padding, stride))
    xp = np.pad(x, [(0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])])
    n, c, h, w = xp.shape
    oh, ow = (h - d[0] * (k[0] - 1) - 1) // s[0] + 1, (w - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c, k[0], k[1], oh, ow))
    for i, j in itertools.product(range(k[0]), range(k[1])):
        out[:, :, i, j] = xp[:, :, i * d[0]:i * d[0] + s[0] * (oh - 1) + 1:s[0],
                             j * d[1]:j * d[1] + s[1] * (ow - 1) + 1:s[1]]
    return out.reshape(n, c * k[0] * k[1], oh * ow)


def np_fold(x, output_size, kernel_size, dilation=1, padding=0, stride=1):
    k, d, p, s = (_tup(v, 2) for v in (kernel_size, dilation, padding, stride))
    o = _tup(output_size, 2)
    n, ck, _ = x.shape
    c = ck // (k[0] * k[1])
    hp, wp = o[0] + 2 * p[0], o[1] + 2 * p[1]
    oh, ow = (hp - d[0] * (k[0] - 1) - 1) // s[0] + 1, (wp - d[1] * (k[1] - 1) - 1) // s[1] + 1
    cols = x.reshape(n, c, k[0], k[1], oh, ow)
    out = np.zeros((n, c, hp, wp))
    for i, j in itertools.product(range(k[0]), range(k[1])):
        out[:, :, i * d[0]:i * d[0] + s[0] * (oh - 1) + 1:s[0],
            j * d[1]:j * d[1] + s[1] * (ow - 1) + 1:s[1]] += cols[:, :, i, j]
    return out[:, :, p[0]:p[0] + o[0], p[1]:p[1] + o[1]]


def _conv_samples(nsp):
    def samples(device, dtype):
        rng = np.random.default_rng(nsp)
        sp = (5, 4, 4)[:nsp] if nsp < 3 else (3, 4, 3)
        k = (3, 2, 2)[:nsp]
        yield Sample((_t(rng, (2, 4, *sp), device, dtype), _t(rng, (4, 4, *k), device, dtype),
                      _t(rng, (4,), device, dtype)), desc="bias")
        yield Sample((_t(rng, (1, 4, *sp), device, dtype), _t(rng, (2, 2, *k), device, dtype)),
                     dict(stride=2, padding=1, dilation=1, groups=2), desc="strided groups")
        yield Sample((_t(rng, (4, *sp), device, dtype), _t(rng, (3, 4, *k), device, dtype)),
                     dict(padding="same", dilation=2 if nsp == 1 else 1), desc="unbatched same")
    return samples


def _conv_t_samples(nsp):
    def samples(device, dtype):
        rng = np.random.default_rng(10 + nsp)
        sp = (3, 3, 2)[:nsp]
        k = (3, 2, 2)[:nsp]
        yield Sample((_t(rng, (2, 4, *sp), device, dtype), _t(rng, (4, 3, *k), device, dtype),
                      _t(rng, (3,), device, dtype)), desc="bias")
        yield Sample((_t(rng, (1, 4, *sp), device, dtype), _t(rng, (4, 1, *k), device, dtype)),
                     dict(stride=2, padding=1, output_padding=1, groups=2), desc="strided groups")
    return samples


def _conv_errors(nsp, op):
    def errors(device):
        w = tensor(np.zeros((4, 3) + (3,) * nsp), device=device)
        yield ErrorCase((tensor(np.zeros((1, 2) + (5,) * nsp), device=device), w), {},
                        RuntimeError, "expected input with 3 channels")
        yield ErrorCase((tensor(np.zeros((1, 3) + (2,) * nsp), device=device), w), {},
                        RuntimeError, "is smaller than the")
        yield ErrorCase((tensor(np.zeros((3,)), device=device), w), {}, RuntimeError,
                        f"Expected {nsp + 1}D \\(unbatched\\) or {nsp + 2}D")
    return errors


ENTRIES = [
    OpEntry(f"nn.functional.conv{n}d", getattr(F, f"conv{n}d"), _conv_samples(n), ref=np_conv,
            errors=_conv_errors(n, f"conv{n}d"), low_precision_tol=(1e-4, 1e-4))
    for n in (1, 2, 3)
] + [
    OpEntry(f"nn.functional.conv_transpose{n}d", getattr(F, f"conv_transpose{n}d"),
            _conv_t_samples(n), ref=np_conv_t, low_precision_tol=(1e-4, 1e-4))
    for n in (1, 2, 3)
] + [
    OpEntry("nn.functional.unfold", F.unfold,
            lambda device, dtype: [Sample((_t(np.random.default_rng(0), (2, 2, 5, 4), device,
                                              dtype), (2, 3)),
                                          dict(dilation=(2, 1), padding=1, stride=(1, 2)))],
            ref=np_unfold),
    OpEntry("nn.functional.fold", F.fold,
            lambda device, dtype: [Sample((_t(np.random.default_rng(1), (2, 12, 12), device,
                                              dtype), (4, 5), (2, 3)),
                                          dict(dilation=(2, 1), padding=1, stride=(1, 2)))],
            ref=np_fold),
]
