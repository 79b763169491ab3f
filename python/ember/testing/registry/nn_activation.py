"""Registry entries of the activation family: softmax / log_softmax (ember.*,
Tensor.*, nn.functional.*) and the parametrized activations of nn.functional."""
import math

import numpy as np

import ember
import ember.nn.functional as F

from . import ErrorCase, OpEntry, Sample


def _x(shape, dtype, device, seed=0, scale=3.0):
    a = np.random.default_rng(seed).uniform(-1, 1, shape) * scale
    # keep every sample away from the activations' kinks (gradcheck's finite differences)
    a = np.where(np.abs(a) < 0.05, a + 0.1, a)
    return ember.tensor(a, dtype=dtype, device=device)


def _softmax_samples(device, dtype):
    yield Sample((_x((3, 5), dtype, device), 1), desc="rows")
    yield Sample((_x((2, 3, 4), dtype, device), 0), desc="dim 0")
    yield Sample((_x((2, 3, 4), dtype, device), -1), desc="last dim")
    yield Sample((_x((4,), dtype, device), 0), desc="1-D")


def _np_softmax(a, dim, dtype=None):
    m = a.max(axis=dim, keepdims=True)
    e = np.exp(a - m)
    return e / e.sum(axis=dim, keepdims=True)


def _np_log_softmax(a, dim, dtype=None):
    m = a.max(axis=dim, keepdims=True)
    return a - m - np.log(np.exp(a - m).sum(axis=dim, keepdims=True))


def _softmax_errors(device):
    x = ember.zeros(2, 3, device=device)
    yield ErrorCase((x, 2), {}, IndexError, "Dimension out of range")
    yield ErrorCase((ember.tensor([1, 2], device=device), 0), {}, RuntimeError,
                    "not implemented for 'int64'")


def _sig(a):
    return 1 / (1 + np.exp(-a))


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _unary(name, fn, ref, **kw):
    def samples(device, dtype):
        yield Sample((_x((3, 4), dtype, device),), kw, desc="3x4")
        yield Sample((_x((5,), dtype, device, seed=1, scale=8.0),), kw, desc="wide range")
        # the fused kernels' TensorIterator layouts
        yield Sample((_x((3, 8), dtype, device, seed=2)[:, ::2],), kw, desc="noncontig")
        yield Sample((_x((), dtype, device, seed=3),), kw, desc="0-d")
        yield Sample((_x((0, 3), dtype, device),), kw, desc="empty")
    return OpEntry(f"nn.functional.{name}", fn, samples, ref=lambda a, **k: ref(a))


ENTRIES = [
    OpEntry("softmax", ember.softmax, _softmax_samples, ref=_np_softmax,
            aliases=("Tensor.softmax", "nn.functional.softmax"), errors=_softmax_errors),
    OpEntry("log_softmax", ember.log_softmax, _softmax_samples, ref=_np_log_softmax,
            aliases=("Tensor.log_softmax", "nn.functional.log_softmax"), errors=_softmax_errors),
    OpEntry("nn.functional.softmin", F.softmin, _softmax_samples,
            ref=lambda a, dim: _np_softmax(-a, dim)),
    _unary("elu", lambda x: F.elu(x, 0.8), lambda a: np.where(a > 0, a, 0.8 * np.expm1(a))),
    _unary("selu", F.selu, lambda a: 1.0507009873554805 * np.where(
        a > 0, a, 1.6732632423543772 * np.expm1(a))),
    _unary("celu", lambda x: F.celu(x, 0.5), lambda a: np.where(a > 0, a, 0.5 * np.expm1(a / 0.5))),
    _unary("gelu", F.gelu, lambda a: 0.5 * a * (1 + _erf(a / math.sqrt(2)))),
    _unary("silu", F.silu, lambda a: a * _sig(a)),
    _unary("mish", F.mish, lambda a: a * np.tanh(np.log1p(np.exp(a)))),
    _unary("leaky_relu", lambda x: F.leaky_relu(x, 0.1), lambda a: np.where(a > 0, a, 0.1 * a)),
    _unary("relu6", F.relu6, lambda a: np.clip(a, 0, 6)),
    _unary("hardtanh", F.hardtanh, lambda a: np.clip(a, -1, 1)),
    _unary("hardsigmoid", F.hardsigmoid, lambda a: np.clip(a / 6 + 0.5, 0, 1)),
    _unary("hardswish", F.hardswish, lambda a: a * np.clip(a + 3, 0, 6) / 6),
    _unary("hardshrink", F.hardshrink, lambda a: np.where(np.abs(a) > 0.5, a, 0)),
    _unary("softshrink", F.softshrink,
           lambda a: np.where(a > 0.5, a - 0.5, np.where(a < -0.5, a + 0.5, 0))),
    _unary("tanhshrink", F.tanhshrink, lambda a: a - np.tanh(a)),
    _unary("softplus", F.softplus, lambda a: np.log1p(np.exp(a))),
    _unary("softsign", F.softsign, lambda a: a / (1 + np.abs(a))),
    _unary("logsigmoid", F.logsigmoid, lambda a: np.minimum(a, 0) - np.log1p(np.exp(-np.abs(a)))),
    _unary("threshold", lambda x: F.threshold(x, 0.5, -1.0), lambda a: np.where(a <= 0.5, -1.0, a)),
    OpEntry("nn.functional.glu", F.glu,
            lambda device, dtype: [Sample((_x((3, 6), dtype, device), 1))],
            ref=lambda a, dim: a[:, :3] * _sig(a[:, 3:])),
    OpEntry("nn.functional.prelu", F.prelu,
            lambda device, dtype: [Sample((_x((2, 3, 4), dtype, device),
                                           ember.tensor([0.1, 0.2, 0.3], dtype=dtype,
                                                        device=device)))],
            ref=lambda a, w: np.where(a > 0, a, w[None, :, None] * a)),
]


def _act_samples(device, dtype):
    yield Sample((_x((3, 4), dtype, device),), desc="3x4")
    yield Sample((_x((5,), dtype, device, seed=1, scale=8.0),), desc="wide range")
    yield Sample((_x((3, 8), dtype, device, seed=2)[:, ::2],), desc="noncontig")
    yield Sample((_x((), dtype, device, seed=3),), desc="0-d")
    yield Sample((_x((0, 3), dtype, device),), desc="empty")


# issue 6: the plain nn.functional activations, moved out of _exempt.py
ENTRIES += [
    OpEntry("nn.functional.relu", F.relu, _act_samples, ref=lambda a: np.maximum(a, 0),
            aliases=("nn.functional.relu_",),
            errors=lambda device: [ErrorCase((ember.tensor([True, False], device=device),), {}, RuntimeError,
                                             "Boolean inputs not supported for relu")],
            note="PyTorch raises NotImplementedError (a RuntimeError subclass) for bool; ember RuntimeError"),
    OpEntry("nn.functional.sigmoid", F.sigmoid, _act_samples, ref=_sig),
    OpEntry("nn.functional.tanh", F.tanh, _act_samples, ref=np.tanh),
]
