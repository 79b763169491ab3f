"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize."""
from __future__ import annotations

from .. import _C
from .optimizer import _check_fused_foreach, _check_lr, _GroupStepOptimizer, _to_scalar

__all__ = ["SGD"]


class SGD(_GroupStepOptimizer):
    """Stochastic gradient descent (optionally with momentum), as torch.optim.SGD."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        _check_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach, "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        _check_fused_foreach(defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    def _state_keys(self, group):
        return ("momentum_buffer",) if _to_scalar(group["momentum"]) != 0 else ()

    def _init_state(self, group, p, state):
        pass  # the momentum buffer starts from the first gradient

    def _fused_step(self, group, params, grads, bufs=()):
        momentum = _to_scalar(group["momentum"])
        new_bufs = _C._sgd_step_(
            params, grads, list(bufs), lr=_to_scalar(group["lr"]), momentum=momentum,
            dampening=_to_scalar(group["dampening"]),
            weight_decay=_to_scalar(group["weight_decay"]), nesterov=group["nesterov"],
            maximize=group["maximize"])
        if momentum != 0:
            for p, buf in zip(params, new_bufs):
                self.state[p]["momentum_buffer"] = buf

    def _sparse_step(self, group, params, grads, bufs=()):
        """Sparse gradients take the same update in ember ops, as PyTorch's per-tensor SGD:
        the parameter is updated at the gradient's rows only; with momentum the buffer is
        sparse (weight decay makes the step dense)."""
        self._composite_step(group, params, grads, bufs)

    def _composite_step(self, group, params, grads, bufs=()):
        """The fused kernel's update in ember ops (differentiable=True)."""
        lr, wd = _to_scalar(group["lr"]), _to_scalar(group["weight_decay"])
        momentum, dampening = _to_scalar(group["momentum"]), _to_scalar(group["dampening"])
        for i, p in enumerate(params):
            d = -grads[i] if group["maximize"] else grads[i]
            if wd != 0:
                d = d + p * wd
            if momentum != 0:
                buf = bufs[i]
                buf = d.clone() if buf is None else buf * momentum + d * (1 - dampening)
                self.state[p]["momentum_buffer"] = buf
                d = d + buf * momentum if group["nesterov"] else buf
            p.sub_(d * lr)
