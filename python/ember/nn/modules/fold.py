"""torch.nn.modules.fold's path to Fold and Unfold (defined in resample.py)."""
from .resample import (  # noqa: F401
    Fold,
    Unfold,
)

__all__ = ["Fold", "Unfold"]
