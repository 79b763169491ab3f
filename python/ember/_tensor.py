"""Tensor methods written in Python (printing lives in _tensor_str)."""
from . import _C

Tensor = _C.Tensor
