"""Regressions for undefined behaviour that the sanitizer build (tools/sanitize.sh)
found or guards against: signed overflow in integer kernels, in stride
computation and in the element address of an empty tensor.

Each test gives PyTorch's answer (or its error); under UBSan (halt_on_error=1)
the old code aborted here.
"""
import numpy as np
import pytest

import ember

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1
INT_DTYPES = [("int8", np.int8), ("int16", np.int16), ("int32", np.int32), ("int64", np.int64)]


def _t(values, dtype="int64", device="cpu"):
    return ember.tensor(values, dtype=getattr(ember, dtype), device=device)


# ---- integer division of the most negative value by -1 -------------------------------

@pytest.mark.parametrize("dtype,np_dtype", INT_DTYPES)
def test_int_min_floor_divide_by_minus_one_wraps(device, dtype, np_dtype):
    lo = int(np.iinfo(np_dtype).min)
    a, b = _t([lo, lo, 7, -7], dtype, device), _t([-1, 1, -1, -1], dtype, device)
    # INT_MIN // -1 overflows and wraps to INT_MIN (two's complement), like PyTorch's result.
    assert (a // b).tolist() == [lo, lo, -7, 7]
    assert ember.floor_divide(a, b).tolist() == [lo, lo, -7, 7]
    assert ember.div(a, b, rounding_mode="floor").tolist() == [lo, lo, -7, 7]
    assert ember.div(a, b, rounding_mode="trunc").tolist() == [lo, lo, -7, 7]
    assert (a % b).tolist() == [0, 0, 0, 0]
    assert ember.remainder(a, b).tolist() == [0, 0, 0, 0]
    assert ember.fmod(a, b).tolist() == [0, 0, 0, 0]


def test_int64_min_div_true_division(device):
    a, b = _t([I64_MIN], device=device), _t([-1], device=device)
    r = a / b
    assert r.dtype == ember.float32
    assert r.tolist() == [float(2**63)]
    # the scalar forms go through the same kernels
    assert (a // -1).tolist() == [I64_MIN]
    assert (a % -1).tolist() == [0]


@pytest.mark.parametrize("dtype,np_dtype", INT_DTYPES)
def test_signed_overflow_wraps(device, dtype, np_dtype):
    info = np.iinfo(np_dtype)
    lo, hi = int(info.min), int(info.max)
    a = _t([lo, hi, lo, hi], dtype, device)
    na = np.array([lo, hi, lo, hi], dtype=np_dtype)
    with np.errstate(over="ignore"):
        assert (-a).tolist() == (-na).tolist()
        assert a.abs().tolist() == np.abs(na).tolist()
        assert (a + a).tolist() == (na + na).tolist()
        assert (a - _t([1, -1, 1, -1], dtype, device)).tolist() == (
            na - np.array([1, -1, 1, -1], dtype=np_dtype)).tolist()
        assert (a * a).tolist() == (na * na).tolist()
        assert a.square().tolist() == (na * na).tolist()
        assert (a ** 3).tolist() == (na ** 3).tolist()


def test_uint8_and_int16_products_do_not_overflow_int(device):
    a = _t([255, 200], "uint8", device)
    assert (a * a).tolist() == [1, 64]          # 65025 % 256, 40000 % 256
    b = _t([-32768, 32767], "int16", device)
    assert (b * b).tolist() == [0, 1]


# ---- contiguous strides past int64 ---------------------------------------------------------

@pytest.mark.parametrize("factory", ["ones", "zeros", "empty", "randn"])
def test_stride_overflow_raises(factory):
    f = getattr(ember, factory)
    with pytest.raises(RuntimeError, match="Stride calculation overflowed"):
        f(0, 2**62, 2**20)
    with pytest.raises(RuntimeError, match="Stride calculation overflowed"):
        f(2**20, 0, 2**62, 4)


def test_stride_overflow_names_the_shape():
    with pytest.raises(RuntimeError, match=r"\[0, 4611686018427387904, 1048576\]"):
        ember.ones(0, 2**62, 2**20)


def test_large_empty_shapes_without_overflow():
    # the stride of dim 0 never multiplies in size(0): no overflow here
    x = ember.zeros(2**62, 0, 4)
    assert tuple(x.shape) == (2**62, 0, 4) and x.numel() == 0
    assert x.stride() == (4, 4, 1)
    assert x.sum().item() == 0
    y = ember.ones(0, 2**62)
    assert y.stride() == (2**62, 1)
    # PyTorch refuses this one too ("Storage size calculation overflowed")
    with pytest.raises(RuntimeError, match="overflow"):
        ember.zeros(2**62, 4, 0)


# ---- the address of an empty tensor at a huge offset ----------------------------------------

def test_empty_tensor_at_max_offset():
    x = ember.ones(3)
    e = x.as_strided((0,), (1,), I64_MAX)
    assert e.storage_offset() == I64_MAX
    assert e.sum().item() == 0.0
    assert e.numel() == 0
    assert e.clone().numel() == 0
    assert (e + 1).numel() == 0
    assert e.tolist() == []
    s = e.sum()
    assert s.dim() == 0 and s.item() == 0.0


def test_nonempty_tensor_at_huge_offset_raises():
    x = ember.ones(3)
    with pytest.raises(RuntimeError):
        x.as_strided((1,), (1,), I64_MAX).sum()
    with pytest.raises(RuntimeError):
        x.as_strided((2,), (2**62,), 0).sum()
