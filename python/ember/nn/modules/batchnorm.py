"""torch.nn.modules.batchnorm's path to the batch norm layers (defined in normalization.py and,
for SyncBatchNorm, sync_batchnorm.py)."""
from .normalization import (  # noqa: F401
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    _BatchNorm,
    _NormBase,
)
from .sync_batchnorm import SyncBatchNorm  # noqa: F401

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"]
