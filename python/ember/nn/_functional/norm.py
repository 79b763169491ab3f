"""nn.functional: normalization layers, as torch.nn.functional.

batch_norm, layer_norm, group_norm and instance_norm run fused C++ kernels
(ember._C._nn); rms_norm and local_response_norm are composites of C++ ops.
"""
from ... import _C

_nn = _C._nn

__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm",
           "local_response_norm"]


def _verify_batch_size(size):
    n = size[0]
    for s in size[2:]:
        n *= s
    if n == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{size}")


def _verify_spatial_size(size):
    n = 1
    for s in size[2:]:
        n *= s
    if n == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{size}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    if training:
        _verify_batch_size(input.size())
    return _nn.batch_norm(input, running_mean, running_var, weight, bias, bool(training),
                          0.0 if momentum is None else float(momentum), float(eps))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return _nn.layer_norm(input, tuple(normalized_shape), weight, bias, float(eps))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    return _nn.group_norm(input, int(num_groups), weight, bias, float(eps))


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    if use_input_stats:
        _verify_spatial_size(input.size())
    return _nn.instance_norm(input, running_mean, running_var, weight, bias,
                             bool(use_input_stats), float(momentum), float(eps))


_EPS = {"ember.float64": 2.220446049250313e-16, "ember.float32": 1.1920928955078125e-07,
        "ember.float16": 0.0009765625, "ember.bfloat16": 0.0078125}


def rms_norm(input, normalized_shape, weight=None, eps=None):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if k == 0 or tuple(input.shape[input.dim() - k:]) != normalized_shape:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with "
                           f"shape [*, {', '.join(map(str, normalized_shape))}], but got input of "
                           f"size{list(input.shape)}")
    if eps is None:
        eps = _EPS.get(str(input.dtype), 1.1920928955078125e-07)
    dims = tuple(range(input.dim() - k, input.dim()))
    out = input * ((input * input).mean(dim=dims, keepdim=True) + eps).rsqrt()
    if weight is not None:
        out = out * weight
    return out


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    import ember
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    # Sum of squares over a window of `size` channels (size // 2 before, (size - 1) // 2
    # after, zero padded), through a cumulative sum along the channel dim.
    sq = input * input
    C = input.shape[1]
    before, after = size // 2, (size - 1) // 2
    pad_shape = list(input.shape)
    parts = []
    if before:
        pad_shape[1] = before
        parts.append(ember.zeros(pad_shape, dtype=input.dtype, device=input.device))
    parts.append(sq)
    if after:
        pad_shape[1] = after
        parts.append(ember.zeros(pad_shape, dtype=input.dtype, device=input.device))
    padded = ember.cat(parts, 1) if len(parts) > 1 else sq
    zshape = list(input.shape)
    zshape[1] = 1
    cs = ember.cat([ember.zeros(zshape, dtype=input.dtype, device=input.device),
                    padded.cumsum(1)], 1)
    window = cs.narrow(1, size, C) - cs.narrow(1, 0, C)
    div = (window * (alpha / size) + k) ** beta
    return input / div
