"""Registry entries for the joins, sort/topk and the deterministic factories, each also run
through its out= form (ops/out.h: an empty out is resized to the result)."""
from __future__ import annotations

import numpy as np

import ember

from . import OpEntry, Sample
from ._util import err, make
from ._util import via_out as _via_out

FL = ("float32", "float64")


def _s(*args, desc="", **kwargs):
    return Sample(args, kwargs, desc)


def _join_samples(d, t):
    yield _s([make((2, 3), d, t), make((4, 3), d, t, seed=1)], 0, desc="dim 0")
    yield _s([make((2, 3), d, t), make((2, 1), d, t, seed=2, noncontig=True)], -1, desc="noncontig")


def _stack_samples(d, t):
    yield _s([make((2, 3), d, t), make((2, 3), d, t, seed=1)], 1)
    yield _s([make((), d, t), make((), d, t, seed=3)], 0, desc="0-d")


def _sort_samples(d, t):
    yield _s(make((3, 5), d, t), 1)
    yield _s(make((4, 2), d, t, seed=4), 0, descending=True)


def _sort_ref(a, dim=-1, descending=False):
    idx = np.argsort(-a if descending else a, axis=dim, kind="stable")
    return np.take_along_axis(a, idx, dim), idx


def _topk_samples(d, t):
    yield _s(make((3, 5), d, t), 2)
    yield _s(make((4, 6), d, t, seed=4), 3, 0, largest=False, desc="dim 0, smallest")
    yield _s(make((2, 3, 7), d, t, seed=5, noncontig=True), 1, -1, desc="noncontig")
    yield _s(make((), d, t, seed=6), 1, desc="0-d")


def _topk_ref(a, k, dim=-1, largest=True, sorted=True):
    if a.ndim == 0:
        return a.copy(), np.asarray(0)
    idx = np.argsort(-a if largest else a, axis=dim, kind="stable")
    idx = np.take(idx, np.arange(k), axis=dim)
    return np.take_along_axis(a, idx, dim), idx


def _factory(fn):
    def call(*a, device=None, dtype=None, **k):
        if k:  # the error cases pass their own out=
            return fn(*a, device=device, dtype=dtype, **k)
        return _via_out(lambda *b, **kk: fn(*b, device=device, dtype=dtype, **kk))(*a)
    return call


def _fs(*args):
    return lambda d, t: [Sample(args, dict(device=d, dtype=t))]


def _no_grad(name):
    return f"{name} makes a new tensor from numbers: no tensor input to differentiate"


def _out_errors(fn, *args):
    def errors(d):
        return [err(RuntimeError, "dtype float32 does not match dtype of out parameter", *args,
                    dtype=ember.float32, out=ember.empty(0, dtype=ember.float64, device=d)),
                err(TypeError, "argument 'out' must be Tensor", *args, out=1)]
    return errors


ENTRIES = [
    OpEntry("cat", _via_out(ember.cat), _join_samples, lambda ts, dim=0: np.concatenate(ts, dim),
            dtypes=FL + ("int64",), aliases=("concat", "concatenate"),
            errors=lambda d: [err(TypeError, "input types can't be cast to the desired output type",
                                  [ember.ones(2, device=d)],
                                  out=ember.empty(0, dtype=ember.int64, device=d))]),
    OpEntry("stack", _via_out(ember.stack), _stack_samples, lambda ts, dim=0: np.stack(ts, dim),
            dtypes=FL + ("int64",)),
    OpEntry("sort", _via_out(ember.sort), _sort_samples, _sort_ref, dtypes=FL, aliases=("Tensor.sort",),
            errors=lambda d: [err(RuntimeError, "expected out tensor to have dtype int64",
                                  ember.ones(3, device=d),
                                  out=(ember.empty(0, device=d), ember.empty(0, device=d)))]),
    OpEntry("topk", _via_out(ember.topk), _topk_samples, _topk_ref, dtypes=FL, aliases=("Tensor.topk",),
            errors=lambda d: [err(RuntimeError, "expected out tensor to have dtype float32",
                                  ember.ones(3, device=d), 2,
                                  out=(ember.empty(0, dtype=ember.float64, device=d),
                                       ember.empty(0, dtype=ember.int64, device=d))),
                              err(TypeError, "must be a tuple of two Tensors", ember.ones(3, device=d), 2,
                                  out=ember.empty(0, device=d))]),
    OpEntry("zeros", _factory(ember.zeros), _fs(2, 3), lambda *s, **_: np.zeros(s), grad=False,
            dtypes=FL + ("int64",), note=_no_grad("zeros"), errors=_out_errors(ember.zeros, 2)),
    OpEntry("ones", _factory(ember.ones), _fs(3), lambda *s, **_: np.ones(s), grad=False,
            dtypes=FL + ("int64",), note=_no_grad("ones"), errors=_out_errors(ember.ones, 2)),
    OpEntry("full", _factory(ember.full), _fs((2, 2), 3), lambda s, v, **_: np.full(s, v), grad=False,
            dtypes=FL + ("int64",), note=_no_grad("full"), errors=_out_errors(ember.full, (2,), 1.0)),
    OpEntry("arange", _factory(ember.arange), _fs(1, 9, 3), lambda *a, **_: np.arange(*a), grad=False,
            dtypes=FL + ("int64",), note=_no_grad("arange"), errors=_out_errors(ember.arange, 4)),
    OpEntry("linspace", _factory(ember.linspace), _fs(-1, 2, 7), lambda *a, **_: np.linspace(*a),
            grad=False, note=_no_grad("linspace"), errors=_out_errors(ember.linspace, 0, 1, 3)),
    OpEntry("logspace", _factory(ember.logspace), _fs(0, 2, 5), lambda *a, **_: np.logspace(*a),
            grad=False, note=_no_grad("logspace"), rtol=1e-5, errors=_out_errors(ember.logspace, 0, 1, 3)),
    OpEntry("eye", _factory(ember.eye), _fs(3, 4), lambda n, m, **_: np.eye(n, m), grad=False,
            dtypes=FL + ("int64",), note=_no_grad("eye"), errors=_out_errors(ember.eye, 2)),
]
