"""The CUDA kernels (backends/cuda/*.cu) against the CPU kernels: every elementwise op of
kernels/ops.def in every dtype, where / clamp / lerp / addcmul / addcdiv, the reductions,
the matmul family (cuBLAS and the integer kernel), the random fills (bitwise equal to the
CPU's draws for one seed where the arithmetic allows, see backends/cuda/random.cu) and
softmax / log_softmax forward and backward; on 0-d, empty, non-contiguous, broadcast and
large shapes. Each test runs the op on the CPU and on CUDA from the same inputs and
compares; where the CPU raises, CUDA must raise the same exception type.

How these tests run on each device: device_compare.py.
"""
import math
import re
from pathlib import Path

import numpy as np
import pytest
from device_compare import (
    ALL,
    FLOATS,
    INTS,
    as_numpy,
    assert_same,
    check,
    cmp_dev,
    dt,
    make,
    noncontig,
    seeded,
    skip_on_cpu,
    to_dev,
)

import ember

pytestmark = pytest.mark.usefixtures("compare_device")

_OPS_DEF = Path(__file__).resolve().parents[1] / "csrc" / "ember" / "kernels" / "ops.def"


def _ops_def():
    text = _OPS_DEF.read_text()
    unary_part, binary_part = text.split("#define EMBER_BINARY_OPS")
    row = re.compile(r"^\s*_\((\w+), (\w+), (\w+)\)", re.M)  # not the comments' _(name, ..)
    return row.findall(unary_part), row.findall(binary_part)


UNARY, BINARY = _ops_def()


# ---- elementwise ----------------------------------------------------------------------------

UNARY_SHAPES = [(), (0,), (0, 3), (7,), (5, 7), (2, 3, 4, 5)]


@pytest.mark.parametrize("dtype_name", ALL)
@pytest.mark.parametrize("name", [u[0] for u in UNARY])
def test_unary_ops_match_cpu(name, dtype_name):
    rng = seeded(name, dtype_name)
    f = getattr(ember, name)
    for shape in UNARY_SHAPES:
        check(f, make(shape, dtype_name, rng), what=f"{name} {dtype_name} {shape}")
    check(f, make((64,), dtype_name, rng, special=True), what=f"{name} {dtype_name} special")
    x = noncontig((5, 7), dtype_name, rng)
    check(f, x, what=f"{name} {dtype_name} strided")
    check(f, make((7, 5), dtype_name, rng).t(), what=f"{name} {dtype_name} transposed")
    # a 6-d tensor whose dims cannot coalesce: the general offset path
    y = make((3, 2, 3, 2, 3, 4), dtype_name, rng)[:, :, ::2, :, ::2, ::3]
    check(f, y, what=f"{name} {dtype_name} 6-d strided")


@pytest.mark.parametrize("dtype_name", ALL)
def test_unary_out_and_inplace(dtype_name):
    rng = np.random.default_rng(1)
    x = make((4, 6), dtype_name, rng)
    if dtype_name != "bool":
        check(lambda t: t.clone().neg_(), x, what="neg_")
        check(lambda t: t.t().clone().abs_(), x, what="abs_")
    if dtype_name in FLOATS:
        check(lambda t: ember.exp(t, out=ember.empty_like(t)), x, what="exp out=")
        check(lambda t: t.clone()[:, ::2].sin_(), x, what="sin_ strided")


def _binary_inputs(name, dtype_name, rng, shape_a, shape_b):
    nonzero = name in ("floor_divide", "remainder", "fmod", "div") and dtype_name != "bool"
    # both nonzero: the "transposed b" case swaps them (an integer division by zero raises on
    # the CPU; on CUDA, as in PyTorch, it is not checked)
    a = make(shape_a, dtype_name, rng, nonzero=nonzero)
    b = make(shape_b, dtype_name, rng, nonzero=nonzero)
    if name == "pow" and dtype_name in INTS:
        b = ember.from_numpy(rng.integers(0 if dtype_name == "uint8" else -2, 6,
                                          size=shape_b)).to(dt(dtype_name))
    return a, b


BINARY_SHAPES = [((5, 7), (5, 7)), ((5, 1), (1, 7)), ((7,), (5, 7)), ((), (5, 7)),
                 ((5, 7), ()), ((0, 7), (1, 7)), ((2, 1, 3, 4), (3, 1)), ((), ())]


@pytest.mark.parametrize("dtype_name", ALL)
@pytest.mark.parametrize("name", [b[0] for b in BINARY])
def test_binary_ops_match_cpu(name, dtype_name):
    rng = seeded(name, dtype_name)
    f = getattr(ember, name)
    for sa, sb in BINARY_SHAPES:
        a, b = _binary_inputs(name, dtype_name, rng, sa, sb)
        check(f, a, b, what=f"{name} {dtype_name} {sa} {sb}")
    a, b = _binary_inputs(name, dtype_name, rng, (7, 5), (5, 7))
    check(f, a.t(), b, what=f"{name} {dtype_name} transposed a")
    check(f, b, a.t(), what=f"{name} {dtype_name} transposed b")
    a, b = _binary_inputs(name, dtype_name, rng, (8, 5), (8, 5))
    check(f, a[::2], b[1::2], what=f"{name} {dtype_name} stepped")
    if dtype_name in FLOATS:
        a = make((64,), dtype_name, rng, special=True)
        b = make((64,), dtype_name, rng, special=True).flip(0)
        check(f, a, b, what=f"{name} {dtype_name} special values")
    # a Python scalar operand (a wrapped number, moved to the device by the front-end)
    a, _ = _binary_inputs(name, dtype_name, rng, (3, 4), (3, 4))
    scalar = True if dtype_name == "bool" else (2 if dtype_name in INTS else 1.5)
    check(lambda t: f(t, scalar), a, what=f"{name} {dtype_name} scalar")


def test_binary_mixed_dtypes_out_and_inplace():
    rng = np.random.default_rng(2)
    a = make((4, 5), "float32", rng)
    b = make((4, 5), "int64", rng)
    h = make((5,), "float16", rng)
    check(ember.add, a, b, what="float32 + int64")
    check(ember.mul, b, h, what="int64 * float16")
    check(ember.div, b, make((4, 5), "int32", rng, nonzero=True), what="int true division")
    check(lambda x, y: x.clone().add_(y), a, h, what="add_ broadcast")
    check(lambda x, y: ember.sub(x, y, out=ember.empty((4, 5), dtype=ember.float64,
                                                      device=x.device)), a, b, what="sub out=")
    check(lambda x, y: ember.add(x, y, alpha=3), a, b, what="add alpha")


def test_large_tensor_grid_stride():
    rng = np.random.default_rng(3)
    n = (1 << 24) + 1000  # more elements than one grid of 65536 x 256 threads
    a = ember.from_numpy(rng.standard_normal(n).astype(np.float32))
    check(ember.add, a, a, what="large add")
    check(ember.sigmoid, a, what="large sigmoid")


@pytest.mark.parametrize("dtype_name", ALL)
def test_where_clamp_lerp_addcmul_addcdiv(dtype_name):
    rng = np.random.default_rng(4)
    cond = make((5, 7), "bool", rng)
    a, b = make((5, 7), dtype_name, rng), make((1, 7), dtype_name, rng)
    check(ember.where, cond, a, b, what="where")
    check(ember.where, cond.t(), a.t(), make((5,), dtype_name, rng), what="where strided")
    check(ember.where, make((), "bool", rng), a, b, what="where 0-d cond")
    if dtype_name != "bool":
        lo, hi = make((5, 7), dtype_name, rng), make((7,), dtype_name, rng)
        check(lambda x, y, z: ember.clamp(x, min=y, max=z), a, lo, hi, what="clamp tensors")
        check(lambda x: ember.clamp(x, min=-1, max=2), a, what="clamp scalars")
    if dtype_name in FLOATS:
        w = make((5, 7), dtype_name, rng, lo=0, hi=1)
        check(ember.lerp, a, make((5, 7), dtype_name, rng), w, what="lerp tensor weight")
        check(lambda x, y: ember.lerp(x, y, 0.25), a, b, what="lerp scalar weight")
        c = make((5, 7), dtype_name, rng, nonzero=True)
        check(lambda x, y, z: ember.addcmul(x, y, z, value=0.5), a, b, c, what="addcmul")
        check(lambda x, y, z: ember.addcdiv(x, y, z, value=2), a, b, c, what="addcdiv")


# ---- reductions ------------------------------------------------------------------------------

# (shape, dim): dim None is a full reduction
REDUCE_GEOMS = [((), None), ((), 0), ((0, 4), 0), ((0, 4), 1), ((6, 1000), 1), ((1000, 6), 0),
                ((3, 4, 5), (0, 2)), ((3, 4, 5), None), ((2, 3, 4, 5), (1, 3)),
                ((4, 1, 3), 1), ((3, 700), -1)]


def _reduce_inputs(shape, dtype_name, rng, **kw):
    yield "contiguous", make(shape, dtype_name, rng, **kw)
    if len(shape) >= 2 and all(s > 0 for s in shape):
        yield "transposed", make(shape[::-1], dtype_name, rng, **kw).permute(
            *reversed(range(len(shape))))


def _run_reductions(fn, dtypes, what, keepdim=True, int_dim=False, **kw):
    rng = seeded(what)
    for dtype_name in dtypes:
        for shape, dim in REDUCE_GEOMS:
            if int_dim and not (dim is None or isinstance(dim, int)):
                continue
            for desc, x in _reduce_inputs(shape, dtype_name, rng, **kw):
                tag = f"{what} {dtype_name} {shape} dim={dim} {desc}"
                if dim is None:
                    check(lambda t: fn(t), x, what=tag)
                else:
                    check(lambda t: fn(t, dim), x, what=tag)
                    if keepdim:
                        check(lambda t: fn(t, dim, keepdim=True), x, what=tag + " keepdim")


def test_sum_mean_prod():
    _run_reductions(ember.sum, ALL, "sum")
    _run_reductions(ember.mean, FLOATS, "mean")
    _run_reductions(ember.prod, ALL, "prod", int_dim=True, lo=0.9, hi=1.1)
    rng = np.random.default_rng(5)
    big = make(((1 << 20) + 7,), "float32", rng)
    check(ember.sum, big, tol=(1e-5, 1e-3), what="sum of 2**20 floats")
    check(lambda t: ember.sum(t, dtype=ember.float64), make((5, 6), "int32", rng),
          what="sum dtype=")


def test_reduction_shapes_that_split():
    """The CUDA reduction's three shapes (Note [Split CUDA reductions]): one block per output;
    few long rows split over several blocks and combined by a partials pass; a contiguous kept
    dim reduced one thread per output, its reduced positions split when the outputs are few."""
    rng = seeded("split reductions")
    for shape, dims in [((100003,), None), ((3, 40000), 1), ((40000, 3), 0), ((7, 20000), -1),
                        ((5000, 7), 0), ((2, 30000, 3), 1), ((64, 513), 0), ((1, 9000), 1)]:
        x = make(shape, "float32", rng)
        kw = {} if dims is None else {"dim": dims}
        check(lambda t: ember.sum(t, **kw), x, tol=(1e-5, 1e-3), what=f"sum {shape} {dims}")
        check(lambda t: ember.var(t, **kw), x, tol=(1e-5, 1e-4), what=f"var {shape} {dims}")
        if dims is not None:
            check(lambda t: ember.max(t, dims), x, what=f"max {shape} {dims}")
            check(lambda t: ember.argmin(t, dims), x, what=f"argmin {shape} {dims}")
        xi = make(shape, "int64", rng)
        check(lambda t: ember.sum(t, **kw), xi, what=f"int64 sum {shape} {dims}")
        check(lambda t: ember.amax(t, **kw), xi, what=f"int64 amax {shape} {dims}")


def test_casts_keep_wide_values():
    """int64 and float64 values above 2**24 survive casts between them (CUDA once cast through
    float), and 16-bit floats and bools convert as on the CPU."""
    rng = seeded("wide casts")
    big = ember.from_numpy(rng.integers(-(2**53), 2**53, size=64))
    for dtype in (ember.float64, ember.int32, ember.float16, ember.bool):
        check(lambda t: t.to(dtype), big, what=f"int64 -> {dtype}")
    check(lambda t: t.to(ember.int64), big.to(ember.float64), what="float64 -> int64")
    check(lambda t: t.to(ember.float32).to(ember.float64), big.to(ember.float64),
          what="float64 -> float32 -> float64")


def test_amax_amin_max_min_argmax_argmin():
    _run_reductions(ember.amax, ALL, "amax")
    _run_reductions(ember.amin, ALL, "amin")
    _run_reductions(ember.max, ALL, "max", int_dim=True)
    _run_reductions(ember.min, ALL, "min", int_dim=True)
    _run_reductions(ember.argmax, ALL, "argmax", int_dim=True)
    _run_reductions(ember.argmin, ALL, "argmin", int_dim=True)


def test_argmax_ties_and_nan_pick_the_first_index():
    rng = np.random.default_rng(6)
    ties = ember.from_numpy(rng.integers(0, 3, size=(7, 3000)).astype(np.int32))
    for f in (ember.argmax, ember.argmin):
        check(f, ties, 1, what="ties dim 1")
        check(f, ties, 0, what="ties dim 0")
        check(f, ties, what="ties full")
    x = rng.standard_normal((5, 900))
    x[1, 17] = x[1, 400] = np.nan
    x[3, 899] = np.nan
    t = ember.from_numpy(x)
    for f in (ember.argmax, ember.argmin, ember.max, ember.min):
        check(f, t, 1, what=f"{f.__name__} NaN")
    check(ember.amax, t, 1, what="amax NaN")
    check(ember.amax, t, what="amax NaN full")


def test_all_any_count_nonzero():
    for f, name in ((ember.all, "all"), (ember.any, "any")):
        _run_reductions(f, ALL, name, int_dim=True)
    _run_reductions(ember.count_nonzero, ALL, "count_nonzero", keepdim=False)
    z = ember.zeros(3, 1000, dtype=ember.uint8)
    check(ember.all, z, 1, what="all uint8")
    check(ember.any, z, what="any uint8")


def test_var_std():
    for f, name in ((ember.var, "var"), (ember.std, "std")):
        _run_reductions(f, FLOATS, name)
        rng = np.random.default_rng(7)
        x = make((6, 500), "float64", rng)
        check(lambda t: f(t, 1, correction=0), x, what=f"{name} correction=0")
        check(lambda t: f(t, 1, correction=5), x, what=f"{name} correction=5")
    for f, name in ((ember.var_mean, "var_mean"), (ember.std_mean, "std_mean")):
        _run_reductions(f, FLOATS, name)
    shifted = ember.from_numpy(np.random.default_rng(8).standard_normal(10000) + 1e6)
    check(ember.var, shifted, tol=(1e-9, 0), what="var with a large mean")


@pytest.mark.parametrize("p", [0, 1, 2, 3.5, math.inf, -math.inf])
def test_vector_norms(p):
    _run_reductions(lambda t, dim=None, keepdim=False: ember.linalg.vector_norm(
        t, p, dim=dim, keepdim=keepdim), FLOATS, f"vector_norm p={p}")


# ---- matmul ---------------------------------------------------------------------------------

MM_TOL = {"float16": (1e-2, 1e-2), "bfloat16": (3e-2, 3e-2), "float32": (1e-4, 1e-4),
          "float64": (1e-10, 1e-10)}


@pytest.mark.parametrize("dtype_name", FLOATS + INTS + ["bool"])
def test_matmul_family(dtype_name):
    rng = np.random.default_rng(9)
    tol = MM_TOL.get(dtype_name)

    def m(*shape):
        return make(shape, dtype_name, rng, lo=-1, hi=1) if dtype_name in FLOATS else \
            ember.from_numpy(rng.integers(0, 4, size=shape)).to(dt(dtype_name))

    a, b = m(5, 7), m(7, 3)
    cases = [
        ("mm", ember.mm, (a, b)),
        ("mm a.t", ember.mm, (m(7, 5).t(), b)),
        ("mm b.t", ember.mm, (a, m(3, 7).t())),
        ("mm both t", ember.mm, (m(7, 5).t(), m(3, 7).t())),
        ("mm row slices (ld > cols)", ember.mm, (m(5, 10)[:, :7], m(7, 9)[:, 2:5])),
        ("mm stepped (copied by the front-end)", ember.mm, (m(5, 14)[:, ::2], b)),
        ("mm m=1", ember.mm, (m(1, 7), b)),
        ("mm n=1", ember.mm, (a, m(7, 1))),
        ("mm k=0", ember.mm, (m(5, 0), m(0, 3))),
        ("mm empty", ember.mm, (m(0, 7), b)),
        ("mm 64x96x80", ember.mm, (m(64, 96), m(96, 80))),
        ("bmm", ember.bmm, (m(4, 5, 7), m(4, 7, 3))),
        ("bmm transposed", ember.bmm, (m(4, 7, 5).transpose(1, 2), m(4, 3, 7).transpose(1, 2))),
        ("matmul broadcast batch", ember.matmul, (m(2, 1, 5, 7), m(3, 7, 4))),
        ("matmul 3d @ 2d", ember.matmul, (m(3, 5, 7), b)),
        ("matmul 1d @ 2d", ember.matmul, (m(7), b)),
        ("matmul 2d @ 1d", ember.matmul, (a, m(7))),
        ("mv", ember.mv, (a, m(7))),
        ("dot", ember.dot, (m(7), m(7))),
        ("outer", ember.outer, (m(5), m(3))),
    ]
    for what, f, args in cases:
        check(f, *args, tol=tol, what=f"{what} {dtype_name}")
    c = m(5, 3)
    check(lambda *t: ember.addmm(*t, beta=2, alpha=3), c, a, b, tol=tol, what="addmm")
    check(lambda *t: ember.addmm(*t), m(3), a, b, tol=tol, what="addmm broadcast input")
    check(lambda *t: ember.baddbmm(*t, beta=0), m(4, 5, 3), m(4, 5, 7), m(4, 7, 3), tol=tol,
          what="baddbmm beta=0")
    check(lambda *t: ember.addmv(*t, alpha=2), m(5), a, m(7), tol=tol, what="addmv")
    check(lambda x, y: ember.mm(x, y, out=ember.empty((5, 3), dtype=x.dtype, device=x.device)),
          a, b, tol=tol, what="mm out=")
    check(lambda x, y, z: x.clone().addmm_(y, z), c, a, b, tol=tol, what="addmm_")
    if dtype_name in FLOATS:  # beta == 0 ignores the input, NaN included
        nan_c = ember.full((5, 3), float("nan"), dtype=dt(dtype_name))
        check(lambda *t: ember.addmm(*t, beta=0), nan_c, a, b, tol=tol, what="addmm beta=0 NaN")


def test_matmul_gradients_match():
    rng = np.random.default_rng(10)

    def grads(a0, b0):
        a = a0.detach().clone().requires_grad_(True)
        b = b0.detach().clone().requires_grad_(True)
        w = ember.arange(3, dtype=ember.float64, device=a.device)
        (ember.matmul(a, b) * w).sum().backward()
        return a.grad, b.grad
    check(grads, make((4, 6), "float64", rng), make((6, 3), "float64", rng), what="matmul grads")



@pytest.mark.parametrize("dtype_name", FLOATS)
def test_linear_bias_epilogue(dtype_name):
    """A Linear's bias added in the GEMM's epilogue (cuBLASLt, Note [cuBLASLt bias epilogue])
    or by the copy + GEMM fallback: the same result, for aligned and offset operands,
    transposed weights, a bias that is a view at an odd offset, and with the fallback forced
    by turning 16-bit reduced-precision reductions off."""
    rng = seeded("linear", dtype_name)
    tol = {"float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2)}.get(dtype_name)
    F = ember.nn.functional

    def eighths(shape):
        # multiples of 1/8 in [-3, 3]: every partial sum of up to 784 products is a multiple
        # of 1/64 below 2**13, exact in float32, so cuBLAS's summation order and the CPU's give
        # the same float32 bits (random values differed by up to 1.4e-4 on the GPU)
        return (make(shape, "float64", rng) * 8).round().div(8).to(dt(dtype_name))

    for m, k, n in [(1, 1, 1), (64, 784, 512), (7, 13, 5), (33, 8, 17)]:
        x, w, b = eighths((m, k)), eighths((n, k)), eighths((n,))
        check(F.linear, x, w, b, tol=tol, what=f"linear {m}x{k}x{n}")
        check(ember.addmm, b, x, w.t(), tol=tol, what=f"addmm {m}x{k}x{n}")
        check(lambda b_, x_, w_: ember.addmm(b_, x_, w_.t(), beta=2.0, alpha=0.5), b, x, w,
              tol=tol, what=f"addmm beta 2 {m}x{k}x{n}")
    wide = make((9, 41), dtype_name, rng)
    x, w, b = wide[:, 1:17], make((16, 5), dtype_name, rng).t(), make((6,), dtype_name, rng)[1:]
    check(F.linear, x, w, b, tol=tol, what="linear offset views")
    if dtype_name in ("float16", "bfloat16"):
        m = ember.backends.cuda.matmul
        name = f"allow_{'fp16' if dtype_name == 'float16' else 'bf16'}_reduced_precision_reduction"
        setattr(m, name, False)
        try:
            x, w, b = make((8, 32), dtype_name, rng), make((4, 32), dtype_name, rng), \
                make((4,), dtype_name, rng)
            check(F.linear, x, w, b, tol=tol, what="linear, no reduced precision")
        finally:
            setattr(m, name, True)

    def grads(x0, w0, b0):
        x, w, b = (t.detach().clone().requires_grad_(True) for t in (x0, w0, b0))
        F.linear(x, w, b).pow(2).sum().backward()
        return x.grad, w.grad, b.grad
    if dtype_name in ("float32", "float64"):
        check(grads, make((5, 6), dtype_name, rng), make((3, 6), dtype_name, rng),
              make((3,), dtype_name, rng), what="linear grads")


def test_tf32_matmul_is_close_and_off_by_default():
    rng = seeded("tf32")
    a, b = make((256, 256), "float32", rng), make((256, 256), "float32", rng)
    check(ember.mm, a, b, what="float32 mm, TF32 off")
    ember.set_float32_matmul_precision("high")
    try:
        check(ember.mm, a, b, tol=(5e-3, 5e-2), what="float32 mm, TF32 on")
    finally:
        ember.set_float32_matmul_precision("highest")

# ---- random -----------------------------------------------------------------------------------

def _draw_both(draw, seed=1234):
    """draw(device) after manual_seed(seed), on the CPU and on the device."""
    ember.manual_seed(seed)
    cpu = draw("cpu")
    ember.manual_seed(seed)
    dev = draw(cmp_dev())
    return cpu, dev


def assert_bitwise(cpu, dev, what):
    assert dev.device.type == ember.device(cmp_dev()).type and dev.dtype == cpu.dtype, what
    np.testing.assert_array_equal(as_numpy(dev), as_numpy(cpu), err_msg=what)


@pytest.mark.parametrize("n", [1, 3, 4, 5, 1001, 100003])
@pytest.mark.parametrize("dtype_name", FLOATS)
def test_uniform_is_bitwise_the_cpu_stream(dtype_name, n):
    # Note [Philox streams]: same seed, same offset, same blocks and lanes, same rounding.
    cpu, dev = _draw_both(lambda d: ember.rand(n, dtype=dt(dtype_name), device=d))
    assert_bitwise(cpu, dev, f"rand {dtype_name} {n}")
    cpu, dev = _draw_both(lambda d: ember.empty(n, dtype=dt(dtype_name), device=d).uniform_(-2, 5))
    assert_bitwise(cpu, dev, f"uniform_ {dtype_name} {n}")


def test_draws_advance_the_generator_alike():
    def two_draws(d):
        a = ember.rand(7, device=d)
        b = ember.rand(5, 3, dtype=ember.float64, device=d)
        c = ember.randint(0, 10, (9,), device=d)
        return ember.cat([a, b.flatten().to(ember.float32), c.to(ember.float32)])
    cpu, dev = _draw_both(two_draws)
    assert_bitwise(cpu, dev, "interleaved draws")
    # a non-contiguous target is filled through a contiguous buffer, in logical order
    cpu, dev = _draw_both(lambda d: ember.zeros(6, 8, device=d).t().uniform_())
    assert_bitwise(cpu, dev, "uniform_ on a transposed tensor")


@pytest.mark.parametrize("dtype_name", ALL)
def test_randint_and_random_are_bitwise_the_cpu_stream(dtype_name):
    if dtype_name == "bool":
        lo, hi = 0, 2
    elif dtype_name == "uint8":
        lo, hi = 3, 200
    else:
        lo, hi = -7, 100
    cpu, dev = _draw_both(lambda d: ember.randint(lo, hi, (1001,), dtype=dt(dtype_name), device=d))
    assert_bitwise(cpu, dev, f"randint {dtype_name}")
    if dtype_name == "int64":  # ranges above 2**32 take two words per value
        cpu, dev = _draw_both(lambda d: ember.randint(-2**62, 2**62, (999,), device=d))
        assert_bitwise(cpu, dev, "randint wide")
        cpu, dev = _draw_both(lambda d: ember.empty(1001, dtype=ember.int64, device=d).random_())
        assert_bitwise(cpu, dev, "random_ int64")


@pytest.mark.parametrize("dtype_name", ALL)
def test_bernoulli_is_bitwise_the_cpu_stream(dtype_name):
    cpu, dev = _draw_both(lambda d: ember.empty(1001, dtype=dt(dtype_name), device=d)
                          .bernoulli_(0.3))
    assert_bitwise(cpu, dev, f"bernoulli_ scalar {dtype_name}")
    p = ember.from_numpy(np.random.default_rng(11).uniform(0, 1, size=(13, 77)))
    cpu, dev = _draw_both(lambda d: ember.empty(13, 77, dtype=dt(dtype_name), device=d)
                          .bernoulli_(p.to(d)))
    assert_bitwise(cpu, dev, f"bernoulli_ tensor p {dtype_name}")
    if dtype_name in FLOATS:
        cpu, dev = _draw_both(lambda d: ember.bernoulli(p.to(dt(dtype_name)).to(d)))
        assert_bitwise(cpu, dev, f"bernoulli() {dtype_name}")


@pytest.mark.parametrize("n", [1, 2, 10, 1000])
def test_randperm_is_bitwise_the_cpu_permutation(n):
    cpu, dev = _draw_both(lambda d: ember.randperm(n, device=d))
    assert_bitwise(cpu, dev, f"randperm {n}")
    assert sorted(as_numpy(dev).tolist()) == list(range(n))


@pytest.mark.parametrize("dtype_name", FLOATS)
def test_normal_and_exponential_match_the_cpu_closely(dtype_name):
    # Same uniforms; the GPU's log/cos/sin/log1p may differ from glibc's in the last bit.
    tol = {"float64": (1e-13, 1e-13), "float32": (1e-5, 1e-5)}.get(dtype_name)
    n = 10001
    cpu, dev = _draw_both(lambda d: ember.randn(n, dtype=dt(dtype_name), device=d))
    assert_same(cpu, dev, tol, f"randn {dtype_name}")
    cpu, dev = _draw_both(lambda d: ember.empty(n, dtype=dt(dtype_name), device=d).normal_(3, 0.5))
    assert_same(cpu, dev, tol, f"normal_ {dtype_name}")
    cpu, dev = _draw_both(lambda d: ember.empty(n, dtype=dt(dtype_name), device=d)
                          .exponential_(2.0))
    assert_same(cpu, dev, tol, f"exponential_ {dtype_name}")


# ---- softmax -----------------------------------------------------------------------------------

# rows of 1 to 8193 elements: each register-cached row width of the CUDA kernel (1, 2, 4, 8 and
# 16 values per thread) at its bound, and past the last one the three-pass kernel
SOFTMAX_GEOMS = [((4, 10), -1), ((4, 10), 0), ((2, 3, 4), 1), ((3, 1000), 1), ((3, 1000), 0),
                 ((0, 5), 1), ((5, 0), 1), ((), 0), ((2, 700, 3), 1), ((2, 1), 1), ((2, 512), 1),
                 ((2, 513), 1), ((2, 2048), 1), ((2, 4096), 1), ((2, 4097), 1), ((2, 8192), 1),
                 ((2, 8193), 1)]


@pytest.mark.parametrize("dtype_name", FLOATS)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_forward(log, dtype_name):
    f = ember.log_softmax if log else ember.softmax
    rng = np.random.default_rng(12)
    for shape, dim in SOFTMAX_GEOMS:
        check(f, make(shape, dtype_name, rng, lo=-10, hi=10), dim, what=f"{shape} dim={dim}")
    x = make((3, 6), dtype_name, rng)
    x[1] = float("-inf")  # an all -inf row
    x[2, 2] = float("inf")
    check(f, x, 1, what="inf rows")
    check(f, make((6, 5), dtype_name, rng).t(), 1, what="transposed input")


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_backward(log, dtype_name):
    f = ember.log_softmax if log else ember.softmax
    rng = np.random.default_rng(13)
    def grad(x0, g, dim):
        x = x0.detach().clone().requires_grad_(True)
        f(x, dim).backward(g)
        return x.grad
    for shape, dim in SOFTMAX_GEOMS:
        check(grad, make(shape, dtype_name, rng), make(shape, dtype_name, rng), dim,
              what=f"grad {shape} dim={dim}")


def test_default_device_factories():
    """ember.set_default_device / `with ember.device(...)`: factories without device= allocate
    there; `_like` factories follow their tensor."""
    prev = ember.get_default_device()
    ember.set_default_device(cmp_dev())
    try:
        for t in (ember.zeros(2, 3), ember.ones(4), ember.empty(1), ember.full((2,), 7.0),
                  ember.arange(5), ember.linspace(0, 1, 4), ember.eye(3), ember.randn(3),
                  ember.rand(2), ember.randint(0, 5, (3,)), ember.tensor([1.0, 2.0]),
                  ember.as_tensor([1, 2]), ember.empty_strided((2, 2), (1, 2))):
            assert t.device.type == ember.device(cmp_dev()).type
        assert ember.zeros_like(ember.zeros(2, device="cpu")).device.type == "cpu"
    finally:
        ember.set_default_device(prev)
    with ember.device(cmp_dev()):
        assert ember.zeros(1).device.type == ember.device(cmp_dev()).type
    assert ember.zeros(1).device.type == "cpu"


def test_deterministic_accumulation():
    """use_deterministic_algorithms(True): index_put_(accumulate=True), index_add_,
    scatter_add_ and scatter_reduce("sum") add float duplicates in one fixed order, so two
    runs give the same bits (and match the CPU); max_pool2d's backward, which has no
    deterministic CUDA kernel, raises unless warn_only."""
    rng = seeded("deterministic")
    idx = ember.from_numpy(rng.integers(0, 7, size=5000))
    vals = make((5000,), "float32", rng)
    runs = []
    ember.use_deterministic_algorithms(True)
    try:
        for _ in range(2):
            x = ember.zeros(7, device=cmp_dev())
            x.index_put_((to_dev(idx),), to_dev(vals), accumulate=True)
            y = ember.zeros(7, device=cmp_dev()).index_add_(0, to_dev(idx), to_dev(vals))
            z = ember.zeros(7, device=cmp_dev()).scatter_add_(0, to_dev(idx), to_dev(vals))
            w = ember.zeros(7, device=cmp_dev()).scatter_reduce(0, to_dev(idx), to_dev(vals), "sum")
            runs.append([as_numpy(t) for t in (x, y, z, w)])
        for a, b in zip(*runs):
            np.testing.assert_array_equal(a, b)
        ref = as_numpy(ember.zeros(7).index_add_(0, idx, vals))
        np.testing.assert_allclose(runs[0][0], ref, rtol=1e-5, atol=1e-4)
        x = make((1, 1, 6, 6), "float32", rng).to(cmp_dev()).requires_grad_(True)
        out = ember.nn.functional.max_pool2d(x, 3, stride=1)
        if cmp_dev() == "cuda":
            with pytest.raises(RuntimeError, match="does not have a deterministic implementation"):
                out.sum().backward()
        ember.use_deterministic_algorithms(True, warn_only=True)
        x.grad = None
        ember.nn.functional.max_pool2d(x, 3, stride=1).sum().backward()
        assert x.grad is not None
    finally:
        ember.use_deterministic_algorithms(False)


def test_mixed_device_arguments():
    """CPU targets with device log_probs are accepted by ctc_loss (as PyTorch); a CPU
    attention mask with device q/k/v is an error naming both devices, never a host pointer
    handed to a kernel."""
    skip_on_cpu("mixes CPU and device tensors")
    rng = seeded("mixed")
    F = ember.nn.functional
    lp = make((6, 2, 5), "float32", rng).log_softmax(2)
    tg = ember.tensor([[1, 2], [3, 3]])
    lens, tlens = ember.tensor([6, 5]), ember.tensor([2, 2])
    expected = F.ctc_loss(lp, tg, lens, tlens)
    actual = F.ctc_loss(lp.to(cmp_dev()), tg, lens, tlens)
    assert_same(expected, actual, what="ctc_loss with CPU targets")
    q = make((1, 1, 3, 4), "float32", rng).to(cmp_dev())
    with pytest.raises(RuntimeError, match="attn_mask to be on the same device"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=ember.ones(3, 3, dtype=ember.bool))


@pytest.mark.parametrize("dtype_name", ["bool", "uint8", "float16", "bfloat16", "int32", "float32",
                                        "int64", "float64"])
def test_copy_from_a_broadcast_source(dtype_name):
    """contiguous() of an expanded tensor (a fill per contiguous run, each element width)."""
    src = ember.tensor([1, 0, 3], dtype=getattr(ember, dtype_name))

    def np_(t):  # NumPy has no bfloat16: compare as float64
        return t.double().numpy() if dtype_name == "bfloat16" else t.numpy()

    col = src.reshape(3, 1).expand(3, 1000).contiguous()
    assert col.is_contiguous() and col.dtype == src.dtype
    np.testing.assert_array_equal(np_(col), np.repeat(np_(src)[:, None], 1000, axis=1))
    one = src[2:].expand(4, 257)
    np.testing.assert_array_equal(np_(one.contiguous()), np.full((4, 257), np_(src)[2]))
    out = ember.zeros(2, 5, dtype=src.dtype)[:, ::2]  # a strided destination
    out.copy_(src[:1].expand(2, 3))
    np.testing.assert_array_equal(np_(out), np.full((2, 3), np_(src)[0]))
