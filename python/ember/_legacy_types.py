"""The legacy typed tensor classes: ``ember.FloatTensor``, ``ember.LongTensor``, ...,
``ember.cuda.FloatTensor``, and ``set_default_tensor_type``.

As in PyTorch they are not Tensor subclasses but constructors and type tests: every tensor
is an ``ember.Tensor``; ``isinstance(t, ember.FloatTensor)`` asks whether ``t`` is a strided
float32 tensor on the CPU, and ``ember.FloatTensor(...)`` makes one:

* ``FloatTensor()``: an empty 1-D tensor; ``FloatTensor(2, 3)`` or ``FloatTensor(ember.Size
  ([2, 3]))``: uninitialized, of that shape;
* ``FloatTensor(data)``: a list, tuple or NumPy array (converted to the class's dtype; an array
  of that dtype is shared, not copied, as PyTorch's legacy constructor shares it);
* ``FloatTensor(tensor)``: the same tensor (an alias) when its type matches, else TypeError.
"""
import builtins
import warnings

from . import _C
from ._size import Size

Tensor = _C.Tensor

__all__ = ["set_default_tensor_type"]


class _TensorType(type):
    """Metaclass of the legacy tensor types (PyTorch's ``torch.tensortype``)."""

    def __instancecheck__(cls, obj):
        if not isinstance(obj, Tensor):
            return False
        from ._storage import strided

        return (obj.dtype == cls.dtype and obj.device.type == cls._device_type
                and obj.layout is strided)

    def __repr__(cls):
        return f"<class '{cls._name}'>"

    def __call__(cls, *args, device=None):
        import ember

        if cls._device_type == "cuda":
            _warn_cuda_ctor()
        if device is not None:
            dev = ember.device(device)
            if dev.type != cls._device_type:
                raise RuntimeError(f"legacy constructor expects device type: {cls._device_type} "
                                   f"but device type: {dev.type} was passed")
        dev = ember.device(device) if device is not None else ember.device(cls._device_type)
        if not args:
            return ember.empty((0,), dtype=cls.dtype, device=dev)
        first = args[0]
        if len(args) == 1 and isinstance(first, Tensor):
            if not isinstance(first, cls):
                raise TypeError(f"expected {cls._name} (got {first.type()})")
            return first[...]  # an alias, recorded as AliasBackward0 as in PyTorch
        if isinstance(first, Size) or all(_is_int(a) for a in args):
            if len(args) == 1 and isinstance(first, Size):
                sizes = tuple(first)
            elif len(args) > 1 and isinstance(first, Size):
                raise TypeError(f"{cls._name}(): expected sizes (ints) or one data argument")
            else:
                sizes = tuple(int(a) for a in args)
            return ember.empty(sizes, dtype=cls.dtype, device=dev)
        if len(args) != 1:
            raise TypeError(f"new() received an invalid combination of arguments: expected "
                            f"sizes (ints) or one data argument, got "
                            f"({', '.join(type(a).__name__ for a in args)})")
        return _from_data(cls, first, dev)


def _is_int(a):
    import numbers

    return isinstance(a, numbers.Integral) and not isinstance(a, builtins.bool) and not isinstance(
        a, Tensor)


def _from_data(cls, data, dev):
    import numpy as np

    import ember

    if isinstance(data, np.ndarray):
        want = ember.empty((), dtype=cls.dtype).numpy().dtype if cls.dtype != ember.bfloat16 \
            else None
        if (want is not None and data.dtype == want and dev.type == "cpu"
                and data.dtype.isnative and data.flags.writeable):
            return ember.from_numpy(data)
        return ember.tensor(data, dtype=cls.dtype, device=dev)
    if isinstance(data, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    if not hasattr(data, "__len__") or not hasattr(data, "__getitem__"):
        kind = type(data)
        name = kind.__name__ if kind.__module__ == "builtins" else \
            f"{kind.__module__}.{kind.__qualname__}"
        raise TypeError(f"new(): data must be a sequence (got {name})")
    return ember.tensor(data, dtype=cls.dtype, device=dev)


def _make(name, dtype, device_type):
    prefix = "ember.cuda." if device_type == "cuda" else "ember."
    doc = (f"The legacy constructor and type test of {'CUDA' if device_type == 'cuda' else 'CPU'} "
           f"tensors of dtype {dtype}.")
    return _TensorType(name, (), {
        "__module__": prefix[:-1], "__doc__": doc, "_name": prefix + name, "dtype": dtype,
        "_device_type": device_type, "is_cuda": device_type == "cuda", "is_sparse": False,
        "layout": None,
    })


def _warn_cuda_ctor():
    warnings.warn("The ember.cuda.*DtypeTensor constructors are no longer recommended. It's "
                  "best to use methods such as ember.tensor(data, dtype=*, device='cuda') to "
                  "create tensors.", UserWarning, stacklevel=3)


def _all_types():
    """{name: dtype} of the legacy types ember has dtypes for."""
    import ember

    return {"FloatTensor": ember.float32, "DoubleTensor": ember.float64,
            "HalfTensor": ember.float16, "BFloat16Tensor": ember.bfloat16,
            "ByteTensor": ember.uint8, "CharTensor": ember.int8, "ShortTensor": ember.int16,
            "IntTensor": ember.int32, "LongTensor": ember.int64, "BoolTensor": ember.bool}


CPU_TYPES = {}
CUDA_TYPES = {}

#: The package name Tensor.type() reports: "ember", or "torch" while the torch_compat import
#: hook is installed (programs compare x.type() with "torch.cuda.FloatTensor").
type_prefix = "ember"


def _install():
    """Makes the types and sets them on ``ember`` and ``ember.cuda``; patches Tensor.type to
    accept them."""
    import ember

    from ._storage import strided

    for name, dt in _all_types().items():
        CPU_TYPES[name] = _make(name, dt, "cpu")
        CUDA_TYPES[name] = _make(name, dt, "cuda")
    for table, module in ((CPU_TYPES, ember), (CUDA_TYPES, ember.cuda)):
        for name, t in table.items():
            type.__setattr__(t, "layout", strided)
            setattr(module, name, t)
    _c_type = Tensor.type

    def type_(self, dtype=None, non_blocking=False, **kwargs):
        """With no argument, the legacy type name ("ember.FloatTensor"); given a dtype, a
        legacy type (ember.DoubleTensor) or its name, the tensor converted to it."""
        if isinstance(dtype, _TensorType):
            dtype = dtype._name
        out = _c_type(self, dtype, non_blocking=non_blocking, **kwargs)
        if dtype is None and type_prefix != "ember":
            out = type_prefix + out[len("ember"):]
        return out

    type_.__name__ = "type"
    Tensor.type = type_


def set_default_tensor_type(t):
    """Deprecated in PyTorch 2.1: sets the default floating dtype (and, for a CUDA type, the
    default device) from a legacy type or its name (``"ember.DoubleTensor"``)."""
    import ember

    warnings.warn("ember.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "ember.set_default_dtype() and ember.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    if isinstance(t, str):
        name = t
        for prefix in ("ember.", "torch."):
            if name.startswith(prefix):
                name = name[len(prefix):]
        cuda = name.startswith("cuda.")
        if cuda:
            name = name[5:]
        table = CUDA_TYPES if cuda else CPU_TYPES
        if name not in table:
            raise TypeError(f"invalid type: '{t}'")
        t = table[name]
    if not isinstance(t, _TensorType):
        raise TypeError(f"invalid type object: only floating-point types are supported as the "
                        f"default type (got {type(t).__name__})")
    if not t.dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    ember.set_default_dtype(t.dtype)
    ember.set_default_device("cuda" if t._device_type == "cuda" else None)
