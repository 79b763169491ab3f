"""torch.nn.modules.flatten's path to Flatten and Unflatten (defined in linear.py)."""
from .linear import (  # noqa: F401
    Flatten,
    Unflatten,
)

__all__ = ["Flatten", "Unflatten"]
