"""The Tensor type's number slots (Note [Operator slots] in csrc/ember/python/ops.cpp):
`a + b` and friends run C functions installed on the type, not pybind11's dispatcher. They
must behave exactly as the bound __add__/__radd__/__iadd__ methods: same results, the same
NotImplemented fallbacks, the same errors, subclasses included."""
import operator

import numpy as np
import pytest

import ember

OPS = [
    ("add", operator.add, operator.iadd),
    ("sub", operator.sub, operator.isub),
    ("mul", operator.mul, operator.imul),
    ("truediv", operator.truediv, operator.itruediv),
    ("floordiv", operator.floordiv, operator.ifloordiv),
    ("mod", operator.mod, operator.imod),
]
BITWISE = [
    ("and", operator.and_, operator.iand),
    ("or", operator.or_, operator.ior),
    ("xor", operator.xor, operator.ixor),
]


@pytest.mark.parametrize("name,op,iop", OPS + BITWISE, ids=[o[0] for o in OPS + BITWISE])
def test_operator_equals_bound_method(name, op, iop, device):
    bitwise = name in ("and", "or", "xor")
    rng = np.random.default_rng(0)
    if bitwise:
        an, bn = rng.integers(0, 50, (3, 4)), rng.integers(1, 50, (4,))
    else:
        an, bn = rng.uniform(1, 3, (3, 4)), rng.uniform(1, 3, (4,))
    a, b = ember.tensor(an, device=device), ember.tensor(bn, device=device)
    fwd, refl = getattr(ember.Tensor, f"__{name}__"), getattr(ember.Tensor, f"__r{name}__")
    # tensor op tensor (broadcast), tensor op number, number op tensor (reflected)
    np.testing.assert_array_equal(op(a, b).cpu().numpy(), fwd(a, b).cpu().numpy())
    np.testing.assert_allclose(op(a, b).cpu().numpy(), op(an, bn))
    np.testing.assert_allclose(op(a, 3).cpu().numpy(), op(an, 3))
    np.testing.assert_allclose(op(3, a).cpu().numpy(), op(3, an))
    np.testing.assert_array_equal(op(3, a).cpu().numpy(), refl(a, 3).cpu().numpy())
    # in place: the same object, the same storage
    c = a.clone()
    p, cid = c.data_ptr(), id(c)
    c2 = iop(c, b)
    assert id(c2) == cid and c.data_ptr() == p
    np.testing.assert_allclose(c.cpu().numpy(), op(an, bn))


def test_number_over_tensor_records_reciprocal():
    x = ember.tensor([2.0, 4.0], requires_grad=True)
    y = 1 / x
    assert type(y.grad_fn).__name__ == "MulBackward0"
    assert type(y.grad_fn.next_functions[0][0]).__name__ == "ReciprocalBackward0"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [-0.25, -0.0625])
    # tensor / tensor keeps DivBackward0
    assert type((x / x.detach()).grad_fn).__name__ == "DivBackward0"


def test_ndarray_and_numpy_scalar_operands():
    a = ember.tensor([1.0, 2.0])
    r = a + np.array([10.0, 20.0])
    assert isinstance(r, ember.Tensor)
    np.testing.assert_array_equal(r.numpy(), [11.0, 22.0])
    np.testing.assert_array_equal((a * np.float64(3)).numpy(), [3.0, 6.0])
    np.testing.assert_array_equal((np.float32(3) - a).numpy(), [2.0, 1.0])


def test_unsupported_operands_raise_pythons_type_error():
    a = ember.ones(2)
    with pytest.raises(TypeError, match="unsupported operand"):
        a + "x"
    with pytest.raises(TypeError, match="unsupported operand"):
        None + a
    with pytest.raises(TypeError):
        a += "x"
    with pytest.raises(TypeError):
        a & 1.5j


def test_errors_are_translated(device):
    a, b = ember.ones(2, device=device), ember.ones(3, device=device)
    with pytest.raises(RuntimeError, match=r"size of tensor a \(2\) must match"):
        a + b
    i = ember.tensor([1, 2], device=device)
    with pytest.raises(RuntimeError, match="can't be cast"):
        i /= 2
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        i // 0
    with pytest.raises(RuntimeError, match="bitwise"):
        ember.ones(2) & 1
    # the interpreter is intact afterwards
    np.testing.assert_array_equal((a + a).cpu().numpy(), [2.0, 2.0])


def test_leaf_requiring_grad_in_place_error():
    w = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w += 1


def test_subclasses_inherit_and_override():
    p = ember.nn.Parameter(ember.ones(2))
    r = p * 2
    assert type(r) is ember.Tensor and r.requires_grad
    assert type(r.grad_fn).__name__ == "MulBackward0"

    class Logged(ember.Tensor):
        calls = []

        def __add__(self, other):
            Logged.calls.append("add")
            return super().__add__(other)

        def __radd__(self, other):
            Logged.calls.append("radd")
            return super().__radd__(other)

    t = Logged(ember.ones(2))
    np.testing.assert_array_equal((t + 1).numpy(), [2.0, 2.0])
    np.testing.assert_array_equal((1 + t).numpy(), [2.0, 2.0])
    assert Logged.calls == ["add", "radd"]
    # tensor + subclass instance: Python tries the subclass's reflected method first
    Logged.calls.clear()
    np.testing.assert_array_equal((ember.ones(2) + t).numpy(), [2.0, 2.0])
    assert Logged.calls == ["radd"]
    # a subclass that defines nothing keeps the C slot
    assert type(p).__add__ is ember.Tensor.__add__
