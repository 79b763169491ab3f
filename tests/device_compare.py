"""Shared helpers of the device-comparison tests (tests/test_kernels_*.py): inputs made on the
CPU, the same call on the CPU and on the test's device, and the comparison.

The modules mark themselves `pytestmark = pytest.mark.usefixtures("compare_device")`
(conftest.py): every test then runs once per device of the `device` fixture. On "cuda" it
compares the CUDA kernels with the CPU's; on "cpu" it runs the same comparison CPU against CPU,
which checks the tests themselves (their inputs, tolerances and error-path parity) on every
machine, CI included.
"""
import zlib

import numpy as np
import pytest

import ember

_DEV = None  # set by the compare_device fixture for the running test


def cmp_dev():
    """The device the running test compares with the CPU ("cpu" or "cuda")."""
    assert _DEV is not None, "a device-comparison test needs the compare_device fixture"
    return _DEV


def skip_on_cpu(reason):
    """Skips the CPU run of a test that needs a device other than the CPU (one that mixes
    CPU and device tensors, say): CPU against CPU has nothing to compare there."""
    if cmp_dev() == "cpu":
        pytest.skip(reason)


ALL = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
       "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]

def dt(name):
    return getattr(ember, name)


def seeded(*key):
    """A generator seeded from `key` (stable across processes, unlike hash())."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def make(shape, dtype_name, rng, lo=-3.0, hi=3.0, special=False, nonzero=False):
    """A CPU tensor of `shape` and dtype; floats uniform in [lo, hi) (plus NaN, +-inf, +-0
    when `special`), integers in a small range (no zeros when `nonzero`)."""
    shape = tuple(shape)
    n = int(np.prod(shape)) if shape else 1
    if dtype_name == "bool":
        a = rng.integers(0, 2, size=n).astype(bool)
    elif dtype_name in INTS:
        low = 0 if dtype_name == "uint8" else -20
        a = rng.integers(low, 21, size=n)
        if nonzero:
            a[a == 0] = 3
        a = a.astype(dtype_name)
    else:
        a = rng.uniform(lo, hi, size=n)
        if special and n >= 8:
            a[:8] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5]
        if nonzero:
            a[a == 0] = 0.25
        t = ember.from_numpy(a.reshape(shape)).to(dt(dtype_name))
        return t
    return ember.from_numpy(a.reshape(shape))


def to_dev(x):
    if isinstance(x, ember.Tensor):
        return x.to(cmp_dev())
    if isinstance(x, (list, tuple)):
        return type(x)(to_dev(v) for v in x)
    if isinstance(x, dict):
        return {k: to_dev(v) for k, v in x.items()}
    return x


def as_numpy(t):
    t = t.detach()
    if t.dtype in (ember.float16, ember.bfloat16, ember.float32, ember.float64):
        return t.to(ember.float64).cpu().numpy()
    return t.cpu().numpy()


TOL = {"float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (2e-5, 1e-6),
       "float64": (1e-10, 1e-12)}


def assert_same(expected, actual, tol=None, what=""):
    """`actual` (on the test's device) equals the CPU result `expected`: exactly for bool and integer
    results, within the dtype's tolerance (or `tol` = (rtol, atol)) for floats."""
    if isinstance(expected, (list, tuple)):
        assert isinstance(actual, (list, tuple)) and len(actual) == len(expected), what
        for e, a in zip(expected, actual):
            assert_same(e, a, tol, what)
        return
    assert isinstance(actual, ember.Tensor), what
    assert actual.device.type == ember.device(cmp_dev()).type, what
    assert actual.dtype == expected.dtype, f"{what}: {actual.dtype} != {expected.dtype}"
    assert tuple(actual.shape) == tuple(expected.shape), what
    e, a = as_numpy(expected), as_numpy(actual)
    name = str(expected.dtype).replace("ember.", "")
    if name in TOL:
        rtol, atol = tol or TOL[name]
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(a, e, err_msg=what)


def check(fn, *args, tol=None, what="", **kwargs):
    """Runs fn on the CPU arguments and on their copies on the test's device and compares."""
    try:
        expected = fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the CUDA side must raise the same type
        with pytest.raises(type(exc)) as info:
            fn(*to_dev(args), **to_dev(kwargs))
        # ... for the same reason, not because a CUDA kernel is missing
        assert "not implemented for 'CUDA'" not in str(info.value), f"{what}: {info.value}"
        return None
    actual = fn(*to_dev(args), **to_dev(kwargs))
    assert_same(expected, actual, tol, what)
    return actual


def noncontig(shape, dtype_name, rng, **kw):
    """A non-contiguous CPU tensor of `shape` (a stepped slice of a wider tensor)."""
    wide = make(tuple(shape[:-1]) + (2 * shape[-1] + 1,), dtype_name, rng, **kw)
    return wide[..., ::2][..., : shape[-1]] if shape else wide
