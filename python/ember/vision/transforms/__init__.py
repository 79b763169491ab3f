"""torchvision.transforms for ember: PIL images and [..., C, H, W] tensors."""
from . import functional  # noqa: F401
from .transforms import *  # noqa: F401,F403
from .transforms import __all__  # noqa: F401
