"""Flattening parameters to one vector and back, as torch.nn.utils.convert_parameters."""
from __future__ import annotations

from ... import _C

__all__ = ["parameters_to_vector", "vector_to_parameters"]

Tensor = _C.Tensor


def _check_param_device(param, old_param_device):
    device = param.device.index if param.is_cuda else -1
    if old_param_device is None:
        return device
    if device != old_param_device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return old_param_device


def parameters_to_vector(parameters):
    r"""One 1-D tensor holding every parameter's elements in order (a copy)."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    param_device = None
    vec = []
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        vec.append(param.reshape(-1))
    return _C.cat(vec)


def vector_to_parameters(vec, parameters):
    r"""Copies consecutive slices of the 1-D ``vec`` into ``parameters``' data (each
    parameter then views ``vec``'s storage, as torch)."""
    if not isinstance(vec, Tensor):
        from ..modules.module import _typename
        raise TypeError(f"expected ember.Tensor, but got: {_typename(vec)}")
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    param_device = None
    pointer = 0
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        num_param = param.numel()
        param.data = vec[pointer:pointer + num_param].view_as(param).data
        pointer += num_param
