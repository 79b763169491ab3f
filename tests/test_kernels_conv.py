"""The CUDA convolution kernels (backends/cuda/conv.cu) against the CPU: conv1d/2d/3d and
conv_transpose1d/2d/3d forward and the gradients of input, weight and bias, unfold/fold,
nn.Conv2d. Every comparison runs twice on CUDA: through cuDNN (conv_fwd_images /
conv_bwd_images, where a libcudnn is found) and with ember.backends.cudnn.enabled off,
through im2col / col2im / conv_layout and cuBLAS (the front-end's batch-chunk path,
Note [Convolution layout]). TF32 is off (allow_tf32=False) so float32 is compared at
float32 tolerance.

How these tests run on each device: device_compare.py.
"""
import copy

import pytest
from device_compare import (
    FLOATS,
    as_numpy,
    assert_same,
    check,
    cmp_dev,
    make,
    noncontig,
    seeded,
    to_dev,
)

import ember

pytestmark = pytest.mark.usefixtures("compare_device")
F = ember.nn.functional

# Sums of up to a few hundred products: looser than the elementwise tolerances (cuDNN,
# cuBLAS and the CPU's BLAS add in different orders; the 16-bit types round the GEMM's
# result before col2im / the bias on some paths and not on others).
CONV_TOL = {"float16": (1e-2, 1e-2), "bfloat16": (5e-2, 5e-2), "float32": (1e-4, 1e-4),
            "float64": (1e-10, 1e-10)}


@pytest.fixture(params=[True, False], ids=["cudnn", "im2col"], autouse=True)
def cudnn_path(request):
    """cuDNN on (where it loads) and off: both CUDA paths; TF32 off."""
    with ember.backends.cudnn.flags(enabled=request.param, benchmark=False, deterministic=False,
                                    allow_tf32=False):
        yield request.param


def run_with_grads(f, x, w, b, gy, view=None, **kw):
    """f(x, w, b, **kw) and the gradients of x, w (and b) for the output gradient gy;
    `view` maps the leaf x to the convolution's input (e.g. a strided slice)."""
    x = x.detach().requires_grad_(True)
    w = w.detach().requires_grad_(True)
    if b is not None:
        b = b.detach().requires_grad_(True)
    y = f(view(x) if view else x, w, b, **kw)
    y.backward(gy)
    out = [y, x.grad, w.grad]
    return out + [b.grad] if b is not None else out


def check_conv(f, dtype_name, xshape, wshape, bias=True, what="", view=None, wide=None,
               grad=True, **kw):
    """Forward (and backward) of f on CPU and the device inputs of the given shapes."""
    rng = seeded(f.__name__, dtype_name, xshape, wshape, bias, what, tuple(sorted(kw.items())))
    x = make(wide or xshape, dtype_name, rng, lo=-1.0, hi=1.0)
    w = make(wshape, dtype_name, rng, lo=-1.0, hi=1.0)
    co = wshape[0] if "transpose" not in f.__name__ else wshape[1] * kw.get("groups", 1)
    b = make((co,), dtype_name, rng, lo=-1.0, hi=1.0) if bias else None
    tol = CONV_TOL.get(dtype_name)
    label = f"{f.__name__} {dtype_name} x{xshape} w{wshape} {kw} {what}"
    if not grad or dtype_name not in FLOATS:
        return check(lambda x, w, b: f(view(x) if view else x, w, b, **kw), x, w, b, tol=tol,
                     what=label)
    y0 = f(view(x) if view else x, w, b, **kw)
    gy = make(tuple(y0.shape), dtype_name, rng, lo=-1.0, hi=1.0)
    return check(run_with_grads, f, x, w, b, gy, view=view, tol=tol, what=label, **kw)


# ---- conv1d / conv2d / conv3d --------------------------------------------------------------

CONV2D_CASES = [
    # (x shape, w shape, kwargs)
    ((2, 4, 9, 10), (6, 4, 3, 3), {}),
    ((1, 4, 9, 10), (6, 4, 3, 2), {"stride": (1, 2), "padding": (2, 1)}),
    ((3, 4, 9, 10), (6, 4, 3, 3), {"padding": "same"}),
    ((2, 4, 11, 9), (6, 4, 3, 3), {"padding": "same", "dilation": (2, 1)}),
    ((2, 4, 12, 11), (6, 2, 3, 3), {"stride": 2, "padding": 1, "dilation": 2, "groups": 2}),
    ((2, 4, 7, 8), (8, 1, 3, 3), {"padding": 1, "groups": 4}),  # depthwise
    ((2, 4, 7, 8), (4, 1, 5, 5), {"padding": 2, "groups": 4, "stride": 3}),  # depthwise
    ((2, 3, 6, 7), (5, 3, 1, 1), {}),  # 1x1: the copy-free identity columns
    ((2, 3, 6, 7), (5, 3, 1, 1), {"stride": 2}),
    ((1, 3, 6, 7), (5, 3, 6, 7), {}),  # kernel as large as the image: a 1x1 output
    ((2, 1, 5, 5), (1, 1, 2, 2), {"padding": (1, 0)}),
]


@pytest.mark.parametrize("case", range(len(CONV2D_CASES)))
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_conv2d(case, bias):
    xs, ws, kw = CONV2D_CASES[case]
    for name in ("float32", "float64"):
        check_conv(F.conv2d, name, xs, ws, bias=bias, **kw)


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_conv2d_16bit(dtype_name):
    for xs, ws, kw in CONV2D_CASES[:7]:
        check_conv(F.conv2d, dtype_name, xs, ws, **kw)


@pytest.mark.parametrize("dtype_name", ["int16", "int32", "int64"])
def test_conv2d_integers(dtype_name):
    # forward only (integer tensors take no gradient); cuDNN declines, im2col + the
    # integer GEMM run
    for xs, ws, kw in CONV2D_CASES[:6]:
        check_conv(F.conv2d, dtype_name, xs, ws, **kw)


def test_conv2d_one_byte_integers_raise_as_cpu():
    # the CPU's im2col takes 2-, 4- and 8-byte elements only: CUDA raises the same
    for name in ("uint8", "int8"):
        check_conv(F.conv2d, name, (1, 2, 5, 5), (3, 2, 3, 3))


CONV1D_CASES = [
    ((2, 4, 11), (6, 4, 3), {}),
    ((1, 4, 11), (6, 2, 3), {"stride": 2, "padding": 1, "dilation": 2, "groups": 2}),
    ((3, 4, 16), (4, 1, 5), {"padding": "same", "groups": 4}),
    ((2, 3, 9), (5, 3, 4), {"padding": "same"}),  # even kernel: asymmetric 'same' padding
]


@pytest.mark.parametrize("dtype_name", FLOATS)
def test_conv1d(dtype_name):
    for xs, ws, kw in CONV1D_CASES:
        check_conv(F.conv1d, dtype_name, xs, ws, **kw)
        check_conv(F.conv1d, dtype_name, xs, ws, bias=False, **kw)


CONV3D_CASES = [
    ((2, 2, 5, 6, 4), (4, 2, 3, 3, 3), {"padding": 1}),
    ((1, 4, 5, 6, 7), (4, 2, 3, 2, 3), {"groups": 2, "stride": (2, 1, 1), "padding": (1, 0, 1),
                                        "dilation": (1, 2, 1)}),
    ((2, 3, 4, 5, 6), (3, 1, 3, 3, 3), {"groups": 3, "padding": "same"}),
    ((2, 3, 1, 5, 6), (2, 3, 1, 3, 3), {"padding": (1, 1, 1)}),  # depth 1, padded: 3-d
]


@pytest.mark.parametrize("dtype_name", FLOATS)
def test_conv3d(dtype_name):
    for xs, ws, kw in CONV3D_CASES:
        check_conv(F.conv3d, dtype_name, xs, ws, **kw)
    xs, ws, kw = CONV3D_CASES[0]
    check_conv(F.conv3d, dtype_name, xs, ws, bias=False, **kw)


# ---- transposed convolutions (the input-gradient kernels, with bias) ------------------------

TRANSPOSE_CASES = [
    (F.conv_transpose1d, (2, 4, 7), (4, 3, 3), {"stride": 2, "padding": 1, "output_padding": 1}),
    (F.conv_transpose1d, (1, 4, 7), (4, 2, 3), {"groups": 2, "dilation": 2}),
    (F.conv_transpose2d, (2, 4, 5, 6), (4, 3, 3, 3), {}),
    (F.conv_transpose2d, (2, 4, 5, 6), (4, 3, 3, 2), {"stride": (2, 3), "padding": (1, 0),
                                                      "output_padding": (1, 2)}),
    (F.conv_transpose2d, (1, 4, 5, 6), (4, 1, 3, 3), {"groups": 4, "stride": 2, "dilation": 2}),
    (F.conv_transpose3d, (2, 2, 3, 4, 3), (2, 3, 3, 2, 3), {"stride": 2, "padding": 1}),
]


@pytest.mark.parametrize("dtype_name", FLOATS)
@pytest.mark.parametrize("case", range(len(TRANSPOSE_CASES)))
def test_conv_transpose(case, dtype_name):
    f, xs, ws, kw = TRANSPOSE_CASES[case]
    check_conv(f, dtype_name, xs, ws, **kw)
    if case == 0:
        check_conv(f, dtype_name, xs, ws, bias=False, **kw)


# ---- layouts and odd shapes ------------------------------------------------------------------

@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_conv_noncontiguous_inputs(dtype_name):
    # a strided slice of a wider leaf (its gradient is scattered back through the view)
    def cut(x):
        return x[..., ::2][..., :10]

    check_conv(F.conv2d, dtype_name, (2, 4, 9, 10), (6, 4, 3, 3), wide=(2, 4, 9, 21), view=cut,
               padding=1)
    check_conv(F.conv2d, dtype_name, (2, 4, 9, 10), (6, 2, 3, 3), wide=(2, 4, 9, 21), view=cut,
               groups=2, stride=2)
    # a channels-last input and a permuted weight
    rng = seeded("perm", dtype_name)
    x = make((2, 9, 10, 4), dtype_name, rng).permute(0, 3, 1, 2)
    w = make((3, 3, 6, 4), dtype_name, rng).permute(2, 3, 0, 1)
    b = noncontig((6,), dtype_name, rng)
    check(lambda x, w, b: F.conv2d(x, w, b, padding=1), x, w, b, tol=CONV_TOL[dtype_name],
          what="permuted")


def test_conv_unbatched_and_batch_of_one():
    for name in ("float32", "float64"):
        check_conv(F.conv2d, name, (4, 9, 10), (6, 4, 3, 3), padding=1)  # unbatched (C, H, W)
        check_conv(F.conv1d, name, (4, 11), (6, 4, 3))
        check_conv(F.conv2d, name, (1, 4, 9, 10), (6, 4, 3, 3), stride=2)


def test_conv_empty():
    for name in ("float32", "float64"):
        check_conv(F.conv2d, name, (0, 4, 9, 10), (6, 4, 3, 3), padding=1)  # no images
        check_conv(F.conv2d, name, (2, 4, 9, 10), (0, 4, 3, 3))  # no output channels
        check_conv(F.conv2d, name, (2, 0, 9, 10), (6, 0, 3, 3))  # no input channels


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_conv_large(dtype_name):
    # many blocks and grid-stride iterations; one image's columns past the front-end's
    # 2 MiB chunk budget (one image per chunk, the GEMM writing y directly) ...
    check_conv(F.conv2d, dtype_name, (2, 3, 130, 131), (8, 3, 3, 3), padding=1)
    # ... and many small images per chunk (the [C, N*L] -> NCL layout kernel with bias)
    check_conv(F.conv2d, dtype_name, (96, 3, 12, 12), (16, 3, 3, 3), stride=1, padding=1)
    check_conv(F.conv_transpose2d, dtype_name, (2, 8, 64, 65), (8, 4, 3, 3), stride=2, padding=1)


def test_conv_huge_stride_and_padding():
    # strides and pads past 32 bits with a tiny output: the kernels' 64-bit index math
    # (cuDNN declines: its sizes are ints)
    for name in ("float32", "float64"):
        check_conv(F.conv2d, name, (1, 2, 5, 5), (3, 2, 3, 3), stride=2**34, padding=2**33)
        check_conv(F.conv1d, name, (2, 2, 7), (3, 2, 2), stride=2**40)


def test_conv_errors_match_cpu():
    rng = seeded("errors")
    x = make((2, 4, 9, 10), "float32", rng)
    w = make((6, 4, 3, 3), "float32", rng)
    for args, kw in [
        ((x, make((6, 3, 3, 3), "float32", rng)), {}),  # channel mismatch
        ((x, w, make((5,), "float32", rng)), {}),  # bias size
        ((x, w), {"groups": 3}),  # groups do not divide
        ((x, w), {"stride": 0}),
        ((x, w), {"padding": "same", "stride": 2}),
        ((make((2, 4, 2, 2), "float32", rng), w), {}),  # smaller than the kernel
        ((x, w.to(ember.float64)), {}),  # dtype mismatch
    ]:
        check(lambda *a, **k: F.conv2d(*a, **k), *args, what=f"error {kw}", **kw)


# ---- unfold / fold (the im2col / col2im stubs directly) ---------------------------------------

FOLD_CASES = [
    ((2, 3, 7, 8), {"kernel_size": (2, 3)}),
    ((1, 3, 9, 9), {"kernel_size": 3, "dilation": 2, "padding": 1, "stride": 2}),
    ((2, 2, 6, 5), {"kernel_size": (3, 2), "padding": (2, 1), "stride": (1, 2)}),
]


@pytest.mark.parametrize("dtype_name", FLOATS)
def test_unfold_fold(dtype_name):
    tol = CONV_TOL[dtype_name]
    for shape, kw in FOLD_CASES:
        rng = seeded("fold", dtype_name, shape)
        x = make(shape, dtype_name, rng)
        cols = F.unfold(x, **kw)
        check(lambda x: F.unfold(x, **kw), x, tol=tol, what=f"unfold {shape} {kw}")
        # fold sums the overlapping taps: col2im, in the CPU's order of additions
        c = make(tuple(cols.shape), dtype_name, rng)
        check(lambda c: F.fold(c, shape[2:], **kw), c, tol=tol, what=f"fold {shape} {kw}")
        if dtype_name in ("float32", "float64"):
            g = make(tuple(cols.shape), dtype_name, rng)

            def unfold_grad(x, g):
                x = x.detach().requires_grad_(True)
                y = F.unfold(x, **kw)
                y.backward(g)
                return [y, x.grad]

            check(unfold_grad, x, g, tol=tol, what=f"unfold grad {shape} {kw}")
    # unbatched, non-contiguous
    rng = seeded("fold-nc", dtype_name)
    x = noncontig((3, 7, 8), dtype_name, rng)
    check(lambda x: F.unfold(x, kernel_size=2), x, tol=tol, what="unfold strided")


def test_fold_integers_and_errors():
    # fold / unfold take floating inputs only: the same error on both devices
    rng = seeded("fold-int")
    check(lambda x: F.unfold(x, kernel_size=2), make((1, 2, 4, 4), "int32", rng), what="int")
    check(lambda x: F.fold(x, (4, 4), kernel_size=2), make((1, 8, 9), "float32", rng),
          what="fold ok")
    check(lambda x: F.fold(x, (4, 4), kernel_size=2), make((1, 7, 9), "float32", rng),
          what="fold bad channels")


# ---- nn.Conv2d, and switches ------------------------------------------------------------------

def test_conv2d_module():
    ember.manual_seed(0)
    for kw in ({}, {"stride": 2, "padding": 1, "groups": 2, "bias": False},
               {"padding": "same", "dilation": 2}):
        m = ember.nn.Conv2d(4, 6, 3, **kw)
        md = copy.deepcopy(m).to(cmp_dev())
        rng = seeded("module", tuple(sorted(kw.items())))
        x = make((3, 4, 10, 9), "float32", rng)
        y = m(x)
        yd = md(to_dev(x))
        assert_same(y, yd, CONV_TOL["float32"], what=f"Conv2d {kw}")
        gy = make(tuple(y.shape), "float32", rng)
        y.backward(gy)
        yd.backward(to_dev(gy))
        assert_same(m.weight.grad, md.weight.grad, CONV_TOL["float32"], what=f"weight grad {kw}")
        if m.bias is not None:
            assert_same(m.bias.grad, md.bias.grad, CONV_TOL["float32"], what=f"bias grad {kw}")


def test_deterministic_backward_is_bitwise_repeatable():
    rng = seeded("det")
    x = to_dev(make((4, 8, 16, 16), "float32", rng))
    w = to_dev(make((8, 8, 3, 3), "float32", rng))
    gy = to_dev(make((4, 8, 16, 16), "float32", rng))
    with ember.backends.cudnn.flags(enabled=True, deterministic=True, allow_tf32=False):
        r1 = run_with_grads(F.conv2d, x, w, None, gy, padding=1)
        r2 = run_with_grads(F.conv2d, x, w, None, gy, padding=1)
    for a, b in zip(r1, r2):
        assert (as_numpy(a) == as_numpy(b)).all()


def test_benchmark_mode():
    # ember.backends.cudnn.benchmark: the algorithms are timed (cudnnFind*AlgorithmEx) on
    # the first call of a geometry; the results stay those of the CPU
    with ember.backends.cudnn.flags(enabled=True, benchmark=True, allow_tf32=False):
        for name in ("float32", "float64"):
            for xs, ws, kw in CONV2D_CASES[:6]:
                check_conv(F.conv2d, name, xs, ws, what="benchmark", **kw)
                check_conv(F.conv2d, name, xs, ws, what="benchmark again", **kw)


def test_tf32_allowed_stays_close():
    # allow_tf32 (PyTorch's default) may use TF32 tensor cores for float32: ~1e-3 relative
    rng = seeded("tf32")
    x = make((2, 16, 12, 12), "float32", rng, lo=-1.0, hi=1.0)
    w = make((16, 16, 3, 3), "float32", rng, lo=-1.0, hi=1.0)
    with ember.backends.cudnn.flags(enabled=True, allow_tf32=True):
        check(lambda x, w: F.conv2d(x, w, padding=1), x, w, tol=(2e-2, 2e-2), what="tf32")

