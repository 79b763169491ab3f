"""Backend settings and queries, as ``torch.backends``."""
from . import cpu, cuda, cudnn  # noqa: F401
