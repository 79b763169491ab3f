"""gradcheck's fast_mode and autograd.grad(is_grads_batched=True)."""
import numpy as np
import pytest

import ember
from ember.autograd import GradcheckError, grad, gradcheck, gradgradcheck


def _x(device, *shape):
    return ember.randn(*shape, dtype=ember.float64, device=device, requires_grad=True)


def test_fast_mode_passes_correct_gradients(device):
    a, b = _x(device, 3, 4), _x(device, 4, 2)
    assert gradcheck(lambda a, b: (a @ b).sin(), (a, b), fast_mode=True)
    assert gradgradcheck(lambda a, b: (a @ b).sin(), (a, b), fast_mode=True)
    # non-contiguous input, several outputs
    c = _x(device, 4, 3).t()
    assert gradcheck(lambda c: (c.exp(), c * 2), (c,), fast_mode=True)


class _WrongGrad(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * g          # should be 2 * x * g


def test_fast_mode_catches_a_wrong_gradient(device):
    x = _x(device, 5)
    with pytest.raises(GradcheckError, match="fast_mode"):
        gradcheck(_WrongGrad.apply, (x,), fast_mode=True)
    assert gradcheck(_WrongGrad.apply, (x,), fast_mode=True, raise_exception=False) is False


def test_grads_batched_matches_one_vjp_per_row(device):
    x = _x(device, 3)
    y = x.exp() * ember.arange(3.0, dtype=ember.float64, device=device)
    eye = ember.eye(3, dtype=ember.float64, device=device)
    (jac,) = grad(y, x, eye, is_grads_batched=True)
    expected = np.diag(np.exp(x.detach().cpu().numpy()) * np.arange(3.0))
    np.testing.assert_allclose(jac.cpu().numpy(), expected, rtol=1e-12)
    # the graph is freed after the last row unless retained
    with pytest.raises(RuntimeError, match="second time"):
        y.sum().backward()


def test_grads_batched_two_inputs_and_create_graph(device):
    a, b = _x(device, 2), _x(device, 2)
    y = a * b
    gos = ember.randn(4, 2, dtype=ember.float64, device=device)
    ga, gb = grad(y, (a, b), gos, is_grads_batched=True, create_graph=True)
    assert ga.shape == (4, 2) and gb.shape == (4, 2)
    np.testing.assert_allclose(ga.detach().cpu().numpy(), (gos * b).detach().cpu().numpy())
    (ga.sum()).backward()          # differentiable because create_graph=True
    np.testing.assert_allclose(b.grad.cpu().numpy(), gos.sum(0).cpu().numpy())


def test_grads_batched_errors(device):
    x = _x(device, 3)
    y = x * 2
    with pytest.raises(RuntimeError, match="leading batch dimension"):
        grad(y, x, ember.tensor(1.0, dtype=ember.float64, device=device), is_grads_batched=True)
    with pytest.raises(RuntimeError, match="requires grad_outputs"):
        grad(y, x, is_grads_batched=True)
