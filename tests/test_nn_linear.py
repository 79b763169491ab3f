"""F.linear / F.bilinear and the Linear, Bilinear, Identity, Flatten, Unflatten modules:
NumPy references, leading dims, gradcheck, default init distributions and errors."""
import math

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck


def t(a, dtype=ember.float64, device="cpu", rg=False):
    x = ember.tensor(np.asarray(a), dtype=dtype, device=device)
    return x.requires_grad_(rg) if rg else x


@pytest.mark.parametrize("xshape", [(5,), (3, 5), (2, 3, 5), (2, 0, 5), (0, 5)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(xshape, bias, device):
    rng = np.random.default_rng(0)
    x, w, b = rng.normal(size=xshape), rng.normal(size=(4, 5)), rng.normal(size=4)
    xt, wt = t(x, device=device, rg=True), t(w, device=device, rg=True)
    bt = t(b, device=device, rg=True) if bias else None
    out = F.linear(xt, wt, bt)
    exp = x @ w.T + (b if bias else 0)
    assert tuple(out.shape) == exp.shape
    np.testing.assert_allclose(out.detach().cpu().numpy(), exp, atol=1e-12)
    if x.size:
        inputs = (xt, wt, bt) if bias else (xt, wt)
        f = (lambda a, c, d: F.linear(a, c, d)) if bias else (lambda a, c: F.linear(a, c))
        assert gradcheck(f, inputs)
        assert gradgradcheck(f, inputs)


def test_linear_node_and_noncontiguous(device):
    rng = np.random.default_rng(1)
    x = t(rng.normal(size=(3, 5)), device=device, rg=True)
    w = t(rng.normal(size=(4, 5)), device=device, rg=True)
    b = t(rng.normal(size=4), device=device, rg=True)
    assert F.linear(x, w, b).grad_fn.name() == "LinearBackward0"
    xn = t(rng.normal(size=(5, 3)), device=device).t()
    np.testing.assert_allclose(F.linear(xn, w, b).detach().cpu().numpy(),
                               xn.cpu().numpy() @ w.detach().cpu().numpy().T + b.detach().cpu().numpy(),
                               atol=1e-12)


def test_linear_errors(device):
    w = t(np.zeros((10, 784)), ember.float32, device)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(64x783 and 784x10\)"):
        F.linear(t(np.zeros((64, 783)), ember.float32, device), w)
    with pytest.raises(RuntimeError, match="mat1 and mat2 must have the same dtype"):
        F.linear(t(np.zeros((2, 784)), ember.float64, device), w)
    m = nn.Linear(784, 10)
    with pytest.raises(RuntimeError, match=r"^Linear\(in_features=784, out_features=10\) got "
                                           r"input of shape \[64, 783\]: the last dimension must "
                                           r"be 784$"):
        m(ember.zeros(64, 783))


def test_linear_module_init_distribution():
    ember.manual_seed(0)
    m = nn.Linear(400, 300)
    w = m.weight.detach().numpy()
    bound = 1 / math.sqrt(400)
    assert w.shape == (300, 400) and m.bias.shape == (300,)
    assert w.min() >= -bound and w.max() <= bound
    # U(-b, b): mean 0, variance b^2 / 3
    assert abs(w.mean()) < 0.01 * bound * 3
    assert w.var() == pytest.approx(bound**2 / 3, rel=0.02)
    assert np.abs(m.bias.detach().numpy()).max() <= bound
    assert m.weight.requires_grad and m.bias.requires_grad
    assert nn.Linear(3, 2, bias=False).bias is None
    assert m.extra_repr() == "in_features=400, out_features=300, bias=True"
    d = nn.Linear(3, 2, dtype=ember.float64)
    assert d.weight.dtype == ember.float64
    x = ember.randn(7, 3, dtype=ember.float64)
    np.testing.assert_allclose(d(x).detach().numpy(),
                               x.numpy() @ d.weight.detach().numpy().T + d.bias.detach().numpy(),
                               atol=1e-12)


def test_bilinear(device):
    rng = np.random.default_rng(2)
    x1, x2 = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 5))
    w, b = rng.normal(size=(6, 4, 5)), rng.normal(size=6)
    exp = np.einsum("...i,oij,...j->...o", x1, w, x2) + b
    a, c = t(x1, device=device, rg=True), t(x2, device=device, rg=True)
    wt, bt = t(w, device=device, rg=True), t(b, device=device, rg=True)
    np.testing.assert_allclose(F.bilinear(a, c, wt, bt).detach().cpu().numpy(), exp, atol=1e-12)
    assert gradcheck(F.bilinear, (a, c, wt, bt))
    assert gradgradcheck(F.bilinear, (a, c, wt, bt))
    m = nn.Bilinear(4, 5, 6)
    bound = 1 / math.sqrt(4)
    assert m.weight.shape == (6, 4, 5) and np.abs(m.weight.detach().numpy()).max() <= bound
    with pytest.raises(RuntimeError, match="input1 size does not match weight size"):
        F.bilinear(t(np.zeros((2, 3))), t(np.zeros((2, 5))), wt.detach())


def test_identity_flatten_unflatten(device):
    x = t(np.arange(24.0).reshape(2, 3, 4), device=device)
    assert nn.Identity(1, foo=2)(x) is x
    assert tuple(nn.Flatten()(x).shape) == (2, 12)
    assert tuple(nn.Flatten(0, 1)(x).shape) == (6, 4)
    assert tuple(nn.Unflatten(1, (3, 1))(x).shape) == (2, 3, 1, 4)
    np.testing.assert_array_equal(nn.Unflatten(2, (2, 2))(x).cpu().numpy(),
                                  np.arange(24.0).reshape(2, 3, 2, 2))
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints"):
        nn.Unflatten(1, (2.0, 2))


def test_mlp_step_trains():
    ember.manual_seed(1)
    l1, l2 = nn.Linear(20, 32, dtype=ember.float64), nn.Linear(32, 3, dtype=ember.float64)
    rng = np.random.default_rng(3)
    x = t(rng.normal(size=(64, 20)))
    y = ember.tensor(rng.integers(0, 3, 64))
    params = [l1.weight, l1.bias, l2.weight, l2.bias]
    losses = []
    for _ in range(30):
        loss = F.cross_entropy(l2(F.relu(l1(nn.Flatten()(x)))), y)
        for p in params:
            p.grad = None
        loss.backward()
        with ember.no_grad():
            for p in params:
                p -= 0.5 * p.grad
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0]
