"""nn.functional: activations, softmax / log_softmax / softmin.

The math is C++ (ember._C._nn and the elementwise op table); these functions only
normalize arguments, as torch.nn.functional.
"""
import warnings

from ... import _C

_nn = _C._nn

__all__ = [
    "relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "prelu", "rrelu", "rrelu_", "elu", "elu_",
    "selu", "selu_", "celu", "celu_", "gelu", "silu", "mish", "sigmoid", "tanh", "hardtanh",
    "hardtanh_", "hardsigmoid", "hardswish", "hardshrink", "softshrink", "tanhshrink",
    "softplus", "softsign", "logsigmoid", "softmax", "log_softmax", "softmin", "glu",
    "threshold", "threshold_",
]


def relu(input, inplace=False):
    return input.relu_() if inplace else input.relu()


def relu_(input):
    return input.relu_()


def relu6(input, inplace=False):
    return _nn.relu6_(input) if inplace else _nn.relu6(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    f = _nn.leaky_relu_ if inplace else _nn.leaky_relu
    return f(input, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return _nn.leaky_relu_(input, negative_slope)


def prelu(input, weight):
    return _nn.prelu(input, weight)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: slopes drawn from U(lower, upper) per element when training
    (ember's generator), the mean slope (lower + upper) / 2 otherwise."""
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    import ember
    slope = ember.empty_like(input).uniform_(lower, upper)
    out = ember.where(input >= 0, input, input * slope)
    return input.copy_(out) if inplace else out


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, True)


def elu(input, alpha=1.0, inplace=False):
    return _nn.elu_(input, alpha) if inplace else _nn.elu(input, alpha)


def elu_(input, alpha=1.0):
    return _nn.elu_(input, alpha)


def selu(input, inplace=False):
    return _nn.selu_(input) if inplace else _nn.selu(input)


def selu_(input):
    return _nn.selu_(input)


def celu(input, alpha=1.0, inplace=False):
    return _nn.celu_(input, alpha) if inplace else _nn.celu(input, alpha)


def celu_(input, alpha=1.0):
    return _nn.celu_(input, alpha)


def gelu(input, approximate="none"):
    return _nn.gelu(input, approximate)


def silu(input, inplace=False):
    return _nn.silu_(input) if inplace else _nn.silu(input)


def mish(input, inplace=False):
    return _nn.mish_(input) if inplace else _nn.mish(input)


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    f = _nn.hardtanh_ if inplace else _nn.hardtanh
    return f(input, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return _nn.hardtanh_(input, min_val, max_val)


def hardsigmoid(input, inplace=False):
    return _nn.hardsigmoid_(input) if inplace else _nn.hardsigmoid(input)


def hardswish(input, inplace=False):
    return _nn.hardswish_(input) if inplace else _nn.hardswish(input)


def hardshrink(input, lambd=0.5):
    return _nn.hardshrink(input, lambd)


def softshrink(input, lambd=0.5):
    return _nn.softshrink(input, lambd)


def tanhshrink(input):
    return _nn.tanhshrink(input)


def softplus(input, beta=1.0, threshold=20.0):
    return _nn.softplus(input, beta, threshold)


def softsign(input):
    return _nn.softsign(input)


def logsigmoid(input):
    return _nn.logsigmoid(input)


def threshold(input, threshold, value, inplace=False):
    f = _nn.threshold_ if inplace else _nn.threshold
    return f(input, threshold, value)


def threshold_(input, threshold, value):
    return _nn.threshold_(input, threshold, value)


def glu(input, dim=-1):
    return _nn.glu(input, dim)


def _get_softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. "
                  "Change the call to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmax", input.dim(), _stacklevel)
    return _C.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.dim(), _stacklevel)
    return _C.log_softmax(input, dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmin", input.dim(), _stacklevel)
    if dtype is not None:
        input = input.to(dtype)
    return _C.softmax(-input, dim)
