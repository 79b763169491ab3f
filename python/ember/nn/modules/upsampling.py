"""torch.nn.modules.upsampling's path to the upsampling layers (defined in resample.py)."""
from .resample import (  # noqa: F401
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]
