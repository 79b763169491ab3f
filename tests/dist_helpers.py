"""Running a test body on several ranks: processes forked by a forkserver (a single-threaded
process that imported ember once: fast, and fork-safe where this process has threads, as under
ASan, whose allocator is not), which meet through
a TCPStore on a free loopback port, each reporting its result (NumPy-converted) or its traceback
through a pipe. Every run is bounded: a rank that does not report in time fails the test, and
every process is killed before returning, so nothing is left behind."""
import multiprocessing as mp
import multiprocessing.connection
import os
import signal
import time
import traceback
from datetime import timedelta

import numpy as np

import ember
import ember.distributed as dist

CTX = mp.get_context("forkserver")
CTX.set_forkserver_preload(["ember", "ember.distributed", "numpy"])


def free_port():
    return dist._d._find_free_port("127.0.0.1")


def to_numpy(obj):
    if isinstance(obj, ember.Tensor):
        return obj.detach().cpu().numpy().copy()
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_numpy(o) for o in obj)
    if isinstance(obj, dict):
        return {k: to_numpy(v) for k, v in obj.items()}
    return obj


def _entry(fn, rank, world, port, args, conn, op_timeout, init):
    os.environ["OMP_NUM_THREADS"] = "1"
    ember.set_num_threads(1)
    status, out = "ok", None
    try:
        if init:
            dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                    world_size=world, timeout=timedelta(seconds=op_timeout))
        out = to_numpy(fn(rank, world, *args))
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        status, out = "error", f"{type(e).__name__}: {e}\n{traceback.format_exc()}"
    try:
        conn.send((rank, status, out))
        conn.close()
    except Exception:  # noqa: BLE001 - the parent is gone
        pass
    try:
        if dist.is_initialized():
            dist.destroy_process_group()
    except Exception:  # noqa: BLE001
        pass
    os._exit(0 if status == "ok" else 1)


class RankFailure(AssertionError):
    pass


def launch(fn, world=2, args=(), op_timeout=20.0, init=True):
    """Starts `world` processes running fn(rank, world, *args); returns (procs, conns)."""
    port = free_port()
    procs, conns = [], []
    for r in range(world):
        recv, send = CTX.Pipe(duplex=False)
        p = CTX.Process(target=_entry, args=(fn, r, world, port, args, send, op_timeout, init),
                        daemon=True)
        p.start()
        send.close()
        procs.append(p)
        conns.append(recv)
    return procs, conns


def collect(procs, conns, timeout=60.0, allow_errors=False):
    """Waits for every rank's report (at most `timeout` s), kills whatever is left, and returns
    {rank: (status, value)}; raises RankFailure naming the ranks that failed (unless
    allow_errors) or did not report."""
    results = {}
    pending = {c: r for r, c in enumerate(conns)}
    deadline = time.monotonic() + timeout
    try:
        while pending and time.monotonic() < deadline:
            ready = mp.connection.wait(list(pending), timeout=max(deadline - time.monotonic(), 0))
            for c in ready:
                r = pending.pop(c)
                try:
                    rank, status, out = c.recv()
                    results[rank] = (status, out)
                except EOFError:
                    results[r] = ("died", f"rank {r} exited without reporting "
                                          f"(exit code {procs[r].exitcode})")
    finally:
        kill_all(procs)
    missing = [r for r in range(len(procs)) if r not in results]
    if missing:
        raise RankFailure(f"ranks {missing} did not report within {timeout} s; reports: {results}")
    errors = {r: v for r, (s, v) in results.items() if s != "ok"}
    if errors and not allow_errors:
        raise RankFailure("\n".join(f"--- rank {r}:\n{v}" for r, v in sorted(errors.items())))
    return results


def kill_all(procs):
    for p in procs:
        p.join(timeout=3.0)
    for p in procs:
        if p.is_alive():
            os.kill(p.pid, signal.SIGKILL)
            p.join(timeout=5.0)
    assert not any(p.is_alive() for p in procs), "a rank process survived"


def run_ranks(fn, world=2, args=(), timeout=60.0, op_timeout=20.0):
    """fn(rank, world, *args) on `world` ranks of a gloo group; returns [result of rank 0, ...]."""
    procs, conns = launch(fn, world, args, op_timeout)
    results = collect(procs, conns, timeout)
    return [results[r][1] for r in range(world)]


def assert_close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)
