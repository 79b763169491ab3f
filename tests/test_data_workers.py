"""DataLoader worker processes and shared-memory tensors."""
import gc
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import ember
from ember.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset, get_worker_info

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="worker tests use fork and memfd (Linux)")


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return ember.tensor([i * i]), i


class Sharded(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


class Unsharded(IterableDataset):
    def __iter__(self):
        return iter(range(4))


class WhoAmI(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return {"id": info.id, "n": info.num_workers, "seed": info.seed, "py": random.random(),
                "np": float(np.random.rand()), "ember": float(ember.rand(1)), "pid": os.getpid()}


class Fails(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise ValueError(f"bad sample {i}")
        return i


class Dies(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return i


class Slow(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(3)
        return i


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie not yet reaped counts as gone
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def _memfds():
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if "ember_shm" in os.readlink(f"/proc/self/fd/{fd}"):
                n += 1
        except OSError:
            pass
    return n


def test_map_style_order_matches_single_process():
    ds = Squares(23)
    single = [(a.tolist(), b.tolist()) for a, b in DataLoader(ds, batch_size=4)]
    multi = [(a.tolist(), b.tolist()) for a, b in DataLoader(ds, batch_size=4, num_workers=2)]
    assert multi == single and len(multi) == 6
    unordered = [b.tolist() for _, b in DataLoader(ds, batch_size=4, num_workers=2, in_order=False)]
    assert sorted(sum(unordered, [])) == list(range(23))


def test_tensor_dataset_with_workers_comes_through_shared_memory():
    x, y = ember.randn(50, 3), ember.arange(50)
    g = ember.Generator()
    g.manual_seed(1)
    batches = list(DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True, num_workers=2, generator=g))
    assert all(b[0].is_shared() for b in batches)
    idx = ember.cat([b[1] for b in batches])
    assert sorted(idx.tolist()) == list(range(50))
    assert ember.cat([b[0] for b in batches]).tolist() == x[idx].tolist()


def test_iterable_sharding_and_duplicates():
    got = [b.tolist() for b in DataLoader(Sharded(11), batch_size=2, num_workers=3)]
    flat = sum(got, [])
    assert sorted(flat) == list(range(11))  # no duplicates, nothing lost
    dup = [int(v) for v in DataLoader(Unsharded(), batch_size=None, num_workers=2)]
    assert sorted(dup) == sorted(list(range(4)) * 2)  # each worker runs its own copy (as torch)
    drop = [b.tolist() for b in DataLoader(Sharded(11), batch_size=2, num_workers=2, drop_last=True)]
    assert all(len(b) == 2 for b in drop)


def test_worker_info_and_seeds():
    g = ember.Generator()
    g.manual_seed(123)
    out = list(DataLoader(WhoAmI(), batch_size=None, num_workers=2, generator=g))
    by_worker = {}
    for o in out:
        by_worker.setdefault(o["id"], o)
        assert o["n"] == 2
    assert set(by_worker) == {0, 1}
    w0, w1 = by_worker[0], by_worker[1]
    assert w1["seed"] == w0["seed"] + 1
    assert w0["py"] != w1["py"] and w0["np"] != w1["np"] and w0["ember"] != w1["ember"]
    g.manual_seed(123)
    again = list(DataLoader(WhoAmI(), batch_size=None, num_workers=2, generator=g))
    assert [o["seed"] for o in again] == [o["seed"] for o in out]
    assert [o["ember"] for o in again] == [o["ember"] for o in out]
    assert get_worker_info() is None


def test_worker_init_fn():
    def init(wid):
        np.random.seed(1000 + wid)

    a = [float(v) for v in DataLoader(WhoAmI(), batch_size=None, num_workers=2, worker_init_fn=init,
                                      collate_fn=lambda d: d["np"])]
    b = [float(v) for v in DataLoader(WhoAmI(), batch_size=None, num_workers=2, worker_init_fn=init,
                                      collate_fn=lambda d: d["np"])]
    assert a == b


def test_worker_exception_reraised_with_traceback():
    with pytest.raises(ValueError) as e:
        list(DataLoader(Fails(), batch_size=2, num_workers=2))
    msg = str(e.value)
    assert "Caught ValueError in DataLoader worker process" in msg
    assert "bad sample 5" in msg and "raise ValueError" in msg and "Traceback" in msg


def test_killed_worker_is_reported():
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid \d+\) is killed by signal: SIGKILL"):
        list(DataLoader(Dies(), batch_size=1, num_workers=2))
    assert time.monotonic() - t0 < 10


def test_timeout():
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.5 seconds"):
        next(iter(DataLoader(Slow(), batch_size=1, num_workers=1, timeout=0.5)))
    assert time.monotonic() - t0 < 3


def test_abandoned_iterator_leaks_nothing():
    base_fds = _memfds()
    x = ember.randn(400, 16)
    it = iter(DataLoader(TensorDataset(x), batch_size=4, num_workers=2, prefetch_factor=4))
    first = next(it)
    pids = [w.pid for w in it._workers]
    assert all(_alive(p) for p in pids)
    del it
    gc.collect()
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)
    assert first[0].is_shared()
    del first
    gc.collect()
    assert _memfds() == base_fds


def test_persistent_workers_reuse_processes():
    dl = DataLoader(Squares(10), batch_size=3, num_workers=2, persistent_workers=True)
    e1 = [b.tolist() for _, b in dl]
    pids = [w.pid for w in dl._iterator._workers]
    it = iter(dl)
    next(it)  # abandon the second epoch midway
    e3 = [b.tolist() for _, b in dl]
    assert e1 == e3 == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert [w.pid for w in dl._iterator._workers] == pids
    dl._iterator._shutdown_workers()


def test_share_memory_and_pickle_across_processes():
    t = ember.arange(6, dtype=ember.float32)
    v = t[2:5]
    assert not t.is_shared()
    assert v.share_memory_() is v
    assert t.is_shared() and v.is_shared() and t.tolist() == [0, 1, 2, 3, 4, 5]
    ctx = multiprocessing.get_context("fork")
    q_in, q_out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_child_add_one, args=(q_in, q_out))
    p.start()
    from ember.utils.data._utils.reduction import init_reductions
    init_reductions()
    q_in.put(v)
    assert q_out.get(timeout=10) == "done"
    p.join(10)
    assert t.tolist() == [0, 1, 3, 4, 5, 5]  # the child wrote through the same pages


def _child_add_one(q_in, q_out):
    v = q_in.get(timeout=10)
    assert v.is_shared() and v.shape == (3,)
    v.add_(1)
    q_out.put("done")


def test_shared_memory_exhaustion_is_a_clear_error():
    code = textwrap.dedent("""
        import resource, signal
        import ember
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
        try:
            ember.zeros(4 << 20).share_memory_()
        except RuntimeError as e:
            print("ERR", e)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert "ERR unable to allocate 16777216 bytes of shared memory" in r.stdout, r.stdout + r.stderr
    assert "shared-memory limit" in r.stdout
