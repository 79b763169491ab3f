"""Registry entries of the losses (nn.functional)."""
import numpy as np

import ember
import ember.nn.functional as F

from . import ErrorCase, OpEntry, Sample


def _t(a, dtype, device):
    return ember.tensor(np.asarray(a), dtype=dtype, device=device)


def _rng(seed=0):
    return np.random.default_rng(seed)


def _log_softmax(a, axis):
    m = a.max(axis=axis, keepdims=True)
    return a - m - np.log(np.exp(a - m).sum(axis=axis, keepdims=True))


def _nll_ref(logp, target, weight=None, reduction="mean", ignore_index=-100, **_):
    C = logp.shape[1]
    lp = np.moveaxis(logp, 1, -1).reshape(-1, C)
    tg = target.reshape(-1)
    w = np.ones(C) if weight is None else weight
    keep = tg != ignore_index
    safe = np.where(keep, tg, 0)
    wt = np.where(keep, w[safe], 0.0)
    loss = -wt * lp[np.arange(len(tg)), safe]
    if reduction == "none":
        return loss.reshape(target.shape)
    return loss.sum() if reduction == "sum" else loss.sum() / wt.sum()


def _class_samples(log_probs):
    def samples(device, dtype):
        r = _rng()
        for shape, red in [((4, 5), "mean"), ((3, 4, 2), "none"), ((4, 5), "sum")]:
            x = r.normal(size=shape)
            if log_probs:
                x = _log_softmax(x, 1)
            tshape = (shape[0],) + shape[2:]
            tg = r.integers(0, shape[1], tshape)
            tg.reshape(-1)[0] = -100
            # class weights are not differentiable (as PyTorch): tests/test_nn_loss.py
            # covers them with gradcheck over the input only
            yield Sample((_t(x, dtype, device), ember.tensor(tg, device=device)),
                         {"reduction": red, "ignore_index": -100}, desc=f"{shape} {red}")
    return samples


def _class_errors(device):
    x = ember.zeros(3, 5, device=device)
    yield ErrorCase((x, ember.tensor([0, 12, 1], device=device)), {}, IndexError,
                    "Target 12 is out of bounds.")
    yield ErrorCase((x, ember.zeros(3, device=device)), {}, RuntimeError,
                    "expected scalar type Long but found Float")
    yield ErrorCase((x, ember.tensor([0, 1], device=device)), {}, ValueError,
                    "Expected input batch_size")


def _pair_samples(device, dtype):
    r = _rng(1)
    for red in ("mean", "sum", "none"):
        yield Sample((_t(r.normal(size=(3, 4)), dtype, device),
                      _t(r.normal(size=(3, 4)), dtype, device)), {"reduction": red}, desc=red)


def _red(loss, reduction="mean", **_):
    return {"none": loss, "sum": loss.sum(), "mean": loss.mean()}[reduction]


def _bce_samples(device, dtype):
    r = _rng(2)
    yield Sample((_t(r.uniform(0.1, 0.9, (3, 4)), dtype, device),
                  _t(r.integers(0, 2, (3, 4)), dtype, device)), {"reduction": "mean"})


def _bcel_samples(device, dtype):
    r = _rng(3)
    yield Sample((_t(r.normal(size=(3, 4)) * 3, dtype, device),
                  _t(r.uniform(size=(3, 4)), dtype, device)),
                 {"pos_weight": _t(r.uniform(0.5, 2, 4), dtype, device), "reduction": "sum"})


def _bcel_ref(x, y, pos_weight=None, reduction="mean"):
    s = 1 / (1 + np.exp(-x))
    return _red(-(pos_weight * y * np.log(s) + (1 - y) * np.log(1 - s)), reduction)


def _ctc_samples(device, dtype):
    r = _rng(4)
    lp = _log_softmax(r.normal(size=(5, 2, 4)), 2)
    yield Sample((_t(lp, dtype, device), ember.tensor([[1, 2], [3, 3]], device=device),
                  ember.tensor([5, 4]), ember.tensor([2, 2])), {"reduction": "sum"})


ENTRIES = [
    OpEntry("nn.functional.cross_entropy", F.cross_entropy, _class_samples(False),
            ref=lambda x, t, **k: _nll_ref(_log_softmax(x, 1), t, **k), errors=_class_errors),
    OpEntry("nn.functional.nll_loss", F.nll_loss, _class_samples(True), ref=_nll_ref,
            errors=_class_errors),
    OpEntry("nn.functional.mse_loss", F.mse_loss, _pair_samples,
            ref=lambda x, y, **k: _red((x - y) ** 2, **k)),
    OpEntry("nn.functional.l1_loss", F.l1_loss, _pair_samples,
            ref=lambda x, y, **k: _red(np.abs(x - y), **k)),
    OpEntry("nn.functional.smooth_l1_loss", F.smooth_l1_loss, _pair_samples,
            ref=lambda x, y, **k: _red(np.where(np.abs(x - y) < 1, 0.5 * (x - y) ** 2,
                                                np.abs(x - y) - 0.5), **k)),
    OpEntry("nn.functional.huber_loss", F.huber_loss, _pair_samples,
            ref=lambda x, y, **k: _red(np.where(np.abs(x - y) < 1, 0.5 * (x - y) ** 2,
                                                np.abs(x - y) - 0.5), **k)),
    OpEntry("nn.functional.binary_cross_entropy", F.binary_cross_entropy, _bce_samples,
            ref=lambda x, y, **k: _red(-(y * np.log(x) + (1 - y) * np.log(1 - x)), **k)),
    OpEntry("nn.functional.binary_cross_entropy_with_logits",
            F.binary_cross_entropy_with_logits, _bcel_samples, ref=_bcel_ref),
    OpEntry("nn.functional.kl_div", F.kl_div,
            lambda device, dtype: [Sample((_t(_log_softmax(_rng(5).normal(size=(3, 4)), 1), dtype,
                                              device),
                                           _t(np.full((3, 4), 0.25), dtype, device)),
                                          {"reduction": "batchmean"})],
            ref=lambda x, y, **k: (y * np.log(y) - y * x).sum() / x.shape[0]),
    OpEntry("nn.functional.ctc_loss", F.ctc_loss, _ctc_samples, ref=None, gradgrad=False,
            note="values checked against brute-force alignment enumeration in "
                 "tests/test_nn_loss.py; no double backward (as PyTorch)"),
]


# --- issue 6: the remaining losses, moved out of _exempt.py so they get registry gradcheck ---

def _nc(a, dtype, device):
    """``a`` as a non-contiguous tensor (every other column of a wider buffer)."""
    wide = np.repeat(np.asarray(a)[..., None], 2, axis=-1).reshape(a.shape[:-1] + (a.shape[-1] * 2,))
    return _t(wide, dtype, device)[..., ::2]


def _cos_emb_samples(device, dtype):
    r = _rng(11)
    y = ember.tensor([1, -1, 1, -1], device=device)
    for red, margin in (("mean", 0.0), ("sum", 0.2), ("none", -0.3)):
        yield Sample((_t(r.normal(size=(4, 5)), dtype, device), _t(r.normal(size=(4, 5)), dtype, device), y),
                     {"margin": margin, "reduction": red}, desc=f"{red} margin {margin}")
    yield Sample((_nc(r.normal(size=(4, 3)), dtype, device), _t(r.normal(size=(4, 3)), dtype, device), y),
                 {"reduction": "none"}, desc="noncontig")
    yield Sample((_t(r.normal(size=(5,)), dtype, device), _t(r.normal(size=(5,)), dtype, device),
                  ember.tensor(-1, device=device)), {"margin": -0.5}, desc="1-D, 0-d target")


def _cos_emb_ref(x1, x2, y, margin=0.0, reduction="mean"):
    eps = 1e-12
    cos = (x1 * x2).sum(-1) / np.sqrt(((x1 * x1).sum(-1) + eps) * ((x2 * x2).sum(-1) + eps))
    loss = np.where(y == 1, 1 - cos, np.where(y == -1, np.maximum(cos - margin, 0), 0))
    return np.asarray(_red(loss, reduction)).astype(x1.dtype)


def _gnll_samples(device, dtype):
    r = _rng(12)
    x, tg = r.normal(size=(3, 4)), r.normal(size=(3, 4))
    yield Sample((_t(x, dtype, device), _t(tg, dtype, device), _t(r.uniform(0.2, 2, (3, 4)), dtype, device)),
                 {}, desc="same shape, mean")
    yield Sample((_t(x, dtype, device), _t(tg, dtype, device), _t(r.uniform(0.2, 2, (3, 1)), dtype, device)),
                 {"full": True, "reduction": "sum"}, desc="var last dim 1, full, sum")
    yield Sample((_t(x, dtype, device), _t(tg, dtype, device), _t(r.uniform(0.2, 2, (3,)), dtype, device)),
                 {"reduction": "none"}, desc="var one dim fewer, none")
    yield Sample((_nc(x, dtype, device), _t(tg, dtype, device), _t(r.uniform(0.2, 2, (3, 4)), dtype, device)),
                 {"eps": 0.5, "reduction": "none"}, desc="noncontig, var below eps")


def _gnll_ref(x, tg, var, full=False, eps=1e-6, reduction="mean"):
    if var.ndim == x.ndim - 1:
        var = var[..., None]
    var = np.maximum(var, eps)
    loss = 0.5 * (np.log(var) + (x - tg) ** 2 / var)
    if full:
        loss = loss + 0.5 * np.log(2 * np.pi)
    return np.asarray(_red(loss, reduction))


def _mrl_samples(device, dtype):
    r = _rng(13)
    y = _t(np.array([1.0, -1.0, 1.0, -1.0, 1.0]), dtype, device)
    for red, margin in (("mean", 0.0), ("sum", 0.5), ("none", -0.2)):
        yield Sample((_t(r.normal(size=5), dtype, device), _t(r.normal(size=5), dtype, device), y),
                     {"margin": margin, "reduction": red}, desc=f"{red} margin {margin}")
    yield Sample((_nc(r.normal(size=(5,)), dtype, device), _t(r.normal(size=(5,)), dtype, device), y),
                 {"reduction": "none"}, desc="noncontig")
    yield Sample((_t(r.normal(size=()), dtype, device), _t(r.normal(size=()), dtype, device),
                  _t(np.array(-1.0), dtype, device)), {}, desc="0-d")


def _mrl_ref(x1, x2, y, margin=0.0, reduction="mean"):
    return np.asarray(_red(np.maximum(0, -y * (x1 - x2) + margin), reduction))


def _logsig(a):
    return np.minimum(a, 0) - np.log1p(np.exp(-np.abs(a)))


def _mlsm_samples(device, dtype):
    r = _rng(14)
    tg = _t(r.integers(0, 2, (3, 4)).astype(float), dtype, device)
    yield Sample((_t(r.normal(size=(3, 4)) * 2, dtype, device), tg), {}, desc="mean")
    yield Sample((_t(r.normal(size=(3, 4)) * 2, dtype, device), tg),
                 {"weight": _t(r.uniform(0.5, 2, 4), dtype, device), "reduction": "sum"}, desc="weight, sum")
    yield Sample((_nc(r.normal(size=(3, 4)), dtype, device), _t(r.uniform(0, 1, (3, 4)), dtype, device)),
                 {"reduction": "none"}, desc="soft targets, noncontig, none")


def _mlsm_ref(x, tg, weight=None, reduction="mean"):
    loss = -(tg * _logsig(x) + (1 - tg) * _logsig(-x))
    if weight is not None:
        loss = loss * weight
    return np.asarray(_red(loss.sum(-1) / x.shape[-1], reduction))


def _pnll_samples(device, dtype):
    r = _rng(15)
    tg = r.choice([0.0, 0.5, 2.0, 3.5, 6.0], (3, 4))
    yield Sample((_t(r.normal(size=(3, 4)), dtype, device), _t(tg, dtype, device)), {}, desc="log input")
    yield Sample((_t(r.uniform(0.2, 3, (3, 4)), dtype, device), _t(tg, dtype, device)),
                 {"log_input": False, "reduction": "sum"}, desc="rates, sum")
    yield Sample((_t(r.normal(size=(3, 4)), dtype, device), _t(tg, dtype, device)),
                 {"full": True, "reduction": "none"}, desc="full (Stirling term), none")
    yield Sample((_nc(r.uniform(0.2, 3, (3, 4)), dtype, device), _t(tg, dtype, device)),
                 {"log_input": False, "full": True, "eps": 1e-3}, desc="rates, full, eps, noncontig")


def _pnll_ref(x, tg, log_input=True, full=False, eps=1e-8, reduction="mean"):
    loss = np.exp(x) - tg * x if log_input else x - tg * np.log(x + eps)
    if full:
        with np.errstate(all="ignore"):
            st = tg * np.log(tg) - tg + 0.5 * np.log(2 * np.pi * tg)
        loss = loss + np.where(tg > 1, st, 0)
    return np.asarray(_red(loss, reduction))


def _tml_samples(device, dtype):
    r = _rng(16)

    def n(*s):
        return _t(r.normal(size=s), dtype, device)
    yield Sample((n(4, 5), n(4, 5), n(4, 5)), {}, desc="defaults")
    yield Sample((n(4, 5), n(4, 5), n(4, 5)), {"margin": 2.0, "p": 1, "reduction": "sum"}, desc="p=1, sum")
    yield Sample((n(4, 5), n(4, 5), n(4, 5)), {"margin": 1.5, "swap": True, "reduction": "none"}, desc="swap")
    yield Sample((n(4, 5), n(4, 5), n(4, 5)), {"p": 3, "eps": 1e-3, "reduction": "none"}, desc="p=3, eps")
    yield Sample((_nc(r.normal(size=(3, 4)), dtype, device), n(3, 4), n(3, 4)), {"margin": 3.0},
                 desc="noncontig")
    yield Sample((n(5), n(5), n(5)), {"margin": 3.0}, desc="1-D")


def _pdist(a, b, p, eps):
    return (np.abs(a - b + eps) ** p).sum(-1) ** (1.0 / p)


def _tml_ref(a, pos, neg, margin=1.0, p=2, eps=1e-6, swap=False, reduction="mean"):
    dap, dan = _pdist(a, pos, p, eps), _pdist(a, neg, p, eps)
    if swap:
        dan = np.minimum(dan, _pdist(pos, neg, p, eps))
    return np.asarray(_red(np.maximum(margin + dap - dan, 0), reduction))


def _o2(device):
    return lambda *s: ember.ones(*s, device=device)


ENTRIES += [
    OpEntry("nn.functional.cosine_embedding_loss", F.cosine_embedding_loss, _cos_emb_samples, ref=_cos_emb_ref,
            errors=lambda d: [ErrorCase((_o2(d)(3, 4), _o2(d)(3, 4), _o2(d)(2)), {}, RuntimeError,
                                        r"size of tensor a \(2\) must match the size of tensor b \(3\)"),
                              ErrorCase((_o2(d)(3, 4), _o2(d)(3, 4), _o2(d)(3)), {"reduction": "foo"}, ValueError,
                                        "foo is not a valid value for reduction")],
            note="inputs of different shapes raise RuntimeError with ember's own message "
                 "(PyTorch: the broadcast size mismatch)"),
    OpEntry("nn.functional.gaussian_nll_loss", F.gaussian_nll_loss, _gnll_samples, ref=_gnll_ref,
            errors=lambda d: [ErrorCase((_o2(d)(3, 4), _o2(d)(3, 4), -_o2(d)(3, 4)), {}, ValueError,
                                        "var has negative entry/entries"),
                              ErrorCase((_o2(d)(3, 4), _o2(d)(3, 4), _o2(d)(3, 2)), {}, ValueError,
                                        "var is of incorrect size")]),
    OpEntry("nn.functional.margin_ranking_loss", F.margin_ranking_loss, _mrl_samples, ref=_mrl_ref,
            errors=lambda d: [ErrorCase((_o2(d)(3), _o2(d)(4), _o2(d)(3)), {}, RuntimeError,
                                        r"size of tensor a \(3\) must match the size of tensor b \(4\)"),
                              ErrorCase((_o2(d)(2, 5), _o2(d)(5), _o2(d)(5)), {}, RuntimeError,
                                        "margin_ranking_loss : All input tensors should have same dimension"),
                              ErrorCase((_o2(d)(3), _o2(d)(3), _o2(d)(3)), {"reduction": "foo"}, ValueError,
                                        "foo is not a valid value for reduction")]),
    OpEntry("nn.functional.multilabel_soft_margin_loss", F.multilabel_soft_margin_loss, _mlsm_samples,
            ref=_mlsm_ref,
            errors=lambda d: [ErrorCase((_o2(d)(3, 4), _o2(d)(3, 5)), {}, RuntimeError,
                                        r"size of tensor a \(5\) must match the size of tensor b \(4\)")]),
    OpEntry("nn.functional.poisson_nll_loss", F.poisson_nll_loss, _pnll_samples, ref=_pnll_ref,
            errors=lambda d: [ErrorCase((_o2(d)(3, 4), _o2(d)(3, 5)), {}, RuntimeError,
                                        r"size of tensor a \(5\) must match the size of tensor b \(4\)")]),
    OpEntry("nn.functional.triplet_margin_loss", F.triplet_margin_loss, _tml_samples, ref=_tml_ref,
            errors=lambda d: [ErrorCase((_o2(d)(3, 4), _o2(d)(3, 4), _o2(d)(3, 5)), {}, RuntimeError,
                                        r"size of tensor a \(4\) must match the size of tensor b \(5\)"),
                              ErrorCase((_o2(d)(3, 4), _o2(d)(3, 4), _o2(d)(3, 4)), {"reduction": "foo"},
                                        ValueError, "foo is not a valid value for reduction")]),
]
