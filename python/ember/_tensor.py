"""Tensor methods written in Python: printing, the Python number/container
protocols, NumPy's array protocols and pickling.

Everything here is O(1) Python work per call; element loops run in C++.
"""
from __future__ import annotations

import sys
from numbers import Number

import weakref

import numpy as np

from . import _C, _tensor_str

Tensor = _C.Tensor

# ---- printing ---------------------------------------------------------------------------


def _repr(self, *, tensor_contents=None):
    return _tensor_str._str(self, tensor_contents=tensor_contents)


def _format(self, format_spec):
    # A 0-d tensor formats like its value: f"{t:.3f}".
    if self.dim() == 0 and type(self) is Tensor:
        return self.item().__format__(format_spec)
    if format_spec:
        raise TypeError("unsupported format string passed to Tensor.__format__")
    return _repr(self)


# ---- Python number protocols -------------------------------------------------------------


def _bool(self):
    n = self.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(self.item())


def _one_element(self):
    if self.numel() != 1:
        raise ValueError("only one element tensors can be converted to Python scalars")
    return self.item()


def _float(self):
    return float(_one_element(self))


def _int(self):
    return int(_one_element(self))


def _index(self):
    if self.numel() != 1 or self.dtype.is_floating_point or self.dtype == _C.bool:
        raise TypeError("only integer tensors of a single element can be converted to an index")
    return self.item()


# ---- container protocols -----------------------------------------------------------------


def _iter(self):
    if self.dim() == 0:
        raise TypeError("iteration over a 0-d tensor")
    return iter(self.unbind(0))


def _reversed(self):
    return self if self.dim() == 0 else self.flip(0)


def _contains(self, element):
    if not isinstance(element, (Tensor, Number)):
        raise RuntimeError("Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                           f"{type(element)}.")
    return bool((self == element).any().item())


# ---- copying and pickling ----------------------------------------------------------------


def _copy(self):
    return self.clone()


def _deepcopy(self, memo):
    """A deep copy; views of one storage copied together stay views of one new storage
    (the storage is memoized), as in PyTorch."""
    if id(self) in memo:
        return memo[id(self)]
    if self.is_sparse:
        result = _rebuild_sparse(_deepcopy(self._indices(), memo), _deepcopy(self._values(), memo),
                                 tuple(self.shape), self.is_coalesced(), False)
    elif self.numel() == 0:
        result = self.clone()
    else:
        skey = ("ember.storage", self._storage_ptr(), str(self.dtype), str(self.device))
        if skey not in memo:
            memo[skey] = self.detach()._storage_view(False).clone()  # detached: records nothing
            memo.setdefault(id(memo), []).append(self)  # keep the key's storage alive
        result = memo[skey].as_strided(tuple(self.shape), self.stride(), self.storage_offset())
    if getattr(self, "requires_grad", False) and hasattr(result, "requires_grad_"):
        result = result.detach().requires_grad_(True)
    if type(self) is not _C.Tensor and type(result) is _C.Tensor:
        result = _as_subclass(result, type(self))
    memo[id(self)] = result
    return result


def _as_subclass(t, cls):
    try:
        return t.as_subclass(cls)
    except (AttributeError, TypeError):
        return t


# Pickled tensors carry raw little-endian bytes plus dtype/shape/device names:
# unpickling calls only _rebuild_tensor / _rebuild_view, never arbitrary code of ours.
def _raw_numpy(t):
    """A C-contiguous CPU NumPy array over `t`'s elements (bfloat16 as its int16 bits)."""
    c = t.detach() if hasattr(t, "detach") else t  # autograd state is not data
    c = c.cpu() if c.device.type != "cpu" else c
    c = c.contiguous()
    if c.dtype == _C.bfloat16:
        c = c.view(_C.int16)
    return c.numpy()


def _rebuild_tensor(data, dtype_name, shape, device, requires_grad=False):
    dtype = getattr(_C, dtype_name)
    np_name = "int16" if dtype_name == "bfloat16" else dtype_name
    arr = np.frombuffer(bytearray(data), dtype=np.dtype(np_name).newbyteorder("<"))
    t = _C.from_numpy(arr.reshape(shape))
    if dtype_name == "bfloat16":
        t = t.view(dtype)
    if device != "cpu":
        t = t.to(device)
    if requires_grad and hasattr(t, "requires_grad_"):
        t.requires_grad_(True)
    return t


class _PickledStorage:
    """One storage in a pickle. ``pickle`` memoizes objects by identity, so every tensor of
    one dump that lives on the same storage refers to the same ``_PickledStorage`` (kept in a
    weak cache while the dump holds it) and the storage is written and rebuilt once."""

    __slots__ = ("flat", "__weakref__")

    def __init__(self, flat):
        self.flat = flat

    def __reduce__(self):
        dtype_name = str(self.flat.dtype).split(".")[-1]
        return (_rebuild_tensor, (_raw_numpy(self.flat).tobytes(), dtype_name,
                                  (self.flat.numel(),), str(self.flat.device)))


_pickled_storages = weakref.WeakValueDictionary()


def _rebuild_view(flat, shape, stride, offset, requires_grad=False):
    t = flat.as_strided(shape, stride, offset)
    if requires_grad:
        t = t.detach().requires_grad_(True)
    return t


def _rebuild_sparse(indices, values, size, coalesced, requires_grad=False):
    """A sparse COO tensor from pickled parts (bounds and the coalesced claim checked)."""
    t = _C._sparse_coo_tensor(indices, values, tuple(size), None, None, True, bool(coalesced))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _reduce_ex(self, protocol):
    dtype_name = str(self.dtype).split(".")[-1]
    requires_grad = bool(getattr(self, "requires_grad", False))
    if self.is_sparse:
        return (_rebuild_sparse, (self._indices(), self._values(), tuple(self.shape),
                                  self.is_coalesced(), requires_grad))
    if self.numel() == 0:
        return (_rebuild_tensor, (b"", dtype_name, tuple(self.shape), str(self.device),
                                  requires_grad))
    skey = (self._storage_ptr(), dtype_name, str(self.device))
    storage = _pickled_storages.get(skey)
    if storage is None:
        storage = _PickledStorage(self.detach()._storage_view(False))
        _pickled_storages[skey] = storage
    return (_rebuild_view, (storage, tuple(self.shape), self.stride(), self.storage_offset(),
                            requires_grad))


# ---- NumPy protocols ---------------------------------------------------------------------

_TYPESTR = {
    "bool": "|b1", "uint8": "|u1", "int8": "|i1", "int16": "<i2", "int32": "<i4", "int64": "<i8",
    "float16": "<f2", "float32": "<f4", "float64": "<f8",
}


def _array(self, dtype=None, copy=None):
    """np.asarray(t): shares memory when it can (NumPy 2 ``copy=`` semantics)."""
    if copy is False:
        if self.device.type != "cpu":
            raise ValueError("Unable to avoid copy while creating an array as requested: the tensor "
                             f"lives on {self.device}")
        arr = self.numpy()
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            raise ValueError("Unable to avoid copy while creating an array as requested: converting "
                             f"{arr.dtype} to {np.dtype(dtype)} needs a copy")
        return arr
    arr = self.numpy(force=True)
    if copy:
        return np.array(arr, dtype=dtype, copy=True)
    return arr if dtype is None else arr.astype(dtype, copy=False)


def _array_interface(self):
    # Only CPU tensors NumPy can represent; otherwise NumPy falls back to __array__,
    # which raises the precise error.
    typestr = _TYPESTR.get(str(self.dtype).split(".")[-1])
    if (typestr is None or self.device.type != "cpu" or getattr(self, "requires_grad", False)
            or self.is_sparse):
        raise AttributeError("__array_interface__")
    item = self.element_size()
    return {
        "shape": tuple(self.shape),
        "typestr": typestr,
        "data": (self.data_ptr(), False),
        "strides": None if self.is_contiguous() else tuple(s * item for s in self.stride()),
        "version": 3,
    }


# ---- install -----------------------------------------------------------------------------

Tensor.__repr__ = _repr
Tensor.__str__ = _repr
Tensor.__format__ = _format
Tensor.__bool__ = _bool
Tensor.__float__ = _float
Tensor.__int__ = _int
Tensor.__index__ = _index
Tensor.__iter__ = _iter
Tensor.__reversed__ = _reversed
Tensor.__contains__ = _contains
Tensor.__copy__ = _copy
Tensor.__deepcopy__ = _deepcopy
Tensor.__reduce_ex__ = _reduce_ex
Tensor.__array__ = _array
Tensor.__array_interface__ = property(_array_interface)
# Higher than ndarray's so that `ndarray + tensor` asks the tensor first.
Tensor.__array_priority__ = 1000


def _apply_(self, callable):
    """Applies a Python callable to every element, in place (CPU tensors, as PyTorch;
    the callable runs in Python once per element, so this is for small tensors)."""
    if not self.device.type == "cpu":
        raise TypeError("apply_ is only implemented on CPU tensors")
    vals = [callable(v) for v in self.reshape(-1).tolist()]
    self.copy_(_C.tensor(vals, dtype=self.dtype).reshape(self.shape))
    return self


def _map_(self, tensor, callable):
    """self[i] = callable(self[i], tensor[i]) for every element, in place (CPU tensors)."""
    if not self.device.type == "cpu":
        raise TypeError("map_ is only implemented on CPU tensors")
    other = tensor.expand_as(self).reshape(-1).tolist()
    vals = [callable(a, b) for a, b in zip(self.reshape(-1).tolist(), other)]
    self.copy_(_C.tensor(vals, dtype=self.dtype).reshape(self.shape))
    return self


Tensor.apply_ = _apply_
Tensor.map_ = _map_


def _false(self):
    return False


# The backend and layout queries PyTorch programs make on any tensor (is_cpu and is_cuda are
# bound in C++; is_sparse belongs to the sparse layout): ember has no tensors of these kinds.
for _name in ("is_xpu", "is_ipu", "is_mps", "is_mtia", "is_maia", "is_vulkan", "is_xla",
              "is_meta", "is_mkldnn", "is_quantized", "is_nested", "is_sparse_csr"):
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, property(_false, doc=f"{_name}: always False in ember."))


# Module-level names of this area, attached to the ember package (its __init__
# imports this module after _ops, so these take precedence).
def _export():
    from . import serialization
    from .utils import dlpack as _dlpack  # noqa: F401  (makes ember.utils.dlpack importable)
    pkg = sys.modules[__name__.rpartition(".")[0]]
    pkg.save = serialization.save
    pkg.load = serialization.load
    pkg.set_printoptions = _tensor_str.set_printoptions
    pkg.from_dlpack = _C.from_dlpack
    pkg.serialization = serialization


_export()
