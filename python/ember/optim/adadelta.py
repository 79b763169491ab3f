"""Adadelta."""
from __future__ import annotations

import ember

from .. import _C
from .optimizer import _advance_step, _check_lr, _GroupStepOptimizer, _new_step, _to_scalar

__all__ = ["Adadelta"]


class Adadelta(_GroupStepOptimizer):
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

    def _state_keys(self, group):
        return ("square_avg", "acc_delta", "step")

    def _init_state(self, group, p, state):
        state["step"] = _new_step()
        state["square_avg"] = ember.zeros_like(p)
        state["acc_delta"] = ember.zeros_like(p)

    def _fused_step(self, group, params, grads, square_avgs, acc_deltas, steps):
        _C._adadelta_step_(
            params, grads, square_avgs, acc_deltas, steps, lr=_to_scalar(group["lr"]),
            rho=_to_scalar(group["rho"]), eps=_to_scalar(group["eps"]),
            weight_decay=_to_scalar(group["weight_decay"]), maximize=group["maximize"])

    def _composite_step(self, group, params, grads, square_avgs, acc_deltas, steps):
        """The fused kernel's update in ember ops (differentiable=True)."""
        lr, rho, eps, wd = (_to_scalar(group[k]) for k in ("lr", "rho", "eps", "weight_decay"))
        for i, p in enumerate(params):
            st = self.state[p]
            _advance_step(steps[i])
            g = -grads[i] if group["maximize"] else grads[i]
            if wd != 0:
                g = g + p * wd
            sq = st["square_avg"] = square_avgs[i] * rho + g * g * (1 - rho)
            delta = (acc_deltas[i] + eps).sqrt() / (sq + eps).sqrt() * g
            st["acc_delta"] = acc_deltas[i] * rho + delta * delta * (1 - rho)
            p.sub_(delta * lr)
