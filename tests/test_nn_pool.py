"""Pooling (max/avg/adaptive/unpool, 1-d and 2-d) against NumPy loops, gradients
in float64 (gradcheck + gradgradcheck) and error paths."""
import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck


def t(a, device="cpu", dtype=ember.float64, grad=False):
    r = ember.tensor(np.asarray(a), dtype=dtype, device=device)
    return r.requires_grad_() if grad else r


def out_len(n, k, s, p, d, ceil):
    num = n + 2 * p - d * (k - 1) - 1
    o = (-(-num // s) if ceil else num // s) + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


def np_max_pool2d(x, k, s, p, d, ceil):
    N, C, H, W = x.shape
    oh, ow = out_len(H, k[0], s[0], p[0], d[0], ceil), out_len(W, k[1], s[1], p[1], d[1], ceil)
    out = np.full((N, C, oh, ow), -np.inf)
    idx = np.zeros((N, C, oh, ow), dtype=np.int64)
    for i in range(oh):
        for j in range(ow):
            best = None
            for a in range(k[0]):
                for b in range(k[1]):
                    h, w = i * s[0] - p[0] + a * d[0], j * s[1] - p[1] + b * d[1]
                    if 0 <= h < H and 0 <= w < W:
                        v = x[:, :, h, w]
                        if best is None:
                            best = v.copy()
                            idx[:, :, i, j] = h * W + w
                        else:
                            m = (v > best) | (np.isnan(v) & ~np.isnan(best))  # NaN wins
                            best = np.where(m, v, best)
                            idx[:, :, i, j] = np.where(m, h * W + w, idx[:, :, i, j])
            out[:, :, i, j] = best
    return out, idx


def np_avg_pool2d(x, k, s, p, ceil, cip, div=None):
    N, C, H, W = x.shape
    oh, ow = out_len(H, k[0], s[0], p[0], 1, ceil), out_len(W, k[1], s[1], p[1], 1, ceil)
    out = np.zeros((N, C, oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * s[0] - p[0], j * s[1] - p[1]
            h1, w1 = min(h0 + k[0], H + p[0]), min(w0 + k[1], W + p[1])
            size = (h1 - h0) * (w1 - w0)
            h0c, w0c, h1c, w1c = max(h0, 0), max(w0, 0), min(h1, H), min(w1, W)
            tot = x[:, :, h0c:h1c, w0c:w1c].sum(axis=(2, 3))
            dv = div if div else (size if cip else (h1c - h0c) * (w1c - w0c))
            out[:, :, i, j] = tot / dv
    return out


def np_adaptive(x, osz, fn):
    N, C, H, W = x.shape
    out = np.zeros((N, C) + tuple(osz))
    for i in range(osz[0]):
        for j in range(osz[1]):
            h0, h1 = (i * H) // osz[0], math.ceil((i + 1) * H / osz[0])
            w0, w1 = (j * W) // osz[1], math.ceil((j + 1) * W / osz[1])
            out[:, :, i, j] = fn(x[:, :, h0:h1, w0:w1], axis=(2, 3))
    return out


MAX_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(3, 2), stride=(2, 1), dilation=(1, 2)),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=2, stride=3, padding=1, ceil_mode=True),
]


def _norm(kw):
    k = kw["kernel_size"]
    k = (k, k) if isinstance(k, int) else k
    s = kw.get("stride", k)
    s = (s, s) if isinstance(s, int) else s
    p = kw.get("padding", 0)
    p = (p, p) if isinstance(p, int) else p
    d = kw.get("dilation", 1)
    d = (d, d) if isinstance(d, int) else d
    return k, s, p, d, kw.get("ceil_mode", False)


@pytest.mark.parametrize("kw", MAX_CASES)
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_max_pool2d(device, rng, kw, dtype):
    x = rng.standard_normal((2, 3, 9, 8))
    out, idx = F.max_pool2d(t(x, device, dtype), return_indices=True, **kw)
    ref, ridx = np_max_pool2d(x, *_norm(kw))
    np.testing.assert_allclose(out.cpu().numpy(), ref, rtol=1e-6)
    np.testing.assert_array_equal(idx.cpu().numpy(), ridx)
    assert idx.dtype == ember.int64


@pytest.mark.parametrize("kw", MAX_CASES[:3])
def test_max_pool2d_grad(device, rng, kw):
    x = t(rng.permutation(2 * 2 * 7 * 6).reshape(2, 2, 7, 6) / 10.0, device, grad=True)
    assert gradcheck(lambda a: F.max_pool2d(a, **kw), (x,))
    assert gradgradcheck(lambda a: F.max_pool2d(a, **kw), (x,))


def test_max_pool_nan_unbatched_and_1d(device, rng):
    x = np.array([[[1.0, np.nan, 3.0, 0.5]]])
    out = F.max_pool1d(t(x, device), 2)
    assert np.isnan(out.cpu().numpy()[0, 0, 0]) and out.cpu().numpy()[0, 0, 1] == 3.0
    x = rng.standard_normal((3, 10))
    out, idx = F.max_pool1d(t(x, device), 3, stride=2, padding=1, return_indices=True)
    ref, ridx = np_max_pool2d(x[None, :, None, :], (1, 3), (1, 2), (0, 1), (1, 1), False)
    np.testing.assert_allclose(out.cpu().numpy(), ref[0, :, 0])
    np.testing.assert_array_equal(idx.cpu().numpy(), ridx[0, :, 0])
    xe = t(rng.permutation(24).reshape(2, 2, 6) / 7.0, device, grad=True)
    assert gradgradcheck(lambda a: F.max_pool1d(a, 2, dilation=2), (xe,))
    x = rng.standard_normal((3, 6, 6))
    np.testing.assert_allclose(F.max_pool2d(t(x, device), 2).cpu().numpy(),
                               np_max_pool2d(x[None], (2, 2), (2, 2), (0, 0), (1, 1), False)[0][0])


AVG_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=2, divisor_override=3),
]


@pytest.mark.parametrize("kw", AVG_CASES)
def test_avg_pool2d(device, rng, kw):
    x = rng.standard_normal((2, 3, 7, 8))
    out = F.avg_pool2d(t(x, device), **kw)
    k, s, p, _, ceil = _norm(kw)
    ref = np_avg_pool2d(x, k, s, p, ceil, kw.get("count_include_pad", True),
                        kw.get("divisor_override"))
    np.testing.assert_allclose(out.cpu().numpy(), ref, atol=1e-12)
    xe = t(x[:1, :2], device, grad=True)
    assert gradcheck(lambda a: F.avg_pool2d(a, **kw), (xe,))
    assert gradgradcheck(lambda a: F.avg_pool2d(a, **kw), (xe,))


def test_avg_pool1d(device, rng):
    x = rng.standard_normal((2, 3, 11))
    out = F.avg_pool1d(t(x, device), 4, stride=3, padding=2, count_include_pad=False)
    ref = np_avg_pool2d(x[:, :, None, :], (1, 4), (1, 3), (0, 2), False, False)[:, :, 0]
    np.testing.assert_allclose(out.cpu().numpy(), ref, atol=1e-12)
    assert F.avg_pool1d(t(x[0], device), 2).shape == (3, 5)


@pytest.mark.parametrize("osz", [(1, 1), (3, 3), (4, 5), (7, 2)])
def test_adaptive_pools(device, rng, osz):
    x = rng.standard_normal((2, 3, 7, 9))
    np.testing.assert_allclose(F.adaptive_avg_pool2d(t(x, device), osz).cpu().numpy(),
                               np_adaptive(x, osz, np.mean), atol=1e-12)
    out, idx = F.adaptive_max_pool2d(t(x, device), osz, return_indices=True)
    np.testing.assert_allclose(out.cpu().numpy(), np_adaptive(x, osz, np.max))
    flat = x.reshape(2, 3, -1)
    np.testing.assert_allclose(np.take_along_axis(flat, idx.cpu().numpy().reshape(2, 3, -1), 2),
                               out.cpu().numpy().reshape(2, 3, -1))
    xe = t(x[:1, :1], device, grad=True)
    assert gradgradcheck(lambda a: F.adaptive_avg_pool2d(a, osz), (xe,))
    assert gradgradcheck(lambda a: F.adaptive_max_pool2d(a, osz), (xe,))


def test_adaptive_none_and_1d(device, rng):
    x = rng.standard_normal((2, 3, 7, 9))
    assert F.adaptive_avg_pool2d(t(x, device), (None, 4)).shape == (2, 3, 7, 4)
    assert F.adaptive_avg_pool2d(t(x, device), 5).shape == (2, 3, 5, 5)
    y = rng.standard_normal((2, 4, 10))
    np.testing.assert_allclose(F.adaptive_avg_pool1d(t(y, device), 3).cpu().numpy(),
                               np_adaptive(y[:, :, None], (1, 3), np.mean)[:, :, 0], atol=1e-12)
    np.testing.assert_allclose(F.adaptive_max_pool1d(t(y, device), 4).cpu().numpy(),
                               np_adaptive(y[:, :, None], (1, 4), np.max)[:, :, 0])


def test_global_average_pool_is_a_mean(device, rng):
    """Every output size 1 runs as a mean over the pooled dims, as PyTorch's (MeanBackward1),
    over a non-contiguous input and float32 too."""
    x = rng.standard_normal((3, 5, 6, 4))
    xe = t(x, device).transpose(2, 3)
    assert not xe.is_contiguous()
    y = F.adaptive_avg_pool2d(xe, 1)
    assert y.shape == (3, 5, 1, 1)
    np.testing.assert_allclose(y.cpu().numpy(), x.mean(axis=(2, 3), keepdims=True), atol=1e-12)
    y32 = F.adaptive_avg_pool2d(t(x, device, ember.float32), (1, 1))
    assert y32.dtype == ember.float32
    np.testing.assert_allclose(y32.cpu().numpy(), x.mean(axis=(2, 3), keepdims=True), atol=1e-6)
    np.testing.assert_allclose(F.adaptive_avg_pool1d(t(x[0], device), 1).cpu().numpy(),
                               x[0].mean(axis=2, keepdims=True), atol=1e-12)
    assert F.adaptive_avg_pool2d(t(np.zeros((0, 5, 3, 3)), device), 1).shape == (0, 5, 1, 1)
    xg = t(x[:2, :2], device, grad=True)
    assert type(F.adaptive_avg_pool2d(xg, 1).grad_fn).__name__ == "MeanBackward1"
    assert gradgradcheck(lambda a: F.adaptive_avg_pool2d(a, 1), (xg,))


def test_max_unpool2d(device, rng):
    x = rng.standard_normal((2, 3, 6, 6))
    out, idx = F.max_pool2d(t(x, device), 2, return_indices=True)
    un = F.max_unpool2d(out, idx, 2)
    assert un.shape == (2, 3, 6, 6)
    ref = np.zeros((2, 3, 36))
    np.put_along_axis(ref, idx.cpu().numpy().reshape(2, 3, -1), out.cpu().numpy().reshape(2, 3, -1), 2)
    np.testing.assert_allclose(un.cpu().numpy(), ref.reshape(2, 3, 6, 6))
    assert F.max_unpool2d(out, idx, 2, output_size=(7, 7)).shape == (2, 3, 7, 7)
    assert F.max_unpool2d(out, idx, 2, output_size=(2, 3, 7, 7)).shape == (2, 3, 7, 7)
    oe = out.detach().requires_grad_()
    assert gradgradcheck(lambda a: F.max_unpool2d(a, idx, 2), (oe,))
    o1, i1 = F.max_pool1d(t(x[0], device), 3, return_indices=True)
    assert F.max_unpool1d(o1, i1, 3).shape == (3, 6, 6)
    with pytest.raises(RuntimeError, match="invalid max index"):
        F.max_unpool2d(out, idx + 100, 2)
    with pytest.raises(ValueError, match="invalid output_size"):
        F.max_unpool2d(out, idx, 2, output_size=(9, 9))


def test_pool_errors():
    x = ember.zeros(1, 3, 2, 2)
    with pytest.raises(RuntimeError, match=r"input of shape \[1, 3, 2, 2\] is smaller than the "
                                           r"\(dilated\) kernel 3x3 along height"):
        F.max_pool2d(x, 3)
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool2d(ember.zeros(1, 1, 8, 8), 2, padding=2)
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.avg_pool2d(ember.zeros(1, 1, 8, 8), 2, padding=2)
    with pytest.raises(RuntimeError, match="stride must be greater than zero"):
        F.max_pool2d(ember.zeros(1, 1, 8, 8), 2, stride=0)
    with pytest.raises(RuntimeError, match=r"3-D \(unbatched\) or 4-D \(batched\)"):
        F.max_pool2d(ember.zeros(8, 8), 2)
    with pytest.raises(RuntimeError, match="non-zero spatial"):
        F.avg_pool2d(ember.zeros(1, 1, 0, 8), 2)
    with pytest.raises(RuntimeError, match="not implemented for"):
        F.max_pool2d(ember.zeros(1, 1, 4, 4, dtype=ember.int64), 2)
    with pytest.raises(RuntimeError, match="divisor_override must be non-zero"):
        F.avg_pool2d(ember.zeros(1, 1, 4, 4), 2, divisor_override=0)
    with pytest.raises(ValueError, match="output_size"):
        F.adaptive_avg_pool2d(ember.zeros(1, 1, 4, 4), (1, 2, 3))


def test_pool_modules(device, rng):
    import ember.nn as nn
    x = t(rng.standard_normal((2, 3, 8, 7)), device)
    m = nn.MaxPool2d(2)
    assert repr(m) == "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    np.testing.assert_array_equal(m(x).cpu().numpy(), F.max_pool2d(x, 2).cpu().numpy())
    out, idx = nn.MaxPool2d(3, 2, 1, return_indices=True, ceil_mode=True)(x)
    np.testing.assert_array_equal(idx.cpu().numpy(), F.max_pool2d(x, 3, 2, 1, ceil_mode=True,
                                                            return_indices=True)[1].cpu().numpy())
    np.testing.assert_array_equal(nn.MaxUnpool2d(3, 2, 1)(out, idx, output_size=x.shape).cpu().numpy(),
                                  F.max_unpool2d(out, idx, 3, 2, 1, output_size=x.shape).cpu().numpy())
    a = nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False, divisor_override=None)
    assert repr(a) == "AvgPool2d(kernel_size=3, stride=2, padding=1)"
    np.testing.assert_allclose(a(x).cpu().numpy(), F.avg_pool2d(x, 3, 2, 1,
                                                          count_include_pad=False).cpu().numpy())
    assert repr(nn.AdaptiveAvgPool2d((1, 1))) == "AdaptiveAvgPool2d(output_size=(1, 1))"
    assert nn.AdaptiveAvgPool2d((None, 2))(x).shape == (2, 3, 8, 2)
    o, i = nn.AdaptiveMaxPool2d(3, return_indices=True)(x)
    assert o.shape == i.shape == (2, 3, 3, 3)
    y = t(rng.standard_normal((2, 3, 10)), device)
    assert nn.MaxPool1d(3, stride=2)(y).shape == (2, 3, 4)
    assert repr(nn.AvgPool1d(3)) == "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"
    assert nn.AvgPool1d(3)(y).shape == (2, 3, 3)
    assert nn.AdaptiveAvgPool1d(4)(y).shape == (2, 3, 4)
    assert nn.AdaptiveMaxPool1d(4)(y).shape == (2, 3, 4)
    o1, i1 = nn.MaxPool1d(2, return_indices=True)(y)
    assert nn.MaxUnpool1d(2)(o1, i1).shape == (2, 3, 10)
    assert list(nn.MaxPool2d(2).parameters()) == []


# Note [Regular pooling windows] in backends/cpu/nn_pool.cpp: unpadded sliding windows take a
# vectorized path (window offsets outer, output columns inner); these cases pin it against the
# NumPy loops: overlapping windows (stride < kernel) whose gradients accumulate, dilation,
# widths the windows do not cover (the last column gets no gradient), NaN and ties, the reduced
# float types, a non-contiguous input and a batch large enough to split over threads.
REGULAR_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=1),
    dict(kernel_size=(2, 3), stride=(1, 2)),
    dict(kernel_size=2, stride=1, dilation=2),
    dict(kernel_size=(1, 5), stride=(1, 4)),
]


def _np_max_grad(x_shape, idx, g):
    N, C, H, W = x_shape
    gx = np.zeros((N, C, H * W))
    np.add.at(gx, (np.arange(N)[:, None, None], np.arange(C)[None, :, None],
                   idx.reshape(N, C, -1)), g.reshape(N, C, -1))
    return gx.reshape(x_shape)


@pytest.mark.parametrize("kw", REGULAR_CASES)
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_regular_windows_max(device, rng, kw, dtype):
    x = rng.standard_normal((3, 5, 11, 13))
    xe = t(x, device, dtype, grad=True)
    out, idx = F.max_pool2d(xe, return_indices=True, **kw)
    ref, ridx = np_max_pool2d(x, *_norm(kw))
    tol = 1e-6 if dtype == ember.float32 else 1e-12
    np.testing.assert_allclose(out.detach().cpu().numpy(), ref, rtol=tol)
    np.testing.assert_array_equal(idx.cpu().numpy(), ridx)
    g = rng.standard_normal(ref.shape)
    out.backward(t(g, device, dtype))
    np.testing.assert_allclose(xe.grad.cpu().numpy(), _np_max_grad(x.shape, ridx, g), rtol=tol,
                               atol=tol)


@pytest.mark.parametrize("kw", REGULAR_CASES[:4])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_regular_windows_avg(device, rng, kw, dtype):
    kw = {k: v for k, v in kw.items() if k != "dilation"}
    x = rng.standard_normal((3, 5, 11, 13))
    xe = t(x, device, dtype, grad=True)
    out = F.avg_pool2d(xe, **kw)
    k, s, p, _, ceil = _norm(kw)
    ref = np_avg_pool2d(x, k, s, p, ceil, True)
    tol = 1e-6 if dtype == ember.float32 else 1e-12
    np.testing.assert_allclose(out.detach().cpu().numpy(), ref, rtol=tol, atol=tol)
    # The adjoint: <avg(x), g> = <x, avg^T(g)> for every x, so the gradient is the linear map's
    # transpose, built here column by column from the NumPy forward.
    g = rng.standard_normal(ref.shape)
    out.backward(t(g, device, dtype))
    H, W = x.shape[2:]
    for h in range(H):
        for w in range(W):
            e = np.zeros((1, 1, H, W))
            e[0, 0, h, w] = 1.0
            col = np_avg_pool2d(e, k, s, p, ceil, True)[0, 0]
            np.testing.assert_allclose(xe.grad.cpu().numpy()[:, :, h, w],
                                       (col[None, None] * g).sum(axis=(2, 3)), rtol=tol,
                                       atol=tol)


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16])
def test_regular_windows_reduced_floats(device, rng, dtype):
    x32 = t(rng.standard_normal((2, 3, 8, 9)), device, ember.float32)
    xr = x32.to(dtype).requires_grad_()
    xf = xr.detach().float().requires_grad_()
    for f in (lambda a: F.max_pool2d(a, 2), lambda a: F.avg_pool2d(a, 3, stride=1)):
        a, b = f(xr), f(xf)
        np.testing.assert_allclose(a.float().detach().cpu().numpy(), b.detach().cpu().numpy(), rtol=1e-2,
                                   atol=1e-2)
        a.sum().backward()
        b.sum().backward()
        np.testing.assert_allclose(xr.grad.float().cpu().numpy(), xf.grad.cpu().numpy(), rtol=1e-2, atol=1e-2)
        xr.grad = xf.grad = None


def test_regular_windows_nan_ties_noncontiguous_threads(device, rng):
    x = np.zeros((1, 1, 4, 6))
    x[0, 0, 0, 1] = np.nan
    x[0, 0, 1, 0] = np.nan
    x[0, 0, 2:, 2:4] = 5.0  # a tie: the first in window order wins
    out, idx = F.max_pool2d(t(x, device), 2, return_indices=True)
    assert np.isnan(out.cpu().numpy()[0, 0, 0, 0]) and idx.cpu().numpy()[0, 0, 0, 0] == 1
    assert out.cpu().numpy()[0, 0, 1, 1] == 5.0 and idx.cpu().numpy()[0, 0, 1, 1] == 2 * 6 + 2
    y = rng.standard_normal((4, 6, 10, 12))
    ync = t(y, device).permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)  # channels-last
    assert not ync.is_contiguous()
    np.testing.assert_allclose(F.max_pool2d(ync, 2).cpu().numpy(),
                               np_max_pool2d(y, (2, 2), (2, 2), (0, 0), (1, 1), False)[0])
    np.testing.assert_allclose(F.avg_pool2d(ync, 2).cpu().numpy(),
                               np_avg_pool2d(y, (2, 2), (2, 2), (0, 0), False, True), atol=1e-12)
    big = rng.standard_normal((16, 32, 12, 12)).astype(np.float32)
    with_threads = ember.get_num_threads()
    try:
        res = []
        for n in (1, 2):
            ember.set_num_threads(n)
            xe = t(big, device, ember.float32, grad=True)
            F.max_pool2d(xe, 2).sum().backward()
            res.append((F.max_pool2d(xe, 2).detach().cpu().numpy(), xe.grad.cpu().numpy()))
        np.testing.assert_array_equal(res[0][0], res[1][0])
        np.testing.assert_array_equal(res[0][1], res[1][1])
    finally:
        ember.set_num_threads(with_threads)
    empty = t(np.zeros((0, 3, 4, 4)), device, grad=True)
    F.max_pool2d(empty, 2).sum().backward()
    assert empty.grad.shape == (0, 3, 4, 4)


PADDED_CASES = [  # sliding windows clipped at the borders (Note [Regular pooling windows])
    dict(kernel_size=3, stride=2, padding=1),  # ResNet's stem pool
    dict(kernel_size=3, stride=1, padding=1),
    dict(kernel_size=2, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, dilation=2),
    dict(kernel_size=(3, 5), stride=(2, 3), padding=(1, 2)),
    dict(kernel_size=4, stride=3, padding=2, ceil_mode=True),
    dict(kernel_size=5, stride=1, padding=2),  # more border columns than inner ones
]


@pytest.mark.parametrize("kw", PADDED_CASES)
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.bfloat16])
def test_padded_windows_max(device, rng, kw, dtype):
    # the inner columns take the vectorized walk, the clipped border ones the tables: both
    # must give NumPy's values and the first index of the maximum, NaN winning
    x = rng.standard_normal((2, 3, 9, 14))
    x[0, 0, 0, 0] = np.nan  # a NaN in a border window
    x[0, 1, 4, 7] = np.nan  # and in inner ones
    x[1, :, 3:6, 5:9] = 2.5  # ties spanning inner and border windows
    x[1, 2, :, -3:] = 4.0
    if dtype == ember.bfloat16:
        x = x.astype(np.float32)
    xe = t(x, device, dtype)
    out, idx = F.max_pool2d(xe, return_indices=True, **kw)
    ref, ridx = np_max_pool2d(t(x, "cpu", dtype).double().cpu().numpy(), *_norm(kw))
    np.testing.assert_array_equal(out.double().cpu().numpy(), ref)
    np.testing.assert_array_equal(idx.cpu().numpy(), ridx)
