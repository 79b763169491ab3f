"""Point-to-point operations of ember.distributed: isend / irecv (a Work each), send / recv
(waiting), and batch_isend_irecv of P2POps."""
from . import distributed_c10d as _c

__all__ = ["P2POp", "batch_isend_irecv", "irecv", "isend", "recv", "send"]


def _p2p_peer(pg, global_rank, group_rank, what):
    if global_rank is None and group_rank is None:
        raise ValueError(f"{what} rank must be specified")
    return _c._group_peer(pg, global_rank, group_rank, what)


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Sends ``tensor`` to rank ``dst`` asynchronously; returns a Work."""
    _c._check_tensor(tensor, "tensor")
    pg = _c._resolve(group)
    if pg is None:
        return _c._warn_not_in_group("isend")
    return pg._send(tensor, _p2p_peer(pg, dst, group_dst, "dst"), int(tag))


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receives into ``tensor`` from rank ``src`` (any rank when None); returns a Work."""
    _c._check_tensor(tensor, "tensor")
    pg = _c._resolve(group)
    if pg is None:
        return _c._warn_not_in_group("irecv")
    peer = -1 if src is None and group_src is None else _c._group_peer(pg, src, group_src, "src")
    return pg._recv(tensor, peer, int(tag))


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Sends ``tensor`` to rank ``dst`` and waits until it is sent."""
    w = isend(tensor, dst, group, tag, group_dst)
    if w is not None:
        w.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receives into ``tensor`` from ``src`` (any rank when None); returns the sender's rank."""
    pg = _c._resolve(group)
    w = irecv(tensor, src, group, tag, group_src)
    if w is None:
        return -1
    w.wait()
    if src is None and group_src is None:
        return _c._world.pg_info[pg][1][w.source_rank()]
    return src if src is not None else _c._world.pg_info[pg][1][group_src]


class P2POp:
    """One send or receive of batch_isend_irecv: ``P2POp(isend, tensor, peer)``."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type "
                             "``ember.distributed.isend`` or ``ember.distributed.irecv``.")
        _c._check_tensor(tensor, "tensor")
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag
        self.group_peer = group_peer

    def __repr__(self):
        return f"P2POp(op={self.op.__name__}, peer={self.peer}, tag={self.tag})"


def batch_isend_irecv(p2p_op_list):
    """Posts every send and receive of the list; returns their Works."""
    if not isinstance(p2p_op_list, list) or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``ember.distributed.P2POp``.")
    groups = {id(p.group) for p in p2p_op_list}
    if len(groups) > 1:
        raise ValueError("All ops need to use the same group.")
    out = []
    for p in p2p_op_list:
        if p.op is isend:
            out.append(isend(p.tensor, p.peer, p.group, p.tag, p.group_peer))
        else:
            out.append(irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer))
    return out
