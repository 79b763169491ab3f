"""ember.compile's fused kernels against eager, op by op: every elementwise op of the op
table (ember.testing.opinfo) in a fusion group, over dtypes, with broadcast and
non-contiguous inputs; integer and bool results bitwise, floating ones within a few ulp
(Note [Generated kernels]: the compiler may contract a*b+c into one rounding)."""
import re
import warnings

import numpy as np
import pytest

import ember
from ember._compile import _toolchain
from ember.testing.opinfo import binary_ops, unary_ops

pytestmark = pytest.mark.skipif(_toolchain.compiler() is None, reason="no C++ compiler")

DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool"]
# ulp-scaled tolerances for floating results
TOL = {"float32": dict(rtol=4e-6, atol=1e-6), "float64": dict(rtol=1e-13, atol=1e-14),
       "float16": dict(rtol=1e-3, atol=1e-3), "bfloat16": dict(rtol=8e-3, atol=8e-3)}


def _input(rng, shape, dtype, domain):
    lo, hi = domain or (-3, 3)
    if dtype == "bool":
        return ember.tensor(rng.random(shape) > 0.5)
    if dtype in ("int32", "int64", "uint8"):
        lo = max(lo, 0) if dtype == "uint8" else lo
        a = rng.integers(int(np.floor(lo)), int(np.ceil(hi)) + 1, size=shape)
        return ember.tensor(a).to(getattr(ember, dtype))
    a = rng.uniform(lo, hi, size=shape)
    return ember.tensor(a, dtype=getattr(ember, dtype))


def _check(fn, args, dtype):
    try:
        expected = fn(*args)
    except (RuntimeError, TypeError, NotImplementedError) as err:
        # Eager refuses this dtype: the compiled function must refuse it with the same error.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(type(err), match=re.escape(str(err).splitlines()[0][:60])):
                ember.compile(fn)(*args)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager would warn: must not happen
        cfn = ember.compile(fn)
        got = cfn(*args)
        got2 = cfn(*args)  # replay
    entry = next(iter(cfn._state.static.values()))[0]
    assert entry.kernels, f"nothing was fused:\n{entry.graph_text}"
    for e, g in zip(expected, got):
        assert e.dtype == g.dtype and e.shape == g.shape
        if e.dtype.is_floating_point:
            ember.testing.assert_close(g, e, equal_nan=True, **TOL[str(e.dtype)[6:]])
        else:
            assert ember.equal(g, e), (g, e)
    for a, b in zip(got, got2):
        assert ember.equal(a, b) or a.dtype.is_floating_point


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", unary_ops, ids=lambda o: o.name)
def test_unary(op, dtype):
    rng = np.random.default_rng(0)
    f = getattr(ember, op.name)
    x = _input(rng, (5, 7), dtype, op.domain)
    y = _input(rng, (7, 5), dtype, op.domain).t()  # non-contiguous
    m = ember.tensor(rng.random((1, 7)) > 0.5)  # broadcast

    def fn(x, y, m):
        return (ember.where(m, f(x), f(y)),)
    _check(fn, (x, y, m), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", binary_ops, ids=lambda o: o.name)
def test_binary(op, dtype):
    rng = np.random.default_rng(1)
    f = getattr(ember, op.name)
    x = _input(rng, (5, 7), dtype, op.domain2)
    y = _input(rng, (7, 5), dtype, op.domain2).t()  # non-contiguous
    z = _input(rng, (7,), dtype, op.domain2)  # broadcast

    def fn(x, y, z):
        return f(f(x, y), z), f(y, x)
    _check(fn, (x, y, z), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64"])
def test_scalars_casts_where_clamp(dtype):
    rng = np.random.default_rng(2)
    x = _input(rng, (4, 6), dtype, (-4, 4))
    m = ember.tensor(rng.random((4, 6)) > 0.3)

    def fn(x, m):
        y = x * 2 + 1
        z = ember.where(m, y, -y).float().clamp(min=-3.5, max=5)
        return z.to(x.dtype), (z > 0.5), z.double() / 3
    _check(fn, (x, m), dtype)


def test_zero_dim_and_empty():
    def fn(x, y):
        return ((x + y) * y).exp()

    for shape in ([], [0], [3, 0]):
        x = ember.randn(shape)
        y = ember.randn(shape)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = ember.compile(fn)(x, y)
        ember.testing.assert_close(got, fn(x, y))
