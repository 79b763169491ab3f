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
