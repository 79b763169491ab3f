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
