"""The oneDNN convolution engine (Note [oneDNN convolution]): float32 1-d/2-d convolutions
and both backward passes against NumPy references and against ember's own kernels
(ember.backends.mkldnn.enabled = False), over strides, padding (also 'same' with an even
kernel), dilation, groups, non-contiguous and empty inputs; the switch and the fallback."""
import contextlib
import ctypes.util
import itertools
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck

mkldnn = ember.backends.mkldnn


def np_conv2d(x, w, b, stride, lo, hi, dil, groups):
    """y, and the adjoints gx(gy), gw(gy), of a 2-d convolution in float64."""
    xp = np.pad(x, [(0, 0), (0, 0), (lo[0], hi[0]), (lo[1], hi[1])])
    N, C = x.shape[:2]
    Co, Cg, KH, KW = w.shape
    OH = (xp.shape[2] - dil[0] * (KH - 1) - 1) // stride[0] + 1
    OW = (xp.shape[3] - dil[1] * (KW - 1) - 1) // stride[1] + 1
    cog = Co // groups

    def taps():
        for g, i, j in itertools.product(range(groups), range(KH), range(KW)):
            sl = (slice(None), slice(g * Cg, (g + 1) * Cg),
                  slice(i * dil[0], i * dil[0] + stride[0] * (OH - 1) + 1, stride[0]),
                  slice(j * dil[1], j * dil[1] + stride[1] * (OW - 1) + 1, stride[1]))
            yield g, i, j, sl

    y = np.zeros((N, Co, OH, OW))
    for g, i, j, sl in taps():
        y[:, g * cog:(g + 1) * cog] += np.einsum("nchw,oc->nohw", xp[sl],
                                                 w[g * cog:(g + 1) * cog, :, i, j])
    if b is not None:
        y += b.reshape(1, Co, 1, 1)

    def grads(gy):
        gxp, gw = np.zeros_like(xp), np.zeros_like(w)
        for g, i, j, sl in taps():
            gyg = gy[:, g * cog:(g + 1) * cog]
            gxp[sl] += np.einsum("nohw,oc->nchw", gyg, w[g * cog:(g + 1) * cog, :, i, j])
            gw[g * cog:(g + 1) * cog, :, i, j] = np.einsum("nohw,nchw->oc", gyg, xp[sl])
        gx = gxp[:, :, lo[0]:xp.shape[2] - hi[0], lo[1]:xp.shape[3] - hi[1]]
        return gx, gw

    return y, grads


def run(x, w, b, gy, kw, noncontig=False):
    """y, x.grad, w.grad, b.grad from ember in float32."""
    xe = ember.tensor(x, dtype=ember.float32)
    if noncontig:  # the same values through a transposed view
        xe = ember.tensor(np.ascontiguousarray(x.transpose(0, 1, 3, 2)),
                          dtype=ember.float32).transpose(2, 3)
        assert not xe.is_contiguous()
    xe.requires_grad_()
    we = ember.tensor(w, dtype=ember.float32, requires_grad=True)
    be = None if b is None else ember.tensor(b, dtype=ember.float32, requires_grad=True)
    y = F.conv2d(xe, we, be, **kw)
    y.backward(ember.tensor(gy, dtype=ember.float32))
    out = [y.detach().numpy(), xe.grad.numpy(), we.grad.numpy()]
    return out + ([be.grad.numpy()] if be is not None else [])


# Whether the CPU has AVX-512, where oneDNN also takes images of fewer than 196 outputs.
AVX512 = ember._C._get_supported_cpu_capability() == "avx512"

# (x shape, w shape, conv2d kwargs, lo, hi, stride, dil, oneDNN calls for fwd+bwd): oneDNN
# takes the forward and the input gradient of k > 1 kernels with channels in multiples of 8
# (two calls; with AVX2 only on >= 196 output positions), the forward of a 7x7 kernel over
# other channel counts (one call), the weight gradient never
CASES = [
    ((2, 8, 15, 17), (16, 8, 3, 3), dict(padding=1), (1, 1), (1, 1), (1, 1), (1, 1), 2),
    ((3, 16, 30, 29), (8, 16, 3, 3), dict(stride=2, padding=1), (1, 1), (1, 1), (2, 2), (1, 1),
     2),
    ((2, 8, 19, 22), (8, 8, 3, 2), dict(dilation=(2, 3), padding=(2, 1)), (2, 1), (2, 1), (1, 1),
     (2, 3), 2),
    ((2, 8, 16, 17), (8, 8, 4, 4), dict(padding="same"), (1, 1), (2, 2), (1, 1), (1, 1), 2),
    ((2, 8, 45, 45), (8, 8, 3, 3), dict(stride=3), (0, 0), (0, 0), (3, 3), (1, 1), 2),
    # the floor drops the last input column: a negative end padding, declined
    ((2, 8, 46, 46), (8, 8, 3, 3), dict(stride=3), (0, 0), (0, 0), (3, 3), (1, 1), 0),
    ((2, 16, 9, 9), (8, 16, 3, 3), dict(padding=1), (1, 1), (1, 1), (1, 1), (1, 1),
     2 if AVX512 else 0),  # small
    # a ResNet stem: 3 channels, 7x7, stride 2 (forward only)
    ((2, 3, 30, 28), (8, 3, 7, 7), dict(stride=2, padding=3), (3, 3), (3, 3), (2, 2), (1, 1), 1),
    ((2, 3, 16, 16), (8, 3, 5, 5), dict(padding=2), (2, 2), (2, 2), (1, 1), (1, 1), 0),  # 5x5
    ((2, 16, 15, 15), (32, 16, 1, 1), dict(), (0, 0), (0, 0), (1, 1), (1, 1), 0),  # 1x1
    ((3, 1, 18, 20), (8, 1, 3, 3), dict(), (0, 0), (0, 0), (1, 1), (1, 1), 0),  # one channel in
    ((2, 16, 16, 16), (16, 4, 3, 3), dict(padding=1, groups=4), (1, 1), (1, 1), (1, 1), (1, 1),
     0),
    ((2, 6, 16, 16), (10, 6, 3, 3), dict(padding=1), (1, 1), (1, 1), (1, 1), (1, 1), 0),
    # channels in multiples of 16: nChw16c blocks and oneDNN's weight gradient with AVX-512
    ((2, 16, 16, 16), (32, 16, 3, 3), dict(padding=1), (1, 1), (1, 1), (1, 1), (1, 1), 2),
    ((3, 32, 17, 19), (16, 32, 3, 3), dict(stride=2, padding=1, dilation=2), (1, 1), (1, 1),
     (2, 2), (2, 2), 2 if AVX512 else 0),
]


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
@pytest.mark.parametrize("bias", [True, False])
def test_onednn_conv2d_matches_numpy_and_ember(rng, case, bias):
    xs, ws, kw, lo, hi, stride, dil, ncalls = case
    groups = kw.get("groups", 1)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    b = rng.standard_normal(ws[0]) if bias else None
    ref_y, grads = np_conv2d(x, w, b, stride, lo, hi, dil, groups)
    gy = rng.standard_normal(ref_y.shape)
    ref_gx, ref_gw = grads(gy)
    refs = [ref_y, ref_gx, ref_gw] + ([gy.sum(axis=(0, 2, 3))] if bias else [])
    before = ember._C._onednn_conv_calls()
    on = run(x, w, b, gy, kw)
    if mkldnn.is_available():
        assert ember._C._onednn_conv_calls() - before == ncalls
    with mkldnn.flags(enabled=False):
        before = ember._C._onednn_conv_calls()
        off = run(x, w, b, gy, kw)
        assert ember._C._onednn_conv_calls() == before
    for a, o, r in zip(on, off, refs):
        scale = max(1.0, np.abs(r).max())
        np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-4 * scale)
        np.testing.assert_allclose(a, o, rtol=1e-4, atol=1e-4 * scale)
    # non-contiguous input: the same numbers
    nc = run(x, w, b, gy, kw, noncontig=True)
    for a, r in zip(nc, refs):
        np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(r).max()))


def test_onednn_conv1d_and_empty_batch(rng):
    x, w = rng.standard_normal((3, 8, 420)), rng.standard_normal((16, 8, 5))
    xe = ember.tensor(x, dtype=ember.float32, requires_grad=True)
    we = ember.tensor(w, dtype=ember.float32, requires_grad=True)
    y = F.conv1d(xe, we, padding=2, stride=2)
    ref, grads = np_conv2d(x[:, :, None], w[:, :, None], None, (1, 2), (0, 2), (0, 2), (1, 1), 1)
    np.testing.assert_allclose(y.detach().numpy(), ref[:, :, 0], rtol=1e-4, atol=1e-4)
    gy = rng.standard_normal(y.shape)
    y.backward(ember.tensor(gy, dtype=ember.float32))
    gx, gw = grads(gy[:, :, None])
    np.testing.assert_allclose(xe.grad.numpy(), gx[:, :, 0], rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(we.grad.numpy(), gw[:, :, 0], rtol=1e-4, atol=1e-3)
    # an empty batch: empty output, zero weight gradient
    xe0 = ember.zeros((0, 8, 19, 19), requires_grad=True)
    we0 = ember.tensor(rng.standard_normal((16, 8, 3, 3)), dtype=ember.float32,
                       requires_grad=True)
    y0 = F.conv2d(xe0, we0, padding=1)
    assert tuple(y0.shape) == (0, 16, 19, 19)
    y0.sum().backward()
    assert tuple(xe0.grad.shape) == (0, 8, 19, 19)
    assert not we0.grad.numpy().any()


def test_onednn_double_backward_and_gradcheck(rng):
    # float64 never takes oneDNN (gradcheck runs ember's kernels); the float32 double
    # backward through oneDNN's passes agrees with ember's kernels
    x = ember.tensor(rng.standard_normal((1, 8, 14, 14)), requires_grad=True)
    w = ember.tensor(rng.standard_normal((8, 8, 3, 3)), requires_grad=True)
    xs = ember.tensor(rng.standard_normal((2, 8, 5, 5)), requires_grad=True)
    assert gradcheck(lambda a, b: F.conv2d(a, b, padding=1), (xs, w))

    def second(enabled):
        with mkldnn.flags(enabled=enabled):
            xf = ember.tensor(x.detach().numpy(), dtype=ember.float32, requires_grad=True)
            wf = ember.tensor(w.detach().numpy(), dtype=ember.float32, requires_grad=True)
            y = F.conv2d(xf, wf, padding=1)
            (gx,) = ember.autograd.grad((y * y).sum(), xf, create_graph=True)
            gx.square().sum().backward()
            return xf.grad.numpy(), wf.grad.numpy()

    for a, b in zip(second(True), second(False)):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3 * np.abs(b).max())


def test_onednn_available_where_installed():
    # tools/install_deps.sh installs libdnnl: a build with its headers must load it
    have_lib = ctypes.util.find_library("dnnl") is not None
    have_headers = os.path.exists("/usr/include/oneapi/dnnl/dnnl.h")
    if have_lib and have_headers:
        assert mkldnn.is_available()
    assert mkldnn.enabled is True
    with mkldnn.flags(enabled=False):
        assert mkldnn.enabled is False
    assert mkldnn.enabled is True
    with pytest.raises(TypeError, match="enabled expects a bool"):
        mkldnn.enabled = 1


def test_onednn_switched_off_by_environment():
    script = ("import ember, numpy as np, ember.nn.functional as F\n"
              "x = ember.ones((1, 8, 5, 5)); w = ember.ones((8, 8, 3, 3))\n"
              "print(ember.backends.mkldnn.is_available(), float(F.conv2d(x, w).sum()))")
    env = dict(os.environ, EMBER_ONEDNN="0")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout.split()
    assert out == ["False", str(float(8 * 9 * 8 * 9))], out


@pytest.mark.skipif(not mkldnn.is_available(), reason="oneDNN (libdnnl) is not installed")
def test_onednn_keeps_to_one_thread():
    """Note [oneDNN's OpenMP threads]: at ember.set_num_threads(1) oneDNN starts no OpenMP
    team. The first plan of a process used to be made before OpenMP was held at one thread,
    and ran on every core (one more thread per core in /proc/self/task)."""
    script = ("import os, ember, ember.nn.functional as F\n"
              "ember.set_num_threads(1)\n"
              "x = ember.randn(2, 8, 20, 20); w = ember.randn(8, 8, 3, 3)\n"
              # ember's own kernels first (a 1x1 kernel): their threads are not counted
              "F.conv2d(x + 1, w[:, :, :1, :1])\n"
              "before = len(os.listdir('/proc/self/task'))\n"
              "calls = ember._C._onednn_conv_calls()\n"
              "for _ in range(3): F.conv2d(x, w, padding=1)\n"
              "print(ember._C._onednn_conv_calls() - calls, len(os.listdir('/proc/self/task')) - before)")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "EMBER_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout.split()
    assert out == ["3", "0"], out


@contextlib.contextmanager
def _threads(n):
    old = ember.get_num_threads()
    ember.set_num_threads(n)
    try:
        yield
    finally:
        ember.set_num_threads(old)


def _padded_3x3(rng, x_shape, w_shape, bias):
    """Inputs, an output gradient and the NumPy references of a 3x3 padding-1 convolution."""
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    b = rng.standard_normal(w_shape[0]) if bias else None
    ref_y, grads = np_conv2d(x, w, b, (1, 1), (1, 1), (1, 1), (1, 1), 1)
    gy = rng.standard_normal(ref_y.shape)
    return x, w, b, gy, (ref_y, *grads(gy))


def _check_on_threads(rng, threads, x_shape, w_shape, bias):
    """A 3x3 padding-1 convolution, forward and both gradients, on `threads` threads against
    the NumPy reference (two oneDNN calls where oneDNN is installed)."""
    x, w, b, gy, (ref_y, ref_gx, ref_gw) = _padded_3x3(rng, x_shape, w_shape, bias)
    with _threads(threads):
        before = ember._C._onednn_conv_calls()
        got = run(x, w, b, gy, dict(padding=1))
        if mkldnn.is_available():
            assert ember._C._onednn_conv_calls() - before == 2
    refs = [ref_y, ref_gx, ref_gw] + ([gy.sum(axis=(0, 2, 3))] if bias else [])
    assert len(got) == len(refs)
    for a, r in zip(got, refs):
        np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(r).max()))


@pytest.mark.parametrize("threads", [2, 3])
def test_onednn_batch_split_over_threads(rng, threads):
    # several threads split the batch into slabs (an odd batch: slabs of unequal sizes),
    # each a single-threaded oneDNN call
    _check_on_threads(rng, threads, (5, 8, 15, 14), (16, 8, 3, 3), True)


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("co,bias", [(16, True), (24, False), (40, True), (8, True)])
def test_onednn_one_image_splits_output_channels(rng, threads, co, bias):
    # batch 1 on several threads: the output channels are split in blocks of 8 (24 over 2
    # threads: 8 and 16; 40 over 3: 8, 16, 16); 8 channels stay whole. Each part reads its
    # slice of the weights and bias and writes its slice of the output.
    _check_on_threads(rng, threads, (1, 8, 15, 14), (co, 8, 3, 3), bias)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_onednn_weight_gradient(rng, threads):
    """With AVX-512, oneDNN also takes the weight gradient of 16-multiple channel counts: one
    thread's slab of images each (5 images over 3 threads: 1, 2, 2), their partial sums
    added after. Only the weight gradient is asked for, so the call count says who took it."""
    x, w, _, gy, (_, _, ref_gw) = _padded_3x3(rng, (5, 16, 20, 18), (32, 16, 3, 3), False)
    with _threads(threads):
        xe = ember.tensor(x, dtype=ember.float32)
        we = ember.tensor(w, dtype=ember.float32, requires_grad=True)
        before = ember._C._onednn_conv_calls()
        F.conv2d(xe, we, padding=1).backward(ember.tensor(gy, dtype=ember.float32))
        if mkldnn.is_available():
            assert ember._C._onednn_conv_calls() - before == (2 if AVX512 else 1)
    np.testing.assert_allclose(we.grad.numpy(), ref_gw, rtol=1e-4,
                               atol=1e-4 * max(1.0, np.abs(ref_gw).max()))
