"""torch.nn.modules.instancenorm's path to the instance norm layers (defined in normalization.py)."""
from .normalization import (  # noqa: F401
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    _InstanceNorm,
)

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]
