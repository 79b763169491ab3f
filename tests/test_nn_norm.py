"""Normalization (batch/layer/group/instance norm fused kernels, rms_norm,
local_response_norm, and the modules) against NumPy, with running statistics,
momentum (None = cumulative average), eval mode, gradcheck/gradgradcheck and errors."""
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck


def t(a, dtype=ember.float64, device="cpu", rg=False):
    x = ember.tensor(np.asarray(a), dtype=dtype, device=device)
    return x.requires_grad_(rg) if rg else x


def np_bn(x, w, b, eps, mean=None, var=None):
    axes = (0,) + tuple(range(2, x.ndim))
    if mean is None:
        mean = x.mean(axis=axes)
        var = x.var(axis=axes)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    if w is not None:
        y = y * w.reshape(shape) + b.reshape(shape)
    return y


@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 4, 5)])
def test_batch_norm_training_and_running_stats(shape, device):
    rng = np.random.default_rng(0)
    x = rng.normal(size=shape) * 2 + 1
    C = shape[1]
    w, b = rng.uniform(0.5, 2, C), rng.normal(size=C)
    rm, rv = t(np.zeros(C), device=device), t(np.ones(C), device=device)
    out = F.batch_norm(t(x, device=device), rm, rv, t(w, device=device), t(b, device=device),
                       training=True, momentum=0.3, eps=1e-5)
    np.testing.assert_allclose(out.cpu().numpy(), np_bn(x, w, b, 1e-5), atol=1e-10)
    axes = (0,) + tuple(range(2, x.ndim))
    n = x.size // C
    np.testing.assert_allclose(rm.cpu().numpy(), 0.3 * x.mean(axis=axes), atol=1e-12)
    np.testing.assert_allclose(rv.cpu().numpy(), 0.7 + 0.3 * x.var(axis=axes) * n / (n - 1),
                               atol=1e-12)
    ev = F.batch_norm(t(x, device=device), rm, rv, t(w, device=device), t(b, device=device))
    np.testing.assert_allclose(ev.cpu().numpy(),
                               np_bn(x, w, b, 1e-5, rm.cpu().numpy(), rv.cpu().numpy()),
                               atol=1e-10)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_grad(training, affine, device):
    rng = np.random.default_rng(1)
    x = t(rng.normal(size=(4, 3, 2)), device=device, rg=True)
    w = t(rng.uniform(0.5, 2, 3), device=device, rg=True) if affine else None
    b = t(rng.normal(size=3), device=device, rg=True) if affine else None
    rm, rv = t(rng.normal(size=3), device=device), t(rng.uniform(0.5, 2, 3), device=device)
    inputs = (x, w, b) if affine else (x,)

    def f(*a):
        return F.batch_norm(a[0], rm.clone(), rv.clone(), *(a[1:] if affine else ()),
                            training=training)
    assert gradcheck(f, inputs)
    assert gradgradcheck(f, inputs)
    assert f(*inputs).grad_fn.name() == "NativeBatchNormBackward0"


def test_batch_norm_module(device):
    rng = np.random.default_rng(2)
    m = nn.BatchNorm1d(3, momentum=None)
    assert m.weight.tolist() == [1.0] * 3 and m.bias.tolist() == [0.0] * 3
    assert m.running_mean.tolist() == [0.0] * 3 and m.running_var.tolist() == [1.0] * 3
    assert m.num_batches_tracked.item() == 0 and m.num_batches_tracked.dtype == ember.int64
    xs = [rng.normal(size=(5, 3)).astype(np.float32) for _ in range(3)]
    for x in xs:
        m(t(x, ember.float32))
    assert m.num_batches_tracked.item() == 3
    # momentum=None: the cumulative average of the batch statistics
    np.testing.assert_allclose(m.running_mean.numpy(), np.mean([x.mean(0) for x in xs], 0),
                               atol=1e-6)
    np.testing.assert_allclose(m.running_var.numpy(), np.mean([x.var(0, ddof=1) for x in xs], 0),
                               atol=1e-6)
    m.eval()
    x = xs[0]
    np.testing.assert_allclose(m(t(x, ember.float32)).detach().numpy(),
                               np_bn(x, None, None, 1e-5, m.running_mean.numpy(),
                                     m.running_var.numpy()), atol=1e-5)
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3)(t(np.zeros((2, 3, 4))))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        nn.BatchNorm1d(3)(t(np.zeros((1, 3))))
    nt = nn.BatchNorm2d(3, affine=False, track_running_stats=False)
    assert nt.weight is None and nt.running_mean is None
    x4 = rng.normal(size=(2, 3, 4, 4))
    np.testing.assert_allclose(nt(t(x4)).numpy(), np_bn(x4, None, None, 1e-5), atol=1e-10)
    nt.eval()
    np.testing.assert_allclose(nt(t(x4)).numpy(), np_bn(x4, None, None, 1e-5), atol=1e-10)
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 4"):
        F.batch_norm(t(x4), t(np.zeros(4)), t(np.ones(4)))


def np_ln(x, k, w, b, eps):
    axes = tuple(range(x.ndim - k, x.ndim))
    y = (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)
    return y * w + b if w is not None else y


@pytest.mark.parametrize("shape,ns", [((4, 5), (5,)), ((2, 3, 4), (3, 4)), ((3, 1), (1,))])
def test_layer_norm(shape, ns, device):
    rng = np.random.default_rng(3)
    x = rng.normal(size=shape) * 3 + 2
    w, b = rng.uniform(0.5, 2, ns), rng.normal(size=ns)
    xt = t(x, device=device, rg=True)
    wt, bt = t(w, device=device, rg=True), t(b, device=device, rg=True)
    out = F.layer_norm(xt, ns, wt, bt, 1e-5)
    np.testing.assert_allclose(out.detach().cpu().numpy(), np_ln(x, len(ns), w, b, 1e-5),
                               atol=1e-10)
    f = lambda a, c, d: F.layer_norm(a, ns, c, d)  # noqa: E731
    assert gradcheck(f, (xt, wt, bt))
    assert gradgradcheck(f, (xt, wt, bt))
    assert gradcheck(lambda a: F.layer_norm(a, ns), (xt,))
    assert out.grad_fn.name() == "NativeLayerNormBackward0"


def test_layer_norm_module_and_errors(device):
    m = nn.LayerNorm(4)
    assert m.weight.tolist() == [1.0] * 4 and m.bias.tolist() == [0.0] * 4
    assert nn.LayerNorm(4, bias=False).bias is None
    assert nn.LayerNorm(4, elementwise_affine=False).weight is None
    x = np.random.default_rng(4).normal(size=(3, 4)).astype(np.float32)
    np.testing.assert_allclose(m(t(x, ember.float32)).detach().numpy(),
                               np_ln(x, 1, None, None, 1e-5), atol=1e-5)
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[5\], expected input with "
                                           r"shape \[\*, 5\], but got input of size\[3, 4\]"):
        F.layer_norm(t(x), (5,))
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape"):
        F.layer_norm(t(x), (4,), t(np.ones(3)))


@pytest.mark.parametrize("shape,G", [((2, 6, 5), 3), ((2, 4, 3, 3), 2), ((3, 4), 4)])
def test_group_norm(shape, G, device):
    rng = np.random.default_rng(5)
    x = rng.normal(size=shape) * 2
    C = shape[1]
    w, b = rng.uniform(0.5, 2, C), rng.normal(size=C)
    xg = x.reshape(shape[0], G, -1)
    y = (xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + 1e-5)
    cs = (1, C) + (1,) * (len(shape) - 2)
    exp = y.reshape(shape) * w.reshape(cs) + b.reshape(cs)
    xt = t(x, device=device, rg=True)
    wt, bt = t(w, device=device, rg=True), t(b, device=device, rg=True)
    np.testing.assert_allclose(F.group_norm(xt, G, wt, bt).detach().cpu().numpy(), exp,
                               atol=1e-10)
    f = lambda a, c, d: F.group_norm(a, G, c, d)  # noqa: E731
    assert gradcheck(f, (xt, wt, bt))
    assert gradgradcheck(f, (xt, wt, bt))
    m = nn.GroupNorm(G, C).to(ember.float64) if hasattr(nn.GroupNorm, "to") else None
    if m is not None:
        np.testing.assert_allclose(m(t(x)).detach().numpy(), y.reshape(shape), atol=1e-10)
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(t(np.zeros((2, 5, 3))), 2)
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
        nn.GroupNorm(2, 5)


def test_instance_norm(device):
    rng = np.random.default_rng(6)
    x = rng.normal(size=(2, 3, 5)) * 2 + 1
    y = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    xt = t(x, device=device, rg=True)
    np.testing.assert_allclose(F.instance_norm(xt).detach().cpu().numpy(), y, atol=1e-10)
    assert gradcheck(lambda a: F.instance_norm(a), (xt,))
    rm, rv = t(np.zeros(3), device=device), t(np.ones(3), device=device)
    F.instance_norm(t(x, device=device), rm, rv, momentum=0.5)
    np.testing.assert_allclose(rm.cpu().numpy(), 0.5 * x.mean(-1).mean(0), atol=1e-12)
    np.testing.assert_allclose(rv.cpu().numpy(), 0.5 + 0.5 * x.var(-1, ddof=1).mean(0),
                               atol=1e-12)
    m = nn.InstanceNorm1d(3)
    np.testing.assert_allclose(m(t(x)).numpy(), y, atol=1e-10)
    np.testing.assert_allclose(m(t(x[0])).numpy(), y[0], atol=1e-10)  # unbatched
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        m(t(np.zeros((1, 2, 3, 4))))
    with pytest.raises(ValueError, match="Expected more than 1 spatial element"):
        F.instance_norm(t(np.zeros((2, 3, 1))))
    m2 = nn.InstanceNorm2d(3, affine=True, track_running_stats=True)
    m2(t(rng.normal(size=(2, 3, 4, 4))))
    assert m2.num_batches_tracked is not None


def test_rms_norm_and_lrn(device):
    rng = np.random.default_rng(7)
    x = rng.normal(size=(3, 4))
    w = rng.uniform(0.5, 2, 4)
    xt, wt = t(x, device=device, rg=True), t(w, device=device, rg=True)
    exp = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(F.rms_norm(xt, (4,), wt, 1e-6).detach().cpu().numpy(), exp,
                               atol=1e-12)
    assert gradcheck(lambda a, b: F.rms_norm(a, (4,), b), (xt, wt))
    eps32 = np.finfo(np.float32).eps
    x32 = x.astype(np.float32)
    np.testing.assert_allclose(nn.RMSNorm(4)(t(x32, ember.float32)).detach().numpy(),
                               x32 / np.sqrt((x32 * x32).mean(-1, keepdims=True) + eps32),
                               rtol=1e-5)
    a = rng.normal(size=(2, 5, 3))
    size, alpha, beta, k = 3, 1e-2, 0.75, 2.0
    sq = np.pad(a * a, ((0, 0), (1, 1), (0, 0)))
    div = np.stack([sq[:, c:c + size].sum(1) for c in range(5)], 1) / size
    exp = a / (k + alpha * div) ** beta
    at = t(a, device=device, rg=True)
    np.testing.assert_allclose(F.local_response_norm(at, size, alpha, beta, k).detach().cpu().numpy(),
                               exp, atol=1e-12)
    assert gradcheck(lambda v: F.local_response_norm(v, 2, 0.1, 0.75, 1.0), (at,))
    np.testing.assert_allclose(nn.LocalResponseNorm(size, alpha, beta, k)(t(a)).numpy(), exp,
                               atol=1e-12)


def test_float32_accuracy_large_mean(device):
    x = (np.random.default_rng(8).normal(size=(8, 1000)) + 1e4).astype(np.float32)
    out = F.layer_norm(t(x, ember.float32, device), (1000,))
    ref = np_ln(x.astype(np.float64), 1, None, None, 1e-5)
    np.testing.assert_allclose(out.cpu().numpy(), ref, atol=2e-3)


def test_non_contiguous_inputs(device):
    rng = np.random.default_rng(9)
    a = rng.normal(size=(5, 4, 3))
    x = t(a, device=device).permute(2, 1, 0)  # (3, 4, 5), non-contiguous
    an = a.transpose(2, 1, 0)
    np.testing.assert_allclose(F.layer_norm(x, (5,)).cpu().numpy(), np_ln(an, 1, None, None, 1e-5),
                               atol=1e-10)
    np.testing.assert_allclose(F.batch_norm(x, None, None, training=True).cpu().numpy(),
                               np_bn(an, None, None, 1e-5), atol=1e-10)
    g = an.reshape(3, 2, -1)
    exp = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(an.shape)
    np.testing.assert_allclose(F.group_norm(x, 2).cpu().numpy(), exp, atol=1e-10)
    xg = t(a, device=device, rg=True)
    assert gradcheck(lambda v: F.layer_norm(v.permute(2, 1, 0), (5,)), (xg,))
    assert gradcheck(lambda v: F.batch_norm(v.permute(2, 1, 0), None, None, training=True), (xg,))
