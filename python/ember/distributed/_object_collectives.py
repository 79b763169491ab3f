"""Collectives of picklable Python objects (torch.distributed's *_object functions): each
object is pickled into a uint8 tensor; sizes travel first, then the bytes, padded to the
largest."""
import io
import pickle

import numpy as np

import ember

from . import distributed_c10d as c10d

__all__ = ["broadcast_object_list", "all_gather_object", "gather_object", "scatter_object_list"]


def _to_tensor(obj):
    buf = io.BytesIO()
    pickle.Pickler(buf).dump(obj)
    data = buf.getvalue()
    return ember.from_numpy(np.frombuffer(data, dtype=np.uint8).copy()), len(data)


def _from_tensor(t, size):
    return pickle.loads(t[:size].numpy().tobytes())


def _device(group, device):
    if device is not None:
        return ember.device(device)
    return ember.device("cuda") if c10d.get_backend(group) == "nccl" else ember.device("cpu")


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Replaces ``object_list`` (same length everywhere) with rank ``src``'s objects."""
    pg = c10d._resolve(group)
    if pg is None:
        return c10d._warn_not_in_group("broadcast_object_list")
    root = c10d._group_peer(pg, src, group_src, "src")
    dev = _device(group, device)
    n = len(object_list)
    if pg.rank() == root:
        pairs = [_to_tensor(o) for o in object_list]
        sizes = ember.tensor([s for _, s in pairs], dtype=ember.int64)
    else:
        sizes = ember.zeros(n, dtype=ember.int64)
    sizes = sizes.to(dev)
    c10d.broadcast(sizes, group=group, group_src=root)
    sizes = sizes.cpu().tolist()
    if pg.rank() == root:
        data = ember.cat([t for t, _ in pairs]) if pairs else ember.zeros(0, dtype=ember.uint8)
    else:
        data = ember.empty(sum(sizes), dtype=ember.uint8)
    data = data.to(dev)
    c10d.broadcast(data, group=group, group_src=root)
    if pg.rank() != root:
        data = data.cpu()
        off = 0
        for i, s in enumerate(sizes):
            object_list[i] = _from_tensor(data[off:off + s], s)
            off += s


def _gather_sizes(pg, group, tensor, size, dev):
    world = pg.size()
    local = ember.tensor([size], dtype=ember.int64, device=dev)
    sizes = [ember.zeros(1, dtype=ember.int64, device=dev) for _ in range(world)]
    c10d.all_gather(sizes, local, group=group)
    sizes = [int(s.item()) for s in sizes]
    padded = ember.zeros(max(sizes), dtype=ember.uint8)
    padded[:size] = tensor
    return sizes, padded.to(dev)


def all_gather_object(object_list, obj, group=None):
    """Fills ``object_list`` (one slot per rank) with every process's ``obj``."""
    pg = c10d._resolve(group)
    if pg is None:
        return c10d._warn_not_in_group("all_gather_object")
    dev = _device(group, None)
    t, size = _to_tensor(obj)
    sizes, padded = _gather_sizes(pg, group, t, size, dev)
    outs = [ember.empty(max(sizes), dtype=ember.uint8, device=dev) for _ in sizes]
    c10d.all_gather(outs, padded, group=group)
    for i, (o, s) in enumerate(zip(outs, sizes)):
        object_list[i] = _from_tensor(o.cpu(), s)


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """Gathers every process's ``obj`` into ``object_gather_list`` on rank ``dst``."""
    pg = c10d._resolve(group)
    if pg is None:
        return c10d._warn_not_in_group("gather_object")
    root = c10d._group_peer(pg, dst, group_dst, "dst")
    dev = _device(group, None)
    t, size = _to_tensor(obj)
    sizes, padded = _gather_sizes(pg, group, t, size, dev)
    mine = pg.rank() == root
    if mine and object_gather_list is None:
        raise ValueError("Argument ``object_gather_list`` must be specified on destination rank.")
    outs = [ember.empty(max(sizes), dtype=ember.uint8, device=dev) for _ in sizes] if mine else None
    c10d.gather(padded, outs, group=group, group_dst=root)
    if mine:
        for i, (o, s) in enumerate(zip(outs, sizes)):
            object_gather_list[i] = _from_tensor(o.cpu(), s)


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None,
                        group=None, group_src=None):
    """Sends ``scatter_object_input_list[i]`` of rank ``src`` to rank i, into
    ``scatter_object_output_list[0]``."""
    pg = c10d._resolve(group)
    if pg is None:
        return c10d._warn_not_in_group("scatter_object_list")
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at "
                         "least 1.")
    root = c10d._group_peer(pg, src, group_src, "src")
    dev = _device(group, None)
    mine = pg.rank() == root
    if mine:
        pairs = [_to_tensor(o) for o in scatter_object_input_list]
        longest = ember.tensor([max(s for _, s in pairs)], dtype=ember.int64)
    else:
        longest = ember.zeros(1, dtype=ember.int64)
    longest = longest.to(dev)
    c10d.broadcast(longest, group=group, group_src=root)
    n = int(longest.item())
    ins = None
    if mine:
        ins = []
        for t, s in pairs:
            p = ember.zeros(n, dtype=ember.uint8)
            p[:s] = t
            ins.append(p.to(dev))
        sizes_in = [ember.tensor([s], dtype=ember.int64, device=dev) for _, s in pairs]
    out = ember.empty(n, dtype=ember.uint8, device=dev)
    size_out = ember.zeros(1, dtype=ember.int64, device=dev)
    c10d.scatter(out, ins, group=group, group_src=root)
    c10d.scatter(size_out, sizes_in if mine else None, group=group, group_src=root)
    scatter_object_output_list[0] = _from_tensor(out.cpu(), int(size_out.item()))
