"""Generic tests for every elementwise op of the op table (ember.testing.opinfo).

Result dtypes and which dtype combinations are errors are checked against a
reference recorded from PyTorch (tests/data/torch_elementwise_dtypes.json, made
with PyTorch 1.13 over the same op table); values against NumPy.
"""
import builtins
import json
import os
import warnings

import numpy as np
import pytest

import ember
from ember.testing.opinfo import binary_ops, unary_ops

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64"]
with open(os.path.join(os.path.dirname(__file__), "data", "torch_elementwise_dtypes.json")) as f:
    TORCH = json.load(f)

def _raises(ref):
    """pytest.raises for the exception class recorded in a reference "ERR:Type:msg"."""
    return pytest.raises(getattr(builtins, ref.split(":")[1]))


# PyTorch 1.13 lacks many float16/bfloat16 CPU kernels; ember has them. Those
# reference errors say "not implemented for 'Half'/'BFloat16'".
def _torch_lacks_16bit(ref, float32_ref="float32"):
    """True where PyTorch only lacks the 16-bit kernel: float32 works for the op."""
    return (ref.startswith("ERR") and ("'Half'" in ref or "'BFloat16'" in ref)
            and not float32_ref.startswith("ERR"))


def _np_dtype(dt):
    return np.float32 if dt == "bfloat16" else np.dtype(dt)


def make(shape, dt, rng, domain=None):
    """A NumPy array and the ember tensor with the same values."""
    if dt == "bool":
        a = rng.random(shape) > 0.5
    elif dt.startswith("float") or dt == "bfloat16":
        lo, hi = domain or (-3, 3)
        a = rng.uniform(lo, hi, shape)
    else:
        lo, hi = domain or (-5, 6)
        lo, hi = int(np.ceil(lo)), int(np.floor(hi))
        if dt == "uint8":
            lo = max(lo, 0)
        a = rng.integers(lo, max(hi, lo + 1), shape)
    t = ember.from_numpy(np.array(a, dtype=_np_dtype(dt))).to(getattr(ember, dt))
    # The reference sees exactly the values ember holds (after rounding to 16 bits).
    ref = t.to(ember.float32).numpy() if dt in ("bfloat16",) else t.numpy()
    return ref.copy(), t


def tol(dt):
    return {"float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (1e-5, 1e-5),
            "float64": (1e-10, 1e-12)}.get(dt, (0, 0))


def check_value(out, ref, name):
    dt = str(out.dtype).split(".")[1]
    expect = np.asarray(ref)
    got = out.to(ember.float32).numpy() if dt == "bfloat16" else out.numpy()
    if got.dtype == np.bool_ or np.issubdtype(got.dtype, np.integer):
        np.testing.assert_array_equal(got, expect.astype(got.dtype), err_msg=name)
    else:
        rtol, atol = tol(dt)
        np.testing.assert_allclose(got.astype(np.float64), expect.astype(np.float64), rtol=rtol,
                                   atol=atol, equal_nan=True, err_msg=name)


# ---- unary -------------------------------------------------------------------------

@pytest.mark.parametrize("op", unary_ops, ids=lambda o: o.name)
@pytest.mark.parametrize("dt", DTYPES)
def test_unary_dtype_and_values(op, dt, rng):
    ref = TORCH["unary"][op.name][dt]
    ref_np, t = make((4, 5), dt, rng, op.domain)
    f = getattr(ember, op.name)
    if ref.startswith("ERR") and not _torch_lacks_16bit(ref, TORCH["unary"][op.name]["float32"]):
        with pytest.raises(RuntimeError, match="(?i)" + op.name.split("_")[0]):
            f(t)
        return
    out = f(t)
    if not ref.startswith("ERR"):
        assert str(out.dtype) == "ember." + ref, (op.name, dt)
    if dt == "bool" and op.name == "sign":
        ref_np = ref_np.astype(np.int8)  # NumPy has no bool loop for sign
    with np.errstate(all="ignore"):
        expect = op.ref(ref_np.astype(np.float64) if out.dtype.is_floating_point else ref_np)
    check_value(out, expect, op.name)


@pytest.mark.parametrize("op", unary_ops, ids=lambda o: o.name)
def test_unary_shapes(op, rng):
    dt = "float32" if op.kind not in ("BITS",) else "int64"
    f = getattr(ember, op.name)
    for shape in [(), (0,), (3, 0, 2), (1,), (7,)]:
        a, t = make(shape, dt, rng, op.domain)
        out = f(t)
        assert out.shape == shape
        with np.errstate(all="ignore"):
            check_value(out, op.ref(a.astype(np.float64) if dt == "float32" else a), op.name)
    # non-contiguous: transposed and stepped views
    a, t = make((6, 8), dt, rng, op.domain)
    for view_np, view in [(a.T, t.t()), (a[::2, 1::3], t[::2, 1::3] if hasattr(t, "__getitem__") else None)]:
        if view is None:
            continue
        with np.errstate(all="ignore"):
            check_value(f(view), op.ref(view_np.astype(np.float64) if dt == "float32" else view_np), op.name)


@pytest.mark.parametrize("op", unary_ops, ids=lambda o: o.name)
def test_unary_inplace_and_out(op, rng):
    dt = "float64" if op.kind not in ("BITS",) else "int32"
    a, t = make((3, 4), dt, rng, op.domain)
    f = getattr(ember, op.name)
    expected = f(t)
    # out=
    out = ember.from_numpy(np.zeros((3, 4), dtype=np.dtype(str(expected.dtype).split(".")[1])))
    r = f(t, out=out)
    assert r is out
    check_value(out, expected.numpy(), op.name)
    # wrong out shape: resized, with PyTorch's deprecation warning
    wrong = ember.zeros(2, dtype=out.dtype)
    with pytest.warns(UserWarning, match=r"resized since it had shape \[2\]"):
        f(t, out=wrong)
    check_value(wrong, expected.numpy(), op.name)
    # ... but memory NumPy owns cannot grow (PyTorch: storage that is not resizable)
    foreign = ember.from_numpy(np.zeros((2,), dtype=out.numpy().dtype))
    with pytest.raises(RuntimeError, match="not resizable"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f(t, out=foreign)
    # in-place (only where the result dtype is the input dtype)
    if expected.dtype == t.dtype:
        v0 = t._version
        r = getattr(t, op.name + "_")()
        assert r.data_ptr() == t.data_ptr()
        assert t._version == v0 + 1
        check_value(t, expected.numpy(), op.name)
        # in-place on a non-contiguous view writes through to the base
        a2, t2 = make((4, 6), dt, rng, op.domain)
        view = t2.t()
        getattr(view, op.name + "_")()
        with np.errstate(all="ignore"):
            check_value(t2, op.ref(a2.astype(np.float64) if dt == "float64" else a2), op.name)


# ---- binary -------------------------------------------------------------------------

def _pairs():
    for a in DTYPES:
        for b in DTYPES:
            yield a, b


@pytest.mark.parametrize("op", binary_ops, ids=lambda o: o.name)
def test_binary_result_dtypes_match_pytorch(op, rng):
    f = getattr(ember, op.name)
    for a, b in _pairs():
        ref = TORCH["binary"][op.name][f"{a},{b}"]
        f32 = TORCH["binary"][op.name]["float32,float32"]
        x = ember.from_numpy(np.ones(3, _np_dtype(a))).to(getattr(ember, a))
        y = ember.from_numpy(np.ones(3, _np_dtype(b))).to(getattr(ember, b))
        if ref.startswith("ERR") and not _torch_lacks_16bit(ref, f32):
            with _raises(ref):
                f(x, y)
            continue
        if ref.startswith("ERR"):
            continue
        assert str(f(x, y).dtype) == "ember." + ref, (op.name, a, b)
        # 0-dim second operand: weaker in promotion within its category
        zref = TORCH["zero_dim"][op.name][f"{a},{b}"]
        if not zref.startswith("ERR"):
            z = ember.from_numpy(np.ones((), _np_dtype(b))).to(getattr(ember, b))
            assert str(f(x, z).dtype) == "ember." + zref, (op.name, a, b, "0-dim")


@pytest.mark.parametrize("op", binary_ops, ids=lambda o: o.name)
def test_binary_python_scalars_match_pytorch(op):
    f = getattr(ember, op.name)
    for a in DTYPES:
        x = ember.from_numpy(np.ones(3, _np_dtype(a))).to(getattr(ember, a))
        for s, v in [("int", 2), ("float", 2.5), ("bool", True)]:
            ref = TORCH["scalar"][op.name][f"{a},{s}"]
            if ref.startswith("ERR"):
                if not _torch_lacks_16bit(ref, TORCH["scalar"][op.name][f"float32,{s}"]):
                    with _raises(ref):
                        f(x, v)
                continue
            assert str(f(x, v).dtype) == "ember." + ref, (op.name, a, s)


@pytest.mark.parametrize("op", binary_ops, ids=lambda o: o.name)
@pytest.mark.parametrize("dt", DTYPES)
def test_binary_values(op, dt, rng):
    ref = TORCH["binary"][op.name][f"{dt},{dt}"]
    if ref.startswith("ERR") and not _torch_lacks_16bit(ref, TORCH["binary"][op.name]["float32,float32"]):
        return  # covered by the dtype test
    f = getattr(ember, op.name)
    a, x = make((5, 4), dt, rng)
    b, y = make((5, 4), dt, rng, op.domain2)
    out = f(x, y)
    compute = np.float64 if out.dtype.is_floating_point or dt.startswith(("float", "bfloat")) else None
    with np.errstate(all="ignore"):
        expect = op.ref(a.astype(compute), b.astype(compute)) if compute else op.ref(a, b)
    check_value(out, expect, op.name)
    # broadcasting both ways, with a 0-d and a Python scalar operand
    b1, y1 = make((1, 4), dt, rng, op.domain2)
    with np.errstate(all="ignore"):
        e = op.ref(a.astype(compute), b1.astype(compute)) if compute else op.ref(a, b1)
    check_value(f(x, y1), e, op.name)
    a3, x3 = make((5, 1, 3), dt, rng)
    b3, y3 = make((2, 3), dt, rng, op.domain2)
    with np.errstate(all="ignore"):
        e = op.ref(a3.astype(compute), b3.astype(compute)) if compute else op.ref(a3, b3)
    r = f(x3, y3)
    assert r.shape == (5, 2, 3)
    check_value(r, e, op.name)
    # non-contiguous operands
    a4, x4 = make((4, 5), dt, rng)
    b4, y4 = make((5, 4), dt, rng, op.domain2)
    with np.errstate(all="ignore"):
        e = op.ref(a4.T.astype(compute), b4.astype(compute)) if compute else op.ref(a4.T, b4)
    check_value(f(x4.t(), y4), e, op.name)
    # empty
    assert f(make((0, 4), dt, rng)[1], make((1, 4), dt, rng, op.domain2)[1]).shape == (0, 4)


@pytest.mark.parametrize("op", binary_ops, ids=lambda o: o.name)
def test_binary_inplace_and_out(op, rng):
    dt = "int32" if op.kind == "BITS" else "float64"
    a, x = make((3, 4), dt, rng)
    b, y = make((4,), dt, rng, op.domain2)
    f = getattr(ember, op.name)
    expected = f(x, y)
    out = ember.from_numpy(np.zeros((3, 4), dtype=expected.numpy().dtype))
    assert f(x, y, out=out) is out
    check_value(out, expected.numpy(), op.name)
    wrong = ember.zeros(4, dtype=expected.dtype)
    with pytest.warns(UserWarning, match=r"had shape \[4\], which does not match the required "
                      r"output shape \[3, 4\]"):
        f(x, y, out=wrong)
    check_value(wrong, expected.numpy(), op.name)
    # in place, self must already have the broadcast shape
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        getattr(y.clone(), op.name + "_")(x)
    if expected.dtype == x.dtype:
        v0 = x._version
        assert getattr(x, op.name + "_")(y).data_ptr() == x.data_ptr()
        assert x._version == v0 + 1
        check_value(x, expected.numpy(), op.name)
        # in-place cannot broadcast the written tensor
        with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
            getattr(y, op.name + "_")(x)


def test_inplace_result_type_cannot_be_cast():
    x = ember.from_numpy(np.arange(4))
    with pytest.raises(RuntimeError, match="result type float32 can't be cast to the desired output type int64"):
        x.add_(1.5)
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.div_(2)
    x.add_(ember.from_numpy(np.ones(4, np.int8)))  # integer into int64 is fine
    np.testing.assert_array_equal(x.numpy(), [1, 2, 3, 4])


def test_broadcast_error_names_sizes_and_shapes():
    a = ember.from_numpy(np.zeros((2, 3), np.float32))
    b = ember.from_numpy(np.zeros((2,), np.float32))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of "
                                           r"tensor b \(2\) at non-singleton dimension 1"):
        a + b


def test_operators_and_reflected_forms(rng):
    a, x = make((3, 4), "float64", rng, (0.5, 3))
    cases = [
        (lambda t: t + 2, lambda n: n + 2), (lambda t: 2 + t, lambda n: 2 + n),
        (lambda t: t - 2, lambda n: n - 2), (lambda t: 2 - t, lambda n: 2 - n),
        (lambda t: t * 3, lambda n: n * 3), (lambda t: 3 * t, lambda n: 3 * n),
        (lambda t: t / 2, lambda n: n / 2), (lambda t: 2 / t, lambda n: 2 / n),
        (lambda t: t // 0.7, lambda n: n // 0.7), (lambda t: 5 // t, lambda n: 5 // n),
        (lambda t: t % 0.7, lambda n: n % 0.7), (lambda t: 5 % t, lambda n: 5 % n),
        (lambda t: t ** 2, lambda n: n ** 2), (lambda t: 2 ** t, lambda n: 2 ** n),
        (lambda t: -t, lambda n: -n), (lambda t: +t, lambda n: +n), (lambda t: abs(-t), lambda n: abs(-n)),
        (lambda t: t > 1, lambda n: n > 1), (lambda t: 1 < t, lambda n: 1 < n),
        (lambda t: t == t, lambda n: n == n), (lambda t: t != 1, lambda n: n != 1),
        (lambda t: t <= 1.5, lambda n: n <= 1.5), (lambda t: t >= 1.5, lambda n: n >= 1.5),
    ]
    for fe, fn in cases:
        check_value(fe(x), fn(a), "operator")
    i, xi = make((3, 4), "int64", rng)
    for fe, fn in [(lambda t: t & 3, lambda n: n & 3), (lambda t: 3 | t, lambda n: 3 | n),
                   (lambda t: t ^ 5, lambda n: n ^ 5), (lambda t: ~t, lambda n: ~n)]:
        check_value(fe(xi), fn(i), "bitwise operator")
    m = ember.from_numpy(np.array([True, False]))
    np.testing.assert_array_equal((~m).numpy(), [False, True])
    # augmented assignment is in place
    y = ember.from_numpy(a.copy())
    p = y.data_ptr()
    y += 1
    y *= 2
    y -= 1
    y /= 4
    assert y.data_ptr() == p
    np.testing.assert_allclose(y.numpy(), ((a + 1) * 2 - 1) / 4)
    # unsupported operand types fall through to Python's TypeError
    with pytest.raises(TypeError):
        x + "a"
    with pytest.raises(TypeError):
        x < None  # noqa: B015
    assert (x == None) is False  # noqa: E711  (identity fallback, as PyTorch)
    assert len({x, y}) == 2  # hashable by identity


def test_integer_division_by_zero_raises():
    x = ember.from_numpy(np.array([1, 2, 3]))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        x // 0
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        x % ember.from_numpy(np.array([1, 0, 1]))
    # float division by zero follows IEEE
    np.testing.assert_array_equal((x / 0).numpy(), [np.inf] * 3)
    # INT64_MIN // -1 wraps instead of trapping
    m = ember.from_numpy(np.array([np.iinfo(np.int64).min]))
    assert (m // -1).numpy()[0] == np.iinfo(np.int64).min


def test_integer_pow_negative_exponent():
    x = ember.from_numpy(np.array([1, 2, 3]))
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        x ** -1
    np.testing.assert_array_equal((x ** 2).numpy(), [1, 4, 9])
    np.testing.assert_allclose((x ** -1.0).numpy(), [1, 0.5, 1 / 3], rtol=1e-6)


# x ** e for one exponent (Note [pow by a scalar]): what PyTorch 2.15 gives (its CPU kernel
# takes the same forms), special values included.
_SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, -2.0, 4.0]
_POW_SPECIAL = {
    2: [0.0, 0.0, np.inf, np.inf, np.nan, 4.0, 16.0],
    3: [0.0, -0.0, np.inf, -np.inf, np.nan, -8.0, 64.0],
    0.5: [0.0, -0.0, np.inf, np.nan, np.nan, np.nan, 2.0],
    -0.5: [np.inf, -np.inf, 0.0, np.nan, np.nan, np.nan, 0.5],
    -1: [np.inf, -np.inf, 0.0, -0.0, np.nan, -0.5, 0.25],
    -2: [np.inf, np.inf, 0.0, 0.0, np.nan, 0.25, 0.0625],
    1: [0.0, -0.0, np.inf, -np.inf, np.nan, -2.0, 4.0],
    2.5: [0.0, 0.0, np.inf, np.inf, np.nan, np.nan, 32.0],
}


@pytest.mark.parametrize("e", list(_POW_SPECIAL))
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_pow_by_one_exponent(e, dtype):
    dt = getattr(ember, dtype)
    got = ember.tensor(_SPECIAL, dtype=dt).pow(e).double().numpy()
    want = np.array(_POW_SPECIAL[e])
    num = ~np.isnan(want)  # a NaN's sign bit means nothing
    np.testing.assert_array_equal(np.signbit(got[num]), np.signbit(want[num]))  # -0 vs +0
    np.testing.assert_array_equal(got, want)
    # ordinary values, non-contiguous, a 0-d exponent tensor, out= and in place
    rng = np.random.default_rng(0)
    a = rng.uniform(0.1, 3, size=(7, 6)) * rng.choice([-1, 1], size=(7, 6)) ** int(e != int(e))
    x = ember.tensor(a, dtype=dt).t()
    ref = np.power(ember.tensor(a, dtype=dt).double().numpy().T, e)
    tol = {"float32": 3e-7, "float64": 1e-15, "float16": 1e-3, "bfloat16": 8e-3}[dtype]
    np.testing.assert_allclose(x.pow(e).double().numpy(), ref, rtol=tol)
    np.testing.assert_allclose((x ** ember.tensor(e, dtype=dt)).double().numpy(), ref, rtol=tol)
    out = ember.empty(7, 6, dtype=dt).t()
    ember.pow(x, e, out=out)
    np.testing.assert_allclose(out.double().numpy(), ref, rtol=tol)
    y = x.clone()
    y.pow_(e)
    np.testing.assert_allclose(y.double().numpy(), ref, rtol=tol)
    assert ember.tensor([], dtype=dt).pow(e).shape == (0,)


def test_bool_arithmetic_messages():
    m = ember.from_numpy(np.array([True, False]))
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool tensors"):
        m - m
    with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor"):
        -m  # noqa: B018
    np.testing.assert_array_equal((m + m).numpy(), [True, False])
    np.testing.assert_array_equal((m * m).numpy(), [True, False])


def test_overlapping_inplace_is_rejected():
    x = ember.from_numpy(np.arange(6.0).reshape(2, 3))
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        x.add_(x[0])
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        ember.from_numpy(np.zeros(3)).expand(2, 3).add_(1)
    # exact aliasing is fine
    x.mul_(x)
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0).reshape(2, 3) ** 2)


def test_nan_propagation_maximum_minimum_relu():
    a = ember.from_numpy(np.array([np.nan, 1.0, -1.0]))
    b = ember.from_numpy(np.array([0.0, np.nan, 2.0]))
    np.testing.assert_array_equal(ember.maximum(a, b).numpy(), [np.nan, np.nan, 2.0])
    np.testing.assert_array_equal(ember.minimum(a, b).numpy(), [np.nan, np.nan, -1.0])
    np.testing.assert_array_equal(ember.relu(a).numpy(), [np.nan, 1.0, 0.0])


def test_where_and_clamp(rng):
    a, x = make((3, 4), "float32", rng)
    c = x > 0
    np.testing.assert_array_equal(ember.where(c, x, 0.0).numpy(), np.where(a > 0, a, 0.0))
    np.testing.assert_array_equal(ember.where(c, 1, x).numpy(), np.where(a > 0, 1, a).astype(np.float32))
    assert ember.where(c, 1, 0).dtype == ember.int64
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor"):
        ember.where(x, x, x)
    np.testing.assert_array_equal(x.clamp(-1, 1).numpy(), np.clip(a, -1, 1))
    np.testing.assert_array_equal(ember.clamp(x, min=0).numpy(), np.maximum(a, 0))
    np.testing.assert_array_equal(x.clip(max=0.5).numpy(), np.minimum(a, 0.5))
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        x.clamp()
    y = ember.from_numpy(a.copy())
    y.clamp_(-0.5, 0.5)
    np.testing.assert_array_equal(y.numpy(), np.clip(a, -0.5, 0.5))


def test_alpha_only_for_add_and_sub():
    a = ember.tensor([1.0, 2.0])
    np.testing.assert_array_equal(ember.add(a, a, alpha=2).numpy(), [3.0, 6.0])
    np.testing.assert_array_equal(a.sub(a, alpha=0.5).numpy(), [0.5, 1.0])
    # the other table ops' signatures have no alpha (pybind's TypeError lists the signature)
    with pytest.raises(TypeError, match=r"(?s)mul\(\): incompatible.*kwargs: alpha=2"):
        ember.mul(a, a, alpha=2)
    with pytest.raises(TypeError, match=r"(?s)mul_\(\): incompatible.*kwargs: alpha=2"):
        a.mul_(a, alpha=2)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int16", "float32", "float64"])
@pytest.mark.parametrize("a_kind", ["tensor", "scalar", "broadcast"])
@pytest.mark.parametrize("b_kind", ["tensor", "scalar", "broadcast"])
def test_where_broadcast_operand_loops(rng, dtype, a_kind, b_kind):
    # Each value operand contiguous, a number, or a size-1 tensor broadcast (stride 0): the
    # contiguous loops blend by mask (relu's backward is where(mask, 0, grad)).
    n = 1037  # not a multiple of any vector width
    cond = rng.uniform(size=n) > 0.4

    def value(kind, seed):
        v = np.random.default_rng(seed).integers(0, 5, size=n if kind == "tensor" else 1)
        v = v.astype(dtype)
        if kind == "scalar":
            return v[0].item(), v[0]
        return ember.from_numpy(v), v
    (ae, an), (be, bn) = value(a_kind, 1), value(b_kind, 2)
    got = ember.where(ember.from_numpy(cond), ae, be).numpy()
    want = np.where(cond, an, bn)
    np.testing.assert_array_equal(got, want.astype(got.dtype))
    # a non-0/1 condition byte still selects (a bool view of uint8 data)
    c2 = ember.from_numpy(np.where(cond, 3, 0).astype(np.uint8)).view(ember.bool)
    np.testing.assert_array_equal(ember.where(c2, ae, be).numpy(), want.astype(got.dtype))
    # and on the strided loop (every other element)
    c3 = ember.from_numpy(np.where(np.repeat(cond, 2), 2, 0).astype(np.uint8)).view(ember.bool)[::2]
    np.testing.assert_array_equal(ember.where(c3, ae, be).numpy(), want.astype(got.dtype))


@pytest.mark.parametrize("threads", [1, 2])
def test_streamed_outputs(threads):
    # Note [Streaming stores]: an op touching >= 64 MiB streams its output through a
    # buffer with non-temporal stores, unless the output is an input. Each path, and an
    # output that is not 64-byte aligned, must give the plain loop's values.
    n = (3 << 21) + 37  # 24 MiB per float operand, not a multiple of the 16 KiB chunk
    old = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        rng = np.random.default_rng(0)
        an, bn = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
        a, b = ember.from_numpy(an.copy()), ember.from_numpy(bn)
        np.testing.assert_array_equal((a + b).numpy(), an + bn)  # streamed
        np.testing.assert_array_equal((a * 2.5).numpy(), an * np.float32(2.5))  # scalar operand
        out = ember.empty(n + 1)[1:]  # 4-byte offset: never streamed
        ember.mul(a, b, out=out)
        np.testing.assert_array_equal(out.numpy(), an * bn)
        np.testing.assert_allclose(ember.nn.functional.silu(a).numpy(), an / (1 + np.exp(-an)),
                                   rtol=1e-5, atol=1e-6)  # the activation loops stream too
        a.mul_(b)  # in place: not streamed
        np.testing.assert_array_equal(a.numpy(), an * bn)
    finally:
        ember.set_num_threads(old)


def _half_values(n, rng):
    """n float16 values covering normals, subnormals, zeros of both signs, infinities and NaN."""
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, -65504.0, 6e-8, -6e-8,
                         1e-5, 2 ** -14, 1.0, -1.0], dtype=np.float16)
    body = (rng.standard_normal(n) * rng.choice([1e-6, 1e-3, 1.0, 1e3], n)).astype(np.float16)
    k = min(n, len(specials))
    body[:k] = specials[:k]
    return body


@pytest.mark.parametrize("capability", ["default", "best"])
def test_float16_chunked_loops(capability):
    # Note [Half loops]: contiguous float16 loops convert chunks of 128 through float buffers
    # (eight at a time with F16C). Lengths around the chunk and vector widths, every contiguous
    # case of the binary loop (two spans, a scalar on either side), a bool output, casts both
    # ways (float32 and others), and strided operands must all give NumPy's float16 results.
    # The same code runs with the portable conversions under EMBER_CPU_CAPABILITY=default.
    import subprocess
    import sys
    code = r'''
import numpy as np, ember
from tests.test_elementwise import _half_values
rng = np.random.default_rng(0)
def eq(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert np.array_equal(got, want, equal_nan=True), np.flatnonzero(~((got == want) | (np.isnan(got) & np.isnan(want))))[:5]
for n in [0, 1, 7, 8, 9, 127, 128, 129, 255, 256, 257, 1000, 4099]:
    an, bn = _half_values(n, rng), _half_values(n, rng)[::-1].copy()
    a, b = ember.from_numpy(an), ember.from_numpy(bn)
    with np.errstate(all="ignore"):
        eq((a + b).numpy(), an + bn)
        eq((a * b).numpy(), an * bn)
        eq((a * 2.5).numpy(), an * np.float16(2.5))
        eq((3.0 - a).numpy(), np.float16(3.0) - an)
        eq((a / b).numpy(), an / bn)
        eq(a.neg().numpy(), -an)
        eq(a.abs().numpy(), np.abs(an))
        eq(a.sqrt().numpy(), np.sqrt(an.astype(np.float32)).astype(np.float16))
        eq((a < b).numpy(), an < bn)
        eq(a.isnan().numpy(), np.isnan(an))
        eq(a.float().numpy(), an.astype(np.float32))
        eq(a.double().numpy(), an.astype(np.float64))
        f32 = (rng.standard_normal(n) * 1e4).astype(np.float32)
        f32[: min(n, 3)] = [np.nan, 70000.0, 1e-9][: min(n, 3)]
        eq(ember.from_numpy(f32).half().numpy(), f32.astype(np.float16))
        f64 = rng.standard_normal(n) * 100
        eq(ember.from_numpy(f64).half().numpy(), f64.astype(np.float32).astype(np.float16))
        i64 = rng.integers(-70000, 70000, n)
        eq(ember.from_numpy(i64).half().numpy(), i64.astype(np.float32).astype(np.float16))
        eq(a[::2].float().numpy(), an[::2].astype(np.float32))  # strided: the generic loop
        eq((a[::2] + b[::2]).numpy(), an[::2] + bn[::2])
        F = ember.nn.functional
        for act in (F.gelu, F.silu, F.relu, ember.sigmoid, ember.tanh):  # the activation loops
            eq(act(a).numpy(), act(a.float()).half().numpy())
        x16, x32 = a.clone().requires_grad_(), a.float().requires_grad_()
        F.gelu(x16).backward(b)
        F.gelu(x32).backward(b.float())
        eq(x16.grad.numpy(), x32.grad.half().numpy())
        out = ember.empty(n + 1, dtype=ember.float16)[1:]  # a 2-byte offset output
        ember.add(a, b, out=out)
        eq(out.numpy(), an + bn)
print("ok")
'''
    env = dict(os.environ)
    if capability == "default":
        env["EMBER_CPU_CAPABILITY"] = "default"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join([root] + env.get("PYTHONPATH", "").split(os.pathsep))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
