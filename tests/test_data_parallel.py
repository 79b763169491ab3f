"""nn.DataParallel / nn.parallel.data_parallel and their pieces (replicate, scatter,
parallel_apply, gather). The multi-replica path is exercised with several CPU "devices", which
runs the same code as several GPUs: replicas in threads, gradients summed into the original
parameters; the GPU variant runs where GPUs are present (the device fixture)."""
import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.nn.parallel import (
    DataParallel,
    data_parallel,
    gather,
    parallel_apply,
    replicate,
    scatter,
)


def model():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))


def test_without_devices_dataparallel_is_the_module():
    m = model()
    dp = DataParallel(m, device_ids=[])
    x = ember.randn(5, 4)
    np.testing.assert_array_equal(dp(x).detach().numpy(), m(x).detach().numpy())
    assert list(dp.state_dict()) == ["module." + k for k in m.state_dict()]
    assert nn.DataParallel is DataParallel


def test_scatter_and_gather_nested():
    x = ember.arange(12.0).reshape(6, 2)
    parts = scatter((x, {"k": x * 2}, 7), ["cpu", "cpu", "cpu"])
    assert len(parts) == 3
    np.testing.assert_array_equal(parts[1][0].numpy(), [[4, 5], [6, 7]])
    np.testing.assert_array_equal(parts[2][1]["k"].numpy(), [[16, 18], [20, 22]])
    assert parts[0][2] == 7
    back = gather([p[0] for p in parts], "cpu")
    np.testing.assert_array_equal(back.numpy(), x.numpy())
    d = gather([{"a": ember.ones(1), "b": ember.zeros(2)}] * 2, "cpu")
    assert d["a"].shape == (2,) and d["b"].shape == (4,)


def test_replicas_share_gradients_with_the_original():
    m = model()
    reps = replicate(m, ["cpu", "cpu"])
    assert reps[0] is not m and reps[0][0] is not m[0]
    x = ember.randn(6, 4)
    outs = parallel_apply(reps, [(x[:3],), (x[3:],)])
    gather(outs, "cpu").sum().backward()
    grads = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    m(x).sum().backward()
    for g, p in zip(grads, m.parameters()):
        np.testing.assert_allclose(g.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_data_parallel_over_several_devices_matches_the_module(device):
    m = model().to(device)
    x = ember.randn(7, 4, device=device)
    out = data_parallel(m, x, device_ids=[device, device, device], output_device=device)
    np.testing.assert_allclose(out.detach().cpu().numpy(), m(x).detach().cpu().numpy(),
                               rtol=1e-5, atol=1e-6)
    out.sum().backward()
    g = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    m(x).sum().backward()
    for a, p in zip(g, m.parameters()):
        np.testing.assert_allclose(a.cpu().numpy(), p.grad.cpu().numpy(), rtol=1e-5, atol=1e-5)


def test_dataparallel_module_with_cpu_devices():
    m = model()
    dp = DataParallel(m, device_ids=["cpu", "cpu"])
    x = ember.randn(4, 4)
    np.testing.assert_allclose(dp(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-6)


def test_parallel_apply_reports_the_failing_replica():
    class Bad(nn.Module):
        def forward(self, x):
            raise ValueError("replica broke")

    with pytest.raises(RuntimeError, match="Caught ValueError in replica 1"):
        parallel_apply([nn.Identity(), Bad()], [(ember.ones(1),), (ember.ones(1),)])
