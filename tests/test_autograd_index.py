"""Autograd of the indexing ops: advanced getitem/setitem, index_put, index_select,
gather/scatter, scatter_add, index_add, masked_fill/masked_select, take; their
in-place variants; PyTorch 1.13's node names (checked with Debian's python3-torch)."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck

LEAF_ERR = "a leaf Variable that requires grad is being used in an in-place operation"
VIEW_LEAF_ERR = "a view of a leaf Variable that requires grad is being used in an in-place operation"


def rand(shape, seed=0, requires_grad=True):
    a = np.random.default_rng(seed).uniform(-2.0, 2.0, shape)
    if a.ndim == 0:
        a = float(a)  # ember.tensor(0-d ndarray) gives shape [1] (a factories bug)
    t = ember.tensor(a, dtype=ember.float64, requires_grad=requires_grad)
    assert tuple(t.shape) == tuple(shape)
    return t


def idx(v):
    return ember.tensor(v if np.ndim(v) == 0 else np.array(v, dtype=np.int64), dtype=ember.int64)


def grad_of(out, inputs, g=None):
    if g is None:
        g = ember.ones_like(out)
    return ember.autograd.grad([out], list(inputs), [g], allow_unused=True)


# ---- advanced getitem ----------------------------------------------------------------------


@pytest.mark.parametrize("case", [
    ((5,), lambda x: x[idx([0, 2, 0, 4])]),                      # duplicates accumulate
    ((5,), lambda x: x[idx([[1, -1], [0, 1]])]),                 # 2-d index, negative
    ((3, 4), lambda x: x[:, idx([3, 0, 3])]),
    ((3, 4), lambda x: x[idx([0, 2]), idx([[1], [3]])]),         # broadcast indices
    ((3, 4), lambda x: x[x > 0]),                                # bool mask
    ((3, 4), lambda x: x[ember.tensor([True, False, True])]),
    ((3, 4), lambda x: x[1:, idx([1, 1])]),                      # basic + advanced
    ((2, 3, 4), lambda x: x[idx([1, 0]), :, idx([2, 3])]),       # non-adjacent: dims to front
    ((2, 3, 4), lambda x: x[..., idx([0, 0])]),
    ((4, 3), lambda x: x.t()[idx([2, 0])]),                      # non-contiguous
    ((3, 4), lambda x: x[idx([])]),                              # empty index
    ((3,), lambda x: x[None, idx([1, 2])]),
], ids=range(12))
def test_getitem_advanced_gradcheck(case):
    shape, f = case
    x = rand(shape)
    assert gradcheck(f, (x,))
    assert f(x).grad_fn.name() == "IndexBackward0"


def test_getitem_gradgradcheck_and_duplicates_accumulate():
    x = rand((4, 3))
    i = idx([1, 3, 1, 1])
    assert gradgradcheck(lambda t: t[i] * t[i], (x,))
    (gx,) = grad_of(x[i], [x])
    np.testing.assert_array_equal(gx.numpy(), np.array([[0] * 3, [3] * 3, [0] * 3, [1] * 3], dtype=np.float64))


def test_getitem_basic_views_and_alias():
    x = rand((3, 4))
    assert x[...].grad_fn.name() == "AliasBackward0"
    assert x[1].grad_fn.name() == "SelectBackward0"
    assert x[:, 1:].grad_fn.name() == "SliceBackward0"
    assert gradcheck(lambda t: t[...], (x,))
    assert gradcheck(lambda t: t[1, ::2], (x,))


def test_index_integer_results_have_no_grad():
    x = rand((3, 4))
    assert not ember.nonzero(x).requires_grad
    assert not ember.argwhere(x).requires_grad
    assert not any(t.requires_grad for t in ember.nonzero(x, as_tuple=True))
    assert not (x > 0).requires_grad


# ---- index_put / setitem ---------------------------------------------------------------------


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("case", [
    ((3, 4), (idx([2, 0]),), (4,)),                   # values broadcast over rows
    ((3, 4), (idx([2, 0]),), (2, 4)),
    ((3, 4), (idx([2, 0]),), (1, 4)),
    ((3, 4), (idx([0, 2]), idx([1, 3])), (2,)),
    ((3, 4), (idx([0, 2]), idx([1, 3])), ()),
    ((3, 4), (None, idx([3, 1])), (3, 1)),
    ((2, 3), (ember.tensor([[True, False, True], [False, False, True]]),), (3,)),
], ids=range(7))
def test_index_put_gradcheck(case, accumulate):
    shape, indices, vshape = case
    x, v = rand(shape), rand(vshape, seed=1)
    f = lambda a, b: ember.index_put(a, indices, b, accumulate)
    assert gradcheck(f, (x, v))
    assert f(x, v).grad_fn.name() == "IndexPutBackward0"


def test_index_put_duplicates_accumulate_both_ways():
    x, v = rand((4, 2)), rand((3, 2), seed=1)
    i = idx([1, 1, 3])
    f = lambda a, b: ember.index_put(a, (i,), b, accumulate=True)
    assert gradcheck(f, (x, v))
    assert gradgradcheck(f, (x, v))
    g = rand((4, 2), seed=2, requires_grad=False)
    gx, gv = grad_of(f(x, v), [x, v], g)
    np.testing.assert_allclose(gx.numpy(), g.numpy())           # accumulate: self keeps all of grad
    np.testing.assert_allclose(gv.numpy(), g.numpy()[[1, 1, 3]])
    # Without accumulate the overwritten entries of self get no gradient.
    gx, gv = grad_of(ember.index_put(x, (i,), v), [x, v], g)
    expect = g.numpy().copy()
    expect[[1, 3]] = 0
    np.testing.assert_allclose(gx.numpy(), expect)
    np.testing.assert_allclose(gv.numpy(), g.numpy()[[1, 1, 3]])


def test_index_put_inplace_records_and_rejects_leaves():
    x, v = rand((3, 4)), rand((4,), seed=1)
    i = idx([2, 0])

    def f(a, b, acc):
        y = a * 1
        r = y.index_put_((i,), b, accumulate=acc)
        assert r is y
        return y

    for acc in (False, True):
        assert f(x, v, acc).grad_fn.name() == "IndexPutBackward0"
        assert gradcheck(lambda a, b: f(a, b, acc), (x, v))
    assert gradgradcheck(lambda a, b: f(a, b, False), (x, v))
    with pytest.raises(RuntimeError, match=LEAF_ERR):
        x.index_put_((i,), v)
    # self without grad, values with grad: the values' gradient flows.
    z = ember.zeros(3, 4, dtype=ember.float64)
    z.index_put_((i,), v, accumulate=True)
    assert z.grad_fn.name() == "IndexPutBackward0"
    (gv,) = grad_of(z, [v])
    np.testing.assert_allclose(gv.numpy(), np.full(4, 2.0))


def test_setitem_basic_copy_slices():
    c = ember.zeros(4, 7)
    a = ember.randn(5, requires_grad=True)
    c[1, 1:-1] = a
    assert c.grad_fn.name() == "CopySlices"
    assert c.grad_fn.next_functions[0][0] is None
    c.backward(ember.arange(28.0).reshape(4, 7))
    np.testing.assert_allclose(a.grad.numpy(), np.arange(8.0, 13.0))


def test_setitem_advanced_on_view_copy_slices():
    c = ember.zeros(4, 7, dtype=ember.float64)
    a = rand((2,))
    c[1, [0, 3]] = a
    assert c.grad_fn.name() == "CopySlices"
    c.backward(ember.arange(28.0, dtype=ember.float64).reshape(4, 7))
    np.testing.assert_allclose(a.grad.numpy(), [7.0, 10.0])


def test_setitem_mask_on_non_leaf():
    x = rand((3, 4))
    m = x > 0

    def f(t):
        y = t * 2
        y[m] = 0.5
        return y

    y = f(x)
    assert y.grad_fn.name() == "IndexPutBackward0"
    assert gradcheck(f, (x,))
    (gx,) = grad_of(y, [x])
    np.testing.assert_allclose(gx.numpy(), np.where(m.numpy(), 0.0, 2.0))


def test_setitem_tensor_value_gets_gradient():
    x, v = rand((3, 4)), rand((1, 4), seed=1)   # leading size-1 dims are dropped

    def f(t, w):
        y = t * 1
        y[idx([0, 2])] = w
        return y

    assert gradcheck(f, (x, v))
    assert gradgradcheck(f, (x, v))
    # A value of another dtype is converted on the way, its gradient cast back.
    w = ember.ones(4, dtype=ember.float32, requires_grad=True)
    y = x * 1
    y[idx([1])] = w
    (gw,) = grad_of(y, [w])
    assert gw.dtype == ember.float32
    np.testing.assert_allclose(gw.numpy(), np.ones(4))


def test_setitem_on_leaf_raises():
    x = rand((3, 4))
    with pytest.raises(RuntimeError, match=VIEW_LEAF_ERR):
        x[0] = 1.0
    with pytest.raises(RuntimeError, match=LEAF_ERR):
        x[[0]] = 1.0
    with pytest.raises(RuntimeError, match=LEAF_ERR):
        x[x > 0] = 1.0
    with ember.no_grad():
        x[x > 0] = 1.0   # allowed without grad mode
    assert x.grad_fn is None


def test_saved_index_modified_in_place_raises():
    x = rand((4,))
    i = idx([0, 1])
    y = x[i]
    i.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward(ember.ones(2, dtype=ember.float64))


# ---- index_select / gather / take --------------------------------------------------------------


@pytest.mark.parametrize("case", [
    ((3, 4), 0, [2, 0, 2]),
    ((3, 4), -1, [3, 3, 1, 0, 1]),
    ((3, 4), 1, []),
    ((), 0, [0]),
    ((2, 3, 2), 1, [1]),
], ids=range(5))
def test_index_select(case):
    shape, dim, index = case
    x = rand(shape)
    i = idx(index)
    f = lambda t: ember.index_select(t, dim, i)
    assert gradcheck(f, (x,))
    assert f(x).grad_fn.name() == "IndexSelectBackward0"
    assert gradcheck(lambda t: ember.index_select(t, dim, i.int()), (x,))


def test_index_select_noncontiguous_numpy_and_double_backward():
    x = rand((4, 3))
    i = idx([0, 0, 2])
    f = lambda t: t.t().index_select(1, i)
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))
    (gx,) = grad_of(x.index_select(0, i), [x])
    np.testing.assert_allclose(gx.numpy(), np.array([[2.0] * 3, [0.0] * 3, [1.0] * 3, [0.0] * 3]))


@pytest.mark.parametrize("case", [
    ((3, 4), 0, [[0, 1, 2, 0], [2, 2, 1, 0]]),
    ((3, 4), -1, [[3, 3], [0, 1], [2, 2]]),
    ((3, 4), 1, [[0], [1]]),                   # index smaller than self
    ((), 0, 0),
    ((5,), 0, [4, 4, 0]),
], ids=range(5))
def test_gather(case):
    shape, dim, index = case
    x = rand(shape)
    i = idx(index)
    f = lambda t: ember.gather(t, dim, i)
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))
    assert f(x).grad_fn.name() == "GatherBackward0"


def test_gather_numpy():
    x = rand((2, 3))
    i = idx([[0, 0, 2], [1, 0, 1]])
    (gx,) = grad_of(x.gather(1, i), [x])
    np.testing.assert_allclose(gx.numpy(), [[2.0, 0.0, 1.0], [1.0, 2.0, 0.0]])


@pytest.mark.parametrize("index", [[0, 5, 5, -1], [[1, 2], [3, -6]], 0, []], ids=range(4))
def test_take(index):
    x = rand((2, 3))
    i = idx(index)
    f = lambda t: ember.take(t, i)
    assert gradcheck(f, (x,))
    assert f(x).grad_fn.name() == "TakeBackward0"
    assert gradcheck(lambda t: t.t().take(i), (x,))


def test_take_numpy_and_double_backward():
    x = rand((2, 2))
    i = idx([3, 3, 0, -1])
    (gx,) = grad_of(x.take(i), [x])
    np.testing.assert_allclose(gx.numpy(), [[1.0, 0.0], [0.0, 3.0]])
    assert gradgradcheck(lambda t: t.take(i), (x,))


# ---- scatter family --------------------------------------------------------------------------

SCATTER_CASES = [  # indices unique along dim per column: scatter with duplicates is nondeterministic
    ((3, 4), 0, [[0, 1, 2, 0], [2, 2, 1, 1]], (2, 4)),
    ((3, 4), -1, [[3, 0], [1, 2], [0, 3]], (3, 2)),
    ((3, 4), 0, [[1, 0]], (2, 3)),             # src larger than index
    ((), 0, 0, ()),
    ((5,), 0, [4, 1], (2,)),
]


@pytest.mark.parametrize("case", SCATTER_CASES, ids=range(len(SCATTER_CASES)))
def test_scatter_src_and_value(case):
    shape, dim, index, sshape = case
    x, s = rand(shape), rand(sshape, seed=1)
    i = idx(index)
    f = lambda a, b: ember.scatter(a, dim, i, b)
    assert gradcheck(f, (x, s))
    assert f(x, s).grad_fn.name() == "ScatterBackward0"
    g = lambda a: a.scatter(dim, i, value=1.5)
    assert gradcheck(g, (x,))
    assert g(x).grad_fn.name() == "ScatterBackward1"


def test_scatter_gradients_numpy_and_double_backward():
    x, s = rand((3, 2)), rand((2, 3), seed=1)
    i = idx([[2, 0], [0, 1]])
    gx, gs = grad_of(x.scatter(0, i, s), [x, s])
    np.testing.assert_allclose(gx.numpy(), [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    # the src entries the index never reads get zero (PyTorch would reject this shape)
    np.testing.assert_allclose(gs.numpy(), [[1.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    assert gradgradcheck(lambda a, b: a.scatter(0, i, b), (x, s))


@pytest.mark.parametrize("case", SCATTER_CASES + [((3, 4), 0, [[0, 0, 0, 2], [0, 1, 0, 2]], (2, 4))],
                         ids=range(len(SCATTER_CASES) + 1))
def test_scatter_add(case):
    shape, dim, index, sshape = case
    x, s = rand(shape), rand(sshape, seed=1)
    i = idx(index)
    f = lambda a, b: ember.scatter_add(a, dim, i, b)
    assert gradcheck(f, (x, s))
    assert gradgradcheck(f, (x, s))
    assert f(x, s).grad_fn.name() == "ScatterAddBackward0"


@pytest.mark.parametrize("op", ["scatter_", "scatter_value_", "scatter_add_"])
def test_scatter_inplace(op):
    x, s = rand((3, 4)), rand((2, 4), seed=1)
    i = idx([[0, 1, 2, 0], [2, 2, 1, 1]])
    run = {
        "scatter_": lambda y, b: y.scatter_(0, i, b),
        "scatter_value_": lambda y, b: y.scatter_(0, i, value=2.0),
        "scatter_add_": lambda y, b: y.scatter_add_(0, i, b),
    }[op]
    name = {"scatter_": "ScatterBackward0", "scatter_value_": "ScatterBackward1",
            "scatter_add_": "ScatterAddBackward0"}[op]

    def f(a, b):
        y = a * 1
        assert run(y, b) is y
        return y

    assert f(x, s).grad_fn.name() == name
    assert gradcheck(f, (x, s))
    with pytest.raises(RuntimeError, match=LEAF_ERR):
        run(x, s)


def test_scatter_into_tensor_without_grad():
    s = rand((2, 2))
    z = ember.zeros(3, 2, dtype=ember.float64)
    z.scatter_add_(0, idx([[0, 0], [0, 2]]), s)
    assert z.requires_grad and z.grad_fn.name() == "ScatterAddBackward0"
    (gs,) = grad_of(z, [s], ember.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=ember.float64))
    np.testing.assert_allclose(gs.numpy(), [[1.0, 2.0], [1.0, 6.0]])


# ---- index_add -----------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [1, -2.5])
@pytest.mark.parametrize("case", [
    ((3, 4), 0, [2, 0, 2], (3, 4)),
    ((3, 4), -1, [1, 1], (3, 2)),
    ((), 0, [0], ()),
], ids=range(3))
def test_index_add(case, alpha):
    shape, dim, index, sshape = case
    x, s = rand(shape), rand(sshape, seed=1)
    i = idx(index)
    f = lambda a, b: ember.index_add(a, dim, i, b, alpha=alpha)
    assert gradcheck(f, (x, s))
    assert f(x, s).grad_fn.name() == "IndexAddBackward0"


def test_index_add_empty_source():
    # gradcheck cannot take a zero-element input; check the shapes directly.
    x, s = rand((4,)), rand((0,), seed=1)
    gx, gs = grad_of(x.index_add(0, idx([]), s), [x, s])
    np.testing.assert_allclose(gx.numpy(), np.ones(4))
    assert tuple(gs.shape) == (0,)


def test_index_add_numpy_inplace_and_double_backward():
    x, s = rand((3, 2)), rand((3, 2), seed=1)
    i = idx([2, 0, 2])
    g = ember.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=ember.float64)
    gx, gs = grad_of(x.index_add(0, i, s, alpha=3), [x, s], g)
    np.testing.assert_allclose(gx.numpy(), g.numpy())
    np.testing.assert_allclose(gs.numpy(), 3 * g.numpy()[[2, 0, 2]])

    def f(a, b):
        y = a * 1
        y.index_add_(0, i, b)
        return y

    assert f(x, s).grad_fn.name() == "IndexAddBackward0"
    assert gradcheck(f, (x, s))
    assert gradgradcheck(f, (x, s))
    with pytest.raises(RuntimeError, match=LEAF_ERR):
        x.index_add_(0, i, s)


# ---- masked ops ----------------------------------------------------------------------------------


def test_masked_fill_scalar():
    x = rand((3, 4))
    m = ember.tensor(np.random.default_rng(3).uniform(size=(3, 4)) > 0.5)
    f = lambda t: t.masked_fill(m, 2.0)
    assert f(x).grad_fn.name() == "MaskedFillBackward0"
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))
    (gx,) = grad_of(f(x), [x])
    np.testing.assert_allclose(gx.numpy(), np.where(m.numpy(), 0.0, 1.0))
    # a mask that broadcasts self up: the gradient sums back to self's shape
    x1 = rand((4,))
    assert gradcheck(lambda t: ember.masked_fill(t, m, -1.0), (x1,))
    (g1,) = grad_of(ember.masked_fill(x1, m, -1.0), [x1])
    np.testing.assert_allclose(g1.numpy(), (~m.numpy()).sum(0))


def test_masked_fill_tensor_value():
    x, v = rand((3, 4)), rand((), seed=1)
    m = x > 0.5
    f = lambda t, w: t.masked_fill(m, w)
    assert f(x, v).grad_fn.name() == "MaskedFillBackward1"
    assert gradcheck(f, (x, v))
    assert gradgradcheck(f, (x, v))
    gx, gv = grad_of(f(x, v), [x, v])
    np.testing.assert_allclose(gv.numpy(), m.numpy().sum())
    assert gradcheck(lambda t, w: ember.masked_fill(t, ember.tensor(True), w), (rand(()), v))


@pytest.mark.parametrize("value", ["scalar", "tensor"])
def test_masked_fill_inplace(value):
    x, v = rand((2, 3)), rand((), seed=1)
    m = ember.tensor([[True, False, True], [False, False, True]])
    w = (lambda b: 3.0) if value == "scalar" else (lambda b: b)

    def f(a, b):
        y = a * 1
        assert y.masked_fill_(m, w(b)) is y
        return y

    assert f(x, v).grad_fn.name() == ("MaskedFillBackward0" if value == "scalar" else "MaskedFillBackward1")
    assert gradcheck(f, (x, v))
    with pytest.raises(RuntimeError, match=LEAF_ERR):
        x.masked_fill_(m, w(v))


@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((4,), (3, 4)), ((3, 1), (1, 4)), ((), ()), ((2, 0), (2, 0))],
                         ids=range(5))
def test_masked_select(shapes):
    xs, ms = shapes
    x = rand(xs)
    m = ember.tensor(np.random.default_rng(5).uniform(size=ms) > 0.4)
    f = lambda t: ember.masked_select(t, m)
    assert gradcheck(f, (x,))
    assert f(x).grad_fn.name() == "MaskedSelectBackward0"


def test_masked_select_numpy_and_double_backward():
    x = rand((2, 3))
    m = ember.tensor([[True, False, True], [False, False, True]])
    g = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64)
    (gx,) = grad_of(x.masked_select(m), [x], g)
    np.testing.assert_allclose(gx.numpy(), [[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]])
    assert gradgradcheck(lambda t: t.masked_select(m), (x,))
