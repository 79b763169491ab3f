"""nn.init: gains and fans, in-place fills checked statistically with fixed seeds."""
import math

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.nn import init
from ember.nn.init import _calculate_fan_in_and_fan_out


@pytest.fixture(autouse=True)
def _seed():
    ember.manual_seed(1234)


def _np(t):
    return t.detach().double().numpy()


def test_calculate_gain():
    for name in ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                 "conv_transpose3d", "sigmoid"]:
        assert init.calculate_gain(name) == 1
    assert init.calculate_gain("tanh") == pytest.approx(5.0 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2.0))
    assert init.calculate_gain("leaky_relu") == pytest.approx(math.sqrt(2.0 / (1 + 0.01 ** 2)))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2.0 / 1.04))
    assert init.calculate_gain("leaky_relu", 1) == pytest.approx(1.0)
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)
    with pytest.raises(ValueError, match="Unsupported nonlinearity gelu"):
        init.calculate_gain("gelu")


def test_fans():
    assert _calculate_fan_in_and_fan_out(ember.empty(5, 3)) == (3, 5)
    assert _calculate_fan_in_and_fan_out(ember.empty(8, 4, 3, 2)) == (24, 48)
    assert _calculate_fan_in_and_fan_out(ember.empty(8, 4, 3)) == (12, 24)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        _calculate_fan_in_and_fan_out(ember.empty(3))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(ember.empty(3, 3), mode="fan_avg")


def test_in_place_no_grad_and_returns_tensor():
    p = nn.Parameter(ember.empty(30, 20))
    for fn in (init.uniform_, init.normal_, init.xavier_uniform_, init.xavier_normal_,
               init.kaiming_uniform_, init.kaiming_normal_, init.orthogonal_, init.ones_, init.zeros_,
               init.eye_, lambda t: init.constant_(t, 0.5), lambda t: init.sparse_(t, 0.1),
               lambda t: init.trunc_normal_(t)):
        out = fn(p)
        assert out is p and p.is_leaf and p.grad_fn is None and p.requires_grad


def test_uniform_and_normal_statistics():
    t = init.uniform_(ember.empty(200000), -2.0, 3.0)
    a = _np(t)
    assert a.min() >= -2.0 and a.max() < 3.0
    assert abs(a.mean() - 0.5) < 0.02 and abs(a.std() - 5 / math.sqrt(12)) < 0.02
    t = init.normal_(ember.empty(200000, dtype=ember.float64), 1.5, 0.5)
    a = _np(t)
    assert abs(a.mean() - 1.5) < 0.01 and abs(a.std() - 0.5) < 0.01


def test_generator_reproducibility():
    g1, g2 = ember.Generator().manual_seed(7), ember.Generator().manual_seed(7)
    for fn in (init.uniform_, init.normal_, init.xavier_uniform_, init.kaiming_normal_, init.orthogonal_,
               init.trunc_normal_, lambda t, generator: init.sparse_(t, 0.3, generator=generator)):
        a = fn(ember.empty(6, 5), generator=g1)
        b = fn(ember.empty(6, 5), generator=g2)
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_constant_ones_zeros_eye():
    np.testing.assert_array_equal(init.constant_(ember.empty(2, 3), 0.25).numpy(), np.full((2, 3), 0.25))
    np.testing.assert_array_equal(init.ones_(ember.empty(4)).numpy(), np.ones(4))
    np.testing.assert_array_equal(init.zeros_(ember.empty(2, 2, dtype=ember.float64)).numpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(init.eye_(ember.empty(3, 5)).numpy(), np.eye(3, 5))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(ember.empty(3))


@pytest.mark.parametrize("shape,groups", [((4, 3, 5), 1), ((6, 2, 3, 3), 2), ((4, 4, 3, 3, 3), 2),
                                          ((2, 5, 1, 2), 1)])
def test_dirac(shape, groups):
    t = init.dirac_(ember.empty(*shape), groups=groups)
    ref = np.zeros(shape)
    out_per = shape[0] // groups
    for g in range(groups):
        for d in range(min(out_per, shape[1])):
            ref[(g * out_per + d, d) + tuple(s // 2 for s in shape[2:])] = 1
    np.testing.assert_array_equal(t.numpy(), ref)


def test_dirac_errors():
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions are supported"):
        init.dirac_(ember.empty(2, 2))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(ember.empty(3, 2, 2), groups=2)


def test_xavier():
    t = ember.empty(300, 500)
    fan_in, fan_out = 500, 300
    for gain in (1.0, init.calculate_gain("tanh")):
        bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
        a = _np(init.xavier_uniform_(t, gain=gain))
        assert np.abs(a).max() <= bound * (1 + 1e-6) and np.abs(a).max() > 0.99 * bound
        assert abs(a.std() - bound / math.sqrt(3)) < 0.01 * bound
        a = _np(init.xavier_normal_(t, gain=gain))
        std = gain * math.sqrt(2.0 / (fan_in + fan_out))
        assert abs(a.std() - std) < 0.01 * std and abs(a.mean()) < 0.01 * std


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
@pytest.mark.parametrize("nonlinearity,a", [("relu", 0), ("leaky_relu", 0), ("leaky_relu", math.sqrt(5)),
                                            ("linear", 0), ("selu", 0)])
def test_kaiming(mode, nonlinearity, a):
    t = ember.empty(64, 32, 5, 5)  # fan_in 800, fan_out 1600
    fan = 800 if mode == "fan_in" else 1600
    std = init.calculate_gain(nonlinearity, a) / math.sqrt(fan)
    u = _np(init.kaiming_uniform_(t, a=a, mode=mode, nonlinearity=nonlinearity))
    bound = math.sqrt(3.0) * std
    assert np.abs(u).max() <= bound * (1 + 1e-6) and np.abs(u).max() > 0.99 * bound
    assert abs(u.std() - std) < 0.01 * std
    n = _np(init.kaiming_normal_(t, a=a, mode=mode, nonlinearity=nonlinearity))
    assert abs(n.std() - std) < 0.01 * std and abs(n.mean()) < 0.01 * std


def test_kaiming_default_matches_linear_reset_parameters_bound():
    # torch's Linear uses kaiming_uniform_(w, a=sqrt(5)): bound = 1 / sqrt(fan_in)
    a = _np(init.kaiming_uniform_(ember.empty(400, 100), a=math.sqrt(5)))
    assert np.abs(a).max() <= 0.1 + 1e-7 and np.abs(a).max() > 0.099


def test_kaiming_zero_element_warns():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(ember.empty(0, 3))
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_normal_(ember.empty(3, 0))


def _truncnorm_moments(mean, std, a, b):
    def pdf(z):
        return math.exp(-z * z / 2) / math.sqrt(2 * math.pi)

    def cdf(z):
        return 0.5 * (1 + math.erf(z / math.sqrt(2)))

    al, be = (a - mean) / std, (b - mean) / std
    z = cdf(be) - cdf(al)
    m = mean + std * (pdf(al) - pdf(be)) / z
    var = std ** 2 * (1 + (al * pdf(al) - be * pdf(be)) / z - ((pdf(al) - pdf(be)) / z) ** 2)
    return m, math.sqrt(var)


@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (1.0, 2.0, -1.0, 4.0), (0.0, 0.02, -0.04, 0.04),
                                          (0.0, 1.0, 0.5, 3.0)])
def test_trunc_normal(mean, std, a, b):
    t = init.trunc_normal_(ember.empty(300000), mean, std, a, b)
    x = _np(t)
    assert x.min() >= a and x.max() <= b
    m, s = _truncnorm_moments(mean, std, a, b)
    assert abs(x.mean() - m) < 0.01 * std and abs(x.std() - s) < 0.01 * std
    # the empirical CDF at the midpoint of [a, b] matches the truncated normal's
    mid = (a + b) / 2

    def cdf(v):
        return 0.5 * (1 + math.erf((v - mean) / (std * math.sqrt(2))))
    expected = (cdf(mid) - cdf(a)) / (cdf(b) - cdf(a))
    assert abs((x <= mid).mean() - expected) < 0.005


def test_trunc_normal_dtypes_and_warning():
    t = init.trunc_normal_(ember.empty(1000, dtype=ember.float16), 0.0, 1.0, -1.0, 1.0)
    assert t.dtype == ember.float16 and np.abs(_np(t)).max() <= 1.0
    with pytest.warns(UserWarning, match="mean is more than 2 std from"):
        init.trunc_normal_(ember.empty(10), mean=10.0, std=1.0, a=-2.0, b=2.0)


@pytest.mark.parametrize("shape", [(50, 50), (30, 80), (80, 30), (16, 4, 3, 3), (1, 5), (5, 1)])
def test_orthogonal(shape):
    gain = 1.7
    t = init.orthogonal_(ember.empty(*shape), gain=gain)
    rows = shape[0]
    q = _np(t).reshape(rows, -1)
    if rows <= q.shape[1]:
        np.testing.assert_allclose(q @ q.T, gain ** 2 * np.eye(rows), atol=1e-5)
    else:
        np.testing.assert_allclose(q.T @ q, gain ** 2 * np.eye(q.shape[1]), atol=1e-5)


def test_orthogonal_is_haar_distributed():
    # For a Haar-random orthogonal n x n matrix, each entry has mean 0 and variance 1/n.
    n = 8
    entries = np.stack([_np(init.orthogonal_(ember.empty(n, n))) for _ in range(400)])
    assert abs(entries.mean()) < 0.01
    assert abs(entries.var() - 1.0 / n) < 0.01
    # and the diagonal is not biased towards positive values (the sign fix-up of QR)
    assert abs(entries[:, np.arange(n), np.arange(n)].mean()) < 0.02


def test_orthogonal_errors_and_empty():
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(ember.empty(4))
    assert init.orthogonal_(ember.empty(0, 3)).shape == (0, 3)


def test_sparse():
    t = init.sparse_(ember.empty(40, 300), sparsity=0.25, std=0.5)
    a = _np(t)
    np.testing.assert_array_equal((a == 0).sum(axis=0), np.full(300, 10))
    nz = a[a != 0]
    assert abs(nz.std() - 0.5) < 0.02
    # the zeroed rows differ from column to column
    assert len({tuple(np.nonzero(a[:, j] == 0)[0]) for j in range(300)}) > 250
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.sparse_(ember.empty(3, 3, 3), 0.1)
    np.testing.assert_array_equal(_np(init.sparse_(ember.empty(5, 4), 0.0)) != 0, np.ones((5, 4), bool))


def test_deprecated_aliases_warn():
    with pytest.warns(FutureWarning, match=r"`nn.init.normal` is now deprecated in favor of `nn.init.normal_`"):
        init.normal(ember.empty(3))
    with pytest.warns(FutureWarning, match="xavier_uniform"):
        init.xavier_uniform(ember.empty(3, 3))


def test_private_no_grad_helpers():
    p = nn.Parameter(ember.empty(1000))
    assert init._no_grad_trunc_normal_(p, 0.0, 1.0, -0.5, 0.5) is p and np.abs(_np(p)).max() <= 0.5
    assert init._no_grad_uniform_(p, 2.0, 3.0) is p and _np(p).min() >= 2.0
    assert init._no_grad_normal_(p, 5.0, 0.01) is p and abs(_np(p).mean() - 5.0) < 0.01
    assert init._no_grad_fill_(p, 7.0) is p and (_np(p) == 7.0).all()
    assert init._no_grad_zero_(p) is p and (_np(p) == 0.0).all()
    assert p.grad_fn is None
