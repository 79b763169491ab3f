"""Legacy weight normalization (a forward pre-hook), as torch.nn.utils.weight_norm.

``norm_except_dim`` and ``_weight_norm`` (torch.norm_except_dim / torch._weight_norm)
are ember composites, shared with ``parametrizations.weight_norm``.
"""
from __future__ import annotations

import warnings

from ... import _C
from ...autograd.grad_mode import no_grad
from ..parameter import Parameter, UninitializedParameter

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm", "norm_except_dim"]


def norm_except_dim(v, pow=2, dim=0):
    r"""The ``pow``-norm of ``v`` over every dim but ``dim``, kept with size 1 in those
    dims (``dim=-1``: the norm of the whole tensor, 0-d), as torch.norm_except_dim."""
    if dim == -1:
        return _C.norm(v, pow)
    d = dim % v.dim() if v.dim() else 0
    others = [i for i in range(v.dim()) if i != d]
    if not others:
        return v.abs() if pow != 0 else (v != 0).to(v.dtype)
    return _C.norm(v, pow, others, True)


def _weight_norm(v, g, dim=0):
    r"""``v * (g / ||v||)`` with the norm over all dims but ``dim`` (torch._weight_norm)."""
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook recomputing ``module.<name>`` from ``<name>_g`` and
    ``<name>_v``."""

    def __init__(self, name, dim):
        if dim is None:
            dim = -1
        self.name = name
        self.dim = dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module, name, dim):
        warnings.warn("ember.nn.utils.weight_norm is deprecated in favor of "
                      "ember.nn.utils.parametrizations.weight_norm.", FutureWarning, stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        if dim is None:
            dim = -1
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized parameters. Make sure "
                             "to run the dummy forward before applying weight normalization")
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    r"""Reparametrizes ``module.<name>`` as ``g * v / ||v||`` (parameters ``<name>_g``,
    ``<name>_v``), recomputed before every forward. Deprecated in torch in favor of
    ``parametrizations.weight_norm``."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    r"""Undoes ``weight_norm``: ``<name>`` becomes one Parameter again."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
