"""Regressions found by differential testing against PyTorch (tools/difftest_numerics.py):
reductions, linalg, factories, conversions, printing, save/load. Expected values are NumPy's
or PyTorch's documented results, hard-coded."""

import numpy as np
import pytest

import ember

# ---- reductions on empty inputs: IndexError, like PyTorch's zero_numel_check_dims -------------

@pytest.mark.parametrize("op", ["max", "min", "amax", "amin", "argmax", "argmin", "median"])
@pytest.mark.parametrize("shape,dim,shown", [((0,), 0, 0), ((0,), -1, 0), ((3, 0), 1, 1),
                                             ((2, 0, 3), -2, 1)])
def test_empty_reduction_dim_is_index_error(op, shape, dim, shown):
    x = ember.zeros(shape)
    with pytest.raises(IndexError, match=rf"^{op}\(\): Expected reduction dim {shown} to have "
                                         r"non-zero size\.$"):
        getattr(x, op)(dim)
    with pytest.raises(IndexError, match="non-zero size"):
        getattr(ember, op)(x, dim, keepdim=True)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_empty_arg_reduction_without_dim_is_index_error(op):
    with pytest.raises(IndexError, match=rf"^{op}\(\): Expected reduction dim to be specified for "
                                         r"input.numel\(\) == 0\.$"):
        getattr(ember.zeros(2, 0), op)()
    # max()/min() without a dim stay RuntimeError, as in PyTorch
    with pytest.raises(RuntimeError, match="Specify the reduction dim"):
        ember.zeros(2, 0).max()


def test_empty_reduction_over_nonempty_dim_still_works():
    x = ember.zeros(0, 3)
    assert x.amax(1).shape == (0,)
    v, i = x.max(1)
    assert v.shape == (0,) and i.shape == (0,) and i.dtype == ember.int64
    assert x.argmin(1, keepdim=True).shape == (0, 1)


# ---- tensor(): data conversion like PyTorch's store_scalar --------------------------------------

@pytest.mark.parametrize("dtype", [ember.float32, ember.float16, ember.bfloat16])
def test_tensor_floating_data_overflows_to_inf(dtype):
    t = ember.tensor([3.4e39, -1e300, 1.5], dtype=dtype)
    np.testing.assert_array_equal(t.float().numpy(), np.array([np.inf, -np.inf, 1.5], np.float32))
    assert ember.tensor([1e39]).item() == float("inf")  # default dtype float32
    assert ember.tensor(1e5, dtype=ember.float16).item() == float("inf")


def test_tensor_integer_data_is_still_range_checked():
    with pytest.raises(RuntimeError, match="cannot be converted to type int8 without overflow"):
        ember.tensor([300], dtype=ember.int8)
    with pytest.raises(RuntimeError, match="cannot be converted to type int32 without overflow"):
        ember.tensor([1e300], dtype=ember.int32)
    # fill values keep the checked conversion for every dtype
    with pytest.raises(RuntimeError, match="without overflow"):
        ember.full((2,), 1e39)


def test_tensor_python_ints_beyond_int64_into_floating_result():
    t = ember.tensor([2**63, 2**64, -(2**70)], dtype=ember.float64)
    np.testing.assert_array_equal(t.numpy(), np.array([2.0**63, 2.0**64, -(2.0**70)]))
    assert ember.tensor([1.5, 2**64]).dtype == ember.float32
    assert ember.tensor([2**64], dtype=ember.bool).item() is True
    with pytest.raises(RuntimeError, match="Overflow when unpacking long"):
        ember.tensor([2**63])  # inferred int64
    with pytest.raises(RuntimeError, match="Overflow when unpacking long"):
        ember.tensor([2**63], dtype=ember.int64)
    with pytest.raises(OverflowError):
        ember.tensor([2**1100], dtype=ember.float64)


@pytest.mark.parametrize("data,name", [(None, "NoneType"), ([None], "NoneType"),
                                       ([1, None], "NoneType"), ({1: 2}, "dict"),
                                       ([object()], "object")])
def test_tensor_cannot_infer_dtype_is_runtime_error(data, name):
    with pytest.raises(RuntimeError, match=f"^Could not infer dtype of {name}$"):
        ember.tensor(data)


def test_tensor_bad_data_with_dtype_and_strings_are_type_errors():
    with pytest.raises(TypeError, match="invalid data type 'NoneType'"):
        ember.tensor([None], dtype=ember.float32)
    with pytest.raises(TypeError, match=r"new\(\): invalid data type 'str'"):
        ember.tensor([1, "a"])


def test_tensor_zero_dim_ndarray_among_numbers():
    t = ember.tensor([np.array(1.5), 2])
    assert t.dtype == ember.float64  # the ndarray's dtype takes part in inference, as NumPy
    np.testing.assert_array_equal(t.numpy(), [1.5, 2.0])
    t = ember.tensor([[1, np.array(7, np.int16)]], dtype=ember.int32)
    np.testing.assert_array_equal(t.numpy(), np.array([[1, 7]], np.int32))


# ---- arange: PyTorch computes narrow integer sizes from the arguments as doubles -------------

@pytest.mark.parametrize("args,dtype,expected", [
    ((2.5,), ember.int64, [0, 1]),
    ((2.5,), ember.int32, [0, 1, 2]),
    ((0.5,), ember.int64, []),
    ((0.5,), ember.uint8, [0]),
    ((10, 0, -1.5), ember.int64, [10, 9, 8, 7, 6, 5, 4, 3, 2, 1]),
    ((10, 0, -1.5), ember.int16, [10, 9, 8, 7, 6, 5, 4]),
    ((1, 4), ember.int8, [1, 2, 3]),
])
def test_arange_integer_sizes(args, dtype, expected):
    t = ember.arange(*args, dtype=dtype)
    assert t.dtype == dtype
    np.testing.assert_array_equal(t.numpy(), np.array(expected))


# ---- linspace/logspace: start/end go through the checked conversion ---------------------------

@pytest.mark.parametrize("op", ["linspace", "logspace"])
@pytest.mark.parametrize("start,end,dtype", [(2**40, 2**40 + 3, ember.int32), (0, 300, ember.int8),
                                              (0, 1e39, ember.float32),
                                              (2**40, 2**40 + 3, ember.float16)])
def test_spaced_refuses_unrepresentable_bounds(op, start, end, dtype):
    with pytest.raises(RuntimeError, match=f"cannot be converted to type {dtype_name(dtype)} "
                                           "without overflow"):
        getattr(ember, op)(start, end, 4, dtype=dtype)


def dtype_name(dt):
    return str(dt).split(".")[-1]


def test_spaced_accepts_representable_bounds():
    np.testing.assert_array_equal(ember.linspace(-1, 1, 3, dtype=ember.int8).numpy(), [-1, 0, 1])
    np.testing.assert_array_equal(ember.linspace(0, 255, 2, dtype=ember.uint8).numpy(), [0, 255])
    t = ember.logspace(0, 2, 3, dtype=ember.int32)
    np.testing.assert_array_equal(t.numpy(), [1, 10, 100])


# ---- save/load --------------------------------------------------------------------------------

def _roundtrip(obj):
    import io
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return ember.load(buf)


def test_load_keeps_requires_grad():
    a = ember.ones(2, requires_grad=True)
    b = _roundtrip({"w": a, "n": ember.ones(2), "y": a * 2})
    assert b["w"].requires_grad and b["w"].is_leaf and b["w"].grad_fn is None
    assert not b["n"].requires_grad
    assert b["y"].requires_grad and b["y"].is_leaf  # a non-leaf loads as a leaf, as in torch
    np.testing.assert_array_equal(b["y"].detach().numpy(), [2.0, 2.0])
    b["w"].sum().backward()
    np.testing.assert_array_equal(b["w"].grad.numpy(), [1.0, 1.0])


def test_load_one_saved_tensor_is_one_tensor():
    a = ember.arange(3.0)
    b = _roundtrip({"x": a, "y": [a, a.clone()], "z": (a,)})
    assert b["x"] is b["y"][0] and b["x"] is b["z"][0]
    assert b["y"][1] is not b["x"]
    b["x"][0] = 7.0
    assert b["y"][0][0].item() == 7.0 and b["y"][1][0].item() == 0.0


def test_norm_unknown_string_p_is_runtime_error():
    with pytest.raises(RuntimeError, match="^only valid string values are 'fro' and 'nuc', found bad$"):
        ember.ones(3).norm(p="bad")
    with pytest.raises(RuntimeError, match="found inf"):
        ember.norm(ember.ones(3), "inf")
    assert ember.ones(4).norm(p="fro").item() == 2.0
