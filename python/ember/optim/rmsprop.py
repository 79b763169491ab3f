"""RMSprop (optionally centered, with momentum)."""
from __future__ import annotations

import ember

from .. import _C
from .optimizer import Optimizer, _check_lr, _closure_loss, _new_step, _to_scalar, _use_grad

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop, as torch.optim.RMSprop."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay, "capturable": capturable,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("momentum", 0)
            group.setdefault("centered", False)
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)
        self._tensor_steps("step")

    @_use_grad
    def step(self, closure=None):
        """Performs one step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            momentum = _to_scalar(group["momentum"])
            centered = group["centered"]
            params, grads, square_avgs, grad_avgs, bufs, steps = [], [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if len(st) == 0:
                    st["step"] = _new_step()
                    st["square_avg"] = ember.zeros_like(p)
                    if momentum > 0:
                        st["momentum_buffer"] = ember.zeros_like(p)
                    if centered:
                        st["grad_avg"] = ember.zeros_like(p)
                params.append(p)
                grads.append(p.grad)
                square_avgs.append(st["square_avg"])
                steps.append(st["step"])
                if momentum > 0:
                    bufs.append(st["momentum_buffer"])
                if centered:
                    grad_avgs.append(st["grad_avg"])
            if not params:
                continue
            _C._rmsprop_step_(
                params, grads, square_avgs, grad_avgs, bufs, steps, lr=_to_scalar(group["lr"]),
                alpha=_to_scalar(group["alpha"]), eps=_to_scalar(group["eps"]),
                weight_decay=_to_scalar(group["weight_decay"]), momentum=momentum,
                centered=centered, maximize=group["maximize"])
        return loss
