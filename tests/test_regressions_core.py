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


# ---- div(rounding_mode=) ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", [ember.int8, ember.int32, ember.int64, ember.uint8])
def test_div_rounding_mode_integers_stay_integers(dtype):
    a = np.array([7, -7, 7, -7, 0, 9, -9], dtype=np.int64)
    b = np.array([2, 2, -2, -2, 3, 4, 4], dtype=np.int64)
    if dtype == ember.uint8:
        a, b = np.abs(a), np.abs(b)
    x, y = ember.tensor(a.tolist(), dtype=dtype), ember.tensor(b.tolist(), dtype=dtype)
    t = ember.div(x, y, rounding_mode="trunc")
    f = ember.div(x, y, rounding_mode="floor")
    assert t.dtype == dtype and f.dtype == dtype
    np.testing.assert_array_equal(t.numpy(), np.trunc(a / b).astype(np.int64))
    np.testing.assert_array_equal(f.numpy(), np.floor_divide(a, b))
    assert ember.div(x, y).dtype == ember.float32  # no rounding_mode: true division
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ember.div(x, ember.zeros_like(y), rounding_mode="trunc")


@pytest.mark.parametrize("dtype", [ember.float16, ember.float32, ember.float64])
def test_div_rounding_mode_floats(dtype):
    a = np.array([7.5, -7.5, 7.0, -7.0, 0.0, 1.0, -1.0, np.inf])
    b = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 0.0, 0.0, 2.0])
    x, y = ember.tensor(a, dtype=dtype), ember.tensor(b, dtype=dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(ember.div(x, y, rounding_mode="trunc").double().numpy(), np.trunc(a / b))
        np.testing.assert_array_equal(ember.div(x, y, rounding_mode="floor").double().numpy(), np.floor_divide(a, b))
    assert ember.div(x, 2, rounding_mode="floor").dtype == dtype


def test_div_rounding_mode_method_inplace_out_and_errors():
    x = ember.tensor([7, -7])
    np.testing.assert_array_equal(x.div(2, rounding_mode="trunc").numpy(), [3, -3])
    assert x.divide(2, rounding_mode="floor").tolist() == [3, -4]
    y = x.clone()
    assert y.div_(2, rounding_mode="floor") is y and y.tolist() == [3, -4]
    out = ember.empty(2, dtype=ember.float64)
    ember.div(x, 2, rounding_mode="trunc", out=out)
    assert out.tolist() == [3.0, -3.0]
    with pytest.raises(RuntimeError, match="rounding_mode to be one of None, 'trunc', or 'floor' but found 'bad'"):
        ember.div(x, 2, rounding_mode="bad")
    with pytest.raises(RuntimeError, match="result type float32 can't be cast to the desired output type int64"):
        x.clone().div_(2)
    with pytest.raises(TypeError, match="rounding_mode"):
        ember.div(x, 2, rounding_mode=1)


# ---- in-place casting, operators, fill_ --------------------------------------------------
def test_clamp_inplace_refuses_float_result_into_integers():
    x = ember.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="result type float32 can't be cast to the desired output type int64"):
        x.clamp_(0.5, 1.5)
    assert x.tolist() == [1, 2, 3]
    assert x.clamp_(2, 2).tolist() == [2, 2, 2]


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16, ember.float32, ember.float64])
def test_invert_float_is_type_error(dtype):
    with pytest.raises(TypeError, match=r"~ \(operator.invert\) is only implemented on integer and Boolean-type tensors"):
        ~ember.ones(2, dtype=dtype)


def test_unary_plus_on_bool_raises():
    with pytest.raises(RuntimeError, match=r"The `\+` operator, on a bool tensor is not supported"):
        +ember.tensor([True])
    t = ember.tensor([1, 2])
    assert (+t).tolist() == [1, 2]


def test_fill_value_tensor_must_be_0d():
    with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor but got tensor with 1 dimensions"):
        ember.zeros(2).fill_(ember.tensor([1.0]))
    assert ember.zeros(2).fill_(ember.tensor(2.5)).tolist() == [2.5, 2.5]


@pytest.mark.parametrize("dtype, value", [
    (ember.uint8, 256), (ember.uint8, -256), (ember.uint8, -1.0), (ember.uint8, 255.5),
    (ember.int8, 128), (ember.int8, -129), (ember.int8, 127.9), (ember.int8, float("nan")),
    (ember.int64, float("inf")), (ember.int64, 9.3e18), (ember.int16, 40000),
    (ember.float16, 65520.0), (ember.float16, 2**40), (ember.bfloat16, 1e39), (ember.float32, 1e39),
])
def test_fill_and_full_refuse_overflowing_values(dtype, value):
    with pytest.raises(RuntimeError, match="cannot be converted to type .* without overflow"):
        ember.zeros(2, dtype=dtype).fill_(value)
    with pytest.raises(RuntimeError, match="cannot be converted to type .* without overflow"):
        ember.full((2,), value, dtype=dtype)


@pytest.mark.parametrize("dtype, value, expected", [
    (ember.uint8, -1, 255), (ember.uint8, -255, 1), (ember.int8, -128, -128), (ember.int64, 2**63 - 1, 2**63 - 1),
    (ember.float16, 65504.0, 65504.0), (ember.float16, float("inf"), float("inf")), (ember.bool, 2.5, True),
    (ember.float64, 1e308, 1e308),
])
def test_fill_accepts_representable_values(dtype, value, expected):
    assert ember.zeros(2, dtype=dtype).fill_(value).tolist() == [expected, expected]
    assert np.isnan(ember.zeros(1, dtype=ember.float16).fill_(float("nan")).item())
