"""Dropout family: statistics of the masks, scaling, training flag, feature (channel)
masks, alpha dropout's mean/variance, reproducibility from ember.manual_seed, gradients
and errors."""
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F


def test_dropout_statistics_and_grad(device):
    ember.manual_seed(0)
    x = ember.ones(200, 500, device=device, requires_grad=True)
    y = F.dropout(x, 0.3)
    a = y.detach().cpu().numpy()
    kept = a != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(a[kept], 1 / 0.7, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), a, rtol=1e-6)


def test_dropout_eval_p0_p1(device):
    x = ember.randn(4, 5, device=device)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert (F.dropout(x, 1.0).cpu().numpy() == 0).all()
    m = nn.Dropout(0.5)
    m.eval()
    assert m(x) is x
    m.train()
    assert not np.array_equal(m(x).cpu().numpy(), x.cpu().numpy())


def test_dropout_reproducible(device):
    x = ember.ones(1000, device=device)
    ember.manual_seed(5)
    a = F.dropout(x, 0.5).cpu().numpy()
    ember.manual_seed(5)
    b = F.dropout(x, 0.5).cpu().numpy()
    np.testing.assert_array_equal(a, b)


def test_dropout_inplace(device):
    ember.manual_seed(1)
    x = ember.ones(100, device=device)
    y = F.dropout(x, 0.5, inplace=True)
    assert y is x
    assert set(np.unique(x.cpu().numpy())) <= {0.0, 2.0}
    leaf = ember.ones(100, device=device, requires_grad=True)
    h = leaf * 1.0
    F.dropout(h, 0.5, inplace=True)
    h.sum().backward()
    np.testing.assert_allclose(leaf.grad.cpu().numpy(), h.detach().cpu().numpy())


@pytest.mark.parametrize("fn,shape", [(F.dropout1d, (4, 30, 5)), (F.dropout1d, (30, 5)),
                                      (F.dropout2d, (4, 30, 3, 3)), (F.dropout3d, (2, 30, 2, 2, 2)),
                                      (F.dropout3d, (30, 2, 2, 2))])
def test_feature_dropout_masks_whole_channels(fn, shape, device):
    ember.manual_seed(2)
    a = fn(ember.ones(*shape, device=device), 0.5).cpu().numpy()
    batched = len(shape) in (3, 4, 5) and not (fn is F.dropout3d and len(shape) == 4) and not (
        fn is F.dropout1d and len(shape) == 2)
    lead = 2 if batched else 1
    per_channel = a.reshape(int(np.prod(shape[:lead])), -1)
    for row in per_channel:
        assert len(set(row.tolist())) == 1 and row[0] in (0.0, 2.0)
    assert 0.2 < (per_channel[:, 0] != 0).mean() < 0.8


def test_feature_dropout_errors(device):
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
        F.dropout1d(ember.ones(2, 3, 4, 5, device=device))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        F.dropout(ember.ones(2, device=device), 1.5)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        nn.Dropout(-0.1)
    with pytest.warns(UserWarning, match="dropout2d: Received a 3D input"):
        F.dropout2d(ember.ones(2, 3, 4, device=device))


def test_alpha_dropout_keeps_mean_and_variance(device):
    ember.manual_seed(3)
    x = ember.randn(400, 500, device=device)
    y = F.alpha_dropout(x, 0.2, training=True).cpu().numpy()
    assert abs(y.mean()) < 0.02
    assert abs(y.std() - 1) < 0.02
    assert F.alpha_dropout(x, 0.2) is x  # training defaults to False
    f = F.feature_alpha_dropout(ember.randn(50, 40, 30, device=device), 0.3, training=True)
    a = f.cpu().numpy()
    alpha_p = -1.7580993408473766
    a0 = 1 / np.sqrt((alpha_p**2 * 0.3 + 1) * 0.7)
    dropped_val = a0 * alpha_p * 0.3 * 0 + (-a0 * 1.7580993408473766 + a0 * 1.7580993408473766 * 0.3)
    dropped = np.isclose(a, dropped_val)
    chans = dropped.reshape(50 * 40, 30)
    assert ((chans.all(1)) | (~chans.any(1))).all()
    m = nn.AlphaDropout(0.2)
    assert isinstance(m(x), ember.Tensor)
    assert nn.FeatureAlphaDropout(0.2).p == 0.2
