"""Reductions and scans vs NumPy: every op over dtypes, dims, keepdim, 0-d,
empty and non-contiguous inputs, the threaded paths, float32 accuracy, and
PyTorch's errors."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember

ALL = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
       "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]


def make(shape, dt, rng, lo=-3, hi=4):
    """(NumPy reference, ember tensor) holding the same values."""
    if dt == "bool":
        a = rng.random(shape) > 0.5
    elif dt in FLOATS:
        a = rng.uniform(lo, hi, shape)
    else:
        a = rng.integers(max(lo, 0) if dt == "uint8" else lo, hi, shape)
    npdt = np.float32 if dt == "bfloat16" else np.dtype(dt)
    t = ember.from_numpy(np.ascontiguousarray(np.array(a, dtype=npdt))).to(getattr(ember, dt))
    return np_of(t), t


def np_of(t):
    """The tensor's values as NumPy (bfloat16 widened to float32)."""
    if t.dtype == ember.bfloat16:
        t = t.to(ember.float32)
    return np.array(t.numpy())


def ref_dtype(dt):
    return np.float32 if dt == "bfloat16" else np.dtype(dt)


def check(t, ref, dtype=None, rtol=1e-6, atol=1e-6):
    if dtype is not None:
        assert t.dtype == dtype, (t.dtype, dtype)
    got = np_of(t)
    assert got.shape == np.shape(ref), (got.shape, np.shape(ref))
    if got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, ref)
    else:
        np.testing.assert_allclose(got.astype(np.float64), np.asarray(ref, np.float64), rtol=rtol,
                                   atol=atol, equal_nan=True)


def tol(dt):
    return {"float16": 2e-3, "bfloat16": 1e-2}.get(dt, 1e-5)


DIMS = [None, 0, 1, -1, (0, 2), (2, 0), [1], (0, 1, 2), ()]


def np_axis(dim):
    if dim is None or dim == ():
        return None
    return tuple(dim) if isinstance(dim, (tuple, list)) else dim


# ---- sum / mean / prod ----------------------------------------------------------------------

@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum(dt, dim, keepdim, rng):
    a, t = make((3, 4, 5), dt, rng)
    out_dt = ember.int64 if dt in INTS + ["bool"] else getattr(ember, dt)
    ref = a.astype(np.float64 if dt in FLOATS else np.int64).sum(axis=np_axis(dim), keepdims=keepdim)
    check(ember.sum(t, dim, keepdim), ref, out_dt, rtol=tol(dt), atol=tol(dt))
    check(t.sum(dim=dim, keepdim=keepdim), ref, out_dt, rtol=tol(dt), atol=tol(dt))


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("dim", [None, 0, (1, 2), -1])
def test_mean(dt, dim, rng):
    a, t = make((4, 3, 6), dt, rng)
    check(t.mean(dim), a.astype(np.float64).mean(axis=np_axis(dim)), getattr(ember, dt),
          rtol=tol(dt), atol=tol(dt))
    check(ember.mean(t, dim, keepdim=True), a.astype(np.float64).mean(axis=np_axis(dim), keepdims=True),
          rtol=tol(dt), atol=tol(dt))


def test_mean_dtype_arg_and_int_error(rng):
    a, t = make((3, 4), "int32", rng)
    check(t.mean(1, dtype=ember.float64), a.mean(1), ember.float64)
    with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype\. Input dtype "
                       r"must be either a floating point or complex dtype\. Got: Int"):
        t.mean()
    with pytest.raises(RuntimeError, match="Got: Long"):
        ember.mean(t.to(ember.int64))
    with pytest.raises(RuntimeError, match="Optional dtype must be .* Got: Long"):
        ember.mean(t.to(ember.float32), dtype=ember.int64)
    with pytest.raises(RuntimeError, match="Got: Bool"):
        ember.mean(t > 0)


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("dim", [None, 0, 1, -1])
def test_prod(dt, dim, rng):
    a, t = make((3, 5), dt, rng, lo=-2, hi=3)
    out_dt = ember.int64 if dt in INTS + ["bool"] else getattr(ember, dt)
    ref = a.astype(np.float64 if dt in FLOATS else np.int64).prod(axis=dim)
    check(t.prod(dim) if dim is not None else t.prod(), ref, out_dt, rtol=tol(dt), atol=tol(dt))
    check(ember.prod(t, dim, keepdim=True) if dim is not None else ember.prod(t),
          ref.reshape((1, 1) if dim is None else np.expand_dims(ref, dim).shape) if dim is not None else ref,
          out_dt, rtol=tol(dt), atol=tol(dt))


def test_sum_prod_dtype_arg(rng):
    a, t = make((4, 5), "float32", rng)
    check(t.sum(0, dtype=ember.float64), a.astype(np.float64).sum(0), ember.float64)
    check(t.sum(dtype=ember.int32), a.astype(np.int32).sum(), ember.int32)
    b, u = make((4, 5), "int8", rng)
    check(u.sum(1, dtype=ember.int16), b.astype(np.int16).sum(1), ember.int16)
    check(u.prod(0, dtype=ember.float32), b.astype(np.float32).prod(0), ember.float32)
    # int64 sums wrap around like PyTorch's
    big = ember.tensor([2**62, 2**62, 2**62])
    assert big.sum().item() == np.array([2**62] * 3, dtype=np.int64).sum()


def test_sum_half_accumulates_in_float():
    t = ember.ones(4096, dtype=ember.float16)
    assert t.sum().item() == 4096.0  # a float16 accumulator stalls at 2048
    assert ember.ones(5000, dtype=ember.bfloat16).mean().item() == 1.0


# ---- max / min ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("dim", [None, 0, (0, 2), -1, (1,)])
def test_amax_amin(dt, dim, rng):
    a, t = make((3, 4, 5), dt, rng)
    kw = {} if dim is None else {"dim": dim}
    check(t.amax(**kw), a.max(axis=np_axis(dim)), getattr(ember, dt))
    check(ember.amin(t, **kw, keepdim=True), a.min(axis=np_axis(dim), keepdims=True), getattr(ember, dt))


@pytest.mark.parametrize("dt", ALL)
def test_max_min_dim(dt, rng):
    a, t = make((4, 7), dt, rng, lo=-2, hi=3)  # many ties: the first index must win
    for d in (0, 1, -1):
        r = t.max(d)
        assert isinstance(r, ember.return_types.max) and r._fields == ("values", "indices")
        check(r.values, a.max(d), getattr(ember, dt))
        check(r.indices, a.argmax(d), ember.int64)
        v, i = ember.min(t, dim=d, keepdim=True)
        check(v, a.min(d, keepdims=True))
        check(i, np.expand_dims(a.argmin(d), d))
    check(t.max(), a.max(), getattr(ember, dt))
    check(ember.min(t), a.min())
    assert "ember.return_types.max(\nvalues=" in repr(t.max(0))


def test_max_with_other_is_maximum(rng):
    a, t = make((3, 4), "float32", rng)
    b, u = make((4,), "float32", rng)
    check(ember.max(t, u), np.maximum(a, b))
    check(t.min(u), np.minimum(a, b))
    check(ember.max(t, other=u), np.maximum(a, b))


@pytest.mark.parametrize("dt", [d for d in ALL if d != "bool"])
def test_argmax_argmin(dt, rng):
    a, t = make((5, 6, 3), dt, rng, lo=-2, hi=3)
    check(t.argmax(), a.argmax(), ember.int64)
    check(ember.argmin(t), a.argmin())
    for d in (0, 1, 2, -1):
        check(t.argmax(d), a.argmax(d))
        check(ember.argmin(t, d, keepdim=True), np.expand_dims(a.argmin(d), d))
    assert t.argmax(keepdim=True).shape == (1, 1, 1)
    assert ember.tensor([1, 3, 3, 2]).argmax().item() == 1


def test_nan_propagation():
    nan = float("nan")
    t = ember.tensor([[1.0, nan, 3.0, nan], [2.0, 0.0, -1.0, 5.0]])
    assert math.isnan(t.max().item()) and math.isnan(t.min().item())
    check(t.amax(1), [nan, 5.0])
    check(t.amin(0), [1.0, nan, -1.0, nan])
    v, i = t.max(1)
    check(v, [nan, 5.0])
    check(i, [1, 3])
    check(t.argmin(1), [1, 2])
    assert t.argmax().item() == 1
    check(t.sum(1), [nan, 6.0])
    assert math.isnan(t.median().item())
    check(t.median(1).values, [nan, 0.0])
    check(t.median(1).indices, [1, 1])
    # inf and -inf are ordinary values
    check(ember.tensor([-math.inf, math.inf, 0.0]).argmax(), 1)


# ---- all / any / count_nonzero --------------------------------------------------------------------

@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
def test_all_any(dt, dim, rng):
    a, t = make((4, 6), dt, rng, lo=-1, hi=2)
    res_dt = ember.uint8 if dt == "uint8" else ember.bool
    kw = {} if dim is None else {"dim": dim}
    check(t.all(**kw), np.all(a, axis=np_axis(dim)), res_dt)
    check(ember.any(t, **kw, keepdim=True), np.any(a, axis=np_axis(dim), keepdims=True), res_dt)
    check(t.count_nonzero(**kw), np.count_nonzero(a, axis=np_axis(dim)), ember.int64)


# ---- var / std / norm / logsumexp -------------------------------------------------------------------

@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("dim", [None, 0, (0, 2), -1])
@pytest.mark.parametrize("correction", [0, 1, 2])
def test_var_std(dt, dim, correction, rng):
    a, t = make((5, 4, 6), dt, rng)
    a = a.astype(np.float64)
    ax = np_axis(dim)
    kw = {} if dim is None else {"dim": dim}
    check(t.var(**kw, correction=correction), a.var(axis=ax, ddof=correction), getattr(ember, dt),
          rtol=tol(dt), atol=tol(dt))
    check(ember.std(t, **kw, correction=correction, keepdim=True),
          a.std(axis=ax, ddof=correction, keepdims=True), rtol=tol(dt), atol=tol(dt))
    v, m = ember.var_mean(t, **kw, correction=correction)
    check(v, a.var(axis=ax, ddof=correction), rtol=tol(dt), atol=tol(dt))
    check(m, a.mean(axis=ax), rtol=tol(dt), atol=tol(dt))
    s, m = ember.std_mean(t, **kw, correction=correction)
    check(s, a.std(axis=ax, ddof=correction), rtol=tol(dt), atol=tol(dt))


def test_var_legacy_unbiased_forms(rng):
    a, t = make((6, 5), "float64", rng)
    check(t.var(False), a.var())
    check(t.std(True), a.std(ddof=1))
    check(t.var(0, False), a.var(0))
    check(ember.var(t, 1, True, True), a.var(1, ddof=1, keepdims=True))
    check(t.std(1, unbiased=False), a.std(1))
    with pytest.raises(RuntimeError, match="cannot specify both unbiased and correction"):
        t.var(0, True, correction=0)


def test_var_accuracy_large_offset(rng):
    a = (1e4 + rng.standard_normal((3, 20000))).astype(np.float32)
    t = ember.from_numpy(a)
    ref = a.astype(np.float64).var(1, ddof=1)
    check(t.var(1), ref, rtol=1e-5)
    check(t.t().var(0), ref, rtol=1e-5)  # strided (Welford) path
    check(ember.from_numpy(np.ascontiguousarray(a.T)).var(0), ref, rtol=1e-5)  # outer layout


def test_var_degenerate():
    assert math.isnan(ember.tensor([1.0]).var().item())
    assert math.isinf(ember.tensor([1.0, 2.0]).var(correction=2).item())
    assert math.isnan(ember.zeros(0).std().item())
    v, m = ember.var_mean(ember.zeros(0))
    assert math.isnan(v.item()) and math.isnan(m.item())
    with pytest.raises(RuntimeError, match="std and var only support floating point and complex dtypes"):
        ember.tensor([1, 2, 3]).std()
    with pytest.raises(RuntimeError, match="std and var only support floating point"):
        ember.var_mean(ember.tensor([True]))


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("p", [1, 2, 3, 0.5, 0, math.inf, -math.inf, "fro", -1.5])
@pytest.mark.parametrize("dim", [None, 1, (0, 1)])
def test_norm(dt, p, dim, rng):
    a, t = make((4, 5), dt, rng)
    a = a.astype(np.float64)
    kw = {} if dim is None else {"dim": dim}
    pn = 2 if p == "fro" else p
    x = np.abs(a)
    ax = np_axis(dim)
    if pn == 0:
        ref = np.count_nonzero(a, axis=ax).astype(np.float64)
    elif pn == math.inf:
        ref = x.max(axis=ax)
    elif pn == -math.inf:
        ref = x.min(axis=ax)
    else:
        ref = (x ** pn).sum(axis=ax) ** (1 / pn)
    check(t.norm(p, **kw), ref, getattr(ember, dt), rtol=tol(dt) * 2, atol=tol(dt))
    check(ember.norm(t, p=p, **kw, keepdim=True),
          np.reshape(ref, (1, 1) if dim in (None, (0, 1)) else (4, 1)), rtol=tol(dt) * 2, atol=tol(dt))


def test_norm_errors_and_dtype(rng):
    a, t = make((3, 4), "float32", rng)
    check(t.norm(dtype=ember.float64), np.linalg.norm(a.astype(np.float64)), ember.float64)
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        ember.tensor([1, 2]).norm()
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        ember.zeros(0, 3).norm(math.inf)
    with pytest.raises(RuntimeError, match="cannot compute the -1 norm on an empty tensor"):
        ember.zeros(2, 0).norm(-1, dim=1)
    check(ember.zeros(0, 3).norm(), 0.0)
    check(ember.zeros(0, 3).norm(math.inf, dim=1), np.zeros(0))
    with pytest.raises(ValueError, match="nuc"):
        t.norm("nuc")


@pytest.mark.parametrize("dt", FLOATS + ["int32", "bool"])
@pytest.mark.parametrize("dim", [0, 1, (0, 1), -1])
def test_logsumexp(dt, dim, rng):
    a, t = make((4, 6), dt, rng)
    a = a.astype(np.float64)
    ref = np.log(np.exp(a).sum(axis=np_axis(dim)))
    out_dt = ember.float32 if dt in ("int32", "bool") else getattr(ember, dt)
    check(t.logsumexp(dim), ref, out_dt, rtol=tol(dt), atol=tol(dt))
    check(ember.logsumexp(t, dim, keepdim=True), np.log(np.exp(a).sum(axis=np_axis(dim), keepdims=True)),
          rtol=tol(dt), atol=tol(dt))


def test_logsumexp_stable():
    inf = math.inf
    t = ember.tensor([[1000.0, 1000.0], [-1000.0, -1000.0], [-inf, -inf], [inf, 1.0], [-inf, 2.0]])
    check(t.logsumexp(1), [1000 + math.log(2), -1000 + math.log(2), -inf, inf, 2.0])
    check(ember.zeros(3, 0).logsumexp(1), [-inf] * 3)
    assert math.isnan(ember.tensor([float("nan"), 1.0]).logsumexp(0).item())


# ---- median ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", [d for d in ALL if d != "bool"])
def test_median(dt, rng):
    a, t = make((5, 6), dt, rng, lo=-3, hi=4)
    flat = np.sort(a.ravel())
    check(t.median(), flat[(flat.size - 1) // 2], getattr(ember, dt))  # lower median
    for d in (0, 1, -1):
        r = t.median(d)
        assert isinstance(r, ember.return_types.median)
        s = np.sort(a, axis=d)
        n = a.shape[d]
        check(r.values, np.take(s, (n - 1) // 2, axis=d))
        # the index points at an element equal to the median
        assert r.indices.dtype == ember.int64
        picked = np.take_along_axis(a, np.expand_dims(np_of(r.indices), d), d).squeeze(d)
        check(r.values, picked)
    v, i = ember.median(t, 1, keepdim=True)
    assert v.shape == (5, 1) and i.shape == (5, 1)


def test_median_edge():
    assert math.isnan(ember.zeros(0).median().item())
    v, i = ember.tensor(4.0).median(0)
    assert v.item() == 4.0 and i.item() == 0
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 1 to have non-zero size"):
        ember.zeros(2, 0).median(1)
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        ember.tensor([True]).median()


# ---- cumsum / cumprod ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("dim", [0, 1, -1, 2])
def test_cumsum_cumprod(dt, dim, rng):
    a, t = make((3, 4, 5), dt, rng, lo=-2, hi=3)
    out_dt = ember.int64 if dt in INTS + ["bool"] else getattr(ember, dt)
    wide = a.astype(np.float64 if dt in FLOATS else np.int64)
    check(t.cumsum(dim), np.cumsum(wide, axis=dim), out_dt, rtol=tol(dt), atol=tol(dt) * 4)
    check(ember.cumprod(t, dim), np.cumprod(wide, axis=dim), out_dt, rtol=tol(dt), atol=tol(dt) * 4)


def test_cumsum_dtype_out_inplace(rng):
    a, t = make((4, 5), "int32", rng)
    check(t.cumsum(1, dtype=ember.float64), np.cumsum(a.astype(np.float64), 1), ember.float64)
    out = ember.zeros(4, 5, dtype=ember.int64)
    r = ember.cumsum(t, 0, out=out)
    assert r is out
    check(out, np.cumsum(a, 0))
    u = t.clone()
    assert u.cumsum_(1) is u
    check(u, np.cumsum(a, 1), ember.int32)
    f = ember.tensor([1.0, 2.0, 3.0])
    f.cumprod_(0)
    check(f, [1.0, 2.0, 6.0])
    check(ember.tensor(5).cumsum(0), 5, ember.int64)
    check(ember.zeros(0, 3).cumsum(1), np.zeros((0, 3)))
    # float32 cumsum accumulates in double
    big = ember.full((100000,), 0.1, dtype=ember.float32)
    last = big.cumsum(0)[-1].item()
    assert abs(last - 100000 * float(np.float32(0.1))) < 1e-2


# ---- layouts: 0-d, empty, non-contiguous, threaded -------------------------------------------------------

def test_zero_dim():
    t = ember.tensor(3.5)
    for f in (lambda x: x.sum(), lambda x: x.sum(0), lambda x: x.sum(-1, keepdim=True),
              lambda x: x.amax(0), lambda x: x.mean((0,)), lambda x: x.prod(0)):
        r = f(t)
        assert r.shape == () and r.item() == 3.5
    v, i = t.max(0)
    assert v.item() == 3.5 and i.item() == 0 and i.shape == ()
    assert t.argmax().item() == 0 and t.argmin(0).item() == 0
    assert t.all().item() is True and t.count_nonzero().item() == 1
    assert t.var(correction=0).item() == 0.0
    assert t.norm().item() == 3.5
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-1, 0\], but got 1\)"):
        t.sum(1)


def test_empty():
    e = ember.zeros(0, 3)
    check(e.sum(), 0.0)
    check(e.sum(0), np.zeros(3))
    check(e.sum(1), np.zeros(0))
    check(e.prod(), 1.0)
    check(e.prod(0), np.ones(3))
    assert math.isnan(e.mean().item())
    check(e.mean(0), np.full(3, np.nan))
    check(e.all(), True)
    check(e.any(0), np.zeros(3, bool))
    check(e.count_nonzero(0), np.zeros(3, np.int64))
    check(e.amax(1), np.zeros(0))
    check(e.argmax(1), np.zeros(0, np.int64))
    with pytest.raises(IndexError, match=r"amax\(\): Expected reduction dim 0 to have non-zero size\."):
        e.amax(0)
    with pytest.raises(IndexError, match=r"max\(\): Expected reduction dim 0 to have non-zero size\."):
        e.max(0)
    with pytest.raises(RuntimeError, match=r"^max\(\): Expected reduction dim to be specified for "
                       r"input.numel\(\) == 0. Specify the reduction dim with the 'dim' argument\.$"):
        e.max()
    with pytest.raises(RuntimeError, match=r"min\(\): Expected reduction dim to be specified"):
        ember.min(e)
    with pytest.raises(IndexError, match=r"argmax\(\): Expected reduction dim to be specified"):
        e.argmax()
    with pytest.raises(RuntimeError, match=r"amin\(\): Expected reduction dim to be specified"):
        e.amin()


@pytest.mark.parametrize("op", ["sum", "amax", "amin", "mean", "var", "all", "count_nonzero",
                                "norm", "argmax"])
def test_non_contiguous(op, rng):
    base, bt = make((6, 8, 10), "float32", rng)
    views = [
        (base.transpose(2, 0, 1), bt.permute(2, 0, 1)),
        (base[:, ::2, 1::3], bt[:, ::2, 1::3]),
        (base.transpose(1, 0, 2)[::2], bt.transpose(0, 1)[::2]),
        (np.broadcast_to(base[:, :1, :], (6, 8, 10)), bt[:, :1, :].expand(6, 8, 10)),
    ]
    for a, t in views:
        for dim in (None, 0, 1, 2, (0, 2), (1, 2)):
            ax = np_axis(dim)
            if op == "argmax":
                if isinstance(dim, tuple):
                    continue
                got, ref = t.argmax(dim), a.argmax(axis=ax)
            elif op == "norm":
                got, ref = t.norm(2, dim), np.sqrt((a.astype(np.float64) ** 2).sum(axis=ax))
            elif op == "var":
                got, ref = t.var(dim, correction=0), a.astype(np.float64).var(axis=ax)
            elif op == "all":
                got, ref = (t > 0).all(dim), (a > 0).all(axis=ax)
            elif op == "count_nonzero":
                got, ref = (t > 0).count_nonzero(dim), np.count_nonzero(a > 0, axis=ax)
            else:
                got = getattr(t, op)(dim) if dim is not None else getattr(t, op)()
                ref = getattr(np, {"amax": "max", "amin": "min"}.get(op, op))(a.astype(np.float64), axis=ax)
            check(got, ref, rtol=1e-5, atol=1e-5)


def test_non_contiguous_max_dim_and_scans(rng):
    a, t = make((7, 9), "int32", rng, lo=-3, hi=4)
    v, i = t.t().max(1)
    check(v, a.T.max(1))
    check(i, a.T.argmax(1))
    check(t[::2, 1::2].cumsum(0), np.cumsum(a[::2, 1::2], 0))
    check(t.t().cumprod(1), np.cumprod(a.T.astype(np.int64), 1))
    check(t[:, ::3].median(0).values, np.sort(a[:, ::3], 0)[3])


def test_threaded_paths(rng):
    # many outputs (split over outputs), inner and outer layouts
    a = rng.standard_normal((3000, 257)).astype(np.float32)
    t = ember.from_numpy(a)
    check(t.sum(1), a.astype(np.float64).sum(1), rtol=1e-5, atol=1e-4)
    check(t.sum(0), a.astype(np.float64).sum(0), rtol=1e-5, atol=1e-4)
    check(t.amax(0), a.max(0))
    check(t.argmin(0), a.argmin(0))
    check(t.argmax(1), a.argmax(1))
    check(t.var(0), a.astype(np.float64).var(0, ddof=1), rtol=1e-5)
    check(t.cumsum(0), np.cumsum(a.astype(np.float64), 0), rtol=1e-4, atol=1e-3)
    # few outputs, long rows: each reduction is split across threads
    b = rng.standard_normal((2, 400000)).astype(np.float32)
    u = ember.from_numpy(b)
    check(u.sum(1), b.astype(np.float64).sum(1), rtol=1e-6, atol=1e-3)
    check(u.std(1), b.astype(np.float64).std(1, ddof=1), rtol=1e-6)
    check(u.amin(1), b.min(1))
    # outer layout with few columns: the reduced range is split across threads
    c = rng.standard_normal((300000, 3))
    w = ember.from_numpy(c)
    check(w.sum(0), c.sum(0), rtol=1e-9, atol=1e-9)
    check(w.argmax(0), c.argmax(0))
    check(w.amax(0), c.max(0))
    # first-index rule across thread chunks
    z = np.zeros(1_000_003, np.float32)
    z[[700_001, 900_000, 999_999]] = 5
    zt = ember.from_numpy(z)
    assert zt.argmax().item() == 700_001
    assert ember.from_numpy(np.ascontiguousarray(np.stack([z, z], 1))).argmax(0).tolist() == [700_001] * 2
    z[800_000] = np.nan
    assert ember.from_numpy(z).argmax().item() == 800_000
    assert math.isnan(ember.from_numpy(z).amax().item())
    d = (rng.random(2_000_000) > 0.5)
    check(ember.from_numpy(d).count_nonzero(), np.count_nonzero(d))
    check(ember.from_numpy(d).all(), False)


def test_float32_sum_accuracy(rng):
    a = (rng.random(2_000_000) * 100 + 1000).astype(np.float32)
    exact = math.fsum(a.astype(np.float64))
    got = ember.from_numpy(a).sum().item()
    ulp = np.spacing(np.float32(exact))
    assert abs(got - exact) <= 2 * ulp, (got, exact, ulp)
    # mean and outer-layout sums are as accurate
    assert abs(ember.from_numpy(a).mean().item() - exact / a.size) <= 2 * np.spacing(np.float32(exact / a.size))
    m = a.reshape(-1, 4)
    exact_cols = [math.fsum(m[:, j].astype(np.float64)) for j in range(4)]
    got_cols = ember.from_numpy(m).sum(0).numpy()
    for g, e in zip(got_cols, exact_cols):
        assert abs(g - e) <= 2 * np.spacing(np.float32(e))



@pytest.mark.parametrize("n", [1, 15, 16, 17, 63, 64, 65, 79, 4095, 4096, 4097, 4096 * 3 + 81])
def test_float_row_sum_every_lane_path(rng, n):
    # Note [Accurate float sums]: 64-lane blocks, then 16-lane blocks, then one by one;
    # each length here ends in a different mix of them. Rows of a 2-d tensor too.
    for dt in (np.float32, np.float64):
        a = (rng.random((3, n)) * 100 - 30).astype(dt)
        got = ember.from_numpy(a).sum(1).numpy()
        exact = np.array([math.fsum(r.astype(np.float64)) for r in a])
        np.testing.assert_allclose(got, exact, rtol=4 * np.finfo(dt).eps, atol=1e-4 * (dt == np.float32))
        assert abs(ember.from_numpy(a[1]).sum().item() - exact[1]) <= 2 * abs(np.spacing(dt(exact[1]))) + 1e-9


def test_float_sum_in_streams(rng):
    # Note [Accurate float sums]: a sum reading >= 32 MiB walks each row as 4 parts at once,
    # with the remainder after them; as accurate as the one-stream path, in full and by rows,
    # for sum and mean, on 1 and 2 threads.
    old = ember.get_num_threads()
    try:
        for threads in (1, 2):
            ember.set_num_threads(threads)
            a = (rng.random((8 << 20) + 37) * 100 + 1000).astype(np.float32)
            exact = math.fsum(a.astype(np.float64))
            t = ember.from_numpy(a)
            assert abs(t.sum().item() - exact) <= 2 * np.spacing(np.float32(exact))
            assert abs(t.mean().item() - exact / a.size) <= 2 * np.spacing(np.float32(exact / a.size))
            m = (rng.random((2050, 4100)) - 0.3).astype(np.float32)
            got = ember.from_numpy(m).sum(1).numpy()
            np.testing.assert_allclose(got, m.astype(np.float64).sum(1), rtol=1e-6, atol=1e-4)
            d = rng.standard_normal((4 << 20) + 5)  # float64, 32 MiB
            assert ember.from_numpy(d).sum().item() == pytest.approx(math.fsum(d), rel=1e-12, abs=1e-9)
    finally:
        ember.set_num_threads(old)

# ---- out= and errors ---------------------------------------------------------------------------------------

def test_out(rng):
    a, t = make((3, 4), "float32", rng)
    for name, ref in [("sum", a.sum(1)), ("mean", a.mean(1)), ("amax", a.max(1)), ("amin", a.min(1))]:
        out = ember.zeros(3)
        r = getattr(ember, name)(t, 1, out=out)
        assert r is out
        check(out, ref, rtol=1e-6)
    out = ember.zeros(3, dtype=ember.float64)
    ember.sum(t, 1, out=out)
    check(out, a.astype(np.float64).sum(1), ember.float64)
    out = ember.zeros(3)
    ember.prod(t, 1, out=out)
    check(out, a.prod(1), rtol=1e-5)
    v, i = ember.zeros(4), ember.zeros(4, dtype=ember.int64)
    r = ember.max(t, 0, out=(v, i))
    check(v, a.max(0))
    check(i, a.argmax(0))
    # an out= of another shape is resized, with PyTorch's deprecation warning
    o = ember.zeros(4)
    with pytest.warns(UserWarning, match=r"resized since it had shape \[4\], which does not match "
                      r"the required output shape \[3\]"):
        assert ember.sum(t, 1, out=o) is o
    check(o, a.sum(1), rtol=1e-5)
    with pytest.raises(RuntimeError, match="Expected the dtype for input and out to match, but got "
                       "Float for input's dtype and Double for out's dtype"):
        ember.amax(t, 1, out=ember.zeros(3, dtype=ember.float64))
    with pytest.raises(TypeError, match="argument 'out' must be Tensor"):
        ember.sum(t, out=3)


def test_dim_errors(rng):
    a, t = make((2, 3), "float32", rng)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                       r"\[-2, 1\], but got 2\)"):
        t.sum(2)
    for f in (lambda: t.amax(-3), lambda: t.max(5), lambda: t.argmax(2), lambda: t.cumsum(2),
              lambda: t.var(3), lambda: t.median(2), lambda: t.logsumexp(2), lambda: t.all(2)):
        with pytest.raises(IndexError, match="Dimension out of range"):
            f()
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        t.sum((0, -2))
    with pytest.raises(RuntimeError, match="dim 1 appears multiple times in the list of dims"):
        ember.amax(t, [1, 1])
    with pytest.raises(TypeError, match="dim"):
        t.sum("0")
    with pytest.raises(TypeError, match="dim"):
        t.sum(1.5)
    with pytest.raises(RuntimeError, match="\"argmax_cpu\" not implemented for 'Bool'"):
        (t > 0).argmax()


# ---- property test -----------------------------------------------------------------------------------------

@st.composite
def shape_and_dims(draw):
    nd = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=nd, max_size=nd)))
    dims = draw(st.one_of(st.none(), st.lists(st.integers(0, max(nd - 1, 0)), unique=True,
                                              max_size=max(nd, 1)).map(tuple)))
    if dims is not None and nd == 0:
        dims = (0,) if dims else ()
    keepdim = draw(st.booleans())
    neg = draw(st.booleans())
    if dims and neg and nd:
        dims = tuple(d - nd for d in dims)
    transpose = draw(st.booleans())
    return shape, dims, keepdim, transpose


@settings(max_examples=150, deadline=None)
@given(shape_and_dims(), st.integers(0, 2**32 - 1))
def test_property_sum_amax(case, seed):
    shape, dims, keepdim, transpose = case
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    t = ember.from_numpy(a)
    if transpose and len(shape) >= 2:
        a = a.swapaxes(0, -1)
        t = t.transpose(0, -1)
    ax = None if not dims or a.ndim == 0 else dims
    check(t.sum(dims, keepdim), a.sum(axis=ax, keepdims=keepdim), ember.float64, rtol=1e-9, atol=1e-9)
    reduced = range(a.ndim) if ax is None else [d % a.ndim for d in ax] if a.ndim else []
    if any(a.shape[d] == 0 for d in reduced):
        with pytest.raises(IndexError if dims else RuntimeError, match="Expected reduction dim"):
            t.amax(dims if dims else (), keepdim)
    else:
        check(t.amax(dims if dims else (), keepdim), a.max(axis=ax, keepdims=keepdim))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided rows", "sliced rows"])
def test_one_kept_one_reduced_dim(layout, threads):
    # A reduction with one kept and one reduced dim runs each output's row by offset
    # arithmetic (no walker): every layout of the rows and outputs, short and long rows, the
    # indexed ops (first index among ties) and an out= with strides must match NumPy.
    rng = np.random.default_rng(7)
    old = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        for n, r in [(40000, 4), (3, 5000), (1, 7), (257, 33)]:
            base = rng.integers(-4, 5, (n, 2 * r)).astype(np.float32)
            if layout == "contiguous":
                a = base[:, :r].copy()
            elif layout == "transposed":
                a = np.ascontiguousarray(base[:, :r].T).T  # rows strided by n
            elif layout == "strided rows":
                a = base[:, ::2]
            else:
                a = base[:, 1:r + 1]
            if layout == "transposed":
                t = ember.from_numpy(np.ascontiguousarray(a.T)).t()
            elif layout == "strided rows":
                t = ember.from_numpy(base)[:, ::2]
            elif layout == "sliced rows":
                t = ember.from_numpy(base)[:, 1:r + 1]
            else:
                t = ember.from_numpy(a)
            np.testing.assert_allclose(t.sum(1).numpy(), a.sum(1), rtol=1e-6)
            np.testing.assert_allclose(t.mean(1).numpy(), a.mean(1), rtol=1e-6)
            np.testing.assert_array_equal(t.amax(1).numpy(), a.max(1))
            np.testing.assert_array_equal(t.amin(1).numpy(), a.min(1))
            np.testing.assert_array_equal(t.argmax(1).numpy(), a.argmax(1))
            v, i = t.max(1)
            np.testing.assert_array_equal(v.numpy(), a.max(1))
            np.testing.assert_array_equal(i.numpy(), a.argmax(1))
            np.testing.assert_array_equal(t.sum(0).numpy(), a.sum(0))  # the other dim
            out = ember.empty(2 * n)[::2]
            ember.sum(t, 1, out=out)
            np.testing.assert_allclose(out.numpy(), a.sum(1), rtol=1e-6)
        nan = ember.tensor([[1.0, float("nan"), 3.0, 0.0], [2.0, 5.0, 1.0, 4.0]])
        np.testing.assert_array_equal(nan.amax(1).numpy(), [np.nan, 5.0])
    finally:
        ember.set_num_threads(old)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [1, 2])
def test_short_rows(dtype, threads):
    # Note [Short rows]: back-to-back rows of 2-4 elements are reduced a block of outputs at a
    # time. Every op that takes that path, NaN and infinities anywhere in a row, -0, block
    # edges (n around 256), a strided out=, and rows that are not back to back (the other path).
    rng = np.random.default_rng(11)
    old = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        for r in (2, 3, 4):
            for n in (1, 255, 257, 70001):
                a = rng.standard_normal((n, r)).astype(dtype)
                if n > 10:
                    a[3, r - 1] = np.nan
                    a[4, 0] = np.inf
                    a[5, :] = -0.0
                    a[6, 0], a[6, r - 1] = -np.inf, np.nan
                    a[7, :] = np.nan
                t = ember.from_numpy(a)
                np.testing.assert_array_equal(t.amax(1).numpy(), a.max(1))
                np.testing.assert_array_equal(t.amin(1).numpy(), a.min(1))
                np.testing.assert_array_equal(np.signbit(t.amax(1).numpy()), np.signbit(a.max(1)))
                wide = a.astype(np.float64)
                for got, want in [(t.sum(1), wide.sum(1)), (t.mean(1), wide.mean(1)),
                                  (t.prod(1), wide.prod(1)), (ember.nansum(t, 1), np.nansum(wide, 1)),
                                  (t.norm(dim=1), np.sqrt((wide ** 2).sum(1)))]:
                    np.testing.assert_allclose(got.numpy(), want.astype(dtype), rtol=1e-6)
                np.testing.assert_array_equal(t.any(1).numpy(), (a != 0).any(1))
                np.testing.assert_array_equal(t.argmax(1).numpy(), np.nanargmax(np.where(
                    np.isnan(a), np.inf, a), 1))  # indexed ops keep their own path (first NaN)
                out = ember.empty(2 * n, dtype=t.dtype)[::2]
                ember.amax(t, 1, out=out)
                np.testing.assert_array_equal(out.numpy(), a.max(1))
                # not back to back: a column slice keeps rows of r with a longer stride
                wide_t = ember.from_numpy(np.concatenate([a, a], 1))[:, :r]
                np.testing.assert_array_equal(wide_t.amax(1).numpy(), a.max(1))
    finally:
        ember.set_num_threads(old)
