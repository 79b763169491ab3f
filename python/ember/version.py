"""Build information."""
from . import _C

__version__ = "0.1.0"
#: The CUDA toolkit version the build used, or None for a CPU-only build.
cuda = _C._cuda_version or None
