"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize."""
from __future__ import annotations

from .. import _C
from .optimizer import (
    Optimizer,
    _check_fused_foreach,
    _check_lr,
    _closure_loss,
    _to_scalar,
    _use_grad,
)

__all__ = ["SGD"]


class SGD(Optimizer):
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

    @_use_grad
    def step(self, closure=None):
        """Performs one step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            momentum = _to_scalar(group["momentum"])
            params, grads, bufs = [], [], []
            for p in group["params"]:
                if p.grad is not None:
                    params.append(p)
                    grads.append(p.grad)
                    if momentum != 0:
                        bufs.append(self.state[p].get("momentum_buffer"))
            if not params:
                continue
            new_bufs = _C._sgd_step_(
                params, grads, bufs, lr=_to_scalar(group["lr"]), momentum=momentum,
                dampening=_to_scalar(group["dampening"]),
                weight_decay=_to_scalar(group["weight_decay"]), nesterov=group["nesterov"],
                maximize=group["maximize"])
            if momentum != 0:
                for p, buf in zip(params, new_bufs):
                    self.state[p]["momentum_buffer"] = buf
        return loss
