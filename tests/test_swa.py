"""ember.optim.swa_utils: AveragedModel (SWA, EMA, custom avg_fn / multi_avg_fn, buffers),
SWALR against its closed form, update_bn over a loader."""
import math

import numpy as np
import pytest

import ember
from ember import nn, optim
from ember.optim import swa_utils as U


class Net(nn.Module):
    def __init__(self, rng):
        super().__init__()
        self.w = nn.Parameter(ember.tensor(rng.standard_normal((3, 2))))
        self.b = nn.Parameter(ember.tensor(rng.standard_normal(2)))
        self.register_buffer("count", ember.tensor(0.0))

    def forward(self, x):
        return x @ self.w + self.b


def _randomize(model, rng):
    with ember.no_grad():
        for p in model.parameters():
            p.copy_(ember.tensor(rng.standard_normal(tuple(p.shape))))
        model.count += 1


@pytest.mark.parametrize("kind", ["swa", "ema", "ema_multi", "swa_multi", "custom"])
def test_averaged_model(kind):
    rng = np.random.default_rng(0)
    model = Net(rng)
    decay = 0.9
    kw = {"swa": {}, "ema": {"avg_fn": U.get_ema_avg_fn(decay)},
          "ema_multi": {"multi_avg_fn": U.get_ema_multi_avg_fn(decay)},
          "swa_multi": {"multi_avg_fn": U.get_swa_multi_avg_fn()},
          "custom": {"avg_fn": lambda avg, p, n: avg * 0.5 + p * 0.5}}[kind]
    avg = U.AveragedModel(model, **kw)
    assert avg.module is not model and int(avg.n_averaged) == 0
    history = []
    for _ in range(5):
        _randomize(model, rng)
        history.append([p.detach().numpy().copy() for p in model.parameters()])
        avg.update_parameters(model)
    assert int(avg.n_averaged) == 5
    for j, p in enumerate(avg.module.parameters()):
        hs = [h[j] for h in history]
        if kind in ("swa", "swa_multi"):
            want = np.mean(hs, axis=0)
        else:
            w = decay if kind.startswith("ema") else 0.5
            want = hs[0]
            for h in hs[1:]:
                want = w * want + (1 - w) * h
        np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-12)
    # buffers are copied from the model (use_buffers=False)
    assert float(avg.module.count) == 5.0
    # forward runs the averaged copy
    x = ember.ones(4, 3, dtype=ember.float64)
    np.testing.assert_allclose(avg(x).detach().numpy(), avg.module(x).detach().numpy())


def test_averaged_model_use_buffers():
    rng = np.random.default_rng(1)
    model = Net(rng)
    avg = U.AveragedModel(model, use_buffers=True)
    counts = []
    for _ in range(4):
        _randomize(model, rng)
        counts.append(float(model.count))
        avg.update_parameters(model)
    # the buffer is averaged like a parameter
    assert float(avg.module.count) == pytest.approx(np.mean(counts))
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        U.AveragedModel(model, avg_fn=U.get_swa_avg_fn(), multi_avg_fn=U.get_swa_multi_avg_fn())


def test_averaged_model_state_dict():
    rng = np.random.default_rng(2)
    model = Net(rng)
    avg = U.AveragedModel(model)
    avg.update_parameters(model)
    sd = avg.state_dict()
    assert set(sd) == {"n_averaged", "module.w", "module.b", "module.count"}
    assert int(sd["n_averaged"]) == 1


def test_avg_fn_errors():
    with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided. Please provide a "
                                         r"value in \[0,1\] range."):
        U.get_ema_avg_fn(1.5)
    with pytest.raises(ValueError, match="Invalid decay value -0.1"):
        U.get_ema_multi_avg_fn(-0.1)


@pytest.mark.parametrize("strategy", ["cos", "linear"])
def test_swalr(strategy):
    p = ember.zeros(2, requires_grad=True)
    opt = optim.SGD([p], lr=1.0)
    sched = U.SWALR(opt, swa_lr=0.05, anneal_epochs=5, anneal_strategy=strategy)

    def f(t):
        return (1 - math.cos(math.pi * t)) / 2 if strategy == "cos" else t

    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(8):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    # closed form: the lr moves from 1.0 to swa_lr along the annealing curve over 5 epochs
    want = [0.05 * f(min(e, 5) / 5) + 1.0 * (1 - f(min(e, 5) / 5)) for e in range(9)]
    np.testing.assert_allclose(lrs, want, rtol=1e-12)
    assert sched.get_last_lr() == [lrs[-1]]
    sd = sched.state_dict()
    assert "anneal_func" not in sd
    sched.load_state_dict(sd)
    assert sched.anneal_func(0.5) == f(0.5)


def test_swalr_errors():
    opt = optim.SGD([ember.zeros(1, requires_grad=True)], lr=1.0)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', "
                                         "instead got x"):
        U.SWALR(opt, 0.1, anneal_strategy="x")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0, got -1"):
        U.SWALR(opt, 0.1, anneal_epochs=-1)


class CountingBN(nn.Module):
    """A BatchNorm-shaped module (running_mean/var, momentum None = cumulative average),
    enough to drive update_bn until ember.nn has BatchNorm."""

    def __init__(self, n):
        super().__init__()
        self.momentum = 0.1
        self.register_buffer("running_mean", ember.zeros(n, dtype=ember.float64))
        self.register_buffer("num_batches_tracked", ember.tensor(0))

    def reset_running_stats(self):
        self.running_mean.zero_()
        self.num_batches_tracked.zero_()

    def forward(self, x):
        if self.training:
            with ember.no_grad():
                self.num_batches_tracked += 1
                m = x.mean(0)
                if self.momentum is None:
                    f = 1.0 / float(self.num_batches_tracked)
                else:
                    f = self.momentum
                self.running_mean.mul_(1 - f).add_(m * f)
        return x


class BNNet(nn.Module):
    def __init__(self):
        super().__init__()
        # ember.nn's BatchNorm1d once it exists, else a module with BatchNorm's shape
        self.bn = nn.BatchNorm1d(3).double() if hasattr(nn, "BatchNorm1d") else CountingBN(3)

    def forward(self, x):
        return self.bn(x)


def test_update_bn():
    rng = np.random.default_rng(0)
    batches = [rng.standard_normal((4, 3)) for _ in range(5)]
    loader = [(ember.tensor(b), ember.zeros(4)) for b in batches]  # (input, target) pairs
    model = BNNet()
    model.eval()
    U.update_bn(loader, model)
    np.testing.assert_allclose(model.bn.running_mean.numpy(),
                               np.mean([b.mean(0) for b in batches], axis=0), rtol=1e-12)
    assert model.bn.momentum == 0.1 and not model.training
    # plain tensors as loader items, and a model without BN is a no-op
    U.update_bn([ember.tensor(b) for b in batches[:2]], model)
    np.testing.assert_allclose(model.bn.running_mean.numpy(),
                               np.mean([b.mean(0) for b in batches[:2]], axis=0), rtol=1e-12)
    U.update_bn(loader, Net(rng))
