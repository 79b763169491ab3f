"""Autograd bugs found by differential testing against PyTorch (tools/difftest_autograd.py).

Expected values are analytic (or hand-derived); nothing here imports torch.
"""
import numpy as np
import pytest

import ember

f64 = ember.float64


def leaf(v):
    return ember.tensor(v, dtype=f64, requires_grad=True)


def arr(t):
    return t.detach().numpy()


# --- as_strided backward with a self-overlapping view --------------------------------

def test_as_strided_overlapping_view_accumulates():
    # y[i, j] = x[i + j]: each x[k] collects every g[i, j] with i + j == k.
    x = leaf([1.0, 2.0, 3.0, 4.0])
    y = (x * 1).as_strided((3, 2), (1, 1))
    g = np.arange(1.0, 7.0).reshape(3, 2)
    y.backward(ember.tensor(g, dtype=f64))
    np.testing.assert_array_equal(arr(x.grad), [1.0, 5.0, 9.0, 6.0])
    assert y.grad_fn.name() == "AsStridedBackward0"


def test_as_strided_overlapping_view_of_leaf_and_double_backward():
    x = leaf([1.0, 2.0, 3.0, 4.0])
    y = x.as_strided((3, 2), (1, 1))
    (g,) = ember.autograd.grad((y * y).sum(), x, create_graph=True)
    # d/dx_k sum (x_{i+j})^2 = 2 x_k * multiplicity(k), multiplicities [1, 2, 2, 1]
    np.testing.assert_array_equal(arr(g), [2.0, 8.0, 12.0, 8.0])
    (h,) = ember.autograd.grad(g.sum(), x)
    np.testing.assert_array_equal(arr(h), [2.0, 4.0, 4.0, 2.0])


def test_as_strided_stride_zero_of_expanded_input():
    # The input is itself expanded (reads one element three times): its backward
    # sums the readers again, so as_strided must not count the element thrice.
    x = leaf([2.0])
    y = (x * 1).expand(3).as_strided((2, 2), (0, 0))
    y.backward(ember.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=f64))
    np.testing.assert_array_equal(arr(x.grad), [10.0])


def test_regenerated_view_grad_fn_of_expanded_view_accumulates():
    # v is an expanded (stride-0) view of y; after y changes in place, v's
    # grad_fn is regenerated as AsStridedBackward0, which must sum the three readers.
    x = leaf([2.0])
    y = x * 1
    v = y.expand(3)
    y.mul_(2)
    (v * ember.tensor([1.0, 2.0, 3.0], dtype=f64)).sum().backward()
    assert v.grad_fn.name() == "AsStridedBackward0"
    np.testing.assert_array_equal(arr(x.grad), [12.0])


# --- in-place composites (clamp_, lerp_, nan_to_num_, round_) under autograd ---------

@pytest.mark.parametrize("op, name, expected", [
    (lambda y: y.clamp_(-1.0, 1.0), "ClampBackward1", [[0.0, 0.0], [0.0, 0.0]]),
    (lambda y: y.clamp_(min=-1.0), "ClampBackward1", [[4.5, 9.0], [13.5, 18.0]]),
    (lambda y: y.nan_to_num_(), None, [[4.5, 9.0], [13.5, 18.0]]),
    (lambda y: y.round_(decimals=1), None, [[0.0, 0.0], [0.0, 0.0]]),
    (lambda y: y.lerp_(ember.zeros(2, 2, dtype=f64), 0.5), None, [[1.125, 2.25], [3.375, 4.5]]),
])
def test_inplace_composite_saves_a_clone_not_self(op, name, expected):
    # They wrote f(y) back with copy_, so f's saved input was y itself, now
    # overwritten: backward raised "modified by an inplace operation".
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    y = x * 1.5
    r = op(y)
    assert r is y
    if name:
        assert y.grad_fn.name() == name
    (y * y).sum().backward()
    np.testing.assert_allclose(arr(x.grad), expected)


def test_clamp_inplace_tensor_bound_gets_grad():
    x = leaf([1.0, -2.0, 0.5])
    lo = leaf([0.0, 0.0, 0.0])
    y = x * 1
    y.clamp_(min=lo)
    y.backward(ember.tensor([1.0, 2.0, 3.0], dtype=f64))
    np.testing.assert_array_equal(arr(x.grad), [1.0, 0.0, 3.0])
    np.testing.assert_array_equal(arr(lo.grad), [0.0, 2.0, 0.0])


def test_clamp_inplace_on_leaf_still_raises():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.clamp_(0.0, 1.0)


# --- binary nodes save only what their needed gradients read -------------------------

def test_mul_by_number_does_not_save_self():
    x = leaf([1.0, 2.0])
    y = x * 1
    z = y * 2
    y.add_(1)  # z's gradient does not read y
    z.sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [2.0, 2.0])


def test_mul_by_constant_tensor_saves_only_the_constant():
    x = leaf([1.0, 2.0])
    c = ember.tensor([3.0, 4.0], dtype=f64)
    y = x * 1
    z = y * c
    y.mul_(5)
    z.sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [3.0, 4.0])
    # the saved constant is still checked
    y = x * 1
    z = c * y
    c.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_div_by_constant_and_remainder_by_constant_do_not_save_self():
    x = leaf([1.0, 5.0])
    c = ember.tensor([2.0, 3.0], dtype=f64)
    y = x * 1
    z = y / c + ember.remainder(y, c) + ember.fmod(y, c)
    y.sub_(1)
    z.sum().backward()
    np.testing.assert_allclose(arr(x.grad), [2.5, 2 + 1 / 3])


def test_div_by_tensor_requiring_grad_still_checks_self():
    x = leaf([1.0, 5.0])
    w = leaf([2.0, 3.0])
    y = x * 1
    z = y / w
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


# --- node names of binary overloads ---------------------------------------------------

def test_binary_overload_node_names():
    x = leaf([1.0, 2.0])
    t = ember.tensor([3.0, 3.0], dtype=f64)
    assert (2.0 ** x).grad_fn.name() == "PowBackward2"
    assert ember.pow(-2.0, x).grad_fn.name() == "PowBackward2"
    assert (x ** t).grad_fn.name() == "PowBackward1"
    assert (x ** 2).grad_fn.name() == "PowBackward0"
    assert ember.remainder(x, t).grad_fn.name() == "RemainderBackward1"
    assert ember.remainder(x, 3.0).grad_fn.name() == "RemainderBackward0"
    assert ember.fmod(t, x).grad_fn.name() == "FmodBackward1"
    assert ember.fmod(x, 3.0).grad_fn.name() == "FmodBackward0"


# --- maximum/minimum with NaN, pow with exponent 0 ------------------------------------

def test_maximum_minimum_nan_passes_gradient_to_both_sides():
    # PyTorch masks out only the strictly smaller (larger) side; a NaN compares
    # false both ways, so both inputs get the gradient.
    for fn in (ember.maximum, ember.minimum):
        x = leaf([1.0, float("nan"), 2.0, 2.0])
        o = leaf([1.5, 1.5, 2.0, 1.0])
        fn(x, o).backward(ember.tensor([1.0, 2.0, 4.0, 8.0], dtype=f64))
        big = fn is ember.maximum
        np.testing.assert_array_equal(arr(x.grad), [0.0 if big else 1.0, 2.0, 2.0, 8.0 if big else 0.0])
        np.testing.assert_array_equal(arr(o.grad), [1.0 if big else 0.0, 2.0, 2.0, 0.0 if big else 8.0])


@pytest.mark.parametrize("exponent", [0.0, "tensor"])
def test_pow_exponent_zero_second_derivative_is_zero_not_nan(exponent):
    x = leaf([0.0, 1.0, 2.0])
    e = ember.zeros(3, dtype=f64) if exponent == "tensor" else exponent
    (g,) = ember.autograd.grad(ember.pow(x, e).sum(), x, create_graph=True)
    np.testing.assert_array_equal(arr(g), [0.0, 0.0, 0.0])
    if g.requires_grad:
        (h,) = ember.autograd.grad(g.sum(), x, allow_unused=True)
        assert h is None or np.array_equal(arr(h), [0.0, 0.0, 0.0])


def test_pow_second_derivative_at_zero_base():
    x = leaf([0.0, 2.0])
    (g,) = ember.autograd.grad((x ** 3).sum(), x, create_graph=True)
    (h,) = ember.autograd.grad(g.sum(), x)
    np.testing.assert_array_equal(arr(h), [0.0, 12.0])
    (g,) = ember.autograd.grad((x ** 1).sum(), x, create_graph=True)
    (h,) = ember.autograd.grad(g.sum(), x, allow_unused=True)
    assert h is None or np.array_equal(arr(h), [0.0, 0.0])


# --- zeroed gradient positions stay zero under a NaN/inf incoming gradient -------------

@pytest.mark.parametrize("fn, zero", [
    (lambda x: x.relu(), [True, False, False, True]),
    (lambda x: ember.maximum(x, ember.zeros(4, dtype=f64)), [True, False, False, True]),
    (lambda x: ember.minimum(x, ember.zeros(4, dtype=f64)), [False, True, True, False]),
])
def test_masked_gradient_does_not_leak_nan(fn, zero):
    # They multiplied the gradient by a 0/1 mask, so 0 * nan = nan reached the
    # positions that get no gradient (PyTorch selects with where / threshold_backward).
    for bad in (float("nan"), float("inf")):
        x = leaf([-1.0, 2.0, 0.25, -0.25])
        y = fn(x)
        (g,) = ember.autograd.grad(y, x, ember.full((4,), bad, dtype=f64))
        got = arr(g)
        np.testing.assert_array_equal(got[zero], 0.0)
        np.testing.assert_array_equal(got[~np.array(zero)], bad)


def test_relu_passes_gradient_at_nan_input():
    x = leaf([float("nan"), -1.0, 0.0, 3.0])
    x.relu().backward(ember.ones(4, dtype=f64))
    np.testing.assert_array_equal(arr(x.grad), [1.0, 0.0, 0.0, 1.0])


def test_maximum_hessian_vector_product_ignores_nan_from_losing_branch():
    # std of two equal values has a NaN gradient; maximum picks the other side,
    # so the Hessian-vector product through it must stay finite.
    a = leaf([0.5, 0.5])
    b = leaf(1.0)
    y = ember.maximum(a.std(), b) ** 2
    (ga, gb) = ember.autograd.grad(y, [a, b], create_graph=True)
    np.testing.assert_array_equal(arr(ga), [0.0, 0.0])
    (h,) = ember.autograd.grad(gb, b)
    assert float(h) == 2.0


def test_number_minus_tensor_is_rsub():
    x = leaf([1.0, 2.0])
    assert (1 - x).grad_fn.name() == "RsubBackward1"
    assert (x - 1).grad_fn.name() == "SubBackward0"
    (1 - x).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [-1.0, -1.0])


def test_relu_gradient_under_create_graph_is_differentiable():
    # PyTorch's relu gradient (threshold_backward) depends on the output, so a
    # second derivative is 0; ember's did not require grad and grad() raised.
    x = leaf([-1.0, 2.0, 0.0])
    (g,) = ember.autograd.grad(x.relu().sum(), x, create_graph=True)
    assert g.requires_grad
    np.testing.assert_array_equal(arr(g), [0.0, 1.0, 0.0])
    (h,) = ember.autograd.grad(g.sum(), x)
    np.testing.assert_array_equal(arr(h), [0.0, 0.0, 0.0])


def test_inference_tensor_cannot_be_saved_for_backward():
    with ember.inference_mode():
        t = ember.ones(2, dtype=f64)
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        x * t
    # not saved (add needs no operand): fine, as PyTorch
    (x + t).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [1.0, 1.0])
    # a clone is a normal tensor
    (x * t.clone()).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [2.0, 2.0])


def test_fill_with_a_differentiable_0d_tensor_passes_its_gradient(device):
    # Tensor.fill_(value) with a 0-d value that requires grad: PyTorch's fill_.Tensor gives the
    # value grad.sum() (and the overwritten tensor none); ember's binding turned the value into a
    # Scalar and the gradient was silently lost (found by the registry's gradcheck of fill_).
    v = ember.tensor(1.5, dtype=f64, device=device, requires_grad=True)
    base = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=f64, device=device, requires_grad=True)
    y = base.clone()
    y.fill_(v)
    np.testing.assert_array_equal(arr(y), np.full((2, 3), 1.5))
    (y * ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=f64, device=device)).sum().backward()
    np.testing.assert_array_equal(arr(v.grad), 21.0)
    np.testing.assert_array_equal(arr(base.grad), np.zeros((2, 3)))
    # a value without grad, or under no_grad, still fills as before
    w = ember.zeros(2, 3, dtype=f64, device=device)
    w.fill_(ember.tensor(2.0, dtype=f64, device=device))
    np.testing.assert_array_equal(arr(w), np.full((2, 3), 2.0))
    with ember.no_grad():
        w.fill_(v)
    np.testing.assert_array_equal(arr(w), np.full((2, 3), 1.5))
