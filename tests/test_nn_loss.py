"""Losses (nn.functional and modules) against NumPy references: reductions, weights,
ignore_index, label smoothing, class probabilities, N-d inputs, legacy
size_average/reduce, gradcheck/gradgradcheck in float64, the fused cross entropy
against log_softmax + nll, CTC against brute-force alignment enumeration, and
PyTorch's errors."""
import itertools
import math

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck


def t(a, dtype=ember.float64, device="cpu", rg=False):
    x = ember.tensor(np.asarray(a), dtype=dtype, device=device)
    return x.requires_grad_(rg) if rg else x


def idx(a, device="cpu"):
    return ember.tensor(np.asarray(a, dtype=np.int64), device=device)


def np_log_softmax(a, axis):
    m = a.max(axis=axis, keepdims=True)
    return a - m - np.log(np.exp(a - m).sum(axis=axis, keepdims=True))


def np_nll(logp, target, weight=None, reduction="mean", ignore_index=-100):
    """logp (N, C, ...) or (C,), target (N, ...) or ()."""
    if logp.ndim == 1:
        logp, target = logp[None], np.asarray(target)[None]
        squeeze = True
    else:
        squeeze = False
    C = logp.shape[1]
    lp = np.moveaxis(logp, 1, -1).reshape(-1, C)
    tg = np.asarray(target).reshape(-1)
    w = np.ones(C) if weight is None else weight
    keep = tg != ignore_index
    safe = np.where(keep, tg, 0)
    wt = np.where(keep, w[safe], 0.0)
    loss = -wt * lp[np.arange(len(tg)), safe]
    if reduction == "none":
        out = loss.reshape(np.asarray(target).shape)
        return out[0] if squeeze else out
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / wt.sum()


@pytest.mark.parametrize("shape", [(5,), (4, 5), (3, 5, 2), (2, 4, 3, 2)])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_and_cross_entropy(shape, reduction, weighted, device):
    rng = np.random.default_rng(0)
    x = rng.normal(size=shape) * 3
    C = shape[0] if len(shape) == 1 else shape[1]
    tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    tg = rng.integers(0, C, tshape)
    if tg.ndim:
        tg.reshape(-1)[0] = -100  # one ignored target
    w = rng.uniform(0.5, 2, C) if weighted else None
    wt = t(w, device=device) if weighted else None
    logp = np_log_softmax(x, 0 if len(shape) == 1 else 1)
    exp = np_nll(logp, tg, w, reduction)
    got = F.cross_entropy(t(x, device=device), idx(tg, device), weight=wt, reduction=reduction)
    np.testing.assert_allclose(got.cpu().numpy(), exp, atol=1e-12)
    got = F.nll_loss(t(logp, device=device), idx(tg, device), weight=wt, reduction=reduction)
    np.testing.assert_allclose(got.cpu().numpy(), exp, atol=1e-12)
    xt = t(x, device=device, rg=True)
    assert gradcheck(lambda v: F.cross_entropy(v, idx(tg, device), weight=wt,
                                               reduction=reduction), (xt,))
    assert gradgradcheck(lambda v: F.cross_entropy(v, idx(tg, device), weight=wt,
                                                   reduction=reduction), (xt,))
    lt = t(logp, device=device, rg=True)
    assert gradcheck(lambda v: F.nll_loss(v, idx(tg, device), weight=wt, reduction=reduction),
                     (lt,))
    assert gradgradcheck(lambda v: F.nll_loss(v, idx(tg, device), weight=wt,
                                              reduction=reduction), (lt,))


def test_fused_cross_entropy_matches_composite_at_extremes(device):
    a = np.array([[1e4, -1e4, 0.0], [-np.inf, 3.0, 1.0], [-1e4, -1e4, -1e4], [5.0, 5.0, -np.inf]])
    tg = idx([0, 1, 2, 1], device)
    x1 = t(a, device=device, rg=True)
    l1 = F.cross_entropy(x1, tg)
    l1.backward()
    x2 = t(a, device=device, rg=True)
    l2 = F.nll_loss(F.log_softmax(x2, 1), tg)
    l2.backward()
    np.testing.assert_allclose(l1.item(), l2.item(), atol=1e-12)
    np.testing.assert_allclose(x1.grad.cpu().numpy(), x2.grad.cpu().numpy(), atol=1e-12)
    assert np.isfinite(x1.grad.cpu().numpy()).all()
    assert l1.grad_fn.name() == "CrossEntropyLossBackward0"


def test_cross_entropy_float32_batch(device):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(64, 10)).astype(np.float32)
    tg = rng.integers(0, 10, 64)
    got = F.cross_entropy(t(x, ember.float32, device), idx(tg, device))
    np.testing.assert_allclose(got.item(), np_nll(np_log_softmax(x.astype(np.float64), 1), tg),
                               rtol=1e-6)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_label_smoothing(reduction, weighted, device):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(6, 4))
    tg = np.array([0, 1, 2, 3, -100, 1])
    w = rng.uniform(0.5, 2, 4) if weighted else None
    ls = 0.2
    logp = np_log_softmax(x, 1)
    nll = np_nll(logp, tg, w, reduction)
    ww = np.ones(4) if w is None else w
    keep = tg != -100
    smooth = np.where(keep, -(logp * ww).sum(1), 0.0)
    if reduction == "mean":
        denom = ww[np.where(keep, tg, 0)][keep].sum() if weighted else keep.sum()
        ret = smooth.sum() / denom
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = smooth
    exp = (1 - ls) * nll + ret * ls / 4
    xt = t(x, device=device, rg=True)
    wt = t(w, device=device) if weighted else None
    got = F.cross_entropy(xt, idx(tg, device), weight=wt, reduction=reduction, label_smoothing=ls)
    np.testing.assert_allclose(got.detach().cpu().numpy(), exp, atol=1e-12)
    assert gradcheck(lambda v: F.cross_entropy(v, idx(tg, device), weight=wt, reduction=reduction,
                                               label_smoothing=ls), (xt,))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_probabilities(reduction, device):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(3, 4, 2))
    p = rng.uniform(size=(3, 4, 2))
    p /= p.sum(1, keepdims=True)
    w = rng.uniform(0.5, 2, 4)
    for ls in (0.0, 0.1):
        q = p * (1 - ls) + ls / 4
        loss = -(np_log_softmax(x, 1) * q * w[None, :, None]).sum(1)
        exp = {"none": loss, "sum": loss.sum(), "mean": loss.sum() / 6}[reduction]
        xt, pt = t(x, device=device, rg=True), t(p, device=device, rg=True)
        def f(a, b, ls=ls):
            return F.cross_entropy(a, b, weight=t(w, device=device), reduction=reduction,
                                   label_smoothing=ls)
        np.testing.assert_allclose(f(xt, pt).detach().cpu().numpy(), exp, atol=1e-12)
        assert gradcheck(f, (xt, pt))


def test_nll_cross_entropy_errors(device):
    x = t(np.zeros((3, 5)), device=device)
    with pytest.raises(RuntimeError, match="expected scalar type Long but found Float"):
        F.cross_entropy(x, t([1.0, 2.0, 3.0], ember.float32, device))
    with pytest.raises(RuntimeError, match="expected scalar type Long but found Float"):
        F.nll_loss(x, t([1.0, 2.0, 3.0], ember.float32, device))
    with pytest.raises(IndexError, match="Target 12 is out of bounds."):
        F.cross_entropy(x, idx([0, 12, 1], device))
    with pytest.raises(IndexError, match="Target -1 is out of bounds."):
        F.nll_loss(x, idx([0, -1, 1], device))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target "
                                         r"batch_size \(2\)"):
        F.cross_entropy(x, idx([0, 1], device))
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 5"):
        F.cross_entropy(x, idx([0, 1, 2], device), weight=t([1.0, 2.0], device=device))
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.cross_entropy(x, idx([0, 1, 2], device), reduction="avg")
    with pytest.raises(RuntimeError, match="Expected target size"):
        F.cross_entropy(t(np.zeros((2, 3, 4)), device=device), idx(np.zeros((2, 3)), device))


def test_weight_is_not_differentiable(device):
    x = t(np.zeros((2, 3)), device=device, rg=True)
    w = t([1.0, 2.0, 3.0], device=device, rg=True)
    loss = F.cross_entropy(x, idx([0, 2], device), weight=w)
    with pytest.raises(RuntimeError, match="the derivative for 'weight' is not implemented"):
        loss.backward()


def test_ignore_all_mean_is_nan(device):
    x = t(np.zeros((2, 3)), device=device)
    assert math.isnan(F.cross_entropy(x, idx([-100, -100], device)).item())


def test_legacy_reduction_args(device):
    x = t(np.random.default_rng(4).normal(size=(4, 3)), device=device)
    tg = idx([0, 1, 2, 0], device)
    none = F.cross_entropy(x, tg, reduction="none")
    assert F.cross_entropy(x, tg, size_average=False).item() == pytest.approx(none.sum().item())
    assert F.cross_entropy(x, tg, reduce=False).shape == (4,)
    assert nn.CrossEntropyLoss(size_average=False).reduction == "sum"
    assert nn.MSELoss(reduce=False).reduction == "none"


REG = {
    "mse": (F.mse_loss, lambda x, y: (x - y) ** 2),
    "l1": (F.l1_loss, lambda x, y: np.abs(x - y)),
    "smooth_l1": (lambda x, y, **k: F.smooth_l1_loss(x, y, beta=0.5, **k),
                  lambda x, y: np.where(np.abs(x - y) < 0.5, 0.5 * (x - y) ** 2 / 0.5,
                                        np.abs(x - y) - 0.25)),
    "huber": (lambda x, y, **k: F.huber_loss(x, y, delta=0.7, **k),
              lambda x, y: np.where(np.abs(x - y) < 0.7, 0.5 * (x - y) ** 2,
                                    0.7 * (np.abs(x - y) - 0.35))),
}


@pytest.mark.parametrize("name", sorted(REG))
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_regression_losses(name, reduction, device):
    f, ref = REG[name]
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    loss = ref(a, b)
    exp = {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]
    xa, xb = t(a, device=device, rg=True), t(b, device=device, rg=True)
    np.testing.assert_allclose(f(xa, xb, reduction=reduction).detach().cpu().numpy(), exp,
                               atol=1e-12)
    assert gradcheck(lambda u, v: f(u, v, reduction=reduction), (xa, xb))
    assert gradgradcheck(lambda u, v: f(u, v, reduction=reduction), (xa, xb))


def test_smooth_l1_beta_zero_and_broadcast_warning(device):
    a, b = t([1.0, -2.0], device=device), t([0.0, 0.0], device=device)
    assert F.smooth_l1_loss(a, b, beta=0.0).item() == pytest.approx(1.5)
    with pytest.warns(UserWarning, match="different to the input size"):
        F.mse_loss(a, t([0.0], device=device))


def test_bce(device):
    rng = np.random.default_rng(6)
    p = rng.uniform(0.05, 0.95, (4, 3))
    y = rng.integers(0, 2, (4, 3)).astype(float)
    w = rng.uniform(0.5, 2, 3)
    exp = -(w * (y * np.log(p) + (1 - y) * np.log(1 - p)))
    xp, yt = t(p, device=device, rg=True), t(y, device=device)
    got = F.binary_cross_entropy(xp, yt, weight=t(w, device=device), reduction="none")
    np.testing.assert_allclose(got.detach().cpu().numpy(), exp, atol=1e-12)
    assert F.binary_cross_entropy(xp, yt).item() == pytest.approx(
        (-(y * np.log(p) + (1 - y) * np.log(1 - p))).mean())
    assert gradcheck(lambda v: F.binary_cross_entropy(v, yt), (xp,))
    # log clamped at -100: p = 0 with target 1 gives 100, and finite gradients
    z = t([0.0, 1.0], device=device, rg=True)
    out = F.binary_cross_entropy(z, t([1.0, 0.0], device=device), reduction="sum")
    assert out.item() == pytest.approx(200.0)
    out.backward()
    assert np.isfinite(z.grad.cpu().numpy()).all()
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(t([1.5], device=device), t([1.0], device=device))
    with pytest.raises(ValueError, match="different to the input size"):
        F.binary_cross_entropy(t([[0.5]], device=device), t([1.0], device=device))


def test_bce_with_logits(device):
    rng = np.random.default_rng(7)
    x = rng.normal(size=(4, 3)) * 4
    y = rng.uniform(size=(4, 3))
    pw = rng.uniform(0.5, 3, 3)
    w = rng.uniform(0.5, 2, 3)
    sig = 1 / (1 + np.exp(-x))
    exp = -w * (pw * y * np.log(sig) + (1 - y) * np.log(1 - sig))
    xt, yt = t(x, device=device, rg=True), t(y, device=device, rg=True)
    f = lambda a, b: F.binary_cross_entropy_with_logits(  # noqa: E731
        a, b, weight=t(w, device=device), pos_weight=t(pw, device=device), reduction="none")
    np.testing.assert_allclose(f(xt, yt).detach().cpu().numpy(), exp, atol=1e-10)
    assert gradcheck(f, (xt, yt))
    assert gradgradcheck(f, (xt, yt))
    big = t([1e4, -1e4], device=device, rg=True)
    out = F.binary_cross_entropy_with_logits(big, t([0.0, 1.0], device=device), reduction="sum")
    assert out.item() == pytest.approx(2e4)
    out.backward()
    assert np.isfinite(big.grad.cpu().numpy()).all()
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(t([1.0], device=device), t([1.0, 0.0], device=device))


def test_kl_div(device):
    rng = np.random.default_rng(8)
    q = rng.uniform(0.1, 1, (3, 4))
    q /= q.sum(1, keepdims=True)
    p = rng.uniform(0.1, 1, (3, 4))
    p /= p.sum(1, keepdims=True)
    p[0, 0] = 0.0
    lq = np.log(q)
    pointwise = np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0) - p * lq
    xt, pt = t(lq, device=device, rg=True), t(p, device=device)
    assert F.kl_div(xt, pt, reduction="batchmean").item() == pytest.approx(pointwise.sum() / 3)
    assert F.kl_div(xt, pt, reduction="sum").item() == pytest.approx(pointwise.sum())
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(xt, pt)
    lp = np.log(np.where(p > 0, p, 1e-3))
    got = F.kl_div(xt, t(lp, device=device), reduction="none", log_target=True)
    np.testing.assert_allclose(got.detach().cpu().numpy(), np.exp(lp) * (lp - lq), atol=1e-12)
    assert gradcheck(lambda v: F.kl_div(v, pt, reduction="batchmean"), (xt,))
    assert nn.KLDivLoss(reduction="batchmean", log_target=True).log_target


def test_poisson_and_gaussian_nll(device):
    rng = np.random.default_rng(9)
    x = rng.normal(size=(5,))
    y = rng.integers(0, 5, 5).astype(float)
    xt = t(x, device=device, rg=True)
    assert F.poisson_nll_loss(xt, t(y, device=device)).item() == pytest.approx(
        (np.exp(x) - y * x).mean())
    stir = np.where(y > 1, y * np.log(np.where(y > 1, y, 2)) - y + 0.5 * np.log(2 * np.pi * np.where(y > 1, y, 2)), 0)
    assert F.poisson_nll_loss(xt, t(y, device=device), full=True, reduction="sum").item() == \
        pytest.approx((np.exp(x) - y * x + stir).sum())
    pos = np.abs(x) + 0.5
    got = F.poisson_nll_loss(t(pos, device=device), t(y, device=device), log_input=False,
                             reduction="none")
    np.testing.assert_allclose(got.cpu().numpy(), pos - y * np.log(pos + 1e-8), atol=1e-12)
    assert gradcheck(lambda v: F.poisson_nll_loss(v, t(y, device=device)), (xt,))
    var = rng.uniform(0.5, 2, 5)
    vt = t(var, device=device, rg=True)
    exp = (0.5 * (np.log(var) + (x - y) ** 2 / var)).mean()
    assert F.gaussian_nll_loss(xt, t(y, device=device), vt).item() == pytest.approx(exp)
    assert F.gaussian_nll_loss(xt, t(y, device=device), vt, full=True).item() == \
        pytest.approx(exp + 0.5 * math.log(2 * math.pi))
    assert gradcheck(lambda a, b: F.gaussian_nll_loss(a, t(y, device=device), b), (xt, vt))
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(xt, t(y, device=device), t(-var, device=device))
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(xt, t(y, device=device), t(var[:3], device=device))


def test_margin_losses(device):
    rng = np.random.default_rng(10)
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    y = np.array([1, -1, 1, -1.0])
    cos = (a * b).sum(1) / np.sqrt(((a * a).sum(1) + 1e-12) * ((b * b).sum(1) + 1e-12))
    exp = np.where(y == 1, 1 - cos, np.maximum(cos - 0.1, 0))
    at, bt = t(a, device=device, rg=True), t(b, device=device, rg=True)
    got = F.cosine_embedding_loss(at, bt, t(y, device=device), margin=0.1, reduction="none")
    np.testing.assert_allclose(got.detach().cpu().numpy(), exp, atol=1e-12)
    assert gradcheck(lambda u, v: F.cosine_embedding_loss(u, v, t(y, device=device), 0.1),
                     (at, bt))
    x1, x2 = rng.normal(size=5), rng.normal(size=5)
    yy = np.array([1, -1, 1, 1, -1.0])
    exp = np.maximum(-yy * (x1 - x2) + 0.2, 0).mean()
    assert F.margin_ranking_loss(t(x1, device=device), t(x2, device=device),
                                 t(yy, device=device), margin=0.2).item() == pytest.approx(exp)
    n = rng.normal(size=(4, 3))

    def pd(u, v):
        return np.linalg.norm(u - v + 1e-6, axis=-1)
    exp = np.maximum(1.0 + pd(a, b) - pd(a, n), 0).mean()
    nt = t(n, device=device, rg=True)
    assert F.triplet_margin_loss(at, bt, nt).item() == pytest.approx(exp)
    exp = np.maximum(1.0 + pd(a, b) - np.minimum(pd(a, n), pd(b, n)), 0).mean()
    assert F.triplet_margin_loss(at, bt, nt, swap=True).item() == pytest.approx(exp)
    assert gradcheck(lambda u, v, w: F.triplet_margin_loss(u, v, w), (at, bt, nt))


def test_multilabel_soft_margin(device):
    rng = np.random.default_rng(11)
    x = rng.normal(size=(3, 4))
    y = rng.integers(0, 2, (3, 4)).astype(float)
    w = rng.uniform(0.5, 2, 4)
    ls = lambda v: -np.log1p(np.exp(-v))  # noqa: E731
    exp = (-(y * ls(x) + (1 - y) * ls(-x)) * w).mean(1).mean()
    xt = t(x, device=device, rg=True)
    got = F.multilabel_soft_margin_loss(xt, t(y, device=device), weight=t(w, device=device))
    assert got.item() == pytest.approx(exp)
    assert gradcheck(lambda v: F.multilabel_soft_margin_loss(v, t(y, device=device)), (xt,))


def _ctc_brute(lp, target, blank=0):
    """-log sum over all alignments of length T that collapse to `target`."""
    T, C = lp.shape
    total = -np.inf
    for path in itertools.product(range(C), repeat=T):
        collapsed = [k for k, _ in itertools.groupby(path) if k != blank]
        if collapsed == list(target):
            total = np.logaddexp(total, sum(lp[i, c] for i, c in enumerate(path)))
    return -total


def test_ctc_against_brute_force(device):
    rng = np.random.default_rng(12)
    T, N, C = 5, 3, 4
    logits = rng.normal(size=(T, N, C))
    lp = np_log_softmax(logits, 2)
    targets = np.array([[1, 2, 2], [3, 1, 0], [2, 0, 0]])
    tl = [3, 2, 1]
    il = [5, 4, 5]
    exp = np.array([_ctc_brute(lp[: il[n], n], targets[n, : tl[n]]) for n in range(N)])
    lpt = t(lp, device=device, rg=True)
    got = F.ctc_loss(lpt, idx(targets, device), idx(il), idx(tl), reduction="none")
    np.testing.assert_allclose(got.detach().cpu().numpy(), exp, atol=1e-10)
    assert F.ctc_loss(lpt, idx(targets, device), il, tl).item() == pytest.approx(
        (exp / np.array(tl)).mean())
    assert F.ctc_loss(lpt, idx(targets, device), il, tl, reduction="sum").item() == \
        pytest.approx(exp.sum())
    # concatenated targets give the same
    flat = idx(np.concatenate([targets[n, : tl[n]] for n in range(N)]), device)
    got2 = F.ctc_loss(lpt, flat, idx(il), idx(tl), reduction="none")
    np.testing.assert_allclose(got2.detach().cpu().numpy(), exp, atol=1e-10)
    assert gradcheck(lambda v: F.ctc_loss(v, idx(targets, device), idx(il), idx(tl)), (lpt,))
    # through log_softmax, as models use it
    xt = t(logits, device=device, rg=True)
    assert gradcheck(lambda v: F.ctc_loss(F.log_softmax(v, 2), idx(targets, device), idx(il),
                                          idx(tl), reduction="sum"), (xt,))



def test_ctc_double_backward_raises(device):
    # As PyTorch: the gradient is differentiable under create_graph, but differentiating it
    # raises (no silent zero second derivative, no "does not require grad").
    lp = t(np_log_softmax(np.random.default_rng(0).standard_normal((6, 2, 5)), 2), device=device,
           rg=True)
    loss = F.ctc_loss(lp, idx([[1, 2], [3, 1]], device), [6, 6], [2, 2])
    g, = ember.autograd.grad(loss, lp, create_graph=True)
    assert g.requires_grad

    def names(fn):  # every node name reachable from fn
        out, todo = set(), [fn]
        while todo:
            f = todo.pop()
            if f is not None and type(f).__name__ not in out:
                out.add(type(f).__name__)
                todo.extend(n for n, _ in f.next_functions)
        return out
    assert "NotImplemented" in names(g.grad_fn)  # PyTorch's node for it
    with pytest.raises(RuntimeError, match="derivative for '_ctc_loss_backward' is not implemented"):
        g.sum().backward()
    g1, = ember.autograd.grad(F.ctc_loss(lp, idx([[1, 2], [3, 1]], device), [6, 6], [2, 2]), lp)
    assert not g1.requires_grad
    np.testing.assert_array_equal(g1.cpu().numpy(), g.detach().cpu().numpy())

def test_ctc_impossible_and_zero_infinity(device):
    lp = t(np_log_softmax(np.zeros((2, 1, 3)), 2), device=device, rg=True)
    tg = idx([[1, 1]], device)  # needs 3 frames (1, blank, 1)
    out = F.ctc_loss(lp, tg, [2], [2], reduction="sum")
    assert math.isinf(out.item())
    out = F.ctc_loss(lp, tg, [2], [2], reduction="sum", zero_infinity=True)
    assert out.item() == 0.0
    out.backward()
    assert (lp.grad.cpu().numpy() == 0).all()
    m = nn.CTCLoss(blank=0, zero_infinity=True)
    assert m(lp, tg, [2], [2]).item() == 0.0


def test_ctc_errors(device):
    lp = t(np.zeros((3, 1, 4)), device=device)
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 3"):
        F.ctc_loss(lp, idx([[1]], device), [4], [1])
    with pytest.raises(IndexError, match="out of range"):
        F.ctc_loss(lp, idx([[7]], device), [3], [1])


def test_loss_modules(device):
    rng = np.random.default_rng(13)
    x = t(rng.normal(size=(4, 3)), device=device)
    y = t(rng.normal(size=(4, 3)), device=device)
    tg = idx([0, 2, 1, 1], device)
    w = t([1.0, 2.0, 0.5], device=device)
    assert nn.MSELoss()(x, y).item() == pytest.approx(F.mse_loss(x, y).item())
    assert nn.L1Loss(reduction="sum")(x, y).item() == pytest.approx(F.l1_loss(x, y, reduction="sum").item())
    assert nn.CrossEntropyLoss(weight=w, label_smoothing=0.1)(x, tg).item() == pytest.approx(
        F.cross_entropy(x, tg, weight=w, label_smoothing=0.1).item())
    assert nn.NLLLoss(ignore_index=2)(F.log_softmax(x, 1), tg).item() == pytest.approx(
        F.nll_loss(F.log_softmax(x, 1), tg, ignore_index=2).item())
    p = F.sigmoid(x)
    yb = (y > 0).to(ember.float64)
    assert nn.BCELoss()(p, yb).item() == pytest.approx(F.binary_cross_entropy(p, yb).item())
    assert nn.BCEWithLogitsLoss(pos_weight=w)(x, yb).item() == pytest.approx(
        F.binary_cross_entropy_with_logits(x, yb, pos_weight=w).item())
    assert nn.SmoothL1Loss(beta=0.3)(x, y).item() == pytest.approx(F.smooth_l1_loss(x, y, beta=0.3).item())
    assert nn.HuberLoss(delta=0.3)(x, y).item() == pytest.approx(F.huber_loss(x, y, delta=0.3).item())
    assert nn.MultiLabelSoftMarginLoss()(x, yb).item() == pytest.approx(
        F.multilabel_soft_margin_loss(x, yb).item())
    with pytest.raises(ValueError, match="margin to be greater than 0"):
        nn.TripletMarginLoss(margin=0.0)


def test_non_contiguous_logits_and_targets(device):
    rng = np.random.default_rng(14)
    a = rng.normal(size=(5, 4))
    x = t(a, device=device, rg=True)
    tg = idx([[0, 1], [2, 3], [1, 1], [0, 0]], device)[:, 0]  # strided target
    loss = F.cross_entropy(x.t(), tg)  # (4, 5) transposed view
    assert loss.item() == pytest.approx(np_nll(np_log_softmax(a.T, 1), np.array([0, 2, 1, 0])))
    assert gradcheck(lambda v: F.cross_entropy(v.t(), tg, reduction="sum"), (x,))
    assert gradcheck(lambda v: F.nll_loss(v.t(), tg, reduction="none"), (x,))


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_fused_row_kernels_layouts_and_threads(device, dtype):
    """The fused cross-entropy and nll backward kernels (one pass per row, rows over the thread
    pool) against the analytic gradients, on a non-contiguous input with ignored and weighted
    targets, at 1 and 2 threads (equal results), and on an empty batch."""
    rng = np.random.default_rng(3)
    M, C = 301, 37
    x = rng.normal(size=(M, C)) * 4
    tg = rng.integers(0, C, M)
    tg[::7] = -100
    w = rng.uniform(0.5, 2, C)
    keep = tg != -100
    wt = np.where(keep, w[np.where(keep, tg, 0)], 0.0)
    onehot = np.zeros((M, C))
    onehot[np.arange(M)[keep], tg[keep]] = 1.0
    p = np.exp(x - x.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    want_ce = (p - onehot) * (wt / wt.sum())[:, None]
    want_nll = -onehot * (wt / wt.sum())[:, None]
    tol = dict(rtol=2e-5, atol=1e-7) if dtype == ember.float32 else dict(rtol=1e-10, atol=1e-13)
    threads = ember.get_num_threads()
    grads = []
    try:
        for n in (1, 2):
            ember.set_num_threads(n)
            xt = t(np.ascontiguousarray(x.T), dtype, device).t().requires_grad_()
            assert not xt.is_contiguous()
            F.cross_entropy(xt, idx(tg, device), weight=t(w, dtype, device)).backward()
            lt = t(np.ascontiguousarray(x.T), dtype, device).t().requires_grad_()
            F.nll_loss(lt, idx(tg, device), weight=t(w, dtype, device)).backward()
            np.testing.assert_allclose(xt.grad.cpu().numpy(), want_ce, **tol)
            np.testing.assert_allclose(lt.grad.cpu().numpy(), want_nll, **tol)
            grads.append((xt.grad.cpu().numpy(), lt.grad.cpu().numpy()))
    finally:
        ember.set_num_threads(threads)
    np.testing.assert_array_equal(grads[0][0], grads[1][0])
    np.testing.assert_array_equal(grads[0][1], grads[1][1])
    for f in (F.cross_entropy, F.nll_loss):
        e = t(np.zeros((0, 5)), dtype, device).requires_grad_()
        f(e, idx(np.zeros(0, dtype=np.int64), device), reduction="sum").backward()
        assert e.grad.shape == (0, 5)
