"""Regressions found by differential testing of the tensor core against PyTorch
(tools/difftest_core.py). Each test failed before its fix; expected values are
NumPy's or written out."""
import numpy as np
import pytest

import ember


# ---- elementwise ------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod"])
@pytest.mark.parametrize("dtype", [ember.int8, ember.int64, ember.uint8])
def test_integer_division_empty_result_ignores_zero_divisor(op, dtype):
    # the broadcast result is empty, so the zero divisor is never read
    a = ember.ones(0, 3, dtype=dtype)
    b = ember.zeros(1, 3, dtype=dtype)
    r = getattr(ember, op)(a, b)
    assert r.shape == (0, 3) and r.dtype == dtype
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        getattr(ember, op)(ember.ones(2, 3, dtype=dtype), b)


@pytest.mark.parametrize("lo, hi, expected, dtype", [
    (0, 1, [1, 0], ember.int64),
    (None, 1, [1, 0], ember.int64),
    (0.5, None, [1.0, 0.5], ember.float32),
    (2, -2, [-2, -2], ember.int64),
])
def test_clamp_bool_promotes_with_number_bounds(lo, hi, expected, dtype):
    r = ember.clamp(ember.tensor([True, False]), lo, hi)
    assert r.dtype == dtype
    np.testing.assert_array_equal(r.numpy(), np.array(expected))


def test_clamp_bool_tensor_bounds_and_bool_number_bounds():
    r = ember.clamp(ember.tensor([True, False]), ember.tensor([False, True]))
    assert r.dtype == ember.bool and r.tolist() == [True, True]
    with pytest.raises(RuntimeError, match="\"clamp\" not implemented for 'bool'"):
        ember.clamp(ember.tensor([True, False]), False, True)


# ---- views ------------------------------------------------------------------------------
def test_movedim_on_0d_tensor_is_identity():
    t = ember.tensor(3.0)
    for s, d in ((0, 0), (0, -1), (-1, 0), ((0,), (-1,))):
        r = t.movedim(s, d)
        assert r.shape == () and r.item() == 3.0
    with pytest.raises(IndexError, match=r"range of \[-1, 0\], but got 1"):
        t.movedim(1, 0)


@pytest.mark.parametrize("shape", [(), (3,)])
def test_diagonal_checks_dims_first(shape):
    t = ember.ones(*shape)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-1, 0\], but got 1\)"):
        t.diagonal()
    with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical 0, 0"):
        t.diagonal(0, 0, -1)


def test_unflatten_0d_is_index_error():
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        ember.tensor(1.0).unflatten(0, (1,))


def test_narrow_negative_start_on_empty_dim():
    # a size-0 dim wraps like a size-1 dim: start -1 becomes 0, then the length check fails
    with pytest.raises(RuntimeError, match=r"start \(0\) \+ length \(1\) exceeds dimension size \(0\)"):
        ember.ones(0, 2).narrow(0, -1, 1)
    assert ember.ones(0, 2).narrow(0, -1, 0).shape == (0, 2)
    with pytest.raises(IndexError, match=r"start out of range .* but got -4\)"):
        ember.ones(3).narrow(0, -4, 1)
