"""Registry entries for the indexing composites (ops/surface_index.cpp)."""
from __future__ import annotations

import warnings

import numpy as np

import ember

from . import OpEntry, Sample
from ._util import err, make

FL = ("float32", "float64")


def _s(*args, desc="", **kwargs):
    return Sample(args, kwargs, desc)


def _index_fill_ref(a, dim, index, value):
    r = a.copy()
    sl = [slice(None)] * a.ndim
    sl[dim] = index
    r[tuple(sl)] = value
    return r


def _index_copy_ref(a, dim, index, source):
    r = a.copy()
    sl = [slice(None)] * a.ndim
    sl[dim] = index
    r[tuple(sl)] = source
    return r


def _masked_scatter_ref(a, mask, source):
    r = a.copy()
    m = np.broadcast_to(mask, a.shape)
    r[m] = source.ravel()[:m.sum()]
    return r


def _put_ref(a, index, source, accumulate=False):
    r = a.copy().ravel()
    if accumulate:
        np.add.at(r, index.ravel(), source.ravel())
    else:
        r[index.ravel()] = source.ravel()
    return r.reshape(a.shape)


def _idx(values, d):
    return ember.tensor(values, dtype=ember.int64, device=d)


ENTRIES = [
    OpEntry("index_fill", ember.index_fill,
            lambda d, t: [_s(make((3, 4), d, t), 1, _idx([0, 2], d), -1.0),
                          _s(make((3, 4), d, t), 0, _idx([1], d), ember.tensor(2.5, dtype=t, device=d))],
            lambda a, dim, i, v: _index_fill_ref(a, dim, i, v), dtypes=FL + ("int64",),
            aliases=("Tensor.index_fill", "Tensor.index_fill_"),
            errors=lambda d: [err(IndexError, "out of|index", make((3, 4), d, ember.float32), 0, _idx([5], d), 1.0)]),
    OpEntry("index_copy", ember.index_copy,
            lambda d, t: [_s(make((4, 3), d, t), 0, _idx([3, 0], d), make((2, 3), d, t, seed=2)),
                          _s(make((4, 3), d, t), 1, _idx([2], d), make((4, 1), d, t, seed=3))],
            _index_copy_ref, dtypes=FL + ("int64",), aliases=("Tensor.index_copy", "Tensor.index_copy_"),
            errors=lambda d: [err(IndexError, "Number of indices", make((4, 3), d, ember.float32), 0,
                                  _idx([0, 1], d), make((3, 3), d, ember.float32))]),
    OpEntry("masked_scatter", ember.masked_scatter,
            lambda d, t: [_s(make((3, 4), d, t), make((3, 4), d, ember.bool, seed=4), make((12,), d, t, seed=5)),
                          _s(make((3, 4), d, t), make((4,), d, ember.bool, seed=6), make((3, 5), d, t, seed=7))],
            _masked_scatter_ref, dtypes=FL + ("int64",),
            aliases=("Tensor.masked_scatter", "Tensor.masked_scatter_"),
            errors=lambda d: [err(RuntimeError, "at least", ember.zeros(3, device=d), ember.ones(3, dtype=ember.bool, device=d),
                                  ember.ones(2, device=d))]),
    OpEntry("put", ember.put,
            lambda d, t: [_s(make((3, 4), d, t), _idx([0, 5, 11], d), make((3,), d, t, seed=2)),
                          _s(make((3, 4), d, t), _idx([1, 1, -1], d), make((3,), d, t, seed=3), accumulate=True)],
            _put_ref, dtypes=FL + ("int64",), aliases=("Tensor.put", "Tensor.put_"),
            errors=lambda d: [err(RuntimeError, "same number of elements", make((3,), d, ember.float32),
                                  _idx([0, 1], d), make((3,), d, ember.float32))]),
]


def _scatter_reduce_ref(a, dim, index, src, reduce, include_self=True):
    out = a.astype(np.float64).copy()
    src = src.astype(np.float64)
    groups = {}
    for pos in np.ndindex(index.shape):
        tgt = list(pos)
        tgt[dim] = index[pos]
        groups.setdefault(tuple(tgt), []).append(src[pos])
    for tgt, vals in groups.items():
        vals = ([out[tgt]] if include_self else []) + vals
        out[tgt] = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}[reduce](vals)
    return out.astype(a.dtype) if a.dtype.kind == "f" else np.floor(out).astype(a.dtype)


def _sr_samples(d, t):
    idx = ember.tensor([[0, 1, 0], [2, 2, 1]], device=d)
    for red in ("sum", "prod", "mean", "amax", "amin"):
        for inc in (True, False):
            yield _s(make((3, 3), d, t, low=0.5, high=2), 0, idx, make((2, 4), d, t, low=0.5, high=2, seed=3), red,
                     include_self=inc, desc=f"{red} include_self={inc}")


ENTRIES += [
    OpEntry("scatter_reduce", ember.scatter_reduce, _sr_samples, _scatter_reduce_ref, dtypes=FL,
            aliases=("Tensor.scatter_reduce", "Tensor.scatter_reduce_"),
            errors=lambda d: [err(RuntimeError, "reduce argument must be", ember.zeros(3, device=d), 0, _idx([0], d),
                                  ember.ones(1, device=d), "median"),
                              err(IndexError, "out of bounds", ember.zeros(3, device=d), 0, _idx([5], d),
                                  ember.ones(1, device=d), "sum")]),
    OpEntry("index_reduce", ember.index_reduce,
            lambda d, t: [_s(make((4, 2), d, t, low=0.5, high=2), 0, _idx([0, 3, 0], d),
                             make((3, 2), d, t, low=0.5, high=2, seed=5), r, include_self=inc)
                          for r in ("prod", "mean", "amax", "amin") for inc in (True, False)],
            lambda a, dim, index, source, reduce, include_self=True: _scatter_reduce_ref(
                a, dim, np.broadcast_to(index[:, None], source.shape), source, reduce, include_self),
            dtypes=FL, aliases=("Tensor.index_reduce", "Tensor.index_reduce_")),
]


def _scatter_ref(a, dim, index, src=None, value=None, reduce=None):
    r = a.copy()
    v = value if src is None else src
    for pos in np.ndindex(index.shape):
        tgt = list(pos)
        tgt[dim] = index[pos]
        x = v[pos] if isinstance(v, np.ndarray) and v.ndim else v
        if reduce == "add":
            r[tuple(tgt)] += x
        elif reduce == "multiply":
            r[tuple(tgt)] *= x
        else:
            r[tuple(tgt)] = x
    return r


def _scatter_samples(d, t):
    idx = ember.tensor([[0, 1, 2], [2, 0, 1]], device=d)  # a permutation per column: no collisions
    yield _s(make((3, 4), d, t), 0, idx, make((2, 3), d, t, seed=1), desc="src")
    yield _s(make((3, 4), d, t, noncontig=True), 1, idx, value=1.5, desc="value")


def _scatter_reduce_samples(d, t):
    idx = ember.tensor([[0, 1, 0], [2, 0, 0]], device=d)  # duplicates combine
    for red in ("add", "multiply"):
        yield _s(make((3, 4), d, t, low=0.5, high=2), 0, idx, make((2, 3), d, t, seed=1), reduce=red, desc=red)
        yield _s(make((3, 4), d, t, low=0.5, high=2), 1, idx, value=2, reduce=red, desc=f"{red} value")


def _scatter_inplace(a, *args, **kwargs):
    r = a.clone()
    with warnings.catch_warnings():  # reduce= with a tensor src is deprecated
        warnings.simplefilter("ignore")
        assert r.scatter_(*args, **kwargs) is r
    return r


def _scatter_errors(d):
    t, i = ember.ones(3, device=d), _idx([0, 2], d)
    return [err(RuntimeError, "reduce argument must be either add or multiply", t, 0, i, value=2.0, reduce="mean"),
            err(RuntimeError, "index 5 is out of bounds", t, 0, _idx([5], d), value=2.0, reduce="add"),
            err(TypeError, "argument 'reduce' must be str", t, 0, i, value=2.0, reduce=3)]


ENTRIES += [
    OpEntry("scatter", ember.scatter, _scatter_samples, _scatter_ref, dtypes=FL + ("int64",),
            aliases=("Tensor.scatter",), errors=_scatter_errors),
    OpEntry("Tensor.scatter_", _scatter_inplace, lambda d, t: list(_scatter_samples(d, t)) + list(
                _scatter_reduce_samples(d, t)), _scatter_ref, dtypes=FL + ("int64",), grad=False,
            errors=_scatter_errors,
            note="the reduce= forms are not differentiable in PyTorch (backward raises, tested in "
                 "tests/test_out_resize.py); the plain forms' gradients are the 'scatter' entry's"),
]
