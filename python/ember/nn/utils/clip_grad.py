"""Gradient clipping, as torch.nn.utils.clip_grad.

The total norm is one ember norm over the stacked per-tensor norms; scaling is one
in-place multiply per gradient by a 0-d tensor (no host sync).
"""
from __future__ import annotations

import functools
import math
import warnings

from ... import _C
from ...autograd.grad_mode import no_grad

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]

Tensor = _C.Tensor


def _tensor_list(tensors):
    if isinstance(tensors, Tensor):
        return [tensors]
    return list(tensors)


def _no_grad(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with no_grad():
            return func(*args, **kwargs)
    return wrapper


@_no_grad
def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    r"""The ``norm_type``-norm of all ``tensors`` taken together, as if concatenated
    into one vector (``inf`` for the max-norm)."""
    tensors = _tensor_list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return _C.tensor(0.0)
    first_device = tensors[0].device
    norms = [_C.norm(t, norm_type) for t in tensors]
    if any(n.device != first_device for n in norms):
        norms = [n.to(first_device) for n in norms]
    total_norm = _C.norm(_C.stack(norms), norm_type)
    if error_if_nonfinite and not bool(_C.isfinite(total_norm).item()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it "
            "cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
            "anyway, set `error_if_nonfinite=False`")
    return total_norm


@_no_grad
def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    r"""Scales the gradients of ``parameters`` by ``min(1, max_norm / (total_norm + 1e-6))``."""
    parameters = _tensor_list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    max_norm = float(max_norm)
    if len(grads) == 0:
        return
    if not isinstance(total_norm, Tensor):
        total_norm = _C.tensor(float(total_norm))
    clip_coef = max_norm / (total_norm + 1e-6)
    clip_coef_clamped = _C.clamp(clip_coef, max=1.0)
    for g in grads:
        c = clip_coef_clamped
        if c.device != g.device:
            c = c.to(g.device)
        g.mul_(c)


@_no_grad
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    r"""Clips the gradients of ``parameters`` in place so that their total
    ``norm_type``-norm is at most ``max_norm``; returns the total norm before clipping."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        parameters = list(parameters)
    if len(parameters) == 0:
        return _C.tensor(0.0)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated alias of ``clip_grad_norm_``."""
    warnings.warn("`ember.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`ember.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@_no_grad
def clip_grad_value_(parameters, clip_value, foreach=None):
    r"""Clamps the gradients of ``parameters`` in place to ``[-clip_value, clip_value]``."""
    parameters = _tensor_list(parameters)
    clip_value = float(clip_value)
    if math.isnan(clip_value):
        raise ValueError("clip_value must not be NaN")
    for p in parameters:
        if p.grad is not None:
            p.grad.clamp_(min=-clip_value, max=clip_value)
