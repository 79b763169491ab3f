"""torchvision.ops: the layer blocks the model zoo is built from."""
from .misc import Conv2dNormActivation, Conv3dNormActivation, FrozenBatchNorm2d  # noqa: F401

__all__ = ["Conv2dNormActivation", "Conv3dNormActivation", "FrozenBatchNorm2d"]
