"""Autograd of the linear algebra ops: gradcheck / gradgradcheck of mm, bmm,
matmul (every case), mv, dot, vdot, outer, addmm, baddbmm, addmv, tril/triu,
trace and their in-place forms; node names as PyTorch 1.13's; out= and integer
errors; gradients compared with NumPy."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck


def rand(*shape, seed=0, requires_grad=True, dtype=ember.float64):
    a = np.random.default_rng(seed + 7 * len(shape) + sum(shape)).uniform(-1.0, 1.0, shape)
    return ember.tensor(a, dtype=dtype, requires_grad=requires_grad)


def operand(shape, kind="c", seed=0):
    """A contiguous float64 leaf and the view that turns it into the operand:
    "c" as is, "t" transposed (last two dims swapped), "s" stepped by 2 in the last dim."""
    shape = list(shape)
    if kind == "t":
        shape[-1], shape[-2] = shape[-2], shape[-1]
        return rand(*shape, seed=seed), lambda x: x.transpose(-1, -2)
    if kind == "s":
        shape[-1] *= 2
        return rand(*shape, seed=seed), lambda x: x[..., ::2]
    return rand(*shape, seed=seed), lambda x: x


def on_views(op, specs, check=gradcheck):
    """gradcheck (or gradgradcheck) of op on operands given as (shape, kind) specs."""
    made = [operand(shape, kind, seed=i) for i, (shape, kind) in enumerate(specs)]
    leaves = tuple(m[0] for m in made)
    return check(lambda *ls: op(*[m[1](x) for m, x in zip(made, ls)]), leaves)


def names(fn):
    return [f.name() for f, _ in fn.next_functions if f is not None]


# ---- node names ---------------------------------------------------------------------------------

# Checked with Debian's python3-torch 1.13.
NODE_NAMES = [
    ("mm", lambda: ember.mm(rand(2, 3), rand(3, 4)), "MmBackward0"),
    ("bmm", lambda: ember.bmm(rand(2, 2, 3), rand(2, 3, 4)), "BmmBackward0"),
    ("mv", lambda: ember.mv(rand(2, 3), rand(3)), "MvBackward0"),
    ("dot", lambda: ember.dot(rand(3), rand(3)), "DotBackward0"),
    ("vdot", lambda: ember.vdot(rand(3), rand(3)), "VdotBackward0"),
    ("outer", lambda: ember.outer(rand(3), rand(2)), "MulBackward0"),
    ("addmm", lambda: ember.addmm(rand(4), rand(2, 3), rand(3, 4)), "AddmmBackward0"),
    ("baddbmm", lambda: ember.baddbmm(rand(2, 2, 4), rand(2, 2, 3), rand(2, 3, 4)),
     "BaddbmmBackward0"),
    ("addmv", lambda: ember.addmv(rand(2), rand(2, 3), rand(3)), "AddmvBackward0"),
    ("tril", lambda: ember.tril(rand(3, 3)), "TrilBackward0"),
    ("triu", lambda: ember.triu(rand(3, 3), 1), "TriuBackward0"),
    ("trace", lambda: ember.trace(rand(3, 3)), "TraceBackward0"),
    ("matmul 1-D @ 1-D", lambda: rand(3) @ rand(3), "DotBackward0"),
    ("matmul 2-D @ 1-D", lambda: rand(2, 3) @ rand(3), "MvBackward0"),
    ("matmul 2-D @ 2-D", lambda: rand(2, 3) @ rand(3, 2), "MmBackward0"),
]


@pytest.mark.parametrize("case", NODE_NAMES, ids=[c[0] for c in NODE_NAMES])
def test_node_names(case):
    _, make, name = case
    y = make()
    assert y.requires_grad and y.grad_fn.name() == name


@pytest.mark.parametrize("shapes,prims", [
    # PyTorch: SqueezeBackward3 -> MmBackward0 -> UnsqueezeBackward0
    (((3,), (3, 2)), ["MmBackward0"]),
    # N-D @ 2-D / 1-D: one GEMM on the folded rows (PyTorch: UnsafeView -> Mm / Mv)
    (((4, 2, 3), (3, 2)), ["MmBackward0"]),
    (((4, 2, 3), (3,)), ["MvBackward0"]),
    (((3,), (4, 3, 2)), ["MvBackward0"]),
    (((2, 3), (4, 3, 2)), ["MmBackward0"]),
    (((4, 2, 3), (4, 3, 2)), ["BmmBackward0"]),
    (((5, 1, 2, 3), (4, 3, 2)), ["BmmBackward0"]),
])
def test_matmul_records_the_primitives(shapes, prims):
    y = rand(*shapes[0]) @ rand(*shapes[1], seed=1)
    seen, stack = [], [y.grad_fn]
    while stack:
        f = stack.pop()
        seen.append(f.name())
        stack.extend(g for g, _ in f.next_functions if g is not None)
    for p in prims:
        assert p in seen
    # the broadcast operand's gradient is summed back by ExpandBackward0, like PyTorch
    if len(shapes[0]) >= 3 and len(shapes[1]) >= 3:
        assert "ExpandBackward0" in seen


# ---- gradcheck: products ----------------------------------------------------------------------

@pytest.mark.parametrize("a,b", [
    (((2, 3), "c"), ((3, 4), "c")),
    (((1, 1), "c"), ((1, 1), "c")),
    (((2, 3), "t"), ((3, 4), "t")),
    (((3, 2), "s"), ((2, 3), "s")),
    (((3, 2), "t"), ((2, 3), "s")),
    (((2, 0), "c"), ((0, 3), "c")),  # k = 0
    (((0, 2), "c"), ((2, 3), "t")),  # m = 0
    (((2, 3), "c"), ((3, 0), "c")),  # n = 0
], ids=["plain", "1x1", "transposed", "stepped", "mixed", "k0", "m0", "n0"])
def test_mm_gradcheck(a, b):
    assert on_views(ember.mm, [a, b])


def test_mm_gradgradcheck():
    assert on_views(ember.mm, [((2, 3), "c"), ((3, 2), "t")], check=gradgradcheck)


@pytest.mark.parametrize("a,b", [
    (((2, 2, 3), "c"), ((2, 3, 2), "c")),
    (((2, 2, 3), "t"), ((2, 3, 2), "c")),
    (((2, 2, 3), "c"), ((2, 3, 2), "s")),
    (((2, 2, 0), "c"), ((2, 0, 3), "c")),
    (((0, 2, 3), "c"), ((0, 3, 2), "t")),
], ids=["plain", "transposed", "stepped", "k0", "batch0"])
def test_bmm_gradcheck(a, b):
    assert on_views(ember.bmm, [a, b])


def test_bmm_batch_permuted_operand():
    # batch dim not outermost in memory
    assert gradcheck(lambda x, y: ember.bmm(x.transpose(0, 1), y),
                     (rand(2, 3, 2), rand(3, 2, 2, seed=1)))


def test_bmm_gradgradcheck():
    assert on_views(ember.bmm, [((2, 2, 3), "c"), ((2, 3, 2), "t")], check=gradgradcheck)


MATMUL_SHAPES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 2)),
    ((2, 2, 3), (3, 2)), ((2, 2, 3), (3,)), ((3,), (2, 3, 2)), ((2, 3), (2, 3, 2)),
    ((2, 2, 3), (2, 3, 2)), ((2, 1, 2, 3), (3, 3, 2)), ((1, 2, 3), (2, 1, 3, 2)),
    ((2, 1, 2, 3), (3,)), ((3,), (2, 1, 3, 2)),
    ((2, 0), (0, 3)), ((2, 2, 0), (0,)), ((0, 2, 3), (3, 2)), ((2, 1, 2, 0), (3, 0, 2)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES, ids=[f"{a}@{b}" for a, b in MATMUL_SHAPES])
def test_matmul_gradcheck(sa, sb):
    a, b = rand(*sa), rand(*sb, seed=1)
    y = ember.matmul(a, b)
    expect = np.matmul(a.detach().numpy(), b.detach().numpy())
    assert y.shape == expect.shape
    np.testing.assert_allclose(y.detach().numpy(), expect, atol=1e-12)
    assert gradcheck(ember.matmul, (a, b))


@pytest.mark.parametrize("sa,sb", [((2, 3, 2), (2, 4)), ((3, 2, 3), (3, 3, 2)),
                                   ((2, 3), (2, 3, 4)), ((3, 2, 3), (3,)), ((2, 1, 2, 3), (2, 3, 2))])
def test_matmul_gradcheck_noncontiguous(sa, sb):
    # transposed and stepped operands (the folded reshape must copy them)
    assert on_views(ember.matmul, [(sa, "t"), (sb, "s")])
    assert on_views(ember.matmul, [(sa, "s"), (sb, "t" if len(sb) >= 2 else "c")])


def test_matmul_gradgradcheck_batched_broadcast():
    assert gradgradcheck(ember.matmul, (rand(2, 1, 2, 3), rand(2, 3, 2, seed=1)))
    assert gradgradcheck(ember.matmul, (rand(2, 2, 3), rand(3, 2, seed=1)))
    assert gradgradcheck(ember.matmul, (rand(3), rand(2, 3, 2, seed=1)))


def test_matmul_broadcast_gradients_vs_numpy():
    a, b = rand(2, 1, 2, 3), rand(4, 3, 5, seed=1)
    g = np.random.default_rng(5).standard_normal((2, 4, 2, 5))
    (a @ b).backward(ember.tensor(g))
    an, bn = a.detach().numpy(), b.detach().numpy()
    ga = np.matmul(g, np.swapaxes(bn, -1, -2)).sum(axis=1, keepdims=True)
    gb = np.matmul(np.swapaxes(an, -1, -2), g).sum(axis=0)
    np.testing.assert_allclose(a.grad.numpy(), ga, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), gb, rtol=1e-12, atol=1e-12)


def test_matmul_vector_gradients_vs_numpy():
    v, m = rand(3), rand(2, 3, 4, seed=1)
    (v @ m).sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), m.detach().numpy().sum(axis=(0, 2)), rtol=1e-12)
    np.testing.assert_allclose(m.grad.numpy(),
                               np.broadcast_to(v.detach().numpy()[None, :, None], (2, 3, 4)),
                               rtol=1e-12)


def test_mm_gradients_vs_numpy_float32():
    a, b = rand(3, 4, dtype=ember.float32), rand(4, 2, seed=1, dtype=ember.float32)
    g = np.random.default_rng(3).standard_normal((3, 2)).astype(np.float32)
    ember.mm(a, b).backward(ember.tensor(g))
    assert a.grad.dtype == ember.float32 and b.grad.dtype == ember.float32
    np.testing.assert_allclose(a.grad.numpy(), g @ b.detach().numpy().T, rtol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), a.detach().numpy().T @ g, rtol=1e-5)


def test_only_inputs_that_require_grad_get_one():
    a, b = rand(2, 3), rand(3, 2, seed=1, requires_grad=False)
    y = ember.mm(a, b)
    assert names(y.grad_fn) == ["AccumulateGrad"]
    y.sum().backward()
    assert b.grad is None
    np.testing.assert_allclose(a.grad.numpy(), np.ones((2, 2)) @ b.numpy().T)


def test_mv_dot_vdot_outer_gradcheck():
    assert gradcheck(ember.mv, (rand(2, 3), rand(3, seed=1)))
    assert on_views(ember.mv, [((2, 3), "t"), ((3,), "s")])
    assert gradcheck(ember.mv, (rand(2, 0), rand(0, seed=1)))
    assert gradgradcheck(ember.mv, (rand(2, 3), rand(3, seed=1)))
    for f in (ember.dot, ember.vdot):
        assert gradcheck(f, (rand(4), rand(4, seed=1)))
        assert on_views(f, [((3,), "s"), ((3,), "c")])
        assert gradcheck(f, (rand(0), rand(0, seed=1)))
        assert gradgradcheck(f, (rand(3), rand(3, seed=1)))
    assert on_views(ember.outer, [((3,), "c"), ((2,), "s")])
    assert gradgradcheck(ember.outer, (rand(3), rand(2, seed=1)))


def test_dot_gradient_vs_numpy():
    a, b = rand(4), rand(4, seed=1)
    ember.dot(a, b).backward(ember.tensor(2.0, dtype=ember.float64))
    np.testing.assert_allclose(a.grad.numpy(), 2 * b.detach().numpy())
    np.testing.assert_allclose(b.grad.numpy(), 2 * a.detach().numpy())


# ---- add forms -----------------------------------------------------------------------------------

@pytest.mark.parametrize("in_shape", [(2, 4), (4,), (1, 4), (2, 1), ()])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, -2.0), (0, 3)])
def test_addmm_gradcheck(in_shape, beta, alpha):
    f = lambda i, x, y: ember.addmm(i, x, y, beta=beta, alpha=alpha)  # noqa: E731
    assert on_views(f, [(in_shape, "c"), ((2, 3), "c"), ((3, 4), "t")])


def test_addmm_beta_zero_ignores_input_but_grad_is_zero():
    i = ember.tensor([[float("nan")] * 2] * 2, dtype=ember.float64, requires_grad=True)
    y = ember.addmm(i, rand(2, 3), rand(3, 2, seed=1), beta=0)
    assert not np.isnan(y.detach().numpy()).any()
    y.sum().backward()
    np.testing.assert_array_equal(i.grad.numpy(), np.zeros((2, 2)))


def test_addmm_gradients_vs_numpy():
    i, x, y = rand(3), rand(2, 4, seed=1), rand(4, 3, seed=2)
    g = np.random.default_rng(4).standard_normal((2, 3))
    ember.addmm(i, x, y, beta=0.5, alpha=2.0).backward(ember.tensor(g))
    np.testing.assert_allclose(i.grad.numpy(), 0.5 * g.sum(0), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * g @ y.detach().numpy().T, rtol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), 2.0 * x.detach().numpy().T @ g, rtol=1e-12)


def test_addmm_gradgradcheck():
    f = lambda i, x, y: ember.addmm(i, x, y, beta=0.5, alpha=2.0)  # noqa: E731
    assert gradgradcheck(f, (rand(3, seed=2), rand(2, 3), rand(3, 3, seed=1)))


@pytest.mark.parametrize("in_shape", [(2, 2, 4), (2, 1, 4), (4,), ()])
def test_baddbmm_gradcheck(in_shape):
    f = lambda i, x, y: ember.baddbmm(i, x, y, beta=0.5, alpha=-1.5)  # noqa: E731
    assert on_views(f, [(in_shape, "c"), ((2, 2, 3), "c"), ((2, 3, 4), "t")])
    assert gradcheck(ember.baddbmm, (rand(*in_shape, seed=2), rand(2, 2, 0), rand(2, 0, 4)))
    assert gradgradcheck(f, (rand(*in_shape, seed=2), rand(2, 2, 3), rand(2, 3, 4, seed=1)))


@pytest.mark.parametrize("in_shape", [(3,), (1,), ()])
def test_addmv_gradcheck(in_shape):
    f = lambda i, m, v: ember.addmv(i, m, v, beta=2, alpha=0.5)  # noqa: E731
    assert on_views(f, [(in_shape, "c"), ((3, 2), "t"), ((2,), "s")])
    assert gradcheck(ember.addmv, (rand(*in_shape, seed=2), rand(3, 0), rand(0, seed=1)))
    assert gradgradcheck(f, (rand(*in_shape, seed=2), rand(3, 2), rand(2, seed=1)))


# ---- tril / triu / trace ----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["tril", "triu"])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (4, 2), (2, 3, 3), (0, 3)])
@pytest.mark.parametrize("diag", [0, 1, -1, 5, -5])
def test_tril_triu_gradcheck(name, shape, diag):
    f = getattr(ember, name)
    x = rand(*shape)
    assert gradcheck(lambda t: f(t, diag), (x,))
    y = f(x, diag)
    assert y.grad_fn.name() == ("TrilBackward0" if name == "tril" else "TriuBackward0")
    y.backward(ember.ones(*shape, dtype=ember.float64))
    ref = (np.tril if name == "tril" else np.triu)(np.ones(shape), diag)
    np.testing.assert_array_equal(x.grad.numpy(), ref)


def test_tril_triu_noncontiguous_and_gradgrad():
    assert on_views(lambda t: ember.tril(t, -1), [((3, 4), "t")])
    assert on_views(lambda t: ember.triu(t, 1), [((3, 3), "s")])
    assert gradgradcheck(lambda t: ember.tril(t, 0) ** 2, (rand(3, 3),))


@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (4, 2), (1, 1), (0, 3)])
def test_trace_gradcheck(shape):
    x = rand(*shape)
    assert gradcheck(ember.trace, (x,))
    ember.trace(x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.eye(*shape))


def test_trace_noncontiguous_and_gradgrad():
    assert on_views(ember.trace, [((3, 2), "t")])
    assert on_views(ember.trace, [((3, 3), "s")])
    assert gradgradcheck(lambda t: ember.trace(t @ t), (rand(3, 3),))


# ---- in-place forms -------------------------------------------------------------------------------

INPLACE = [
    ("addmm_", (3, 4), lambda s, x, y: s.addmm_(x, y, beta=0.5, alpha=2.0), ((3, 2), (2, 4)),
     "AddmmBackward0"),
    ("baddbmm_", (2, 3, 4), lambda s, x, y: s.baddbmm_(x, y, beta=-1, alpha=0.5),
     ((2, 3, 2), (2, 2, 4)), "BaddbmmBackward0"),
    ("addmv_", (3,), lambda s, x, y: s.addmv_(x, y, beta=2.0), ((3, 2), (2,)), "AddmvBackward0"),
    ("tril_", (3, 4), lambda s, x, y: s.tril_(-1) * x.sum() * y.sum(), ((1,), (1,)),
     "TrilBackward0"),
    ("triu_", (3, 4), lambda s, x, y: s.triu_(1) * x.sum() * y.sum(), ((1,), (1,)),
     "TriuBackward0"),
]


@pytest.mark.parametrize("case", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_gradcheck_and_name(case):
    name, s_shape, op, (xs, ys), node = case
    s, x, y = rand(*s_shape), rand(*xs, seed=1), rand(*ys, seed=2)
    assert gradcheck(lambda s_, x_, y_: op(s_.clone(), x_, y_), (s, x, y))
    c = s.clone()
    r = c.tril_(-1) if name == "tril_" else c.triu_(1) if name == "triu_" else op(c, x, y)
    assert r is c and c.grad_fn.name() == node
    assert c._version > 0


@pytest.mark.parametrize("case", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_on_leaf_raises(case):
    _, s_shape, op, (xs, ys), _ = case
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in "
                                           "an in-place operation."):
        op(rand(*s_shape), rand(*xs, seed=1), rand(*ys, seed=2))


def test_inplace_into_plain_tensor_records_operands():
    # self does not require grad; only the operands do
    s = rand(2, 2, requires_grad=False)
    x, y = rand(2, 3, seed=1), rand(3, 2, seed=2)
    s.addmm_(x, y)
    assert s.requires_grad and s.grad_fn.name() == "AddmmBackward0"
    s.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones((2, 2)) @ y.detach().numpy().T)


def test_inplace_on_view_records_copyslices():
    base = rand(3, 3).clone()
    x, y = rand(2, 3, seed=1), rand(3, 2, seed=2)
    v = base[1:, 1:]
    v.addmm_(x, y)
    assert base.grad_fn.name() == "CopySlices"
    leaf = rand(3, 3, seed=5)

    def f(leaf_, x_, y_):
        b = leaf_.clone()
        b[:2, :2].addmm_(x_, y_, alpha=2.0)
        b.triu_()
        return b
    assert gradcheck(f, (leaf, rand(2, 3, seed=1), rand(3, 2, seed=2)))


def test_inplace_shape_checks_under_autograd():
    s = rand(3, requires_grad=False)
    with pytest.raises(RuntimeError, match=r"addmm_: the input of shape \[3\] is written in place "
                                           r"and must have the product's shape \[2, 3\]"):
        s.addmm_(rand(2, 2), rand(2, 3))
    with pytest.raises(RuntimeError, match=r"baddbmm_: the input of shape \[1, 2, 3\]"):
        rand(1, 2, 3, requires_grad=False).baddbmm_(rand(2, 2, 2), rand(2, 2, 3))
    with pytest.raises(RuntimeError, match=r"tril_: input tensor must have at least 2 dimensions"):
        rand(3).clone().tril_()


def test_saved_operand_modified_in_place_raises():
    a, b = rand(2, 3), rand(3, 2, seed=1)
    bb = b.clone()
    y = ember.mm(a, bb)
    bb.mul_(2)
    with pytest.raises(RuntimeError, match="one of the variables needed for gradient computation "
                                           "has been modified by an inplace operation"):
        y.sum().backward()


# ---- out= and non-differentiable cases -------------------------------------------------------------

OUT_CASES = [
    ("matmul", lambda o: ember.matmul(rand(2, 3), rand(3, 2), out=o), (2, 2)),
    ("mm", lambda o: ember.mm(rand(2, 3), rand(3, 2), out=o), (2, 2)),
    ("bmm", lambda o: ember.bmm(rand(1, 2, 3), rand(1, 3, 2), out=o), (1, 2, 2)),
    ("mv", lambda o: ember.mv(rand(2, 3), rand(3), out=o), (2,)),
    ("dot", lambda o: ember.dot(rand(3), rand(3), out=o), ()),
    ("addmm", lambda o: ember.addmm(rand(2, 2), rand(2, 3), rand(3, 2), out=o), (2, 2)),
    ("baddbmm", lambda o: ember.baddbmm(rand(1, 2, 2), rand(1, 2, 3), rand(1, 3, 2), out=o),
     (1, 2, 2)),
    ("addmv", lambda o: ember.addmv(rand(2), rand(2, 3), rand(3), out=o), (2,)),
    ("outer", lambda o: ember.outer(rand(2), rand(2), out=o), (2, 2)),
    ("tril", lambda o: ember.tril(rand(2, 2), out=o), (2, 2)),
    ("triu", lambda o: ember.triu(rand(2, 2), out=o), (2, 2)),
]


@pytest.mark.parametrize("case", OUT_CASES, ids=[c[0] for c in OUT_CASES])
def test_out_with_requires_grad_raises(case):
    name, call, shape = case
    out = ember.empty(*shape, dtype=ember.float64)
    with pytest.raises(RuntimeError, match=rf"{name}\(\): functions with out=\.\.\. arguments "
                                           "don't support automatic differentiation, but one of "
                                           "the arguments requires grad."):
        call(out)


def test_out_without_grad_still_works():
    out = ember.empty(2, 2, dtype=ember.float64)
    with ember.no_grad():
        ember.mm(rand(2, 3), rand(3, 2), out=out)
    a, b = rand(2, 3, requires_grad=False), rand(3, 2, requires_grad=False)
    ember.matmul(a, b, out=out)
    np.testing.assert_allclose(out.numpy(), a.numpy() @ b.numpy())
    assert not out.requires_grad


def test_integer_matmul_is_not_differentiable():
    a = ember.arange(6).reshape(2, 3)
    b = ember.arange(6).reshape(3, 2)
    for y in (a @ b, ember.mm(a, b), ember.trace(a @ b), ember.tril(a)):
        assert not y.requires_grad and y.grad_fn is None
    np.testing.assert_array_equal((a @ b).numpy(), a.numpy() @ b.numpy())
    with pytest.raises(RuntimeError, match="[Oo]nly Tensors of floating point"):
        a.requires_grad_()
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: "
                                           "float64 != int64"):
        rand(2, 3) @ b


def test_no_grad_records_nothing():
    a, b = rand(2, 2, 3), rand(3, 2, seed=1)
    with ember.no_grad():
        for y in (a @ b, ember.bmm(a, a.transpose(1, 2)), ember.trace(b.t() @ b),
                  ember.addmm(b[0], b.t(), b)):
            assert not y.requires_grad and y.grad_fn is None


def test_matmul_grad_matches_between_recording_and_plain_forward():
    # the composite recorded under autograd computes the same values as the fused path
    a, b = rand(3, 1, 4, 5), rand(2, 5, 3, seed=1)
    with ember.no_grad():
        plain = (a @ b).numpy()
    np.testing.assert_allclose((a @ b).detach().numpy(), plain, rtol=1e-13, atol=1e-13)


def test_hessian_vector_product_through_matmul():
    # f(x) = x^T A x  =>  H = A + A^T; H v via double backward
    A = rand(3, 3, requires_grad=False)
    x, v = rand(3, seed=1), rand(3, seed=2, requires_grad=False)
    (g,) = ember.autograd.grad(x @ (A @ x), (x,), create_graph=True)
    (hv,) = ember.autograd.grad(g, (x,), grad_outputs=(v,))
    An = A.numpy()
    np.testing.assert_allclose(hv.numpy(), (An + An.T) @ v.numpy(), rtol=1e-12)


@pytest.mark.parametrize("dtype,tol", [(ember.float16, 1e-2), (ember.bfloat16, 5e-2)])
def test_reduced_precision_gradients(dtype, tol):
    an = np.random.default_rng(0).uniform(-1, 1, (2, 3, 4))
    bn = np.random.default_rng(1).uniform(-1, 1, (4, 2))
    a = ember.tensor(an, dtype=dtype, requires_grad=True)
    b = ember.tensor(bn, dtype=dtype, requires_grad=True)
    (a @ b).sum().backward()
    assert a.grad.dtype == dtype and b.grad.dtype == dtype
    g = np.ones((2, 3, 2))
    np.testing.assert_allclose(a.grad.to(ember.float64).numpy(), g @ bn.T, atol=tol, rtol=tol)
    np.testing.assert_allclose(b.grad.to(ember.float64).numpy(),
                               np.einsum("bmk,bmn->kn", an, g), atol=4 * tol, rtol=tol)
