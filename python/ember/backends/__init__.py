"""Backend settings and queries, as ``torch.backends``."""
from . import cpu  # noqa: F401
