"""ember.multiprocessing: Python's multiprocessing, with ember tensors crossing process
boundaries through shared memory (torch.multiprocessing).

Once this module is imported, a CPU tensor put on a Queue, passed to a Process or returned by a
Pool task is moved into shared memory (``Tensor.share_memory_()``, an anonymous memfd) and sent
as its file descriptor: the receiver maps the same pages, so no bytes are copied and writes are
seen by both sides (the Hogwild pattern: ``model.share_memory()``, then several processes train
it). ``spawn`` starts ``nprocs`` processes running ``fn(i, *args)`` and re-raises the first
failure in the parent, with the child's traceback, after stopping the others."""
import multiprocessing
from multiprocessing import *  # noqa: F401,F403

from .reductions import init_reductions
from .spawn import (  # noqa: F401
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    SpawnContext,
    spawn,
    start_processes,
)

__all__ = list(multiprocessing.__all__) + [
    "spawn", "start_processes", "ProcessContext", "SpawnContext", "ProcessException",
    "ProcessRaisedException", "ProcessExitedException", "get_sharing_strategy",
    "set_sharing_strategy", "get_all_sharing_strategies",
]

_sharing_strategy = "file_descriptor"


def get_all_sharing_strategies():
    """The ways tensors can be shared: only ``"file_descriptor"`` (memfd, sent over a Unix
    socket; nothing is left behind in /dev/shm)."""
    return {"file_descriptor"}


def get_sharing_strategy():
    return _sharing_strategy


def set_sharing_strategy(new_strategy):
    """Accepts ``"file_descriptor"`` (the only strategy); ``"file_system"`` raises, since
    ember never names shared memory in the file system."""
    if new_strategy not in get_all_sharing_strategies():
        raise ValueError(f"sharing strategy {new_strategy!r} is not supported; ember shares "
                         f"tensors by file descriptor only")


init_reductions()
