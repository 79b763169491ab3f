"""ember.nn.parallel: DistributedDataParallel (one process per replica, ember.distributed) and
DataParallel (one process, a replica per device, threads), with the functional pieces
data_parallel is made of: replicate, scatter, parallel_apply, gather."""
from .data_parallel import DataParallel, data_parallel  # noqa: F401
from .distributed import DistributedDataParallel  # noqa: F401
from .parallel_apply import parallel_apply  # noqa: F401
from .replicate import replicate  # noqa: F401
from .scatter_gather import gather, scatter  # noqa: F401

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel", "gather", "parallel_apply",
           "replicate", "scatter"]
