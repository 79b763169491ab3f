"""The CUDA kernels of the fused activations and losses (backends/cuda/nn_activation.cu,
backends/cuda/nn_loss.cu) against the CPU kernels, through ember.nn.functional:
activation_stub / activation_backward_stub (every Act: gelu both forms, silu, softplus,
mish, elu / selu / celu, leaky_relu, hardtanh / relu6, hardswish, hardsigmoid, logsigmoid,
hardshrink, softshrink, threshold; out of place, in place, and the in-place forms'
backward from the result), nll_stub and cross_entropy_backward_stub (nll_loss and
cross_entropy with weight, ignore_index, every reduction, K-d inputs, class-probability
targets, label smoothing, bad targets) and ctc_stub / ctc_backward_stub (padded and
concatenated targets, repeated labels, empty targets and inputs, zero_infinity, long
targets that need the global workspace). Forward values and .grad are compared, in every
floating dtype, on empty, 0-d, size-1, non-contiguous and multi-block shapes; where the
CPU raises, the device must raise the same exception type.

How these tests run on each device: device_compare.py.
"""
import numpy as np
import pytest
from device_compare import FLOATS, assert_same, check, make, noncontig, seeded, to_dev

import ember
import ember.nn.functional as F

pytestmark = pytest.mark.usefixtures("compare_device")


def _grad(f, x0, g, **kw):
    """x.grad of f(x).backward(g) for a fresh leaf x with x0's values."""
    x = x0.detach().clone().requires_grad_(True)
    f(x, **kw).backward(g)
    return x.grad


def check_grad(f, x0, g, tol=None, what=""):
    """The gradient of f at x0 against g, on the CPU and on the device."""
    return check(lambda x, gg: _grad(f, x, gg), x0, g, tol=tol, what=what)


# ---- activations ------------------------------------------------------------------------

ACTS = {
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "softplus": F.softplus,
    "softplus_beta2_th1": lambda x: F.softplus(x, beta=2.0, threshold=1.0),
    "softplus_beta0.5": lambda x: F.softplus(x, beta=0.5, threshold=5.0),
    "mish": F.mish,
    "elu": F.elu,
    "elu_0.5": lambda x: F.elu(x, alpha=0.5),
    "selu": F.selu,
    "celu_1.5": lambda x: F.celu(x, alpha=1.5),
    "leaky_relu": F.leaky_relu,
    "leaky_relu_0.2": lambda x: F.leaky_relu(x, 0.2),
    "hardtanh": F.hardtanh,
    "hardtanh_-2_0.5": lambda x: F.hardtanh(x, -2.0, 0.5),
    "relu6": F.relu6,
    "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid,
    "logsigmoid": F.logsigmoid,
    "hardshrink": F.hardshrink,
    "hardshrink_1": lambda x: F.hardshrink(x, 1.0),
    "softshrink": F.softshrink,
    "softshrink_1": lambda x: F.softshrink(x, 1.0),
    "threshold": lambda x: F.threshold(x, 0.1, 20.0),
    "threshold_neg": lambda x: F.threshold(x, -1.0, -3.0),
}

# The in-place forms; those marked True save their result (backward from the result).
INPLACE = {
    "elu_": (lambda x: F.elu(x, alpha=0.7, inplace=True), True),
    "selu_": (lambda x: F.selu(x, inplace=True), True),
    "celu_": (lambda x: F.celu(x, alpha=2.0, inplace=True), True),
    "leaky_relu_": (lambda x: F.leaky_relu(x, 0.1, inplace=True), True),
    "hardtanh_": (lambda x: F.hardtanh(x, -0.5, 2.0, inplace=True), True),
    "relu6_": (lambda x: F.relu6(x, inplace=True), True),
    "threshold_": (lambda x: F.threshold(x, 0.2, -1.0, inplace=True), True),
    "silu_": (lambda x: F.silu(x, inplace=True), False),
    "mish_": (lambda x: F.mish(x, inplace=True), False),
    "hardsigmoid_": (lambda x: F.hardsigmoid(x, inplace=True), False),
    "hardswish_": (lambda x: F.hardswish(x, inplace=True), False),
}

ACT_SHAPES = [(), (0,), (0, 3), (1,), (7,), (5, 7), (3, 1, 4), (1000, 37)]

# the branch points of the piecewise activations, exactly
EDGES = [-6.0, -3.0, -2.0, -1.0, -0.5, -0.2, -0.0, 0.0, 0.1, 0.2, 0.5, 1.0, 2.0, 3.0, 6.0, 20.0,
         25.0, -25.0, 1e-3, -1e-3, 9.5, -9.5, 15.0, -15.0]


def _edges(dtype_name):
    return ember.tensor(EDGES, dtype=ember.float64).to(getattr(ember, dtype_name))


@pytest.mark.parametrize("dtype_name", FLOATS)
@pytest.mark.parametrize("name", list(ACTS))
def test_activation_forward(name, dtype_name):
    f = ACTS[name]
    rng = seeded("act", name, dtype_name)
    for shape in ACT_SHAPES:
        check(f, make(shape, dtype_name, rng, lo=-6, hi=6), what=f"{name} {dtype_name} {shape}")
    check(f, make((64,), dtype_name, rng, special=True), what=f"{name} {dtype_name} special")
    check(f, _edges(dtype_name), what=f"{name} {dtype_name} edges")
    check(f, make((64,), dtype_name, rng, lo=-40, hi=40), what=f"{name} {dtype_name} wide range")
    check(f, noncontig((5, 7), dtype_name, rng), what=f"{name} {dtype_name} strided")
    check(f, make((7, 5), dtype_name, rng).t(), what=f"{name} {dtype_name} transposed")
    y = make((3, 2, 3, 2, 3, 4), dtype_name, rng)[:, :, ::2, :, ::2, ::3]
    check(f, y, what=f"{name} {dtype_name} 6-d strided")


@pytest.mark.parametrize("dtype_name", FLOATS)
@pytest.mark.parametrize("name", list(ACTS))
def test_activation_backward(name, dtype_name):
    f = ACTS[name]
    rng = seeded("act_bwd", name, dtype_name)
    for shape in [(), (0,), (1,), (5, 7), (3, 1, 4), (700, 33)]:
        x = make(shape, dtype_name, rng, lo=-6, hi=6)
        g = make(shape, dtype_name, rng)
        check_grad(f, x, g, what=f"{name} {dtype_name} grad {shape}")
    x = make((64,), dtype_name, rng, special=True)
    check_grad(f, x, make((64,), dtype_name, rng), what=f"{name} {dtype_name} grad special")
    e = _edges(dtype_name)
    check_grad(f, e, make(tuple(e.shape), dtype_name, rng), what=f"{name} {dtype_name} grad edges")
    # a NaN / inf incoming gradient must not leak into the zeros of the dead zones
    gs = make((64,), dtype_name, rng, special=True)
    check_grad(f, make((64,), dtype_name, rng, lo=-6, hi=6), gs,
               what=f"{name} {dtype_name} special grad")
    # non-contiguous input and a broadcast (expanded) incoming gradient
    x = noncontig((5, 7), dtype_name, rng, lo=-6, hi=6)
    check_grad(f, x, make((5, 7), dtype_name, rng), what=f"{name} {dtype_name} strided grad")
    check_grad(f, make((4, 6), dtype_name, rng), make((6,), dtype_name, rng).expand(4, 6),
               what=f"{name} {dtype_name} expanded grad")


@pytest.mark.parametrize("dtype_name", FLOATS)
@pytest.mark.parametrize("name", list(INPLACE))
def test_activation_inplace(name, dtype_name):
    f, _ = INPLACE[name]
    rng = seeded("act_", name, dtype_name)
    for shape in [(), (0,), (5, 7), (300, 41)]:
        x = make(shape, dtype_name, rng, lo=-6, hi=6)
        check(lambda t: f(t.clone()), x, what=f"{name} {dtype_name} {shape}")
    x = make((64,), dtype_name, rng, special=True)
    check(lambda t: f(t.clone()), x, what=f"{name} {dtype_name} special")
    x = make((6, 10), dtype_name, rng, lo=-6, hi=6)
    check(lambda t: f(t.clone()[:, ::3]), x, what=f"{name} {dtype_name} strided in place")

    # under autograd: on a non-leaf, rebased; the result-saving forms differentiate
    # through activation_backward_stub with is_result
    def grad(x0, g):
        x = x0.detach().clone().requires_grad_(True)
        y = x * 1.0
        f(y)
        y.backward(g)
        return x.grad

    for shape in [(), (5, 7), (300, 41)]:
        x = make(shape, dtype_name, rng, lo=-6, hi=6)
        check(grad, x, make(shape, dtype_name, rng), what=f"{name} {dtype_name} grad {shape}")


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
@pytest.mark.parametrize("name", ["gelu", "gelu_tanh", "softplus", "elu", "celu_1.5", "logsigmoid",
                                  "hardswish", "silu", "mish", "leaky_relu", "hardtanh"])
def test_activation_double_backward(name, dtype_name):
    f = ACTS[name]
    rng = seeded("act2", name, dtype_name)

    def gg(x0, g):
        x = x0.detach().clone().requires_grad_(True)
        (d,) = ember.autograd.grad(f(x), (x,), grad_outputs=(g,), create_graph=True)
        (d2,) = ember.autograd.grad(d.sum(), (x,))
        return d, d2

    check(gg, make((6, 9), dtype_name, rng, lo=-4, hi=4), make((6, 9), dtype_name, rng),
          what=f"{name} {dtype_name} double backward")


@pytest.mark.parametrize("name", ["gelu", "softplus", "elu", "hardswish"])
def test_activation_grid_stride(name):
    """More elements than one launch's grid (65536 blocks of 256): grid-stride iterations."""
    f = ACTS[name]
    rng = seeded("act_big", name)
    n = (1 << 24) + 4099
    x = make((n,), "float32", rng, lo=-6, hi=6)
    check(f, x, what=f"{name} grid-stride")
    check_grad(f, x, make((n,), "float32", rng), what=f"{name} grid-stride grad")


def test_activation_integer_and_errors():
    rng = seeded("act_int")
    xi = ember.from_numpy(rng.integers(-5, 6, size=(4, 5)))
    for f in (F.hardtanh, F.relu6, F.leaky_relu, F.hardshrink, lambda t: F.threshold(t, 1, 7)):
        check(f, xi, what="integer composite")
    for f in (F.gelu, F.silu, F.elu, F.softplus, F.mish, F.logsigmoid):
        check(f, xi, what="integer input computes in the default dtype")
    xb = ember.tensor([True, False])
    x = make((3, 4), "float32", rng)
    check(F.gelu, xb, what="bool input raises")
    check(lambda t: F.gelu(t, approximate="bogus"), x, what="bad approximate")
    check(lambda t: F.hardtanh(t, 2.0, 1.0), x, what="hardtanh min > max")
    check(lambda t: F.softshrink(t, -1.0), x, what="negative lambda")
    check(lambda t: F.celu(t, alpha=0.0), x, what="celu alpha 0")

    def elu_neg_inplace(t):  # the result-saving backward with a negative alpha raises
        x = t.detach().clone().requires_grad_(True)
        y = x * 1.0
        F.elu(y, alpha=-0.5, inplace=True)
        y.sum().backward()
        return x.grad

    check(elu_neg_inplace, x, what="in-place elu with a negative alpha")


# ---- nll_loss / cross_entropy -----------------------------------------------------------

def _targets(rng, shape, C, ignore=None, frac=0.0):
    t = rng.integers(0, max(C, 1), size=shape)
    if ignore is not None and frac > 0:
        t[rng.uniform(size=shape) < frac] = ignore
    return ember.from_numpy(np.asarray(t, dtype=np.int64))


REDUCTIONS = ["none", "sum", "mean"]

# (input shape, target shape)
NLL_GEOMS = [((5, 7), (5,)), ((7,), ()), ((1, 1), (1,)), ((0, 4), (0,)), ((2, 3, 4), (2, 4)),
             ((2, 5, 3, 4), (2, 3, 4)), ((3000, 10), (3000,)), ((6, 1500), (6,)),
             ((4, 3, 0), (4, 0))]


def _loss_and_grad(fn, x0, *args, **kw):
    x = x0.detach().clone().requires_grad_(True)
    out = fn(x, *args, **kw)
    out.backward(ember.ones_like(out))
    return out, x.grad


@pytest.mark.parametrize("dtype_name", FLOATS)
@pytest.mark.parametrize("fname", ["nll_loss", "cross_entropy"])
def test_nll_cross_entropy(fname, dtype_name):
    fn = getattr(F, fname)
    rng = seeded("nll", fname, dtype_name)
    tol = {"float16": (1e-2, 1e-2), "bfloat16": (4e-2, 4e-2)}.get(dtype_name)
    for xs, ts in NLL_GEOMS:
        C = xs[1] if len(xs) > 1 else xs[0]
        x = make(xs, dtype_name, rng, lo=-4, hi=1)
        w = make((C,), dtype_name, rng, lo=0.1, hi=2.0)
        for ignore, frac in [(-100, 0.0), (-100, 0.3), (1, 0.3)]:
            t = _targets(rng, ts, C, ignore, frac)
            for red in REDUCTIONS:
                for weight in (None, w):
                    what = f"{fname} {dtype_name} {xs} ignore={ignore} {red} w={weight is not None}"
                    check(_loss_and_grad, fn, x, t, weight=weight, ignore_index=ignore,
                          reduction=red, tol=tol, what=what)


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_cross_entropy_special_rows(dtype_name):
    rng = seeded("ce_special", dtype_name)
    x = make((6, 5), dtype_name, rng)
    x[1] = float("-inf")
    x[2, 3] = float("inf")
    x[3, 0] = float("nan")
    x[4] = 1e4  # large logits: the max shift
    t = ember.tensor([0, 1, 3, 2, 4, 0])
    for red in REDUCTIONS:
        check(lambda a, b: F.cross_entropy(a, b, reduction=red), x, t, what=f"special rows {red}")
    x = make((6, 5), dtype_name, rng, lo=-50, hi=50)
    check(_loss_and_grad, F.cross_entropy, x, t, reduction="sum", what="wide logits")
    # all rows ignored: 'mean' divides 0 by 0 on both
    ti = ember.full((6,), -100, dtype=ember.int64)
    check(_loss_and_grad, F.cross_entropy, x, ti, what="all ignored")
    check(_loss_and_grad, F.nll_loss, x, ti, what="all ignored nll")


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_cross_entropy_noncontig_and_probs(dtype_name):
    rng = seeded("ce_misc", dtype_name)
    x = make((9, 4), dtype_name, rng).t()  # (4, 9), transposed
    t = _targets(rng, (4,), 9)
    check(_loss_and_grad, F.cross_entropy, x, t, what="transposed input")
    check(_loss_and_grad, F.nll_loss, x, t, what="transposed input nll")
    xk = noncontig((2, 4, 3, 5), dtype_name, rng)
    tk = _targets(rng, (2, 3, 5), 4)
    check(_loss_and_grad, F.cross_entropy, xk, tk, reduction="sum", what="strided K-d")
    # class-probability targets, with weight and label smoothing
    x = make((5, 6), dtype_name, rng)
    p = F.softmax(make((5, 6), dtype_name, rng), dim=1)
    w = make((6,), dtype_name, rng, lo=0.5, hi=1.5)
    for red in REDUCTIONS:
        check(_loss_and_grad, F.cross_entropy, x, p, reduction=red, what=f"probs {red}")
        check(_loss_and_grad, F.cross_entropy, x, p, weight=w, label_smoothing=0.2, reduction=red,
              what=f"probs smoothing {red}")
    # label smoothing over class indices
    x = make((2, 6, 3), dtype_name, rng)
    t = _targets(rng, (2, 3), 6, -100, 0.3)
    for red in REDUCTIONS:
        for weight in (None, w):
            check(_loss_and_grad, F.cross_entropy, x, t, weight=weight, label_smoothing=0.1,
                  reduction=red, what=f"index smoothing {red} w={weight is not None}")


def test_cross_entropy_grid_stride():
    """Past one launch's grid in the backward (65536 blocks of 256 elements), many rows."""
    rng = seeded("ce_big")
    x = make((16900, 1000), "float32", rng)
    t = _targets(rng, (16900,), 1000, -100, 0.1)
    w = make((1000,), "float32", rng, lo=0.5, hi=1.5)
    check(_loss_and_grad, F.cross_entropy, x, t, weight=w, what="big cross_entropy")


def test_cross_entropy_double_backward():
    rng = seeded("ce2")
    x0 = make((4, 5), "float64", rng)
    t = _targets(rng, (4,), 5)

    def gg(x0, t):
        x = x0.detach().clone().requires_grad_(True)
        (d,) = ember.autograd.grad(F.cross_entropy(x, t), (x,), create_graph=True)
        (d2,) = ember.autograd.grad((d * d).sum(), (x,))
        return d, d2

    check(gg, x0, t, what="cross_entropy double backward")


@pytest.mark.parametrize("fname", ["nll_loss", "cross_entropy"])
def test_nll_bad_targets(fname):
    fn = getattr(F, fname)
    rng = seeded("nll_bad", fname)
    for C, xs in [(5, (6, 5)), (1500, (3, 1500)), (4, (2, 4, 3))]:
        x = make(xs, "float32", rng)
        tshape = (xs[0],) + xs[2:]
        for bad in (C, -1, 10**12, -(10**12)):
            t = _targets(rng, tshape, C)
            flat = t.reshape(-1)
            flat[len(flat) // 2] = bad
            flat[len(flat) - 1] = C + 7  # a later bad one: the first is reported
            check(lambda a, b: fn(a, b), x, t, what=f"{fname} target {bad}")
            with pytest.raises(IndexError, match=f"Target {bad} is out of bounds"):
                fn(to_dev(x), to_dev(t))
    # other argument errors come from the front-end on both
    x = make((4, 5), "float32", rng)
    check(lambda a, b: fn(a, b), x, ember.tensor([0, 1, 2, 3], dtype=ember.int32), what="int32")
    check(lambda a, b: fn(a, b), x, _targets(rng, (3,), 5), what="batch mismatch")
    check(lambda a, b: fn(a, b, weight=ember.ones(4)), x, _targets(rng, (4,), 5), what="bad weight")
    check(lambda a, b: fn(a, b), ember.ones((4, 5), dtype=ember.int64), _targets(rng, (4,), 5),
          what="integer input")


# ---- ctc_loss --------------------------------------------------------------------------

def _ctc_inputs(rng, T, N, C, tl, dtype_name, repeats=False):
    lp = F.log_softmax(make((T, N, C), "float64", rng, lo=-3, hi=3), dim=2)
    lp = lp.to(getattr(ember, dtype_name))
    L = max(tl) if tl else 0
    if repeats:
        tg = rng.integers(1, min(C, 3), size=(N, max(L, 1)))  # many repeated labels
    else:
        tg = rng.integers(1, C, size=(N, max(L, 1)))
    return lp, ember.from_numpy(tg.astype(np.int64))


def _ctc(lp0, targets, il, tl, **kw):
    lp = lp0.detach().clone().requires_grad_(True)
    out = F.ctc_loss(lp, targets, il, tl, **kw)
    out.backward(ember.ones_like(out))
    return out, lp.grad


@pytest.mark.parametrize("dtype_name", FLOATS)
def test_ctc_loss(dtype_name):
    rng = seeded("ctc", dtype_name)
    tol = {"float16": (1e-2, 1e-2), "bfloat16": (4e-2, 4e-2)}.get(dtype_name)
    cases = [
        (12, 3, 5, [12, 10, 7], [4, 3, 0], False),
        (12, 3, 5, [12, 10, 7], [4, 3, 2], True),  # repeated labels: the s - 2 skip and chains
        (6, 4, 4, [6, 0, 3, 6], [2, 0, 3, 0], True),  # empty input; a target longer than possible
        (1, 2, 3, [1, 1], [0, 1], False),
        (40, 5, 20, [40, 33, 40, 20, 1], [15, 10, 30, 0, 1], False),
        (30, 2, 300, [30, 25], [12, 7], False),  # many classes, a wide row
    ]
    for T, N, C, il, tl, rep in cases:
        lp, tg = _ctc_inputs(rng, T, N, C, tl, dtype_name, rep)
        for red in REDUCTIONS:
            for zi in (False, True):
                what = f"ctc {dtype_name} T={T} N={N} C={C} {red} zero_inf={zi}"
                check(_ctc, lp, tg, il, tl, reduction=red, zero_infinity=zi, tol=tol, what=what)
        # the concatenated (1-D) targets; lengths as tensors
        flat = ember.cat([tg[n, :tl[n]] for n in range(N)]) if sum(tl) else ember.zeros(
            (0,), dtype=ember.int64)
        check(_ctc, lp, flat, ember.tensor(il), ember.tensor(tl), reduction="sum", tol=tol,
              what=f"ctc {dtype_name} concatenated")


def test_ctc_loss_misc():
    rng = seeded("ctc_misc")
    # unbatched (T, C) and a non-contiguous (N, T, C).transpose view, blank != 0
    lp, tg = _ctc_inputs(rng, 10, 1, 6, [4], "float32")
    check(_ctc, lp[:, 0], tg[0], [10], [4], reduction="none", what="unbatched")
    lp = F.log_softmax(make((3, 15, 7), "float64", rng), dim=2).transpose(0, 1)
    tg = ember.from_numpy(rng.integers(0, 6, size=(3, 5)).astype(np.int64))
    check(_ctc, lp, tg, [15, 12, 9], [5, 4, 3], blank=6, reduction="none", what="blank=C-1")
    # a long target: the recursion rows outgrow shared memory (the global workspace path)
    L = 1600
    lp = F.log_softmax(make((2 * L + 50, 2, 40), "float64", rng), dim=2)
    tg = ember.from_numpy(rng.integers(1, 40, size=(2, L)).astype(np.int64))
    out, g = check(_ctc, lp, tg, [2 * L + 50, 2 * L], [L, L - 300], reduction="none",
                   what="long targets")
    assert np.isfinite(out.detach().cpu().numpy()).all()
    # many samples: a grid-stride over the batch is not needed, but many blocks run
    lp, tg = _ctc_inputs(rng, 20, 300, 8, [5] * 300, "float32")
    check(_ctc, lp, tg, [20] * 300, [5] * 300, what="many samples")


def test_ctc_loss_errors():
    rng = seeded("ctc_err")
    lp, tg = _ctc_inputs(rng, 8, 2, 5, [3, 3], "float32")
    check(lambda a, b: F.ctc_loss(a, b, [8, 8], [3, 3]), lp, tg * 0, what="label == blank")
    check(lambda a, b: F.ctc_loss(a, b, [8, 8], [3, 3]), lp, tg + 10, what="label >= C")
    check(lambda a, b: F.ctc_loss(a, b, [9, 8], [3, 3]), lp, tg, what="input length > T")
    check(lambda a, b: F.ctc_loss(a, b, [8, 8], [3, 3], blank=5), lp, tg, what="blank >= C")
    check(lambda a, b: F.ctc_loss(a, b, [8, 8], [3, 3]), lp.to(ember.int64), tg, what="int lp")


def test_assert_same_sanity():
    """The comparison itself: a device result equals its own copy."""
    x = make((3, 4), "float32", seeded("sanity"))
    assert_same(x, to_dev(x))
