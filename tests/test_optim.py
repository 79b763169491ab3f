"""ember.optim: every optimizer against a step-by-step NumPy implementation of its update
rule, state_dict round trips (PyTorch's layout), hooks, errors, low-precision and
non-contiguous parameters, and LBFGS on the Rosenbrock function."""
import itertools
import math
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from torch_python import TORCH_PY

import ember
from ember import _C, optim

SHAPES = [(3, 4), (5,), (), (2, 1, 3)]


# ---- NumPy references (float64), one step on one parameter ---------------------------------


def _lerp(a, b, w):
    return a + w * (b - a)


def _wd(p, g, o, lr, decoupled):
    g = -g if o.get("maximize") else g
    wd = o.get("weight_decay", 0)
    if wd:
        if decoupled:
            p = p * (1 - lr * wd)
        else:
            g = g + wd * p
    return p, g


def ref_sgd(p, g, s, o):
    lr, mom, damp = o.get("lr", 1e-3), o.get("momentum", 0), o.get("dampening", 0)
    p, g = _wd(p, g, o, lr, False)
    if mom:
        s["momentum_buffer"] = g.copy() if "momentum_buffer" not in s else \
            mom * s["momentum_buffer"] + (1 - damp) * g
        g = g + mom * s["momentum_buffer"] if o.get("nesterov") else s["momentum_buffer"]
    return p - lr * g


def ref_adam(p, g, s, o, decoupled_default=False):
    lr = o.get("lr", 1e-3)
    b1, b2 = o.get("betas", (0.9, 0.999))
    eps = o.get("eps", 1e-8)
    t = s["step"] = s.get("step", 0) + 1
    p, g = _wd(p, g, o, lr, o.get("decoupled_weight_decay", decoupled_default))
    m = s["exp_avg"] = _lerp(s.get("exp_avg", 0 * p), g, 1 - b1)
    v = s["exp_avg_sq"] = b2 * s.get("exp_avg_sq", 0 * p) + (1 - b2) * g * g
    if o.get("amsgrad"):
        v = s["max_exp_avg_sq"] = np.maximum(s.get("max_exp_avg_sq", 0 * p), v)
    bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
    return p - lr / bc1 * m / (np.sqrt(v) / math.sqrt(bc2) + eps)


def ref_adamw(p, g, s, o):
    return ref_adam(p, g, s, o, decoupled_default=True)


def ref_adamax(p, g, s, o):
    lr, (b1, b2), eps = o.get("lr", 2e-3), o.get("betas", (0.9, 0.999)), o.get("eps", 1e-8)
    t = s["step"] = s.get("step", 0) + 1
    p, g = _wd(p, g, o, lr, False)
    m = s["exp_avg"] = _lerp(s.get("exp_avg", 0 * p), g, 1 - b1)
    u = s["exp_inf"] = np.maximum(s.get("exp_inf", 0 * p) * b2, np.abs(g) + eps)
    return p - lr / (1 - b1 ** t) * m / u


def ref_nadam(p, g, s, o):
    lr, (b1, b2), eps = o.get("lr", 2e-3), o.get("betas", (0.9, 0.999)), o.get("eps", 1e-8)
    md = o.get("momentum_decay", 4e-3)
    t = s["step"] = s.get("step", 0) + 1
    p, g = _wd(p, g, o, lr, o.get("decoupled_weight_decay", False))
    mu = b1 * (1 - 0.5 * 0.96 ** (t * md))
    mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * md))
    # mu_product is a float32 tensor, multiplied in float32 as PyTorch does
    mp = s["mu_product"] = float(np.float32(s.get("mu_product", 1.0)) * np.float32(mu))
    m = s["exp_avg"] = _lerp(s.get("exp_avg", 0 * p), g, 1 - b1)
    v = s["exp_avg_sq"] = b2 * s.get("exp_avg_sq", 0 * p) + (1 - b2) * g * g
    denom = np.sqrt(v / (1 - b2 ** t)) + eps
    return p - lr * (1 - mu) / (1 - mp) * g / denom - lr * mu_next / (1 - mp * mu_next) * m / denom


def ref_radam(p, g, s, o):
    lr, (b1, b2), eps = o.get("lr", 1e-3), o.get("betas", (0.9, 0.999)), o.get("eps", 1e-8)
    t = s["step"] = s.get("step", 0) + 1
    p, g = _wd(p, g, o, lr, o.get("decoupled_weight_decay", False))
    m = s["exp_avg"] = _lerp(s.get("exp_avg", 0 * p), g, 1 - b1)
    v = s["exp_avg_sq"] = b2 * s.get("exp_avg_sq", 0 * p) + (1 - b2) * g * g
    bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
    rho_inf = 2 / (1 - b2) - 1
    rho_t = rho_inf - 2 * t * b2 ** t / bc2
    if rho_t > 5:
        rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        return p - m / bc1 * lr * math.sqrt(bc2) / (np.sqrt(v) + eps) * rect
    return p - m / bc1 * lr


def ref_rmsprop(p, g, s, o):
    lr, alpha, eps = o.get("lr", 1e-2), o.get("alpha", 0.99), o.get("eps", 1e-8)
    mom = o.get("momentum", 0)
    s["step"] = s.get("step", 0) + 1
    p, g = _wd(p, g, o, lr, False)
    sq = s["square_avg"] = alpha * s.get("square_avg", 0 * p) + (1 - alpha) * g * g
    if o.get("centered"):
        ga = s["grad_avg"] = _lerp(s.get("grad_avg", 0 * p), g, 1 - alpha)
        avg = np.sqrt(sq - ga * ga) + eps
    else:
        avg = np.sqrt(sq) + eps
    if mom > 0:
        b = s["momentum_buffer"] = mom * s.get("momentum_buffer", 0 * p) + g / avg
        return p - lr * b
    return p - lr * g / avg


def ref_adagrad(p, g, s, o):
    lr, lr_decay, eps = o.get("lr", 1e-2), o.get("lr_decay", 0), o.get("eps", 1e-10)
    t = s["step"] = s.get("step", 0) + 1
    p, g = _wd(p, g, o, lr, False)
    sm = s["sum"] = s.get("sum", 0 * p + o.get("initial_accumulator_value", 0)) + g * g
    return p - lr / (1 + (t - 1) * lr_decay) * g / (np.sqrt(sm) + eps)


def ref_adadelta(p, g, s, o):
    lr, rho, eps = o.get("lr", 1.0), o.get("rho", 0.9), o.get("eps", 1e-6)
    s["step"] = s.get("step", 0) + 1
    p, g = _wd(p, g, o, lr, False)
    sq = s["square_avg"] = rho * s.get("square_avg", 0 * p) + (1 - rho) * g * g
    delta = np.sqrt(s.get("acc_delta", 0 * p) + eps) / np.sqrt(sq + eps) * g
    s["acc_delta"] = rho * s.get("acc_delta", 0 * p) + (1 - rho) * delta * delta
    return p - lr * delta


def _grid(**axes):
    keys = list(axes)
    return [dict(zip(keys, vals)) for vals in itertools.product(*axes.values())]


CASES = {
    "SGD": (optim.SGD, ref_sgd,
            [o for o in _grid(lr=[0.1], momentum=[0, 0.9], dampening=[0, 0.3],
                              nesterov=[False, True], weight_decay=[0, 0.1],
                              maximize=[False, True])
             if not o["nesterov"] or (o["momentum"] and not o["dampening"])]),
    "Adam": (optim.Adam, ref_adam,
             _grid(lr=[0.01], amsgrad=[False, True], weight_decay=[0, 0.1],
                   decoupled_weight_decay=[False, True], maximize=[False, True],
                   betas=[(0.9, 0.999), (0.5, 0.9)])),
    "AdamW": (optim.AdamW, ref_adamw,
              _grid(lr=[0.01], amsgrad=[False, True], weight_decay=[0, 0.1],
                    maximize=[False, True])),
    "Adamax": (optim.Adamax, ref_adamax,
               _grid(lr=[0.01], weight_decay=[0, 0.1], maximize=[False, True],
                     betas=[(0.9, 0.999), (0.5, 0.8)])),
    "NAdam": (optim.NAdam, ref_nadam,
              _grid(lr=[0.01], weight_decay=[0, 0.1], decoupled_weight_decay=[False, True],
                    momentum_decay=[4e-3, 0.1], maximize=[False, True])),
    "RAdam": (optim.RAdam, ref_radam,
              _grid(lr=[0.01], weight_decay=[0, 0.1], decoupled_weight_decay=[False, True],
                    maximize=[False, True], betas=[(0.9, 0.999), (0.9, 0.5)])),
    "RMSprop": (optim.RMSprop, ref_rmsprop,
                _grid(lr=[0.01], centered=[False, True], momentum=[0, 0.9], alpha=[0.99, 0.5],
                      weight_decay=[0, 0.1], maximize=[False, True])),
    "Adagrad": (optim.Adagrad, ref_adagrad,
                _grid(lr=[0.1], lr_decay=[0, 0.5], initial_accumulator_value=[0, 0.3],
                      weight_decay=[0, 0.1], maximize=[False, True])),
    "Adadelta": (optim.Adadelta, ref_adadelta,
                 _grid(lr=[1.0, 0.5], rho=[0.9, 0.5], weight_decay=[0, 0.1],
                       maximize=[False, True])),
}

ALL = [(name, i) for name, (_, _, grid) in CASES.items() for i in range(len(grid))]


def _make_params(rng, dtype, device, shapes=SHAPES):
    arrays = [rng.standard_normal(s) for s in shapes]
    params = [ember.tensor(a, dtype=dtype, device=device, requires_grad=True) for a in arrays]
    return arrays, params


def _to_np(t):
    return np.array(t.detach().cpu().double().numpy(), copy=True)


def _run(name, opts, device, dtype=ember.float64, steps=5, seed=0):
    cls, ref, _ = CASES[name]
    rng = np.random.default_rng(seed)
    arrays, params = _make_params(rng, dtype, device)
    opt = cls(params, **opts)
    states = [dict() for _ in arrays]
    for _ in range(steps):
        grads = [rng.standard_normal(a.shape) for a in arrays]
        for p, g in zip(params, grads):
            p.grad = ember.tensor(g, dtype=dtype, device=device)
        opt.step()
        arrays = [ref(a, g, s, opts) for a, g, s in zip(arrays, grads, states)]
    return opt, params, arrays, states


@pytest.mark.parametrize("name,i", ALL, ids=[f"{n}-{i}" for n, i in ALL])
def test_matches_numpy_float64(name, i, device):
    opts = CASES[name][2][i]
    opt, params, arrays, states = _run(name, opts, device)
    for p, a, s in zip(params, arrays, states):
        np.testing.assert_allclose(_to_np(p), a, rtol=1e-10, atol=1e-12)
        st = opt.state[p]
        for key, val in s.items():
            got = st[key]
            if key == "step":
                assert got.dim() == 0 and got.dtype == ember.float32 and float(got) == val
            else:
                np.testing.assert_allclose(_to_np(got), val, rtol=1e-6 if key == "mu_product"
                                           else 1e-10, atol=1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_matches_numpy_float32(name, device):
    opts = CASES[name][2][-1]
    _, params, arrays, _ = _run(name, opts, device, dtype=ember.float32)
    for p, a in zip(params, arrays):
        assert p.dtype == ember.float32
        np.testing.assert_allclose(_to_np(p), a, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", list(CASES))
def test_low_precision_params(name, dtype, device):
    """float16/bfloat16 params (and state) are updated with float32 math."""
    opts = dict(CASES[name][2][0])
    dt = getattr(ember, dtype)
    _, params, arrays, _ = _run(name, opts, device, dtype=dt, steps=3)
    tol = 2e-2 if dtype == "bfloat16" else 4e-3
    for p, a in zip(params, arrays):
        assert p.dtype == dt
        np.testing.assert_allclose(_to_np(p), a, rtol=tol, atol=tol)
    # the update really happened in low precision storage
    st = _run(name, opts, device, dtype=dt, steps=1)[0].state
    for s in st.values():
        for k, v in s.items():
            if isinstance(v, ember.Tensor) and k not in ("step", "mu_product"):
                assert v.dtype == dt


@pytest.mark.parametrize("name", list(CASES))
def test_non_contiguous_params(name, device):
    """A transposed / strided parameter is updated in place through its view."""
    cls, ref, grid = CASES[name]
    opts = grid[-1]
    rng = np.random.default_rng(1)
    base = ember.tensor(rng.standard_normal((6, 8)), device=device)
    p1 = base.t().detach().requires_grad_()  # non-contiguous leaf
    p2 = ember.tensor(rng.standard_normal((4, 10)), device=device)[:, ::3].detach().requires_grad_()
    assert not p1.is_contiguous() and not p2.is_contiguous()
    params = [p1, p2]
    arrays = [_to_np(p) for p in params]
    states = [dict(), dict()]
    opt = cls(params, **opts)
    for _ in range(3):
        grads = [rng.standard_normal(a.shape) for a in arrays]
        for p, g in zip(params, grads):
            gt = ember.tensor(g.T.copy(), device=device).t()  # non-contiguous grad too
            p.grad = gt
        v0 = p1._version
        opt.step()
        assert p1._version > v0
        arrays = [ref(a, g, s, opts) for a, g, s in zip(arrays, grads, states)]
    np.testing.assert_allclose(_to_np(base.t()), arrays[0], rtol=1e-10)  # a view of base
    for p, a in zip(params, arrays):
        np.testing.assert_allclose(_to_np(p), a, rtol=1e-10, atol=1e-12)
    assert not p1.is_contiguous()


def test_step_bumps_versions_and_runs_without_grad():
    p = ember.randn(4, 3, requires_grad=True)
    p.grad = ember.ones(4, 3)
    opt = optim.Adam([p])
    v = p._version
    opt.step()
    assert p._version == v + 1
    st = opt.state[p]
    assert st["exp_avg"]._version >= 1 and st["step"]._version >= 1
    assert p.grad_fn is None and p.requires_grad and p.is_leaf


def test_params_without_grad_are_skipped():
    a = ember.ones(3, requires_grad=True)
    b = ember.ones(3, requires_grad=True)
    a.grad = ember.ones(3)
    opt = optim.Adam([a, b], lr=0.1)
    opt.step()
    assert b not in opt.state or len(opt.state[b]) == 0
    np.testing.assert_allclose(b.detach().numpy(), 1)
    assert float(a[0]) < 1


def test_param_groups_and_per_group_options():
    a = ember.zeros(2, requires_grad=True)
    b = ember.zeros(2, requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.9)
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[0]["lr"] == 0.1
    assert opt.param_groups[1]["momentum"] == 0.9
    a.grad = ember.ones(2)
    b.grad = ember.ones(2)
    opt.step()
    np.testing.assert_allclose(a.detach().numpy(), -0.1)
    np.testing.assert_allclose(b.detach().numpy(), -0.5)
    c = ember.zeros(1, requires_grad=True)
    opt.add_param_group({"params": [c], "lr": 1.0})
    assert len(opt.param_groups) == 3 and opt.param_groups[2]["momentum"] == 0.9


def test_lr_as_tensor():
    p = ember.zeros(2, requires_grad=True)
    p.grad = ember.ones(2)
    opt = optim.SGD([p], lr=ember.tensor(0.25))
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), -0.25)


# ---- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize("cls,kwargs,msg", [
    (optim.SGD, {"lr": -0.1}, "Invalid learning rate: -0.1"),
    (optim.SGD, {"momentum": -1.0}, "Invalid momentum value: -1.0"),
    (optim.SGD, {"weight_decay": -1.0}, "Invalid weight_decay value: -1.0"),
    (optim.SGD, {"nesterov": True}, "Nesterov momentum requires a momentum and zero dampening"),
    (optim.SGD, {"nesterov": True, "momentum": 0.9, "dampening": 0.1},
     "Nesterov momentum requires a momentum and zero dampening"),
    (optim.Adam, {"lr": -0.1}, "Invalid learning rate: -0.1"),
    (optim.Adam, {"eps": -1.0}, "Invalid epsilon value: -1.0"),
    (optim.Adam, {"betas": (1.0, 0.999)}, "Invalid beta parameter at index 0: 1.0"),
    (optim.Adam, {"betas": (0.9, -0.1)}, "Invalid beta parameter at index 1: -0.1"),
    (optim.Adam, {"weight_decay": -0.5}, "Invalid weight_decay value: -0.5"),
    (optim.Adam, {"betas": (0.9, ember.tensor(0.9))}, "betas must be either both floats or both Tensors"),
    (optim.AdamW, {"betas": (0.9, 1.5)}, "Invalid beta parameter at index 1: 1.5"),
    (optim.Adamax, {"betas": (-0.1, 0.9)}, "Invalid beta parameter at index 0: -0.1"),
    (optim.NAdam, {"momentum_decay": -1.0}, "Invalid momentum_decay value: -1.0"),
    (optim.RAdam, {"eps": -1e-3}, "Invalid epsilon value: -0.001"),
    (optim.RMSprop, {"alpha": -0.5}, "Invalid alpha value: -0.5"),
    (optim.RMSprop, {"momentum": -0.5}, "Invalid momentum value: -0.5"),
    (optim.Adagrad, {"lr_decay": -0.5}, "Invalid lr_decay value: -0.5"),
    (optim.Adagrad, {"initial_accumulator_value": -1.0},
     "Invalid initial_accumulator_value value: -1.0"),
    (optim.Adadelta, {"rho": 1.5}, "Invalid rho value: 1.5"),
    (optim.LBFGS, {"lr": -1.0}, "Invalid learning rate: -1.0"),
])
def test_bad_hyperparameters(cls, kwargs, msg):
    p = ember.zeros(2, requires_grad=True)
    with pytest.raises(ValueError) as e:
        cls([p], **kwargs)
    assert str(e.value) == msg


def test_param_list_errors():
    with pytest.raises(ValueError, match="^optimizer got an empty parameter list$"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an "
                                        "iterable of Tensors or dicts, but got ember.FloatTensor"):
        optim.SGD(ember.zeros(2), lr=0.1)
    p = ember.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)
    opt = optim.SGD([p], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": p})
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([p, p], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([p * 2], lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the "
                                        "params is int"):
        optim.SGD([1], lr=0.1)
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([p])
    with pytest.raises(TypeError, match="optimizer parameters need to be organized in ordered"):
        opt.add_param_group({"params": {ember.zeros(1, requires_grad=True)}})


def test_required_hyperparameter():
    from ember.optim.optimizer import Optimizer, required

    class Opt(Optimizer):
        def __init__(self, params, lr=required):
            super().__init__(params, {"lr": lr})

    with pytest.raises(ValueError, match="parameter group didn't specify a value of required "
                                         "optimization parameter lr"):
        Opt([ember.zeros(1, requires_grad=True)])
    assert repr(required) == "<required parameter>"


def test_fused_foreach_flags():
    p = ember.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together."):
        optim.Adam([p], fused=True, foreach=True)
    with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
        optim.SGD([p], fused=True, differentiable=True)
    # capturable/fused/foreach are accepted and kept (the step is always the fused kernel)
    opt = optim.Adam([p], capturable=True, fused=True)
    p.grad = ember.ones(2)
    opt.step()
    assert opt.param_groups[0]["fused"] is True


# ---- differentiable=True: the composite path in ember ops --------------------------------


def _run_pair(name, opts, device, steps=4, seed=1):
    """The same steps with the fused kernel and with differentiable=True (plain tensors,
    so the composite records nothing): returns both optimizers and param lists."""
    cls = CASES[name][0]
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s) for s in SHAPES]
    fused = [ember.tensor(a, dtype=ember.float64, device=device) for a in arrays]
    comp = [ember.tensor(a, dtype=ember.float64, device=device) for a in arrays]
    opt_f, opt_c = cls(fused, **opts), cls(comp, differentiable=True, **opts)
    for _ in range(steps):
        for pf, pc in zip(fused, comp):
            g = rng.standard_normal(tuple(pf.shape))
            pf.grad = ember.tensor(g, dtype=ember.float64, device=device)
            pc.grad = ember.tensor(g, dtype=ember.float64, device=device)
        opt_f.step()
        opt_c.step()
    return opt_f, fused, opt_c, comp


@pytest.mark.parametrize("name,i", ALL, ids=[f"{n}-{i}" for n, i in ALL])
def test_differentiable_composite_matches_fused(name, i, device):
    opts = CASES[name][2][i]
    opt_f, fused, opt_c, comp = _run_pair(name, opts, device)
    assert opt_c.param_groups[0]["differentiable"] is True
    for pf, pc in zip(fused, comp):
        np.testing.assert_allclose(_to_np(pc), _to_np(pf), rtol=1e-10, atol=1e-12)
        sf, sc = opt_f.state[pf], opt_c.state[pc]
        assert set(sf) == set(sc)
        for key in sf:
            np.testing.assert_allclose(_to_np(sc[key]), _to_np(sf[key]), rtol=1e-10, atol=1e-12,
                                       err_msg=key)
        assert sc.get("step") is None or sc["step"].dtype == sf["step"].dtype


# One option set per optimizer with every option that changes the update on.
DIFF_CASES = {
    "SGD": dict(lr=0.3, momentum=0.9, nesterov=True, weight_decay=0.1, maximize=True),
    "SGD-damp": dict(lr=0.3, momentum=0.5, dampening=0.3, weight_decay=0.1),
    "Adam": dict(lr=0.1, amsgrad=True, weight_decay=0.1, maximize=True, betas=(0.5, 0.9)),
    "Adam-decoupled": dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True),
    "AdamW": dict(lr=0.1, amsgrad=True, weight_decay=0.2),
    "Adamax": dict(lr=0.1, weight_decay=0.1, maximize=True, betas=(0.5, 0.8)),
    "NAdam": dict(lr=0.1, weight_decay=0.1, momentum_decay=0.1),
    "NAdam-decoupled": dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True,
                            maximize=True),
    "RAdam": dict(lr=0.1, weight_decay=0.1, betas=(0.9, 0.5)),
    "RAdam-rectified": dict(lr=0.1, weight_decay=0.1, maximize=True),
    "RAdam-decoupled": dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True),
    "RMSprop": dict(lr=0.1, centered=True, momentum=0.9, alpha=0.5, weight_decay=0.1,
                    maximize=True),
    "RMSprop-plain": dict(lr=0.1, alpha=0.5),
    "Adagrad": dict(lr=0.2, lr_decay=0.5, weight_decay=0.1, maximize=True),
    "Adadelta": dict(lr=0.5, rho=0.5, weight_decay=0.1),
}

# The state a step reads, as tensors that require grad (float64, positive where a square
# root reads them), with the step counters PyTorch keeps.
def _diff_state(name, opts, rng, shape):
    base = name.split("-")[0]

    def pos():
        return ember.tensor(rng.uniform(0.5, 1.5, shape), dtype=ember.float64,
                            requires_grad=True)

    def any_():
        return ember.tensor(rng.standard_normal(shape), dtype=ember.float64, requires_grad=True)

    st = {}
    if base == "SGD":
        st["momentum_buffer"] = any_()
    elif base in ("Adam", "AdamW", "Adamax", "NAdam", "RAdam"):
        # RAdam's rectified branch needs rho_t > 5: step 11 with beta2 = 0.999
        st["step"] = ember.tensor(10.0 if base == "RAdam" else 2.0)
        st["exp_avg"] = any_()
        if base == "Adamax":
            st["exp_inf"] = pos()
        else:
            st["exp_avg_sq"] = pos()
        if opts.get("amsgrad"):
            st["max_exp_avg_sq"] = pos()
        if base == "NAdam":
            st["mu_product"] = ember.tensor(0.8)
    elif base == "RMSprop":
        st["step"] = ember.tensor(2.0)
        st["square_avg"] = ember.tensor(rng.uniform(2.0, 3.0, shape), dtype=ember.float64,
                                        requires_grad=True)
        if opts.get("centered"):
            st["grad_avg"] = ember.tensor(rng.uniform(-0.5, 0.5, shape), dtype=ember.float64,
                                          requires_grad=True)
        if opts.get("momentum"):
            st["momentum_buffer"] = any_()
    elif base == "Adagrad":
        st["step"] = ember.tensor(2.0)
        st["sum"] = pos()
    elif base == "Adadelta":
        st["step"] = ember.tensor(2.0)
        st["square_avg"] = pos()
        st["acc_delta"] = pos()
    return st


@pytest.mark.parametrize("name", list(DIFF_CASES))
def test_differentiable_step_gradcheck(name, device):
    """d(param after one step, new state) / d(param, grad, old state) by finite differences,
    as PyTorch's test_optim differentiable tests: the step runs on copies of leaves."""
    from ember.autograd import gradcheck

    cls = CASES[name.split("-")[0]][0]
    opts = DIFF_CASES[name]
    rng = np.random.default_rng(7)
    shape = (2, 3)
    p0 = ember.tensor(rng.standard_normal(shape), dtype=ember.float64, requires_grad=True)
    g0 = ember.tensor(rng.standard_normal(shape), dtype=ember.float64, requires_grad=True)
    state = _diff_state(name, opts, rng, shape)
    keys = [k for k, v in state.items() if v.requires_grad]

    def one_step(p, g, *vals):
        p = p.clone()
        p.grad = g
        opt = cls([p], differentiable=True, **opts)
        st = {k: v.clone() for k, v in state.items()}
        st.update({k: v.clone() for k, v in zip(keys, vals)})
        opt.state[p].update(st)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # reading .grad of a non-leaf
            opt.step()
        return (p,) + tuple(opt.state[p][k] for k in keys)

    out = one_step(p0, g0, *(state[k] for k in keys))
    assert out[0].grad_fn is not None
    assert gradcheck(one_step, (p0, g0, *(state[k] for k in keys)))


def test_differentiable_step_through_two_steps(device):
    """A meta-gradient: d(loss after two SGD-momentum and two Adam steps) / d(learning
    signal) exists and matches finite differences."""
    from ember.autograd import gradcheck

    for cls, opts in ((optim.SGD, dict(lr=0.1, momentum=0.9)),
                      (optim.Adam, dict(lr=0.1, weight_decay=0.1))):
        w0 = ember.tensor([0.5, -1.0, 2.0], dtype=ember.float64, requires_grad=True)
        target = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64, requires_grad=True)

        def run(w0, target):
            # gradcheck evaluates run under no_grad for its finite differences: the inner
            # grad() needs grad mode and a w that requires grad (not a leaf, which the
            # in-place update would refuse)
            with ember.enable_grad():
                return _two_steps(w0, target)

        def _two_steps(w0, target):
            w = w0.clone() if w0.requires_grad else w0.detach().requires_grad_().clone()
            opt = cls([w], differentiable=True, **opts)
            for _ in range(2):
                loss = ((w - target) ** 2).sum()
                (g,) = ember.autograd.grad(loss, (w,), create_graph=True)
                w.grad = g
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    opt.step()
            return ((w - target) ** 2).sum()

        assert gradcheck(run, (w0, target))


def test_differentiable_leaf_param_errors_like_pytorch(device):
    # an in-place update of a leaf that requires grad under grad mode is refused
    p = ember.zeros(2, requires_grad=True)
    p.grad = ember.ones(2)
    opt = optim.SGD([p], lr=0.1, differentiable=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        opt.step()
    # without differentiable the fused step runs under no_grad
    q = ember.zeros(2, requires_grad=True)
    q.grad = ember.ones(2)
    optim.SGD([q], lr=0.1).step()
    assert q.tolist() == pytest.approx([-0.1, -0.1]) and q.grad_fn is None


def test_fused_kernel_errors():
    p = [ember.zeros(3), ember.zeros(2)]
    g = [ember.zeros(3), ember.zeros(2)]
    steps = [ember.zeros(()), ember.zeros(())]
    kw = dict(lr=0.1, beta1=0.9, beta2=0.99, weight_decay=0.0, eps=1e-8, amsgrad=False,
              maximize=False, decoupled_weight_decay=False)
    with pytest.raises(RuntimeError, match=r"adam_step_: expected grads to hold 2 tensors "
                                           r"\(one per param\), got 1"):
        _C._adam_step_(p, g[:1], p, p, [], steps, **kw)
    with pytest.raises(RuntimeError, match=r"adam_step_: exp_avgs\[1\] has shape \[3\] but "
                                           r"params\[1\] has shape \[2\]"):
        _C._adam_step_(p, g, [ember.zeros(3), ember.zeros(3)], g, [], steps, **kw)
    with pytest.raises(RuntimeError, match=r"adam_step_: grads\[0\] has dtype float64 but "
                                           r"params\[0\] has dtype float32"):
        _C._adam_step_(p, [ember.zeros(3, dtype=ember.float64), g[1]], g, g, [], steps, **kw)
    with pytest.raises(RuntimeError, match=r"adam_step_: params\[0\] has dtype int64; "
                                           "optimizer steps need floating-point params"):
        _C._adam_step_([ember.zeros(3, dtype=ember.int64)], g[:1], g[:1], g[:1], [], steps[:1],
                       **kw)
    with pytest.raises(RuntimeError, match=r"state_steps\[0\] must be a one-element "
                                           "floating-point CPU tensor"):
        _C._adam_step_(p, g, [ember.zeros(3), ember.zeros(2)], [ember.zeros(3), ember.zeros(2)],
                       [], [ember.zeros(2), ember.zeros(())], **kw)
    with pytest.raises(TypeError, match="_adam_step_\\(\\): argument 'params' must be a list of "
                                        "Tensors, but element 1 is int"):
        _C._adam_step_([ember.zeros(1), 3], g, g, g, [], steps, **kw)
    # nothing was changed by the failed calls
    assert all(float(s) == 0 for s in steps)
    # an empty group is a no-op
    _C._adam_step_([], [], [], [], [], [], **kw)


def test_fused_kernel_large_multithreaded():
    """Many tensors, some larger than a parallel chunk: the flat split over tensors."""
    rng = np.random.default_rng(3)
    shapes = [(70001,), (3,), (0,), (40000, 2), (1,), (12345,)]
    arrays = [rng.standard_normal(s) for s in shapes]
    params = [ember.tensor(a, requires_grad=True) for a in arrays]
    opt = optim.Adam(params, lr=0.01, weight_decay=0.1, amsgrad=True)
    states = [dict() for _ in arrays]
    opts = dict(lr=0.01, weight_decay=0.1, amsgrad=True)
    for _ in range(2):
        grads = [rng.standard_normal(s) for s in shapes]
        for p, g in zip(params, grads):
            p.grad = ember.tensor(g)
        opt.step()
        arrays = [ref_adam(a, g, s, opts) for a, g, s in zip(arrays, grads, states)]
    for p, a in zip(params, arrays):
        np.testing.assert_allclose(_to_np(p), a, rtol=1e-10, atol=1e-12)


# ---- zero_grad, closure, hooks, repr --------------------------------------------------------


def test_zero_grad():
    p = ember.ones(3, requires_grad=True)
    (p * 2).sum().backward()
    opt = optim.SGD([p], lr=0.1)
    g = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is g
    np.testing.assert_array_equal(p.grad.numpy(), 0)
    opt.zero_grad()
    assert p.grad is None


def test_closure_runs_with_grad_enabled():
    p = ember.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    seen = []

    def closure():
        seen.append(ember.is_grad_enabled())
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with ember.no_grad():
        loss = opt.step(closure)
    assert seen == [True]
    assert float(loss) == 5.0
    np.testing.assert_allclose(p.detach().numpy(), [0.8, 1.6])


def test_step_hooks():
    p = ember.zeros(1, requires_grad=True)
    p.grad = ember.ones(1)
    opt = optim.SGD([p], lr=1.0)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", float(p))))
    h2 = opt.register_step_post_hook(lambda o, a, k: calls.append(("post", float(p))))
    g = optim.optimizer.register_optimizer_step_pre_hook(lambda o, a, k: calls.append("global"))
    opt.step()
    assert calls == ["global", ("pre", 0.0), ("post", -1.0)]
    h1.remove()
    h2.remove()
    g.remove()
    calls.clear()
    opt.step()
    assert calls == []

    def bad(o, a, k):
        return 3

    opt.register_step_pre_hook(bad)
    with pytest.raises(RuntimeError, match="must return None or a tuple of"):
        opt.step()


def test_repr_matches_torch():
    p = ember.zeros(2, requires_grad=True)
    r = repr(optim.Adam([p]))
    assert r == ("Adam (\nParameter Group 0\n    amsgrad: False\n    betas: (0.9, 0.999)\n"
                 "    capturable: False\n    decoupled_weight_decay: False\n"
                 "    differentiable: False\n    eps: 1e-08\n    foreach: None\n"
                 "    fused: None\n    lr: 0.001\n    maximize: False\n    weight_decay: 0\n)")
    r = repr(optim.SGD([p], lr=0.1, momentum=0.9))
    assert r.startswith("SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n")


# ---- state_dict ----------------------------------------------------------------------------


def _train(opt, params, rng, steps):
    for _ in range(steps):
        for p in params:
            p.grad = ember.tensor(rng.standard_normal(tuple(p.shape)), dtype=p.dtype)
        opt.step()


@pytest.mark.parametrize("name", list(CASES))
def test_state_dict_round_trip(name, tmp_path):
    cls, _, grid = CASES[name]
    opts = grid[-1]
    rng = np.random.default_rng(0)
    _, params = _make_params(rng, ember.float32, "cpu")
    opt = cls(params, **opts)
    _train(opt, params, np.random.default_rng(1), 3)
    sd = opt.state_dict()
    # PyTorch's layout
    assert set(sd) == {"state", "param_groups"}
    assert sd["param_groups"][0]["params"] == list(range(len(params)))
    for k, st in sd["state"].items():
        assert isinstance(k, int)
        if "step" in st:
            assert isinstance(st["step"], ember.Tensor) and st["step"].dim() == 0
            assert st["step"].dtype == ember.float32 and float(st["step"]) == 3
    # a fresh optimizer on copies of the params continues identically, also through a file
    path = tmp_path / "opt.pt"
    ember.save(sd, path)
    loaded = ember.load(path)
    assert sorted(loaded["state"]) == sorted(sd["state"])
    copies = [p.detach().clone().requires_grad_() for p in params]
    opt2 = cls(copies, **opts)
    opt2.load_state_dict(loaded)
    assert opt2.param_groups[0]["params"][0] is copies[0]
    _train(opt, params, np.random.default_rng(2), 2)
    _train(opt2, copies, np.random.default_rng(2), 2)
    for p, c in zip(params, copies):
        np.testing.assert_array_equal(p.detach().numpy(), c.detach().numpy())


def test_load_state_dict_errors_and_hooks():
    a, b = ember.zeros(2, requires_grad=True), ember.zeros(2, requires_grad=True)
    opt = optim.SGD([a, b], lr=0.1)
    opt1 = optim.SGD([a], lr=0.1)
    with pytest.raises(ValueError, match="loaded state dict contains a parameter group that "
                                         "doesn't match the size of optimizer's group"):
        opt.load_state_dict(opt1.state_dict())
    opt2 = optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1)
    with pytest.raises(ValueError, match="loaded state dict has a different number of "
                                         "parameter groups"):
        opt.load_state_dict(opt2.state_dict())
    calls = []
    opt.register_state_dict_post_hook(lambda o, sd: calls.append("post"))
    opt.register_load_state_dict_pre_hook(lambda o, sd: calls.append("lpre"))
    opt.register_load_state_dict_post_hook(lambda o: calls.append("lpost"))
    opt.load_state_dict(opt.state_dict())
    assert calls == ["post", "lpre", "lpost"]


def test_torch_layout_dict_loads():
    """A dict in PyTorch's layout (as torch.optim.Adam.state_dict() gives, tensors converted)
    loads, hyper-parameters and all, and steps on from there."""
    p = ember.tensor([1.0, -2.0, 3.0], requires_grad=True)
    sd = {
        "state": {0: {"step": ember.tensor(2.0), "exp_avg": ember.tensor([0.1, 0.2, 0.3]),
                      "exp_avg_sq": ember.tensor([0.01, 0.02, 0.03])}},
        "param_groups": [{"lr": 0.05, "betas": (0.8, 0.9), "eps": 1e-8, "weight_decay": 0,
                          "amsgrad": False, "maximize": False, "foreach": None,
                          "capturable": False, "differentiable": False, "fused": None,
                          "decoupled_weight_decay": False, "params": [0]}],
    }
    opt = optim.Adam([p])
    opt.load_state_dict(sd)
    assert opt.param_groups[0]["lr"] == 0.05 and opt.param_groups[0]["betas"] == (0.8, 0.9)
    p.grad = ember.tensor([0.5, 0.5, -1.0])
    opt.step()
    s = {"step": 2, "exp_avg": np.array([0.1, 0.2, 0.3]), "exp_avg_sq": np.array([0.01, 0.02, 0.03])}
    want = ref_adam(np.array([1.0, -2.0, 3.0]), np.array([0.5, 0.5, -1.0]), s,
                    {"lr": 0.05, "betas": (0.8, 0.9)})
    np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-6)
    assert float(opt.state[p]["step"]) == 3
    # an old-style float step is turned into a tensor
    sd["state"][0]["step"] = 2.0
    opt.load_state_dict(sd)
    assert isinstance(opt.state[p]["step"], ember.Tensor)


def _torch_script(src):
    if TORCH_PY is None:
        pytest.skip("PyTorch is not installed")
    r = subprocess.run([TORCH_PY, "-c", src], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=""), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


INTEROP = [
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.01}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5}),
    ("NAdam", {"lr": 0.01, "decoupled_weight_decay": True, "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.01}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1}),
    ("Adadelta", {}),
    ("Adamax", {"lr": 0.01}),
]
INTEROP_SHAPES = [(3, 4), (5,)]


def test_state_dict_interop_with_pytorch(tmp_path):
    """For each optimizer: PyTorch runs 3 steps and saves its state_dict as arrays; ember
    loads it, both run 2 more steps, the parameters agree. Then the reverse: PyTorch loads
    ember's state_dict and both take one more step."""
    import pickle

    src = f"""
import numpy as np, torch, pickle
results = []
for name, opts in {INTEROP!r}:
    rng = np.random.default_rng(0)
    params = [torch.tensor(rng.standard_normal(s), requires_grad=True) for s in {INTEROP_SHAPES!r}]
    opt = getattr(torch.optim, name)(params, **opts)
    def run(n):
        for _ in range(n):
            for p in params:
                p.grad = torch.tensor(rng.standard_normal(tuple(p.shape)))
            opt.step()
    run(3)
    sd = opt.state_dict()
    conv = lambda v: ("T", v.detach().numpy().copy(), str(v.dtype)) if torch.is_tensor(v) else v
    out = {{"state": {{k: {{kk: conv(vv) for kk, vv in st.items()}} for k, st in sd["state"].items()}},
           "param_groups": sd["param_groups"], "params": [p.detach().numpy().copy() for p in params]}}
    run(2)
    out["final"] = [p.detach().numpy().copy() for p in params]
    results.append(out)
with open({str(tmp_path / "torch.pkl")!r}, "wb") as f:
    pickle.dump(results, f)
"""
    _torch_script(src)
    with open(tmp_path / "torch.pkl", "rb") as f:
        results = pickle.load(f)

    def conv(v):
        if isinstance(v, tuple) and len(v) == 3 and v[0] == "T":
            return ember.tensor(v[1], dtype=getattr(ember, v[2].split(".")[1]))
        return v

    g = np.random.default_rng(5).standard_normal((2, 12))
    last_grads = [g[0].reshape(3, 4), g[1][:5]]
    exported, ember_final = [], []
    for (name, opts), out in zip(INTEROP, results):
        sd = {"state": {k: {kk: conv(vv) for kk, vv in st.items()}
                        for k, st in out["state"].items()},
              "param_groups": out["param_groups"]}
        params = [ember.tensor(a, requires_grad=True) for a in out["params"]]
        opt = getattr(optim, name)(params, **opts)
        opt.load_state_dict(sd)
        rng = np.random.default_rng(0)
        for shape in INTEROP_SHAPES:  # replay the generator to the same point
            rng.standard_normal(shape)
        for _ in range(3):
            for p in params:
                rng.standard_normal(tuple(p.shape))
        for _ in range(2):
            for p in params:
                p.grad = ember.tensor(rng.standard_normal(tuple(p.shape)))
            opt.step()
        for p, want in zip(params, out["final"]):
            np.testing.assert_allclose(_to_np(p), want, rtol=1e-9, atol=1e-12, err_msg=name)
        esd = opt.state_dict()
        exported.append({
            "state": {k: {kk: (("T", vv.numpy().copy(), str(vv.dtype).split(".")[1])
                               if isinstance(vv, ember.Tensor) else vv) for kk, vv in st.items()}
                      for k, st in esd["state"].items()},
            "param_groups": esd["param_groups"], "params": [_to_np(p) for p in params]})
        for p, gi in zip(params, last_grads):
            p.grad = ember.tensor(gi)
        opt.step()
        ember_final.append([_to_np(p) for p in params])
    with open(tmp_path / "ember.pkl", "wb") as f:
        pickle.dump(exported, f)
    src2 = f"""
import numpy as np, torch, pickle
with open({str(tmp_path / "ember.pkl")!r}, "rb") as f:
    exported = pickle.load(f)
conv = lambda v: torch.tensor(v[1], dtype=getattr(torch, v[2])) if isinstance(v, tuple) and len(v) == 3 and v[0] == "T" else v
g = np.random.default_rng(5).standard_normal((2, 12))
out = []
for (name, opts), d in zip({INTEROP!r}, exported):
    params = [torch.tensor(a, requires_grad=True) for a in d["params"]]
    opt = getattr(torch.optim, name)(params, **opts)
    opt.load_state_dict({{"state": {{k: {{kk: conv(vv) for kk, vv in st.items()}} for k, st in d["state"].items()}},
                         "param_groups": d["param_groups"]}})
    for p, gi in zip(params, [g[0].reshape(3, 4), g[1][:5]]):
        p.grad = torch.tensor(gi)
    opt.step()
    out.append([p.detach().numpy().tolist() for p in params])
print(repr(out))
"""
    res = eval(_torch_script(src2).strip().splitlines()[-1])
    for (name, _), mine, theirs in zip(INTEROP, ember_final, res):
        for a, b in zip(mine, theirs):
            np.testing.assert_allclose(a, np.array(b), rtol=1e-9, atol=1e-12, err_msg=name)


# ---- LBFGS ---------------------------------------------------------------------------------


def _rosenbrock(xy):
    x, y = xy[0], xy[1]
    return (1 - x) ** 2 + 100 * (y - x ** 2) ** 2


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_rosenbrock(line_search_fn):
    xy = ember.tensor([-1.5, 2.0], dtype=ember.float64, requires_grad=True)
    lr = 1.0 if line_search_fn else 0.1
    opt = optim.LBFGS([xy], lr=lr, max_iter=50, history_size=10, line_search_fn=line_search_fn)

    def closure():
        opt.zero_grad()
        loss = _rosenbrock(xy)
        loss.backward()
        return loss

    for _ in range(40 if line_search_fn else 200):
        opt.step(closure)
    np.testing.assert_allclose(xy.detach().numpy(), [1.0, 1.0], atol=1e-4)
    st = opt.state[xy]
    assert st["func_evals"] > 0 and st["n_iter"] > 0


def test_lbfgs_matches_pytorch():
    """Same iterates as torch.optim.LBFGS on a quadratic + quartic problem."""
    src = r"""
import torch
for ls in [None, "strong_wolfe"]:
    x = torch.tensor([-1.5, 2.0, 0.5], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([x], lr=0.5 if ls is None else 1, max_iter=7, history_size=3, line_search_fn=ls)
    def closure():
        opt.zero_grad()
        l = ((x - 1) ** 2).sum() + (x ** 4).sum() * 0.1 + x[0] * x[1]
        l.backward()
        return l
    for _ in range(3):
        opt.step(closure)
    print(repr(x.detach().tolist()))
"""
    want = [eval(line) for line in _torch_script(src).strip().splitlines()]
    for ls, w in zip([None, "strong_wolfe"], want):
        x = ember.tensor([-1.5, 2.0, 0.5], dtype=ember.float64, requires_grad=True)
        opt = optim.LBFGS([x], lr=0.5 if ls is None else 1, max_iter=7, history_size=3,
                          line_search_fn=ls)

        def closure(x=x, opt=opt):
            opt.zero_grad()
            loss = ((x - 1) ** 2).sum() + (x ** 4).sum() * 0.1 + x[0] * x[1]
            loss.backward()
            return loss

        for _ in range(3):
            opt.step(closure)
        np.testing.assert_allclose(x.detach().numpy(), w, rtol=1e-9, atol=1e-12)


def test_lbfgs_errors():
    p = ember.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        optim.LBFGS([{"params": [p]}, {"params": [ember.zeros(1, requires_grad=True)]}])
    opt = optim.LBFGS([p], line_search_fn="bogus")

    def closure():
        opt.zero_grad()
        loss = ((p - 1) ** 2).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)


def test_matches_pytorch_trajectories():
    """Every optimizer's parameters after 5 steps agree with PyTorch's (float64)."""
    configs = [(name, CASES[name][2][j]) for name in CASES for j in (0, len(CASES[name][2]) - 1)]
    src = f"""
import numpy as np, torch
configs = {configs!r}
out = []
for name, opts in configs:
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in {SHAPES!r}]
    params = [torch.tensor(a, requires_grad=True) for a in arrays]
    opt = getattr(torch.optim, name)(params, **opts)
    for _ in range(5):
        for p in params:
            p.grad = torch.tensor(rng.standard_normal(tuple(p.shape)))
        opt.step()
    out.append([p.detach().numpy().ravel().tolist() for p in params])
print(repr(out))
"""
    res = eval(_torch_script(src).strip().splitlines()[-1])
    for (name, opts), want in zip(configs, res):
        _, params, _, _ = _run(name, opts, "cpu")
        for p, w in zip(params, want):
            np.testing.assert_allclose(_to_np(p).ravel(), w, rtol=1e-9, atol=1e-12,
                                       err_msg=f"{name} {opts}")


def test_warns_nothing_on_plain_use():
    p = ember.zeros(2, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt = optim.AdamW([p])
        p.grad = ember.ones(2)
        opt.step()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


@pytest.mark.parametrize("name,kw", [
    ("SGD", {"lr": 0.05, "momentum": 0.9}), ("Adam", {"lr": 0.05}), ("AdamW", {"lr": 0.05}),
    ("Adamax", {"lr": 0.1}), ("NAdam", {"lr": 0.05}), ("RAdam", {"lr": 0.05}),
    ("RMSprop", {"lr": 0.01}), ("Adagrad", {"lr": 0.5}), ("Adadelta", {"lr": 5.0}),
])
def test_trains_least_squares(name, kw):
    """End to end with autograd: fitting a linear model drives the loss down."""
    rng = np.random.default_rng(0)
    X = ember.tensor(rng.standard_normal((64, 5)), dtype=ember.float32)
    w_true = ember.tensor(rng.standard_normal((5, 1)), dtype=ember.float32)
    y = X @ w_true
    w = ember.zeros(5, 1, requires_grad=True)
    b = ember.zeros(1, requires_grad=True)
    opt = getattr(optim, name)([w, b], **kw)

    def loss_fn():
        return ((X @ w + b - y) ** 2).mean()

    first = float(loss_fn())
    for _ in range(150):
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        opt.step()
    assert float(loss_fn()) < 0.05 * first, (name, first, float(loss_fn()))


def test_fused_step_releases_the_gil():
    """While a fused step runs in one thread, another Python thread runs. The switch interval
    is longer than the whole test, so the counting thread only ever gets the GIL when the
    stepping thread gives it up: a step that held it would leave the count at 0."""
    import threading
    import time

    n = 4_000_000
    p, g, m, v = (ember.zeros(n) for _ in range(4))
    steps = [ember.zeros(())]
    kw = dict(lr=1e-3, beta1=0.9, beta2=0.999, weight_decay=0.0, eps=1e-8, amsgrad=False,
              maximize=False, decoupled_weight_decay=False)
    started, finished = threading.Event(), threading.Event()

    def work():
        started.set()
        for _ in range(5):
            _C._adam_step_([p], [g], [m], [v], [], steps, **kw)
        finished.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(30)
    try:
        t = threading.Thread(target=work)
        t.start()
        started.wait()
        count = 0
        while not finished.is_set():
            count += 1
            time.sleep(0.0005)  # hands the GIL back to the stepping thread
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert float(steps[0]) == 5
    assert count > 0


@pytest.mark.parametrize("name", ["Adam", "RMSprop", "Adagrad"])
def test_duplicate_params_update_in_order(name):
    """A parameter listed twice (PyTorch warns but allows it) is updated twice, in order,
    sharing its state, as PyTorch's loop does; the fused kernel runs serially then."""
    cls, ref, grid = CASES[name]
    opts = grid[-1]
    rng = np.random.default_rng(4)
    a_np, b_np = rng.standard_normal(50000), rng.standard_normal(7)
    a, b = ember.tensor(a_np, requires_grad=True), ember.tensor(b_np, requires_grad=True)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        opt = cls([a, b, a], **opts)
    sa, sb = {}, {}
    for _ in range(3):
        ga, gb = rng.standard_normal(50000), rng.standard_normal(7)
        a.grad, b.grad = ember.tensor(ga), ember.tensor(gb)
        opt.step()
        a_np = ref(a_np, ga, sa, opts)
        b_np = ref(b_np, gb, sb, opts)
        a_np = ref(a_np, ga, sa, opts)
    np.testing.assert_allclose(_to_np(a), a_np, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_to_np(b), b_np, rtol=1e-10, atol=1e-12)
