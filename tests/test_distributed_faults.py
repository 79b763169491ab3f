"""A rank that raises, is killed or hangs makes the others raise DistBackendError within the
group's timeout (plus the few seconds spent asking the others), naming that rank; nothing waits
forever and no process is left behind (dist_helpers kills and checks every one)."""
import os
import signal
import time

import pytest
from dist_helpers import collect, kill_all, launch

import ember
import ember.distributed as dist

pytestmark = pytest.mark.skipif(not dist.is_gloo_available(), reason="built without Gloo")


def body_peer_fails(rank, world, how, victim):
    t = ember.ones(1000)
    dist.all_reduce(t)  # everyone is connected
    if rank == victim:
        if how == "raise":
            raise ValueError("rank fails on purpose")
        if how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if how == "hang":
            time.sleep(600)
    start = time.monotonic()
    try:
        for _ in range(3):
            dist.all_reduce(t)
    except dist.DistBackendError as e:
        return ("raised", time.monotonic() - start, str(e))
    return ("no error", time.monotonic() - start, "")


@pytest.mark.parametrize("how", ["raise", "kill"])
def test_dead_peer_is_named(how):
    procs, conns = launch(body_peer_fails, 2, (how, 1), op_timeout=8.0)
    res = collect(procs, conns, timeout=40.0, allow_errors=True)
    status, (outcome, elapsed, msg) = res[0]
    assert status == "ok" and outcome == "raised", res
    assert elapsed < 8.0, f"took {elapsed:.1f} s"
    assert "Rank 1 did not answer" in msg, msg
    assert "[Rank 0] all_reduce" in msg
    assert res[1][0] in ("error", "died")


def test_hung_peer_is_named_after_the_timeout():
    procs, conns = launch(body_peer_fails, 2, ("hang", 1), op_timeout=3.0)
    try:
        import multiprocessing.connection as mpc

        ready = mpc.wait([conns[0]], timeout=30.0)
        assert ready, "rank 0 did not report within 30 s"
        rank, status, (outcome, elapsed, msg) = conns[0].recv()
    finally:
        kill_all(procs)
    assert outcome == "raised"
    assert 2.5 < elapsed < 3.0 + 3.0, f"took {elapsed:.1f} s"
    assert "Rank 1 has not called it" in msg, msg
    assert "all_reduce" in msg


def test_four_ranks_one_killed():
    procs, conns = launch(body_peer_fails, 4, ("kill", 2), op_timeout=10.0)
    res = collect(procs, conns, timeout=60.0, allow_errors=True)
    for r in (0, 1, 3):
        status, out = res[r]
        assert status == "ok", res
        outcome, elapsed, msg = out
        assert outcome == "raised" and elapsed < 10.0, (r, out)
        assert "ank 2" in msg, msg


def body_monitored(rank, world):
    from datetime import timedelta

    if rank == 1:
        time.sleep(600)
    try:
        dist.monitored_barrier(timeout=timedelta(seconds=2))
    except RuntimeError as e:
        return str(e)
    return "passed"


def test_monitored_barrier_names_the_missing_rank():
    procs, conns = launch(body_monitored, 2, op_timeout=20.0)
    try:
        import multiprocessing.connection as mpc

        assert mpc.wait([conns[0]], timeout=30.0)
        _, _, msg = conns[0].recv()
    finally:
        kill_all(procs)
    assert msg == "Rank 1 failed to pass monitoredBarrier in 2000 ms"


def body_store_host_dies(rank, world):
    t = ember.ones(10)
    dist.all_reduce(t)
    if rank == 0:
        os.kill(os.getpid(), signal.SIGKILL)  # rank 0 hosts the TCPStore
    try:
        dist.all_reduce(t)
    except dist.DistBackendError as e:
        return str(e)
    return "no error"


def test_death_of_the_store_host_is_reported():
    procs, conns = launch(body_store_host_dies, 2, op_timeout=8.0)
    res = collect(procs, conns, timeout=40.0, allow_errors=True)
    status, msg = res[1]
    assert status == "ok" and "Could not ask the other ranks through the store" in msg, msg
    assert "rank 0 or the launcher" in msg
