"""gradcheck / gradgradcheck over every differentiable elementwise op of the op
table, view ops, copies and conversions; node names as PyTorch's."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.testing.opinfo import binary_ops, unary_ops

# Which ops are differentiable comes from the derivative table
# (csrc/ember/autograd/derivatives/elementwise.def): a new op is gradchecked here
# without touching this file. test_only_never_floating_ops_are_non_differentiable
# keeps the table honest.
NON_DIFF_UNARY = {o.name for o in unary_ops if not o.differentiable}
ZERO_GRAD_UNARY = {"sign", "floor", "ceil", "trunc", "round"}
DIFF_BINARY = {o.name for o in binary_ops if o.differentiable}
# Kinds whose result is bool or integer for every input (kernels/ops.def).
NEVER_FLOATING_KINDS = {"PRED", "BITS", "COMPARE", "LOGICAL"}

# PyTorch 1.13's node names (checked with Debian's python3-torch).
UNARY_NAMES = {
    "neg": "NegBackward0", "abs": "AbsBackward0", "sign": "SignBackward0", "square": "PowBackward0",
    "relu": "ReluBackward0", "floor": "FloorBackward0", "ceil": "CeilBackward0",
    "trunc": "TruncBackward0", "round": "RoundBackward0", "frac": "FracBackward0",
    "exp": "ExpBackward0", "exp2": "Exp2Backward0", "log": "LogBackward0",
    "log1p": "Log1PBackward0", "expm1": "Expm1Backward0", "log2": "Log2Backward0",
    "log10": "Log10Backward0", "sqrt": "SqrtBackward0", "rsqrt": "RsqrtBackward0",
    "reciprocal": "ReciprocalBackward0", "sin": "SinBackward0", "cos": "CosBackward0",
    "tan": "TanBackward0", "asin": "AsinBackward0", "acos": "AcosBackward0",
    "atan": "AtanBackward0", "sinh": "SinhBackward0", "cosh": "CoshBackward0",
    "tanh": "TanhBackward0", "sigmoid": "SigmoidBackward0", "erf": "ErfBackward0",
    "erfc": "ErfcBackward0", "erfinv": "ErfinvBackward0", "lgamma": "LgammaBackward0",
    "digamma": "DigammaBackward0", "i0": "I0Backward0", "special_i1": "SpecialI1Backward0",
}


def rand(shape, lo=-2.0, hi=2.0, seed=0, requires_grad=True):
    a = np.random.default_rng(seed).uniform(lo, hi, shape)
    return ember.tensor(a, dtype=ember.float64, requires_grad=requires_grad)


def away_from_kinks(op, t):
    """Inputs where the op is smooth (no |x| at 0, no integer points for frac/floor)."""
    lo, hi = op.domain or (-2, 2)
    a = np.random.default_rng(1).uniform(lo, hi, tuple(t))
    if op.name in ("abs", "relu", "sign"):
        a = np.where(np.abs(a) < 0.1, 0.5, a)
    if op.name in ("frac", "floor", "ceil", "trunc", "round"):
        a = np.floor(a) + np.clip(a - np.floor(a), 0.2, 0.8) - (0.5 if op.name == "round" else 0)
        a = np.where(np.abs(a - np.round(a)) < 0.1, a + 0.25, a)
    return ember.tensor(a, dtype=ember.float64, requires_grad=True)


@pytest.mark.parametrize("op", [o for o in unary_ops if o.name not in NON_DIFF_UNARY],
                         ids=lambda o: o.name)
def test_unary_gradcheck(op):
    f = getattr(ember, op.name)
    for shape in [(), (3,), (2, 3)]:
        x = away_from_kinks(op, shape)
        assert gradcheck(f, (x,))
    y = f(away_from_kinks(op, (2, 2)))
    # PyTorch's names; an op not listed above follows PyTorch's convention.
    expected = UNARY_NAMES.get(op.name, op.name.title().replace("_", "") + "Backward0")
    assert y.grad_fn.name() == expected == op.node
    # non-contiguous input
    x = away_from_kinks(op, (3, 4))
    assert gradcheck(lambda t: f(t.t()), (x,))


@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid", "log", "sqrt", "sin", "square", "atan"])
def test_unary_gradgradcheck(name):
    op = next(o for o in unary_ops if o.name == name)
    assert gradgradcheck(getattr(ember, name), (away_from_kinks(op, (3,)),))


@pytest.mark.parametrize("name", sorted(NON_DIFF_UNARY))
def test_non_differentiable_unary_has_no_grad(name):
    x = rand((3,))
    y = getattr(ember, name)(x if name not in ("bitwise_not",) else (x > 0))
    assert not y.requires_grad and y.grad_fn is None


@pytest.mark.parametrize("name", sorted(ZERO_GRAD_UNARY))
def test_rounding_has_zero_gradient(name):
    x = rand((4,))
    y = getattr(ember, name)(x)
    assert y.requires_grad
    y.backward(ember.ones(4, dtype=ember.float64))
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(4))


def binary_inputs(name, sa, sb):
    a = rand(sa, 0.5, 2.0, seed=1)
    b = rand(sb, 0.5, 2.0, seed=2)
    if name in ("maximum", "minimum"):
        b = ember.tensor(b.detach().numpy() + 3.0 * (np.arange(b.numel()).reshape(sb) % 2 - 0.5),
                         requires_grad=True)
    if name in ("remainder", "fmod", "floor_divide"):
        a = ember.tensor(np.random.default_rng(3).uniform(2.1, 2.9, sa), requires_grad=True)
        b = ember.tensor(np.random.default_rng(4).uniform(1.1, 1.4, sb), requires_grad=True)
    return a, b


@pytest.mark.parametrize("name", sorted(DIFF_BINARY))
@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2,))])
def test_binary_gradcheck(name, shapes):
    f = getattr(ember, name)
    a, b = binary_inputs(name, *shapes)
    assert gradcheck(f, (a, b))


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow", "atan2", "maximum"])
def test_binary_gradgradcheck(name):
    a, b = binary_inputs(name, (2, 3), (3,))
    assert gradgradcheck(getattr(ember, name), (a, b))


def test_binary_node_names_match_pytorch():
    x = rand((2,))
    y = rand((2,), seed=5)
    cases = {"x + 2": "AddBackward0", "2 + x": "AddBackward0", "x + y": "AddBackward0",
             "x - 2": "SubBackward0", "x * 2": "MulBackward0", "x / 2": "DivBackward0",
             "x ** 2": "PowBackward0", "x ** y": "PowBackward1",
             "ember.maximum(x, y)": "MaximumBackward0", "x % 2": "RemainderBackward0",
             "x.atan2(y)": "Atan2Backward0"}
    for expr, name in cases.items():
        assert eval(expr, {"ember": ember, "x": x, "y": y}).grad_fn.name() == name, expr
    # Only the tensor operand has an edge: the Python scalar is not differentiable.
    fns = (x + 2).grad_fn.next_functions
    assert fns[0][0].name() == "AccumulateGrad" and fns[1][0] is None


def test_scalar_operands_and_mixed_dtypes():
    x = rand((3,))
    f32 = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * f32).sum() if hasattr(x, "sum") else None
    y.backward()
    assert f32.grad.dtype == ember.float32 and x.grad.dtype == ember.float64
    np.testing.assert_allclose(f32.grad.numpy(), x.detach().numpy().astype(np.float32), rtol=1e-6)
    assert gradcheck(lambda t: 3.0 - t / 2 + 2 ** t, (rand((3,)),))


def test_where_and_clamp():
    x, y = rand((2, 3)), rand((3,), seed=3)
    c = ember.tensor([[True, False, True], [False, False, True]])
    assert gradcheck(lambda a, b: ember.where(c, a, b), (x, y))
    assert ember.where(c, x, y).grad_fn.name() == "WhereBackward0"
    z = rand((5,))
    out = z.clamp(-0.5, 0.5)
    assert out.grad_fn.name() == "ClampBackward1"
    out.backward(ember.ones(5, dtype=ember.float64))
    v = z.detach().numpy()
    np.testing.assert_array_equal(z.grad.numpy(), ((v >= -0.5) & (v <= 0.5)).astype(float))
    lo, hi = rand((5,), -3, -1, seed=7), rand((5,), 1, 3, seed=8)
    assert gradcheck(lambda a, lo_, hi_: ember.clamp(a, lo_, hi_), (rand((5,), -4, 4, seed=9), lo, hi))


def test_lerp_and_nan_to_num_get_gradients_through_primitives():
    a, b = rand((4,)), rand((4,), seed=2)
    assert gradcheck(lambda s, e: ember.lerp(s, e, 0.3), (a, b))
    assert gradcheck(lambda s, e: ember.lerp(s, e, 0.8), (a, b))
    assert gradcheck(lambda s: ember.nan_to_num(s), (a,))


# ---- views -----------------------------------------------------------------------------

VIEW_CASES = {
    "view": (lambda t: t.view(6, 2), "ViewBackward0"),
    "reshape": (lambda t: t.reshape(2, 6), "ViewBackward0"),
    "t": (lambda t: t.t(), "TBackward0"),
    "transpose": (lambda t: t.transpose(0, 1), "TransposeBackward0"),
    "permute": (lambda t: t.unsqueeze(0).permute(2, 0, 1), "PermuteBackward0"),
    "squeeze": (lambda t: t.unsqueeze(1).squeeze(), "SqueezeBackward0"),
    "squeeze_dim": (lambda t: t.unsqueeze(1).squeeze(1), "SqueezeBackward1"),
    "unsqueeze": (lambda t: t.unsqueeze(-1), "UnsqueezeBackward0"),
    "expand": (lambda t: t.unsqueeze(0).expand(2, 3, 4), "ExpandBackward0"),
    "narrow": (lambda t: t.narrow(1, 1, 2), "SliceBackward0"),
    "select": (lambda t: t.select(1, 2), "SelectBackward0"),
    "slice_step": (lambda t: t[:, ::2], "SliceBackward0"),
    "diagonal": (lambda t: t.diagonal(), "DiagonalBackward0"),
    "diagonal_off": (lambda t: t.diagonal(1), "DiagonalBackward0"),
    "as_strided": (lambda t: t.as_strided((2, 2), (1, 4)), "AsStridedBackward0"),
    "flatten": (lambda t: t.flatten(), "ViewBackward0"),
    "unflatten": (lambda t: t.unflatten(1, (2, 2)), "ViewBackward0"),
    "movedim": (lambda t: t.unsqueeze(0).movedim(0, 2), "PermuteBackward0"),
}


@pytest.mark.parametrize("name", sorted(VIEW_CASES))
def test_view_gradcheck_and_names(name):
    f, node = VIEW_CASES[name]
    x = rand((3, 4))
    assert gradcheck(f, (x,))
    assert f(x).grad_fn.name() == node
    # the view shares memory with its base
    assert f(x)._base is x


@pytest.mark.parametrize("name", ["t", "expand", "select", "diagonal", "as_strided"])
def test_view_gradgradcheck(name):
    f, _ = VIEW_CASES[name]
    assert gradgradcheck(lambda t: f(t) * f(t), (rand((3, 4)),))


def test_unbind_split_chunk_have_one_node_each():
    x = rand((4, 3))
    parts = x.unbind(0)
    assert parts[0].grad_fn.name() == "UnbindBackward0" and parts[0].grad_fn is parts[3].grad_fn
    assert gradcheck(lambda t: tuple(p * (i + 1) for i, p in enumerate(t.unbind(1))), (x,))
    assert x.split(2)[0].grad_fn.name() == "SplitBackward0"
    assert x.split([1, 3])[0].grad_fn.name() == "SplitWithSizesBackward0"
    assert gradcheck(lambda t: t.split([1, 3])[1] * 2, (x,))
    assert gradcheck(lambda t: t.chunk(2, 1)[0], (x,))
    # only one piece used: the others contribute zeros
    x.split(3)[1].backward(ember.ones(1, 3, dtype=ember.float64))
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0, 0]] * 3 + [[1, 1, 1]])


def test_copies_and_conversions():
    x = rand((2, 3))
    y = x.to(ember.float32)
    assert y.grad_fn.name() == "ToCopyBackward0"
    y.backward(ember.ones(2, 3))
    assert x.grad.dtype == ember.float64
    assert x.clone().grad_fn.name() == "CloneBackward0"
    assert x.t().contiguous().grad_fn.name() == "CloneBackward0"
    assert x.contiguous() is x or x.contiguous().grad_fn is None
    assert gradcheck(lambda t: t.t().contiguous() * 2, (rand((2, 3)),))
    assert gradcheck(lambda t: t.to(ember.float64, copy=True) * t, (rand((3,)),))


def test_only_never_floating_ops_are_non_differentiable():
    # The build checks this too (static_assert in derivatives/elementwise.cpp); here it
    # is checked from the table the bindings export.
    assert {o.name for o in unary_ops if not o.differentiable} == {
        o.name for o in unary_ops if o.kind in NEVER_FLOATING_KINDS}
    assert {o.name for o in binary_ops if not o.differentiable} == {
        o.name for o in binary_ops if o.kind in NEVER_FLOATING_KINDS}
    # The differentiable sets PyTorch has for these ops (a row dropped by mistake shows here).
    assert NON_DIFF_UNARY == {"bitwise_not", "isnan", "isinf", "isfinite", "logical_not"}
    assert {"add", "sub", "mul", "div", "pow", "atan2", "maximum", "minimum", "remainder",
            "fmod", "floor_divide"} <= DIFF_BINARY


def test_binary_overload_node_names():
    x = rand((2,))
    y = rand((2,), seed=5)
    cases = {"2 - x": "RsubBackward1", "x - y": "SubBackward0", "2 ** x": "PowBackward2",
             "x % y": "RemainderBackward1", "2.5 % x": "RemainderBackward1",
             "ember.fmod(x, 2)": "FmodBackward0", "ember.fmod(x, y)": "FmodBackward1",
             "x // y": "FloorDivideBackward0", "ember.minimum(x, y)": "MinimumBackward0"}
    for expr, name in cases.items():
        assert eval(expr, {"ember": ember, "x": x, "y": y}).grad_fn.name() == name, expr


def _same(saved, t):
    return saved is not None and ember.equal(saved, t)


def test_saved_tensors_follow_the_table():
    x = rand((3,))
    w = rand((3,), seed=7, requires_grad=False)
    # mul saves self only for other's gradient and other only for self's.
    node = (x * w).grad_fn
    assert node._saved_self is None and _same(node._saved_other, w)
    node = (w * x).grad_fn
    assert _same(node._saved_self, w) and node._saved_other is None
    # div always keeps the divisor; add keeps nothing.
    node = (x / w).grad_fn
    assert _same(node._saved_other, w) and node._saved_self is None
    assert (x + w).grad_fn._saved_values() == [None, None]
    # unary: the result (exp), the input (sin) or nothing (floor, neg).
    e = x.exp()
    assert _same(e.grad_fn._saved_result, e)
    assert _same(x.sin().grad_fn._saved_self, x)
    assert x.floor().grad_fn._saved_values() == [None]
    assert x.neg().grad_fn._saved_values() == [None]


def test_unsaved_input_may_change_in_place():
    # Nothing saved means an in-place write after the op does not break backward.
    for name in ("floor", "neg", "frac"):
        x = rand((3,))
        z = x * 1.0
        y = getattr(z, name)()
        z.add_(1.0)
        y.sum().backward()
        expected = np.zeros(3) if name == "floor" else (-np.ones(3) if name == "neg" else np.ones(3))
        np.testing.assert_array_equal(x.grad.numpy(), expected)
    # ... while a saved one is still checked.
    x = rand((3,))
    z = x * 1.0
    y = z.sin()
    z.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
