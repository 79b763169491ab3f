"""How ember tensors are pickled between processes (registered with multiprocessing's
ForkingPickler, which its queues, pipes, pools and spawned processes use).

A CPU tensor is moved into shared memory (Note [Shared-memory storage] in
csrc/ember/data/shared_memory.h) and pickled as its storage's file descriptor plus its view
geometry; the fd travels through multiprocessing's own fd passing (DupFd). The receiver maps the
storage once per process (a cache keyed by the memfd's inode), so several tensors sent from one
storage are views of one storage again. Parameters stay Parameters; requires_grad travels;
a non-leaf that requires grad is refused, as in PyTorch."""
import os
import threading
import weakref
from multiprocessing.reduction import DupFd, ForkingPickler

import ember

__all__ = ["init_reductions", "reduce_tensor"]

_cache_lock = threading.Lock()
# (st_dev, st_ino) of a received memfd -> the uint8 tensor over its mapping, while it lives.
_storage_cache = weakref.WeakValueDictionary()


def _storage_base(fd, nbytes):
    st = os.fstat(fd)
    key = (st.st_dev, st.st_ino)
    with _cache_lock:
        base = _storage_cache.get(key)
        if base is not None and ember._C._data_storage_nbytes(base) >= nbytes:
            os.close(fd)
            return base
        base = ember._C._data_from_shared_fd(fd, nbytes, ember.uint8, (nbytes,), (1,), 0)
        _storage_cache[key] = base
        return base


def _rebuild_tensor(df, nbytes, dtype, sizes, strides, offset, requires_grad):
    base = _storage_base(df.detach(), nbytes)
    t = ember._C._distributed._view_storage(base, dtype, sizes, strides, offset)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data, requires_grad):
    return ember.nn.Parameter(data, requires_grad)


def reduce_tensor(t):
    if t.requires_grad and not t.is_leaf:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, "
                           "since autograd does not support crossing process boundaries.  "
                           "If you just want to transfer the data, call detach() on the tensor "
                           "before serializing (e.g., putting it on the queue).")
    if t.device.type != "cpu":
        return t.__reduce_ex__(2)  # device tensors travel as bytes
    t.share_memory_()
    df = DupFd(ember._C._data_shared_fd(t))
    return (_rebuild_tensor, (df, ember._C._data_storage_nbytes(t), t.dtype, tuple(t.shape),
                              tuple(t.stride()), t.storage_offset(), t.requires_grad))


def _reduce_parameter(p):
    data = p.detach()
    return (_rebuild_parameter, (data, p.requires_grad))


def init_reductions():
    ForkingPickler.register(ember.Tensor, reduce_tensor)
    ForkingPickler.register(ember.nn.Parameter, _reduce_parameter)
