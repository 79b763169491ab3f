"""Registry entries for the numeric composites (ops/surface_numerics.cpp)."""
from __future__ import annotations

import numpy as np

import ember

from . import OpEntry, Sample
from ._util import err, make, via_out

FL = ("float32", "float64")
INTS = ("int32", "int64")


def _s(*args, desc="", **kwargs):
    return Sample(args, kwargs, desc)


def _un(low=-3.0, high=3.0):
    def samples(device, dtype):
        yield _s(make((3, 4), device, dtype, low=low, high=high))
        yield _s(make((2, 3), device, dtype, low=low, high=high, noncontig=True, seed=1), desc="noncontig")
        yield _s(make((), device, dtype, low=low, high=high, seed=2), desc="0-d")
    return samples


def _bin(low=-3.0, high=3.0, low2=None, high2=None):
    low2 = low if low2 is None else low2
    high2 = high if high2 is None else high2

    def samples(device, dtype):
        yield _s(make((3, 4), device, dtype, low=low, high=high), make((3, 4), device, dtype, low=low2, high=high2, seed=5))
        yield _s(make((3, 1), device, dtype, low=low, high=high, seed=2),
                 make((4,), device, dtype, low=low2, high=high2, seed=3), desc="broadcast")
    return samples


def _specials(device, dtype):
    yield _s(ember.tensor([0.0, -0.0, 1.5, -2.0, float("inf"), -float("inf"), float("nan")], dtype=dtype, device=device))


def _logaddexp_ref(a, b):
    return np.logaddexp(a, b)


def _xlogy_ref(x, y):
    with np.errstate(all="ignore"):
        r = np.where(x == 0, 0.0, x * np.log(y))
    return np.where(np.isnan(y), np.nan, r)


def _logit_ref(a, eps=None):
    if eps is not None:
        a = np.clip(a, eps, 1 - eps)
    return np.log(a / (1 - a))


def _frexp_ref(a):
    m, e = np.frexp(a)
    return m, e.astype(np.int32)


ENTRIES = [
    OpEntry("hypot", ember.hypot, _bin(0.5, 3), np.hypot, dtypes=FL, aliases=("Tensor.hypot", "Tensor.hypot_"),
            errors=lambda d: [err(NotImplementedError, "not implemented for 'Long'",
                                  ember.tensor([3], device=d), ember.tensor([4], device=d))]),
    OpEntry("copysign", ember.copysign, _bin(0.5, 3, -3, 3), np.copysign, dtypes=FL + INTS,
            aliases=("Tensor.copysign", "Tensor.copysign_")),
    OpEntry("xlogy", ember.xlogy, _bin(-2, 2, 0.5, 3), _xlogy_ref, dtypes=FL,
            aliases=("Tensor.xlogy", "Tensor.xlogy_")),
    OpEntry("float_power", ember.float_power, _bin(0.5, 2), np.float_power, dtypes=FL + INTS,
            aliases=("Tensor.float_power", "Tensor.float_power_")),
    OpEntry("ldexp", ember.ldexp, lambda d, t: [_s(make((3, 4), d, t), make((3, 4), d, ember.int64, seed=3))],
            lambda a, b: a * np.exp2(b), dtypes=FL, aliases=("Tensor.ldexp", "Tensor.ldexp_")),
    OpEntry("gcd", ember.gcd, _bin(-20, 20), np.gcd, dtypes=INTS, grad=False,
            aliases=("Tensor.gcd", "Tensor.gcd_"),
            errors=lambda d: [err(NotImplementedError, "not implemented for 'Float'",
                                  ember.ones(2, device=d), ember.ones(2, device=d))]),
    OpEntry("lcm", ember.lcm, _bin(-20, 20), np.lcm, dtypes=INTS, grad=False, aliases=("Tensor.lcm", "Tensor.lcm_")),
    OpEntry("bitwise_left_shift", ember.bitwise_left_shift,
            lambda d, t: [_s(make((3, 4), d, t, low=-50, high=50), make((3, 4), d, t, low=0, high=8, seed=4))],
            np.left_shift, dtypes=INTS, grad=False,
            aliases=("Tensor.bitwise_left_shift", "Tensor.bitwise_left_shift_", "Tensor.__lshift__")),
    OpEntry("bitwise_right_shift", ember.bitwise_right_shift,
            lambda d, t: [_s(make((3, 4), d, t, low=-50, high=50), make((3, 4), d, t, low=0, high=8, seed=4))],
            np.right_shift, dtypes=INTS, grad=False,
            aliases=("Tensor.bitwise_right_shift", "Tensor.bitwise_right_shift_", "Tensor.__rshift__")),
    OpEntry("logaddexp", ember.logaddexp, _bin(), _logaddexp_ref, dtypes=FL, aliases=("Tensor.logaddexp",)),
    OpEntry("logaddexp2", ember.logaddexp2, _bin(), np.logaddexp2, dtypes=FL, aliases=("Tensor.logaddexp2",)),
    OpEntry("fmax", ember.fmax, _bin(), np.fmax, dtypes=FL + INTS, aliases=("Tensor.fmax",)),
    OpEntry("fmin", ember.fmin, _bin(), np.fmin, dtypes=FL + INTS, aliases=("Tensor.fmin",)),
    OpEntry("fmax_nan", ember.fmax, lambda d, t: [_s(ember.tensor([1.0, float("nan"), float("nan")], dtype=t, device=d),
                                                      ember.tensor([float("nan"), 2.0, float("nan")], dtype=t, device=d))],
            np.fmax, dtypes=FL, grad=False),
    OpEntry("heaviside", ember.heaviside,
            lambda d, t: [_s(ember.tensor([-1.5, 0.0, 2.0], dtype=t, device=d), ember.tensor([0.5], dtype=t, device=d))],
            np.heaviside, dtypes=FL + INTS, grad=False, aliases=("Tensor.heaviside", "Tensor.heaviside_")),
    OpEntry("clamp_min", ember.clamp_min, lambda d, t: [_s(make((3, 4), d, t), 0.5)],
            lambda a, m: np.maximum(a, m), dtypes=FL, aliases=("Tensor.clamp_min", "Tensor.clamp_min_")),
    OpEntry("clamp_max", ember.clamp_max, lambda d, t: [_s(make((3, 4), d, t), 0.5)],
            lambda a, m: np.minimum(a, m), dtypes=FL, aliases=("Tensor.clamp_max", "Tensor.clamp_max_")),
    OpEntry("isposinf", ember.isposinf, _specials, np.isposinf, dtypes=FL, grad=False, aliases=("Tensor.isposinf",)),
    OpEntry("isneginf", ember.isneginf, _specials, np.isneginf, dtypes=FL, grad=False, aliases=("Tensor.isneginf",)),
    OpEntry("isreal", ember.isreal, _un(), np.isreal, dtypes=FL + INTS, grad=False, aliases=("Tensor.isreal",)),
    OpEntry("signbit", ember.signbit, lambda d, t: list(_specials(d, t))[:1] if t.is_floating_point else
            [_s(make((3, 4), d, t))], lambda a: np.signbit(a) & ~np.isnan(a), dtypes=FL + INTS, grad=False,
            aliases=("Tensor.signbit",), note="the sign of a NaN is not read: signbit(nan) is False"),
    OpEntry("sgn", ember.sgn, _un(), np.sign, dtypes=FL + INTS, aliases=("Tensor.sgn", "Tensor.sgn_")),
    OpEntry("positive", ember.positive, _un(), np.positive, dtypes=FL + INTS, aliases=("Tensor.positive",),
            errors=lambda d: [err(RuntimeError, "bool tensor", ember.ones(2, dtype=ember.bool, device=d))]),
    OpEntry("sinc", ember.sinc, _un(), np.sinc, dtypes=FL, aliases=("Tensor.sinc", "Tensor.sinc_")),
    OpEntry("sinc_at_zero", ember.sinc, lambda d, t: [_s(ember.tensor([0.0, 1.0, -2.0], dtype=t, device=d))],
            np.sinc, dtypes=FL, grad=False, note="sinc''(0) is masked to 0 as in PyTorch's formula"),
    OpEntry("deg2rad", ember.deg2rad, _un(-180, 180), np.deg2rad, dtypes=FL, aliases=("Tensor.deg2rad", "Tensor.deg2rad_")),
    OpEntry("rad2deg", ember.rad2deg, _un(), np.rad2deg, dtypes=FL, aliases=("Tensor.rad2deg", "Tensor.rad2deg_")),
    OpEntry("logit", ember.logit, lambda d, t: [_s(make((3, 4), d, t, low=0.05, high=0.95)),
                                                _s(make((3, 4), d, t, low=0.0, high=1.0), 0.1)],
            _logit_ref, dtypes=FL, aliases=("Tensor.logit", "Tensor.logit_")),
    OpEntry("frexp", ember.frexp, lambda d, t: [_s(ember.tensor([8.0, 0.3, 0.0, -5.0, 1e-3, 1024.0, 0.5], dtype=t, device=d))],
            _frexp_ref, dtypes=FL, grad=False, aliases=("Tensor.frexp",)),
    OpEntry("addcmul", ember.addcmul, lambda d, t: [_s(make((3, 4), d, t), make((3, 4), d, t, seed=2),
                                                       make((4,), d, t, seed=3), value=0.5)],
            lambda a, b, c, value=1: a + value * b * c, dtypes=FL, aliases=("Tensor.addcmul", "Tensor.addcmul_")),
    OpEntry("addcdiv", ember.addcdiv, lambda d, t: [_s(make((3, 4), d, t), make((3, 4), d, t, seed=2),
                                                       make((4,), d, t, low=1, high=2, seed=3), value=2)],
            lambda a, b, c, value=1: a + value * b / c, dtypes=FL, aliases=("Tensor.addcdiv", "Tensor.addcdiv_"),
            errors=lambda d: [err(RuntimeError, "Integer division", ember.ones(2, device=d),
                                  ember.ones(2, dtype=ember.int64, device=d), ember.ones(2, dtype=ember.int64, device=d))]),
    OpEntry("isclose", ember.isclose,
            lambda d, t: [_s(ember.tensor([1.0, 1.0 + 1e-6, float("nan"), float("inf"), 1.0], dtype=t, device=d),
                             ember.tensor([1.0, 1.0, float("nan"), float("inf"), 2.0], dtype=t, device=d)),
                          _s(ember.tensor([1.0, float("nan")], dtype=t, device=d),
                             ember.tensor([1.1, float("nan")], dtype=t, device=d), rtol=0.2, equal_nan=True)],
            lambda a, b, rtol=1e-5, atol=1e-8, equal_nan=False: np.isclose(a, b, rtol, atol, equal_nan),
            dtypes=FL, grad=False, aliases=("Tensor.isclose",),
            errors=lambda d: [err(RuntimeError, "same dtype", ember.ones(2, device=d), ember.ones(2, dtype=ember.int64, device=d)),
                              err(RuntimeError, "rtol must be greater", ember.ones(2, device=d), ember.ones(2, device=d), rtol=-1.0)]),
    OpEntry("allclose", lambda a, b, **k: np.array(ember.allclose(a, b, **k)),
            lambda d, t: [_s(make((3,), d, t), make((3,), d, t)), _s(make((3,), d, t), make((3,), d, t, seed=9))],
            lambda a, b: np.array(np.allclose(a, b, 1e-5, 1e-8)), dtypes=FL, grad=False,
            aliases=("Tensor.allclose",)),
    OpEntry("equal", lambda a, b: np.array(ember.equal(a, b)),
            lambda d, t: [_s(make((3,), d, t), make((3,), d, t)), _s(make((3,), d, t), make((3,), d, t, seed=9)),
                          _s(make((3,), d, t), make((1, 3), d, t))],
            lambda a, b: np.array(a.shape == b.shape and bool(np.all(a == b))), dtypes=FL + INTS, grad=False,
            aliases=("Tensor.equal",)),
]


def _polygamma_ref(n, x):
    import mpmath
    return np.vectorize(lambda v: float(mpmath.polygamma(n, v)), otypes=[np.float64])(x)


def _mvlgamma_ref(x, p):
    import math
    f = np.vectorize(math.lgamma, otypes=[np.float64])
    return p * (p - 1) / 4 * math.log(math.pi) + sum(f(x - j / 2) for j in range(p))


ENTRIES += [
    OpEntry("polygamma", ember.polygamma,
            lambda d, t: [_s(n, make((3, 4), d, t, low=0.2, high=6, seed=n)) for n in (0, 1, 2, 3)] +
            [_s(1, make((5,), d, t, low=-2.9, high=-0.1, seed=9), desc="negative x")],
            _polygamma_ref, dtypes=FL, atol=1e-7, rtol=1e-7, low_precision_tol=(1e-3, 1e-4),
            aliases=("Tensor.polygamma", "Tensor.polygamma_"),
            errors=lambda d: [err(RuntimeError, "negative n", -1, ember.ones(2, device=d))]),
    OpEntry("mvlgamma", ember.mvlgamma, lambda d, t: [_s(make((3, 4), d, t, low=1.6, high=5), 3),
                                                      _s(make((4,), d, t, low=0.6, high=5), 1)],
            _mvlgamma_ref, dtypes=FL, aliases=("Tensor.mvlgamma", "Tensor.mvlgamma_"),
            errors=lambda d: [err(RuntimeError, r"greater than \(p-1\)/2", ember.ones(2, device=d), 4)]),
]


def _nextafter_samples(device, dtype):
    vals = [0.0, -0.0, 1.0, 1.0, -1.0, 0.5, 3.0, 1e-300 if dtype == ember.float64 else 1e-40, float("inf"), 2.0]
    to = [1.0, -1.0, 2.0, 0.0, 0.0, 0.0, 3.0, 0.0, 0.0, float("nan")]
    yield _s(ember.tensor(vals, dtype=dtype, device=device), ember.tensor(to, dtype=dtype, device=device))
    yield _s(make((3, 4), device, dtype), make((4,), device, dtype, seed=2))


ENTRIES += [
    OpEntry("nextafter", ember.nextafter, _nextafter_samples,
            lambda a, b: np.nextafter(a, b), dtypes=FL, grad=False, atol=0, rtol=0,
            aliases=("Tensor.nextafter", "Tensor.nextafter_"),
            errors=lambda d: [err(NotImplementedError, "not implemented for", ember.tensor([1], device=d),
                                  ember.tensor([2], device=d))]),
]


# --- clamp, lerp, nan_to_num, where (issue 6: moved out of _exempt.py so they get registry
# gradcheck) ---

def _clamp_samples(d, t):
    yield _s(make((3, 4), d, t), -1.25, 1.5, desc="scalars")
    yield _s(make((3, 4), d, t), min=-0.75, desc="min only")
    yield _s(make((3, 4), d, t), max=0.25, desc="max only")
    yield _s(make((2, 3), d, t, noncontig=True), -2.25, 0.5, desc="noncontig")
    yield _s(make((3, 4), d, t), 1.5, -1.0, desc="min > max gives max")
    yield _s(make((), d, t), -1.0, 1.0, desc="0-d")
    yield _s(make((0, 3), d, t), -1.0, 1.0, desc="empty")
    if t.is_floating_point:
        yield _s(make((3, 4), d, t), make((4,), d, t, low=-2, high=-0.5, seed=1),
                 make((3, 1), d, t, low=0.5, high=2, seed=2), desc="tensor bounds, broadcast")
        yield _s(make((3, 4), d, t), None, make((3, 4), d, t, seed=3), desc="tensor max only")


def _clamp_ref(a, min=None, max=None):
    r = a
    if min is not None:
        r = np.maximum(r, min)
    if max is not None:
        r = np.minimum(r, max)
    out = a.dtype
    if a.dtype.kind in "iu" and any(isinstance(b, float) for b in (min, max)):
        out = np.float32  # an integer tensor clamped to float bounds promotes to the default dtype
    return np.asarray(r).astype(out)


def _lerp_samples(d, t):
    yield _s(make((3, 4), d, t), make((3, 4), d, t, seed=1), 0.3, desc="scalar weight")
    yield _s(make((3, 4), d, t), make((3, 4), d, t, seed=1), 0.8, desc="weight >= 0.5")
    yield _s(make((3, 4), d, t), make((4,), d, t, seed=1), make((3, 1), d, t, low=0, high=1, seed=2),
             desc="tensor weight, broadcast")
    yield _s(make((2, 3), d, t, noncontig=True), make((2, 3), d, t, seed=1, noncontig=True), -0.5,
             desc="noncontig, extrapolate")
    yield _s(make((), d, t), make((), d, t, seed=1), make((), d, t, low=0, high=1, seed=2), desc="0-d")
    yield _s(make((0, 3), d, t), make((0, 3), d, t, seed=1), 0.5, desc="empty")


def _lerp_ref(a, b, w):
    return np.asarray(a + w * (b - a)).astype(a.dtype)


def _specials2(d, t):
    return ember.tensor([[1.0, float("nan"), -2.5], [float("inf"), 0.5, float("-inf")]], dtype=t, device=d)


def _n2n_samples(d, t):
    yield _s(_specials2(d, t), desc="defaults")
    yield _s(_specials2(d, t), nan=1.0, posinf=2.0, neginf=-2.0, desc="replacements")
    yield _s(_specials2(d, t), 0.5, desc="nan positional")
    yield _s(make((3, 4), d, t), desc="all finite")
    yield _s(make((2, 3), d, t, noncontig=True), posinf=1.0, desc="noncontig")
    yield _s(ember.tensor(float("nan"), dtype=t, device=d), desc="0-d nan")
    yield _s(make((0, 3), d, t), desc="empty")


def _n2n_ref(a, nan=0.0, posinf=None, neginf=None):
    return np.nan_to_num(a, nan=nan, posinf=posinf, neginf=neginf)


def _where_samples(d, t):
    c = make((3, 4), d, ember.bool, seed=5)
    yield _s(c, make((3, 4), d, t), make((3, 4), d, t, seed=1))
    yield _s(make((4,), d, ember.bool, seed=6), make((3, 1), d, t), make((3, 4), d, t, seed=1), desc="broadcast")
    yield _s(c, make((3, 4), d, t), 0.5 if t.is_floating_point else 2, desc="scalar other")
    yield _s(make((3, 4), d, ember.bool, seed=7, noncontig=True), make((3, 4), d, t, noncontig=True),
             make((3, 4), d, t, seed=1), desc="noncontig")
    yield _s(ember.tensor(True, device=d), make((), d, t), make((2,), d, t, seed=1), desc="0-d cond")
    yield _s(make((0, 3), d, ember.bool), make((0, 3), d, t), make((0, 3), d, t, seed=1), desc="empty")


def _where_ref(c, x, y):
    return np.asarray(np.where(c, x, y)).astype(x.dtype)


def _o(d):
    return lambda *shape, **kw: ember.ones(*shape, device=d, **kw)


ENTRIES += [
    OpEntry("clamp", ember.clamp, _clamp_samples, _clamp_ref, dtypes=FL + ("int64",),
            aliases=("Tensor.clamp", "Tensor.clamp_"),
            errors=lambda d: [err(RuntimeError, "At least one of 'min' or 'max' must not be None", _o(d)(3)),
                              err(RuntimeError, r"size of tensor a \(3\) must match the size of tensor b \(2\)",
                                  _o(d)(3), min=_o(d)(2))],
            note="clamp(Tensor, Tensor, float) is accepted where PyTorch raises TypeError"),
    OpEntry("lerp", via_out(ember.lerp), _lerp_samples, _lerp_ref, dtypes=FL, aliases=("Tensor.lerp", "Tensor.lerp_"),
            errors=lambda d: [err(RuntimeError, "must match the size of tensor b", _o(d)(3), _o(d)(4), 0.5),
                              err(RuntimeError, "expected dtype float.* for `end` but got dtype",
                                  _o(d)(3), _o(d)(3, dtype=ember.float64), 0.5),
                              err(RuntimeError, "expected dtype float32 for `weight` but got dtype float64",
                                  _o(d)(3), _o(d)(3), _o(d)(3, dtype=ember.float64)),
                              err(RuntimeError, "expected a floating-point `start`",
                                  _o(d)(3, dtype=ember.int64), _o(d)(3, dtype=ember.int64), 0.5)],
            note="the size-mismatch message names the sizes the other way round from PyTorch's "
                 "(tensor a (4) vs b (3) for lerp(ones(3), ones(4)))"),
    OpEntry("nan_to_num", ember.nan_to_num, _n2n_samples, _n2n_ref, dtypes=FL,
            aliases=("Tensor.nan_to_num", "Tensor.nan_to_num_")),
    OpEntry("where", ember.where, _where_samples, _where_ref, dtypes=FL + ("int64",), aliases=("Tensor.where",),
            errors=lambda d: [err(RuntimeError, "where expected condition to be a boolean tensor",
                                  _o(d)(3), _o(d)(3), _o(d)(3)),
                              err(RuntimeError, r"size of tensor a \(3\) must match the size of tensor b \(4\)",
                                  _o(d)(3) > 0, _o(d)(3), _o(d)(4))]),
]
