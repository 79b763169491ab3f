"""Factories (tensor, zeros/ones/empty/full, *_like, new_*, arange, linspace,
logspace, eye) and the dtype conversion methods, against NumPy."""
import warnings

import numpy as np
import pytest

import ember

ALL_DTYPES = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64,
              ember.float16, ember.bfloat16, ember.float32, ember.float64]
NP = {ember.bool: np.bool_, ember.uint8: np.uint8, ember.int8: np.int8, ember.int16: np.int16,
      ember.int32: np.int32, ember.int64: np.int64, ember.float16: np.float16,
      ember.float32: np.float32, ember.float64: np.float64}


def to_np(t):
    if t.dtype == ember.bfloat16:
        t = t.float()
    return t.cpu().numpy()


# ---- tensor(data) ----------------------------------------------------------------------

@pytest.mark.parametrize("data,dtype,shape", [
    ([1, 2, 3], ember.int64, (3,)),
    ([1.0, 2, 3], ember.float32, (3,)),
    ([True, False], ember.bool, (2,)),
    ([True, 2], ember.int64, (2,)),
    ([[1, 2], [3, 4.5]], ember.float32, (2, 2)),
    ((1, 2), ember.int64, (2,)),
    ([], ember.float32, (0,)),
    ([[], []], ember.float32, (2, 0)),
    (3, ember.int64, ()),
    (2.5, ember.float32, ()),
    (True, ember.bool, ()),
    ([[[1], [2]], [[3], [4]]], ember.int64, (2, 2, 1)),
    (range(4), ember.int64, (4,)),
])
def test_tensor_infers_dtype_and_shape(data, dtype, shape):
    t = ember.tensor(data)
    assert t.dtype == dtype
    assert tuple(t.shape) == shape
    expected = np.array(data, dtype=NP[dtype]) if shape != (0,) else np.zeros(0, np.float32)
    np.testing.assert_array_equal(to_np(t), expected.reshape(shape))


def test_tensor_default_dtype_follows_set_default_dtype():
    old = ember.get_default_dtype()
    try:
        ember.set_default_dtype(ember.float64)
        assert ember.tensor([1.5]).dtype == ember.float64
        assert ember.tensor([1]).dtype == ember.int64
        assert ember.arange(0.0, 1.0, 0.5).dtype == ember.float64
        assert ember.zeros(2).dtype == ember.float64
    finally:
        ember.set_default_dtype(old)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_tensor_explicit_dtype(dtype):
    t = ember.tensor([[0, 1], [1, 0]], dtype=dtype)
    assert t.dtype == dtype
    np.testing.assert_array_equal(to_np(t), np.array([[0, 1], [1, 0]]))
    expect = np.array([1.75, -2.5]).astype(np.float64)
    if dtype == ember.bool:
        expect = np.array([True, True])
    elif dtype == ember.uint8:
        with pytest.raises(RuntimeError, match="cannot be converted to type uint8 without overflow"):
            ember.tensor([1.75, -2.5], dtype=dtype)
        np.testing.assert_array_equal(ember.tensor([-1, 255], dtype=dtype).numpy(), [255, 255])
        return
    elif not dtype.is_floating_point:
        expect = np.trunc(expect)
    f = ember.tensor([1.75, -2.5], dtype=dtype)
    if expect is not None:
        np.testing.assert_array_equal(to_np(f).astype(np.float64), expect.astype(np.float64))


def test_tensor_numpy_inputs_copy_and_keep_dtype():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = ember.tensor(a)
    assert t.dtype == ember.int32
    a[0, 0] = 100
    assert t[0, 0].item() == 0 if hasattr(t, "__getitem__") else True
    np.testing.assert_array_equal(t.numpy(), np.arange(6).reshape(2, 3))
    # non-contiguous / negative strides / big-endian arrays are copied too
    b = np.arange(10.0)[::-2]
    np.testing.assert_array_equal(ember.tensor(b).numpy(), b)
    c = np.arange(4, dtype=">i4")
    np.testing.assert_array_equal(ember.tensor(c).numpy(), np.arange(4))
    assert ember.tensor(np.float64(1.5)).dtype == ember.float64
    assert ember.tensor(np.int32(7)).dtype == ember.int32
    assert ember.tensor([np.float32(1), np.float32(2)]).dtype == ember.float32
    assert ember.tensor(a, dtype=ember.float64).dtype == ember.float64


def test_tensor_from_tensors_and_mixed_nests():
    x = ember.tensor([1.0, 2.0])
    with pytest.warns(UserWarning, match="clone"):
        y = ember.tensor(x)
    assert y.data_ptr() != x.data_ptr()
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    z = ember.tensor([ember.tensor(1), 2, ember.tensor(3.5)])
    assert z.dtype == ember.float32
    np.testing.assert_array_equal(z.numpy(), [1, 2, 3.5])
    w = ember.tensor([ember.tensor([1, 2]), ember.tensor([3, 4])])
    np.testing.assert_array_equal(w.numpy(), [[1, 2], [3, 4]])
    v = ember.tensor([np.array([1, 2]), np.array([3, 4])])
    np.testing.assert_array_equal(v.numpy(), [[1, 2], [3, 4]])
    assert ember.tensor([x.double(), x.double()]).dtype == ember.float64


def test_tensor_errors():
    with pytest.raises(ValueError, match=r"expected sequence of length 2 at dim 1 \(got 3\)"):
        ember.tensor([[1, 2], [3, 4, 5]])
    with pytest.raises(TypeError, match=r"new\(\): invalid data type 'str'"):
        ember.tensor("abc")
    with pytest.raises(TypeError, match=r"invalid data type 'str'"):
        ember.tensor([1, "a"])
    with pytest.raises(RuntimeError, match=r"Could not infer dtype of dict"):
        ember.tensor({1: 2})
    with pytest.raises(RuntimeError, match="Overflow when unpacking long"):
        ember.tensor([2 ** 64])
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8 without overflow"):
        ember.tensor([300], dtype=ember.uint8)
    # floating data is not range-checked (PyTorch stores inf); integer data is
    assert ember.tensor([1e6], dtype=ember.float16).item() == float("inf")
    with pytest.raises(ValueError, match="expected a number at dim 2"):
        ember.tensor([[1, 2], [3, [4]]])
    with pytest.raises(ValueError, match="expected sequence of length 2 at dim 1"):
        ember.tensor([[1, 2], 3])
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can require gradients"):
        ember.tensor([1, 2], requires_grad=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        ember.tensor([1], foo=1)
    with pytest.raises(TypeError, match="can't convert np.ndarray of type"):
        ember.tensor(np.array([1 + 2j]))


def test_tensor_requires_grad_flag_and_large_list():
    t = ember.tensor([1.0], requires_grad=True)
    assert t.dtype == ember.float32
    data = list(range(100000))
    big = ember.tensor(data)
    assert big.numpy()[-1] == 99999 and big.numpy().sum() == sum(data)


def test_as_tensor_shares_when_possible():
    a = np.arange(4.0)
    t = ember.as_tensor(a)
    a[0] = 7
    assert t.numpy()[0] == 7  # shares memory with the ndarray
    t2 = ember.as_tensor(a, dtype=ember.float32)
    a[1] = 9
    assert t2.numpy()[1] == 1  # converted: a copy
    x = ember.ones(3)
    assert ember.as_tensor(x)._is_same(x)
    assert ember.as_tensor(x, dtype=ember.float64).dtype == ember.float64
    np.testing.assert_array_equal(ember.as_tensor([1, 2]).numpy(), [1, 2])
    assert ember.asarray(x)._is_same(x)
    c = ember.asarray(x, copy=True)
    assert c.data_ptr() != x.data_ptr()
    with pytest.raises(ValueError, match="copy=False"):
        ember.asarray([1, 2], copy=False)


# ---- sized factories ---------------------------------------------------------------------

@pytest.mark.parametrize("fn,val", [(ember.zeros, 0), (ember.ones, 1)])
def test_zeros_ones_size_forms(fn, val):
    for t in (fn(2, 3), fn((2, 3)), fn([2, 3]), fn(size=(2, 3)), fn(ember.Size([2, 3]))):
        assert tuple(t.shape) == (2, 3) and t.dtype == ember.float32
        np.testing.assert_array_equal(t.numpy(), np.full((2, 3), val))
    assert fn(()).shape == ()
    assert fn(0, 3).shape == (0, 3)
    for dt in ALL_DTYPES:
        t = fn(2, dtype=dt)
        assert t.dtype == dt
        np.testing.assert_array_equal(to_np(t), np.full(2, val))


def test_empty_and_errors():
    e = ember.empty(3, 4, dtype=ember.int16)
    assert tuple(e.shape) == (3, 4) and e.dtype == ember.int16 and e.is_contiguous()
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        ember.zeros(2, -1)
    with pytest.raises(TypeError, match="must be tuple of ints"):
        ember.ones(2, 1.5)
    with pytest.raises(TypeError, match="must be tuple of ints"):
        ember.zeros((2, "a"))
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        ember.zeros(2, bogus=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
        ember.zeros_like(ember.zeros(2), out=ember.zeros(2))
    with pytest.raises(TypeError, match="argument 'out' must be Tensor, not int"):
        ember.zeros(2, out=3)
    with pytest.raises(TypeError, match="size both positionally"):
        ember.zeros(2, size=(2,))
    with pytest.raises(RuntimeError, match="numel|overflow"):
        ember.empty(2 ** 40, 2 ** 40)
    assert ember.zeros(2, requires_grad=True).dtype == ember.float32
    with pytest.raises(RuntimeError, match="can require gradients"):
        ember.zeros(2, dtype=ember.int64, requires_grad=True)


@pytest.mark.parametrize("fill,dtype", [(1, ember.int64), (1.5, ember.float32), (True, ember.bool),
                                        (np.float64(2.0), ember.float32)])
def test_full_infers_dtype(fill, dtype):
    t = ember.full((2, 2), fill)
    assert t.dtype == dtype
    np.testing.assert_array_equal(to_np(t), np.full((2, 2), fill))


def test_full_variants():
    np.testing.assert_array_equal(ember.full([3], 2.5, dtype=ember.int32).numpy(), [2, 2, 2])
    np.testing.assert_array_equal(ember.full((2,), ember.tensor(4.0)).numpy(), [4.0, 4.0])
    assert ember.full((), 7).shape == ()
    with pytest.raises(TypeError, match="fill_value"):
        ember.full((2,), "x")
    s = ember.scalar_tensor(3)
    assert s.shape == () and s.dtype == ember.float32 and s.item() == 3.0
    assert ember.scalar_tensor(True, dtype=ember.bool).item() is True


def test_like_factories_inherit_dtype_and_strides():
    x = ember.arange(6, dtype=ember.int32).view(2, 3)
    for f, v in ((ember.zeros_like, 0), (ember.ones_like, 1)):
        y = f(x)
        assert y.dtype == ember.int32 and tuple(y.shape) == (2, 3)
        np.testing.assert_array_equal(y.numpy(), np.full((2, 3), v))
    y = ember.full_like(x, 7)
    np.testing.assert_array_equal(y.numpy(), np.full((2, 3), 7))
    assert ember.full_like(x, 2.5, dtype=ember.float64).dtype == ember.float64
    assert ember.empty_like(x).shape == x.shape
    xt = x.t()
    yt = ember.zeros_like(xt)
    assert yt.stride() == xt.stride()  # preserve_format for dense inputs
    xe = ember.ones(3).expand(2, 3)
    assert ember.zeros_like(xe).stride() == (3, 1)
    assert ember.zeros_like(x, dtype=ember.float16).dtype == ember.float16
    f = ember.rand_like(ember.zeros(4, 5, dtype=ember.float64))
    assert f.dtype == ember.float64 and f.shape == (4, 5)
    r = ember.randint_like(x, 5, 9)
    assert r.dtype == ember.int32 and r.numpy().min() >= 5 and r.numpy().max() < 9
    r2 = ember.randint_like(x, 3)
    assert r2.numpy().max() < 3
    with pytest.raises(RuntimeError, match="uniform_"):
        ember.rand_like(x)
    with pytest.raises(RuntimeError, match="normal_"):
        ember.randn_like(x)


def test_new_methods_keep_dtype():
    x = ember.zeros(2, dtype=ember.float64)
    assert x.new_tensor([1, 2]).dtype == ember.float64
    assert x.new_tensor([1, 2], dtype=ember.int64).dtype == ember.int64
    assert x.new_zeros(2, 3).shape == (2, 3) and x.new_zeros((2, 3)).dtype == ember.float64
    np.testing.assert_array_equal(x.new_ones(3).numpy(), [1, 1, 1])
    np.testing.assert_array_equal(x.new_full((2,), 5).numpy(), [5, 5])
    assert x.new_empty(4).dtype == ember.float64
    assert x.new_zeros(2, dtype=ember.int8).dtype == ember.int8
    assert x.new().shape == (0,)
    np.testing.assert_array_equal(x.new([1, 2]).numpy(), [1.0, 2.0])
    assert x.new(2, 3).shape == (2, 3)


# ---- ranges --------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [(5,), (2, 9), (2, 9, 3), (10, 0, -3), (0, 1, 0.1), (-1.5, 2.5, 0.5),
                                  (0.0, 5), (1, 2.5), (0, 0), (5, 5, -1)])
def test_arange_matches_numpy(args):
    t = ember.arange(*args)
    expected = np.arange(*args)
    any_float = any(isinstance(a, float) for a in args)
    assert t.dtype == (ember.float32 if any_float else ember.int64)
    np.testing.assert_allclose(t.numpy(), expected.astype(t.numpy().dtype), rtol=1e-6)
    assert t.shape == expected.shape


def test_arange_dtypes_and_keywords():
    np.testing.assert_array_equal(ember.arange(0, 5.5, dtype=ember.int64).numpy(), np.arange(5))
    np.testing.assert_array_equal(ember.arange(end=4).numpy(), np.arange(4))
    np.testing.assert_array_equal(ember.arange(start=1, end=4).numpy(), [1, 2, 3])
    np.testing.assert_array_equal(ember.arange(1, 10, step=4).numpy(), [1, 5, 9])
    for dt in [ember.uint8, ember.int16, ember.float16, ember.bfloat16, ember.float64]:
        t = ember.arange(0, 6, 2, dtype=dt)
        assert t.dtype == dt
        np.testing.assert_array_equal(to_np(t), [0, 2, 4])
    np.testing.assert_array_equal(ember.arange(ember.tensor(3)).numpy(), [0, 1, 2])
    big = ember.arange(100000)
    assert big.numpy()[-1] == 99999
    assert ember.arange(-2 ** 62, 2 ** 62, 2 ** 61).shape == (4,)


def test_arange_errors():
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        ember.arange(0, 5, 0)
    with pytest.raises(RuntimeError, match="upper bound and larger bound inconsistent with step sign"):
        ember.arange(0, 5, -1)
    with pytest.raises(RuntimeError, match="upper bound and larger bound inconsistent with step sign"):
        ember.arange(5.0, 0.0)
    with pytest.raises(RuntimeError, match="unsupported range"):
        ember.arange(0, float("inf"))
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        ember.arange(0, 1, 0.1, dtype=ember.int64)
    with pytest.raises(TypeError, match="at most 3"):
        ember.arange(1, 2, 3, 4)


def test_range_is_inclusive_and_warns():
    with pytest.warns(UserWarning, match="deprecated"):
        t = ember.range(1, 4)
    assert t.dtype == ember.float32
    np.testing.assert_array_equal(t.numpy(), [1, 2, 3, 4])
    with pytest.warns(UserWarning):
        np.testing.assert_allclose(ember.range(0, 1, 0.25).numpy(), [0, 0.25, 0.5, 0.75, 1])


@pytest.mark.parametrize("start,end,steps", [(0, 1, 5), (-3, 7, 11), (1, -1, 4), (2, 2, 3), (0, 10, 1),
                                             (0, 1, 0), (-1e3, 1e3, 1001)])
def test_linspace_matches_numpy(start, end, steps):
    t = ember.linspace(start, end, steps)
    assert t.dtype == ember.float32 and t.shape == (steps,)
    np.testing.assert_allclose(t.numpy(), np.linspace(start, end, steps, dtype=np.float32),
                               rtol=1e-6, atol=1e-4)
    d = ember.linspace(start, end, steps, dtype=ember.float64)
    np.testing.assert_allclose(d.numpy(), np.linspace(start, end, steps), rtol=1e-12, atol=1e-9)
    if steps:
        assert d.numpy()[0] == start and d.numpy()[-1] == (end if steps > 1 else start)


def test_linspace_default_steps_ints_and_errors():
    t = ember.linspace(-1, 1)  # the old default the tutorials rely on
    assert t.shape == (100,)
    np.testing.assert_allclose(t.numpy(), np.linspace(-1, 1, 100), atol=1e-6)
    i = ember.linspace(0, 10, 4, dtype=ember.int64)
    np.testing.assert_array_equal(i.numpy(), np.linspace(0, 10, 4).astype(np.int64))
    h = ember.linspace(0, 1, 5, dtype=ember.float16)
    np.testing.assert_array_equal(h.numpy(), np.linspace(0, 1, 5).astype(np.float16))
    np.testing.assert_allclose(ember.linspace(ember.tensor(0.0), ember.tensor(2.0), 3).numpy(), [0, 1, 2])
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        ember.linspace(0, 1, -1)


def test_logspace():
    np.testing.assert_allclose(ember.logspace(0, 3, 4).numpy(), [1, 10, 100, 1000], rtol=1e-6)
    np.testing.assert_allclose(ember.logspace(0, 4, 5, base=2).numpy(), [1, 2, 4, 8, 16])
    np.testing.assert_allclose(ember.logspace(-2, 2, 7, dtype=ember.float64).numpy(),
                               np.logspace(-2, 2, 7), rtol=1e-12)
    np.testing.assert_array_equal(ember.logspace(0, 2, 3, dtype=ember.int64).numpy(), [1, 10, 100])
    assert ember.logspace(0, 1).shape == (100,)
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        ember.logspace(0, 1, -2)


def test_eye():
    np.testing.assert_array_equal(ember.eye(3).numpy(), np.eye(3))
    np.testing.assert_array_equal(ember.eye(2, 4).numpy(), np.eye(2, 4))
    np.testing.assert_array_equal(ember.eye(4, 2, dtype=ember.int64).numpy(), np.eye(4, 2))
    assert ember.eye(0).shape == (0, 0)
    assert ember.eye(3, dtype=ember.bool).numpy().sum() == 3
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0, got -1"):
        ember.eye(-1)
    with pytest.raises(RuntimeError, match="m must be greater or equal to 0, got -2"):
        ember.eye(2, -2)


# ---- conversions ---------------------------------------------------------------------------

@pytest.mark.parametrize("method,dtype", [("float", ember.float32), ("double", ember.float64),
                                          ("half", ember.float16), ("bfloat16", ember.bfloat16),
                                          ("long", ember.int64), ("int", ember.int32),
                                          ("short", ember.int16), ("char", ember.int8),
                                          ("byte", ember.uint8), ("bool", ember.bool)])
def test_conversion_methods(method, dtype):
    src = ember.tensor([[0.0, 1.5], [-2.25, 3.0]])
    out = getattr(src.t(), method)()
    assert out.dtype == dtype and out.shape == (2, 2)
    ref = np.array([[0.0, -2.25], [1.5, 3.0]])
    if dtype == ember.bool:
        ref = ref != 0
    elif dtype == ember.uint8:
        ref = np.array([[0, 254], [1, 3]])  # -2 wraps, as in C
    elif not dtype.is_floating_point:
        ref = np.trunc(ref)
    np.testing.assert_array_equal(to_np(out).astype(np.float64), ref.astype(np.float64))
    same = ember.zeros(2, dtype=dtype)
    assert getattr(same, method)()._is_same(same)  # no copy when already that dtype


def test_type_method():
    x = ember.tensor([1.5, 2.5])
    assert x.type() == "ember.FloatTensor"
    assert ember.tensor([1]).type() == "ember.LongTensor"
    assert ember.tensor([True]).type() == "ember.BoolTensor"
    assert x.type(ember.int32).dtype == ember.int32
    assert x.type("ember.DoubleTensor").dtype == ember.float64
    assert x.type("torch.ByteTensor").dtype == ember.uint8
    assert x.type_as(ember.zeros(1, dtype=ember.int16)).dtype == ember.int16
    with pytest.raises(ValueError, match="invalid type: 'ember.FooTensor'"):
        x.type("ember.FooTensor")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.float()._is_same(x)
