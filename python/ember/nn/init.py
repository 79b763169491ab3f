"""nn.init: parameter initialization, as torch.nn.init.

Every function fills its tensor in place under no_grad and returns it. Random fills
are ember's C++ samplers (``Tensor.uniform_`` / ``normal_``), with an optional
``generator``; the rest are a few whole-tensor ember ops.
"""
from __future__ import annotations

import importlib
import math
import warnings

from .. import _C
from ..autograd.grad_mode import no_grad

__all__ = [
    "calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_",
    "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
    "orthogonal_", "sparse_",
    "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
    "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse",
]


def calculate_gain(nonlinearity, param=None):
    r"""The recommended gain for a nonlinearity: 1 (linear, conv*, sigmoid), 5/3 (tanh),
    sqrt(2) (relu), sqrt(2 / (1 + slope^2)) (leaky_relu, slope = ``param``, default 0.01),
    3/4 (selu)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    elif nonlinearity == "tanh":
        return 5.0 / 3
    elif nonlinearity == "relu":
        return math.sqrt(2.0)
    elif nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif (not isinstance(param, bool) and isinstance(param, int)) or isinstance(param, float):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    elif nonlinearity == "selu":
        return 3.0 / 4
    else:
        raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    num_input_fmaps = tensor.size(1)
    num_output_fmaps = tensor.size(0)
    receptive_field_size = 1
    for s in tuple(tensor.shape)[2:]:
        receptive_field_size *= s
    return num_input_fmaps * receptive_field_size, num_output_fmaps * receptive_field_size


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _rng(generator):
    return {} if generator is None else {"generator": generator}


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    r"""Fills ``tensor`` with samples of U(a, b)."""
    with no_grad():
        return tensor.uniform_(a, b, **_rng(generator))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    r"""Fills ``tensor`` with samples of N(mean, std^2)."""
    with no_grad():
        return tensor.normal_(mean, std, **_rng(generator))


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    r"""Fills ``tensor`` with N(mean, std^2) samples truncated to [a, b] (inverse-CDF
    sampling: uniform in [cdf(a), cdf(b)], then the normal quantile)."""
    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of "
                      "values may be incorrect.", stacklevel=2)
    with no_grad():
        lo = norm_cdf((a - mean) / std)
        hi = norm_cdf((b - mean) / std)
        u = _C.empty(tuple(tensor.shape), dtype=_C.float64, device=tensor.device)
        u.uniform_(2 * lo - 1, 2 * hi - 1, **_rng(generator))
        x = _C.erfinv(u) * (std * math.sqrt(2.0)) + mean
        tensor.copy_(_C.clamp(x, a, b))
        return tensor


def constant_(tensor, val):
    r"""Fills ``tensor`` with ``val``."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    r"""Fills ``tensor`` with ones."""
    with no_grad():
        return tensor.fill_(1.0)


def zeros_(tensor):
    r"""Fills ``tensor`` with zeros."""
    with no_grad():
        return tensor.zero_()


def eye_(tensor):
    r"""Fills a 2-D ``tensor`` with the identity matrix."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        tensor.copy_(_C.eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype, device=tensor.device))
    return tensor


def dirac_(tensor, groups=1):
    r"""Fills a 3-, 4- or 5-D conv weight with the Dirac delta (identity convolution),
    per group."""
    dimensions = tensor.dim()
    if dimensions not in [3, 4, 5]:
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.size()
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_chans_per_grp = sizes[0] // groups
    min_dim = min(out_chans_per_grp, sizes[1])
    with no_grad():
        tensor.zero_()
        if min_dim == 0 or groups == 0:
            return tensor
        dev = tensor.device
        d = _C.arange(min_dim, device=dev).repeat(groups)
        g = _C.arange(groups, device=dev).repeat_interleave(min_dim)
        index = [g * out_chans_per_grp + d, d]
        for s in tuple(sizes)[2:]:
            index.append(_C.full((groups * min_dim,), s // 2, dtype=_C.int64, device=dev))
        tensor.index_put_(tuple(index), _C.ones((), dtype=tensor.dtype, device=dev))
    return tensor


def xavier_uniform_(tensor, gain=1.0, generator=None):
    r"""Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    r"""Glorot normal: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    r"""He uniform: U(-bound, bound) with bound = gain * sqrt(3 / fan) (fan by ``mode``,
    gain from ``calculate_gain(nonlinearity, a)``)."""
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    r"""He normal: N(0, std^2) with std = gain / sqrt(fan)."""
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def _linalg():
    # ember.linalg the Python module (the package attribute can be _C's linalg submodule)
    return importlib.import_module("ember.linalg")


def orthogonal_(tensor, gain=1, generator=None):
    r"""Fills ``tensor`` (>= 2-D, trailing dims flattened) with a (semi-)orthogonal matrix
    drawn from the Haar measure, scaled by ``gain``."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.size(0)
    cols = tensor.numel() // rows
    with no_grad():
        # QR in float32 (float64 for float64 tensors), as torch works in the tensor's dtype.
        work = _C.float64 if tensor.dtype == _C.float64 else _C.float32
        flattened = _C.empty((rows, cols), dtype=work, device=tensor.device)
        flattened.normal_(0, 1, **_rng(generator))
        if rows < cols:
            flattened = flattened.t()
        q, r = _linalg().qr(flattened)
        # Make Q unique: the signs of R's diagonal go into Q's columns.
        q = q * r.diagonal().sign()
        if rows < cols:
            q = q.t()
        tensor.view(q.shape).copy_(q)
        tensor.mul_(gain)
    return tensor


def sparse_(tensor, sparsity, std=0.01, generator=None):
    r"""Fills a 2-D ``tensor`` with N(0, std^2) samples and zeros
    ``ceil(sparsity * rows)`` random entries in each column."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        tensor.normal_(0, std, **_rng(generator))
        if num_zeros > 0 and cols > 0:
            # One random permutation per column: the argsort of uniform keys.
            keys = _C.empty((rows, cols), dtype=_C.float32, device=tensor.device)
            keys.uniform_(0, 1, **_rng(generator))
            zero_rows = keys.argsort(dim=0)[:num_zeros]
            tensor.scatter_(0, zero_rows, 0.0)
    return tensor


# torch's private helpers, which some libraries call directly (timm: _no_grad_trunc_normal_).
def _no_grad_uniform_(tensor, a, b, generator=None):
    return uniform_(tensor, a, b, generator)


def _no_grad_normal_(tensor, mean, std, generator=None):
    return normal_(tensor, mean, std, generator)


def _no_grad_trunc_normal_(tensor, mean, std, a, b, generator=None):
    return trunc_normal_(tensor, mean, std, a, b, generator)


def _no_grad_fill_(tensor, val):
    return constant_(tensor, val)


def _no_grad_zero_(tensor):
    return zeros_(tensor)


def _make_deprecate(meth):
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.",
                      FutureWarning, stacklevel=2)
        return meth(*args, **kwargs)

    deprecated_init.__doc__ = f"{old_name}(...)\n\n.. warning:: deprecated; use :func:`{new_name}`."
    deprecated_init.__name__ = old_name
    return deprecated_init


uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)
