"""Convolutions (F.conv1d/2d/3d, conv_transpose, unfold/fold) against NumPy
references, gradients (gradcheck + gradgradcheck in float64) and error paths.

These test ember's own kernels: oneDNN (which would take many float32 cases) is switched
off here; tests/test_nn_conv_onednn.py tests it."""
import itertools
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from torch_python import TORCH_PY

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck


@pytest.fixture(autouse=True)
def _own_kernels():
    with ember.backends.mkldnn.flags(enabled=False):
        yield


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


def test_conv_1x1_uses_images_as_columns(device, rng):
    x = rng.standard_normal((3, 4, 5, 6))
    w = rng.standard_normal((6, 2, 1, 1))
    b = rng.standard_normal(6)
    got = F.conv2d(t(x, device), t(w, device), t(b, device), groups=2)
    np.testing.assert_allclose(got.cpu().numpy(), np_conv(x, w, b, groups=2), atol=1e-12)
    xe, we, be = t(x, device, grad=True), t(w, device, grad=True), t(b, device, grad=True)
    fn = lambda a, b_, c: F.conv2d(a, b_, c, groups=2)  # noqa: E731
    assert gradcheck(fn, (xe, we, be))
    assert gradgradcheck(fn, (xe, we, be))
    np.testing.assert_allclose(
        F.conv_transpose1d(t(x[:, :, 0], device), t(w[:4, :, :, 0].copy(), device),
                           groups=2).cpu().numpy(),
        np_conv_t(x[:, :, 0], w[:4, :, :, 0], None, groups=2), atol=1e-12)


def test_conv1d_conv3d_match_numpy(device, rng):
    x = rng.standard_normal((2, 3, 11))
    w = rng.standard_normal((4, 3, 3))
    np.testing.assert_allclose(F.conv1d(t(x, device), t(w, device), stride=2, padding=1).cpu().numpy(),
                               np_conv(x, w, None, 2, 1), atol=1e-10)
    x = rng.standard_normal((2, 2, 5, 6, 4))
    w = rng.standard_normal((4, 1, 2, 3, 2))
    b = rng.standard_normal(4)
    got = F.conv3d(t(x, device), t(w, device), t(b, device), padding=(1, 0, 1), dilation=(2, 1, 1),
                   groups=2)
    np.testing.assert_allclose(got.cpu().numpy(), np_conv(x, w, b, 1, (1, 0, 1), None, (2, 1, 1), 2),
                               atol=1e-10)


def test_conv_padding_same_valid(device, rng):
    x = rng.standard_normal((2, 3, 7, 6))
    w = rng.standard_normal((5, 3, 4, 3))  # even kernel: asymmetric padding as torch
    got = F.conv2d(t(x, device), t(w, device), padding="same", dilation=(1, 2))
    assert got.shape == (2, 5, 7, 6)
    np.testing.assert_allclose(got.cpu().numpy(), np_conv(x, w, None, 1, (1, 2), (2, 2), (1, 2)),
                               atol=1e-10)
    got = F.conv2d(t(x, device), t(w, device), padding="valid")
    np.testing.assert_allclose(got.cpu().numpy(), np_conv(x, w), atol=1e-10)
    x1 = rng.standard_normal((1, 2, 10))
    w1 = rng.standard_normal((3, 2, 4))
    assert F.conv1d(t(x1), t(w1), padding="same").shape == (1, 3, 10)


def test_conv_unbatched_noncontiguous_and_empty(device, rng):
    x = rng.standard_normal((3, 8, 9))
    w = rng.standard_normal((4, 3, 3, 3))
    got = F.conv2d(t(x, device), t(w, device), padding=1)
    assert got.shape == (4, 8, 9)
    np.testing.assert_allclose(got.cpu().numpy(), np_conv(x[None], w, None, 1, 1)[0], atol=1e-10)
    # non-contiguous input and weight
    xt = t(x.transpose(0, 2, 1).copy(), device).transpose(1, 2)
    wt = t(w.transpose(1, 0, 2, 3).copy(), device).transpose(0, 1)
    np.testing.assert_allclose(F.conv2d(xt.unsqueeze(0), wt).cpu().numpy(), np_conv(x[None], w),
                               atol=1e-10)
    # empty batch
    r = F.conv2d(ember.zeros(0, 3, 5, 5, dtype=ember.float64), t(w, device))
    assert r.shape == (0, 4, 3, 3)


def test_conv_large_batch_chunks(device, rng):
    # enough columns to split the batch into several GEMM chunks
    x = rng.standard_normal((40, 16, 40, 40)).astype(np.float32)
    w = rng.standard_normal((8, 16, 3, 3)).astype(np.float32)
    got = F.conv2d(t(x, device, ember.float32), t(w, device, ember.float32)).cpu().numpy()
    ref = np_conv(x[:2].astype(np.float64), w.astype(np.float64))
    np.testing.assert_allclose(got[:2], ref, rtol=1e-4, atol=1e-3)
    ref = np_conv(x[-2:].astype(np.float64), w.astype(np.float64))
    np.testing.assert_allclose(got[-2:], ref, rtol=1e-4, atol=1e-3)
    # one image per chunk (its columns exceed the chunk budget): the GEMM writes y directly
    x = rng.standard_normal((2, 64, 40, 40))
    w = rng.standard_normal((8, 32, 3, 3))
    b = rng.standard_normal(8)
    got = F.conv2d(t(x, device), t(w, device), t(b, device), padding=1, groups=2)
    np.testing.assert_allclose(got.cpu().numpy(), np_conv(x, w, b, 1, 1, None, 1, 2), atol=1e-9)
    xe, we, be = t(x, device, grad=True), t(w, device, grad=True), t(b, device, grad=True)
    gy = rng.standard_normal((2, 8, 40, 40))
    F.conv2d(xe, we, be, padding=1, groups=2).backward(t(gy, device))
    np.testing.assert_allclose(be.grad.cpu().numpy(), gy.sum(axis=(0, 2, 3)), atol=1e-9)
    np.testing.assert_allclose(xe.grad.cpu().numpy()[:, :32], np_conv_t(gy[:, :4], w[:4], None, 1, 1),
                               atol=1e-9)


@pytest.mark.parametrize("case", [
    ((5, 4, 9, 11), (6, 4, 3, 3), dict(padding=1)),
    ((20, 6, 8, 7), (4, 3, 2, 3), dict(stride=(2, 1), dilation=(1, 2), groups=2, padding=(1, 2))),
    ((3, 1, 28, 28), (16, 1, 3, 3), dict(stride=2, padding=1)),
    ((17, 2, 13), (3, 2, 4), dict(padding=2)),
    ((2, 2, 4, 5, 6), (3, 2, 2, 3, 2), dict(padding=(1, 0, 1))),
])
def test_conv_per_image_path_matches_chunk_path(device, rng, case):
    # float32/64 with the BLAS: one task per image (Note [Convolution per image]); with the
    # BLAS off: the batch-chunk path. Values and every gradient subset agree; the weight
    # gradient's slab sums do not depend on the thread count.
    xs, ws, kw = case
    fn = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[len(ws)]
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    gy = None

    def run(blas, threads, grads=(True, True, True)):
        nonlocal gy
        n = ember.get_num_threads()
        ember._C._set_blas_enabled(blas)
        ember.set_num_threads(threads)
        try:
            xe, we, be = (t(a, device, grad=g) for a, g in zip((x, w, b), grads))
            y = fn(xe, we, be, **kw)
            if gy is None:
                gy = rng.standard_normal(tuple(y.shape))
            y.backward(t(gy, device))
            return [y.detach().cpu().numpy()] + [e.grad.cpu().numpy() if g else None
                                            for e, g in zip((xe, we, be), grads)]
        finally:
            ember._C._set_blas_enabled(True)
            ember.set_num_threads(n)

    ref = run(False, 1)
    np.testing.assert_allclose(ref[0], np_conv(x, w, b, kw.get("stride", 1), kw.get("padding", 0),
                                               None, kw.get("dilation", 1), kw.get("groups", 1)),
                               atol=1e-10)
    for grads in [(True, True, True), (True, False, False), (False, True, True)]:
        got = run(True, 2, grads)
        for a, r in zip(got, ref):
            if a is not None:
                np.testing.assert_allclose(a, r, atol=1e-10, rtol=1e-10)
    np.testing.assert_array_equal(run(True, 1)[2], run(True, 2)[2])


def np_conv2d_all(x, w, b, gy, stride=1, lo=0, hi=None, dil=1):
    """y, gx, gw, gb of a 2-d convolution (one group) by explicit taps, in float64."""
    st, dl = (stride,) * 2 if np.isscalar(stride) else stride, (dil,) * 2 if np.isscalar(dil) else dil
    lo = (lo,) * 2 if np.isscalar(lo) else lo
    hi = lo if hi is None else ((hi,) * 2 if np.isscalar(hi) else hi)
    xp = np.pad(x, ((0, 0), (0, 0), (lo[0], hi[0]), (lo[1], hi[1])))
    KH, KW = w.shape[2:]
    OH = (xp.shape[2] - dl[0] * (KH - 1) - 1) // st[0] + 1
    OW = (xp.shape[3] - dl[1] * (KW - 1) - 1) // st[1] + 1
    y = np.zeros((x.shape[0], w.shape[0], OH, OW))
    gxp, gw = np.zeros_like(xp), np.zeros_like(w)
    for kh, kw in itertools.product(range(KH), range(KW)):
        sl = (slice(None), slice(None),
              slice(kh * dl[0], kh * dl[0] + st[0] * (OH - 1) + 1, st[0]),
              slice(kw * dl[1], kw * dl[1] + st[1] * (OW - 1) + 1, st[1]))
        y += np.einsum("nchw,oc->nohw", xp[sl], w[:, :, kh, kw])
        if gy is not None:
            gw[:, :, kh, kw] = np.einsum("nchw,nohw->oc", xp[sl], gy)
            gxp[sl] += np.einsum("nohw,oc->nchw", gy, w[:, :, kh, kw])
    if b is not None:
        y += b[None, :, None, None]
    gx = gxp[:, :, lo[0]:lo[0] + x.shape[2], lo[1]:lo[1] + x.shape[3]]
    return y, gx, gw, (gy.sum(axis=(0, 2, 3)) if gy is not None else None)


# (x shape, w shape, conv2d keywords): float32 stride-1 convolutions with few channels take
# the direct kernels on AVX2 CPUs (Note [Direct convolution]), the rest im2col + GEMM.
DIRECT_CASES = [
    ((3, 16, 14, 14), (16, 16, 3, 3), dict(padding=1)),  # the tutorial CNN's second conv
    ((2, 1, 28, 28), (16, 1, 3, 3), dict(padding=1)),  # one input channel
    ((3, 5, 7, 9), (6, 5, 3, 3), dict(padding=0)),  # channels not multiples of 4 or 8
    ((2, 10, 17, 33), (7, 10, 3, 3), dict(padding=2)),
    ((2, 9, 1, 1), (8, 9, 3, 3), dict(padding=1)),  # 1x1 images
    ((2, 3, 1, 1), (5, 3, 3, 3), dict(padding=2)),
    ((3, 5, 2, 2), (6, 5, 3, 3), dict(padding=1)),  # 2x2 images
    ((2, 4, 2, 2), (4, 4, 2, 2), dict(padding=0)),  # a 2x2 kernel on a 2x2 image: one output
    ((1, 17, 6, 20), (32, 17, 3, 3), dict(padding=3)),  # padding past the kernel
    ((2, 6, 9, 8), (5, 6, 4, 3), dict(padding="same", dilation=(1, 2))),  # asymmetric padding
    ((2, 4, 11, 10), (3, 4, 5, 5), dict(padding=1, dilation=2)),
    ((2, 3, 5, 40), (4, 3, 1, 7), dict(padding=(0, 3))),
    # more images than weight-gradient slabs: several images per gw_images pass (L % 8 = 1)
    ((37, 3, 5, 5), (4, 3, 3, 3), dict(padding=0)),
    ((2, 3, 4, 70), (5, 3, 3, 3), dict(padding=1)),  # rows past 64 columns: fill's general path
    ((1, 2, 3, 9), (3, 2, 3, 3), dict(padding=(1, 9))),  # whole vectors of padding columns
    ((2, 6, 12, 12), (8, 6, 3, 3), dict(stride=2, padding=1)),  # strided: the GEMM path
    ((2, 6, 12, 13), (8, 6, 3, 3), dict(stride=(1, 2), padding=1)),
]


def _avx2_cpu():
    # the direct kernels' condition: the CPU capability selected is AVX2 or better
    return ember.backends.cpu.get_cpu_capability() in ("avx2", "avx512")


def _direct_ref(xs, ws, kw, x, w, b, gy):
    pad, dil = kw.get("padding", 0), kw.get("dilation", 1)
    if pad == "same":
        total = [d * (k - 1) for d, k in zip(dil, ws[2:])]
        lo, hi = tuple(v // 2 for v in total), tuple(v - v // 2 for v in total)
    else:
        lo = hi = pad
    return np_conv2d_all(x, w, b, gy, kw.get("stride", 1), lo, hi, dil)


def _run_conv(fn, x, w, b, gy, kw, grads, dtype=ember.float32, direct=True, threads=1,
              noncontig=False, device="cpu"):
    n = ember.get_num_threads()
    ember._C._set_conv_direct_enabled(direct)
    ember.set_num_threads(threads)
    try:
        if noncontig:  # x as every other channel (or column) of a buffer twice its size
            ax = 1 if x.shape[1] > 1 else 3
            buf = np.repeat(x, 2, axis=ax)
            sl = (slice(None),) * ax + (slice(1, None, 2),)
            buf[sl] = np.nan  # never read
            xe = t(buf, device, dtype)[(slice(None),) * ax + (slice(None, None, 2),)]
            assert not xe.is_contiguous()
            if grads[0]:
                xe.requires_grad_()
        else:
            xe = t(x, device, dtype, grads[0])
        we = t(w, device, dtype, grads[1])
        be = None if b is None else t(b, device, dtype, grads[2])
        y = fn(xe, we, be, **kw)
        out = [y.detach().cpu().numpy()]
        if any(grads):
            y.backward(t(gy, device, dtype))
        return out + [e.grad.cpu().numpy() if g and e is not None else None
                      for e, g in zip((xe, we, be), grads)]
    finally:
        ember._C._set_conv_direct_enabled(True)
        ember.set_num_threads(n)


GRAD_SUBSETS = [(True, True, True), (True, False, False), (False, True, False),
                (False, False, True), (True, True, False), (False, True, True)]


def _direct_cases(x, w, b, gy, kw, ref, tol, dtype, device):
    for grads in GRAD_SUBSETS:
        for direct, threads, noncontig in [(True, 1, False), (True, 2, True), (False, 1, False)]:
            got = _run_conv(F.conv2d, x, w, b, gy, kw, grads, dtype, direct, threads, noncontig,
                            device)
            for i, (a, r) in enumerate(zip(got, ref)):
                if a is not None:
                    np.testing.assert_allclose(a, r, **tol, err_msg=f"{i} {grads} {direct}")


@pytest.mark.parametrize("case", DIRECT_CASES)
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_conv_direct_matches_gemm_and_numpy(device, rng, case, dtype):
    xs, ws, kw = case
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    y_ref = _direct_ref(xs, ws, kw, x, w, b, None)[0]
    gy = rng.standard_normal(y_ref.shape)
    ref = _direct_ref(xs, ws, kw, x, w, b, gy)
    tol = dict(rtol=1e-4, atol=2e-4) if dtype == ember.float32 else dict(rtol=1e-10, atol=1e-10)
    calls = ember._C._conv_direct_calls()
    # cuDNN may compute float32 in TF32 (allow_tf32 is True by default, as in PyTorch): 1e-3
    # relative, too coarse for this tolerance
    tf32 = ember.backends.cudnn.allow_tf32
    ember.backends.cudnn.allow_tf32 = False
    try:
        _direct_cases(x, w, b, gy, kw, ref, tol, dtype, device)
    finally:
        ember.backends.cudnn.allow_tf32 = tf32
    # which path ran: the direct kernels take float32 stride-1 convolutions on AVX2 CPUs only
    ran = ember._C._conv_direct_calls() - calls
    if dtype != ember.float32 or kw.get("stride", 1) != 1 or device != "cpu":
        assert ran == 0
    elif _avx2_cpu():
        assert ran > 0
    # the weight gradient's slab sums do not depend on the thread count
    gw1 = _run_conv(F.conv2d, x, w, b, gy, kw, (True, True, True), dtype, True, 1)[2]
    gw2 = _run_conv(F.conv2d, x, w, b, gy, kw, (True, True, True), dtype, True, 2)[2]
    np.testing.assert_array_equal(gw1, gw2)


def test_conv_direct_weight_grad_inf_outside_taps(device, rng):
    # The weight gradient's last partial vector of positions reads, for the taps of upper
    # kernel rows, image rows no output position pairs with them (here the last row): an
    # inf there must not leak into those taps as 0 * inf = NaN (the GEMM path's result).
    x = rng.standard_normal((3, 2, 5, 5))
    x[:, :, 4, :] = np.inf
    w, gy = rng.standard_normal((4, 2, 3, 3)), rng.standard_normal((3, 4, 3, 3))
    outs = [_run_conv(F.conv2d, x, w, None, gy, {}, (False, True, False), direct=d,
                      device=device)[2] for d in (True, False)]
    # taps of kernel rows 0 and 1 never meet image row 4 (3x3 outputs, no padding)
    assert np.isfinite(outs[0][:, :, :2]).all()
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-4, atol=1e-4, equal_nan=True)


def test_conv_direct_kernel_runs(device, rng):
    # the tutorial shape takes the direct kernel when the selected CPU capability is AVX2 or
    # better: its sums run in another order than the GEMM's, so the last bits differ somewhere.
    # Elsewhere (EMBER_CPU_CAPABILITY=default, a build without the dispatch copies such as the
    # sanitizer's, a CPU without AVX2) no direct call runs and the results are the GEMM's.
    if device != "cpu":
        pytest.skip("the direct kernels are CPU kernels")
    direct = _avx2_cpu()
    x, w = rng.standard_normal((4, 16, 14, 14)), rng.standard_normal((16, 16, 3, 3))
    b = rng.standard_normal(16)
    gy = rng.standard_normal((4, 16, 14, 14))
    before = ember._C._conv_direct_calls()
    on = _run_conv(F.conv2d, x, w, b, gy, dict(padding=1), (True, True, False), direct=True)
    expected = before + (2 if direct else 0)  # the forward and the backward
    assert ember._C._conv_direct_calls() == expected
    off = _run_conv(F.conv2d, x, w, b, gy, dict(padding=1), (True, True, False), direct=False)
    assert ember._C._conv_direct_calls() == expected
    for a, r in zip(on[:3], off[:3]):
        np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-4)
        assert np.array_equal(a, r) != direct
    assert ember._C._conv_direct_enabled()
    # other dtypes and strides take im2col + GEMM
    xd, wd = t(x, device, ember.float64), t(w, device, ember.float64)
    F.conv2d(xd, wd, padding=1)
    F.conv2d(t(x, device, ember.float32), t(w, device, ember.float32), padding=1, stride=2)
    assert ember._C._conv_direct_calls() == expected


CAPABILITY_SCRIPT = '''
import numpy as np, ember, ember.nn.functional as F
rng = np.random.default_rng(0)
x, w = rng.standard_normal((3, 16, 14, 14)), rng.standard_normal((16, 16, 3, 3))
gy = rng.standard_normal((3, 16, 14, 14))
def run(direct):
    ember._C._set_conv_direct_enabled(direct)
    xe = ember.tensor(x, dtype=ember.float32, requires_grad=True)
    we = ember.tensor(w, dtype=ember.float32, requires_grad=True)
    y = F.conv2d(xe, we, padding=1)
    y.backward(ember.tensor(gy, dtype=ember.float32))
    return [a.detach().cpu().numpy() for a in (y, xe.grad, we.grad)]
on, calls, off = run(True), ember._C._conv_direct_calls(), run(False)
print(ember.backends.cpu.get_cpu_capability(), calls,
      all(np.array_equal(a, b) for a, b in zip(on, off)))
'''


def test_conv_direct_off_without_avx2(device):
    # EMBER_CPU_CAPABILITY=default stands for a CPU without AVX2/FMA: the direct kernels
    # (compiled with function-level AVX2 targets) must not run, and the results are the
    # GEMM path's to the bit
    if device != "cpu":
        pytest.skip("CPU dispatch")
    env = dict(os.environ, EMBER_CPU_CAPABILITY="default", EMBER_ONEDNN="0")
    out = subprocess.run([sys.executable, "-c", CAPABILITY_SCRIPT], env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout.split()
    assert out == ["default", "0", "True"], out


@pytest.mark.parametrize("case", [
    ((3, 11, 50), (9, 11, 5), dict(padding=2)),
    ((2, 1, 7), (4, 1, 3), dict(padding=0, dilation=2)),
    ((2, 6, 1), (3, 6, 3), dict(padding=1)),
])
def test_conv1d_direct_matches_gemm(device, rng, case):
    xs, ws, kw = case
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    if xs[1] == 1:
        b = None  # no bias
    ref = _run_conv(F.conv1d, x, w, b, None, kw, (False,) * 3, ember.float64, False)[0]
    gy = rng.standard_normal(ref.shape)
    np.testing.assert_allclose(ref, np_conv(x, w, b, 1, kw["padding"], None,
                                            kw.get("dilation", 1)), atol=1e-10)
    ref = _run_conv(F.conv1d, x, w, b, gy, kw, (True,) * 3, ember.float64, False)
    for grads in GRAD_SUBSETS:
        if b is None and not any(grads[:2]):
            continue  # nothing to differentiate
        got = _run_conv(F.conv1d, x, w, b, gy, kw, grads, ember.float32, True, 2)
        for a, r in zip(got, ref):
            if a is not None:
                np.testing.assert_allclose(a, r, rtol=1e-4, atol=2e-4)


@pytest.mark.parametrize("kw", [dict(padding=1), dict(padding=0), dict(padding=2, dilation=2)])
def test_conv_transpose2d_direct_matches_numpy(device, rng, kw):
    # a stride-1 transposed convolution is the input gradient: the direct kernel's other use
    x, w, b = (rng.standard_normal(s) for s in ((3, 16, 9, 11), (16, 12, 3, 3), (12,)))
    ref = np_conv_t(x, w, b, 1, kw["padding"], 0, 1, kw.get("dilation", 1))
    for direct in (True, False):
        ember._C._set_conv_direct_enabled(direct)
        try:
            got = F.conv_transpose2d(t(x, device, ember.float32), t(w, device, ember.float32),
                                     t(b, device, ember.float32), **kw)
        finally:
            ember._C._set_conv_direct_enabled(True)
        np.testing.assert_allclose(got.cpu().numpy(), ref, rtol=1e-4, atol=2e-4)


def test_conv_direct_double_backward_matches_gemm(device, rng):
    # second-order gradients run the three convolution primitives on other operands
    x, w, b = (rng.standard_normal(s) for s in ((2, 8, 6, 7), (5, 8, 3, 3), (5,)))
    v = rng.standard_normal((2, 8, 6, 7))

    def run(direct):
        ember._C._set_conv_direct_enabled(direct)
        try:
            xe, we, be = (t(a, device, ember.float32, True) for a in (x, w, b))
            y = F.conv2d(xe, we, be, padding=1)
            gx, = ember.autograd.grad((y * y).sum(), (xe,), create_graph=True)
            (gx * t(v, device, ember.float32)).sum().backward()
            return [e.grad.cpu().numpy() for e in (xe, we, be)]
        finally:
            ember._C._set_conv_direct_enabled(True)

    for a, r in zip(run(True), run(False)):
        np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1, output_padding=1),
                                dict(stride=(2, 3), dilation=2, groups=2, output_padding=(1, 0))])
def test_conv_transpose2d_matches_numpy(device, rng, kw):
    x = rng.standard_normal((2, 4, 5, 4))
    w = rng.standard_normal((4, 3, 3, 2))
    b = rng.standard_normal(3 * kw.get("groups", 1))
    got = F.conv_transpose2d(t(x, device), t(w, device), t(b, device), **kw)
    ref = np_conv_t(x, w, b, kw.get("stride", 1), kw.get("padding", 0),
                    kw.get("output_padding", 0), kw.get("groups", 1), kw.get("dilation", 1))
    np.testing.assert_allclose(got.cpu().numpy(), ref, atol=1e-10)


def test_conv_transpose1d_matches_numpy(device, rng):
    x = rng.standard_normal((2, 3, 6))
    w = rng.standard_normal((3, 2, 4))
    got = F.conv_transpose1d(t(x, device), t(w, device), stride=3, padding=1, output_padding=2)
    np.testing.assert_allclose(got.cpu().numpy(), np_conv_t(x, w, None, 3, 1, 2), atol=1e-10)


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
    np.testing.assert_allclose(xe.grad.cpu().numpy(), np_conv_t(gy, w, None, 2, 0, 0), atol=1e-10)
    gw = np.zeros_like(w)
    for kh, kw in itertools.product(range(3), range(3)):
        xs = x[:, :, kh:kh + 5:2, kw:kw + 5:2]
        gw[:, :, kh, kw] = np.einsum("nchw,nohw->oc", xs, gy)
    np.testing.assert_allclose(we.grad.cpu().numpy(), gw, atol=1e-10)
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
    np.testing.assert_allclose(u.cpu().numpy(), ref, atol=1e-12)
    # fold is unfold's adjoint: <unfold(x), c> == <x, fold(c)>
    c = rng.standard_normal(ref.shape)
    f = F.fold(t(c, device), (6, 7), **kw).cpu().numpy()
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


# ---- modules -----------------------------------------------------------------------------------

def test_conv_modules_forward_and_init(device):
    import ember.nn as nn
    ember.manual_seed(0)
    c = nn.Conv2d(3, 16, 3, padding=1).to(device)
    assert repr(c) == "Conv2d(3, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))"
    assert c.weight.shape == (16, 3, 3, 3) and c.bias.shape == (16,)
    x = ember.randn(2, 3, 8, 8, device=device)
    np.testing.assert_allclose(c(x).detach().cpu().numpy(), F.conv2d(x, c.weight, c.bias,
                                                               padding=1).detach().cpu().numpy())
    # torch's default init: kaiming_uniform_(a=sqrt(5)) -> U(+-1/sqrt(fan_in)), bias likewise
    big = nn.Conv2d(64, 64, 3)
    bound = 1 / np.sqrt(64 * 9)
    w = big.weight.detach().cpu().numpy()
    assert np.abs(w).max() <= bound and abs(w.std() - bound / np.sqrt(3)) < 0.02 * bound
    assert np.abs(big.bias.detach().cpu().numpy()).max() <= bound
    assert sorted(dict(c.named_parameters())) == ["bias", "weight"]
    assert nn.Conv1d(2, 4, 3, bias=False).bias is None
    assert nn.Conv3d(2, 4, (1, 2, 3), stride=2)(ember.randn(1, 2, 4, 5, 6)).shape == (1, 4, 2, 2, 2)
    assert repr(nn.Conv1d(2, 4, 3, stride=2, groups=2, bias=False, dilation=2)) == (
        "Conv1d(2, 4, kernel_size=(3,), stride=(2,), dilation=(2,), groups=2, bias=False)")


@pytest.mark.parametrize("mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"),
                                          ("circular", "wrap")])
def test_conv_module_padding_modes(device, rng, mode, np_mode):
    import ember.nn as nn
    c = nn.Conv2d(2, 3, (3, 2), padding=(1, 2), padding_mode=mode, dtype=ember.float64)
    x = rng.standard_normal((1, 2, 5, 6))
    got = c(t(x, device)).detach().cpu().numpy()
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (2, 2)], mode=np_mode)
    ref = np_conv(xp, c.weight.detach().cpu().numpy(), c.bias.detach().cpu().numpy())
    np.testing.assert_allclose(got, ref, atol=1e-12)
    same = nn.Conv2d(2, 3, 4, padding="same", padding_mode=mode, dtype=ember.float64)
    assert same(t(x, device)).shape == (1, 3, 5, 6)
    xe = t(x, device, grad=True)
    assert gradcheck(lambda a: same(a), (xe,))


def test_conv_transpose_modules(device, rng):
    import ember.nn as nn
    ct = nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, dtype=ember.float64)
    x = t(rng.standard_normal((1, 4, 5, 5)), device)
    assert ct(x).shape == (1, 2, 9, 9)
    y = ct(x, output_size=(10, 10))
    assert y.shape == (1, 2, 10, 10)
    ref = np_conv_t(x.cpu().numpy(), ct.weight.detach().cpu().numpy(), ct.bias.detach().cpu().numpy(), 2, 1, 1)
    np.testing.assert_allclose(y.detach().cpu().numpy(), ref, atol=1e-12)
    assert ct(x, output_size=[1, 2, 10, 10]).shape == (1, 2, 10, 10)
    with pytest.raises(ValueError, match="valid sizes range from"):
        ct(x, output_size=(12, 12))
    assert repr(ct) == "ConvTranspose2d(4, 2, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))"
    assert nn.ConvTranspose1d(2, 4, 3, groups=2)(ember.randn(2, 7)).shape == (4, 9)
    with pytest.raises(ValueError, match='Only "zeros" padding mode'):
        nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect")


def test_conv_module_errors():
    import ember.nn as nn
    c = nn.Conv2d(3, 16, kernel_size=3)
    with pytest.raises(RuntimeError, match=r"^Conv2d\(3, 16, kernel_size=\(3, 3\)\) expected "
                                           r"input with 3 channels, got 4 \(input shape "
                                           r"\[8, 4, 28, 28\]\)$"):
        c(ember.zeros(8, 4, 28, 28))
    with pytest.raises(RuntimeError, match="Expected 3D"):
        c(ember.zeros(28, 28))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 6, 3, groups=2)
    with pytest.raises(ValueError, match="groups must be a positive integer"):
        nn.Conv2d(3, 6, 3, groups=0)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(3, 6, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="Invalid padding string"):
        nn.Conv2d(3, 6, 3, padding="full")
    with pytest.raises(ValueError, match="not supported for strided"):
        nn.Conv2d(3, 6, 3, padding="same", stride=2)


def test_tutorial_cnn_trains(device):
    # conv -> relu -> max pool -> conv -> relu -> adaptive avg pool -> linear, trained by SGD
    import ember.nn as nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(1, 8, 3, padding=1)
            self.pool = nn.MaxPool2d(2)
            self.c2 = nn.Conv2d(8, 16, 3, padding=1)
            self.gap = nn.AdaptiveAvgPool2d(1)
            self.head = nn.Parameter(ember.randn(16, 1) * 0.5)

        def forward(self, x):
            x = self.pool(ember.relu(self.c1(x)))
            x = self.gap(ember.relu(self.c2(x))).reshape(x.shape[0], 16)
            return x @ self.head

    ember.manual_seed(0)
    model = Net().to(device)
    x = ember.randn(32, 1, 12, 12, device=device)
    target = (x[:, :, :6, :6].mean(dim=(1, 2, 3)) > 0).float().reshape(32, 1)
    losses = []
    for _ in range(40):
        loss = ((model(x) - target) ** 2).mean()
        model.zero_grad()
        loss.backward()
        with ember.no_grad():
            for p in model.parameters():
                p -= 0.1 * p.grad
        losses.append(float(loss))
    assert losses[-1] < 0.3 * losses[0], losses


# ---- against PyTorch (subprocess; skipped when PyTorch is absent) --------------------------------


# (function, input shapes, kwargs): each is run forward and backward (grad of sum(out * r)).
_TORCH_CASES = [
    ("conv2d", [(2, 4, 7, 6), (6, 2, 3, 2), (6,)], dict(stride=(2, 1), padding=(1, 2),
                                                        dilation=(1, 2), groups=2)),
    ("conv2d", [(2, 3, 6, 6), (4, 3, 4, 3)], dict(padding="same", dilation=(2, 1))),
    ("conv1d", [(2, 4, 9), (4, 1, 3)], dict(stride=2, padding=2, groups=4)),
    ("conv3d", [(1, 2, 4, 5, 4), (3, 2, 2, 3, 2), (3,)], dict(stride=(1, 2, 1), padding=1)),
    ("conv_transpose2d", [(2, 4, 3, 4), (4, 3, 3, 2), (6,)],
     dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2, dilation=(1, 2))),
    ("conv_transpose1d", [(2, 3, 5), (3, 2, 4)], dict(stride=3, padding=2, output_padding=1)),
    ("conv_transpose3d", [(1, 2, 2, 3, 2), (2, 2, 2, 2, 2)], dict(stride=2)),
    ("max_pool2d", [(2, 3, 9, 8)], dict(kernel_size=3, stride=2, padding=1, dilation=2,
                                        ceil_mode=True)),
    ("max_pool2d", [(2, 3, 7, 7)], dict(kernel_size=(2, 3), stride=(3, 2), ceil_mode=True)),
    ("max_pool1d", [(2, 3, 11)], dict(kernel_size=4, stride=3, padding=2, ceil_mode=True)),
    ("avg_pool2d", [(2, 3, 9, 8)], dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("avg_pool2d", [(2, 3, 7, 8)], dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1),
                                        ceil_mode=True, count_include_pad=False)),
    ("avg_pool1d", [(2, 3, 10)], dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                      count_include_pad=False)),
    ("adaptive_avg_pool2d", [(2, 3, 9, 7)], dict(output_size=(4, 5))),
    ("adaptive_max_pool2d", [(2, 3, 9, 7)], dict(output_size=(4, 3))),
    ("adaptive_avg_pool1d", [(2, 3, 10)], dict(output_size=7)),
    ("unfold", [(2, 3, 7, 6)], dict(kernel_size=(2, 3), dilation=(2, 1), padding=1,
                                    stride=(1, 2))),
    ("fold", [(2, 12, 12)], dict(output_size=(4, 5), kernel_size=(2, 3), dilation=(2, 1),
                                 padding=1, stride=(1, 2))),
]

_TORCH_SCRIPT = r"""
import json, sys
import numpy as np, torch, torch.nn.functional as F
data = np.load(sys.argv[1]); cases = json.loads(sys.argv[2]); out = {}
for i, (name, shapes, kw) in enumerate(cases):
    for k, v in kw.items():
        if isinstance(v, list):
            kw[k] = tuple(v)
    ins = [torch.from_numpy(data[f"{i}_{j}"]).requires_grad_() for j in range(len(shapes))]
    y = getattr(F, name)(*ins, **kw)
    (y * torch.from_numpy(data[f"{i}_r"])).sum().backward()
    out[f"{i}_y"] = y.detach().cpu().numpy()
    for j, t in enumerate(ins):
        out[f"{i}_g{j}"] = t.grad.cpu().numpy()
np.savez(sys.argv[3], **out)
"""


def test_conv_pool_match_pytorch(tmp_path, rng):
    if TORCH_PY is None:
        pytest.skip("PyTorch not available")
    arrays, outs = {}, {}
    for i, (name, shapes, kw) in enumerate(_TORCH_CASES):
        ins = []
        for j, s in enumerate(shapes):
            # distinct values so max pooling has a unique argmax
            a = rng.permutation(int(np.prod(s))).reshape(s) / 7.0 - 1.0 if "max" in name \
                else rng.standard_normal(s)
            arrays[f"{i}_{j}"] = a
            ins.append(t(a, grad=True))
        y = getattr(F, name)(*ins, **kw)
        r = rng.standard_normal(tuple(y.shape))
        arrays[f"{i}_r"] = r
        (y * t(r)).sum().backward()
        outs[i] = (y.detach().cpu().numpy(), [x.grad.cpu().numpy() for x in ins])
    np.savez(tmp_path / "in.npz", **arrays)
    p = subprocess.run([TORCH_PY, "-c", _TORCH_SCRIPT, str(tmp_path / "in.npz"),
                        json.dumps(_TORCH_CASES), str(tmp_path / "out.npz")],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PYTHONPATH=""))
    if p.returncode != 0:
        pytest.skip(f"PyTorch worker failed: {p.stderr[-500:]}")
    ref = np.load(tmp_path / "out.npz")
    for i, (name, _, kw) in enumerate(_TORCH_CASES):
        y, grads = outs[i]
        np.testing.assert_allclose(y, ref[f"{i}_y"], atol=1e-10, err_msg=f"{name} {kw}")
        for j, g in enumerate(grads):
            np.testing.assert_allclose(g, ref[f"{i}_g{j}"], atol=1e-10,
                                       err_msg=f"{name} {kw} grad {j}")


def test_conv_half_precision(rng):
    x = rng.standard_normal((2, 3, 6, 6))
    w = rng.standard_normal((4, 3, 3, 3))
    ref = np_conv(x, w, None, 1, 1)
    for dt in (ember.float16, ember.bfloat16):
        got = F.conv2d(t(x, dtype=dt), t(w, dtype=dt), padding=1)
        assert got.dtype == dt
        np.testing.assert_allclose(got.float().cpu().numpy(), ref, atol=0.3, rtol=0.05)


def test_tutorial_cnn_with_library_layers(device):
    # The tutorial's CNN: conv/relu/pool twice, flatten, linear, cross-entropy, SGD.
    import ember.nn as nn
    import ember.optim as optim
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(6, 16, 5), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(),
                          nn.Linear(16, 10)).to(device)
    x = ember.randn(64, 1, 14, 14, device=device)
    y = ember.randint(0, 10, (64,), device=device)
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(40):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < 0.8 * losses[0], losses
