"""The CUDA kernels of backends/cuda/optim.cu, factory.cu and distance.cu against the CPU's:
every optimizer of ember.optim (the fused multi-tensor steps) over several steps on params of
odd sizes and every floating dtype, arange / linspace / logspace, tril / triu (out-of-place and
in place, batched, non-square, non-contiguous), trace, multinomial (bitwise where the cumulative
sums are exact, statistically otherwise; errors on bad rows) and cdist (every p, batched,
compute_mode, forward and backward). Each test runs the public op on the CPU and on the device from
the same inputs and compares; where the CPU raises, the device must raise the same exception type.

How these tests run on each device: device_compare.py.
"""
import math

import numpy as np
import pytest
from device_compare import (
    FLOATS,
    INTS,
    as_numpy,
    assert_same,
    check,
    cmp_dev,
    dt,
    make,
    noncontig,
    seeded,
    to_dev,
)

import ember
import ember.nn.functional as F

pytestmark = pytest.mark.usefixtures("compare_device")


def both(fn, tol=None, what=""):
    """fn(device) on the CPU and on the device, compared (or both raising the same exception type)."""
    try:
        expected = fn("cpu")
    except Exception as exc:  # noqa: BLE001 - the device must raise the same type
        with pytest.raises(type(exc)) as info:
            fn(cmp_dev())
        assert "not implemented for 'CUDA'" not in str(info.value), f"{what}: {info.value}"
        return None
    actual = fn(cmp_dev())
    assert_same(expected, actual, tol, what)
    return actual


EXACT = (0.0, 0.0)

# ---- optimizers -------------------------------------------------------------------------------

SIZES = [(1,), (7,), (10, 100), (70000,)]

OPTIMIZERS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, maximize=True, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.05, amsgrad=True, maximize=True)),
    ("Adamax", dict(lr=0.01)),
    ("Adamax", dict(lr=0.01, weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.5)),
    ("Adagrad", dict(lr=0.1, maximize=True)),
    ("Adadelta", dict(lr=1.0)),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1, maximize=True)),
]

# Parameters and state drift apart by rounding over the steps (FMA contraction on the GPU):
# a little more room than one op's tolerance.
OPT_TOL = {"float16": (4e-3, 2e-3), "bfloat16": (3e-2, 2e-2), "float32": (1e-4, 1e-5),
           "float64": (1e-9, 1e-11)}


def _same_value(e, a, tol, what):
    if isinstance(e, ember.Tensor):
        if e.device.type == "cpu" and a.device.type == "cpu" and cmp_dev() != "cpu":
            # state kept on the CPU on both sides (step counters)
            np.testing.assert_array_equal(as_numpy(a), as_numpy(e), err_msg=what)
        else:
            assert_same(e, a, tol, what)
    elif isinstance(e, dict):
        assert set(e) == set(a), what
        for k in e:
            _same_value(e[k], a[k], tol, f"{what}.{k}")
    elif isinstance(e, (list, tuple)):
        assert len(e) == len(a), what
        for i, (x, y) in enumerate(zip(e, a)):
            _same_value(x, y, tol, f"{what}[{i}]")
    else:
        assert e == a or (isinstance(e, float) and math.isnan(e) and math.isnan(a)), what


def _run_optimizer(name, kwargs, shapes, dtypes, steps=3, key=(), make_params=None):
    """Runs `steps` steps of optimizer `name` on CPU params and on their copies on the device with the
    same gradients; compares the params and the state_dict."""
    rng = seeded(name, repr(kwargs), repr(shapes), repr(dtypes), *key)
    if make_params is None:
        init = [make(s, d, rng, lo=-1.0, hi=1.0) for s, d in zip(shapes, dtypes)]
        cpu = [t.clone().requires_grad_() for t in init]
        dev = [t.to(cmp_dev()).requires_grad_() for t in init]
    else:
        cpu, dev = make_params(rng)
    grads = [[make(tuple(p.shape), str(p.dtype).replace("ember.", ""), rng, lo=-1.0, hi=1.0)
              for p in cpu] for _ in range(steps)]
    cls = getattr(ember.optim, name)
    oc, od = cls(cpu, **kwargs), cls(dev, **kwargs)
    for g in grads:
        for p, q, x in zip(cpu, dev, g):
            p.grad = x.clone()
            q.grad = x.to(cmp_dev())
        oc.step()
        od.step()
    tol = OPT_TOL[str(cpu[0].dtype).replace("ember.", "")]
    for i, (p, q) in enumerate(zip(cpu, dev)):
        assert_same(p.detach(), q.detach(), tol, f"{name} {kwargs} param {i}")
    _same_value(oc.state_dict()["state"], od.state_dict()["state"], tol, f"{name} {kwargs} state")


@pytest.mark.parametrize("dtype_name", FLOATS)
@pytest.mark.parametrize("name,kwargs", OPTIMIZERS, ids=[f"{n}-{i}" for i, (n, _) in
                                                          enumerate(OPTIMIZERS)])
def test_optimizer_steps_match_cpu(name, kwargs, dtype_name):
    _run_optimizer(name, kwargs, SIZES, [dtype_name] * len(SIZES), steps=3)


@pytest.mark.parametrize("flag", [dict(foreach=True), dict(foreach=False), dict(fused=True)])
@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad"])
def test_optimizer_foreach_fused_flags(name, flag):
    kwargs = dict(lr=0.05, **flag)
    if name == "SGD":
        kwargs["momentum"] = 0.5
    _run_optimizer(name, kwargs, SIZES, ["float32"] * len(SIZES), steps=2)


@pytest.mark.parametrize("name,kwargs", [OPTIMIZERS[2], OPTIMIZERS[5], OPTIMIZERS[13],
                                         OPTIMIZERS[20], OPTIMIZERS[22], OPTIMIZERS[25]])
def test_optimizer_mixed_dtypes_and_many_tensors(name, kwargs):
    # one group of 30 params in three dtypes: more tensors than one launch's table holds
    shapes = [(1 + (7 * i) % 23, 3) for i in range(30)]
    dtypes = [("float32", "float64", "float16")[i % 3] for i in range(30)]
    rng = seeded("mixed", name)

    def make_params(_):
        init = [make(s, d, rng, lo=-1.0, hi=1.0) for s, d in zip(shapes, dtypes)]
        return ([t.clone().requires_grad_() for t in init],
                [t.to(cmp_dev()).requires_grad_() for t in init])

    cls = getattr(ember.optim, name)
    cpu, dev = make_params(rng)
    oc, od = cls(cpu, **kwargs), cls(dev, **kwargs)
    for _ in range(3):
        for p, q in zip(cpu, dev):
            g = make(tuple(p.shape), str(p.dtype).replace("ember.", ""), rng, lo=-1.0, hi=1.0)
            p.grad, q.grad = g, g.to(cmp_dev())
        oc.step()
        od.step()
    for i, (p, q) in enumerate(zip(cpu, dev)):
        tol = OPT_TOL[str(p.dtype).replace("ember.", "")]
        assert_same(p.detach(), q.detach(), tol, f"{name} param {i}")


def test_optimizer_noncontiguous_and_empty_params():
    rng = seeded("noncontig-optim")

    def make_params(_):
        base = make((6, 9), "float32", rng, lo=-1.0, hi=1.0)
        e = ember.zeros((0, 4))
        cpu = [base.clone().t().requires_grad_(), e.clone().requires_grad_(),
               make((5,), "float32", rng).requires_grad_()]
        dev = [p.detach().to(cmp_dev()).requires_grad_() for p in cpu]
        return cpu, dev

    for name, kwargs in [("Adam", dict(lr=0.01, amsgrad=True)), ("SGD", dict(lr=0.1, momentum=0.9)),
                         ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5))]:
        _run_optimizer(name, kwargs, None, None, steps=3, key=("nc",), make_params=make_params)


def test_optimizer_large_param_spans_launches():
    # 320 chunks of 65536 elements fill one launch's table: this param continues in a second
    n = 320 * 65536 + 5
    rng = seeded("large-optim")
    base = ember.from_numpy(rng.uniform(-1, 1, size=n).astype(np.float32)).to(ember.float16)
    g = ember.from_numpy(rng.uniform(-1, 1, size=n).astype(np.float32)).to(ember.float16)
    cpu, dev = base.clone().requires_grad_(), base.to(cmp_dev()).requires_grad_()
    oc = ember.optim.SGD([cpu], lr=0.1, momentum=0.9)
    od = ember.optim.SGD([dev], lr=0.1, momentum=0.9)
    for _ in range(2):
        cpu.grad, dev.grad = g.clone(), g.to(cmp_dev())
        oc.step()
        od.step()
    assert_same(cpu.detach(), dev.detach(), OPT_TOL["float16"], "large SGD")


def test_optimizer_step_errors_match_cpu():
    rng = seeded("optim-errors")
    p = make((4,), "float32", rng)
    g = make((4,), "float32", rng)
    bad = make((5,), "float32", rng)
    steps = [ember.zeros(())]
    # a state of the wrong shape raises in the front-end on both devices
    def step(p, g, s):
        ember._C._adagrad_step_([p], [g], [s], steps, lr=0.1, lr_decay=0.0, weight_decay=0.0,
                                eps=1e-10, maximize=False)

    for d in ("cpu", cmp_dev()):
        with pytest.raises(RuntimeError, match="shape"):
            step(*to_dev((p, g, bad)) if d == cmp_dev() else (p, g, bad))


# ---- arange / linspace / logspace --------------------------------------------------------------

ARANGE_CASES = [(0, 10, 1), (3, -7, -2), (-5, 5, 3), (0, 1, 0.1), (1.5, -2.5, -0.25),
                (0, 0, 1), (2, 3, 5), (0, 100000, 1), (-1e3, 1e3, 0.37)]


@pytest.mark.parametrize("dtype_name", INTS + FLOATS + [None])
@pytest.mark.parametrize("start,end,step", ARANGE_CASES)
def test_arange_matches_cpu(start, end, step, dtype_name):
    kw = {} if dtype_name is None else {"dtype": dt(dtype_name)}
    if dtype_name in ("uint8", "int8", "int16") and max(abs(start), abs(end)) > 100:
        return
    if dtype_name == "uint8" and min(start, end) < 0:
        return
    both(lambda d: ember.arange(start, end, step, device=d, **kw), tol=EXACT,
         what=f"arange({start}, {end}, {step}, {dtype_name})")


def test_arange_errors_match_cpu():
    both(lambda d: ember.arange(0, 10, 0, device=d))
    both(lambda d: ember.arange(0, 10, -1, device=d))


LINSPACE_CASES = [(0, 1, 5), (-3, 7, 11), (10, -10, 4), (2.5, 2.5, 3), (0, 1, 1), (0, 1, 0),
                  (-1.25, 3.75, 100001), (1, 100, 2)]


@pytest.mark.parametrize("dtype_name", INTS + FLOATS)
@pytest.mark.parametrize("start,end,steps", LINSPACE_CASES)
def test_linspace_matches_cpu(start, end, steps, dtype_name):
    if dtype_name == "uint8" and min(start, end) < 0:
        return
    both(lambda d: ember.linspace(start, end, steps, dtype=dt(dtype_name), device=d), tol=EXACT,
         what=f"linspace({start}, {end}, {steps}, {dtype_name})")


@pytest.mark.parametrize("dtype_name", ["int64", "int32"] + FLOATS)
@pytest.mark.parametrize("start,end,steps,base", [(0, 3, 4, 10.0), (-2, 2, 9, 2.0), (1, 1, 1, 3.0),
                                                  (0, 1, 0, 10.0), (-5, 5, 10001, 1.5)])
def test_logspace_matches_cpu(start, end, steps, base, dtype_name):
    # the GPU's pow may differ from glibc's in the last bit
    tol = (1e-14, 0.0) if dtype_name == "float64" else None
    both(lambda d: ember.logspace(start, end, steps, base=base, dtype=dt(dtype_name), device=d),
         tol=tol, what=f"logspace({start}, {end}, {steps}, {base}, {dtype_name})")


def test_linspace_errors_match_cpu():
    both(lambda d: ember.linspace(0, 1, -1, device=d))


# ---- tril / triu / trace ---------------------------------------------------------------------

TRI_SHAPES = [(1, 1), (4, 4), (3, 5), (6, 2), (2, 3, 4), (2, 2, 5, 3), (0, 3), (3, 0, 2),
              (300, 257)]


@pytest.mark.parametrize("dtype_name", ["bool", "uint8", "int16", "int32", "int64"] + FLOATS)
def test_tril_triu_match_cpu(dtype_name):
    rng = seeded("tril", dtype_name)
    for shape in TRI_SHAPES:
        for diag in (0, 1, -1, 2, -3, 100, -100):
            x = make(shape, dtype_name, rng)
            check(lambda a: ember.tril(a, diag), x, tol=EXACT, what=f"tril {shape} {diag}")
            check(lambda a: ember.triu(a, diag), x, tol=EXACT, what=f"triu {shape} {diag}")
            check(lambda a: a.tril(diag), noncontig(shape, dtype_name, rng), tol=EXACT,
                  what=f"tril noncontig {shape} {diag}")
            check(lambda a: a.transpose(-1, -2).triu(diag), x, tol=EXACT,
                  what=f"triu transposed {shape} {diag}")


@pytest.mark.parametrize("dtype_name", ["int32", "float32", "float16"])
def test_tril_triu_inplace_and_out_match_cpu(dtype_name):
    rng = seeded("tril_", dtype_name)
    for shape in [(4, 6), (2, 5, 5), (3, 1), (257, 300)]:
        for diag in (0, 2, -1):
            x = make(shape, dtype_name, rng)
            check(lambda a: a.clone().tril_(diag), x, tol=EXACT, what="tril_")
            check(lambda a: a.clone().triu_(diag), x, tol=EXACT, what="triu_")
            # in place on a non-contiguous view
            check(lambda a: a.clone().transpose(-1, -2).tril_(diag), x, tol=EXACT, what="tril_ t")

            def out_fn(a):
                out = ember.empty(tuple(a.shape), dtype=a.dtype, device=a.device)
                ember.triu(a, diag, out=out)
                return out

            check(out_fn, x, tol=EXACT, what="triu out=")


def test_tril_errors_match_cpu():
    check(lambda a: ember.tril(a), make((5,), "float32", seeded("tril-err")))


def test_tril_backward_matches_cpu():
    rng = seeded("tril-bwd")
    x = make((3, 4, 5), "float32", rng)
    g = make((3, 4, 5), "float32", rng)

    def f(a, g):
        a = a.clone().requires_grad_()
        (ember.tril(a, 1) * g).sum().backward()
        b = a.detach().clone().requires_grad_()
        (ember.triu(b, -1) * g).sum().backward()
        return [a.grad, b.grad]

    check(f, x, g, tol=EXACT)


@pytest.mark.parametrize("dtype_name", ["bool", "uint8", "int8", "int32", "int64"] + FLOATS)
def test_trace_matches_cpu(dtype_name):
    rng = seeded("trace", dtype_name)
    for shape in [(1, 1), (4, 4), (3, 7), (9, 2), (0, 3), (2000, 1500)]:
        x = make(shape, dtype_name, rng)
        check(ember.trace, x, what=f"trace {shape}")
        check(ember.trace, noncontig(shape, dtype_name, rng), what=f"trace noncontig {shape}")
        check(lambda a: ember.trace(a.t()), x, what=f"trace t {shape}")


def test_trace_backward_and_errors_match_cpu():
    rng = seeded("trace-bwd")

    def f(a):
        a = a.clone().requires_grad_()
        ember.trace(a).backward()
        return a.grad

    check(f, make((5, 3), "float64", rng))
    check(ember.trace, make((2, 3, 4), "float32", rng))


# ---- multinomial ------------------------------------------------------------------------------

def _multinomial(probs, n, replacement, seed):
    g = ember.Generator(device=probs.device)
    g.manual_seed(seed)
    return ember.multinomial(probs, n, replacement, generator=g)


@pytest.mark.parametrize("dtype_name", FLOATS)
def test_multinomial_with_replacement_exact_sums_match_cpu(dtype_name):
    # integer weights: every cumulative sum is exact in any order, so the draws are the CPU's
    rng = seeded("multinomial-int", dtype_name)
    for shape in [(1,), (7,), (3, 5), (4, 300), (2, 4097), (70, 11)]:
        w = rng.integers(0, 6, size=shape).astype(np.float64)
        w[..., 0] += 1  # no zero row
        probs = ember.from_numpy(w).to(dt(dtype_name))
        for n in (1, 5, 1000):
            check(lambda p: _multinomial(p, n, True, 17), probs, what=f"multinomial {shape} {n}")


def test_multinomial_with_replacement_never_draws_zero_probability():
    rng = seeded("multinomial-zero")
    w = rng.uniform(0, 1, size=(6, 1000))
    w[:, ::3] = 0.0
    probs = to_dev(ember.from_numpy(w))
    out = as_numpy(_multinomial(probs, 4000, True, 5))
    assert out.shape == (6, 4000)
    assert (w[np.arange(6)[:, None], out] > 0).all()


def _chi2_ok(counts, p, n):
    expected = p * n
    mask = expected > 0
    assert counts[~mask].sum() == 0
    chi2 = (((counts[mask] - expected[mask]) ** 2) / expected[mask]).sum()
    dof = mask.sum() - 1
    # mean dof, sd sqrt(2 dof): 6 sd is far beyond chance
    assert chi2 < dof + 6 * math.sqrt(2 * dof) + 10, (chi2, dof)


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_multinomial_with_replacement_distribution(dtype_name):
    rng = seeded("multinomial-dist", dtype_name)
    w = rng.uniform(0, 1, size=(3, 40))
    w[1, 5:9] = 0.0
    probs = ember.from_numpy(w).to(dt(dtype_name))
    n = 200000
    out = as_numpy(_multinomial(to_dev(probs), n, True, 99))
    wd = as_numpy(probs)
    for r in range(3):
        _chi2_ok(np.bincount(out[r], minlength=40), wd[r] / wd[r].sum(), n)
    # and nearly every draw is the CPU's (equal except at rounding of category boundaries)
    ref = as_numpy(_multinomial(probs, n, True, 99))
    assert (ref == out).mean() > 0.999


@pytest.mark.parametrize("dtype_name", ["float16", "float32", "float64"])
def test_multinomial_without_replacement(dtype_name):
    rng = seeded("multinomial-norep", dtype_name)
    for shape, n in [((5,), 5), ((5,), 2), ((4, 300), 17), ((3, 3000), 3000), ((2, 1), 1)]:
        w = rng.uniform(0, 1, size=shape)
        w.reshape(-1, shape[-1])[:, -1] += 0.5
        if shape[-1] > 4:
            w[..., 1:4] = 0.0
        probs = ember.from_numpy(w).to(dt(dtype_name))
        ref = as_numpy(_multinomial(probs, n, False, 3))
        out = as_numpy(_multinomial(to_dev(probs), n, False, 3))
        assert out.shape == ref.shape
        wd = as_numpy(probs).reshape(-1, shape[-1])
        for r, row in enumerate(out.reshape(-1, n)):
            assert len(set(row.tolist())) == n  # distinct categories
            positive = int((wd[r] > 0).sum())
            # positive-probability categories first, then the zeros in index order
            assert (wd[r][row[:min(n, positive)]] > 0).all()
            tail = row[positive:]
            assert (np.diff(tail) > 0).all() if len(tail) > 1 else True
        # the same draws as the CPU's, except where the GPU's log1p breaks a near-tie
        assert (ref == out).mean() > 0.99


def test_multinomial_without_replacement_distribution():
    # the first pick of a sample without replacement is distributed as p
    w = np.array([0.1, 0.0, 0.4, 0.2, 0.3])
    rows = 20000
    probs = to_dev(ember.from_numpy(np.tile(w, (rows, 1))))
    out = as_numpy(_multinomial(probs, 3, False, 11))
    _chi2_ok(np.bincount(out[:, 0], minlength=5), w, rows)
    assert (out != 1).all()


def test_multinomial_errors_match_cpu():
    bad = [np.array([0.2, -0.1, 0.5]), np.array([0.0, 0.0]), np.array([0.2, np.nan]),
           np.array([np.inf, 1.0]), np.array([[1.0, 2.0], [0.0, 0.0]]),
           np.array([[1.0, 2.0], [1.0, -1.0], [0.0, 0.0]]), np.zeros((2, 0))]
    for w in bad:
        probs = ember.from_numpy(w)
        for replacement in (True, False):
            n = 1 if not replacement else 3
            check(lambda p: _multinomial(p, n, replacement, 0), probs, what=f"{w} {replacement}")
    probs = ember.from_numpy(np.array([1.0, 2.0]))
    check(lambda p: _multinomial(p, 3, False, 0), probs)  # n > k without replacement
    check(lambda p: _multinomial(p, 0, True, 0), probs)
    check(lambda p: _multinomial(p, 1, True, 0), ember.from_numpy(np.ones((2, 2, 2))))


def test_multinomial_error_reports_first_bad_row():
    # row 1 has a negative element, row 2 a zero sum: the first bad row's message wins
    probs = ember.from_numpy(np.array([[1.0, 2.0], [1.0, -1.0], [0.0, 0.0]]))
    msgs = []
    for d in ("cpu", cmp_dev()):
        with pytest.raises(RuntimeError) as info:
            _multinomial(probs.to(d), 2, True, 0)
        msgs.append(str(info.value))
    assert "element < 0" in msgs[0] and "element < 0" in msgs[1]


# ---- cdist ------------------------------------------------------------------------------------

CDIST_P = [0.0, 1.0, 2.0, math.inf, 0.5, 1.5, 3.0]
CDIST_SHAPES = [((4, 3), (5, 3)), ((1, 1), (1, 1)), ((2, 7, 5), (2, 9, 5)), ((3, 1, 6, 4), (2, 8, 4)),
                ((40, 33), (37, 33)), ((70, 3), (2, 3)), ((5, 0), (4, 0)), ((0, 3), (4, 3))]
CDIST_TOL = {"float16": (5e-3, 5e-3), "bfloat16": (3e-2, 3e-2), "float32": (1e-4, 1e-5),
             "float64": (1e-10, 1e-12)}


@pytest.mark.parametrize("dtype_name", FLOATS)
@pytest.mark.parametrize("p", CDIST_P)
def test_cdist_direct_matches_cpu(p, dtype_name):
    rng = seeded("cdist", p, dtype_name)
    tol = CDIST_TOL[dtype_name]
    for s1, s2 in CDIST_SHAPES:
        a, b = make(s1, dtype_name, rng), make(s2, dtype_name, rng)
        check(lambda x, y: F.cdist(x, y, p=p, compute_mode="donot_use_mm_for_euclid_dist"), a, b,
              tol=tol, what=f"cdist p={p} {s1} {s2}")
    # non-contiguous inputs and repeated rows (zero distances)
    a = noncontig((6, 5), dtype_name, rng)
    b = ember.cat([a[:3], make((4, 5), dtype_name, rng)])
    check(lambda x, y: F.cdist(x, y, p=p, compute_mode="donot_use_mm_for_euclid_dist"), a, b,
          tol=tol, what=f"cdist p={p} noncontig")


def test_cdist_special_values_match_cpu():
    rng = seeded("cdist-special")
    a = make((9, 8), "float64", rng, special=True)
    b = make((10, 8), "float64", rng)
    for p in CDIST_P:
        check(lambda x, y: F.cdist(x, y, p=p, compute_mode="donot_use_mm_for_euclid_dist"), a, b,
              what=f"cdist special p={p}")


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_cdist_large_tiles_match_cpu(dtype_name):
    rng = seeded("cdist-large", dtype_name)
    a, b = make((3, 130, 70), dtype_name, rng), make((3, 97, 70), dtype_name, rng)
    for p in (1.0, 2.0, 2.5):
        check(lambda x, y: F.cdist(x, y, p=p, compute_mode="donot_use_mm_for_euclid_dist"), a, b,
              tol=CDIST_TOL[dtype_name], what=f"cdist large p={p}")


@pytest.mark.parametrize("dtype_name", FLOATS)
@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist", "use_mm_for_euclid_dist_if_necessary"])
def test_cdist_matmul_path_matches_cpu(mode, dtype_name):
    rng = seeded("cdist-mm", mode, dtype_name)
    # the matrix product's rounding differs between the BLAS and cuBLAS, and the cancellation
    # in |a|^2 + |b|^2 - 2 a.b magnifies it: compare absolutely, on distances of order 1-10
    tol = {"float16": (1e-2, 2e-2), "bfloat16": (4e-2, 8e-2), "float32": (1e-4, 2e-3),
           "float64": (1e-9, 1e-7)}[dtype_name]
    for s1, s2 in [((30, 4), (27, 4)), ((2, 40, 9), (2, 31, 9)), ((3, 1, 26, 5), (2, 3, 5)),
                   ((5, 3), (4, 3))]:
        a, b = make(s1, dtype_name, rng), make(s2, dtype_name, rng)
        check(lambda x, y: F.cdist(x, y, p=2.0, compute_mode=mode), a, b, tol=tol,
              what=f"cdist {mode} {s1} {s2}")


@pytest.mark.parametrize("p", CDIST_P)
@pytest.mark.parametrize("mode", ["donot_use_mm_for_euclid_dist", "use_mm_for_euclid_dist"])
def test_cdist_backward_matches_cpu(p, mode):
    rng = seeded("cdist-bwd", p, mode)
    a, b = make((2, 6, 4), "float64", rng), make((2, 5, 4), "float64", rng)
    g = make((2, 6, 5), "float64", rng)

    def f(x, y, g):
        x, y = x.clone().requires_grad_(), y.clone().requires_grad_()
        (F.cdist(x, y, p=p, compute_mode=mode) * g).sum().backward()
        return [x.grad, y.grad]

    check(f, a, b, g, tol=(1e-7, 1e-9), what=f"cdist backward p={p} {mode}")


def test_cdist_errors_match_cpu():
    rng = seeded("cdist-err")
    a, b = make((3, 4), "float32", rng), make((5, 3), "float32", rng)
    check(lambda x, y: F.cdist(x, y), a, b)
    check(lambda x, y: F.cdist(x, y, p=-1.0), a, make((5, 4), "float32", rng))
    check(lambda x, y: F.cdist(x, y, compute_mode="bad"), a, make((5, 4), "float32", rng))
    check(lambda x, y: F.cdist(x, y), a, make((5, 4), "float64", rng))
