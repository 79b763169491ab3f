"""ember.multiprocessing: spawn with error propagation, tensors through Queue / Process / Pool in
shared memory (writes seen by both sides), and a Hogwild training run (several processes
updating one shared model)."""
import os
import signal
import time

import numpy as np
import pytest

import ember
import ember.multiprocessing as mp
import ember.nn as nn
import ember.nn.functional as F

# GCC's libasan allocator is not fork-safe (see tools/sanitize.sh, test_data_workers.py): under
# the sanitizers only the spawn variants run (the fork variants run in the normal suite).
_asan = "libasan" in os.environ.get("LD_PRELOAD", "")
METHODS = [pytest.param("fork", marks=pytest.mark.skipif(_asan, reason="fork under ASan")),
           "spawn"]


def _ok(i, path):
    with open(os.path.join(path, f"done{i}"), "w") as f:
        f.write(str(os.getpid()))


def test_spawn_runs_every_process(tmp_path):
    mp.spawn(_ok, args=(str(tmp_path),), nprocs=2)
    assert sorted(os.listdir(tmp_path)) == ["done0", "done1"]


def _fails(i, path):
    with open(os.path.join(path, f"pid{i}"), "w") as f:
        f.write(str(os.getpid()))
    if i == 1:
        time.sleep(0.3)
        raise ValueError("process one failed")
    time.sleep(600)


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_spawn_propagates_the_error_and_stops_the_others(tmp_path):
    with pytest.raises(mp.ProcessRaisedException) as info:
        mp.spawn(_fails, args=(str(tmp_path),), nprocs=2)
    e = info.value
    assert e.error_index == 1
    assert "-- Process 1 terminated with the following error:" in str(e)
    assert "ValueError: process one failed" in str(e)
    assert "Traceback (most recent call last):" in str(e)
    for i in range(2):
        assert not _pid_alive(int((tmp_path / f"pid{i}").read_text()))


def _exits(i, how):
    if i == 0:
        if how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(3)


@pytest.mark.parametrize("how,msg", [("kill", "process 0 terminated with signal SIGKILL"),
                                     ("exit", "process 0 terminated with exit code 3")])
def test_spawn_reports_exit_codes_and_signals(how, msg):
    with pytest.raises(mp.ProcessExitedException, match=msg) as info:
        mp.spawn(_exits, args=(how,), nprocs=2)
    assert info.value.error_index == 0


def _child_edits(q_in, q_out):
    t = q_in.get()
    t.add_(1)  # the parent sees it: same pages
    made = ember.arange(4.0) * 10
    q_out.put((made, made[1:3], t.is_shared()))
    q_in.get()  # keep the fds served until the parent got them


@pytest.mark.parametrize("method", METHODS)
def test_queue_passes_tensors_through_shared_memory(method):
    ctx = mp.get_context(method)
    q_in, q_out = ctx.Queue(), ctx.Queue()
    t = ember.zeros(5)
    p = ctx.Process(target=_child_edits, args=(q_in, q_out))
    p.start()
    try:
        q_in.put(t)
        made, view, child_shared = q_out.get(timeout=60)
        q_in.put(None)
    finally:
        p.join(30)
        if p.is_alive():
            p.kill()
    assert child_shared and t.is_shared()
    deadline = time.time() + 5
    while t.sum().item() != 5 and time.time() < deadline:
        time.sleep(0.01)
    np.testing.assert_array_equal(t.numpy(), np.ones(5))
    np.testing.assert_array_equal(made.numpy(), [0, 10, 20, 30])
    # a view and its base sent together come back as views of one storage
    view.fill_(-1)
    np.testing.assert_array_equal(made.numpy(), [0, -1, -1, 30])


def _square(t):
    return t * t


@pytest.mark.parametrize("method", METHODS)
def test_pool_maps_tensors(method):
    with mp.get_context(method).Pool(2) as pool:
        out = pool.map(_square, [ember.full((3,), float(i)) for i in range(4)])
    assert [o.tolist() for o in out] == [[float(i * i)] * 3 for i in range(4)]


def test_share_memory_and_parameters_round_trip():
    import pickle
    from multiprocessing.reduction import ForkingPickler

    p = nn.Parameter(ember.ones(2, 3))
    assert not p.is_shared()
    data = ForkingPickler.dumps(p)
    assert p.is_shared()
    q = pickle.loads(data)
    assert isinstance(q, nn.Parameter) and q.requires_grad
    q.data.mul_(4)
    np.testing.assert_array_equal(p.detach().numpy(), np.full((2, 3), 4.0))
    with pytest.raises(RuntimeError, match="Cowardly refusing"):
        ForkingPickler.dumps(p * 2)


def test_sharing_strategies():
    assert mp.get_all_sharing_strategies() == {"file_descriptor"}
    assert mp.get_sharing_strategy() == "file_descriptor"
    mp.set_sharing_strategy("file_descriptor")
    with pytest.raises(ValueError):
        mp.set_sharing_strategy("file_system")


# ---- Hogwild: a shared model, several processes training it without locks ----

def _data():
    rs = np.random.RandomState(0)
    x = rs.randn(512, 8).astype(np.float32)
    w = rs.randn(8, 1).astype(np.float32)
    return ember.from_numpy(x), ember.from_numpy(x @ w + 0.1)


def _hogwild_train(rank, model, steps):
    ember.set_num_threads(1)
    x, y = _data()
    opt = ember.optim.SGD(model.parameters(), lr=0.05)
    shard = slice(rank * 256, (rank + 1) * 256)
    for i in range(steps):
        b = slice(shard.start + (i * 32) % 256, shard.start + (i * 32) % 256 + 32)
        opt.zero_grad()
        F.mse_loss(model(x[b]), y[b]).backward()
        opt.step()


@pytest.mark.parametrize("method", METHODS)
def test_hogwild(method):
    ember.manual_seed(0)
    model = nn.Linear(8, 1)
    model.share_memory()
    assert all(p.is_shared() for p in model.parameters())
    x, y = _data()
    with ember.no_grad():
        before = F.mse_loss(model(x), y).item()
    ctx = mp.get_context(method)
    procs = [ctx.Process(target=_hogwild_train, args=(r, model, 150)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    alive = [p for p in procs if p.is_alive()]
    for p in alive:
        p.kill()
    assert not alive and all(p.exitcode == 0 for p in procs)
    with ember.no_grad():
        after = F.mse_loss(model(x), y).item()
    assert after < before / 20, (before, after)  # the parent's model was trained
