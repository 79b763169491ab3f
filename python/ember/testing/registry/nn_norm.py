"""Registry entries of the normalizations (nn.functional)."""
import numpy as np

import ember
import ember.nn.functional as F

from . import ErrorCase, OpEntry, Sample


def _t(a, dtype, device):
    return ember.tensor(np.asarray(a), dtype=dtype, device=device)


def _x(shape, dtype, device, seed=0):
    return _t(np.random.default_rng(seed).normal(size=shape) * 2 + 0.5, dtype, device)


def _norm(a, axes, eps=1e-5):
    return (a - a.mean(axis=axes, keepdims=True)) / np.sqrt(a.var(axis=axes, keepdims=True) + eps)


def _bn_samples(device, dtype):
    C = 3
    w, b = _t(np.linspace(0.5, 2, C), dtype, device), _t(np.linspace(-1, 1, C), dtype, device)
    yield Sample((_x((4, C, 2), dtype, device), None, None, w, b, True), desc="training")


def _ln_samples(device, dtype):
    yield Sample((_x((3, 4, 5), dtype, device), (4, 5), _x((4, 5), dtype, device, 1),
                  _x((4, 5), dtype, device, 2)))


def _gn_samples(device, dtype):
    yield Sample((_x((2, 6, 3), dtype, device), 3, _x((6,), dtype, device, 1),
                  _x((6,), dtype, device, 2)))


def _gn_ref(x, G, w, b):
    y = _norm(x.reshape(x.shape[0], G, -1), 2).reshape(x.shape)
    return y * w[None, :, None] + b[None, :, None]


def _ln_errors(device):
    yield ErrorCase((ember.zeros(3, 4, device=device), (5,)), {}, RuntimeError,
                    r"Given normalized_shape=\[5\]")


ENTRIES = [
    OpEntry("nn.functional.batch_norm", F.batch_norm, _bn_samples,
            ref=lambda x, rm, rv, w, b, tr: _norm(x, (0, 2)) * w[None, :, None] + b[None, :, None]),
    OpEntry("nn.functional.layer_norm", F.layer_norm, _ln_samples,
            ref=lambda x, ns, w, b: _norm(x, (1, 2)) * w + b, errors=_ln_errors),
    OpEntry("nn.functional.group_norm", F.group_norm, _gn_samples, ref=_gn_ref),
    OpEntry("nn.functional.instance_norm", F.instance_norm,
            lambda device, dtype: [Sample((_x((2, 3, 4), dtype, device),))],
            ref=lambda x: _norm(x, (2,))),
    OpEntry("nn.functional.rms_norm", F.rms_norm,
            lambda device, dtype: [Sample((_x((3, 4), dtype, device), (4,)), {"eps": 1e-6})],
            ref=lambda x, ns, eps: x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)),
    OpEntry("nn.functional.local_response_norm", F.local_response_norm,
            lambda device, dtype: [Sample((_x((2, 4, 3), dtype, device), 2))], ref=None,
            note="checked against a NumPy window sum in tests/test_nn_norm.py"),
]
