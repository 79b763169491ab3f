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
