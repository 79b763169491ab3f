"""The CUDA normalization and pooling kernels (backends/cuda/nn_norm.cu, pool.cu) against the
CPU kernels, through the public ops: layer_norm, group_norm, instance_norm, batch_norm
(training and eval, running statistics) and the BatchNorm modules; max / avg / adaptive
pools in 1-d and 2-d with their arguments (stride, padding, dilation, ceil_mode,
count_include_pad, divisor_override, return_indices). Forward and the gradients (.grad of
the input and the parameters) in every floating dtype, on size-1, odd, non-contiguous and
multi-block shapes; where the CPU raises, the device must raise the same exception type.

How these tests run on each device: device_compare.py.
"""
import copy

import pytest
from device_compare import FLOATS, assert_same, check, cmp_dev, make, noncontig, seeded

import ember

pytestmark = pytest.mark.usefixtures("compare_device")

F = ember.nn.functional

# 16-bit results go through several roundings in that dtype (the statistics, the scale and
# shift, the gradient terms): compare them a little looser than one op's tolerance.
LOOSE = {"float16": (1e-2, 1e-2), "bfloat16": (6e-2, 6e-2), "float32": (1e-4, 1e-5),
         "float64": (1e-9, 1e-11)}


def _leaf(t):
    return None if t is None else t.detach().clone().requires_grad_(True)


def fwd_bwd(f):
    """fn(g, *inputs) -> [f(*inputs), grads of the floating inputs] with upstream grad g."""
    def run(g, *inputs):
        leaves = [_leaf(t) if isinstance(t, ember.Tensor) else t for t in inputs]
        out = f(*leaves)
        out.backward(g)
        grads = [t.grad for t in leaves if isinstance(t, ember.Tensor)]
        return [out.detach()] + grads
    return run


def check_grad(f, out_shape, dtype, rng, *inputs, tol=None, what=""):
    g = make(out_shape, dtype, rng)
    return check(fwd_bwd(f), g, *inputs, tol=tol or LOOSE[dtype], what=what)


# ---- layer_norm ------------------------------------------------------------------------------

LN_CASES = [  # (input shape, normalized_shape)
    ((5, 7), (7,)),
    ((1, 1), (1,)),
    ((3, 4, 6), (4, 6)),
    ((300, 40), (40,)),          # many warp rows, many blocks
    ((3, 2000), (2000,)),        # block rows (longer than a warp's)
    ((2, 3, 1030), (1030,)),
    ((2, 3, 4, 5), (3, 4, 5)),
    ((0, 5), (5,)),
    ((4, 0), (0,)),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
def test_layer_norm(dtype, affine):
    rng = seeded("layer_norm", dtype, affine)
    for shape, ns in LN_CASES:
        x = make(shape, dtype, rng)
        w = make(ns, dtype, rng) if affine in ("weight", "both") else None
        b = make(ns, dtype, rng) if affine in ("bias", "both") else None
        check(F.layer_norm, x, ns, w, b, tol=LOOSE[dtype], what=f"{shape} {ns}")
        if x.numel() == 0:
            continue
        check_grad(lambda x_, w_, b_, ns=ns: F.layer_norm(x_, ns, w_, b_), shape, dtype, rng,
                   x, w, b, what=f"grad {shape} {ns}")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_norm_param_grads_many_rows(dtype):
    # gw / gb: column sums over several thousand rows (several row chunks), and 70 columns
    # (a partial column tile)
    rng = seeded("layer_norm many", dtype)
    x, w, b = make((5000, 70), dtype, rng), make((70,), dtype, rng), make((70,), dtype, rng)
    check_grad(lambda x_, w_, b_: F.layer_norm(x_, (70,), w_, b_, eps=1e-3), (5000, 70), dtype,
               rng, x, w, b, what="many rows")


def test_layer_norm_noncontiguous_and_special():
    rng = seeded("layer_norm nc")
    x = noncontig((6, 9), "float32", rng)
    check(F.layer_norm, x, (9,), what="non-contiguous")
    check_grad(lambda x_: F.layer_norm(x_, (9,)), (6, 9), "float32", rng, x, what="nc grad")
    x = make((4, 16), "float32", rng, special=True)  # NaN / inf rows
    check(F.layer_norm, x, (16,), what="special")
    x = ember.ones(3, 8) * 2.5  # zero variance: rstd = 1 / sqrt(eps)
    check(F.layer_norm, x, (8,), what="constant rows")


def test_layer_norm_only_param_grads():
    # the fused backward with grad_input not wanted (x does not require grad)
    rng = seeded("layer_norm params")
    x, w, b, g = (make((40, 33), "float64", rng), make((33,), "float64", rng),
                  make((33,), "float64", rng), make((40, 33), "float64", rng))

    def run(g, x, w, b):
        w, b = _leaf(w), _leaf(b)
        F.layer_norm(x, (33,), w, b).backward(g)
        return [w.grad, b.grad]
    check(run, g, x, w, b, what="param grads only")

    def run_w(g, x, w):
        w = _leaf(w)
        F.layer_norm(x, (33,), w).backward(g)
        return w.grad
    check(run_w, g, x, w, what="weight grad only")


def test_layer_norm_errors():
    x = make((3, 4), "float32", seeded("ln err"))
    check(F.layer_norm, x, (5,), what="bad normalized_shape")
    check(F.layer_norm, x, (4,), ember.ones(5), what="bad weight")
    check(F.layer_norm, ember.ones(3, 4, dtype=ember.int64), (4,), what="integer input")


# ---- group_norm / instance_norm ------------------------------------------------------------

GN_CASES = [  # (shape, groups)
    ((2, 6, 5), 3),
    ((1, 4), 2),
    ((3, 8, 4, 5), 4),
    ((2, 4, 33, 40), 2),   # rows of 2640: block rows
    ((64, 6, 3), 6),
    ((2, 3, 1, 1), 1),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("affine", [False, True])
def test_group_norm(dtype, affine):
    rng = seeded("group_norm", dtype, affine)
    for shape, groups in GN_CASES:
        x = make(shape, dtype, rng)
        w = make((shape[1],), dtype, rng) if affine else None
        b = make((shape[1],), dtype, rng) if affine else None
        check(F.group_norm, x, groups, w, b, tol=LOOSE[dtype], what=f"{shape} G={groups}")
        check_grad(lambda x_, w_, b_, g=groups: F.group_norm(x_, g, w_, b_), shape, dtype, rng,
                   x, w, b, what=f"grad {shape} G={groups}")
    check(F.group_norm, make((2, 6, 5), dtype, rng), 4, what="groups do not divide channels")


@pytest.mark.parametrize("dtype", FLOATS)
def test_instance_norm(dtype):
    rng = seeded("instance_norm", dtype)
    for shape in [(2, 3, 7), (4, 5, 6, 7), (1, 2, 1100)]:
        c = shape[1]
        x, w, b = make(shape, dtype, rng), make((c,), dtype, rng), make((c,), dtype, rng)
        check(F.instance_norm, x, None, None, w, b, tol=LOOSE[dtype], what=f"{shape}")
        check_grad(lambda x_, w_, b_: F.instance_norm(x_, weight=w_, bias=b_), shape, dtype, rng,
                   x, w, b, what=f"grad {shape}")

        def with_running(x, rm, rv):
            out = F.instance_norm(x, rm, rv, momentum=0.3)
            return [out, rm, rv]
        check(with_running, x, make((c,), dtype, rng), make((c,), dtype, rng, lo=0.5, hi=2.0),
              tol=LOOSE[dtype], what=f"running stats {shape}")


# ---- batch_norm ------------------------------------------------------------------------------

BN_SHAPES = [(4, 3), (2, 3, 5), (5, 4, 3, 3), (64, 2), (2, 3, 40, 50), (3, 700, 2), (2, 5, 1, 1)]


def _bn(training, momentum=0.1, eps=1e-5):
    def run(g, x, rm, rv, w, b):
        leaves = [_leaf(x), _leaf(w), _leaf(b)]
        out = F.batch_norm(leaves[0], rm, rv, leaves[1], leaves[2], training=training,
                           momentum=momentum, eps=eps)
        out.backward(g)
        stats = [t for t in (rm, rv) if t is not None]
        return [out.detach()] + stats + [t.grad for t in leaves if t is not None]
    return run


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm(dtype, training):
    rng = seeded("batch_norm", dtype, training)
    for shape in BN_SHAPES:
        c = shape[1]
        x, g = make(shape, dtype, rng), make(shape, dtype, rng)
        rm, rv = make((c,), dtype, rng), make((c,), dtype, rng, lo=0.5, hi=2.0)
        w, b = make((c,), dtype, rng), make((c,), dtype, rng)
        check(_bn(training), g, x, rm.clone(), rv.clone(), w, b, tol=LOOSE[dtype],
              what=f"{shape}")
        check(_bn(training, momentum=0.7, eps=1e-3), g, x, rm.clone(), rv.clone(), None, None,
              tol=LOOSE[dtype], what=f"{shape} no affine")
        if training:
            check(_bn(True), g, x, None, None, w, None, tol=LOOSE[dtype],
                  what=f"{shape} no running stats")


def test_batch_norm_special_and_errors():
    rng = seeded("bn special")
    x = make((8, 3, 4), "float32", rng, special=True)
    check(F.batch_norm, x, None, None, None, None, True, what="NaN / inf")
    x = noncontig((6, 4, 5), "float32", rng)
    check(F.batch_norm, x, None, None, None, None, True, what="non-contiguous")
    x = make((4, 3, 5), "float32", rng)
    check(F.batch_norm, x, None, None, None, None, False, what="eval without running stats")
    check(F.batch_norm, x, None, None, ember.ones(4), None, True, what="bad weight")
    e = make((0, 3, 4), "float32", rng)
    check(F.batch_norm, e, ember.zeros(3), ember.ones(3), None, None, False, what="empty eval")
    check(F.batch_norm, e, None, None, None, None, True, what="empty training")
    check(F.group_norm, make((0, 4, 3), "float32", rng), 2, what="empty group_norm")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", ["BatchNorm1d", "BatchNorm2d"])
def test_batch_norm_modules(dtype, kind):
    rng = seeded("bn module", dtype, kind)
    shapes = [(16, 5), (8, 5, 7)] if kind == "BatchNorm1d" else [(4, 5, 6, 7), (2, 5, 3, 3)]
    for momentum in [0.1, None]:
        cpu = getattr(ember.nn, kind)(5, momentum=momentum).to(getattr(ember, dtype))
        with ember.no_grad():
            cpu.weight.copy_(make((5,), dtype, rng))
            cpu.bias.copy_(make((5,), dtype, rng))
        dev = copy.deepcopy(cpu).to(cmp_dev())
        for step in range(3):
            shape = shapes[step % len(shapes)]
            x, g = make(shape, dtype, rng), make(shape, dtype, rng)
            for m in (cpu, dev):
                m.zero_grad()
            xc, xd = _leaf(x), _leaf(x.to(cmp_dev()))
            yc, yd = cpu(xc), dev(xd)
            yc.backward(g)
            yd.backward(g.to(cmp_dev()))
            what = f"{kind} momentum={momentum} step {step}"
            assert_same(yc.detach(), yd.detach(), what=what)
            assert_same(xc.grad, xd.grad, what=what + " grad")
            assert_same(cpu.weight.grad, dev.weight.grad, what=what + " weight.grad")
            assert_same(cpu.bias.grad, dev.bias.grad, what=what + " bias.grad")
            assert_same(cpu.running_mean, dev.running_mean, what=what + " running_mean")
            assert_same(cpu.running_var, dev.running_var, what=what + " running_var")
            assert_same(cpu.num_batches_tracked, dev.num_batches_tracked, what=what)
        cpu.eval()
        dev.eval()
        x = make(shapes[0], dtype, rng)
        assert_same(cpu(x), dev(x.to(cmp_dev())), what=f"{kind} eval")


# ---- max pooling -----------------------------------------------------------------------------

MAX2D = [  # (shape, kwargs)
    ((1, 1, 4, 4), dict(kernel_size=2)),
    ((2, 3, 7, 9), dict(kernel_size=3, stride=2, padding=1)),
    ((2, 3, 7, 9), dict(kernel_size=(3, 2), stride=(1, 2), padding=(1, 0), ceil_mode=True)),
    ((2, 2, 10, 11), dict(kernel_size=3, stride=1, dilation=2)),         # overlapping windows
    ((1, 2, 9, 9), dict(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True)),
    ((3, 7, 8), dict(kernel_size=2, stride=1)),                          # unbatched
    ((4, 16, 40, 40), dict(kernel_size=2)),                              # many blocks
    ((2, 3, 1, 5), dict(kernel_size=(1, 3), stride=1, padding=(0, 1))),
]
MAX1D = [
    ((2, 3, 11), dict(kernel_size=3)),
    ((2, 3, 11), dict(kernel_size=4, stride=3, padding=2, ceil_mode=True)),
    ((1, 2, 20), dict(kernel_size=3, stride=1, dilation=3)),
    ((3, 10), dict(kernel_size=2, stride=1)),
    ((2, 1, 1), dict(kernel_size=1)),
]


def _pool_out_shape(f, x, kw):
    return tuple(f(x, **kw).shape)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("nd", [1, 2])
def test_max_pool(dtype, nd):
    rng = seeded("max_pool", dtype, nd)
    f = F.max_pool1d if nd == 1 else F.max_pool2d
    for shape, kw in MAX1D if nd == 1 else MAX2D:
        x = make(shape, dtype, rng)
        check(lambda t, kw=kw: f(t, **kw, return_indices=True), x, what=f"{shape} {kw}")
        check_grad(lambda t, kw=kw: f(t, **kw), _pool_out_shape(f, x, kw), dtype, rng, x,
                   what=f"grad {shape} {kw}")
    # ties (the first maximum), NaN (wins), -inf and a non-contiguous input
    x = make((2, 3, 8, 10) if nd == 2 else (2, 3, 30), dtype, rng).round()
    check(lambda t: f(t, 3, 1, return_indices=True), x, what="ties")
    check_grad(lambda t: f(t, 3, 1), _pool_out_shape(f, x, dict(kernel_size=3, stride=1)),
               dtype, rng, x, what="ties grad")
    x = make((2, 3, 8, 10) if nd == 2 else (2, 3, 30), dtype, rng, special=True)
    check(lambda t: f(t, 2, return_indices=True), x, what="special")
    x = noncontig((2, 3, 6, 7) if nd == 2 else (2, 3, 7), dtype, rng)
    check(lambda t: f(t, 2, 1, return_indices=True), x, what="non-contiguous")


def test_max_pool_errors():
    x = make((1, 1, 4, 4), "float32", seeded("max err"))
    check(lambda t: F.max_pool2d(t, 5), x, what="kernel larger than input")
    check(lambda t: F.max_pool2d(t, 2, padding=2), x, what="padding over half the kernel")
    check(lambda t: F.max_pool2d(t, 0), x, what="zero kernel")
    check(lambda t: F.max_pool2d(t.to(ember.int32), 2), x, what="integer input")
    check(lambda t: F.max_pool2d(t, 2), make((1, 0, 4, 4), "float32", seeded("e")),
          what="empty channels")


def test_max_pool_double_backward():
    # max_pool_backward (the kernel) inside a graph: its own gradient is a gather
    rng = seeded("max double")
    x, gg = make((2, 2, 6, 6), "float64", rng), make((2, 2, 6, 6), "float64", rng)
    g = make((2, 2, 6, 6), "float64", rng)

    def run(x, g, gg):
        x, g = _leaf(x), _leaf(g)
        y = F.max_pool2d(x, 3, 1, padding=1)
        (gx,) = ember.autograd.grad(y, x, g, create_graph=True)
        (ggo,) = ember.autograd.grad(gx, g, gg)
        return [gx.detach(), ggo]
    check(run, x, g, gg, what="double backward")


# ---- average pooling ------------------------------------------------------------------------

AVG2D = [
    ((1, 1, 4, 4), dict(kernel_size=2)),
    ((2, 3, 7, 9), dict(kernel_size=3, stride=2, padding=1)),
    ((2, 3, 7, 9), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    ((2, 3, 7, 9), dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), ceil_mode=True)),
    ((2, 3, 7, 9), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                        count_include_pad=False)),
    ((2, 3, 8, 8), dict(kernel_size=3, stride=1, divisor_override=5)),  # overlapping windows
    ((3, 7, 8), dict(kernel_size=2, stride=1, padding=1)),               # unbatched
    ((4, 16, 40, 40), dict(kernel_size=3, stride=2)),                   # many blocks
]
AVG1D = [
    ((2, 3, 11), dict(kernel_size=3)),
    ((2, 3, 11), dict(kernel_size=4, stride=3, padding=2, ceil_mode=True)),
    ((2, 3, 11), dict(kernel_size=4, stride=3, padding=2, ceil_mode=True,
                      count_include_pad=False)),
    ((1, 2, 20), dict(kernel_size=5, stride=1, padding=2)),
    ((3, 10), dict(kernel_size=2, stride=1)),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("nd", [1, 2])
def test_avg_pool(dtype, nd):
    rng = seeded("avg_pool", dtype, nd)
    f = F.avg_pool1d if nd == 1 else F.avg_pool2d
    for shape, kw in AVG1D if nd == 1 else AVG2D:
        x = make(shape, dtype, rng)
        check(lambda t, kw=kw: f(t, **kw), x, what=f"{shape} {kw}")
        check_grad(lambda t, kw=kw: f(t, **kw), _pool_out_shape(f, x, kw), dtype, rng, x,
                   what=f"grad {shape} {kw}")
    x = noncontig((2, 3, 6, 7) if nd == 2 else (2, 3, 7), dtype, rng)
    check(lambda t: f(t, 2, 1), x, what="non-contiguous")
    x = make((2, 3, 8, 10) if nd == 2 else (2, 3, 30), dtype, rng, special=True)
    check(lambda t: f(t, 2), x, what="special")


def test_avg_pool_double_backward_and_errors():
    rng = seeded("avg double")
    x, gg = make((2, 2, 7, 7), "float64", rng), make((2, 2, 7, 7), "float64", rng)
    g = make((2, 2, 4, 4), "float64", rng)

    def run(x, g, gg):
        x, g = _leaf(x), _leaf(g)
        y = F.avg_pool2d(x, 3, 2, padding=1)
        (gx,) = ember.autograd.grad(y, x, g, create_graph=True)
        (ggo,) = ember.autograd.grad(gx, g, gg)  # the adjoint of the adjoint: the forward
        return [gx.detach(), ggo]
    check(run, x, g, gg, what="double backward")
    check(lambda t: F.avg_pool2d(t, 2, divisor_override=0), x, what="divisor_override=0")
    check(lambda t: F.avg_pool2d(t, 9), x, what="kernel larger than input")


# ---- adaptive pooling ----------------------------------------------------------------------

ADAPT2D = [((2, 3, 7, 9), (3, 4)), ((1, 2, 5, 5), (5, 5)), ((2, 3, 10, 6), (4, 1)),
           ((3, 7, 8), (1, 1)), ((2, 2, 5, 7), (8, 9)), ((4, 8, 33, 31), (7, 5))]
ADAPT1D = [((2, 3, 11), 4), ((2, 3, 5), 5), ((3, 10), 1), ((2, 2, 5), 8)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("nd", [1, 2])
def test_adaptive_pools(dtype, nd):
    rng = seeded("adaptive", dtype, nd)
    favg = F.adaptive_avg_pool1d if nd == 1 else F.adaptive_avg_pool2d
    fmax = F.adaptive_max_pool1d if nd == 1 else F.adaptive_max_pool2d
    for shape, size in ADAPT1D if nd == 1 else ADAPT2D:
        x = make(shape, dtype, rng)
        check(favg, x, size, what=f"avg {shape} {size}")
        check(lambda t, s=size: fmax(t, s, return_indices=True), x, what=f"max {shape} {size}")
        out_shape = tuple(favg(x, size).shape)
        check_grad(lambda t, s=size: favg(t, s), out_shape, dtype, rng, x,
                   what=f"avg grad {shape} {size}")
        check_grad(lambda t, s=size: fmax(t, s), out_shape, dtype, rng, x,
                   what=f"max grad {shape} {size}")
    x = make((2, 3, 6) if nd == 1 else (2, 3, 6, 6), dtype, rng)
    zero = 0 if nd == 1 else (0, 3)
    check(favg, x, zero, what="empty output")
    check(lambda t: fmax(t, zero, return_indices=True), x, what="empty output max")
    check_grad(lambda t: favg(t, zero), tuple(favg(x, zero).shape), dtype, rng, x,
               what="empty output grad")
