"""RAdam: rectified Adam (optionally with decoupled weight decay)."""
from __future__ import annotations

import math

import ember

from .. import _C
from .adam import _check_betas
from .optimizer import _advance_step, _check_lr, _GroupStepOptimizer, _lerp, _new_step, _to_scalar

__all__ = ["RAdam"]


class RAdam(_GroupStepOptimizer):
    """RAdam, as torch.optim.RAdam."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_betas(betas)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("capturable", False)
        self._tensor_steps("step")

    def _state_keys(self, group):
        return ("exp_avg", "exp_avg_sq", "step")

    def _init_state(self, group, p, state):
        state["step"] = _new_step()
        state["exp_avg"] = ember.zeros_like(p)
        state["exp_avg_sq"] = ember.zeros_like(p)

    def _fused_step(self, group, params, grads, exp_avgs, exp_avg_sqs, steps):
        beta1, beta2 = group["betas"]
        _C._radam_step_(
            params, grads, exp_avgs, exp_avg_sqs, steps, lr=_to_scalar(group["lr"]),
            beta1=_to_scalar(beta1), beta2=_to_scalar(beta2),
            weight_decay=_to_scalar(group["weight_decay"]), eps=_to_scalar(group["eps"]),
            decoupled_weight_decay=group["decoupled_weight_decay"],
            maximize=group["maximize"])

    def _composite_step(self, group, params, grads, exp_avgs, exp_avg_sqs, steps):
        """The fused kernel's update in ember ops (differentiable=True)."""
        lr, wd, eps = (_to_scalar(group[k]) for k in ("lr", "weight_decay", "eps"))
        beta1, beta2 = (_to_scalar(b) for b in group["betas"])
        decoupled = group["decoupled_weight_decay"]
        rho_inf = 2 / (1 - beta2) - 1
        for i, p in enumerate(params):
            st = self.state[p]
            step = _advance_step(steps[i])
            g = -grads[i] if group["maximize"] else grads[i]
            if wd != 0 and not decoupled:
                g = g + p * wd
            m = st["exp_avg"] = _lerp(exp_avgs[i], g, 1 - beta1)
            v = st["exp_avg_sq"] = exp_avg_sqs[i] * beta2 + g * g * (1 - beta2)
            bc1, bc2 = 1 - beta1 ** step, 1 - beta2 ** step
            rho_t = rho_inf - 2 * step * beta2 ** step / bc2
            if rho_t > 5.0:
                rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                                 / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                update = m * (lr / bc1 * math.sqrt(bc2) * rect) / (v.sqrt() + eps)
            else:
                update = m * (lr / bc1)
            if wd != 0 and decoupled:
                p.mul_(1 - lr * wd)
            p.sub_(update)
