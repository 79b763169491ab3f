"""Autograd of the joining/rearranging ops (cat, stack and friends, flip, roll, repeat,
tile, repeat_interleave) and the sorting ops (sort, msort, topk, kthvalue); the
non-differentiable results (indices, argsort, searchsorted, unique); PyTorch 1.13's
node names (checked with Debian's python3-torch)."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck


def rand(shape, seed=0, requires_grad=True):
    a = np.random.default_rng(seed).uniform(-2.0, 2.0, shape)
    if a.ndim == 0:
        a = float(a)  # ember.tensor(0-d ndarray) gives shape [1] (a factories bug)
    t = ember.tensor(a, dtype=ember.float64, requires_grad=requires_grad)
    assert tuple(t.shape) == tuple(shape)
    return t


def distinct(shape, seed=0):
    """Values without ties (a sort's gradient is only defined away from ties)."""
    n = int(np.prod(shape))
    a = np.random.default_rng(seed).permutation(n).astype(np.float64).reshape(shape) * 0.5
    t = ember.tensor(float(a) if a.ndim == 0 else a, dtype=ember.float64, requires_grad=True)
    assert tuple(t.shape) == tuple(shape)
    return t


def grad_of(out, inputs, g=None):
    if g is None:
        g = ember.ones_like(out)
    return ember.autograd.grad([out], list(inputs), [g], allow_unused=True)


# ---- cat / stack ----------------------------------------------------------------------------


@pytest.mark.parametrize("case", [
    ([(2, 3), (4, 3)], 0),
    ([(2, 3), (2, 1), (2, 4)], -1),
    ([(3,), (1,), (2,)], 0),
    ([(2, 1, 3), (2, 2, 3)], 1),
], ids=range(4))
def test_cat(case):
    shapes, dim = case
    xs = [rand(s, seed=i) for i, s in enumerate(shapes)]
    f = lambda *ts: ember.cat(list(ts), dim)
    assert f(*xs).grad_fn.name() == "CatBackward0"
    assert gradcheck(f, tuple(xs))


def test_cat_gradients_numpy_noncontiguous_and_double_backward():
    a, b = rand((3, 2)), rand((3, 3), seed=1)
    f = lambda x, y: ember.cat([x, y.t()], 1)
    assert gradcheck(f, (a, b))
    assert gradgradcheck(f, (a, b))
    g = ember.tensor(np.arange(15.0).reshape(3, 5), dtype=ember.float64)
    ga, gb = grad_of(f(a, b), [a, b], g)
    np.testing.assert_allclose(ga.numpy(), np.arange(15.0).reshape(3, 5)[:, :2])
    np.testing.assert_allclose(gb.numpy(), np.arange(15.0).reshape(3, 5)[:, 2:].T)


def test_cat_skips_empty_1d_inputs():
    a, e = rand((2, 3)), rand((0,), seed=1)
    out = ember.cat([e, a, e], 0)
    ge, ga = grad_of(out, [e, a])
    assert tuple(ge.shape) == (0,)
    np.testing.assert_allclose(ga.numpy(), np.ones((2, 3)))
    assert gradcheck(lambda t: ember.cat([ember.zeros(0, dtype=ember.float64), t], 1), (a,))
    # an empty input that is not 1-d takes part (and gets an empty gradient of its shape)
    z = rand((2, 0, 3), seed=2)
    gz, ga3 = grad_of(ember.cat([z, a.unsqueeze(1)], 1), [z, a])
    assert tuple(gz.shape) == (2, 0, 3)
    np.testing.assert_allclose(ga3.numpy(), np.ones((2, 3)))
    # every input skipped: an empty result that still has history
    out = ember.cat([e, e])
    assert out.grad_fn.name() == "CatBackward0"
    (ge,) = grad_of(out, [e])
    assert tuple(ge.shape) == (0,)


def test_cat_mixed_dtypes_casts_gradients_back():
    a = ember.ones(2, 2, dtype=ember.float32, requires_grad=True)
    b = rand((1, 2))
    i = ember.ones(1, 2, dtype=ember.int64)
    out = ember.cat([a, b, i])
    assert out.dtype == ember.float64
    ga, gb = grad_of(out, [a, b], ember.arange(8.0, dtype=ember.float64).reshape(4, 2))
    assert ga.dtype == ember.float32 and gb.dtype == ember.float64
    np.testing.assert_allclose(ga.numpy(), [[0, 1], [2, 3]])
    np.testing.assert_allclose(gb.numpy(), [[4, 5]])
    assert gradcheck(lambda t: ember.cat([i, t]), (b,))


@pytest.mark.parametrize("case", [((3,), 0), ((2, 3), 1), ((2, 3), -1), ((), 0)], ids=range(4))
def test_stack(case):
    shape, dim = case
    xs = [rand(shape, seed=i) for i in range(3)]
    f = lambda *ts: ember.stack(list(ts), dim)
    assert f(*xs).grad_fn.name() == "StackBackward0"
    assert gradcheck(f, tuple(xs))


def test_stack_numpy_mixed_dtypes_and_double_backward():
    a, b = rand((2, 2)), ember.ones(2, 2, dtype=ember.float32, requires_grad=True)
    g = ember.tensor(np.arange(8.0).reshape(2, 2, 2), dtype=ember.float64)
    ga, gb = grad_of(ember.stack([a, b], 1), [a, b], g)
    np.testing.assert_allclose(ga.numpy(), np.arange(8.0).reshape(2, 2, 2)[:, 0])
    assert gb.dtype == ember.float32
    np.testing.assert_allclose(gb.numpy(), np.arange(8.0).reshape(2, 2, 2)[:, 1])
    assert gradgradcheck(lambda x, y: ember.stack([x, y.t()]), (a, rand((2, 2), seed=2)))


@pytest.mark.parametrize("op", ["hstack", "vstack", "dstack", "column_stack", "row_stack"])
@pytest.mark.parametrize("shape", [(3,), (2, 3), ()], ids=["1d", "2d", "0d"])
def test_stack_family_goes_through_cat(op, shape):
    f = getattr(ember, op)
    xs = [rand(shape, seed=i) for i in range(2)]
    g = lambda *ts: f(list(ts))
    assert g(*xs).grad_fn.name() == "CatBackward0"
    assert gradcheck(g, tuple(xs))


# ---- flip / roll / repeat ------------------------------------------------------------------


@pytest.mark.parametrize("case", [((4,), (0,)), ((2, 3), (0, 1)), ((2, 3, 2), (-1, 0)), ((), ()), ((2, 3), ())],
                         ids=range(5))
def test_flip(case):
    shape, dims = case
    x = rand(shape)
    f = lambda t: ember.flip(t, dims)
    assert f(x).grad_fn.name() == "FlipBackward0"
    assert gradcheck(f, (x,))
    assert gradcheck(lambda t: ember.flip(t.t() if t.dim() == 2 else t, dims), (x,))


def test_flip_lr_ud_and_double_backward():
    x = rand((2, 3))
    assert ember.fliplr(x).grad_fn.name() == "FlipBackward0"
    assert ember.flipud(x).grad_fn.name() == "FlipBackward0"
    assert gradgradcheck(lambda t: ember.fliplr(t) * t, (x,))
    g = ember.tensor(np.arange(6.0).reshape(2, 3), dtype=ember.float64)
    (gx,) = grad_of(ember.flipud(x), [x], g)
    np.testing.assert_allclose(gx.numpy(), np.arange(6.0).reshape(2, 3)[::-1])


@pytest.mark.parametrize("case", [
    ((5,), 2, None), ((2, 3), 4, None), ((2, 3), -1, 1), ((2, 3), (1, -5), (0, 1)),
    ((2, 3), (1, 1), (1, 1)), ((3, 2, 2), 7, -3), ((), 3, None),
], ids=range(7))
def test_roll(case):
    shape, shifts, dims = case
    x = rand(shape)
    f = lambda t: ember.roll(t, shifts, dims)
    assert f(x).grad_fn.name() == "RollBackward0"
    assert gradcheck(f, (x,))


def test_roll_numpy_noncontiguous_and_double_backward():
    x = rand((3, 4))
    f = lambda t: t.t().roll(1, 0)
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))
    g = np.arange(12.0).reshape(3, 4)
    (gx,) = grad_of(x.roll((1, 2), (0, 1)), [x], ember.tensor(g, dtype=ember.float64))
    np.testing.assert_allclose(gx.numpy(), np.roll(g, (-1, -2), (0, 1)))


@pytest.mark.parametrize("case", [
    ((3,), (2,)), ((2, 3), (2, 1)), ((2, 3), (2, 2, 3)), ((2,), (0, 2)), ((), (3, 2)), ((), ()),
], ids=range(6))
def test_repeat(case):
    shape, reps = case
    x = rand(shape)
    f = lambda t: t.repeat(*reps) if reps else t.repeat(())
    assert f(x).grad_fn.name() == "RepeatBackward0"
    assert gradcheck(f, (x,))


def test_repeat_tile_numpy_and_double_backward():
    x = rand((2, 3))
    g = np.arange(24.0).reshape(2, 4, 3)
    (gx,) = grad_of(x.repeat(2, 2, 1), [x], ember.tensor(g, dtype=ember.float64))
    np.testing.assert_allclose(gx.numpy(), g.reshape(2, 2, 2, 3).sum((0, 1)))
    assert ember.tile(x, (2,)).grad_fn.name() == "RepeatBackward0"
    assert gradcheck(lambda t: ember.tile(t, (2, 1, 2)), (x,))
    assert gradgradcheck(lambda t: t.t().repeat(2, 3), (x,))


@pytest.mark.parametrize("case", [
    ((2, 3), 2, None), ((2, 3), 3, 1), ((2, 3), 0, 0), ((), 2, None), ((4,), [1, 0, 3, 2], 0),
    ((3, 2), [2, 1, 1], -2), ((3, 2), [2], 1), ((), [3], 0),
], ids=range(8))
def test_repeat_interleave(case):
    shape, reps, dim = case
    x = rand(shape)
    r = reps if isinstance(reps, int) else ember.tensor(reps, dtype=ember.int64)
    f = lambda t: ember.repeat_interleave(t, r, dim=dim)
    assert f(x).grad_fn.name() == "IndexSelectBackward0"
    assert gradcheck(f, (x,))


def test_repeat_interleave_numpy_and_double_backward():
    x = rand((3,))
    r = ember.tensor([2, 0, 3], dtype=ember.int64)
    g = np.arange(5.0)
    (gx,) = grad_of(x.repeat_interleave(r), [x], ember.tensor(g, dtype=ember.float64))
    np.testing.assert_allclose(gx.numpy(), [1.0, 0.0, 9.0])
    assert gradgradcheck(lambda t: t.repeat_interleave(2, dim=0), (x,))


# ---- sort / topk / kthvalue ---------------------------------------------------------------------


@pytest.mark.parametrize("case", [((5,), -1, False), ((3, 4), 0, True), ((3, 4), 1, False), ((), 0, False),
                                  ((2, 3, 2), -2, True)], ids=range(5))
def test_sort(case):
    shape, dim, desc = case
    x = distinct(shape)
    f = lambda t: ember.sort(t, dim, descending=desc)[0]
    assert f(x).grad_fn.name() == "SortBackward0"
    assert gradcheck(f, (x,))
    values, indices = ember.sort(x, dim)
    assert values.requires_grad and not indices.requires_grad


def test_sort_numpy_noncontiguous_and_double_backward():
    x = distinct((3, 4))
    g = np.arange(12.0).reshape(3, 4)
    (gx,) = grad_of(x.sort(1)[0], [x], ember.tensor(g, dtype=ember.float64))
    order = np.argsort(x.detach().numpy(), 1)
    expect = np.zeros((3, 4))
    np.put_along_axis(expect, order, g, 1)
    np.testing.assert_allclose(gx.numpy(), expect)
    assert gradcheck(lambda t: t.t().sort(0, descending=True)[0], (x,))
    assert gradgradcheck(lambda t: t.sort(0)[0] * t, (x,))
    assert ember.msort(x).grad_fn.name() == "SortBackward0"
    assert gradcheck(ember.msort, (x,))


@pytest.mark.parametrize("case", [((5,), 2, -1, True), ((3, 4), 3, 1, False), ((3, 4), 1, 0, True),
                                  ((3, 4), 0, 1, True), ((), 1, 0, True), ((), 0, 0, False)], ids=range(6))
def test_topk(case):
    shape, k, dim, largest = case
    x = distinct(shape)
    f = lambda t: ember.topk(t, k, dim, largest=largest)[0]
    assert f(x).grad_fn.name() == "TopkBackward0"
    assert gradcheck(f, (x,))
    assert not ember.topk(x, k, dim)[1].requires_grad


def test_topk_numpy_and_double_backward():
    x = ember.tensor([3.0, -1.0, 7.0, 2.0], dtype=ember.float64, requires_grad=True)
    (gx,) = grad_of(x.topk(2)[0], [x], ember.tensor([10.0, 20.0], dtype=ember.float64))
    np.testing.assert_allclose(gx.numpy(), [20.0, 0.0, 10.0, 0.0])
    assert gradgradcheck(lambda t: t.topk(2, 0)[0] ** 2, (distinct((3, 2)),))


@pytest.mark.parametrize("case", [((5,), 2, -1, False), ((3, 4), 3, 1, True), ((3, 4), 1, 0, False),
                                  ((2, 3, 2), 2, -2, True), ((), 1, 0, False)], ids=range(5))
def test_kthvalue(case):
    shape, k, dim, keepdim = case
    x = distinct(shape)
    f = lambda t: ember.kthvalue(t, k, dim, keepdim=keepdim)[0]
    assert f(x).grad_fn.name() == "KthvalueBackward0"
    assert gradcheck(f, (x,))
    assert not ember.kthvalue(x, k, dim)[1].requires_grad


def test_kthvalue_numpy_and_double_backward():
    x = ember.tensor([[3.0, -1.0, 7.0], [0.0, 5.0, 4.0]], dtype=ember.float64, requires_grad=True)
    (gx,) = grad_of(x.kthvalue(2, 1)[0], [x], ember.tensor([10.0, 20.0], dtype=ember.float64))
    np.testing.assert_allclose(gx.numpy(), [[10.0, 0.0, 0.0], [0.0, 0.0, 20.0]])
    assert gradgradcheck(lambda t: t.kthvalue(2, 0, keepdim=True)[0] * t, (distinct((3, 2)),))


# ---- non-differentiable results ---------------------------------------------------------------


def test_integer_results_have_no_grad():
    x = distinct((3, 4))
    assert not ember.argsort(x).requires_grad
    assert not ember.searchsorted(x.detach().sort()[0], x).requires_grad
    assert not ember.searchsorted(x.sort()[0], x).requires_grad
    assert not ember.bucketize(x, ember.tensor([0.0, 1.0], dtype=ember.float64)).requires_grad
    out, inverse, counts = ember.unique(x, return_inverse=True, return_counts=True)
    assert not inverse.requires_grad and not counts.requires_grad


@pytest.mark.parametrize("case", [
    (lambda t: ember.unique(t), "Unique2Backward0", "_unique2"),
    (lambda t: ember.unique(t, sorted=False, return_inverse=True)[0], "Unique2Backward0", "_unique2"),
    (lambda t: ember.unique(t, dim=0), "UniqueDimBackward0", "unique_dim"),
    (lambda t: ember.unique_consecutive(t), "UniqueConsecutiveBackward0", "unique_consecutive"),
    (lambda t: ember.unique_consecutive(t, dim=1), "UniqueConsecutiveBackward0", "unique_consecutive"),
], ids=range(5))
def test_unique_output_requires_grad_but_backward_is_not_implemented(case):
    f, name, op = case
    x = distinct((3, 4))
    u = f(x)
    assert u.requires_grad and u.grad_fn.name() == name
    with pytest.raises(NotImplementedError, match=f"the derivative for '{op}' is not implemented."):
        u.backward(ember.ones_like(u))
    assert not f(x.detach()).requires_grad


def test_no_history_without_grad_mode():
    x = distinct((3, 4))
    with ember.no_grad():
        for out in (ember.cat([x, x]), ember.stack([x]), x.flip(0), x.roll(1), x.repeat(2, 1),
                    x.repeat_interleave(2), x.sort()[0], x.topk(1)[0], x.kthvalue(1)[0], ember.unique(x)):
            assert not out.requires_grad and out.grad_fn is None
