"""Adadelta."""
from __future__ import annotations

import ember

from .. import _C
from .optimizer import Optimizer, _check_lr, _closure_loss, _new_step, _to_scalar, _use_grad

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta, as torch.optim.Adadelta."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "capturable": capturable, "foreach": foreach,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
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
            params, grads, square_avgs, acc_deltas, steps = [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if len(st) == 0:
                    st["step"] = _new_step()
                    st["square_avg"] = ember.zeros_like(p)
                    st["acc_delta"] = ember.zeros_like(p)
                params.append(p)
                grads.append(p.grad)
                square_avgs.append(st["square_avg"])
                acc_deltas.append(st["acc_delta"])
                steps.append(st["step"])
            if not params:
                continue
            _C._adadelta_step_(
                params, grads, square_avgs, acc_deltas, steps, lr=_to_scalar(group["lr"]),
                rho=_to_scalar(group["rho"]), eps=_to_scalar(group["eps"]),
                weight_decay=_to_scalar(group["weight_decay"]), maximize=group["maximize"])
        return loss
