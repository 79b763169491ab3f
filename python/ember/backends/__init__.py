"""Backend settings and queries, as ``torch.backends``."""
from . import cpu, cuda, cudnn, mkldnn  # noqa: F401
