"""Every collective of ember.distributed on 2 and 4 ranks of the gloo backend (forked processes
on loopback), compared with NumPy: each rank's input is a known function of its rank, so the
expected result is computed here from all of them."""
import os
import threading

import numpy as np
import pytest
from dist_helpers import assert_close, run_ranks

import ember
import ember.distributed as dist

pytestmark = pytest.mark.skipif(not dist.is_gloo_available(), reason="built without Gloo")

NP = {ember.float32: np.float32, ember.float64: np.float64, ember.int64: np.int64,
      ember.int32: np.int32, ember.uint8: np.uint8, ember.bool: np.bool_, ember.float16: np.float16}
SHAPES = [(), (0,), (5,), (3, 4), (1000,)]


def data(rank, shape, dtype):
    n = int(np.prod(shape)) if shape else 1
    base = (np.arange(n) * 7 + 3 * rank + 1) % 11 - (0 if dtype in (ember.uint8, ember.bool) else 4)
    if dtype == ember.bool:
        base = (base + rank) % 3 == 0
    arr = base.astype(NP[dtype]).reshape(shape)
    return arr


def tensor(rank, shape, dtype):
    return ember.from_numpy(np.ascontiguousarray(data(rank, shape, dtype)))


REDUCE = {"SUM": np.add.reduce, "PRODUCT": np.multiply.reduce, "MIN": np.minimum.reduce,
          "MAX": np.maximum.reduce, "BAND": np.bitwise_and.reduce, "BOR": np.bitwise_or.reduce,
          "BXOR": np.bitwise_xor.reduce}


def expected_reduce(op, dtype, shape, world):
    stack = np.stack([data(r, shape, dtype) for r in range(world)])
    if op == "AVG":
        s = stack.astype(np.float64).sum(0) / world
        return s.astype(NP[dtype]) if dtype in (ember.float32, ember.float64, ember.float16) \
            else np.trunc(s).astype(NP[dtype])
    if dtype == ember.bool:
        return {"SUM": np.any, "MAX": np.any, "PRODUCT": np.all, "MIN": np.all,
                "BAND": np.all, "BOR": np.any, "BXOR": lambda s, axis: s.sum(axis) % 2 == 1}[op](
            stack, axis=0)
    return REDUCE[op](stack, axis=0).astype(NP[dtype])


def cases():
    out = []
    for dtype in NP:
        ops = ["SUM", "PRODUCT", "MIN", "MAX"]
        if dtype not in (ember.bool,):
            ops.append("AVG")
        if dtype in (ember.int64, ember.int32, ember.uint8, ember.bool):
            ops += ["BAND", "BOR", "BXOR"]
        for op in ops:
            for shape in SHAPES if dtype == ember.float32 else [(3, 4)]:
                out.append((op, dtype, shape))
    return out


def body_all_reduce(rank, world):
    res = []
    for op, dtype, shape in cases():
        t = tensor(rank, shape, dtype)
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        res.append(t)
    # non-contiguous: a transposed view is reduced in place through a staged copy
    t = tensor(rank, (4, 3), ember.float32).t()
    dist.all_reduce(t)
    res.append(t)
    # async with a Future
    t = tensor(rank, (6,), ember.float64)
    fut = dist.all_reduce(t, async_op=True).get_future().then(lambda f: f.value()[0] * 2)
    res.append(fut.wait())
    return res


@pytest.mark.parametrize("world", [2, 4])
def test_all_reduce_matches_numpy(world):
    results = run_ranks(body_all_reduce, world)
    for rank in range(world):
        got = results[rank]
        for i, (op, dtype, shape) in enumerate(cases()):
            exp = expected_reduce(op, dtype, shape, world)
            tol = 1e-2 if dtype == ember.float16 else 1e-6
            np.testing.assert_allclose(got[i].astype(np.float64), exp.astype(np.float64),
                                       rtol=tol, atol=tol, err_msg=f"{op} {dtype} {shape} rank {rank}")
        transposed = sum(data(r, (4, 3), ember.float32) for r in range(world)).T
        assert_close(got[-2], transposed)
        assert_close(got[-1], 2 * sum(data(r, (6,), ember.float64) for r in range(world)))


def body_rooted(rank, world):
    out = {}
    for dtype in (ember.float32, ember.int64, ember.float16, ember.bool):
        t = tensor(rank, (2, 3), dtype)
        dist.broadcast(t, src=world - 1)
        out[f"broadcast_{dtype}"] = t
    t = tensor(rank, (7,), ember.float32)
    dist.reduce(t, dst=1, op=dist.ReduceOp.MAX)
    out["reduce_max"] = t
    t = tensor(rank, (7,), ember.float64)
    dist.reduce(t, dst=0, op=dist.ReduceOp.AVG)
    out["reduce_avg"] = t
    gl = [ember.empty(3, 2) for _ in range(world)] if rank == 0 else None
    dist.gather(tensor(rank, (3, 2), ember.float32), gl, dst=0)
    out["gather"] = gl if gl is not None else []
    sl = [tensor(r + 10, (2, 2), ember.int64) for r in range(world)] if rank == 1 else None
    t = ember.empty(2, 2, dtype=ember.int64)
    dist.scatter(t, sl, src=1)
    out["scatter"] = t
    return out


@pytest.mark.parametrize("world", [2, 4])
def test_broadcast_reduce_gather_scatter(world):
    results = run_ranks(body_rooted, world)
    for rank, got in enumerate(results):
        for dtype in (ember.float32, ember.int64, ember.float16, ember.bool):
            np.testing.assert_array_equal(got[f"broadcast_{dtype}"], data(world - 1, (2, 3), dtype))
        if rank == 1:
            np.testing.assert_array_equal(got["reduce_max"],
                                          np.max([data(r, (7,), ember.float32) for r in range(world)], 0))
        else:  # non-roots keep their input
            np.testing.assert_array_equal(got["reduce_max"], data(rank, (7,), ember.float32))
        if rank == 0:
            assert_close(got["reduce_avg"],
                         np.mean([data(r, (7,), ember.float64) for r in range(world)], 0))
            for r in range(world):
                np.testing.assert_array_equal(got["gather"][r], data(r, (3, 2), ember.float32))
        np.testing.assert_array_equal(got["scatter"], data(rank + 10, (2, 2), ember.int64))


def body_gather_family(rank, world):
    out = {}
    outs = [ember.zeros(2, 3, dtype=ember.int32) for _ in range(world)]
    dist.all_gather(outs, tensor(rank, (2, 3), ember.int32))
    out["all_gather"] = outs
    big = ember.zeros(world * 2, 3)
    dist.all_gather_into_tensor(big, tensor(rank, (2, 3), ember.float32))
    out["all_gather_into_tensor"] = big
    stacked = ember.zeros(world, 2, 3)
    dist.all_gather_into_tensor(stacked, tensor(rank, (2, 3), ember.float32))
    out["all_gather_stacked"] = stacked
    o = ember.zeros(4)
    dist.reduce_scatter(o, [tensor(rank * world + i, (4,), ember.float32) for i in range(world)])
    out["reduce_scatter"] = o
    o = ember.zeros(3, dtype=ember.float64)
    dist.reduce_scatter_tensor(o, tensor(rank, (world * 3,), ember.float64), op=dist.ReduceOp.AVG)
    out["reduce_scatter_tensor"] = o
    ins = [tensor(rank * 100 + j, (j + 1,), ember.float32) for j in range(world)]
    outs = [ember.zeros(rank + 1) for _ in range(world)]
    dist.all_to_all(outs, ins)
    out["all_to_all"] = outs
    inp = ember.arange(world * 2, dtype=ember.float32) + 100 * rank
    o = ember.zeros(world * 2)
    dist.all_to_all_single(o, inp)
    out["a2a_even"] = o
    # uneven splits: rank r sends r + 1 rows to everyone
    inp = ember.full((world * (rank + 1), 2), float(rank))
    o = ember.zeros(sum(r + 1 for r in range(world)), 2)
    dist.all_to_all_single(o, inp, [r + 1 for r in range(world)], [rank + 1] * world)
    out["a2a_uneven"] = o
    return out


@pytest.mark.parametrize("world", [2, 4])
def test_gather_family(world):
    results = run_ranks(body_gather_family, world)
    for rank, got in enumerate(results):
        for r in range(world):
            np.testing.assert_array_equal(got["all_gather"][r], data(r, (2, 3), ember.int32))
        cat = np.concatenate([data(r, (2, 3), ember.float32) for r in range(world)])
        np.testing.assert_array_equal(got["all_gather_into_tensor"], cat)
        np.testing.assert_array_equal(got["all_gather_stacked"], cat.reshape(world, 2, 3))
        exp = sum(data(r * world + rank, (4,), ember.float32) for r in range(world))
        assert_close(got["reduce_scatter"], exp)
        full = np.mean([data(r, (world * 3,), ember.float64) for r in range(world)], 0)
        assert_close(got["reduce_scatter_tensor"], full[rank * 3:(rank + 1) * 3])
        for src in range(world):
            np.testing.assert_array_equal(got["all_to_all"][src], data(src * 100 + rank, (rank + 1,),
                                                                       ember.float32))
        even = np.concatenate([np.arange(rank * 2, rank * 2 + 2) + 100 * s for s in range(world)])
        np.testing.assert_array_equal(got["a2a_even"], even)
        uneven = np.concatenate([np.full((s + 1, 2), float(s)) for s in range(world)])
        np.testing.assert_array_equal(got["a2a_uneven"], uneven)


def body_p2p_objects_groups(rank, world):
    out = {}
    # ring of send/recv
    t = ember.full((3,), float(rank))
    r = ember.zeros(3)
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    if rank % 2 == 0:
        dist.send(t, nxt)
        dist.recv(r, prv)
    else:
        dist.recv(r, prv)
        dist.send(t, nxt)
    out["ring"] = r
    # batch_isend_irecv, any-source recv
    r2 = ember.zeros(2, dtype=ember.int64)
    ops = [dist.P2POp(dist.isend, ember.full((2,), rank, dtype=ember.int64), nxt, tag=3),
           dist.P2POp(dist.irecv, r2, prv, tag=3)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    out["batch"] = r2
    if rank == 0:
        got = ember.zeros(1)
        senders = sorted(dist.recv(got) for _ in range(world - 1))
        out["any_source"] = senders
    else:
        dist.send(ember.ones(1), 0)
        out["any_source"] = []
    # objects
    objs = [{"rank": rank, "x": [1, 2]}, "s" * rank] if rank == 1 else [None, None]
    dist.broadcast_object_list(objs, src=1)
    out["bcast_obj"] = objs
    gathered = [None] * world
    dist.all_gather_object(gathered, ("r", rank, "x" * rank))
    out["gather_obj"] = gathered
    g = [None] * world if rank == 0 else None
    dist.gather_object({"k": rank}, g, dst=0)
    out["gather_object"] = g
    so = [None]
    dist.scatter_object_list(so, [f"to {i}" for i in range(world)] if rank == 0 else None, src=0)
    out["scatter_obj"] = so[0]
    # a sub-group of the even ranks
    evens = dist.new_group([r for r in range(world) if r % 2 == 0])
    if rank % 2 == 0:
        t = ember.ones(2) * (rank + 1)
        dist.all_reduce(t, group=evens)
        out["sub"] = (t, dist.get_rank(evens), dist.get_world_size(evens),
                      dist.get_process_group_ranks(evens))
    else:
        out["sub"] = (evens is dist.GroupMember.NON_GROUP_MEMBER, dist.get_rank(evens))
    dist.barrier()
    dist.monitored_barrier(timeout=__import__("datetime").timedelta(seconds=10))
    out["seq"] = dist.group.WORLD._sequence_number()
    return out


@pytest.mark.parametrize("world", [2, 4])
def test_p2p_objects_and_groups(world):
    results = run_ranks(body_p2p_objects_groups, world)
    for rank, got in enumerate(results):
        np.testing.assert_array_equal(got["ring"], np.full(3, float((rank - 1) % world)))
        np.testing.assert_array_equal(got["batch"], np.full(2, (rank - 1) % world))
        if rank == 0:
            assert got["any_source"] == list(range(1, world))
        assert got["bcast_obj"] == [{"rank": 1, "x": [1, 2]}, "s"]
        assert got["gather_obj"] == [("r", r, "x" * r) for r in range(world)]
        if rank == 0:
            assert got["gather_object"] == [{"k": r} for r in range(world)]
        assert got["scatter_obj"] == f"to {rank}"
        if rank % 2 == 0:
            t, grank, gsize, granks = got["sub"]
            evens = [r for r in range(world) if r % 2 == 0]
            np.testing.assert_array_equal(t, np.full(2, float(sum(r + 1 for r in evens))))
            assert (grank, gsize, granks) == (evens.index(rank), len(evens), evens)
        else:
            assert got["sub"] == (True, -1)
    assert len({g["seq"] for g in results}) == 1


# ---- single process: a group of one, argument errors ----

@pytest.fixture
def world1():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_world_of_one(world1):
    assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
    assert dist.get_backend() == "gloo"
    t = ember.arange(5.0)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    np.testing.assert_array_equal(t.numpy(), np.arange(5.0))
    w = dist.broadcast(t, 0, async_op=True)
    assert w.wait() and w.is_completed() and w.is_success()
    outs = [ember.zeros(5)]
    dist.all_gather(outs, t)
    np.testing.assert_array_equal(outs[0].numpy(), np.arange(5.0))
    dist.barrier()


def _thread_nices():
    return {int(t): os.getpriority(os.PRIO_PROCESS, int(t)) for t in os.listdir("/proc/self/task")}


@pytest.mark.parametrize("setting,want", [(None, 10), ("0", 0), ("19", 19)])
def test_gloo_event_loop_runs_at_lower_priority(monkeypatch, setting, want):
    # Note [Gloo event loop priority]: Gloo's loop thread spins while a rank's own thread holds
    # a pair's lock; below the other threads' priority it no longer takes their cores.
    if setting is None:
        monkeypatch.delenv("EMBER_GLOO_LOOP_NICE", raising=False)
    else:
        monkeypatch.setenv("EMBER_GLOO_LOOP_NICE", setting)
    before = _thread_nices()
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        after = _thread_nices()
        new = {t: n for t, n in after.items() if t not in before}
        own = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        assert new and set(new.values()) == {max(want, own)}, new
        assert {t: after[t] for t in before if t in after} == before  # nothing else changed
        t = ember.ones(3)
        dist.all_reduce(t)
        np.testing.assert_array_equal(t.numpy(), np.ones(3))
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("bad", ["x", "-1", "20", "5x"])
def test_gloo_event_loop_priority_setting_errors(monkeypatch, bad):
    monkeypatch.setenv("EMBER_GLOO_LOOP_NICE", bad)
    with pytest.raises(ValueError, match=f"EMBER_GLOO_LOOP_NICE must be an integer from 0 to 19, "
                                         f"got '{bad}'"):
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    assert not dist.is_initialized()


def test_init_errors():
    with pytest.raises(ValueError, match="Invalid backend"):
        dist.init_process_group("carrier-pigeon", store=dist.HashStore(), rank=0, world_size=1)
    with pytest.raises(RuntimeError, match="MPI"):
        dist.init_process_group("mpi", store=dist.HashStore(), rank=0, world_size=1)
    with pytest.raises(ValueError, match="Cannot specify both init_method and store"):
        dist.init_process_group("gloo", init_method="env://", store=dist.HashStore(), rank=0,
                                world_size=1)
    with pytest.raises(ValueError, match="world_size must be positive"):
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()
    assert not dist.is_initialized()


def test_env_init_errors(monkeypatch):
    for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(k, raising=False)
    with pytest.raises(ValueError, match="environment variable RANK expected"):
        dist.init_process_group("gloo")
    assert not dist.is_initialized()


def test_argument_errors(world1):
    with pytest.raises(TypeError, match="Expected parameter `tensor` of type ember.Tensor"):
        dist.all_reduce([1, 2])
    with pytest.raises(ValueError, match="Invalid ``op``"):
        dist.all_reduce(ember.ones(2), op="sum")
    with pytest.raises(TypeError, match="needs an integer or bool"):
        dist.all_reduce(ember.ones(2), op=dist.ReduceOp.BAND)
    with pytest.raises(ValueError, match="one tensor per rank"):
        dist.all_gather([ember.zeros(2), ember.zeros(2)], ember.ones(2))
    with pytest.raises(ValueError, match="shape"):
        dist.all_gather([ember.zeros(3)], ember.ones(2))
    with pytest.raises(ValueError, match="world_size times input"):
        dist.all_gather_into_tensor(ember.zeros(3), ember.ones(2))
    with pytest.raises(ValueError, match="not part of group"):
        dist.broadcast(ember.ones(2), src=3)
    with pytest.raises(ValueError, match="cannot send to itself"):
        dist.send(ember.ones(2), 0)
    with pytest.raises(ValueError, match="gather_list"):
        dist.gather(ember.ones(2), None, dst=0)
    with pytest.raises(ValueError, match="twice"):
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)


def test_missing_gloo_names_the_package(monkeypatch):
    # A build without Gloo (no libgloo-dev when CMake ran) has no _C_gloo module.
    import builtins

    from ember.distributed import distributed_c10d as c10d

    real_import = builtins.__import__

    def no_gloo(name, globals=None, locals=None, fromlist=(), level=0):
        if fromlist and "_C_gloo" in fromlist:
            raise ImportError("No module named 'ember._C_gloo'")
        return real_import(name, globals, locals, fromlist, level)

    monkeypatch.setattr(builtins, "__import__", no_gloo)
    monkeypatch.setattr(c10d._d, "_backend_registered", lambda name: False)
    assert not dist.is_gloo_available()
    with pytest.raises(RuntimeError, match="libgloo-dev"):
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    assert not dist.is_initialized()


def body_async_works(rank, world):
    t = ember.full((4,), float(rank))
    works = [dist.all_reduce(t, async_op=True), dist.broadcast(ember.ones(2), 0, async_op=True),
             dist.barrier(async_op=True)]
    for w in works:
        assert w.wait() is True and w.is_completed() and w.is_success()
    peer = 1 - rank
    r = ember.zeros(3)
    ws = dist.isend(ember.full((3,), float(rank)), peer), dist.irecv(r, peer)
    for w in ws:
        w.wait()
    return t, r, works[0].result()[0]


def test_async_works_and_isend_irecv():
    results = run_ranks(body_async_works, 2)
    for rank, (t, r, res) in enumerate(results):
        np.testing.assert_array_equal(t, np.full(4, 1.0))
        np.testing.assert_array_equal(res, np.full(4, 1.0))
        np.testing.assert_array_equal(r, np.full(3, float(1 - rank)))
