"""Re-exports of the C++ ops with the few pieces of argument handling that read
better in Python."""
from . import _C

_names = [n for n in dir(_C) if not n.startswith("_") and n not in (
    "Tensor", "dtype", "device", "linalg")]  # ember.linalg is the Python module linalg.py
globals().update({n: getattr(_C, n) for n in _names})
__all__ = list(_names) + ["where"]


def where(condition, input=None, other=None):
    """``where(cond, x, y)`` picks elementwise; ``where(cond)`` is ``nonzero(cond, as_tuple=True)``."""
    if input is None and other is None:
        return _C.nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where(): expected both 'input' and 'other' or neither")
    return _C._where3(condition, input, other)


def broadcast_shapes(*shapes):
    """The shape that tensors of ``shapes`` broadcast to, without making tensors (as
    ``torch.broadcast_shapes``); ints count as 1-d shapes."""
    import builtins

    from ._size import Size
    dims = []
    for i, s in enumerate(shapes):
        if isinstance(s, int) or (hasattr(s, "__index__") and not isinstance(s, (tuple, list))):
            s = (s,)
        try:
            if isinstance(s, (str, bytes)):
                raise TypeError
            s = tuple(int(v) for v in s)
        except (TypeError, ValueError):
            raise TypeError(f"broadcast_shapes(): argument {i} must be a tuple of ints or an int, "
                            f"not {type(s).__name__}") from None
        if builtins.any(v < 0 for v in s):
            raise RuntimeError(f"Trying to create tensor with negative dimension "
                               f"{builtins.min(s)}: {list(s)}")
        dims.append(s)
    ndim = builtins.max((len(s) for s in dims), default=0)
    out = [1] * ndim
    owner = [None] * ndim
    for i, s in enumerate(dims):
        for k, v in enumerate(s):
            j = ndim - len(s) + k
            if v == 1:
                continue
            if out[j] == 1:
                out[j], owner[j] = v, i
            elif out[j] != v:
                raise RuntimeError(
                    "Shape mismatch: objects cannot be broadcast to a single shape. Mismatch is "
                    f"between arg {owner[j]} and arg {i}: {list(dims[owner[j]])} vs {list(s)} at "
                    f"dimension {j - ndim}")
    return Size(out)


__all__.append("broadcast_shapes")
