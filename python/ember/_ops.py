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
