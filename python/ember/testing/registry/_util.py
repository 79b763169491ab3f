"""Helpers shared by the registry's family modules: seeded sample tensors."""
from __future__ import annotations

import numpy as np

import ember


def make(shape, device, dtype, *, low=-3.0, high=3.0, seed=0, noncontig=False):
    """A tensor of ``shape`` with values uniform in [low, high) (integers: rounded;
    bool: random), made on ``device`` with ``dtype``; ``noncontig`` gives a strided view."""
    rng = np.random.default_rng(seed + 7919 * len(shape) + sum(shape))
    full = tuple(shape[:-1]) + (shape[-1] * 2,) if (noncontig and shape) else tuple(shape)
    if dtype == ember.bool:
        a = rng.random(full) > 0.5
    elif dtype.is_floating_point:
        a = rng.uniform(low, high, full)
    else:
        a = np.round(rng.uniform(low, high, full))
        if dtype == ember.uint8:
            a = np.abs(a)
    t = ember.from_numpy(np.array(a, copy=True, order="C")).to(dtype=dtype, device=device)
    if noncontig and shape:
        t = t[..., ::2]
    return t


def ints(values, device):
    return ember.tensor(values, dtype=ember.int64, device=device)


def err(exc, match, *args, **kwargs):
    from . import ErrorCase
    return ErrorCase(args, kwargs, exc, match)


def via_out(fn):
    """fn, and (when nothing requires grad) fn into an empty out= compared with it; a
    (values, indices) result also checks that out= returns the out tensors themselves."""
    def call(*args, **kwargs):
        r = fn(*args, **kwargs)
        if isinstance(r, tuple) and not r[0].requires_grad:
            outs = tuple(ember.empty(0, dtype=t.dtype, device=t.device) for t in r)
            got = fn(*args, out=outs, **kwargs)
            assert got[0] is outs[0] and got[1] is outs[1]
            assert type(got).__name__ == type(r).__name__ + "_out", type(got)  # torch.return_types
            for a, b in zip(outs, r):
                assert ember.equal(a, b)
            return r
        if isinstance(r, tuple) or r.requires_grad:
            return r
        o = ember.empty(0, dtype=r.dtype, device=r.device)
        assert fn(*args, out=o, **kwargs) is o
        return o
    return call
