"""DistributedDataParallel on 2 and 4 gloo ranks against one process: N ranks with batch b each
give the parameters one process gets with the batch N*b (and identical parameters on every
rank), whatever the bucketing, hooks or options; no_sync, unused parameters, static graphs,
comm hooks, join with uneven inputs, SyncBatchNorm. Plus the engine pieces DDP stands on."""
import numpy as np
import pytest
from dist_helpers import assert_close, collect, launch, run_ranks

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
from ember.nn.parallel import DistributedDataParallel as DDP

gloo = pytest.mark.skipif(not dist.is_gloo_available(), reason="built without Gloo")
STEPS, B = 3, 4


class Net(nn.Module):
    def __init__(self, unused_branch=False):
        super().__init__()
        self.conv = nn.Conv2d(1, 3, 3)
        self.fc1 = nn.Linear(3 * 4 * 4, 16)
        self.fc2 = nn.Linear(16, 4)
        self.extra = nn.Linear(16, 4) if unused_branch else None

    def forward(self, x, use_extra=False):
        h = F.relu(self.conv(x)).flatten(1)
        h = F.relu(self.fc1(h))
        out = self.fc2(h)
        if use_extra:
            out = out + self.extra(h)
        return out


def batches(world, steps=STEPS, b=B):
    rs = np.random.RandomState(7)
    xs = rs.randn(steps, world * b, 1, 6, 6).astype(np.float32)
    ys = rs.randn(steps, world * b, 4).astype(np.float32)
    return xs, ys


def params(model):
    return [p.detach().numpy().copy() for p in model.parameters()]


def reference(world, steps=STEPS, micro=1, lr=0.1, unused_branch=False):
    """One process, the whole batch (all ranks' shares) per step."""
    ember.manual_seed(0)
    model = Net(unused_branch)
    opt = ember.optim.SGD(model.parameters(), lr=lr)
    xs, ys = batches(world, steps * micro)
    for s in range(steps):
        opt.zero_grad()
        for m in range(micro):
            i = s * micro + m
            F.mse_loss(model(ember.from_numpy(xs[i])), ember.from_numpy(ys[i])).backward()
        opt.step()
    return params(model)


def body_train(rank, world, opts, hook=None, micro=1):
    ember.manual_seed(rank)  # different init per rank: DDP must broadcast rank 0's
    model = Net()
    if rank == 0:
        ember.manual_seed(0)
        model = Net()
    ddp = DDP(model, **opts)
    if hook == "allreduce":
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    elif hook == "fp16":
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif hook == "builtin_fp16":
        ddp._register_builtin_comm_hook(dist.BuiltinCommHookType.FP16_COMPRESS)
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1)
    xs, ys = batches(world, STEPS * micro)
    buckets = []
    for s in range(STEPS):
        opt.zero_grad()
        for m in range(micro):
            i = s * micro + m
            x = ember.from_numpy(xs[i][rank * B:(rank + 1) * B])
            y = ember.from_numpy(ys[i][rank * B:(rank + 1) * B])
            if m < micro - 1:
                with ddp.no_sync():
                    F.mse_loss(ddp(x), y).backward()
            else:
                F.mse_loss(ddp(x), y).backward()
        opt.step()
        buckets.append(ddp.reducer._bucket_indices())
    return params(model), buckets, ddp.reducer._has_rebuilt_buckets()


OPTIONS = {
    "default": {},
    "bucket_view": {"gradient_as_bucket_view": True},
    "static": {"static_graph": True},
    "tiny_buckets": {"bucket_cap_mb": 0.0005},
    "tiny_buckets_view": {"bucket_cap_mb": 0.0005, "gradient_as_bucket_view": True},
    "no_broadcast": {"broadcast_buffers": False},
}


# Every configuration on 2 ranks, two of them on 4 (CI has 2 cores).
CONFIGS = [(2, n) for n in OPTIONS] + [(4, "default"), (4, "tiny_buckets_view")]


@gloo
@pytest.mark.parametrize("world,name", CONFIGS)
def test_ddp_matches_one_process(world, name):
    ref = reference(world)
    results = run_ranks(body_train, world, (OPTIONS[name],))
    for ps, _, rebuilt in results:
        for got, exp in zip(ps, ref):
            assert_close(got, exp, rtol=1e-4, atol=1e-5)
        for got, exp in zip(ps, results[0][0]):
            np.testing.assert_array_equal(got, exp)  # every rank holds the same bits
        assert rebuilt


@gloo
def test_bucket_rebuild_follows_gradient_order():
    results = run_ranks(body_train, 2, ({"bucket_cap_mb": 0.0005},))
    first, after = results[0][1][0], results[0][1][1]
    n = sum(len(b) for b in first)
    assert sorted(i for b in after for i in b) == list(range(n))
    # first in reverse parameter order, closed at the cap: fc2, fc1's bias, fc1's weight first
    assert first == [[5, 4, 3, 2], [1, 0]]
    # rebuilt in arrival order: the last layer's gradients arrive first
    assert after[0][0] in (n - 1, n - 2) and len(after) > 1


@gloo
@pytest.mark.parametrize("hook,tol", [("allreduce", 1e-5), ("fp16", 2e-3), ("builtin_fp16", 2e-3)])
def test_comm_hooks(hook, tol):
    ref = reference(2)
    results = run_ranks(body_train, 2, ({}, hook))
    for ps, _, _ in results:
        for got, exp in zip(ps, ref):
            assert_close(got, exp, rtol=tol, atol=tol)


@gloo
@pytest.mark.parametrize("opts", [{}, {"gradient_as_bucket_view": True}])
def test_no_sync_accumulates_locally(opts):
    ref = reference(2, micro=2)
    results = run_ranks(body_train, 2, (opts, None, 2))
    for ps, _, _ in results:
        for got, exp in zip(ps, ref):
            assert_close(got, exp, rtol=1e-4, atol=1e-5)


def body_no_sync_grads(rank, world):
    ember.manual_seed(0)
    ddp = DDP(nn.Linear(3, 1))
    x = ember.full((2, 3), float(rank + 1))
    with ddp.no_sync():
        ddp(x).sum().backward()
    local = ddp.module.weight.grad.clone()
    ddp(x).sum().backward()
    return local, ddp.module.weight.grad


@gloo
def test_no_sync_grad_values():
    results = run_ranks(body_no_sync_grads, 2)
    for rank, (local, synced) in enumerate(results):
        np.testing.assert_allclose(local, np.full((1, 3), 2.0 * (rank + 1)))
        # (2*(1) + 2*(1)) on rank 0 and (4 + 4) on rank 1, summed then averaged
        np.testing.assert_allclose(synced, np.full((1, 3), (4.0 + 8.0) / 2))


def body_unused(rank, world, mode):
    ember.manual_seed(0)
    model = Net(unused_branch=True)
    ddp = DDP(model, find_unused_parameters=True)
    x = ember.ones(2, 1, 6, 6) * (rank + 1)
    use = {"never": False, "rank0": rank == 0, "always": True}[mode]
    ddp(x, use_extra=use).sum().backward()
    g = model.extra.weight.grad
    return (None if g is None else g), model.fc2.weight.grad


def single_unused(rank, use):
    ember.manual_seed(0)
    model = Net(unused_branch=True)
    model(ember.ones(2, 1, 6, 6) * (rank + 1), use_extra=use).sum().backward()
    return model.extra.weight.grad, model.fc2.weight.grad


@gloo
@pytest.mark.parametrize("mode", ["never", "rank0", "always"])
def test_find_unused_parameters(mode):
    results = run_ranks(body_unused, 2, (mode,))
    singles = [single_unused(r, {"never": False, "rank0": r == 0, "always": True}[mode])
               for r in range(2)]
    fc2 = sum(s[1].numpy() for s in singles) / 2
    for extra, got_fc2 in results:
        assert_close(got_fc2, fc2, rtol=1e-5)
        if mode == "never":
            assert extra is None  # no rank used it: .grad untouched
        else:
            exp = sum(s[0].numpy() if s[0] is not None else 0 for s in singles) / 2
            assert_close(extra, exp, rtol=1e-5)


def body_unused_without_flag(rank, world):
    ember.manual_seed(0)
    ddp = DDP(Net(unused_branch=True))
    x = ember.ones(2, 1, 6, 6)
    ddp(x).sum().backward()
    try:
        ddp(x).sum().backward()
    except RuntimeError as e:
        return str(e)
    return "no error"


@gloo
def test_unused_parameters_without_the_flag_raise():
    for msg in run_ranks(body_unused_without_flag, 2):
        assert "Expected to have finished reduction in the prior iteration" in msg
        assert "find_unused_parameters=True" in msg
        assert "extra.weight" in msg


def body_join(rank, world, divide):
    ember.manual_seed(0)
    model = nn.Linear(3, 2)
    ddp = DDP(model)
    opt = ember.optim.SGD(ddp.parameters(), lr=0.5)
    n_batches = 2 + 2 * rank  # uneven: rank 1 has two more batches
    with ddp.join(divide_by_initial_world_size=divide):
        for i in range(n_batches):
            opt.zero_grad()
            ddp(ember.full((2, 3), float(i + 1))).sum().backward()
            opt.step()
    return params(model)


def join_reference(divide):
    ember.manual_seed(0)
    model = nn.Linear(3, 2)
    opt = ember.optim.SGD(model.parameters(), lr=0.5)
    for i in range(4):
        active = 2 if i < 2 else 1
        opt.zero_grad()
        (model(ember.full((2, 3), float(i + 1))).sum() * active).backward()
        for p in model.parameters():
            p.grad.div_(2 if divide else active)
        opt.step()
    return params(model)


@gloo
@pytest.mark.parametrize("divide", [True, False])
def test_join_uneven_inputs(divide):
    results = run_ranks(body_join, 2, (divide,))
    ref = join_reference(divide)
    for ps in results:
        for got, exp in zip(ps, ref):
            assert_close(got, exp, rtol=1e-5)


class BNNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.bn = nn.BatchNorm2d(3)
        self.fc = nn.Linear(3 * 5 * 5, 2)

    def forward(self, x):
        return self.fc(F.relu(self.bn(self.conv(x))).flatten(1))


def body_sync_bn(rank, world):
    ember.manual_seed(0)
    model = nn.SyncBatchNorm.convert_sync_batchnorm(BNNet())
    assert isinstance(model.bn, nn.SyncBatchNorm)
    ddp = DDP(model)
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1)
    rs = np.random.RandomState(3)
    x = rs.randn(world * 3, 2, 5, 5).astype(np.float32)
    for _ in range(2):
        opt.zero_grad()
        ddp(ember.from_numpy(x[rank * 3:(rank + 1) * 3]) * 2 + 1).pow(2).mean().backward()
        opt.step()
    return params(model), model.bn.running_mean, model.bn.running_var


def sync_bn_reference(world):
    ember.manual_seed(0)
    model = BNNet()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    rs = np.random.RandomState(3)
    x = rs.randn(world * 3, 2, 5, 5).astype(np.float32)
    for _ in range(2):
        opt.zero_grad()
        # each rank's loss is the mean over its share; DDP averages them
        out = model(ember.from_numpy(x) * 2 + 1).pow(2)
        out.view(world, -1).mean(1).mean().backward()
        opt.step()
    return params(model), model.bn.running_mean.numpy(), model.bn.running_var.numpy()


@gloo
@pytest.mark.parametrize("world", [2, 4])
def test_sync_batchnorm_equals_batchnorm_on_the_whole_batch(world):
    ref_params, ref_mean, ref_var = sync_bn_reference(world)
    for ps, mean, var in run_ranks(body_sync_bn, world):
        for got, exp in zip(ps, ref_params):
            assert_close(got, exp, rtol=1e-4, atol=1e-5)
        assert_close(mean, ref_mean, rtol=1e-5)
        assert_close(var, ref_var, rtol=1e-5)


def body_buffers(rank, world):
    ember.manual_seed(rank)
    model = BNNet()
    model.bn.running_mean.fill_(float(rank))
    ddp = DDP(model)
    start = model.bn.running_mean.clone()  # rank 0's after the construction broadcast
    model.bn.running_mean.fill_(float(rank + 10))
    ddp(ember.ones(2, 2, 5, 5))  # buffers broadcast from rank 0 before each forward
    return start, model.bn.num_batches_tracked


@gloo
def test_buffers_broadcast_from_rank0():
    for start, tracked in run_ranks(body_buffers, 2):
        np.testing.assert_array_equal(start, np.zeros(3))
        assert int(tracked) == 1


def test_ddp_checks_arguments():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1) \
        if dist.is_gloo_available() else pytest.skip("built without Gloo")
    try:
        with pytest.raises(RuntimeError, match="doesn't have any parameter that requires"):
            DDP(nn.ReLU())
        with pytest.raises(ValueError, match="device_ids and output_device"):
            DDP(nn.Linear(2, 2), device_ids=[0])
        ddp = DDP(nn.Linear(2, 2))
        with pytest.raises(ValueError, match="2 arguments"):
            ddp.register_comm_hook(None, lambda bucket: bucket)
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
        with pytest.raises(RuntimeError, match="can only be called once"):
            ddp.register_comm_hook(None, default_hooks.allreduce_hook)
        assert list(ddp.state_dict()) == ["module.weight", "module.bias"]
        # world of one: DDP trains like the plain module
        ddp(ember.ones(3, 2)).sum().backward()
        np.testing.assert_allclose(ddp.module.weight.grad.numpy(), np.full((2, 2), 3.0))
    finally:
        dist.destroy_process_group()


# ---- the engine pieces DDP uses ----

def test_post_accumulate_grad_hook():
    w = ember.ones(3, requires_grad=True)
    seen = []
    h = w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.clone()))
    (w * 2).sum().backward()
    (w * 3).sum().backward()
    assert [s.tolist() for s in seen] == [[2.0] * 3, [5.0] * 3]  # after accumulation
    h.remove()
    (w * 1).sum().backward()
    assert len(seen) == 2
    with pytest.raises(RuntimeError, match="non-leaf"):
        (w * 2).register_post_accumulate_grad_hook(lambda p: None)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        ember.ones(2).register_post_accumulate_grad_hook(lambda p: None)
    w.register_post_accumulate_grad_hook(lambda p: 1)
    with pytest.raises(RuntimeError, match="should return None"):
        (w * 2).sum().backward()


def test_queue_callback_runs_at_the_end_of_backward():
    order = []
    a = ember.ones(2, requires_grad=True)
    b = ember.ones(2, requires_grad=True)

    def hook(p):
        order.append("a")
        ember._C._queue_callback(lambda: order.append(("end", a.grad is not None and
                                                       b.grad is not None)))

    a.register_post_accumulate_grad_hook(hook)
    b.register_post_accumulate_grad_hook(lambda p: order.append("b"))
    (a * b).sum().backward()
    assert order[-1] == ("end", True) and sorted(order[:2]) == ["a", "b"]
    with pytest.raises(RuntimeError, match="during backward pass"):
        ember._C._queue_callback(lambda: None)


def test_bucket_assignment():
    ts = [ember.zeros(100), ember.zeros(300), ember.zeros(10, dtype=ember.float64),
          ember.zeros(200)]
    buckets, limits = dist._compute_bucket_assignment_by_size(ts, [800, 1600])
    # float32: 400 B then 1200 B closes the first bucket (800), 800 B the next; float64 alone
    assert buckets == [[0, 1], [2], [3]]
    assert limits == [800, 800, 1600]
    buckets, _ = dist._compute_bucket_assignment_by_size(ts, [10 ** 9], None, [3, 2, 1, 0])
    assert sorted(map(sorted, buckets)) == [[0, 1, 3], [2]]


def test_failed_rank_during_ddp_is_reported():
    if not dist.is_gloo_available():
        pytest.skip("built without Gloo")
    procs, conns = launch(body_ddp_one_rank_raises, 2, op_timeout=8.0)
    res = collect(procs, conns, timeout=40.0, allow_errors=True)
    assert res[1][0] == "error" and "boom" in res[1][1]
    assert res[0][0] == "error"
    assert "Rank 1" in res[0][1], res[0][1]


def body_ddp_one_rank_raises(rank, world):
    ddp = DDP(nn.Linear(4, 4))
    ddp(ember.ones(2, 4)).sum().backward()
    if rank == 1:
        raise ValueError("boom")
    ddp(ember.ones(2, 4)).sum().backward()


# ---- the practitioner's notes (seed 004), as written ----

def body_notes_example(rank, world, port):
    from datetime import timedelta

    from ember.utils.data import DataLoader, TensorDataset
    from ember.utils.data.distributed import DistributedSampler

    # "(1) Specify store, rank, and world_size explicitly"
    store = dist.TCPStore("127.0.0.1", port, world, rank == 0)
    dist.init_process_group(backend="gloo", store=store, rank=rank, world_size=world,
                            timeout=timedelta(seconds=30))
    ember.manual_seed(0)
    model = DDP(nn.Linear(4, 2))
    data = TensorDataset(ember.arange(40.0).reshape(10, 4), ember.arange(20.0).reshape(10, 2))
    sampler = DistributedSampler(data)  # num_replicas and rank from the default group
    loader = DataLoader(data, batch_size=2, sampler=sampler)
    opt = ember.optim.SGD(model.parameters(), lr=1e-3)
    seen = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x, y in loader:
            seen += x[:, 0].div(4).long().tolist()
            opt.zero_grad()
            F.mse_loss(model(x), y).backward()
            opt.step()
    return seen, params(model.module)


@gloo
def test_notes_ddp_example():
    from dist_helpers import free_port

    port = free_port()
    procs, conns = launch(body_notes_example, 2, (port,), init=False)
    res = collect(procs, conns, timeout=60)
    (seen0, p0), (seen1, p1) = res[0][1], res[1][1]
    assert len(seen0) == len(seen1) == 10  # 5 samples per rank per epoch
    assert sorted(seen0[:5] + seen1[:5]) == list(range(10))
    for a, b in zip(p0, p1):
        np.testing.assert_array_equal(a, b)
