"""DLPack exchange, as ``torch.utils.dlpack``.

``to_dlpack(t)`` returns a legacy ``"dltensor"`` capsule (what consumers of the
pre-1.0 API expect); ``from_dlpack`` accepts a capsule of either version or any
object with ``__dlpack__`` and shares its memory.
"""
from .. import _C

__all__ = ["to_dlpack", "from_dlpack"]


def to_dlpack(tensor):
    """A DLPack capsule sharing ``tensor``'s memory (consumable once)."""
    if not isinstance(tensor, _C.Tensor):
        raise TypeError(f"to_dlpack: expected a Tensor, got {type(tensor).__name__}")
    if tensor.is_sparse:  # PyTorch's error: a sparse tensor has no data pointer to share
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")
    return tensor.__dlpack__()


from_dlpack = _C.from_dlpack
