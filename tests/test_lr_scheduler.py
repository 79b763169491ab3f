"""ember.optim.lr_scheduler: every scheduler against its closed form over many steps, the
momentum cycling of OneCycleLR/CyclicLR, ReduceLROnPlateau's bookkeeping, state_dict round
trips, warnings and errors, and the learning rates of PyTorch's schedulers."""
import math
import os
import subprocess
import warnings
from bisect import bisect_right

import numpy as np
import pytest
from torch_python import TORCH_PY

import ember
from ember import optim
from ember.optim import lr_scheduler as S


def _opt(lr=0.1, cls=optim.SGD, groups=1, **kw):
    params = [ember.zeros(2, requires_grad=True) for _ in range(groups)]
    if groups == 1:
        return cls(params, lr=lr, **kw)
    return cls([{"params": [p], "lr": lr * (i + 1)} for i, p in enumerate(params)], lr=lr, **kw)


def _lrs(opt, sched, n, metric=None):
    """lr of every group after construction and after each of n steps."""
    out = [[g["lr"] for g in opt.param_groups]]
    for _ in range(n):
        opt.step()
        sched.step() if metric is None else sched.step(metric)
        out.append([g["lr"] for g in opt.param_groups])
        assert sched.get_last_lr() == out[-1]
    return np.array(out)


def _check(opt, sched, n, closed):
    got = _lrs(opt, sched, n)
    base = [g["initial_lr"] for g in opt.param_groups]
    want = np.array([[closed(b, e) for b in base] for e in range(n + 1)])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_lambda_lr():
    opt = _opt(groups=2)
    fns = [lambda e: 0.95 ** e, lambda e: 1 / (1 + e)]
    sched = S.LambdaLR(opt, fns)
    got = _lrs(opt, sched, 30)
    want = [[0.1 * fns[0](e), 0.2 * fns[1](e)] for e in range(31)]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_multiplicative_lr():
    opt = _opt()
    sched = S.MultiplicativeLR(opt, lambda e: 0.9 + 0.001 * e)
    _check(opt, sched, 30, lambda b, e: b * math.prod(0.9 + 0.001 * k for k in range(1, e + 1)))


def test_step_lr():
    opt = _opt(groups=2)
    _check(opt, S.StepLR(opt, step_size=7, gamma=0.5), 40, lambda b, e: b * 0.5 ** (e // 7))


def test_multistep_lr():
    opt = _opt()
    ms = [3, 8, 8, 20]
    _check(opt, S.MultiStepLR(opt, milestones=ms, gamma=0.3), 30,
           lambda b, e: b * 0.3 ** bisect_right(sorted(ms), e))


def test_constant_lr():
    opt = _opt()
    _check(opt, S.ConstantLR(opt, factor=0.25, total_iters=6), 20,
           lambda b, e: b * (0.25 if e < 6 else 1.0))


def test_linear_lr():
    opt = _opt(groups=2)
    _check(opt, S.LinearLR(opt, start_factor=0.2, end_factor=0.9, total_iters=12), 25,
           lambda b, e: b * (0.2 + 0.7 * min(12, e) / 12))


def test_exponential_lr():
    opt = _opt()
    _check(opt, S.ExponentialLR(opt, gamma=0.93), 50, lambda b, e: b * 0.93 ** e)


def test_polynomial_lr():
    opt = _opt()
    _check(opt, S.PolynomialLR(opt, total_iters=10, power=2.0), 20,
           lambda b, e: b * (1 - min(10, e) / 10) ** 2)


def test_cosine_annealing_lr():
    """The recursive form follows the closed form, across several half periods."""
    opt = _opt(groups=2)
    T, eta = 10, 0.01
    _check(opt, S.CosineAnnealingLR(opt, T_max=T, eta_min=eta), 45,
           lambda b, e: eta + (b - eta) * (1 + math.cos(math.pi * e / T)) / 2)


def test_cosine_annealing_warm_restarts():
    opt = _opt()
    sched = S.CosineAnnealingWarmRestarts(opt, T_0=4, T_mult=2, eta_min=0.001)

    def closed(b, e):
        T_i, t = 4, e
        while t >= T_i:
            t -= T_i
            T_i *= 2
        return 0.001 + (b - 0.001) * (1 + math.cos(math.pi * t / T_i)) / 2

    _check(opt, sched, 40, closed)


def test_cosine_annealing_warm_restarts_fractional_epochs():
    opt = _opt()
    sched = S.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epoch in [0.5, 1.25, 2.9, 3.0, 4.5, 8.99, 9.0, 10.1, 30.5]:
            sched.step(epoch)
            n = int(math.log(epoch / 3 + 1, 2)) if epoch >= 3 else 0
            T_i = 3 * 2 ** n
            t = epoch - 3 * (2 ** n - 1)
            want = 0.1 * (1 + math.cos(math.pi * t / T_i)) / 2
            assert opt.param_groups[0]["lr"] == pytest.approx(want, rel=1e-12)
            assert sched.last_epoch == math.floor(epoch)
    sched = S.CosineAnnealingWarmRestarts(opt, T_0=3)
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        sched.step(-1)
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        S.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="Expected integer T_mult >= 1, but got 0"):
        S.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=0)


def _one_cycle_closed(step, total, max_lr, div, final_div, pct, anneal, three_phase):
    init = max_lr / div
    min_lr = init / final_div
    if anneal == "cos":
        def f(a, b, p):
            return b + (a - b) / 2 * (math.cos(math.pi * p) + 1)
    else:
        def f(a, b, p):
            return (b - a) * p + a
    e1 = pct * total - 1
    if three_phase:
        e2 = 2 * pct * total - 2
        phases = [(0, e1, init, max_lr), (e1, e2, max_lr, init), (e2, total - 1, init, min_lr)]
    else:
        phases = [(0, e1, init, max_lr), (e1, total - 1, max_lr, min_lr)]
    for i, (s0, s1, a, b) in enumerate(phases):
        if step <= s1 or i == len(phases) - 1:
            return f(a, b, (step - s0) / (s1 - s0))


@pytest.mark.parametrize("anneal", ["cos", "linear"])
@pytest.mark.parametrize("three_phase", [False, True])
def test_one_cycle_lr(anneal, three_phase):
    opt = _opt(momentum=0.9)
    total = 50
    sched = S.OneCycleLR(opt, max_lr=1.0, total_steps=total, anneal_strategy=anneal,
                         three_phase=three_phase, pct_start=0.3)
    got = _lrs(opt, sched, total - 1)
    want = [_one_cycle_closed(e, total, 1.0, 25.0, 1e4, 0.3, anneal, three_phase)
            for e in range(total)]
    np.testing.assert_allclose(got[:, 0], want, rtol=1e-12)
    with pytest.raises(ValueError, match="Tried to step 51 times. The specified number of total "
                                         "steps is 50"):
        opt.step()
        sched.step()
        sched.step()


def test_one_cycle_momentum_and_beta1():
    """Momentum (SGD) or beta1 (Adam) cycles inversely to the learning rate."""
    for cls, key in [(optim.SGD, "momentum"), (optim.Adam, "betas")]:
        kw = {"momentum": 0.9} if cls is optim.SGD else {}
        opt = _opt(cls=cls, **kw)
        sched = S.OneCycleLR(opt, max_lr=0.5, epochs=2, steps_per_epoch=10, base_momentum=0.8,
                             max_momentum=0.95)
        moms = []
        for _ in range(19):
            v = opt.param_groups[0][key]
            moms.append(v[0] if key == "betas" else v)
            opt.step()
            sched.step()
        # momentum anneals max -> base while lr warms up (6 steps), then base -> max
        want = [0.8 + (0.95 - 0.8) / 2 * (math.cos(math.pi * e / 5) + 1) for e in range(6)]
        np.testing.assert_allclose(moms[:6], want, rtol=1e-12)
        assert moms[0] == pytest.approx(0.95)
        assert min(moms) == pytest.approx(0.8, abs=2e-3)
        assert moms[-1] == pytest.approx(0.95, abs=5e-3)
        if key == "betas":
            assert opt.param_groups[0]["betas"][1] == 0.999


@pytest.mark.parametrize("mode", ["triangular", "triangular2", "exp_range"])
def test_cyclic_lr(mode):
    opt = _opt(momentum=0.9)
    sched = S.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=4, step_size_down=6,
                       mode=mode, gamma=0.97)
    lrs, moms = [], []
    for _ in range(40):
        lrs.append(opt.param_groups[0]["lr"])
        moms.append(opt.param_groups[0]["momentum"])
        opt.step()
        sched.step()
    for e in range(40):
        cycle = math.floor(1 + e / 10)
        x = 1 + e / 10 - cycle
        sf = x / 0.4 if x <= 0.4 else (x - 1) / (0.4 - 1)
        scale = {"triangular": 1.0, "triangular2": 1 / 2 ** (cycle - 1),
                 "exp_range": 0.97 ** e}[mode]
        assert lrs[e] == pytest.approx(0.01 + 0.09 * sf * scale, rel=1e-12)
        assert moms[e] == pytest.approx(0.9 - 0.1 * sf * scale, rel=1e-12)


def test_cyclic_lr_custom_scale_fn_and_errors():
    opt = _opt(cls=optim.Adam)
    sched = S.CyclicLR(opt, base_lr=0.1, max_lr=1.0, step_size_up=2,
                       scale_fn=lambda x: 0.5, scale_mode="iterations")
    for _ in range(3):
        opt.step()
        sched.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1 + 0.9 * 0.5 * 0.5)
    assert opt.param_groups[0]["betas"][0] == pytest.approx(0.9 - 0.1 * 0.5 * 0.5)
    with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
        S.CyclicLR(opt, 0.1, 1.0, mode="bogus")
    opt2 = _opt(cls=optim.Adagrad)
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1 with "
                                         "`cycle_momentum` option enabled"):
        S.CyclicLR(opt2, 0.1, 1.0)


def test_reduce_lr_on_plateau():
    opt = _opt(lr=1.0, groups=2)
    sched = S.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=2, threshold=0.1,
                                threshold_mode="rel", cooldown=1, min_lr=[0.2, 0.3])
    metrics = [10, 9.5, 9.2, 9.1, 9.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0]
    lrs = []
    for m in metrics:
        opt.step()
        sched.step(m)
        lrs.append([g["lr"] for g in opt.param_groups])
    # 10 is best; 9.5/9.2/9.1 are not 10% better -> reduce after 3 bad steps (patience 2);
    # cooldown 1 skips counting one step, then 3 more bad steps reduce again, down to min_lr.
    assert [r[0] for r in lrs] == [1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25,
                                   0.2, 0.2]
    assert [r[1] for r in lrs][-1] == 0.3
    assert sched.get_last_lr() == lrs[-1]
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        S.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode bogus is unknown!"):
        S.ReduceLROnPlateau(opt, mode="bogus")
    with pytest.raises(ValueError, match="threshold mode bogus is unknown!"):
        S.ReduceLROnPlateau(opt, threshold_mode="bogus")
    with pytest.raises(ValueError, match="expected 2 min_lrs, got 1"):
        S.ReduceLROnPlateau(opt, min_lr=[0.1])


@pytest.mark.parametrize("mode,tmode,seq,expect_reduce_at", [
    ("max", "abs", [1.0, 1.05, 1.08, 1.09, 1.095], 3),
    ("max", "rel", [1.0, 1.5, 1.6, 1.64, 1.6], 4),
    ("min", "abs", [1.0, 0.95, 0.92, 0.91, 0.9], 3),
])
def test_reduce_lr_on_plateau_modes(mode, tmode, seq, expect_reduce_at):
    opt = _opt(lr=1.0)
    sched = S.ReduceLROnPlateau(opt, mode=mode, threshold_mode=tmode, threshold=0.1, patience=2,
                                factor=0.1)
    for i, m in enumerate(seq):
        sched.step(m)
        assert opt.param_groups[0]["lr"] == pytest.approx(0.1 if i >= expect_reduce_at else 1.0)


def test_sequential_lr():
    opt = _opt()
    s1 = S.ConstantLR(opt, factor=0.1, total_iters=2)
    s2 = S.ExponentialLR(opt, gamma=0.9)
    sched = S.SequentialLR(opt, schedulers=[s1, s2], milestones=[2])
    got = _lrs(opt, sched, 8)[:, 0]
    want = [0.01, 0.01] + [0.1 * 0.9 ** k for k in range(7)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    with pytest.raises(ValueError, match="Sequential Schedulers expects number of schedulers "
                                         "provided to be one more than the number of milestone"):
        S.SequentialLR(opt, schedulers=[s1, s2], milestones=[2, 3])
    with pytest.raises(ValueError, match="expects at least one scheduler"):
        S.SequentialLR(opt, schedulers=[], milestones=[])


def test_chained_scheduler():
    opt = _opt()
    s1 = S.ConstantLR(opt, factor=0.1, total_iters=2)
    s2 = S.ExponentialLR(opt, gamma=0.9)
    sched = S.ChainedScheduler([s1, s2])
    got = _lrs(opt, sched, 6)[:, 0]
    want = [0.1 * (0.1 if e < 2 else 1.0) * 0.9 ** e for e in range(7)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    plateau = S.ReduceLROnPlateau(opt)
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        S.ChainedScheduler([s1, plateau])


def test_state_dict_round_trip():
    opt = _opt()
    sched = S.StepLR(opt, step_size=3, gamma=0.5)
    for _ in range(5):
        opt.step()
        sched.step()
    sd = sched.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 5 and sd["base_lrs"] == [0.1]
    opt2 = _opt()
    opt2.load_state_dict(opt.state_dict())
    sched2 = S.StepLR(opt2, step_size=1, gamma=0.9)
    sched2.load_state_dict(sd)
    assert sched2.step_size == 3 and sched2.gamma == 0.5
    for _ in range(4):
        opt.step()
        sched.step()
        opt2.step()
        sched2.step()
        assert opt.param_groups[0]["lr"] == opt2.param_groups[0]["lr"]

    class Fn:
        def __init__(self):
            self.k = 0.5

        def __call__(self, e):
            return self.k ** e

    fn = Fn()
    lam = S.LambdaLR(_opt(), [fn])
    fn.k = 0.7
    sd = lam.state_dict()
    assert sd["lr_lambdas"] == [{"k": 0.7}]
    fn.k = 0.1
    lam.load_state_dict(sd)
    assert fn.k == 0.7
    assert S.LambdaLR(_opt(), lambda e: 1.0).state_dict()["lr_lambdas"] == [None]
    # nested schedulers save their children's state
    opt = _opt()
    seq = S.SequentialLR(opt, [S.ConstantLR(opt, 0.5, 2), S.ExponentialLR(opt, 0.9)], [2])
    sd = seq.state_dict()
    assert len(sd["_schedulers"]) == 2 and "last_epoch" in sd["_schedulers"][1]
    seq.load_state_dict(sd)


def test_step_before_optimizer_step_warns():
    opt = _opt()
    sched = S.StepLR(opt, 2)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before "
                                         r"`optimizer.step\(\)`"):
        sched.step()
    opt = _opt()
    sched = S.StepLR(opt, 2)
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()
        sched.step()
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()


def test_epoch_argument_uses_closed_form():
    opt = _opt()
    sched = S.StepLR(opt, step_size=2, gamma=0.5)
    opt.step()
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)`"):
        sched.step(7)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1 * 0.5 ** 3)


def test_verbose_is_accepted_and_ignored():
    opt = _opt()
    with pytest.warns(UserWarning, match="The verbose parameter is deprecated"):
        S.StepLR(opt, 2, verbose=True)


def test_errors():
    with pytest.raises(TypeError, match="int is not an Optimizer"):
        S.StepLR(3, 2)
    opt = _opt()
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups"):
        S.StepLR(opt, 2, last_epoch=3)
    with pytest.raises(ValueError, match="Expected 1 lr_lambdas, but got 2"):
        S.LambdaLR(opt, [lambda e: 1, lambda e: 1])
    with pytest.raises(ValueError, match="Constant multiplicative factor expected to be between"):
        S.ConstantLR(opt, factor=2)
    with pytest.raises(ValueError, match="Starting multiplicative factor expected to be greater"):
        S.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        S.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(ValueError, match="Expected float between 0 and 1 pct_start, but got 2"):
        S.OneCycleLR(opt, max_lr=1.0, total_steps=10, pct_start=2)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', "
                                         "instead got x"):
        S.OneCycleLR(opt, max_lr=1.0, total_steps=10, anneal_strategy="x")
    with pytest.raises(ValueError, match="max_lr must have the same length as "
                                         "optimizer.param_groups"):
        S.OneCycleLR(opt, max_lr=[1.0, 2.0], total_steps=10)


def test_tensor_lr_is_updated_in_place():
    p = ember.zeros(2, requires_grad=True)
    lr = ember.tensor(0.1)
    opt = optim.SGD([p], lr=lr)
    sched = S.ExponentialLR(opt, gamma=0.5)
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] is lr
    assert float(lr) == pytest.approx(0.05)


TORCH_CONFIGS = [
    ("StepLR", {"step_size": 3, "gamma": 0.7}, "SGD"),
    ("MultiStepLR", {"milestones": [2, 5, 5, 9], "gamma": 0.5}, "SGD"),
    ("ConstantLR", {"factor": 0.3, "total_iters": 4}, "SGD"),
    ("LinearLR", {"start_factor": 0.1, "end_factor": 0.8, "total_iters": 7}, "SGD"),
    ("ExponentialLR", {"gamma": 0.9}, "SGD"),
    ("PolynomialLR", {"total_iters": 8, "power": 1.5}, "SGD"),
    ("CosineAnnealingLR", {"T_max": 6, "eta_min": 0.001}, "SGD"),
    ("CosineAnnealingWarmRestarts", {"T_0": 3, "T_mult": 2, "eta_min": 0.002}, "SGD"),
    ("OneCycleLR", {"max_lr": 0.5, "total_steps": 25}, "SGD"),
    ("OneCycleLR", {"max_lr": 0.5, "total_steps": 25, "three_phase": True,
                    "anneal_strategy": "linear"}, "Adam"),
    ("CyclicLR", {"base_lr": 0.01, "max_lr": 0.2, "step_size_up": 3, "mode": "triangular2"},
     "SGD"),
    ("CyclicLR", {"base_lr": 0.01, "max_lr": 0.2, "step_size_up": 3, "mode": "exp_range",
                  "gamma": 0.9}, "Adam"),
]


def test_matches_pytorch():
    """lr (and momentum / beta1) of every step agree with PyTorch's schedulers."""
    if TORCH_PY is None:
        pytest.skip("PyTorch is not installed")
    src = f"""
import torch
out = []
for name, kw, opt_name in {TORCH_CONFIGS!r}:
    p = torch.zeros(2, requires_grad=True)
    extra = {{"momentum": 0.9}} if opt_name == "SGD" else {{}}
    opt = getattr(torch.optim, opt_name)([p], lr=0.1, **extra)
    sched = getattr(torch.optim.lr_scheduler, name)(opt, **kw)
    rows = []
    for _ in range(24):
        g = opt.param_groups[0]
        rows.append([g["lr"], g["momentum"] if opt_name == "SGD" else g["betas"][0]])
        opt.step()
        sched.step()
    out.append(rows)
print(repr(out))
"""
    r = subprocess.run([TORCH_PY, "-c", src], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=""), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    want = eval(r.stdout.strip().splitlines()[-1])
    for (name, kw, opt_name), rows in zip(TORCH_CONFIGS, want):
        extra = {"momentum": 0.9} if opt_name == "SGD" else {}
        opt = getattr(optim, opt_name)([ember.zeros(2, requires_grad=True)], lr=0.1, **extra)
        sched = getattr(S, name)(opt, **kw)
        got = []
        for _ in range(24):
            g = opt.param_groups[0]
            got.append([g["lr"], g["momentum"] if opt_name == "SGD" else g["betas"][0]])
            opt.step()
            sched.step()
        np.testing.assert_allclose(got, rows, rtol=1e-13, atol=1e-16, err_msg=name)
