"""ember.utils.tensorboard: SummaryWriter writing TensorBoard event files.

Needs the ``tensorboard`` package (its protobuf messages); ``pip install ember[tensorboard]``.
"""
try:
    import tensorboard  # noqa: F401
except ImportError as e:
    raise ImportError("ember.utils.tensorboard needs the tensorboard package: pip install tensorboard") from e

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "SummaryWriter"]
