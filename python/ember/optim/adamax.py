"""Adamax: Adam with the infinity norm."""
from __future__ import annotations

import ember

from .. import _C
from .adam import _check_betas
from .optimizer import _advance_step, _check_lr, _GroupStepOptimizer, _lerp, _new_step, _to_scalar

__all__ = ["Adamax"]


class Adamax(_GroupStepOptimizer):
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

    def _state_keys(self, group):
        return ("exp_avg", "exp_inf", "step")

    def _init_state(self, group, p, state):
        state["step"] = _new_step()
        state["exp_avg"] = ember.zeros_like(p)
        state["exp_inf"] = ember.zeros_like(p)

    def _fused_step(self, group, params, grads, exp_avgs, exp_infs, steps):
        beta1, beta2 = group["betas"]
        _C._adamax_step_(
            params, grads, exp_avgs, exp_infs, steps, lr=_to_scalar(group["lr"]),
            beta1=_to_scalar(beta1), beta2=_to_scalar(beta2),
            weight_decay=_to_scalar(group["weight_decay"]), eps=_to_scalar(group["eps"]),
            maximize=group["maximize"])

    def _composite_step(self, group, params, grads, exp_avgs, exp_infs, steps):
        """The fused kernel's update in ember ops (differentiable=True)."""
        lr, wd, eps = (_to_scalar(group[k]) for k in ("lr", "weight_decay", "eps"))
        beta1, beta2 = (_to_scalar(b) for b in group["betas"])
        for i, p in enumerate(params):
            st = self.state[p]
            step = _advance_step(steps[i])
            g = -grads[i] if group["maximize"] else grads[i]
            if wd != 0:
                g = g + p * wd
            m = st["exp_avg"] = _lerp(exp_avgs[i], g, 1 - beta1)
            u = st["exp_inf"] = ember.maximum(exp_infs[i] * beta2, g.abs() + eps)
            p.sub_(m / u * (lr / (1 - beta1 ** step)))
