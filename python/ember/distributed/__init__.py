"""ember.distributed: data-parallel training across processes and machines (torch.distributed's
API). Collectives run on real engines: Gloo for CPU tensors (the optional module _C_gloo, built
when Debian's libgloo-dev is installed) and NCCL for GPU tensors (loaded at run time by the CUDA
backend). Processes meet through a store (TCPStore, FileStore, HashStore, PrefixStore);
``python -m ember.distributed.run`` (or ``emberrun``) starts them. A peer that dies or hangs
makes the others raise within the group's timeout, naming the rank
(Note [Naming the failing rank] in csrc/ember/distributed/process_group.h)."""
from ember._C import _distributed as _d

from ._object_collectives import (  # noqa: F401
    all_gather_object,
    broadcast_object_list,
    gather_object,
    scatter_object_list,
)
from .distributed_c10d import (  # noqa: F401
    Backend,
    GroupMember,
    P2POp,
    ProcessGroup,
    ReduceOp,
    Work,
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    all_reduce_coalesced,
    all_to_all,
    all_to_all_single,
    barrier,
    batch_isend_irecv,
    broadcast,
    destroy_process_group,
    gather,
    get_backend,
    get_global_rank,
    get_group_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    irecv,
    is_available,
    is_backend_available,
    is_gloo_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    is_torchelastic_launched,
    is_ucc_available,
    isend,
    monitored_barrier,
    new_group,
    recv,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
    send,
)

Store = _d.Store
TCPStore = _d.TCPStore
FileStore = _d.FileStore
HashStore = _d.HashStore
PrefixStore = _d.PrefixStore
GradBucket = _d.GradBucket
Reducer = _d.Reducer
BuiltinCommHookType = _d.BuiltinCommHookType
DistError = _d.DistError
DistBackendError = _d.DistBackendError
DistStoreError = _d.DistStoreError
DistNetworkError = _d.DistNetworkError
_compute_bucket_assignment_by_size = _d._compute_bucket_assignment_by_size
_broadcast_coalesced = _d._broadcast_coalesced
_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024


def _work_get_future(self):
    """A Future completed with the operation's output tensors when it finishes."""
    from ember.futures import Future

    return Future._from_work(self)


Work.get_future = _work_get_future
