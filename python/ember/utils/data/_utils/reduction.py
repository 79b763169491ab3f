"""Pickling ember tensors between processes through shared memory.

Registered with multiprocessing's ForkingPickler (what its queues use): a CPU tensor is
moved into shared memory (Tensor.share_memory_(), Note [Shared-memory storage] in
csrc/ember/data/shared_memory.h) and pickled as its fd — sent over a Unix socket by
multiprocessing's resource sharer — plus its geometry. No tensor bytes go through the pipe.
"""
from multiprocessing.reduction import DupFd, ForkingPickler

import ember


def _rebuild_shared(df, nbytes, dtype, sizes, strides, offset, requires_grad):
    t = ember._C._data_from_shared_fd(df.detach(), nbytes, dtype, sizes, strides, offset)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _reduce_tensor(t):
    if t.device.type != "cpu":
        return t.__reduce_ex__(2)
    if t.requires_grad and not t.is_leaf:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, "
                           "since autograd does not support crossing process boundaries.  "
                           "If you just want to transfer the data, call detach() on the tensor "
                           "before serializing (e.g., putting it on the queue).")
    t.share_memory_()
    df = DupFd(ember._C._data_shared_fd(t))
    return (_rebuild_shared, (df, ember._C._data_storage_nbytes(t), t.dtype, tuple(t.shape),
                              tuple(t.stride()), t.storage_offset(), t.requires_grad))


def init_reductions():
    ForkingPickler.register(ember.Tensor, _reduce_tensor)
