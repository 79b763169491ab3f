"""torch.nn.modules.pixelshuffle's path to PixelShuffle and PixelUnshuffle (defined in resample.py)."""
from .resample import (  # noqa: F401
    PixelShuffle,
    PixelUnshuffle,
)

__all__ = ["PixelShuffle", "PixelUnshuffle"]
