"""NumPy and DLPack interop, and the Python-side Tensor protocols."""
import copy
import ctypes
import gc
import pickle
import sys

import numpy as np
import pytest

import ember
from ember.utils import dlpack as ember_dlpack

NP_DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32,
             np.float64]


def sample(dtype, shape=(2, 3)):
    a = np.arange(int(np.prod(shape))).reshape(shape)
    if dtype is np.bool_:
        return (a % 2 == 0)
    return a.astype(dtype)


# ---- from_numpy / numpy() -----------------------------------------------------------------

@pytest.mark.parametrize("dtype", NP_DTYPES)
def test_from_numpy_shares_memory(dtype):
    a = sample(dtype)
    t = ember.from_numpy(a)
    assert t.data_ptr() == a.ctypes.data
    assert t.numpy().ctypes.data == a.ctypes.data
    np.testing.assert_array_equal(t.numpy(), a)


def test_from_numpy_writes_visible_both_ways_and_owner_kept_alive():
    a = np.zeros((3, 4), np.float32)
    t = ember.from_numpy(a)
    a[1, 2] = 5.0
    assert t.tolist()[1][2] == 5.0
    t.fill_(7.0)
    assert (a == 7.0).all()
    n = t.numpy()
    n[0, 0] = -1.0
    assert a[0, 0] == -1.0
    del a, n
    gc.collect()
    assert t.tolist()[0][:2] == [-1.0, 7.0]  # the tensor keeps NumPy's buffer alive


def test_from_numpy_strided_and_errors():
    a = np.arange(24, dtype=np.float64).reshape(4, 6)[::2, 1::3]
    t = ember.from_numpy(a)
    assert t.stride() == (12, 3)
    np.testing.assert_array_equal(t.numpy(), a)
    with pytest.raises(ValueError, match="negative"):
        ember.from_numpy(np.arange(4)[::-1])
    with pytest.raises(TypeError, match="can't convert np.ndarray of type complex128"):
        ember.from_numpy(np.zeros(2, np.complex128))
    with pytest.raises(TypeError, match="expected np.ndarray"):
        ember.from_numpy([1, 2])


# ---- __array__ / __array_interface__ / __array_priority__ ----------------------------------

def test_array_protocol_copy_semantics():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = ember.from_numpy(a)
    assert np.asarray(t).ctypes.data == a.ctypes.data
    assert t.__array__().ctypes.data == a.ctypes.data
    assert t.__array__(copy=False).ctypes.data == a.ctypes.data
    c = t.__array__(copy=True)
    assert c.ctypes.data != a.ctypes.data
    np.testing.assert_array_equal(c, a)
    d = t.__array__(np.float64)  # NumPy 1.24 passes the dtype positionally, no copy=
    assert d.dtype == np.float64
    np.testing.assert_array_equal(d, a)
    assert t.__array__(np.float32, copy=False).ctypes.data == a.ctypes.data
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        t.__array__(np.float64, copy=False)
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        np.asarray(t, dtype=np.float64, copy=False)
    e = np.array(t)  # NumPy copies by default
    assert e.ctypes.data != a.ctypes.data
    np.testing.assert_array_equal(e, a)


def test_array_interface():
    a = np.arange(12, dtype=np.int16).reshape(3, 4)
    t = ember.from_numpy(a)
    ai = t.__array_interface__
    assert ai == {"shape": (3, 4), "typestr": "<i2", "data": (a.ctypes.data, False),
                  "strides": None, "version": 3}
    tt = t.t()
    assert tt.__array_interface__["strides"] == (2, 8)
    v = np.asarray(tt)
    np.testing.assert_array_equal(v, a.T)
    assert v.ctypes.data == a.ctypes.data
    bf = t.to(ember.bfloat16)
    assert not hasattr(bf, "__array_interface__")  # NumPy falls back to __array__
    with pytest.raises(TypeError, match="BFloat16|bfloat16"):
        np.asarray(bf)


def test_ndarray_op_tensor_dispatches_to_ember():
    t = ember.from_numpy(np.ones(3, np.float32))
    r = np.full(3, 2.0) - t
    assert isinstance(r, ember.Tensor)
    assert r.dtype == ember.float64  # the array counts as a tensor, as in PyTorch
    assert r.tolist() == [1.0, 1.0, 1.0]
    r = np.arange(3, dtype=np.int64) * t
    assert isinstance(r, ember.Tensor) and r.tolist() == [0.0, 1.0, 2.0]
    r = (2 * t).tolist()
    assert r == [2.0, 2.0, 2.0]


# ---- Python protocols ---------------------------------------------------------------------

def T(x, dtype=None):
    return ember.from_numpy(np.array(x, dtype=dtype))


def test_number_protocols():
    assert bool(T([1.0])) is True and bool(T(0)) is False
    assert float(T(2.5)) == 2.5 and int(T([[7]])) == 7 and int(T(2.9)) == 2
    assert [10, 20, 30][T(1)] == 20
    assert (3).__index__() == T(3, np.int32).__index__()
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(T([1, 2]))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is ambiguous"):
        bool(T([], np.float32))
    with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
        float(T([1.0, 2.0]))
    with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
        int(T([1, 2]))
    with pytest.raises(TypeError, match="only integer tensors of a single element can be converted to an index"):
        [1, 2][T(1.0)]
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        T([1, 2]).__index__()
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        T(True).__index__()


def test_iteration_and_containment():
    t = T([[1, 2], [3, 4], [5, 6]])
    rows = list(t)
    assert len(rows) == 3 and rows[2].tolist() == [5, 6]
    assert [r.tolist() for r in reversed(t)] == [[5, 6], [3, 4], [1, 2]]
    assert [x.item() for x in T([4.0, 5.0])] == [4.0, 5.0]
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(T(3))
    assert list(T([], np.float32)) == []
    assert 4 in t and 7 not in t and 2.0 in t
    assert T([3, 4]) in t and T(9) not in t
    with pytest.raises(RuntimeError, match="Tensor.__contains__ only supports Tensor or scalar, but you passed in a <class 'str'>"):
        "a" in t  # noqa: B015


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64", "float16",
                                   "bfloat16", "float32", "float64"])
def test_pickle_copy_deepcopy(dtype):
    base = ember.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4)).to(getattr(ember, dtype))
    t = base.t()  # non-contiguous view: pickles its own elements
    for r in (pickle.loads(pickle.dumps(t)), pickle.loads(pickle.dumps(t, protocol=5)),
              copy.copy(t), copy.deepcopy(t)):
        assert r.dtype == t.dtype and tuple(r.shape) == (4, 3)
        assert r.tolist() == t.tolist()
        assert r.data_ptr() != t.data_ptr()
    memo = {}
    d = copy.deepcopy([t, t], memo)
    assert d[0] is d[1]


def test_pickle_payload_is_plain_data():
    # Unpickling a tensor needs only ember._tensor's two rebuild functions plus plain data.
    seen = []
    allowed = {("ember._tensor", "_rebuild_tensor"), ("ember._tensor", "_rebuild_view")}

    class Restricted(pickle.Unpickler):
        def find_class(self, module, name):
            seen.append((module, name))
            if (module, name) not in allowed:
                raise pickle.UnpicklingError(f"unexpected global {module}.{name}")
            return super().find_class(module, name)

    import io
    for dtype in (np.float32, np.int64, np.bool_):
        r = Restricted(io.BytesIO(pickle.dumps(T([1, 0], dtype)))).load()
        assert r.tolist() == np.array([1, 0], dtype).tolist()
    assert set(seen) == allowed


# ---- DLPack --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NP_DTYPES)
def test_dlpack_numpy_round_trip_zero_copy(dtype):
    a = sample(dtype, (3, 4))
    t = ember.from_dlpack(a)
    assert t.data_ptr() == a.ctypes.data
    assert t.tolist() == a.tolist()
    b = np.from_dlpack(t)
    assert b.ctypes.data == t.data_ptr() and b.dtype == a.dtype
    np.testing.assert_array_equal(b, a)
    b[0, 0] = b[1, 1]
    assert t.tolist()[0][0] == a[1, 1]


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (1,), (5,)])
def test_dlpack_odd_shapes(shape):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    t = ember.from_dlpack(a)
    assert tuple(t.shape) == shape
    np.testing.assert_array_equal(np.from_dlpack(t), a)


def test_dlpack_strided_views():
    a = np.arange(30, dtype=np.int64).reshape(5, 6)[1::2, ::3]
    t = ember.from_dlpack(a)
    assert t.stride() == (12, 3) and t.tolist() == a.tolist()
    back = np.from_dlpack(ember.from_numpy(np.arange(6.0).reshape(2, 3)).t())
    np.testing.assert_array_equal(back, np.arange(6.0).reshape(2, 3).T)
    assert back.strides == (8, 24)


def test_dlpack_capsule_names_and_single_consumption():
    t = T([1.0, 2.0], np.float32)
    legacy = t.__dlpack__()
    versioned = t.__dlpack__(max_version=(1, 0))
    assert "dltensor" in repr(legacy) and "versioned" not in repr(legacy)
    assert '"dltensor_versioned"' in repr(versioned)
    assert '"dltensor"' in repr(t.__dlpack__(max_version=(0, 8)))
    assert '"dltensor_versioned"' in repr(t.__dlpack__(max_version=(1, 3)))
    u = ember.from_dlpack(legacy)
    v = ember.from_dlpack(versioned)
    assert u.data_ptr() == v.data_ptr() == t.data_ptr()
    assert '"used_dltensor"' in repr(legacy) and '"used_dltensor_versioned"' in repr(versioned)
    with pytest.raises(RuntimeError, match="can be consumed only once"):
        ember.from_dlpack(legacy)
    with pytest.raises(RuntimeError, match="can be consumed only once"):
        ember.from_dlpack(versioned)
    assert ember.from_dlpack(t).data_ptr() == t.data_ptr()
    assert t.__dlpack_device__() == (1, 0)


def test_dlpack_ownership_through_refcounts():
    a = np.arange(4.0)
    base = sys.getrefcount(a)
    t = ember.from_numpy(a)
    assert sys.getrefcount(a) == base + 1
    for kw in ({}, {"max_version": (1, 0)}):
        cap = t.__dlpack__(**kw)
        held = ember.from_numpy(a)  # noqa: F841
        del held
        del cap  # never consumed: its destructor drops the tensor reference
        gc.collect()
        assert sys.getrefcount(a) == base + 1
    cap = t.__dlpack__(max_version=(1, 0))
    del t
    u = ember.from_dlpack(cap)
    del cap
    gc.collect()
    assert sys.getrefcount(a) == base + 1  # u owns the export now
    del u
    gc.collect()
    assert sys.getrefcount(a) == base
    # Import side: NumPy's deleter runs when the ember storage dies.
    w = ember.from_dlpack(a)
    assert sys.getrefcount(a) > base
    del w
    gc.collect()
    assert sys.getrefcount(a) == base


def test_dlpack_copy_and_device_arguments():
    t = T([1, 2, 3], np.int32)
    c = ember.from_dlpack(t.__dlpack__(max_version=(1, 0), copy=True))
    assert c.data_ptr() != t.data_ptr() and c.tolist() == [1, 2, 3]
    assert _versioned_flags(t.__dlpack__(max_version=(1, 0), copy=True)) == 2  # IS_COPIED
    assert _versioned_flags(t.__dlpack__(max_version=(1, 0))) == 0
    assert ember.from_dlpack(t.__dlpack__(dl_device=(1, 0), copy=False)).data_ptr() == t.data_ptr()
    with pytest.raises(BufferError, match=r"cannot export a cpu tensor to DLPack device \(2, 0\)"):
        t.__dlpack__(max_version=(1, 0), dl_device=(2, 0))
    with pytest.raises(BufferError, match="stream must be None for a CPU tensor"):
        t.__dlpack__(stream=1)
    with pytest.raises(TypeError, match="max_version must be a"):
        t.__dlpack__(max_version=(1,))
    a = np.arange(3.0)
    assert ember.from_dlpack(a, copy=True).data_ptr() != a.ctypes.data
    assert ember.from_dlpack(a, copy=False).data_ptr() == a.ctypes.data
    assert ember.from_dlpack(a, device="cpu").data_ptr() == a.ctypes.data
    assert np.from_dlpack(t, copy=True).ctypes.data != t.data_ptr()


def test_dlpack_read_only_producer_is_copied():
    a = np.arange(3.0)
    a.flags.writeable = False
    t = ember.from_dlpack(a)  # NumPy flags the capsule read-only; ember tensors are writable
    assert t.data_ptr() != a.ctypes.data and t.tolist() == [0.0, 1.0, 2.0]


def test_dlpack_legacy_producer_and_errors():
    class OldProducer:  # pre-1.0 protocol: no max_version keyword
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, stream=None):
            return self.a.__dlpack__()

        def __dlpack_device__(self):
            return (1, 0)

    a = np.arange(5, dtype=np.int16)
    t = ember.from_dlpack(OldProducer(a))
    assert t.data_ptr() == a.ctypes.data and t.dtype == ember.int16
    c = ember.from_dlpack(OldProducer(a), copy=True)
    assert c.data_ptr() != a.ctypes.data
    with pytest.raises(TypeError, match="expected an object with a __dlpack__ method or a DLPack capsule, got list"):
        ember.from_dlpack([1, 2])
    with pytest.raises(TypeError, match="from_dlpack: unsupported DLPack dtype complex128"):
        ember.from_dlpack(np.zeros(2, np.complex128))
    with pytest.raises(TypeError, match="expected a capsule named"):
        ember.from_dlpack(_capsule(ctypes.c_void_p(1), b"other"))


def test_utils_dlpack():
    t = T([[1.0, 2.0]], np.float64)
    cap = ember_dlpack.to_dlpack(t)
    assert '"dltensor"' in repr(cap)
    u = ember_dlpack.from_dlpack(cap)
    assert u.data_ptr() == t.data_ptr() and u.tolist() == [[1.0, 2.0]]
    with pytest.raises(TypeError, match="to_dlpack: expected a Tensor"):
        ember_dlpack.to_dlpack(np.ones(2))


# -- hand-made capsules (ctypes): NULL strides, byte_offset, odd dtypes, deleters --------------

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER), ("flags", ctypes.c_uint64),
                ("dl_tensor", DLTensor)]


_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_PyCapsule_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
_PyCapsule_GetPointer.restype = ctypes.c_void_p
_PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_NAMES = {}


def _capsule(ptr, name):
    _NAMES[name] = ctypes.c_char_p(name)  # the name must outlive the capsule
    return _PyCapsule_New(ctypes.cast(ptr, ctypes.c_void_p), _NAMES[name], None)


def _versioned_flags(cap):
    p = _PyCapsule_GetPointer(cap, b"dltensor_versioned")
    return DLManagedTensorVersioned.from_address(p).flags


class HandMade:
    """A producer written against the DLPack ABI; records when its deleter runs."""

    def __init__(self, buf, shape, strides=None, code=2, bits=32, lanes=1, byte_offset=0,
                 device=(1, 0), versioned=True, major=1, flags=0):
        self.buf, self.deleted = buf, 0
        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.strides = (ctypes.c_int64 * len(strides))(*strides) if strides is not None else None
        dl = DLTensor(ctypes.cast(buf, ctypes.c_void_p), DLDevice(*device), len(shape),
                      DLDataType(code, bits, lanes), self.shape,
                      ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64)) if self.strides else None,
                      byte_offset)

        def deleter(_):
            self.deleted += 1
        self.deleter = DELETER(deleter)
        if versioned:
            self.m = DLManagedTensorVersioned(major, 0, None, self.deleter, flags, dl)
            self.capsule = _capsule(ctypes.addressof(self.m), b"dltensor_versioned")
        else:
            self.m = DLManagedTensor(dl, None, self.deleter)
            self.capsule = _capsule(ctypes.addressof(self.m), b"dltensor")


@pytest.mark.parametrize("versioned", [True, False])
def test_handmade_capsule_null_strides_byte_offset_and_deleter(versioned):
    buf = (ctypes.c_float * 10)(*range(10))
    p = HandMade(buf, (2, 3), None, byte_offset=8, versioned=versioned)
    t = ember.from_dlpack(p.capsule)
    assert t.tolist() == [[2.0, 3.0, 4.0], [5.0, 6.0, 7.0]]
    assert t.stride() == (3, 1) and t.data_ptr() == ctypes.addressof(buf) + 8
    assert p.deleted == 0
    del t
    gc.collect()
    assert p.deleted == 1  # the producer's deleter ran exactly once, when the storage died


def test_handmade_capsule_strides_and_dtypes():
    buf = (ctypes.c_uint16 * 6)(*[0x3F80, 0x4000, 0x4040, 0x4080, 0x40A0, 0x40C0])  # bfloat16 1..6
    p = HandMade(buf, (3,), (2,), code=4, bits=16)
    t = ember.from_dlpack(p.capsule)
    assert t.dtype == ember.bfloat16 and t.tolist() == [1.0, 3.0, 5.0]
    b = (ctypes.c_uint8 * 2)(1, 0)
    assert ember.from_dlpack(HandMade(b, (2,), code=6, bits=8).capsule).tolist() == [True, False]
    assert ember.from_dlpack(HandMade(b, (2,), code=1, bits=8).capsule).dtype == ember.uint8


def test_handmade_capsule_rejections_leave_ownership_with_producer():
    buf = (ctypes.c_float * 4)()
    cases = [
        (dict(code=5, bits=64), TypeError, "unsupported DLPack dtype complex64"),
        (dict(code=1, bits=32), TypeError, "unsupported DLPack dtype uint32"),
        (dict(lanes=4), TypeError, r"vector dtypes \(lanes=4\)"),
        (dict(device=(7, 0)), RuntimeError, "unsupported DLPack device type 7"),
        (dict(major=2), BufferError, "exported DLPack 2.0, but ember supports major version 1"),
        (dict(strides=[-1]), RuntimeError, "negative strides are not supported"),
        (dict(byte_offset=2), RuntimeError, "not aligned to the 4-byte float32 elements"),
    ]
    for kw, exc, msg in cases:
        p = HandMade(buf, (4,), **kw)
        with pytest.raises(exc, match=msg):
            ember.from_dlpack(p.capsule)
        assert "used_" not in repr(p.capsule) and p.deleted == 0


def test_handmade_read_only_flag_copies():
    buf = (ctypes.c_int32 * 3)(1, 2, 3)
    p = HandMade(buf, (3,), code=0, bits=32, flags=1)
    t = ember.from_dlpack(p.capsule)
    assert t.data_ptr() != ctypes.addressof(buf) and t.tolist() == [1, 2, 3]
    gc.collect()
    assert p.deleted == 1  # the producer's memory was released after the copy
