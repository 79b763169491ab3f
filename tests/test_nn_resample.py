"""F.pad, F.interpolate, pixel_shuffle/unshuffle, affine_grid and grid_sample:
NumPy references and closed forms, gradients (gradcheck + gradgradcheck in
float64), error paths, and a side-by-side run against PyTorch in a subprocess
(skipped when PyTorch is absent)."""
import json
import os
import subprocess

import numpy as np
import pytest
from torch_python import TORCH_PY

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck


def t(a, device="cpu", dtype=ember.float64, grad=False):
    r = ember.tensor(np.asarray(a), dtype=dtype, device=device)
    return r.requires_grad_() if grad else r


# ---- pad ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"),
                                          ("circular", "wrap")])
def test_pad_modes_match_numpy(device, rng, mode, np_mode):
    x = rng.standard_normal((2, 3, 5, 6))
    got = F.pad(t(x, device), (2, 1, 3, 0), mode=mode)
    ref = np.pad(x, [(0, 0), (0, 0), (3, 0), (2, 1)], mode=np_mode)
    np.testing.assert_array_equal(got.cpu().numpy(), ref)
    x1 = rng.standard_normal((3, 7))  # unbatched 1-d
    np.testing.assert_array_equal(F.pad(t(x1, device), (3, 2), mode=mode).cpu().numpy(),
                                  np.pad(x1, [(0, 0), (3, 2)], mode=np_mode))
    x3 = rng.standard_normal((1, 2, 3, 4, 5))
    np.testing.assert_array_equal(F.pad(t(x3, device), (1, 1, 2, 0, 0, 2), mode=mode).cpu().numpy(),
                                  np.pad(x3, [(0, 0), (0, 0), (0, 2), (2, 0), (1, 1)],
                                         mode=np_mode))
    xe = t(x[:1, :1], device, grad=True)
    assert gradgradcheck(lambda a: F.pad(a, (2, 1, 1, 2), mode=mode), (xe,))


def test_pad_constant(device, rng):
    x = rng.standard_normal((2, 3, 4))
    got = F.pad(t(x, device), (1, 2, 0, 1, 1, 0), value=2.5)
    np.testing.assert_array_equal(got.cpu().numpy(), np.pad(x, [(1, 0), (0, 1), (1, 2)],
                                                      constant_values=2.5))
    # negative padding crops
    got = F.pad(t(x, device), (-1, 2, -2, 0))
    np.testing.assert_array_equal(got.cpu().numpy(), np.pad(x[:, 2:, 1:], [(0, 0), (0, 0), (0, 2)]))
    xe = t(x, device, grad=True)
    assert gradgradcheck(lambda a: F.pad(a, (1, -1, 2, 0), value=1.0), (xe,))
    assert F.pad(t(x, device), (0, 0)).shape == (2, 3, 4)
    assert F.pad(t(x, device), (-4, 0)).shape == (2, 3, 0)


def test_pad_errors():
    x = ember.zeros(1, 2, 3)
    with pytest.raises(RuntimeError, match="divisible by 2"):
        F.pad(x, (1, 2, 3))
    with pytest.raises(RuntimeError, match="less than or equal to two times"):
        F.pad(x, (1,) * 8)
    with pytest.raises(RuntimeError, match=r"reflect padding \(3, 3\) at dimension 2"):
        F.pad(x, (3, 3), mode="reflect")
    with pytest.raises(RuntimeError, match="wraps around more than once"):
        F.pad(x, (4, 0), mode="circular")
    with pytest.raises(NotImplementedError, match="unrecognised padding mode"):
        F.pad(x, (1, 1), mode="foo")
    with pytest.raises(RuntimeError, match="doesn't take in value"):
        F.pad(x, (1, 1), mode="reflect", value=1)
    with pytest.raises(NotImplementedError, match="needs a 3-D or 4-D input"):
        F.pad(ember.zeros(2, 3), (1, 1, 1, 1), mode="replicate")
    with pytest.raises(RuntimeError, match="negative output size"):
        F.pad(x, (-2, -2))


# ---- interpolate -------------------------------------------------------------------------------

def np_linear_1d(x, out, align, scale=None):
    n = x.shape[-1]
    if align:
        s = (n - 1) / (out - 1) if out > 1 else 0.0
    else:
        s = 1.0 / scale if scale else n / out
    res = np.zeros(x.shape[:-1] + (out,))
    for o in range(out):
        src = s * o if align else max(s * (o + 0.5) - 0.5, 0.0)
        i0 = min(int(src), n - 1)
        i1 = i0 + (1 if i0 < n - 1 else 0)
        lam = src - i0
        res[..., o] = x[..., i0] * (1 - lam) + x[..., i1] * lam
    return res


def test_interpolate_linear_closed_forms(device):
    x = t([[[0.0, 1.0]]], device)
    np.testing.assert_allclose(F.interpolate(x, size=3, mode="linear", align_corners=True).cpu().numpy(),
                               [[[0.0, 0.5, 1.0]]])
    np.testing.assert_allclose(F.interpolate(x, scale_factor=2, mode="linear").cpu().numpy(),
                               [[[0.0, 0.25, 0.75, 1.0]]])
    np.testing.assert_allclose(F.interpolate(x, scale_factor=2, mode="nearest").cpu().numpy(),
                               [[[0.0, 0.0, 1.0, 1.0]]])
    y = t(np.arange(5.0).reshape(1, 1, 5), device)
    np.testing.assert_allclose(F.interpolate(y, size=3).cpu().numpy(), [[[0.0, 1.0, 3.0]]])
    np.testing.assert_allclose(F.interpolate(y, size=3, mode="nearest-exact").cpu().numpy(),
                               [[[0.0, 2.0, 4.0]]])
    np.testing.assert_allclose(F.interpolate(y, size=2, mode="area").cpu().numpy(), [[[1.0, 3.0]]])


@pytest.mark.parametrize("align", [False, True])
def test_interpolate_bilinear_matches_separable_reference(device, rng, align):
    x = rng.standard_normal((2, 3, 4, 5))
    got = F.interpolate(t(x, device), size=(7, 3), mode="bilinear", align_corners=align)
    ref = np_linear_1d(np_linear_1d(x, 3, align).swapaxes(-1, -2), 7, align).swapaxes(-1, -2)
    np.testing.assert_allclose(got.cpu().numpy(), ref, atol=1e-12)
    got = F.interpolate(t(x, device), scale_factor=(1.5, 2.5), mode="bilinear",
                        align_corners=align)
    assert got.shape == (2, 3, 6, 12)
    if not align:
        ref = np_linear_1d(np_linear_1d(x, 12, False, 2.5).swapaxes(-1, -2), 6, False,
                           1.5).swapaxes(-1, -2)
        np.testing.assert_allclose(got.cpu().numpy(), ref, atol=1e-12)


@pytest.mark.parametrize("mode,kw", [("nearest", {}), ("nearest-exact", {}),
                                     ("bilinear", {"align_corners": False}),
                                     ("bicubic", {"align_corners": True}),
                                     ("bicubic", {"align_corners": False}), ("area", {})])
def test_interpolate_grads(device, rng, mode, kw):
    x = t(rng.standard_normal((1, 2, 4, 3)), device, grad=True)
    fn = lambda a: F.interpolate(a, size=(5, 7), mode=mode, **kw)  # noqa: E731
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_interpolate_bicubic_reproduces_linear_and_1d_3d(device, rng):
    # cubic convolution reproduces linear functions away from the borders
    x = np.tile(np.arange(8.0), (8, 1))[None, None]
    got = F.interpolate(t(x, device), size=(8, 15), mode="bicubic", align_corners=True).cpu().numpy()
    np.testing.assert_allclose(got[0, 0, 0, 2:-2], np.linspace(0, 7, 15)[2:-2], atol=1e-12)
    y = rng.standard_normal((1, 2, 3, 4, 5))
    assert F.interpolate(t(y, device), scale_factor=2, mode="trilinear").shape == (1, 2, 6, 8, 10)
    assert F.interpolate(t(y, device), size=(2, 3, 4)).shape == (1, 2, 2, 3, 4)
    z = t(rng.standard_normal((2, 3, 6)), device, grad=True)
    assert gradgradcheck(lambda a: F.interpolate(a, size=4, mode="linear"), (z,))


def test_interpolate_errors():
    x = ember.zeros(1, 2, 3, 3)
    with pytest.raises(NotImplementedError, match="linear mode needs 3D input"):
        F.interpolate(x, scale_factor=2, mode="linear")
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        F.interpolate(x, scale_factor=2, align_corners=True)
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        F.interpolate(x, size=2, scale_factor=2)
    with pytest.raises(ValueError, match="either size or scale_factor"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="same number of spatial dimensions"):
        F.interpolate(x, size=(2, 2, 2))
    with pytest.raises(RuntimeError, match="greater than 0"):
        F.interpolate(x, size=(0, 2))
    with pytest.raises(NotImplementedError, match="unknown mode"):
        F.interpolate(x, size=2, mode="cubic")


# ---- pixel shuffle -----------------------------------------------------------------------------

def test_pixel_shuffle_roundtrip(device, rng):
    x = rng.standard_normal((2, 8, 3, 5))
    y = F.pixel_shuffle(t(x, device), 2)
    ref = x.reshape(2, 2, 2, 2, 3, 5).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 6, 10)
    np.testing.assert_array_equal(y.cpu().numpy(), ref)
    np.testing.assert_array_equal(F.pixel_unshuffle(y, 2).cpu().numpy(), x)
    assert F.pixel_shuffle(t(x[0], device), 2).shape == (2, 6, 10)
    xe = t(x[:1], device, grad=True)
    assert gradgradcheck(lambda a: F.pixel_shuffle(a, 2), (xe,))
    with pytest.raises(RuntimeError, match=r"input.size\(-3\)=8 is not divisible by 9"):
        F.pixel_shuffle(t(x, device), 3)
    with pytest.raises(RuntimeError, match=r"input.size\(-2\)=3 is not divisible by 2"):
        F.pixel_unshuffle(t(x, device), 2)
    with pytest.raises(RuntimeError, match="at least 3 dimensions"):
        F.pixel_shuffle(ember.zeros(4, 4), 2)


# ---- affine_grid / grid_sample --------------------------------------------------------------

def test_affine_grid_identity_and_grid_sample_identity(device, rng):
    theta = t([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], device)
    for align in (False, True):
        g = F.affine_grid(theta, (1, 1, 3, 4), align_corners=align).cpu().numpy()
        xs = np.linspace(-1, 1, 4) * (1 if align else 3 / 4)
        ys = np.linspace(-1, 1, 3) * (1 if align else 2 / 3)
        np.testing.assert_allclose(g[0, :, :, 0], np.tile(xs, (3, 1)), atol=1e-12)
        np.testing.assert_allclose(g[0, :, :, 1], np.tile(ys[:, None], (1, 4)), atol=1e-12)
        x = rng.standard_normal((1, 2, 3, 4))
        for mode in ("bilinear", "nearest"):
            out = F.grid_sample(t(x, device), t(g, device), mode=mode, align_corners=align)
            np.testing.assert_allclose(out.cpu().numpy(), x, atol=1e-12)
    assert F.affine_grid(t(np.zeros((2, 3, 4)), device), (2, 1, 2, 3, 4)).shape == (2, 2, 3, 4, 3)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_grads(device, rng, padding_mode, align):
    x = t(rng.standard_normal((1, 2, 3, 4)), device, grad=True)
    g = t(rng.uniform(-1.4, 1.4, (1, 2, 3, 2)), device, grad=True)
    fn = lambda a, b: F.grid_sample(a, b, padding_mode=padding_mode,  # noqa: E731
                                    align_corners=align)
    assert gradcheck(fn, (x, g))
    assert gradgradcheck(fn, (x, g))
    theta = t(rng.standard_normal((2, 2, 3)), device, grad=True)
    assert gradgradcheck(lambda th: F.affine_grid(th, (2, 1, 3, 2), align_corners=align), (theta,))


def test_grid_sample_errors():
    x, g = ember.zeros(1, 1, 3, 3), ember.zeros(1, 2, 2, 2)
    with pytest.raises(ValueError, match="expected mode to be"):
        F.grid_sample(x, g, mode="foo")
    with pytest.raises(ValueError, match="expected padding_mode"):
        F.grid_sample(x, g, padding_mode="foo")
    with pytest.raises(RuntimeError, match=r"expected grid of shape \[N, H_out, W_out, 2\]"):
        F.grid_sample(x, ember.zeros(1, 2, 2, 3))
    with pytest.raises(ValueError, match="affine matrices of shape Nx2x3"):
        F.affine_grid(ember.zeros(1, 3, 3), (1, 1, 2, 2))


# ---- against PyTorch -----------------------------------------------------------------------------

_TORCH_CASES = [
    ("interpolate", dict(size=(7, 5), mode="nearest")),
    ("interpolate", dict(scale_factor=1.7, mode="nearest")),
    ("interpolate", dict(scale_factor=(2.3, 0.6), mode="nearest-exact")),
    ("interpolate", dict(size=(6, 9), mode="bilinear", align_corners=False)),
    ("interpolate", dict(scale_factor=1.5, mode="bilinear", align_corners=True)),
    ("interpolate", dict(scale_factor=1.3, mode="bilinear", recompute_scale_factor=True)),
    ("interpolate", dict(size=(8, 3), mode="bicubic", align_corners=False)),
    ("interpolate", dict(scale_factor=2.0, mode="bicubic", align_corners=True)),
    ("interpolate", dict(size=(3, 2), mode="area")),
    ("grid_sample", dict(mode="bilinear", padding_mode="zeros", align_corners=False)),
    ("grid_sample", dict(mode="bilinear", padding_mode="border", align_corners=True)),
    ("grid_sample", dict(mode="bilinear", padding_mode="reflection", align_corners=False)),
    ("grid_sample", dict(mode="bilinear", padding_mode="reflection", align_corners=True)),
    ("grid_sample", dict(mode="nearest", padding_mode="zeros", align_corners=False)),
    ("pad", dict(pad=(2, 1, 1, 2), mode="reflect")),
]

_TORCH_SCRIPT = r"""
import json, sys
import numpy as np, torch, torch.nn.functional as F
data = np.load(sys.argv[1])
cases = json.loads(sys.argv[2])
out = {}
for i, (name, kw) in enumerate(cases):
    x = torch.from_numpy(data["x"])
    if "pad" in kw:
        kw["pad"] = tuple(kw["pad"])
    for k in ("size", "scale_factor"):
        if isinstance(kw.get(k), list):
            kw[k] = tuple(kw[k])
    if name == "grid_sample":
        out[str(i)] = F.grid_sample(x, torch.from_numpy(data["grid"]), **kw).cpu().numpy()
    else:
        out[str(i)] = getattr(F, name)(x, **kw).cpu().numpy()
np.savez(sys.argv[3], **out)
"""


def test_matches_pytorch(tmp_path, rng):
    if TORCH_PY is None:
        pytest.skip("PyTorch not available")
    x = rng.standard_normal((2, 3, 5, 6))
    grid = rng.uniform(-1.5, 1.5, (2, 4, 3, 2))
    np.savez(tmp_path / "in.npz", x=x, grid=grid)
    p = subprocess.run([TORCH_PY, "-c", _TORCH_SCRIPT, str(tmp_path / "in.npz"),
                        json.dumps(_TORCH_CASES), str(tmp_path / "out.npz")],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PYTHONPATH=""))
    if p.returncode != 0:
        pytest.skip(f"PyTorch worker failed: {p.stderr[-500:]}")
    ref = np.load(tmp_path / "out.npz")
    for i, (name, kw) in enumerate(_TORCH_CASES):
        if name == "grid_sample":
            got = F.grid_sample(t(x), t(grid), **kw).cpu().numpy()
        else:
            got = getattr(F, name)(t(x), **kw).cpu().numpy()
        np.testing.assert_allclose(got, ref[str(i)], atol=1e-10, err_msg=f"{name} {kw}")


# ---- modules -----------------------------------------------------------------------------------

def test_resample_modules(device, rng):
    import ember.nn as nn
    x = t(rng.standard_normal((1, 4, 3, 4)), device)
    up = nn.Upsample(scale_factor=2)
    assert repr(up) == "Upsample(scale_factor=2.0, mode='nearest')"
    np.testing.assert_array_equal(up(x).cpu().numpy(), F.interpolate(x, scale_factor=2).cpu().numpy())
    assert repr(nn.Upsample(size=(5, 5), mode="bilinear")) == "Upsample(size=(5, 5), mode='bilinear')"
    np.testing.assert_allclose(nn.UpsamplingBilinear2d(size=(5, 7))(x).cpu().numpy(),
                               F.interpolate(x, size=(5, 7), mode="bilinear",
                                             align_corners=True).cpu().numpy())
    np.testing.assert_array_equal(nn.UpsamplingNearest2d(scale_factor=3)(x).cpu().numpy(),
                                  F.interpolate(x, scale_factor=3).cpu().numpy())
    u = nn.Unfold(kernel_size=2, padding=1)
    assert repr(u) == "Unfold(kernel_size=2, dilation=1, padding=1, stride=1)"
    cols = u(x)
    assert nn.Fold((3, 4), 2, padding=1)(cols).shape == (1, 4, 3, 4)
    assert nn.PixelShuffle(2)(x).shape == (1, 1, 6, 8)
    assert nn.PixelUnshuffle(2)(nn.PixelShuffle(2)(x)).shape == x.shape
    np.testing.assert_array_equal(nn.ReflectionPad2d((1, 2, 0, 1))(x).cpu().numpy(),
                                  np.pad(x.cpu().numpy(), [(0, 0), (0, 0), (0, 1), (1, 2)], "reflect"))
    np.testing.assert_array_equal(nn.ReplicationPad1d(2)(x[0]).cpu().numpy(),
                                  np.pad(x.cpu().numpy()[0], [(0, 0), (0, 0), (2, 2)], "edge"))
    np.testing.assert_array_equal(nn.CircularPad2d(1)(x).cpu().numpy(),
                                  np.pad(x.cpu().numpy(), [(0, 0), (0, 0), (1, 1), (1, 1)], "wrap"))
    np.testing.assert_array_equal(nn.ZeroPad2d((1, 0, 2, 0))(x).cpu().numpy(),
                                  np.pad(x.cpu().numpy(), [(0, 0), (0, 0), (2, 0), (1, 0)]))
    c3 = nn.ConstantPad3d(1, 3.5)
    assert repr(c3) == "ConstantPad3d(padding=(1, 1, 1, 1, 1, 1), value=3.5)"
    assert c3(x).shape == (1, 6, 5, 6)
    with pytest.raises(ValueError, match="expected padding to be an int or a tuple of 4"):
        nn.ZeroPad2d((1, 2, 3))
