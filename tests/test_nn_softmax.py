"""Fused softmax / log_softmax / softmin (ember.softmax, Tensor.softmax, F.*) against
NumPy and against the composite exp/sum formula, gradients included, at extreme
logits (+-1e4, -inf masks), over dims, dtypes and non-contiguous inputs."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck


def t(a, dtype=ember.float64, device="cpu", rg=False):
    x = ember.tensor(np.asarray(a), dtype=dtype, device=device)
    return x.requires_grad_(rg) if rg else x


def np_softmax(a, dim):
    m = np.max(a, axis=dim, keepdims=True, initial=-np.inf)
    e = np.exp(a - m)
    return e / e.sum(axis=dim, keepdims=True)


def np_log_softmax(a, dim):
    m = np.max(a, axis=dim, keepdims=True, initial=-np.inf)
    return a - m - np.log(np.exp(a - m).sum(axis=dim, keepdims=True))


@pytest.mark.parametrize("shape,dim", [((5,), 0), ((3, 7), 1), ((3, 7), 0), ((2, 3, 4), 1),
                                       ((2, 3, 4), -1), ((2, 300, 5), 1), ((4, 1000), 1),
                                       ((2, 0, 3), 1), ((2, 3, 0), 1)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_forward_matches_numpy(shape, dim, dtype, device):
    a = np.random.default_rng(0).normal(size=shape) * 5
    x = t(a, getattr(ember, dtype), device)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(ember.softmax(x, dim).cpu().numpy(), np_softmax(a, dim), atol=tol,
                               rtol=tol)
    np.testing.assert_allclose(ember.log_softmax(x, dim).cpu().numpy(), np_log_softmax(a, dim),
                               atol=tol * 10, rtol=tol)
    np.testing.assert_allclose(x.softmax(dim).cpu().numpy(), np_softmax(a, dim), atol=tol)
    np.testing.assert_allclose(F.softmin(x, dim).cpu().numpy(), np_softmax(-a, dim), atol=tol)


def test_zero_dim_and_dtype_arg(device):
    x = t(3.0, device=device)
    assert ember.softmax(x, 0).item() == 1.0
    assert ember.log_softmax(x, 0).item() == 0.0
    h = t([[1.0, 2.0], [3.0, 5.0]], ember.float32, device)
    r = ember.softmax(h, 1, dtype=ember.float64)
    assert r.dtype == ember.float64
    assert F.log_softmax(h, 1, dtype=ember.float64).dtype == ember.float64


def test_extreme_logits_forward_and_grad(device):
    a = np.array([[1e4, -1e4, 0.0, 1e4], [-np.inf, 0.0, 1.0, -np.inf], [-1e4, -1e4, -1e4, -1e4]])
    x = t(a, device=device, rg=True)
    y = ember.softmax(x, 1)
    assert np.isfinite(y.detach().cpu().numpy()).all()
    np.testing.assert_allclose(y.detach().cpu().numpy(), np_softmax(a, 1), atol=1e-12)
    ls = ember.log_softmax(x, 1)
    np.testing.assert_allclose(ls.detach().cpu().numpy(), np_log_softmax(a, 1), atol=1e-9)
    w = t(np.random.default_rng(1).normal(size=a.shape), device=device)
    (y * w).sum().backward()
    g_fused = x.grad.cpu().numpy()
    # composite: exp(x - max) / sum, through recorded ops
    x2 = t(a, device=device, rg=True)
    m = x2.amax(1, keepdim=True).detach()
    e = (x2 - m).exp()
    (e / e.sum(1, keepdim=True) * w).sum().backward()
    np.testing.assert_allclose(g_fused, x2.grad.cpu().numpy(), atol=1e-12)
    assert np.isfinite(g_fused).all()


def test_log_softmax_grad_with_neg_inf_mask(device):
    a = np.array([[0.5, -np.inf, 2.0], [1.0, 1.0, -np.inf]])
    x = t(a, device=device, rg=True)
    y = ember.log_softmax(x, 1)
    w = t([[1.0, 0.0, 1.0], [1.0, 1.0, 0.0]], device=device)
    (y * w).sum().backward()
    p = np_softmax(a, 1)
    wn = w.cpu().numpy()
    expected = wn - p * wn.sum(1, keepdims=True)
    np.testing.assert_allclose(x.grad.cpu().numpy(), expected, atol=1e-12)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("shape,dim", [((4,), 0), ((3, 5), 1), ((2, 3, 4), 1), ((2, 3, 4), 0)])
def test_gradcheck(log, shape, dim, device):
    x = t(np.random.default_rng(2).normal(size=shape), device=device, rg=True)
    f = (lambda v: ember.log_softmax(v, dim)) if log else (lambda v: ember.softmax(v, dim))
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


def test_non_contiguous(device):
    a = np.random.default_rng(3).normal(size=(6, 8))
    x = t(a, device=device).t()
    np.testing.assert_allclose(ember.softmax(x, 1).cpu().numpy(), np_softmax(a.T, 1), atol=1e-12)
    xs = t(a, device=device)[:, ::2]
    np.testing.assert_allclose(ember.log_softmax(xs, 0).cpu().numpy(),
                               np_log_softmax(a[:, ::2], 0), atol=1e-12)


def test_large_rows_threaded(device):
    a = np.random.default_rng(4).normal(size=(512, 1000)).astype(np.float32)
    x = t(a, ember.float32, device)
    np.testing.assert_allclose(ember.softmax(x, 1).cpu().numpy(), np_softmax(a, 1), atol=1e-6)
    np.testing.assert_allclose(ember.softmax(x, 0).cpu().numpy(), np_softmax(a, 0), atol=1e-6)


def test_node_names(device):
    x = t([1.0, 2.0], device=device, rg=True)
    assert ember.softmax(x, 0).grad_fn.name() == "SoftmaxBackward0"
    assert ember.log_softmax(x, 0).grad_fn.name() == "LogSoftmaxBackward0"


def test_errors(device):
    x = t([[1.0, 2.0]], device=device)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.softmax(x, 2)
    with pytest.raises(RuntimeError, match="not implemented for 'int64'"):
        ember.softmax(ember.tensor([1, 2], device=device), 0)
    with pytest.raises(TypeError, match="dim"):
        ember.softmax(x)
    with pytest.warns(UserWarning, match="Implicit dimension"):
        F.softmax(x)


def test_implicit_dim_like_torch(device):
    x = t(np.ones((2, 3)), device=device)
    with pytest.warns(UserWarning):
        r = F.softmax(x)
    np.testing.assert_allclose(r.cpu().numpy(), np.full((2, 3), 1 / 3))


def test_float32_accuracy_over_the_exp_range(device):
    # the float kernels use a polynomial exp: compare with float64 over its whole range
    a = np.linspace(-100, 100, 4001).astype(np.float32).reshape(1, -1)
    got = ember.softmax(t(a, ember.float32, device), 1).cpu().numpy().astype(np.float64)
    ref = np_softmax(a.astype(np.float64), 1)
    big = ref > 1e-30
    # (x - max) rounds to float32 first: ~|x - max| * 2^-24 relative error at the far end
    np.testing.assert_allclose(got[big], ref[big], rtol=1e-5)
    assert (got[~big] < 1e-30).all()
    ls = ember.log_softmax(t(a, ember.float32, device), 1).cpu().numpy()
    np.testing.assert_allclose(ls, np_log_softmax(a.astype(np.float64), 1), rtol=1e-6, atol=1e-4)
    x = np.array([[-np.inf, 0.0, 80.0, np.nan]], dtype=np.float32)
    r = ember.softmax(t(x[:, :3], ember.float32, device), 1).cpu().numpy()
    np.testing.assert_allclose(r, [[0.0, np.exp(-80.0), 1.0]], rtol=1e-5)
    # results below float32's smallest normal (exp(-87.3)) are subnormals, as in PyTorch
    tiny = ember.softmax(t([0.0, 100.0], ember.float32, device), 0)[0].item()
    assert tiny == float(np.float32(np.exp(-100.0)))
    assert np.isnan(ember.softmax(t(x, ember.float32, device), 1).cpu().numpy()).all()


def test_backward_with_expanded_grad(device):
    x = t(np.random.default_rng(5).normal(size=(3, 4)), device=device, rg=True)
    y = ember.softmax(x, 1)
    y.backward(ember.ones(1, 4, dtype=ember.float64, device=device).expand(3, 4))
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.zeros((3, 4)), atol=1e-12)
    x.grad = None
    ember.log_softmax(x, 1).sum().backward()
    p = np_softmax(x.detach().cpu().numpy(), 1)
    np.testing.assert_allclose(x.grad.cpu().numpy(), 1 - 4 * p, atol=1e-12)
