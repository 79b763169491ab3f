"""Registry entries for the random fills of the torch surface (ops/surface_random.cpp).
Their values are random, so they are checked by tests/test_surface_random.py
(moments against closed forms); the entries here cover the error cases."""
from __future__ import annotations

import ember

from . import OpEntry, Sample
from ._util import err


def _fill(name):
    return lambda t, *a, **k: getattr(t, name)(*a, **k)


def _s(*args, **kwargs):
    return Sample(args, kwargs)


ENTRIES = [
    OpEntry("Tensor.geometric_", _fill("geometric_"), lambda d, t: [_s(ember.empty(3, dtype=t, device=d), 0.5)],
            grad=False, note="values: tests/test_surface_random.py",
            errors=lambda d: [err(RuntimeError, r"\(0, 1\)", ember.empty(3, device=d), 0.0)]),
    OpEntry("Tensor.log_normal_", _fill("log_normal_"), lambda d, t: [_s(ember.empty(3, dtype=t, device=d))],
            grad=False, note="values: tests/test_surface_random.py",
            errors=lambda d: [err(RuntimeError, "floating point", ember.empty(3, dtype=ember.int64, device=d))]),
    OpEntry("Tensor.cauchy_", _fill("cauchy_"), lambda d, t: [_s(ember.empty(3, dtype=t, device=d))],
            grad=False, note="values: tests/test_surface_random.py",
            errors=lambda d: [err(RuntimeError, "sigma > 0", ember.empty(3, device=d), 0.0, -1.0)]),
    OpEntry("poisson", ember.poisson, lambda d, t: [_s(ember.ones(3, dtype=t, device=d))],
            grad=False, note="values: tests/test_surface_random.py",
            errors=lambda d: [err(RuntimeError, "non-negative", ember.tensor([-1.0], device=d))]),
]
