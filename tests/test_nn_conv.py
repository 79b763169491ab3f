"""Convolutions (F.conv1d/2d/3d, conv_transpose, unfold/fold) against NumPy
references, gradients (gradcheck + gradgradcheck in float64) and error paths."""
import itertools

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

# ---- NumPy references ------------------------------------------------------------------------

def np_conv(x, w, b=None, stride=1, pad_lo=0, pad_hi=None, dil=1, groups=1):
    nsp = w.ndim - 2
    st = (stride,) * nsp if np.isscalar(stride) else tuple(stride)
    lo = (pad_lo,) * nsp if np.isscalar(pad_lo) else tuple(pad_lo)
    hi = lo if pad_hi is None else ((pad_hi,) * nsp if np.isscalar(pad_hi) else tuple(pad_hi))
    dl = (dil,) * nsp if np.isscalar(dil) else tuple(dil)
    xp = np.pad(x, [(0, 0), (0, 0)] + list(zip(lo, hi)))
    N, C = x.shape[:2]
    Co, Cg = w.shape[:2]
    ks = w.shape[2:]
    out_sp = [(xp.shape[2 + i] - dl[i] * (ks[i] - 1) - 1) // st[i] + 1 for i in range(nsp)]
    out = np.zeros((N, Co, *out_sp), dtype=np.float64)
    cog = Co // groups
    for g in range(groups):
        xs_g = xp[:, g * Cg:(g + 1) * Cg]
        for kidx in itertools.product(*[range(k) for k in ks]):
            sl = tuple(slice(kidx[i] * dl[i], kidx[i] * dl[i] + st[i] * (out_sp[i] - 1) + 1, st[i])
                       for i in range(nsp))
            xs = xs_g[(slice(None), slice(None)) + sl]
            wk = w[(slice(g * cog, (g + 1) * cog), slice(None)) + kidx]
            out[:, g * cog:(g + 1) * cog] += np.einsum("nc...,oc->no...", xs, wk)
    if b is not None:
        out += b.reshape((1, Co) + (1,) * nsp)
    return out


def np_conv_t(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dil=1):
    nsp = w.ndim - 2
    tup = lambda v: (v,) * nsp if np.isscalar(v) else tuple(v)  # noqa: E731
    st, pd, op, dl = tup(stride), tup(padding), tup(output_padding), tup(dil)
    N, Ci = x.shape[:2]
    cog = w.shape[1]
    ks = w.shape[2:]
    full = [(x.shape[2 + i] - 1) * st[i] + dl[i] * (ks[i] - 1) + 1 + op[i] for i in range(nsp)]
    out = np.zeros((N, cog * groups, *full))
    cig = Ci // groups
    for g in range(groups):
        xg = x[:, g * cig:(g + 1) * cig]
        for kidx in itertools.product(*[range(k) for k in ks]):
            sl = tuple(slice(kidx[i] * dl[i], kidx[i] * dl[i] + st[i] * (x.shape[2 + i] - 1) + 1,
                             st[i]) for i in range(nsp))
            wk = w[(slice(g * cig, (g + 1) * cig), slice(None)) + kidx]
            out[(slice(None), slice(g * cog, (g + 1) * cog)) + sl] += np.einsum(
                "nc...,co->no...", xg, wk)
    out = out[(slice(None), slice(None)) + tuple(slice(pd[i], full[i] - pd[i]) for i in range(nsp))]
    if b is not None:
        out = out + b.reshape((1, -1) + (1,) * nsp)
    return out


def t(a, device="cpu", dtype=ember.float64, grad=False):
    r = ember.tensor(np.asarray(a), dtype=dtype, device=device)
    return r.requires_grad_() if grad else r


# ---- forward -----------------------------------------------------------------------------------

CONV2D_CASES = [
    dict(),
    dict(stride=2),
    dict(stride=(2, 1), padding=(1, 2)),
    dict(padding=1, dilation=2),
    dict(groups=2),
    dict(stride=2, padding=1, dilation=(1, 2), groups=2),
]


@pytest.mark.parametrize("kw", CONV2D_CASES)
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_conv2d_matches_numpy(device, rng, kw, dtype):
    x = rng.standard_normal((3, 4, 9, 8))
    w = rng.standard_normal((6, 4 // kw.get("groups", 1), 3, 2))
    b = rng.standard_normal(6)
    got = F.conv2d(t(x, device, dtype), t(w, device, dtype), t(b, device, dtype), **kw)
    ref = np_conv(x, w, b, kw.get("stride", 1), kw.get("padding", 0), None, kw.get("dilation", 1),
                  kw.get("groups", 1))
    tol = 1e-4 if dtype == ember.float32 else 1e-10
    np.testing.assert_allclose(got.cpu().numpy(), ref, rtol=tol, atol=tol)


def test_conv1d_conv3d_match_numpy(device, rng):
    x = rng.standard_normal((2, 3, 11))
    w = rng.standard_normal((4, 3, 3))
    np.testing.assert_allclose(F.conv1d(t(x, device), t(w, device), stride=2, padding=1).numpy(),
                               np_conv(x, w, None, 2, 1), atol=1e-10)
    x = rng.standard_normal((2, 2, 5, 6, 4))
    w = rng.standard_normal((4, 1, 2, 3, 2))
    b = rng.standard_normal(4)
    got = F.conv3d(t(x, device), t(w, device), t(b, device), padding=(1, 0, 1), dilation=(2, 1, 1),
                   groups=2)
    np.testing.assert_allclose(got.numpy(), np_conv(x, w, b, 1, (1, 0, 1), None, (2, 1, 1), 2),
                               atol=1e-10)


def test_conv_padding_same_valid(device, rng):
    x = rng.standard_normal((2, 3, 7, 6))
    w = rng.standard_normal((5, 3, 4, 3))  # even kernel: asymmetric padding as torch
    got = F.conv2d(t(x, device), t(w, device), padding="same", dilation=(1, 2))
    assert got.shape == (2, 5, 7, 6)
    np.testing.assert_allclose(got.numpy(), np_conv(x, w, None, 1, (1, 2), (2, 2), (1, 2)),
                               atol=1e-10)
    got = F.conv2d(t(x, device), t(w, device), padding="valid")
    np.testing.assert_allclose(got.numpy(), np_conv(x, w), atol=1e-10)
    x1 = rng.standard_normal((1, 2, 10))
    w1 = rng.standard_normal((3, 2, 4))
    assert F.conv1d(t(x1), t(w1), padding="same").shape == (1, 3, 10)


def test_conv_unbatched_noncontiguous_and_empty(device, rng):
    x = rng.standard_normal((3, 8, 9))
    w = rng.standard_normal((4, 3, 3, 3))
    got = F.conv2d(t(x, device), t(w, device), padding=1)
    assert got.shape == (4, 8, 9)
    np.testing.assert_allclose(got.numpy(), np_conv(x[None], w, None, 1, 1)[0], atol=1e-10)
    # non-contiguous input and weight
    xt = t(x.transpose(0, 2, 1).copy(), device).transpose(1, 2)
    wt = t(w.transpose(1, 0, 2, 3).copy(), device).transpose(0, 1)
    np.testing.assert_allclose(F.conv2d(xt.unsqueeze(0), wt).numpy(), np_conv(x[None], w),
                               atol=1e-10)
    # empty batch
    r = F.conv2d(ember.zeros(0, 3, 5, 5, dtype=ember.float64), t(w, device))
    assert r.shape == (0, 4, 3, 3)


def test_conv_large_batch_chunks(device, rng):
    # enough columns to split the batch into several GEMM chunks
    x = rng.standard_normal((40, 16, 40, 40)).astype(np.float32)
    w = rng.standard_normal((8, 16, 3, 3)).astype(np.float32)
    got = F.conv2d(t(x, device, ember.float32), t(w, device, ember.float32)).numpy()
    ref = np_conv(x[:2].astype(np.float64), w.astype(np.float64))
    np.testing.assert_allclose(got[:2], ref, rtol=1e-4, atol=1e-3)
    ref = np_conv(x[-2:].astype(np.float64), w.astype(np.float64))
    np.testing.assert_allclose(got[-2:], ref, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1, output_padding=1),
                                dict(stride=(2, 3), dilation=2, groups=2, output_padding=(1, 0))])
def test_conv_transpose2d_matches_numpy(device, rng, kw):
    x = rng.standard_normal((2, 4, 5, 4))
    w = rng.standard_normal((4, 3, 3, 2))
    b = rng.standard_normal(3 * kw.get("groups", 1))
    got = F.conv_transpose2d(t(x, device), t(w, device), t(b, device), **kw)
    ref = np_conv_t(x, w, b, kw.get("stride", 1), kw.get("padding", 0),
                    kw.get("output_padding", 0), kw.get("groups", 1), kw.get("dilation", 1))
    np.testing.assert_allclose(got.numpy(), ref, atol=1e-10)


def test_conv_transpose1d_matches_numpy(device, rng):
    x = rng.standard_normal((2, 3, 6))
    w = rng.standard_normal((3, 2, 4))
    got = F.conv_transpose1d(t(x, device), t(w, device), stride=3, padding=1, output_padding=2)
    np.testing.assert_allclose(got.numpy(), np_conv_t(x, w, None, 3, 1, 2), atol=1e-10)


# ---- gradients ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1), dict(dilation=2, groups=2)])
def test_conv2d_gradcheck(device, rng, kw):
    x = t(rng.standard_normal((2, 4, 6, 5)), device, grad=True)
    w = t(rng.standard_normal((4, 4 // kw.get("groups", 1), 2, 3)), device, grad=True)
    b = t(rng.standard_normal(4), device, grad=True)
    fn = lambda x, w, b: F.conv2d(x, w, b, **kw)  # noqa: E731
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


def test_conv_grad_matches_numpy_adjoint(device, rng):
    # grad_input of conv = conv_transpose of grad_output; grad_weight by finite sums.
    x = rng.standard_normal((2, 3, 7, 7))
    w = rng.standard_normal((5, 3, 3, 3))
    gy = rng.standard_normal((2, 5, 3, 3))
    xe, we = t(x, device, grad=True), t(w, device, grad=True)
    F.conv2d(xe, we, stride=2).backward(t(gy, device))
    np.testing.assert_allclose(xe.grad.numpy(), np_conv_t(gy, w, None, 2, 0, 0), atol=1e-10)
    gw = np.zeros_like(w)
    for kh, kw in itertools.product(range(3), range(3)):
        xs = x[:, :, kh:kh + 5:2, kw:kw + 5:2]
        gw[:, :, kh, kw] = np.einsum("nchw,nohw->oc", xs, gy)
    np.testing.assert_allclose(we.grad.numpy(), gw, atol=1e-10)
    assert F.conv2d(xe, we).grad_fn.name() == "ConvolutionBackward0"


def test_conv1d_conv3d_transpose_gradcheck(device, rng):
    x = t(rng.standard_normal((2, 2, 7)), device, grad=True)
    w = t(rng.standard_normal((4, 1, 3)), device, grad=True)
    assert gradgradcheck(lambda x, w: F.conv1d(x, w, stride=2, groups=2, padding="valid"), (x, w))
    x = t(rng.standard_normal((1, 2, 3, 4, 3)), device, grad=True)
    w = t(rng.standard_normal((3, 2, 2, 2, 2)), device, grad=True)
    b = t(rng.standard_normal(3), device, grad=True)
    assert gradcheck(lambda x, w, b: F.conv3d(x, w, b, padding=1), (x, w, b))
    x = t(rng.standard_normal((2, 4, 3, 3)), device, grad=True)
    w = t(rng.standard_normal((4, 1, 3, 2)), device, grad=True)
    b = t(rng.standard_normal(2), device, grad=True)
    fn = lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, output_padding=1, groups=2)  # noqa
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))
    x = t(rng.standard_normal((2, 3, 5)), device, grad=True)
    w = t(rng.standard_normal((3, 2, 3)), device, grad=True)
    assert gradgradcheck(lambda x, w: F.conv_transpose1d(x, w, padding=1, dilation=2), (x, w))


def test_conv_same_padding_gradcheck(device, rng):
    x = t(rng.standard_normal((1, 2, 5, 4)), device, grad=True)
    w = t(rng.standard_normal((2, 2, 2, 3)), device, grad=True)
    assert gradgradcheck(lambda x, w: F.conv2d(x, w, padding="same"), (x, w))


# ---- unfold / fold -----------------------------------------------------------------------------

def np_unfold(x, k, d, p, s):
    xp = np.pad(x, [(0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])])
    N, C, H, W = xp.shape
    oh = (H - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (W - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((N, C, k[0], k[1], oh, ow))
    for i, j in itertools.product(range(k[0]), range(k[1])):
        out[:, :, i, j] = xp[:, :, i * d[0]:i * d[0] + s[0] * (oh - 1) + 1:s[0],
                             j * d[1]:j * d[1] + s[1] * (ow - 1) + 1:s[1]]
    return out.reshape(N, C * k[0] * k[1], oh * ow)


def test_unfold_fold(device, rng):
    x = rng.standard_normal((2, 3, 6, 7))
    kw = dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    u = F.unfold(t(x, device), **kw)
    ref = np_unfold(x, (2, 3), (1, 2), (1, 1), (2, 1))
    np.testing.assert_allclose(u.numpy(), ref, atol=1e-12)
    # fold is unfold's adjoint: <unfold(x), c> == <x, fold(c)>
    c = rng.standard_normal(ref.shape)
    f = F.fold(t(c, device), (6, 7), **kw).numpy()
    np.testing.assert_allclose((ref * c).sum(), (x * f).sum(), rtol=1e-10)
    xe = t(x, device, grad=True)
    assert gradgradcheck(lambda a: F.unfold(a, **kw), (xe,))
    ce = t(c, device, grad=True)
    assert gradgradcheck(lambda a: F.fold(a, (6, 7), **kw), (ce,))
    assert F.unfold(t(x[0], device), 2).shape == (12, 30)


def test_unfold_fold_errors():
    x = ember.zeros(1, 2, 3, 3)
    with pytest.raises(RuntimeError, match="sliding blocks"):
        F.unfold(x, 4)
    with pytest.raises(RuntimeError, match="divisible by the product of kernel_size"):
        F.fold(ember.zeros(1, 5, 4), (3, 3), 2)
    with pytest.raises(RuntimeError, match="calculated number of sliding blocks"):
        F.fold(ember.zeros(1, 8, 5), (3, 3), 2)


# ---- errors ------------------------------------------------------------------------------------

def test_conv_errors():
    x = ember.zeros(8, 4, 28, 28)
    w = ember.zeros(16, 3, 3, 3)
    with pytest.raises(RuntimeError, match=r"expected input with 3 channels .* got 4 channels "
                                           r"\(input shape \[8, 4, 28, 28\]\)"):
        F.conv2d(x, w)
    with pytest.raises(RuntimeError, match=r"input of shape \[1, 3, 2, 2\] is smaller than the "
                                           r"\(dilated\) kernel 3x3 along height \(padded size 2"):
        F.conv2d(ember.zeros(1, 3, 2, 2), w)
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input "
                                           r"to conv2d, but got input of size: \[3, 4\]"):
        F.conv2d(ember.zeros(3, 4), w)
    with pytest.raises(RuntimeError, match="bias to be 1-dimensional with 16 elements"):
        F.conv2d(ember.zeros(1, 3, 5, 5), w, ember.zeros(15))
    with pytest.raises(RuntimeError, match="non-positive stride"):
        F.conv2d(ember.zeros(1, 3, 5, 5), w, stride=0)
    with pytest.raises(RuntimeError, match="negative padding"):
        F.conv2d(ember.zeros(1, 3, 5, 5), w, padding=-1)
    with pytest.raises(RuntimeError, match="dilation should be greater than zero"):
        F.conv2d(ember.zeros(1, 3, 5, 5), w, dilation=0)
    with pytest.raises(RuntimeError, match="non-positive groups"):
        F.conv2d(ember.zeros(1, 3, 5, 5), w, groups=0)
    with pytest.raises(RuntimeError, match="divisible by 3 at dimension 0"):
        F.conv2d(ember.zeros(1, 9, 5, 5), ember.zeros(16, 3, 3, 3), groups=3)
    with pytest.raises(RuntimeError, match=r"input type \(float64\) and weight type \(float32\)"):
        F.conv2d(ember.zeros(1, 3, 5, 5, dtype=ember.float64), w)
    with pytest.raises(RuntimeError, match="not implemented for 'bool'"):
        F.conv2d(ember.zeros(1, 3, 5, 5, dtype=ember.bool), w.bool())
    with pytest.raises(RuntimeError, match="not supported for strided"):
        F.conv2d(ember.zeros(1, 3, 5, 5), w, stride=2, padding="same")
    with pytest.raises(RuntimeError, match="Invalid padding string"):
        F.conv2d(ember.zeros(1, 3, 5, 5), w, padding="full")
    with pytest.raises(RuntimeError, match="expected stride to be a single integer"):
        F.conv2d(ember.zeros(1, 3, 5, 5), w, stride=(1, 1, 1))
    with pytest.raises(TypeError):
        F.conv2d(ember.zeros(1, 3, 5, 5), w, stride=1.5)
    with pytest.raises(RuntimeError, match="output padding must be smaller"):
        F.conv_transpose2d(ember.zeros(1, 16, 5, 5), w, output_padding=1)
    with pytest.raises(RuntimeError, match="expected weight to be 3-, 4- or 5-dimensional"):
        F.conv2d(x, ember.zeros(3, 3))
