"""Adamax: Adam with the infinity norm."""
from __future__ import annotations

import ember

from .. import _C
from .adam import _check_betas
from .optimizer import Optimizer, _check_lr, _closure_loss, _new_step, _to_scalar, _use_grad

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax, as torch.optim.Adamax."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_betas(betas)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
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
            params, grads, exp_avgs, exp_infs, steps = [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if len(st) == 0:
                    st["step"] = _new_step()
                    st["exp_avg"] = ember.zeros_like(p)
                    st["exp_inf"] = ember.zeros_like(p)
                params.append(p)
                grads.append(p.grad)
                exp_avgs.append(st["exp_avg"])
                exp_infs.append(st["exp_inf"])
                steps.append(st["step"])
            if not params:
                continue
            beta1, beta2 = group["betas"]
            _C._adamax_step_(
                params, grads, exp_avgs, exp_infs, steps, lr=_to_scalar(group["lr"]),
                beta1=_to_scalar(beta1), beta2=_to_scalar(beta2),
                weight_decay=_to_scalar(group["weight_decay"]), eps=_to_scalar(group["eps"]),
                maximize=group["maximize"])
        return loss
