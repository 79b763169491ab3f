"""Process groups and collectives: torch.distributed's API on ember's engines (Gloo for CPU
tensors, NCCL for GPU tensors). The operations themselves are C++ (_C._distributed); this
module maps PyTorch's signatures, group ranks and defaults onto them."""
import os
import warnings
from datetime import timedelta

import ember
from ember._C import _distributed as _d

from . import rendezvous as _rdzv
from .constants import default_pg_timeout

ReduceOp = _d.ReduceOp
ProcessGroup = _d.ProcessGroup
Work = _d.Work

__all__ = [
    "Backend", "GroupMember", "group", "P2POp", "ReduceOp", "init_process_group",
    "destroy_process_group", "is_initialized", "is_available", "is_gloo_available",
    "is_nccl_available", "is_mpi_available", "is_ucc_available", "is_backend_available",
    "is_torchelastic_launched", "get_rank", "get_world_size", "get_backend", "new_group",
    "get_process_group_ranks", "get_group_rank", "get_global_rank", "barrier", "monitored_barrier",
    "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
    "reduce_scatter_tensor", "gather", "scatter", "all_to_all", "all_to_all_single", "send",
    "recv", "isend", "irecv", "batch_isend_irecv", "all_reduce_coalesced",
]


class Backend(str):
    """A backend name: ``Backend("GLOO") == "gloo"``; unknown names raise ValueError."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"
    UCC = "ucc"
    backend_list = [UNDEFINED, GLOO, NCCL, UCC, MPI]

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got {type(name)}")
        value = name.lower()
        if value not in cls.backend_list:
            raise ValueError(f"Invalid backend: '{name}'")
        return super().__new__(cls, value)


class GroupMember:
    """``GroupMember.WORLD`` is the default group; NON_GROUP_MEMBER marks a process outside a
    group made by new_group."""

    WORLD = None
    NON_GROUP_MEMBER = object()


class group:  # noqa: N801 - torch.distributed.group
    WORLD = None


class _World:
    def __init__(self):
        self.default_pg = None
        self.store = None  # the job's store (unprefixed)
        self.pg_info = {}  # pg -> (backend, global ranks in group order, name)
        self.group_count = 0


_world = _World()


def is_available():
    """True: ember.distributed is part of every build (its gloo backend is optional)."""
    return True


def is_initialized():
    return _world.default_pg is not None


def _import_gloo():
    try:
        from ember import _C_gloo  # noqa: F401  (registers the "gloo" backend)
    except ImportError:
        return False
    return True


def is_gloo_available():
    return _import_gloo() and _d._backend_registered("gloo")


def is_nccl_available():
    if not _d._backend_registered("nccl"):
        try:
            ember.cuda._lazy()  # imports _C_cuda, which registers "nccl"
        except Exception:  # noqa: BLE001 - no CUDA backend in this build
            return False
    return _d._backend_registered("nccl")


def is_mpi_available():
    return False


def is_ucc_available():
    return False


def is_backend_available(backend):
    b = str(backend).lower()
    return {"gloo": is_gloo_available, "nccl": is_nccl_available}.get(b, lambda: False)()


def is_torchelastic_launched():
    """True in a worker started by emberrun / ``python -m ember.distributed.run``."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def _default_pg():
    if _world.default_pg is None:
        raise ValueError(
            "Default process group has not been initialized, please make sure to call "
            "init_process_group.")
    return _world.default_pg


def _resolve(group_arg):
    pg = _default_pg() if group_arg is None else group_arg
    if pg is GroupMember.NON_GROUP_MEMBER:
        return None
    if pg not in _world.pg_info:
        raise ValueError(f"Invalid process group specified: {pg!r}")
    return pg


def _timeout_seconds(timeout):
    if timeout is None:
        return default_pg_timeout.total_seconds()
    if isinstance(timeout, timedelta):
        return timeout.total_seconds()
    raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {type(timeout)}")


def _check_backend(backend):
    b = Backend(backend if backend is not None else "gloo")
    if b == Backend.GLOO:
        if not is_gloo_available():
            raise RuntimeError(
                "ember was built without Gloo, so ember.distributed has no 'gloo' backend. "
                "Install Debian's libgloo-dev package (tools/install_deps.sh does) and reinstall "
                "ember (pip install .).")
    elif b == Backend.NCCL:
        if not is_nccl_available():
            raise RuntimeError(
                "ember.distributed's 'nccl' backend needs ember's CUDA backend (ember.cuda); this "
                "build or machine has none. Use backend='gloo' for CPU tensors.")
    elif b in (Backend.MPI, Backend.UCC):
        raise RuntimeError(f"Distributed package doesn't have {b.upper()} built in")
    else:
        raise ValueError(f"Invalid backend: '{backend}'")
    return b


def _local_address(store):
    addr = os.environ.get("EMBER_LOCAL_ADDR")
    if addr:
        return addr
    inner = store
    while isinstance(inner, _d.PrefixStore):
        inner = inner.underlying_store
    if isinstance(inner, _d.TCPStore):
        return inner._local_address()
    return "127.0.0.1"


def _device_index(backend, device_id):
    if backend != Backend.NCCL:
        return -1
    if device_id is not None:
        return device_id.index if hasattr(device_id, "index") else int(device_id)
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"]) % max(1, ember.cuda.device_count())
    return ember.cuda.current_device()


def _new_pg(backend, store, rank, size, timeout_s, name, ranks, device_index):
    prefixed = _d.PrefixStore(f"ember_pg/{name}", store)
    pg = _d._new_process_group(backend, prefixed, rank, size, timeout_s, _local_address(store),
                               name, device_index)
    _world.pg_info[pg] = (Backend(backend), list(ranks), name)
    return pg


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Initializes the default process group (torch.distributed.init_process_group).

    Peers are found through ``store`` (with ``rank`` and ``world_size``) or ``init_method``:
    ``"env://"`` (the default: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE), ``"tcp://host:port"``
    or ``"file:///path"``. ``timeout`` (a timedelta, default 30 minutes) bounds every collective:
    a peer that dies or hangs makes the others raise DistBackendError naming it."""
    if _world.default_pg is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None and init_method is not None:
        raise ValueError("Cannot specify both init_method and store.")
    b = _check_backend(backend)
    timeout_s = _timeout_seconds(timeout)
    if store is not None:
        if world_size <= 0:
            raise ValueError("world_size must be positive if using store")
        if rank < 0:
            raise ValueError("rank must be non-negative if using store")
    else:
        store, rank, world_size = _rdzv.rendezvous(init_method or "env://", rank, world_size,
                                                   timedelta(seconds=timeout_s))
    if rank >= world_size:
        raise ValueError(f"rank {rank} is out of range for world_size {world_size}")
    pg = _new_pg(b, store, rank, world_size, timeout_s, group_name or "0", range(world_size),
                 _device_index(b, device_id))
    _world.default_pg = pg
    _world.store = store
    GroupMember.WORLD = group.WORLD = pg


def destroy_process_group(group=None):
    """Shuts down ``group`` (default: every group, leaving the package uninitialized)."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    if group is None or group is _world.default_pg:
        for pg in list(_world.pg_info):
            pg._shutdown()
        _world.pg_info.clear()
        _world.default_pg = _world.store = None
        GroupMember.WORLD = ember.distributed.group.WORLD = None
        _world.group_count = 0
        return
    if group not in _world.pg_info:
        raise ValueError("Invalid process group specified")
    group._shutdown()
    del _world.pg_info[group]


def get_rank(group=None):
    """This process's rank in ``group`` (-1 outside it)."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _resolve(group).rank()


def get_world_size(group=None):
    """The number of processes in ``group`` (-1 outside it)."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _resolve(group).size()


def get_backend(group=None):
    if group is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("Invalid process group specified")
    return _world.pg_info[_resolve(group)][0]


def get_process_group_ranks(group):
    """The global ranks of ``group``'s members, in group-rank order."""
    return list(_world.pg_info[_resolve(group)][1])


def get_group_rank(group, global_rank):
    ranks = get_process_group_ranks(group)
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return ranks.index(global_rank)


def get_global_rank(group, group_rank):
    ranks = get_process_group_ranks(group)
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return ranks[group_rank]


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None):
    """A group of some of the processes. Every process must call it (with the same ranks);
    the others receive GroupMember.NON_GROUP_MEMBER."""
    world = _default_pg()
    world_backend = _world.pg_info[world][0]
    b = _check_backend(backend if backend is not None else world_backend)
    size = world.size()
    ranks = sorted(range(size) if ranks is None else {int(r) for r in ranks})
    for r in ranks:
        if not 0 <= r < size:
            raise ValueError(f"Invalid rank {r} for new_group: the world has ranks 0 to {size - 1}")
    _world.group_count += 1
    name = str(_world.group_count)
    me = world.rank()
    timeout_s = _timeout_seconds(timeout) if timeout is not None else world._timeout_s
    if me not in ranks:
        return GroupMember.NON_GROUP_MEMBER
    return _new_pg(b, _world.store, ranks.index(me), len(ranks), timeout_s, name, ranks,
                   _device_index(b, None))


# ---- argument checks (PyTorch's TypeErrors) ----

def _check_tensor(t, name):
    if not isinstance(t, ember.Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"ember.Tensor but got {type(t)} instead.")


def _check_tensor_list(ts, name):
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, ember.Tensor) for t in ts):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"List[ember.Tensor] but got {type(ts)} instead.")


def _check_op(op):
    if not isinstance(op, ReduceOp):
        raise ValueError(f"Invalid ``op``. Expected ``op`` to be of type ``ember.distributed."
                         f"ReduceOp``, but got {type(op)} instead.")


def _warn_not_in_group(op):
    warnings.warn(f"Running {op} on global rank {get_rank()} which does not belong to the given "
                  f"group.", stacklevel=3)


def _group_peer(pg, global_rank, group_rank, what):
    """A peer's rank in `pg` from its global rank (or group_rank)."""
    if group_rank is not None:
        if global_rank is not None:
            raise ValueError(f"Can only specify one of {what} and group_{what}")
        return int(group_rank)
    if global_rank is None:
        return 0 if what in ("src", "dst") else None
    ranks = _world.pg_info[pg][1]
    if int(global_rank) not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg}")
    return ranks.index(int(global_rank))


def _finish(work, async_op):
    if async_op:
        return work
    work.wait()
    return None


# ---- collectives ----

def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``tensor`` across the group in place (SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR,
    BXOR); every process gets the result."""
    _check_tensor(tensor, "tensor")
    _check_op(op)
    pg = _resolve(group)
    if pg is None:
        return _warn_not_in_group("all_reduce")
    return _finish(pg._allreduce(tensor, op, 0.0, async_op), async_op)


def all_reduce_coalesced(tensors, op=ReduceOp.SUM, group=None, async_op=False):
    """all_reduce of several tensors as one collective (deprecated in PyTorch, kept here)."""
    if isinstance(tensors, ember.Tensor):
        tensors = [tensors]
    _check_tensor_list(tensors, "tensor")
    _check_op(op)
    pg = _resolve(group)
    if pg is None:
        return _warn_not_in_group("all_reduce_coalesced")
    return _finish(pg._allreduce_coalesced(list(tensors), op, 0.0, async_op), async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copies ``tensor`` of rank ``src`` (a global rank) into ``tensor`` on every process."""
    _check_tensor(tensor, "tensor")
    pg = _resolve(group)
    if pg is None:
        return _warn_not_in_group("broadcast")
    root = _group_peer(pg, src, group_src, "src")
    return _finish(pg._broadcast(tensor, root, 0.0, async_op), async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduces ``tensor`` across the group; only rank ``dst`` receives the result."""
    _check_tensor(tensor, "tensor")
    _check_op(op)
    pg = _resolve(group)
    if pg is None:
        return _warn_not_in_group("reduce")
    root = _group_peer(pg, dst, group_dst, "dst")
    return _finish(pg._reduce(tensor, root, op, 0.0, async_op), async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Gathers ``tensor`` from every process into ``tensor_list`` (one entry per rank)."""
    _check_tensor_list(tensor_list, "tensor_list")
    _check_tensor(tensor, "tensor")
    pg = _resolve(group)
    if pg is None:
        return _warn_not_in_group("all_gather")
    return _finish(pg._allgather(list(tensor_list), tensor, 0.0, async_op), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Gathers every process's ``input_tensor`` into ``output_tensor`` (concatenated along
    dim 0, or stacked: world_size times the input's elements)."""
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    pg = _resolve(group)
    if pg is None:
        return _warn_not_in_group("all_gather_into_tensor")
    return _finish(pg._allgather_into_tensor(output_tensor, input_tensor, 0.0, async_op), async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``input_list[i]`` across the group into rank i's ``output``."""
    _check_tensor(output, "output")
    _check_tensor_list(input_list, "input_list")
    _check_op(op)
    pg = _resolve(group)
    if pg is None:
        return _warn_not_in_group("reduce_scatter")
    return _finish(pg._reduce_scatter(output, list(input_list), op, 0.0, async_op), async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``input`` across the group; rank i keeps the i-th of world_size equal parts."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    _check_op(op)
    pg = _resolve(group)
    if pg is None:
        return _warn_not_in_group("reduce_scatter_tensor")
    return _finish(pg._reduce_scatter_tensor(output, input, op, 0.0, async_op), async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Gathers ``tensor`` from every process into ``gather_list`` on rank ``dst``."""
    _check_tensor(tensor, "tensor")
    pg = _resolve(group)
    if pg is None:
        return _warn_not_in_group("gather")
    root = _group_peer(pg, dst, group_dst, "dst")
    if pg.rank() == root:
        if gather_list is None:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        _check_tensor_list(gather_list, "gather_list")
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    outs = list(gather_list) if pg.rank() == root else []
    return _finish(pg._gather(outs, tensor, root, 0.0, async_op), async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Sends ``scatter_list[i]`` of rank ``src`` to rank i's ``tensor``."""
    _check_tensor(tensor, "tensor")
    pg = _resolve(group)
    if pg is None:
        return _warn_not_in_group("scatter")
    root = _group_peer(pg, src, group_src, "src")
    if pg.rank() == root:
        if not scatter_list:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        _check_tensor_list(scatter_list, "scatter_list")
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    ins = list(scatter_list) if pg.rank() == root else []
    return _finish(pg._scatter(tensor, ins, root, 0.0, async_op), async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Sends ``input_tensor_list[i]`` to rank i; ``output_tensor_list[j]`` receives rank j's."""
    _check_tensor_list(output_tensor_list, "output_tensor_list")
    _check_tensor_list(input_tensor_list, "input_tensor_list")
    pg = _resolve(group)
    if pg is None:
        return _warn_not_in_group("all_to_all")
    return _finish(pg._alltoall(list(output_tensor_list), list(input_tensor_list), 0.0, async_op),
                   async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    """all_to_all on one tensor split along dim 0 (equally, or by the split sizes)."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg = _resolve(group)
    if pg is None:
        return _warn_not_in_group("all_to_all_single")
    outs = [int(s) for s in (output_split_sizes or [])]
    ins = [int(s) for s in (input_split_sizes or [])]
    return _finish(pg._alltoall_base(output, input, outs, ins, 0.0, async_op), async_op)


def barrier(group=None, async_op=False, device_ids=None):
    """Waits until every process of the group reached the barrier."""
    pg = _resolve(group)
    if pg is None:
        return _warn_not_in_group("barrier")
    return _finish(pg._barrier(0.0, async_op), async_op)


_MONITORED_BARRIER_TAG = 0x7FFF_FF00


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """A barrier that names the ranks that did not reach it within ``timeout`` (rank 0
    collects a message from every other rank, then answers each)."""
    pg = _resolve(group)
    if pg is None:
        return _warn_not_in_group("monitored_barrier")
    if timeout is None:
        timeout = timedelta(seconds=pg._timeout_s)
    ms = int(_timeout_seconds(timeout) * 1000)
    me, size = pg.rank(), pg.size()
    token = ember.zeros(1, dtype=ember.int32)
    ranks = _world.pg_info[pg][1]
    if me != 0:
        pg._send(token, 0, _MONITORED_BARRIER_TAG).wait()
        try:
            pg._recv(token, 0, _MONITORED_BARRIER_TAG).wait(timeout)
        except RuntimeError:
            raise RuntimeError(
                f"Rank {ranks[me]} successfully reached monitoredBarrier, but received errors while "
                f"waiting for send/recv from rank {ranks[0]}. Please check rank {ranks[0]} logs "
                f"for faulty rank.") from None
        return None
    import time

    deadline = time.monotonic() + ms / 1000.0
    works = {r: pg._recv(ember.zeros(1, dtype=ember.int32), r, _MONITORED_BARRIER_TAG)
             for r in range(1, size)}
    failed = []
    for r, w in works.items():
        left = max(deadline - time.monotonic(), 0.001)
        try:
            w.wait(timedelta(seconds=left))
        except RuntimeError:
            failed.append(ranks[r])
            if not wait_all_ranks:
                raise RuntimeError(f"Rank {ranks[r]} failed to pass monitoredBarrier in {ms} ms") from None
    if failed:
        raise RuntimeError(f"Ranks {', '.join(map(str, failed))} failed to pass monitoredBarrier in "
                           f"{ms} ms")
    for r in range(1, size):
        pg._send(token, r, _MONITORED_BARRIER_TAG).wait()
    return None


# Point to point (isend, irecv, send, recv, P2POp, batch_isend_irecv) lives in _p2p.py.
from ._p2p import P2POp, batch_isend_irecv, irecv, isend, recv, send  # noqa: E402,F401
