"""Registry entries for reductions and statistics (ops/surface_reduce.cpp)."""
from __future__ import annotations

import numpy as np

import ember

from . import OpEntry, Sample
from ._util import err, make

FL = ("float32", "float64")


def _s(*args, desc="", **kwargs):
    return Sample(args, kwargs, desc)


def _with_nans(device, dtype, seed=0):
    t = make((3, 5), device, dtype, seed=seed)
    if dtype.is_floating_point:
        t[0, 1] = float("nan")
        t[2, 3] = float("nan")
    return t


def _diff_ref(a, n=1, dim=-1, prepend=None, append=None):
    return np.diff(a, n, axis=dim, prepend=prepend if prepend is not None else np._NoValue,
                   append=append if append is not None else np._NoValue)


def _logcumsumexp_ref(a, dim):
    return np.logaddexp.accumulate(a, axis=dim)


def _cov_ref(a, correction=1, fweights=None, aweights=None):
    return np.cov(a, ddof=correction, fweights=fweights, aweights=aweights)


def _quantile_ref(nan):
    def ref(a, q, dim=None, keepdim=False, interpolation="linear"):
        f = np.nanquantile if nan else np.quantile
        with np.errstate(all="ignore"):
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return f(a, q, axis=dim, keepdims=keepdim, method=interpolation)
    return ref


def _renorm_ref(a, p, dim, maxnorm):
    axes = tuple(i for i in range(a.ndim) if i != dim)
    n = np.sum(np.abs(a) ** p, axis=axes, keepdims=True) ** (1.0 / p)
    return a * np.where(n > maxnorm, maxnorm / (n + 1e-7), 1.0)


def _take_along_ref(a, idx, dim=None):
    if dim is None:
        return np.take_along_axis(a.ravel(), idx.ravel(), 0)
    return np.take_along_axis(a, idx, dim)


def _histc_ref(a, bins=100, min=0, max=0):
    if min == max:
        min, max = a.min(), a.max()
    h, _ = np.histogram(a, bins=bins, range=(min, max))
    return h.astype(a.dtype)


ENTRIES = [
    OpEntry("nansum", ember.nansum, lambda d, t: [_s(_with_nans(d, t)), _s(_with_nans(d, t), 1, keepdim=True)],
            lambda a, dim=None, keepdim=False: np.nansum(a, axis=dim, keepdims=keepdim),
            dtypes=FL + ("int64",), aliases=("Tensor.nansum",)),
    OpEntry("nanmean", ember.nanmean, lambda d, t: [_s(_with_nans(d, t)), _s(_with_nans(d, t), 0)],
            lambda a, dim=None, keepdim=False: np.nanmean(a, axis=dim, keepdims=keepdim),
            dtypes=FL, aliases=("Tensor.nanmean",),
            errors=lambda d: [err(RuntimeError, "floating point", ember.ones(2, dtype=ember.int64, device=d))]),
    OpEntry("aminmax", ember.aminmax, lambda d, t: [_s(make((3, 4), d, t)), _s(make((3, 4), d, t), dim=1, keepdim=True)],
            lambda a, dim=None, keepdim=False: (np.amin(a, axis=dim, keepdims=keepdim), np.amax(a, axis=dim, keepdims=keepdim)),
            dtypes=FL + ("int64",), grad=False, aliases=("Tensor.aminmax",)),
    OpEntry("diff", ember.diff,
            lambda d, t: [_s(make((3, 5), d, t)), _s(make((3, 5), d, t), 2, 0),
                          _s(make((3, 5), d, t), 1, -1, make((3, 1), d, t, seed=2), make((3, 2), d, t, seed=3))],
            _diff_ref, dtypes=FL + ("int64", "bool"), aliases=("Tensor.diff",),
            errors=lambda d: [err(RuntimeError, "at least one-dimensional", ember.tensor(1.0, device=d))]),
    OpEntry("logcumsumexp", ember.logcumsumexp, lambda d, t: [_s(make((3, 5), d, t), 1), _s(make((4,), d, t), 0)],
            _logcumsumexp_ref, dtypes=FL, aliases=("Tensor.logcumsumexp",)),
    OpEntry("cov", ember.cov,
            lambda d, t: [_s(make((3, 6), d, t)), _s(make((6,), d, t)), _s(make((2, 5), d, t), correction=0),
                          _s(make((2, 5), d, t), fweights=ember.tensor([1, 2, 1, 3, 1], device=d),
                             aweights=make((5,), d, t, low=0.5, high=2, seed=4))],
            _cov_ref, dtypes=FL, aliases=("Tensor.cov",),
            errors=lambda d: [err(RuntimeError, "two or fewer dimensions", ember.ones(2, 2, 2, device=d))]),
    OpEntry("corrcoef", ember.corrcoef, lambda d, t: [_s(make((3, 6), d, t))], np.corrcoef, dtypes=FL,
            aliases=("Tensor.corrcoef",)),
    OpEntry("dist", ember.dist, lambda d, t: [_s(make((3, 4), d, t), make((4,), d, t, seed=2)),
                                              _s(make((3, 4), d, t), make((3, 4), d, t, seed=2), 3)],
            lambda a, b, p=2: np.array(np.sum(np.abs(a - b) ** p) ** (1.0 / p)), dtypes=FL, aliases=("Tensor.dist",)),
    OpEntry("renorm", ember.renorm, lambda d, t: [_s(make((3, 4), d, t), 2, 0, 1.5), _s(make((2, 3, 2), d, t), 1, 1, 2.0)],
            _renorm_ref, dtypes=FL, aliases=("Tensor.renorm", "Tensor.renorm_")),
    OpEntry("quantile", ember.quantile,
            lambda d, t: [_s(make((3, 7), d, t), 0.3), _s(make((3, 7), d, t), ember.tensor([0.1, 0.25, 0.9], dtype=t, device=d), 1),
                          _s(make((3, 6), d, t), 0.4, 0, True, interpolation="lower"),
                          _s(make((3, 6), d, t), 0.4, 1, interpolation="higher"),
                          _s(make((3, 6), d, t), 0.45, 1, interpolation="midpoint"),
                          _s(make((3, 6), d, t), 0.3, 1, interpolation="nearest")] +
            ([_s(_with_nans(d, t), 0.5, 1)] if t != ember.float64 else []),
            _quantile_ref(False), dtypes=FL, aliases=("Tensor.quantile",),
            errors=lambda d: [err(RuntimeError, r"in the range \[0, 1\]", ember.ones(3, device=d), 1.5),
                              err(RuntimeError, "float or double", ember.ones(3, dtype=ember.int64, device=d), 0.5)]),
    OpEntry("nanquantile", ember.nanquantile,
            lambda d, t: [_s(_with_nans(d, t), 0.5, 1), _s(_with_nans(d, t), 0.25),
                          _s(_with_nans(d, t), ember.tensor([0.1, 0.9], dtype=t, device=d), 0, True)],
            _quantile_ref(True), dtypes=FL, aliases=("Tensor.nanquantile",)),
    OpEntry("take_along_dim", ember.take_along_dim,
            lambda d, t: [_s(make((3, 4), d, t), ember.tensor([[0, 3], [1, 1], [2, 0]], device=d), 1),
                          _s(make((3, 4), d, t), ember.tensor([5, 0, 11], device=d))],
            _take_along_ref, dtypes=FL + ("int64",), aliases=("Tensor.take_along_dim",)),
    OpEntry("bincount", ember.bincount,
            lambda d, t: [_s(ember.tensor([0, 3, 3, 1, 7], device=d)),
                          _s(ember.tensor([0, 3, 3, 1], device=d), make((4,), d, t), minlength=6)],
            lambda a, w=None, minlength=0: np.bincount(a, w, minlength).astype(
                np.int64 if w is None else w.dtype), dtypes=FL, aliases=("Tensor.bincount",),
            errors=lambda d: [err(RuntimeError, "non-negative", ember.tensor([-1, 2], device=d))]),
    OpEntry("histc", ember.histc, lambda d, t: [_s(make((20,), d, t), 5, -2, 2), _s(make((20,), d, t), 4)],
            _histc_ref, dtypes=FL, grad=False, aliases=("Tensor.histc",),
            errors=lambda d: [err(RuntimeError, "max must be larger", ember.ones(3, device=d), 4, 2, 1)]),
]


def _nanmedian_ref(a, dim=None, keepdim=False):
    if dim is None:
        v = a[~np.isnan(a)]
        return np.array(np.sort(v)[(len(v) - 1) // 2] if len(v) else np.nan, dtype=a.dtype)
    s = np.sort(a, axis=dim)
    k = np.sum(~np.isnan(a), axis=dim, keepdims=True)
    idx = np.maximum((k - 1) // 2, 0)
    v = np.take_along_axis(s, idx, dim)
    return v if keepdim else np.squeeze(v, dim)


ENTRIES += [
    OpEntry("nanmedian", lambda a, *args, **kw: (lambda r: r if isinstance(r, ember.Tensor) else r.values)(
                ember.nanmedian(a, *args, **kw)),
            lambda d, t: [_s(_with_nans(d, t)), _s(_with_nans(d, t), 1), _s(_with_nans(d, t), 0, True),
                          _s(make((4, 6), d, t), 1)],
            _nanmedian_ref, dtypes=FL, aliases=("Tensor.nanmedian",)),
]


def _cum_ref(kind):
    def ref(a, dim):
        a = np.moveaxis(a, dim, -1)
        v = np.empty_like(a)
        i = np.zeros(a.shape, dtype=np.int64)
        for idx in np.ndindex(a.shape[:-1]):
            best, bi = a[idx + (0,)], 0
            for j in range(a.shape[-1]):
                x = a[idx + (j,)]
                if not np.isnan(best) and (np.isnan(x) or (x >= best if kind == "max" else x <= best)):
                    best, bi = x, j
                v[idx + (j,)] = best
                i[idx + (j,)] = bi
        return np.moveaxis(v, -1, dim), np.moveaxis(i, -1, dim)
    return ref


def _mode_ref(a, dim=-1, keepdim=False):
    a2 = np.moveaxis(a, dim, -1)
    vals = np.empty(a2.shape[:-1], dtype=a.dtype)
    idxs = np.empty(a2.shape[:-1], dtype=np.int64)
    for idx in np.ndindex(a2.shape[:-1]):
        row = a2[idx]
        u, c = np.unique(row, return_counts=True)
        best = u[np.argmax(c)]
        vals[idx] = best
        idxs[idx] = np.nonzero(row == best)[0][-1]
    if keepdim:
        vals, idxs = np.expand_dims(vals, dim), np.expand_dims(idxs, dim)
    return vals, idxs


def _cum_samples(d, t):
    yield _s(make((3, 5), d, t), 1)
    yield _s(make((4, 3), d, t), 0)
    if t != ember.float64:
        yield _s(_ties(d, t), 1)
    if t == ember.float32:
        yield _s(ember.tensor([1.0, float("nan"), 0.0, 2.0], dtype=t, device=d), 0)


def _ties(d, t):
    return ember.tensor([[1, 3, 3, 0, 3, 1], [2, 2, 1, 1, 5, 0]], dtype=t, device=d)


ENTRIES += [
    OpEntry("cummax", lambda a, dim: tuple(ember.cummax(a, dim)), _cum_samples, _cum_ref("max"),
            dtypes=FL + ("int64",), aliases=("Tensor.cummax",),
            note="float64 samples (gradcheck) have no ties; float32/int64 ones do"),
    OpEntry("cummin", lambda a, dim: tuple(ember.cummin(a, dim)), _cum_samples, _cum_ref("min"),
            dtypes=FL + ("int64",), aliases=("Tensor.cummin",)),
    OpEntry("mode", lambda a, *args, **kw: tuple(ember.mode(a, *args, **kw)),
            lambda d, t: [_s(_ties(d, t)), _s(_ties(d, t), 0), _s(_ties(d, t), 1, True)],
            _mode_ref, dtypes=FL + ("int64",), aliases=("Tensor.mode",), grad=False,
            note="mode is not differentiable across ties; its gradient is checked in tests/test_surface_numerics.py"),
]


def _histogram_ref(a, bins=100, range=None, weight=None, density=False):
    h, e = np.histogram(a, bins=bins, range=range, weights=weight, density=density)
    return h.astype(a.dtype), e.astype(a.dtype)


ENTRIES += [
    OpEntry("histogram", lambda *a, **k: tuple(ember.histogram(*a, **k)),
            lambda d, t: [_s(make((30,), d, t), 5), _s(make((30,), d, t), 4, range=(-1.0, 2.0)),
                          _s(make((30,), d, t), ember.tensor([-3.0, -1.0, 0.0, 2.5], dtype=t, device=d)),
                          _s(make((30,), d, t), 3, weight=make((30,), d, t, low=0, high=1, seed=2), density=True)],
            _histogram_ref, dtypes=FL, grad=False, aliases=("Tensor.histogram",),
            errors=lambda d: [err(RuntimeError, "min should not exceed max", ember.ones(3, device=d), 3, range=(2.0, 1.0))]),
]
