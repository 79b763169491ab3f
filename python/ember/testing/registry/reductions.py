"""Registry entries for reductions and statistics (ops/surface_reduce.cpp)."""
from __future__ import annotations

import warnings

import numpy as np

import ember

from . import OpEntry, Sample
from ._util import err, make
from ._util import via_out as _via_out

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


# --- core reductions (issue 6: moved out of _exempt.py so they get registry gradcheck) ---

def _red_samples(*, empty=True, zero_d=True, dims=True, multi=True):
    """Samples for a sum-like reduction: full, per-dim, keepdim, negative dim, tuple of
    dims, 0-d, empty and non-contiguous inputs."""
    def samples(d, t):
        yield _s(make((3, 4), d, t), desc="full")
        yield _s(make((3, 4, 2), d, t, noncontig=True, seed=1), desc="noncontig full")
        if dims:
            yield _s(make((3, 4), d, t), 1, desc="dim")
            yield _s(make((3, 4), d, t), 0, True, desc="keepdim")
            yield _s(make((2, 3, 4), d, t, noncontig=True, seed=2), -1, desc="neg dim noncontig")
            if multi:
                yield _s(make((2, 3, 4), d, t), (0, 2), desc="dims tuple")
                yield _s(make((2, 3, 4), d, t), (0, -1), True, desc="dims tuple keepdim")
        if zero_d:
            yield _s(make((), d, t, seed=3), desc="0-d")
            if dims:
                yield _s(make((), d, t, seed=3), 0, desc="0-d dim 0")
        if empty:
            yield _s(make((0, 3), d, t), desc="empty")
            if dims:
                yield _s(make((0, 3), d, t), 0, desc="empty reduce dim")
                yield _s(make((0, 3), d, t), 1, desc="empty keep dim")
    return samples


def _nd(a, dim):
    """A dim spec as NumPy takes it: tuples for lists, None for dim 0/-1 of a 0-d array."""
    if isinstance(dim, list):
        dim = tuple(dim)
    if a.ndim == 0 and dim is not None:
        return None
    return dim


def _np_red(f, **fixed):
    def ref(a, dim=None, keepdim=False, **kw):
        dim = _nd(a, dim)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # mean of an empty slice is nan, as in ember
            r = f(a, axis=dim, keepdims=keepdim, **fixed, **kw)
        return np.asarray(r)
    return ref


def _sum_ref(a, dim=None, keepdim=False, dtype=None):
    dim = _nd(a, dim)
    r = np.sum(a, axis=dim, keepdims=keepdim)
    if a.dtype == np.bool_ or a.dtype.kind in "iu":
        r = np.asarray(r).astype(np.int64)
    return np.asarray(r).astype(a.dtype if a.dtype.kind == "f" else np.int64)


def _prod_ref(a, dim=None, keepdim=False):
    dim = _nd(a, dim)
    r = np.asarray(np.prod(a, axis=dim, keepdims=keepdim))
    return r.astype(a.dtype if a.dtype.kind == "f" else np.int64)


def _values(f):
    """ember op returning (values, indices) for a dim call: the values and indices as a tuple."""
    def op(*a, **k):
        r = f(*a, **k)
        return r if isinstance(r, ember.Tensor) else (r.values, r.indices)
    return op


def _maxmin_ref(kind):
    def ref(a, dim=None, keepdim=False):
        if dim is None:
            return np.asarray(np.max(a) if kind == "max" else np.min(a))
        v = (np.max if kind == "max" else np.min)(a, axis=dim, keepdims=keepdim)
        i = (np.argmax if kind == "max" else np.argmin)(a, axis=dim)
        if keepdim:
            i = np.expand_dims(i, dim)
        return np.asarray(v), np.asarray(i).astype(np.int64)
    return ref


def _distinct(shape, d, t, seed=0, noncontig=False):
    """Values all distinct (a permutation), so max/min/median/kthvalue have no ties and
    gradcheck is well defined."""
    rng = np.random.default_rng(seed)
    full = tuple(shape[:-1]) + (shape[-1] * 2,) if (noncontig and shape) else tuple(shape)
    m = int(np.prod(full)) if full else 1
    a = (rng.permutation(m) - m // 2).astype(np.float64)
    if t.is_floating_point:
        a = (a + 0.3) * 0.37  # no zero and no |x| ties either (abs-based norms)
    x = ember.from_numpy(a.reshape(full)).to(dtype=t, device=d)
    return x[..., ::2] if (noncontig and shape) else x


def _maxmin_samples(d, t):
    yield _s(_distinct((3, 4), d, t), desc="full")
    yield _s(_distinct((3, 4), d, t, 1), 1, desc="dim")
    yield _s(_distinct((3, 4), d, t, 2), 0, True, desc="keepdim")
    yield _s(_distinct((2, 3, 4), d, t, 3, noncontig=True), -1, desc="noncontig neg dim")
    yield _s(_distinct((), d, t, 4), desc="0-d")
    yield _s(_distinct((), d, t, 4), 0, desc="0-d dim")
    yield _s(_distinct((0, 3), d, t), 1, desc="empty, reduce nonempty dim")


def _amax_samples(d, t):
    yield _s(_distinct((3, 4), d, t), desc="full")
    yield _s(_distinct((3, 4), d, t, 1), 1, desc="dim")
    yield _s(_distinct((3, 4), d, t, 2), 0, True, desc="keepdim")
    yield _s(_distinct((2, 3, 4), d, t, 3), (0, 2), desc="dims tuple")
    yield _s(_distinct((2, 3, 4), d, t, 3, noncontig=True), -1, desc="noncontig")
    yield _s(_distinct((), d, t, 4), desc="0-d")
    yield _s(_distinct((0, 3), d, t), 1, desc="empty, reduce nonempty dim")


def _median_ref(a, dim=None, keepdim=False):
    if a.ndim == 0 and dim is not None:
        return a.copy(), np.asarray(0)
    if dim is None:
        return np.asarray(np.sort(a.ravel())[(a.size - 1) // 2])
    s = np.sort(a, axis=dim)
    k = (a.shape[dim] - 1) // 2 if a.ndim else 0
    if a.ndim == 0:
        return a, np.asarray(0)
    v = np.take(s, [k], axis=dim)
    i = np.take(np.argsort(a, axis=dim, kind="stable"), [k], axis=dim)
    if not keepdim:
        v, i = np.squeeze(v, dim), np.squeeze(i, dim)
    return v, i.astype(np.int64)


def _kth_ref(a, k, dim=-1, keepdim=False):
    if a.ndim == 0:
        return a, np.asarray(0)
    s = np.sort(a, axis=dim)
    v = np.take(s, [k - 1], axis=dim)
    i = np.take(np.argsort(a, axis=dim, kind="stable"), [k - 1], axis=dim)
    if not keepdim:
        v, i = np.squeeze(v, dim), np.squeeze(i, dim)
    return v, i.astype(np.int64)


def _lse_ref(a, dim, keepdim=False):
    if a.ndim == 0:
        return a.copy()
    m = np.max(a, axis=dim, keepdims=True) if a.size else np.zeros(1, a.dtype)
    m = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore"):
        r = np.log(np.sum(np.exp(a - m), axis=dim, keepdims=True)) + m
    return r if keepdim else np.squeeze(r, dim)


def _stat_ref(f):
    def ref(a, dim=None, *, correction=1, keepdim=False, unbiased=None):
        if unbiased is not None:
            correction = int(unbiased)
        dim = _nd(a, dim)
        with np.errstate(all="ignore"), __import__("warnings").catch_warnings():
            __import__("warnings").simplefilter("ignore")
            return np.asarray(f(a, axis=dim, ddof=correction, keepdims=keepdim))
    return ref


def _stat_mean_ref(f):
    s = _stat_ref(f)

    def ref(a, dim=None, *, correction=1, keepdim=False, unbiased=None):
        if isinstance(dim, list):
            dim = tuple(dim)
        return s(a, dim, correction=correction, keepdim=keepdim, unbiased=unbiased), \
            np.asarray(np.mean(a, axis=dim, keepdims=keepdim))
    return ref


def _stat_samples(d, t):
    yield _s(make((3, 4), d, t), desc="full")
    yield _s(make((3, 4), d, t), 1, desc="dim")
    yield _s(make((3, 4), d, t), 0, keepdim=True, desc="keepdim")
    yield _s(make((2, 3, 4), d, t, noncontig=True, seed=1), (0, 2), desc="dims noncontig")
    yield _s(make((3, 4), d, t), 1, correction=0, desc="correction 0")
    yield _s(make((3, 5), d, t), 1, correction=2, desc="correction 2")
    yield _s(make((3, 4), d, t), unbiased=False, desc="unbiased False")


def _vnorm_ref(a, ord=2, dim=None, keepdim=False):
    if isinstance(dim, list):
        dim = tuple(dim)
    x = np.abs(a)
    if ord == float("inf"):
        return np.asarray(np.max(x, axis=dim, keepdims=keepdim))
    if ord == float("-inf"):
        return np.asarray(np.min(x, axis=dim, keepdims=keepdim))
    if ord == 0:
        return np.asarray(np.sum(x != 0, axis=dim, keepdims=keepdim).astype(a.dtype))
    return np.asarray(np.sum(x ** ord, axis=dim, keepdims=keepdim) ** (1.0 / ord))


def _vnorm_samples(d, t):
    yield _s(make((3, 4), d, t), desc="2-norm full")
    yield _s(make((3, 4), d, t), 1, desc="1-norm")
    yield _s(make((3, 4), d, t), 3, 1, desc="3-norm dim")
    yield _s(make((3, 4), d, t), 2, (0, 1), True, desc="dims keepdim")
    yield _s(make((2, 3, 4), d, t, noncontig=True, seed=2), 2.5, -1, desc="noncontig")
    yield _s(_distinct((3, 4), d, t), float("inf"), 1, desc="inf")
    yield _s(_distinct((3, 4), d, t, 2), float("-inf"), 0, desc="-inf")
    yield _s(make((), d, t, seed=3), desc="0-d")
    yield _s(make((0, 3), d, t), 2, 0, desc="empty")


def _norm_ref(a, p="fro", dim=None, keepdim=False):
    if p == "fro" or p is None:
        p = 2
    return _vnorm_ref(a, p, dim, keepdim)


def _lnorm_ref(a, ord=None, dim=None, keepdim=False):
    if ord is None:
        return _vnorm_ref(a, 2, dim, keepdim)
    return np.asarray(np.linalg.norm(a, ord, axis=dim, keepdims=keepdim))


def _cum_ref2(f):
    def ref(a, dim):
        if a.ndim == 0:
            return a.copy()
        r = f(a, axis=dim)
        return r.astype(a.dtype if a.dtype.kind == "f" else np.int64)
    return ref


def _cum_samples2(d, t):
    yield _s(make((3, 4), d, t, low=-1.5, high=1.5), 1)
    yield _s(make((3, 4), d, t, low=-1.5, high=1.5), 0)
    yield _s(make((2, 3, 4), d, t, low=-1.5, high=1.5, noncontig=True, seed=1), -1, desc="noncontig")
    yield _s(make((), d, t, seed=3), 0, desc="0-d")
    yield _s(make((0, 3), d, t), 0, desc="empty")
    yield _s(make((0, 3), d, t), 1, desc="empty other dim")


def _cumprod_samples(d, t):
    yield from _cum_samples2(d, t)
    yield _s(ember.tensor([[2.0, 0.0, 3.0, -1.0], [0.0, 1.5, 0.0, 2.0]], dtype=t, device=d), 1,
             desc="zeros")


def _prod_samples(d, t):
    yield from _red_samples(multi=False)(d, t)
    z = ember.tensor([[2.0, 0.0, 3.0, -1.0], [0.0, 1.5, 0.0, 2.0]], dtype=t, device=d)
    yield _s(z, desc="zeros full")  # one row with one zero, one with two
    yield _s(z, 1, desc="zeros dim 1")
    yield _s(z, 0, True, desc="zeros dim 0 keepdim")


def _trace_samples(d, t):
    yield _s(make((3, 3), d, t))
    yield _s(make((3, 5), d, t, seed=1), desc="wide")
    yield _s(make((5, 2), d, t, seed=2), desc="tall")
    yield _s(make((4, 4), d, t, noncontig=True, seed=3), desc="noncontig")
    yield _s(make((0, 3), d, t), desc="empty")


def _bool_samples(d, t):
    yield _s(make((3, 4), d, t))
    yield _s(make((3, 4), d, t), 1)
    yield _s(make((3, 4), d, t), 0, True)
    yield _s(make((2, 3, 4), d, t, noncontig=True, seed=1), -1)
    yield _s(make((), d, t, seed=3))
    yield _s(make((0, 3), d, t))
    yield _s(make((0, 3), d, t), 0)
    yield _s(ember.zeros(2, 3, dtype=t, device=d), 1)


def _bool_ref(f):
    def ref(a, dim=None, keepdim=False):
        return np.asarray(f(a, axis=_nd(a, dim), keepdims=keepdim))
    return ref


def _arg_ref(f):
    def ref(a, dim=None, keepdim=False):
        if dim is None:
            r = np.asarray(f(a.ravel()))
            return r.reshape((1,) * a.ndim) if keepdim else r
        if a.ndim == 0:
            return np.asarray(0)
        r = f(a, axis=dim)
        return np.expand_dims(r, dim) if keepdim else np.asarray(r)
    return ref


def _arg_samples(d, t):
    yield _s(_distinct((3, 4), d, t))
    yield _s(_distinct((3, 4), d, t, 1), 1)
    yield _s(_distinct((3, 4), d, t, 2), 0, True)
    yield _s(_distinct((2, 3, 4), d, t, 3, noncontig=True), -1)
    yield _s(_distinct((), d, t, 4))
    yield _s(_distinct((3, 4), d, t, 5), None, True, desc="flat keepdim")


def _cnz_ref(a, dim=None):
    return np.asarray(np.count_nonzero(a, axis=dim)).astype(np.int64)


def _tup(f):
    return lambda *a, **k: tuple(f(*a, **k))


def _e(exc, match, *a, **k):
    return err(exc, match, *a, **k)


ENTRIES += [
    OpEntry("sum", ember.sum, _red_samples(), _sum_ref, dtypes=FL + ("int64", "bool"),
            aliases=("Tensor.sum",),
            errors=lambda d: [_e(IndexError, "Dimension out of range", make((2, 3), d, ember.float32), 2)]),
    OpEntry("mean", ember.mean, _red_samples(), _np_red(np.mean), dtypes=FL, aliases=("Tensor.mean",),
            errors=lambda d: [_e(RuntimeError, r"mean\(\): could not infer output dtype",
                                 ember.ones(2, dtype=ember.int64, device=d)),
                              _e(IndexError, "Dimension out of range", make((2, 3), d, ember.float32), -3)]),
    OpEntry("prod", ember.prod, _prod_samples,
            _prod_ref, dtypes=FL + ("int64",), aliases=("Tensor.prod",),
            errors=lambda d: [_e(TypeError, "prod", make((2, 3), d, ember.float32), (0, 1))]),
    OpEntry("amax", ember.amax, _amax_samples, _np_red(np.amax), dtypes=FL + ("int64",), aliases=("Tensor.amax",),
            errors=lambda d: [_e(IndexError, "Dimension out of range", make((2, 3), d, ember.float32), 5),
                              _e(IndexError, r"amax\(\): Expected reduction dim 0 to have non-zero size",
                                 make((0, 3), d, ember.float32), 0)]),
    OpEntry("amin", ember.amin, _amax_samples, _np_red(np.amin), dtypes=FL + ("int64",), aliases=("Tensor.amin",)),
    OpEntry("max", _values(ember.max), _maxmin_samples, _maxmin_ref("max"), dtypes=FL + ("int64",),
            aliases=("Tensor.max",),
            errors=lambda d: [_e(IndexError, "Dimension out of range", make((2, 3), d, ember.float32), 2),
                              _e(IndexError, r"max\(\): Expected reduction dim 0 to have non-zero size",
                                 make((0, 3), d, ember.float32), 0),
                              _e(RuntimeError, r"max\(\): Expected reduction dim to be specified for input.numel\(\) == 0",
                                 make((0, 3), d, ember.float32))]),
    OpEntry("min", _values(ember.min), _maxmin_samples, _maxmin_ref("min"), dtypes=FL + ("int64",),
            aliases=("Tensor.min",)),
    OpEntry("median", _values(ember.median), _maxmin_samples, _median_ref, dtypes=FL + ("int64",),
            aliases=("Tensor.median",),
            errors=lambda d: [_e(IndexError, r"median\(\): Expected reduction dim 0 to have non-zero size",
                                 make((0, 3), d, ember.float32), 0)]),
    OpEntry("kthvalue", _values(_via_out(ember.kthvalue)),
            lambda d, t: [_s(_distinct((3, 4), d, t), 2), _s(_distinct((3, 4), d, t, 1), 3, 0),
                          _s(_distinct((3, 4), d, t, 2), 1, 1, True),
                          _s(_distinct((2, 3, 4), d, t, 3, noncontig=True), 4, -1),
                          _s(_distinct((), d, t, 4), 1)],
            _kth_ref, dtypes=FL + ("int64",), aliases=("Tensor.kthvalue",),
            errors=lambda d: [_e(RuntimeError, r"kthvalue\(\): selected number k out of range for dimension 1",
                                 make((3, 4), d, ember.float32), 5)]),
    OpEntry("logsumexp", ember.logsumexp,
            lambda d, t: [_s(make((3, 4), d, t), 1), _s(make((3, 4), d, t), 0, True),
                          _s(make((2, 3, 4), d, t, noncontig=True, seed=1), (0, 2)),
                          _s(make((), d, t, seed=3), 0), _s(make((0, 3), d, t), 1),
                          _s(ember.tensor([[1000.0, 1000.5], [-1000.0, -999.0]], dtype=t, device=d), 1,
                             desc="large magnitude")],
            _lse_ref, dtypes=FL, aliases=("Tensor.logsumexp",)),
    OpEntry("std", ember.std, _stat_samples, _stat_ref(np.std), dtypes=FL, aliases=("Tensor.std",),
            errors=lambda d: [_e(RuntimeError, "std and var only support floating point and complex dtypes",
                                 ember.ones(3, dtype=ember.int64, device=d))]),
    OpEntry("var", ember.var, _stat_samples, _stat_ref(np.var), dtypes=FL, aliases=("Tensor.var",)),
    OpEntry("std_mean", _tup(ember.std_mean), _stat_samples, _stat_mean_ref(np.std), dtypes=FL),
    OpEntry("var_mean", _tup(ember.var_mean), _stat_samples, _stat_mean_ref(np.var), dtypes=FL),
    OpEntry("linalg.vector_norm", ember.linalg.vector_norm, _vnorm_samples, _vnorm_ref, dtypes=FL,
            errors=lambda d: [_e(RuntimeError, "linalg.vector_norm: Expected a floating point or complex tensor",
                                 ember.ones(2, dtype=ember.int64, device=d))]),
    OpEntry("norm", ember.norm,
            lambda d, t: [_s(make((3, 4), d, t)), _s(make((3, 4), d, t), 1, 1), _s(make((3, 4), d, t), 3, 0, True),
                          _s(make((3, 4), d, t), "fro"), _s(make((2, 3, 4), d, t, noncontig=True), 2, (1, 2)),
                          _s(_distinct((3, 4), d, t), float("inf"), 1), _s(make((), d, t, seed=3))],
            _norm_ref, dtypes=FL, aliases=("Tensor.norm",)),
    OpEntry("linalg.norm", ember.linalg.norm,
            lambda d, t: [_s(make((3, 4), d, t)), _s(make((4,), d, t), 1), _s(make((4,), d, t), 3),
                          _s(make((3, 4), d, t), "fro", (0, 1)), _s(make((3, 4), d, t), 1, (0, 1)),
                          _s(make((3, 4), d, t), float("inf"), (0, 1)),
                          _s(make((2, 3, 4), d, t, noncontig=True), None, -1, True),
                          _s(make((3, 4), d, t), 2, 1)],
            _lnorm_ref, dtypes=FL),
    OpEntry("cumsum", ember.cumsum, _cum_samples2, _cum_ref2(np.cumsum), dtypes=FL + ("int64",),
            aliases=("Tensor.cumsum", "Tensor.cumsum_"),
            errors=lambda d: [_e(IndexError, "Dimension out of range", make((2, 3), d, ember.float32), 2)]),
    OpEntry("cumprod", ember.cumprod, _cumprod_samples, _cum_ref2(np.cumprod), dtypes=FL + ("int64",),
            aliases=("Tensor.cumprod", "Tensor.cumprod_")),
    OpEntry("trace", ember.trace, _trace_samples, lambda a: np.asarray(np.trace(a)), dtypes=FL + ("int64",),
            aliases=("Tensor.trace",),
            errors=lambda d: [_e(RuntimeError, "expected a matrix", make((3,), d, ember.float32))]),
    OpEntry("argmax", ember.argmax, _arg_samples, _arg_ref(np.argmax), dtypes=FL + ("int64",), grad=False,
            aliases=("Tensor.argmax",),
            errors=lambda d: [_e(IndexError, "Dimension out of range", make((2, 3), d, ember.float32), 2),
                              _e(IndexError, r"argmax\(\): Expected reduction dim to be specified",
                                 make((0, 3), d, ember.float32))]),
    OpEntry("argmin", ember.argmin, _arg_samples, _arg_ref(np.argmin), dtypes=FL + ("int64",), grad=False,
            aliases=("Tensor.argmin",)),
    OpEntry("all", ember.all, _bool_samples, _bool_ref(np.all), dtypes=FL + ("int64", "bool"), grad=False,
            aliases=("Tensor.all",)),
    OpEntry("any", ember.any, _bool_samples, _bool_ref(np.any), dtypes=FL + ("int64", "bool"), grad=False,
            aliases=("Tensor.any",)),
    OpEntry("count_nonzero", ember.count_nonzero,
            lambda d, t: [_s(make((3, 4), d, t)), _s(make((3, 4), d, t), 1),
                          _s(make((2, 3, 4), d, t, noncontig=True), (0, 2)),
                          _s(ember.zeros(2, 3, dtype=t, device=d), 0), _s(make((0, 3), d, t))],
            _cnz_ref, dtypes=FL + ("int64", "bool"), grad=False, aliases=("Tensor.count_nonzero",)),
]
