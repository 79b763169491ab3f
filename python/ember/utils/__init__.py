"""ember.utils: helpers mirroring ``torch.utils`` (dlpack; data arrives with its own issue)."""
from . import dlpack  # noqa: F401
