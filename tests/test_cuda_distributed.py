"""The nccl backend on one GPU (world size 1: NCCL refuses two ranks on one device): every
collective on CUDA tensors against the CPU, and a DDP step on the GPU against the plain module.
Runs where a GPU is present (this is a device test); elsewhere it skips."""
import numpy as np
import pytest

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F

pytestmark = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a GPU")


@pytest.fixture
def nccl_world():
    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1, device_id=0)
    yield
    dist.destroy_process_group()


def test_nccl_collectives_world_of_one(nccl_world):
    assert dist.get_backend() == "nccl" and dist.is_nccl_available()
    x = ember.arange(12.0).reshape(3, 4)
    for op in ("SUM", "AVG", "MAX", "MIN", "PRODUCT"):
        t = x.cuda()
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        np.testing.assert_array_equal(t.cpu().numpy(), x.numpy())
    t = x.t().cuda()  # non-contiguous
    dist.broadcast(t, 0)
    np.testing.assert_array_equal(t.cpu().numpy(), x.t().numpy())
    outs = [ember.zeros(3, 4, device="cuda")]
    dist.all_gather(outs, x.cuda())
    np.testing.assert_array_equal(outs[0].cpu().numpy(), x.numpy())
    big = ember.zeros(3, 4, device="cuda")
    dist.all_gather_into_tensor(big, x.cuda())
    o = ember.zeros(3, 4, device="cuda")
    dist.reduce_scatter_tensor(o, x.cuda())
    np.testing.assert_array_equal(o.cpu().numpy(), x.numpy())
    w = dist.all_reduce(x.cuda(), async_op=True)
    w.wait()
    fut = dist.all_reduce(x.cuda(), async_op=True).get_future()
    np.testing.assert_array_equal(fut.wait()[0].cpu().numpy(), x.numpy())
    dist.barrier()
    with pytest.raises(RuntimeError, match="takes CUDA tensors"):
        dist.all_reduce(ember.ones(2))
    with pytest.raises(ValueError, match="BAND"):
        dist.all_reduce(ember.ones(2, dtype=ember.int64, device="cuda"), op=dist.ReduceOp.BAND)


def test_single_gpu_ddp_step(nccl_world):
    from ember.nn.parallel import DistributedDataParallel as DDP

    ember.manual_seed(0)
    ref = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)).cuda()
    ember.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)).cuda())
    assert model.device_ids == [0]
    x = ember.randn(4, 8, device="cuda")
    for m in (ref, model):
        F.mse_loss(m(x), ember.zeros(4, 2, device="cuda")).backward()
    for a, b in zip(ref.parameters(), model.module.parameters()):
        np.testing.assert_allclose(a.grad.cpu().numpy(), b.grad.cpu().numpy(), rtol=1e-5,
                                   atol=1e-6)
