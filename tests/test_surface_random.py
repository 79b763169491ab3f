"""Random fills of the torch surface: moments against the closed forms, seeding,
dtypes and errors."""
import numpy as np
import pytest

import ember


def _sample(fill, n=200000, dtype=ember.float64, device="cpu"):
    ember.manual_seed(0)
    return fill(ember.empty(n, dtype=dtype, device=device)).cpu().numpy()


def test_geometric(device):
    x = _sample(lambda t: t.geometric_(0.25), device=device)
    assert x.min() >= 1 and np.all(x == np.round(x))
    assert abs(x.mean() - 4.0) < 0.05 and abs(x.var() - 12.0) < 0.5
    xi = _sample(lambda t: t.geometric_(0.5), dtype=ember.int64, device=device)
    assert xi.dtype == np.int64 and abs(xi.mean() - 2.0) < 0.03
    with pytest.raises(RuntimeError, match=r"\(0, 1\)"):
        ember.empty(3).geometric_(1.5)


def test_log_normal(device):
    x = _sample(lambda t: t.log_normal_(0.5, 0.25), device=device)
    assert x.min() > 0
    np.testing.assert_allclose(np.log(x).mean(), 0.5, atol=0.005)
    np.testing.assert_allclose(np.log(x).std(), 0.25, atol=0.005)
    with pytest.raises(RuntimeError, match="std > 0"):
        ember.empty(3).log_normal_(0, -1)


def test_cauchy(device):
    x = _sample(lambda t: t.cauchy_(1.0, 2.0), device=device)
    np.testing.assert_allclose(np.median(x), 1.0, atol=0.05)
    q1, q3 = np.percentile(x, [25, 75])
    np.testing.assert_allclose((q3 - q1) / 2, 2.0, atol=0.05)


def test_poisson(device):
    ember.manual_seed(1)
    rates = ember.tensor([0.0, 0.5, 4.0, 30.0, 1200.0], dtype=ember.float64, device=device)
    draws = ember.poisson(rates.expand(20000, 5).contiguous()).cpu().numpy()
    assert np.all(draws[:, 0] == 0) and np.all(draws == np.round(draws))
    np.testing.assert_allclose(draws.mean(0)[1:], [0.5, 4.0, 30.0, 1200.0], rtol=0.02)
    np.testing.assert_allclose(draws.var(0)[1:], [0.5, 4.0, 30.0, 1200.0], rtol=0.06)
    ember.manual_seed(3)
    a = ember.poisson(ember.full((50,), 3.0))
    ember.manual_seed(3)
    assert ember.equal(a, ember.poisson(ember.full((50,), 3.0)))
    with pytest.raises(RuntimeError, match="non-negative"):
        ember.poisson(ember.tensor([-1.0]))
    with pytest.raises(RuntimeError, match="not implemented"):
        ember.poisson(ember.tensor([1]))
