"""nn.Parameter, nn.Buffer and nn.UninitializedParameter, as torch.nn.parameter.

A Parameter is an ``ember.Tensor`` subclass: a leaf that shares its data's storage and
requires grad by default. Modules register Parameters assigned as attributes.
"""
from __future__ import annotations

from collections import OrderedDict

from .. import _C

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer",
           "is_lazy"]

Tensor = _C.Tensor


def _make_subclass(cls, data, requires_grad):
    """A new ``cls`` instance aliasing ``data``'s storage, as a leaf (torch's _make_subclass)."""
    if not isinstance(data, Tensor):
        raise TypeError(f"{cls.__name__}(): data must be a Tensor, not {type(data).__name__}")
    self = Tensor.__new__(cls)
    Tensor.__init__(self, data.detach())
    if requires_grad:
        self.requires_grad_(True)
    return self


class Parameter(Tensor):
    r"""A Tensor that is to be considered a module parameter.

    Assigning a Parameter as a Module attribute adds it to the module's ``parameters()``.
    ``Parameter(data)`` shares ``data``'s storage; ``requires_grad`` defaults to True.
    """

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C.empty(0)
        return _make_subclass(cls, data, requires_grad)

    def __init__(self, *args, **kwargs):  # everything happens in __new__
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __reduce_ex__(self, proto):
        # Pickles as (data, requires_grad): the data goes through Tensor's own pickling.
        return (_rebuild_parameter, (self.data, self.requires_grad, OrderedDict()))

    __hash__ = Tensor.__hash__


def _rebuild_parameter(data, requires_grad, backward_hooks=None):
    return Parameter(data, requires_grad)


class _BufferMeta(type(Tensor)):
    # `isinstance(t, Buffer)` holds for the plain Tensors Buffer(...) returns.
    def __instancecheck__(cls, instance):
        if cls is Buffer:
            return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    r"""A Tensor that is to be considered a module buffer (torch.nn.Buffer).

    Assigning a Buffer as a Module attribute registers it with ``persistent`` (default
    True). The attribute then holds a plain Tensor, as in torch.
    """

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _C.empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


class UninitializedTensorMixin:
    """Shape-less placeholders for lazy modules; ``materialize(shape)`` allocates them."""

    def materialize(self, shape, device=None, dtype=None):
        if device is None:
            device = self.data.device
        if dtype is None:
            dtype = self.data.dtype
        data = _C.empty(tuple(shape), dtype=dtype, device=device)
        self.data = data
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually "
            "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
            "initialized one. Call `forward` to initialize the parameters before accessing their "
            "attributes.")

    def share_memory_(self):
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
            "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self):
        return f"<{self.__class__.__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, proto):
        return (self.__class__, (self.requires_grad,))


def is_lazy(param):
    """Whether ``param`` is an uninitialized parameter or buffer."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter without a shape yet; ``materialize`` turns it into a Parameter."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        data = _C.empty(0, dtype=dtype, device=device)
        return _make_subclass(cls, data, requires_grad)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, self.data.device, self.data.dtype)
        memo[id(self)] = result
        return result


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer without a shape yet; ``materialize`` turns it into a Tensor."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None):
        data = _C.empty(0, dtype=dtype, device=device)
        return _make_subclass(cls, data, requires_grad)

    def __init__(self, *args, **kwargs):
        pass
