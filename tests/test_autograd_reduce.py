"""Gradients of the reductions and scans: gradcheck / gradgradcheck in float64,
PyTorch 1.13's node names, ties, zeros, NaN/inf edge points (values checked
against Debian's python3-torch), dtype=, keepdim, in-place and out= rules."""
import math

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck

inf, nan = math.inf, math.nan


def rand(shape, seed=0, lo=-2.0, hi=2.0):
    a = np.random.default_rng(seed).uniform(lo, hi, shape)
    return ember.tensor(a, dtype=ember.float64, requires_grad=True)


def leaf(values, dtype=ember.float64):
    return ember.tensor(values, dtype=dtype, requires_grad=True)


def grad_of(fn, values, gradient=None):
    """x.grad after fn(x).backward(gradient) (sum() when no gradient is given)."""
    x = leaf(values)
    y = fn(x)
    if gradient is None:
        y.sum().backward()
    else:
        y.backward(ember.tensor(gradient, dtype=ember.float64))
    return None if x.grad is None else x.grad.numpy()


def assert_grad(fn, values, expected, gradient=None):
    np.testing.assert_allclose(grad_of(fn, values, gradient), np.array(expected, dtype=np.float64),
                               rtol=1e-12, atol=1e-12)


SHAPES = [(), (4,), (2, 3), (2, 1, 3)]
# (dim, keepdim) forms for the dims= reductions, as long as the shape has the dims.
DIM_FORMS = [(None, False), (0, False), (-1, True), ((0, -1), False), ((0, -1), True), ((), False)]


def dim_forms(shape):
    nd = len(shape)
    for dim, keepdim in DIM_FORMS:
        dims = dim if isinstance(dim, tuple) else (() if dim is None else (dim,))
        if nd == 0 and any(d not in (0, -1) for d in dims):
            continue
        if nd == 0 and len(dims) > 1:
            continue
        if nd > 0 and any(d >= nd or d < -nd for d in dims):
            continue
        if nd > 0 and len({d % nd for d in dims}) < len(dims):
            continue
        yield dim, keepdim


# ---- node names (PyTorch 1.13) ------------------------------------------------------------

def _x():
    return rand((3, 4))


NAMES = [
    ("sum", lambda x: x.sum(), "SumBackward0"),
    ("sum_dim", lambda x: x.sum(0), "SumBackward1"),
    ("sum_dims", lambda x: x.sum((0, 1)), "SumBackward1"),
    ("sum_empty_dims", lambda x: ember.sum(x, dim=()), "SumBackward1"),
    ("sum_dtype", lambda x: x.sum(dtype=ember.float32), "SumBackward0"),
    ("mean", lambda x: x.mean(), "MeanBackward0"),
    ("mean_dim", lambda x: x.mean(0), "MeanBackward1"),
    ("prod", lambda x: x.prod(), "ProdBackward0"),
    ("prod_dim", lambda x: x.prod(0), "ProdBackward1"),
    ("amax", lambda x: x.amax(), "AmaxBackward0"),
    ("amax_dim", lambda x: x.amax(0), "AmaxBackward0"),
    ("amin", lambda x: x.amin(1), "AminBackward0"),
    ("max", lambda x: x.max(), "MaxBackward1"),
    ("max_dim", lambda x: x.max(0)[0], "MaxBackward0"),
    ("min", lambda x: x.min(), "MinBackward1"),
    ("min_dim", lambda x: x.min(0).values, "MinBackward0"),
    ("median", lambda x: x.median(), "MedianBackward0"),
    ("median_dim", lambda x: x.median(0)[0], "MedianBackward1"),
    ("var", lambda x: x.var(), "VarBackward0"),
    ("var_dim", lambda x: x.var(0), "VarBackward0"),
    ("std", lambda x: x.std(), "StdBackward0"),
    ("std_dim", lambda x: x.std(0, correction=0), "StdBackward0"),
    ("var_mean_var", lambda x: ember.var_mean(x, 0)[0], "VarMeanBackward0"),
    ("var_mean_mean", lambda x: ember.var_mean(x)[1], "VarMeanBackward0"),
    ("std_mean", lambda x: ember.std_mean(x, 0)[0], "StdMeanBackward0"),
    ("norm", lambda x: x.norm(), "NormBackward1"),
    ("norm_p", lambda x: x.norm(3, dim=1), "NormBackward1"),
    ("norm_inf", lambda x: x.norm(inf), "NormBackward1"),
    ("norm_dtype", lambda x: ember.norm(x.float(), dtype=ember.float64), "NormBackward3"),
    ("logsumexp", lambda x: x.logsumexp(0), "LogsumexpBackward0"),
    ("logsumexp_dims", lambda x: x.logsumexp((0, 1)), "LogsumexpBackward0"),
    ("cumsum", lambda x: x.cumsum(0), "CumsumBackward0"),
    ("cumsum_dtype", lambda x: x.cumsum(0, dtype=ember.float32), "CumsumBackward0"),
    ("cumprod", lambda x: x.cumprod(1), "CumprodBackward0"),
]


@pytest.mark.parametrize("fn,name", [(f, n) for _, f, n in NAMES], ids=[i for i, _, _ in NAMES])
def test_node_names(fn, name):
    y = fn(_x())
    assert y.requires_grad
    assert y.grad_fn.name() == name


def test_var_mean_outputs_share_one_node():
    x = _x()
    v, m = ember.std_mean(x, 1)
    assert v.grad_fn.name() == m.grad_fn.name() == "StdMeanBackward0"
    assert v.grad_fn.next_functions == m.grad_fn.next_functions
    assert v.grad_fn.next_functions[0][0].name() == "AccumulateGrad"


@pytest.mark.parametrize("fn", [
    lambda x: x.argmax(), lambda x: x.argmin(0), lambda x: x.argmax(1, keepdim=True),
    lambda x: x.max(0)[1], lambda x: x.min(1, keepdim=True).indices, lambda x: x.median(0)[1],
    lambda x: x.count_nonzero(), lambda x: x.count_nonzero(0), lambda x: x.all(),
    lambda x: x.any(1), lambda x: ember.all(x, 0), lambda x: x.sum(dtype=ember.int64),
    lambda x: x.cumsum(0, dtype=ember.int64),
], ids=["argmax", "argmin_dim", "argmax_keepdim", "max_idx", "min_idx", "median_idx",
        "count_nonzero", "count_nonzero_dim", "all", "any", "all_dim", "sum_int", "cumsum_int"])
def test_non_differentiable_outputs(fn):
    y = fn(_x())
    assert not y.requires_grad and y.grad_fn is None


def test_no_grad_records_nothing():
    x = _x()
    with ember.no_grad():
        for y in (x.sum(), x.prod(0), x.max(0)[0], x.norm(), x.logsumexp(0), x.cumprod(0)):
            assert not y.requires_grad


# ---- sum / mean ---------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_sum_mean_gradcheck(op, shape):
    x = rand(shape)
    for dim, keepdim in dim_forms(shape):
        f = (lambda t: getattr(t, op)()) if dim is None else \
            (lambda t, d=dim, k=keepdim: getattr(t, op)(d, keepdim=k))
        assert gradcheck(f, (x,)), (dim, keepdim)


@pytest.mark.parametrize("op", ["sum", "mean"])
def test_sum_mean_noncontiguous_and_broadcast(op):
    x = rand((3, 4))
    assert gradcheck(lambda t: getattr(t.t(), op)(0), (x,))
    assert gradcheck(lambda t: getattr(t[::2, 1::2], op)(-1, keepdim=True), (x,))
    y = rand((1, 3))
    assert gradcheck(lambda t: getattr(t.expand(4, 3), op)(0), (y,))
    assert gradcheck(lambda t, u: getattr(t * u, op)(1), (x, rand((4,), seed=1)))


@pytest.mark.parametrize("op", ["sum", "mean"])
def test_sum_mean_gradgradcheck(op):
    assert gradgradcheck(lambda t: getattr(t * t, op)((0, 2)), (rand((2, 3, 2)),))


def test_sum_mean_values():
    assert_grad(lambda x: x.sum(1), [[1.0, 2.0], [3.0, 4.0]], [[1.0, 1.0], [2.0, 2.0]],
                gradient=[1.0, 2.0])
    assert_grad(lambda x: x.mean(0, keepdim=True), [[1.0, 2.0], [3.0, 4.0]],
                [[0.5, 1.5], [0.5, 1.5]], gradient=[[1.0, 3.0]])
    assert_grad(lambda x: x.mean(), [1.0, 2.0, 3.0, 4.0], [0.25] * 4)


def test_sum_mean_empty():
    x = ember.zeros(2, 0, dtype=ember.float64, requires_grad=True)
    y = x.sum(0)
    assert y.grad_fn.name() == "SumBackward1"
    y.backward(ember.zeros(0, dtype=ember.float64))
    assert x.grad.shape == (2, 0)
    z = x.mean(1)  # NaN forward (0 / 0), empty gradient
    z.backward(ember.ones(2, dtype=ember.float64))
    assert x.grad.shape == (2, 0)


@pytest.mark.parametrize("op", ["sum", "mean", "prod", "cumsum", "cumprod", "norm"])
def test_dtype_argument_casts_gradient_back(op):
    x = ember.tensor([[1.0, 2.0], [3.0, 0.5]], dtype=ember.float32, requires_grad=True)
    if op in ("cumsum", "cumprod"):
        y = getattr(x, op)(1, dtype=ember.float64)
    elif op == "norm":
        y = ember.norm(x, dtype=ember.float64)
    else:
        y = getattr(x, op)(dtype=ember.float64)
    assert y.dtype == ember.float64
    y.sum().backward()
    assert x.grad.dtype == ember.float32
    xd = ember.tensor(x.detach().numpy().astype(np.float64), requires_grad=True)
    if op in ("cumsum", "cumprod"):
        getattr(xd, op)(1).sum().backward()
    else:
        getattr(xd, op)().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xd.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16, ember.float32])
def test_low_precision_gradients(dtype):
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=dtype, requires_grad=True)
    (x.sum(0) * 2).sum().backward()
    assert x.grad.dtype == dtype
    np.testing.assert_allclose(x.grad.float().numpy(), np.full((2, 2), 2.0))
    x.grad = None
    x.mean().backward()
    np.testing.assert_allclose(x.grad.float().numpy(), np.full((2, 2), 0.25))


# ---- prod ---------------------------------------------------------------------------------

PROD_INPUTS = {
    "nozero": [[1.5, -2.0, 0.5], [3.0, 0.7, -1.1]],
    "onezero": [[1.5, 0.0, 0.5], [3.0, 0.7, -1.1]],
    "twozeros_row": [[0.0, 0.0, 0.5], [3.0, 0.0, -1.1]],
    "allzero": [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
}


@pytest.mark.parametrize("case", sorted(PROD_INPUTS))
def test_prod_gradcheck_with_zeros(case):
    x = leaf(PROD_INPUTS[case])
    assert gradcheck(lambda t: t.prod(), (x,))
    for dim, keepdim in [(0, False), (1, True), (-1, False)]:
        assert gradcheck(lambda t: t.prod(dim, keepdim=keepdim), (x,))
    assert gradcheck(lambda t: t.t().prod(0), (x,))


@pytest.mark.parametrize("case", sorted(PROD_INPUTS))
def test_prod_gradgradcheck_with_zeros(case):
    x = leaf(PROD_INPUTS[case])
    assert gradgradcheck(lambda t: t.prod(), (x,))
    assert gradgradcheck(lambda t: t.prod(1), (x,))


def test_prod_values():
    # PyTorch: [2, 0, 3].prod() -> [0, 6, 0]; two zeros -> all zero.
    assert_grad(lambda x: x.prod(), [2.0, 0.0, 3.0], [0.0, 6.0, 0.0])
    assert_grad(lambda x: x.prod(), [0.0, 0.0, 3.0], [0.0, 0.0, 0.0])
    assert_grad(lambda x: x.prod(), [2.0, 4.0, 3.0], [12.0, 6.0, 8.0])
    # Rows: one without zeros, one with one zero, one with two.
    assert_grad(lambda x: x.prod(1), [[2.0, 3.0], [0.0, 5.0], [0.0, 0.0]],
                [[3.0, 2.0], [5.0, 0.0], [0.0, 0.0]])
    assert_grad(lambda x: x.prod(), 3.0, 1.0)
    assert grad_of(lambda x: x.prod(), np.zeros((0,))).shape == (0,)


def test_prod_second_derivative_with_zeros():
    # d2/dx0 dx1 of x0*x1*x2 is x2, also when x0 and x1 are zero.
    x = leaf([0.0, 0.0, 3.0])
    (g,) = ember.autograd.grad(x.prod(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [0.0, 0.0, 0.0])
    (h0,) = ember.autograd.grad(g[0], x)
    np.testing.assert_allclose(h0.numpy(), [0.0, 3.0, 0.0])


# ---- amax / amin / max / min / median ---------------------------------------------------

def distinct(shape, seed=0):
    n = int(np.prod(shape)) if shape else 1
    a = np.random.default_rng(seed).permutation(n).astype(np.float64) * 0.37 - 1.0
    return ember.tensor(a.reshape(shape), dtype=ember.float64, requires_grad=True)


@pytest.mark.parametrize("op", ["amax", "amin"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_amax_amin_gradcheck(op, shape):
    x = distinct(shape)
    for dim, keepdim in dim_forms(shape):
        f = (lambda t: getattr(t, op)()) if dim is None else \
            (lambda t, d=dim, k=keepdim: getattr(t, op)(d, keepdim=k))
        assert gradcheck(f, (x,)), (dim, keepdim)
    if len(shape) == 2:
        assert gradcheck(lambda t: getattr(t.t(), op)(0), (x,))


def test_amax_amin_ties_split_evenly():
    assert_grad(lambda x: x.amax(), [2.0, 1.0, 2.0], [0.5, 0.0, 0.5])
    assert_grad(lambda x: x.amin(1), [[1.0, 1.0, 1.0], [3.0, 2.0, 5.0]],
                [[1 / 3, 1 / 3, 1 / 3], [0.0, 1.0, 0.0]])
    assert_grad(lambda x: x.amax((0, 1), keepdim=True), [[4.0, 1.0], [4.0, 4.0]],
                [[1 / 3, 0.0], [1 / 3, 1 / 3]])
    # PyTorch's scale_grad_by_count: a NaN maximum gives NaN gradients for the row.
    assert np.isnan(grad_of(lambda x: x.amax(), [1.0, nan, 2.0])).all()


@pytest.mark.parametrize("op", ["max", "min", "median"])
def test_global_extremes_gradcheck(op):
    for shape in [(), (5,), (2, 3)]:
        x = distinct(shape, seed=2)
        assert gradcheck(lambda t: getattr(t, op)(), (x,))
    assert gradcheck(lambda t: getattr(t.t(), op)(), (distinct((3, 2)),))
    assert gradgradcheck(lambda t: getattr(t * t, op)(), (distinct((2, 3)),))


def test_global_extremes_split_among_ties_and_nans():
    assert_grad(lambda x: x.max(), [2.0, 1.0, 2.0], [0.5, 0.0, 0.5])
    assert_grad(lambda x: x.min(), [[0.0, 3.0], [0.0, 0.0]], [[1 / 3, 0.0], [1 / 3, 1 / 3]])
    assert_grad(lambda x: x.max(), [1.0, nan, 2.0], [0.0, 1.0, 0.0])
    assert_grad(lambda x: x.min(), [nan, 1.0, nan], [0.5, 0.0, 0.5])
    # Lower median of [2, 1, 2, 3] is 2: both 2s share the gradient.
    assert_grad(lambda x: x.median(), [2.0, 1.0, 2.0, 3.0], [0.5, 0.0, 0.5, 0.0])
    assert_grad(lambda x: x.median(), [4.0, 1.0, 3.0], [0.0, 0.0, 1.0], gradient=1.0)


@pytest.mark.parametrize("op", ["max", "min", "median"])
def test_dim_extremes_gradcheck(op):
    x = distinct((3, 4), seed=3)
    for dim in (0, 1, -1, -2):
        for keepdim in (False, True):
            assert gradcheck(lambda t: getattr(t, op)(dim, keepdim=keepdim)[0], (x,))
    assert gradcheck(lambda t: getattr(t.t(), op)(1)[0], (x,))
    assert gradcheck(lambda t: getattr(t, op)(0)[0], (distinct((), seed=1),))
    assert gradcheck(lambda t: getattr(t, op)(-1, keepdim=True)[0], (distinct((5,), seed=1),))
    assert gradgradcheck(lambda t: getattr(t * t, op)(1)[0], (x,))


def test_dim_extremes_gradient_goes_to_returned_index():
    # PyTorch: ties go to the index the forward returned, not split.
    assert_grad(lambda x: x.max(0)[0], [2.0, 1.0, 2.0], [1.0, 0.0, 0.0])
    assert_grad(lambda x: x.min(1, keepdim=True)[0], [[3.0, 1.0, 1.0], [0.0, 5.0, 0.0]],
                [[0.0, 2.0, 0.0], [-1.0, 0.0, 0.0]], gradient=[[2.0], [-1.0]])
    x = leaf([2.0, 1.0, 2.0, 3.0])
    v, i = x.median(0)
    v.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.eye(4)[int(i)])
    assert x.detach().numpy()[int(i)] == 2.0
    x = leaf([[5.0, 1.0, 3.0], [2.0, 8.0, 4.0]])
    v, i = x.median(1)
    v.backward(ember.tensor([10.0, 20.0], dtype=ember.float64))
    expected = np.zeros((2, 3))
    expected[np.arange(2), i.numpy()] = [10.0, 20.0]
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_extremes_on_empty_dim_of_nonempty_shape():
    x = ember.zeros(0, 3, dtype=ember.float64, requires_grad=True)
    v, _ = x.max(1)
    v.backward(ember.zeros(0, dtype=ember.float64))
    assert x.grad.shape == (0, 3)


# ---- var / std ----------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("correction", [0, 1, 2])
def test_var_std_gradcheck(op, correction):
    for shape in [(5,), (3, 4), (2, 2, 3)]:
        x = rand(shape, seed=4)
        for dim, keepdim in dim_forms(shape):
            dims = dim if isinstance(dim, tuple) else (() if dim is None else (dim,))
            if int(np.prod([shape[d] for d in dims] if dims else shape)) <= correction:
                continue  # N - correction <= 0: NaN/inf gradients, checked below
            f = (lambda t: getattr(t, op)(correction=correction)) if dim is None else \
                (lambda t, d=dim, k=keepdim: getattr(t, op)(d, keepdim=k, correction=correction))
            assert gradcheck(f, (x,)), (shape, dim, keepdim)
    assert gradcheck(lambda t: getattr(t.t(), op)(0, unbiased=False), (rand((3, 4)),))


@pytest.mark.parametrize("op", ["var", "std"])
def test_var_std_gradgradcheck(op):
    assert gradgradcheck(lambda t: getattr(t, op)(1), (rand((3, 4), seed=5),))
    assert gradgradcheck(lambda t: getattr(t, op)(), (rand((5,), seed=6),))


def test_var_std_values():
    x = np.array([[1.0, 2.0, 4.0], [0.5, -1.0, 3.0]])
    # d var / dx = 2 (x - mean) / (N - correction)
    for c in (0, 1):
        expected = 2 * (x - x.mean(1, keepdims=True)) / (3 - c)
        assert_grad(lambda t, c=c: t.var(1, correction=c), x, expected)
        std = x.std(1, ddof=c, keepdims=True)
        assert_grad(lambda t, c=c: t.std(1, correction=c), x, expected / (2 * std))


def test_std_edge_points_match_pytorch():
    # Zero variance: PyTorch masks the division, the gradient is 0.
    assert_grad(lambda x: x.std(), [1.0, 1.0, 1.0], [0.0, 0.0, 0.0])
    # N - correction == 0: var's 2 / 0 * 0 and std's NaN result give NaN (as PyTorch).
    assert np.isnan(grad_of(lambda x: x.std(0), [[1.0, 2.0]])).all()
    assert np.isnan(grad_of(lambda x: x.var(0), [[1.0, 2.0]])).all()


@pytest.mark.parametrize("op", ["var_mean", "std_mean"])
def test_var_mean_std_mean_gradcheck(op):
    f = getattr(ember, op)
    for shape in [(5,), (3, 4)]:
        x = rand(shape, seed=7)
        assert gradcheck(lambda t: f(t), (x,))
        assert gradcheck(lambda t: f(t, -1, keepdim=True), (x,))
        assert gradcheck(lambda t: f(t, 0, correction=0), (x,))
    assert gradgradcheck(lambda t: f(t, 1), (rand((2, 3), seed=8),))


def test_var_mean_one_output_used():
    x = leaf([1.0, 2.0, 6.0])
    v, m = ember.var_mean(x)
    m.backward()
    np.testing.assert_allclose(x.grad.numpy(), [1 / 3] * 3)
    x.grad = None
    v, m = ember.var_mean(x)
    v.backward()
    np.testing.assert_allclose(x.grad.numpy(), [-2.0, -1.0, 3.0])  # 2 (x - 3) / 2
    x.grad = None
    s, m = ember.std_mean(x, correction=0)
    (s + m).backward()
    sd = np.std([1.0, 2.0, 6.0])
    np.testing.assert_allclose(x.grad.numpy(), (np.array([1.0, 2.0, 6.0]) - 3) / (3 * sd) + 1 / 3)


# ---- norm ---------------------------------------------------------------------------------

NORM_PS = [2, 1, inf, -inf, 3, 1.5, 0.5, -1]


@pytest.mark.parametrize("p", NORM_PS, ids=str)
def test_norm_gradcheck(p):
    for shape in [(), (4,), (2, 3)]:
        x = distinct(shape, seed=9) if math.isinf(p) else rand(shape, seed=9, lo=0.2, hi=2.0)
        if shape == (4,) and not math.isinf(p):
            x = ember.tensor([0.5, -1.2, 0.8, -0.3], dtype=ember.float64, requires_grad=True)
        assert gradcheck(lambda t: t.norm(p), (x,))
        if shape:
            assert gradcheck(lambda t: t.norm(p, dim=-1), (x,))
            assert gradcheck(lambda t: t.norm(p, dim=0, keepdim=True), (x,))
    assert gradcheck(lambda t: t.t().norm(p, dim=1), (distinct((2, 3), seed=10),))


@pytest.mark.parametrize("p", [2, 3, 1.5, 0.5, -1])
def test_norm_gradgradcheck(p):
    x = ember.tensor([[0.5, -1.2, 0.8], [1.1, 0.3, -0.7]], dtype=ember.float64, requires_grad=True)
    assert gradgradcheck(lambda t: t.norm(p, dim=1), (x,))


def test_norm_values_and_edges_match_pytorch():
    assert_grad(lambda x: x.norm(), [3.0, -4.0], [0.6, -0.8])
    assert_grad(lambda x: x.norm(), [0.0, 0.0], [0.0, 0.0])  # zero vector: zero gradient
    assert_grad(lambda x: x.norm(1), [0.0, -2.0], [0.0, -1.0])  # sign
    assert_grad(lambda x: x.norm(inf), [2.0, -2.0, 1.0], [0.5, -0.5, 0.0])  # ties split
    assert_grad(lambda x: x.norm(-inf), [2.0, -1.0, 1.0], [0.0, -0.5, 0.5])
    assert_grad(lambda x: x.norm(3), [0.0, 0.0], [0.0, 0.0])
    assert_grad(lambda x: x.norm(1.5), [0.0, 0.0], [0.0, 0.0])
    assert_grad(lambda x: x.norm(0.5), [0.0, 1.0], [0.0, 1.0])
    assert_grad(lambda x: x.norm(-1), [2.0, -1.0], [1 / 9, -4 / 9])
    a = np.array([[1.0, -2.0, 0.5], [0.3, 0.0, 2.0]])
    n3 = (np.abs(a) ** 3).sum(1, keepdims=True) ** (1 / 3)
    assert_grad(lambda x: x.norm(3, dim=1), a, a * np.abs(a) / n3 ** 2)
    # p = 0 counts nonzeros: no gradient at all (PyTorch leaves .grad None).
    assert grad_of(lambda x: x.norm(0), [1.0, 1.0]) is None


# ---- logsumexp ----------------------------------------------------------------------------

def test_logsumexp_gradcheck():
    for shape in [(), (4,), (2, 3), (2, 1, 3)]:
        x = rand(shape, seed=11)
        for dim, keepdim in dim_forms(shape):
            if dim is None:
                continue
            assert gradcheck(lambda t, d=dim, k=keepdim: t.logsumexp(d, keepdim=k), (x,))
    assert gradcheck(lambda t: t.t().logsumexp(1), (rand((2, 3)),))
    assert gradgradcheck(lambda t: t.logsumexp(1), (rand((2, 3), seed=12),))


def test_logsumexp_gradient_is_softmax_and_stable():
    a = np.array([[1000.0, 1001.0, 999.0], [-1.0, 0.0, 2.0]])
    e = np.exp(a - a.max(1, keepdims=True))
    assert_grad(lambda x: x.logsumexp(1), a, e / e.sum(1, keepdims=True))
    np.testing.assert_allclose(grad_of(lambda x: x.logsumexp(0), [1000.0, 1000.0]), [0.5, 0.5])
    assert_grad(lambda x: x.logsumexp(0), [-inf, 1.0], [0.0, 1.0])
    # All -inf and +inf: exp(nan) as PyTorch.
    assert np.isnan(grad_of(lambda x: x.logsumexp(0), [-inf, -inf])).all()
    np.testing.assert_array_equal(np.isnan(grad_of(lambda x: x.logsumexp(0), [inf, 1.0])),
                                  [True, False])


# ---- cumsum / cumprod ---------------------------------------------------------------------

@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scan_gradcheck(op):
    for shape in [(), (1,), (5,), (3, 4), (2, 1, 3)]:
        x = rand(shape, seed=13, lo=0.5, hi=1.5)
        for dim in range(-max(len(shape), 1), max(len(shape), 1)):
            assert gradcheck(lambda t: getattr(t, op)(dim), (x,)), (shape, dim)
    assert gradcheck(lambda t: getattr(t.t(), op)(1), (rand((3, 4)),))
    assert gradcheck(lambda t: getattr(t[:, ::2], op)(0), (rand((3, 4)),))
    assert gradgradcheck(lambda t: getattr(t, op)(1), (rand((2, 4), seed=14),))


CUMPROD_ZEROS = [
    [2.0, 0.0, 3.0, 0.5, 4.0],
    [2.0, 0.0, 3.0, 0.0, 4.0],
    [0.0, 1.5, -2.0, 0.7, 0.0],
    [0.0, 0.0, 0.0, 1.0, 2.0],
]


@pytest.mark.parametrize("values", CUMPROD_ZEROS, ids=range(len(CUMPROD_ZEROS)))
def test_cumprod_with_zeros(values):
    x = leaf(values)
    assert gradcheck(lambda t: t.cumprod(0), (x,))
    assert gradgradcheck(lambda t: t.cumprod(0), (x,))
    # The first-order O(n) path (grad mode off in backward) agrees with the exact one.
    g = ember.tensor(np.linspace(0.5, 2.0, len(values)), dtype=ember.float64)
    (plain,) = ember.autograd.grad(x.cumprod(0), x, g)
    (exact,) = ember.autograd.grad(x.cumprod(0), x, g, create_graph=True)
    np.testing.assert_allclose(plain.numpy(), exact.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_cumprod_with_zeros_2d():
    x = leaf([[1.5, 0.0, 2.0], [0.0, 0.0, 3.0], [1.0, -2.0, 0.5]])
    for dim in (0, 1):
        assert gradcheck(lambda t: t.cumprod(dim), (x,))
        assert gradgradcheck(lambda t: t.cumprod(dim), (x,))


def test_scan_values():
    # cumsum's gradient is the reversed cumsum of the incoming gradient.
    assert_grad(lambda x: x.cumsum(0), [1.0, 2.0, 3.0], [6.0, 5.0, 3.0], gradient=[1.0, 2.0, 3.0])
    # PyTorch: cumprod([2, 0, 3, 0, 4]).sum() -> [1, 8, 0, 0, 0]
    assert_grad(lambda x: x.cumprod(0), [2.0, 0.0, 3.0, 0.0, 4.0], [1.0, 8.0, 0.0, 0.0, 0.0])
    a = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]])
    g = np.array([[1.0, -1.0, 2.0], [0.5, 1.0, 1.0]])
    out = np.cumprod(a, 1)
    expected = np.flip(np.cumsum(np.flip(out * g, 1), 1), 1) / a
    assert_grad(lambda x: x.cumprod(1), a, expected, gradient=g)


@pytest.mark.parametrize("op", ["cumsum_", "cumprod_"])
def test_scan_inplace(op):
    x = rand((3, 4), seed=15, lo=0.5, hi=1.5)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an "
                                           "in-place operation."):
        getattr(x, op)(0)
    name = "CumsumBackward0" if op == "cumsum_" else "CumprodBackward0"
    y = x * 1.0
    getattr(y, op)(1)
    assert y.grad_fn.name() == name
    y.sum().backward()
    xd = ember.tensor(x.detach().numpy(), requires_grad=True)
    getattr(xd, op[:-1])(1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xd.grad.numpy(), rtol=1e-12)
    assert gradcheck(lambda t: getattr(t * 1.0, op)(-1), (x,))
    assert gradgradcheck(lambda t: getattr(t * 1.0, op)(0), (x,))


def test_scan_inplace_on_view_rebases_base():
    x = rand((3, 4), seed=16, lo=0.5, hi=1.5)
    base = x * 1.0
    view = base[1]
    view.cumsum_(0)
    assert base.grad_fn.name() == "CopySlices"
    base.backward(ember.ones(3, 4, dtype=ember.float64))
    expected = np.ones((3, 4))
    expected[1] = [4.0, 3.0, 2.0, 1.0]
    np.testing.assert_allclose(x.grad.numpy(), expected)


def test_inplace_scan_bad_dim_leaves_autograd_state_alone():
    y = rand((3,)) * 1.0
    with pytest.raises(IndexError, match="Dimension out of range"):
        y.cumsum_(3)
    assert y.grad_fn.name() == "MulBackward0"


def test_saved_input_modified_in_place_raises():
    x = rand((4,), seed=17, lo=0.5, hi=1.5)
    y = x * 1.0
    z = y.prod()
    y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


# ---- out= ---------------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda x, o: ember.sum(x, 0, out=o), lambda x, o: ember.mean(x, 0, out=o),
    lambda x, o: ember.prod(x, 0, out=o), lambda x, o: ember.amax(x, 0, out=o),
    lambda x, o: ember.amin(x, 0, out=o),
], ids=["sum", "mean", "prod", "amax", "amin"])
def test_out_with_requires_grad_raises(call):
    x = rand((3, 4))
    with pytest.raises(RuntimeError, match=r"functions with out=\.\.\. arguments don't support "
                                           "automatic differentiation, but one of the arguments "
                                           "requires grad"):
        call(x, ember.empty(4, dtype=ember.float64))
    with ember.no_grad():
        call(x, ember.empty(4, dtype=ember.float64))  # fine without grad mode


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scan_out_with_requires_grad_raises(op):
    x = rand((3, 4))
    with pytest.raises(RuntimeError, match=f"{op}\\(\\): functions with out="):
        getattr(ember, op)(x, 0, out=ember.empty(3, 4, dtype=ember.float64))
