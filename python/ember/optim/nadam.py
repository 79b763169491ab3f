"""NAdam: Adam with Nesterov momentum (optionally with decoupled weight decay)."""
from __future__ import annotations

import ember

from .. import _C
from .adam import _check_betas
from .optimizer import (
    _advance_step,
    _check_lr,
    _GroupStepOptimizer,
    _lerp,
    _new_step,
    _scalar_dtype,
    _to_scalar,
)

__all__ = ["NAdam"]


class NAdam(_GroupStepOptimizer):
    """NAdam, as torch.optim.NAdam (``state['mu_product']`` is a 0-d tensor as in PyTorch)."""

    _scalar_state_keys = ("step", "mu_product")

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_betas(betas)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay,
                    "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
        self._tensor_steps("step", "mu_product")

    def _state_keys(self, group):
        return ("exp_avg", "exp_avg_sq", "mu_product", "step")

    def _init_state(self, group, p, state):
        state["step"] = _new_step()
        state["mu_product"] = ember.ones((), dtype=_scalar_dtype())
        state["exp_avg"] = ember.zeros_like(p)
        state["exp_avg_sq"] = ember.zeros_like(p)

    def _fused_step(self, group, params, grads, exp_avgs, exp_avg_sqs, mu_products, steps):
        beta1, beta2 = group["betas"]
        _C._nadam_step_(
            params, grads, exp_avgs, exp_avg_sqs, mu_products, steps,
            lr=_to_scalar(group["lr"]), beta1=_to_scalar(beta1), beta2=_to_scalar(beta2),
            weight_decay=_to_scalar(group["weight_decay"]), eps=_to_scalar(group["eps"]),
            momentum_decay=_to_scalar(group["momentum_decay"]),
            decoupled_weight_decay=group["decoupled_weight_decay"],
            maximize=group["maximize"])

    def _composite_step(self, group, params, grads, exp_avgs, exp_avg_sqs, mu_products, steps):
        """The fused kernel's update in ember ops (differentiable=True)."""
        lr, wd, eps, momentum_decay = (
            _to_scalar(group[k]) for k in ("lr", "weight_decay", "eps", "momentum_decay"))
        beta1, beta2 = (_to_scalar(b) for b in group["betas"])
        decoupled = group["decoupled_weight_decay"]
        for i, p in enumerate(params):
            st = self.state[p]
            step = _advance_step(steps[i])
            mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
            mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
            with ember.no_grad():
                mu_products[i].mul_(mu)
            mu_product = float(mu_products[i].item())
            g = -grads[i] if group["maximize"] else grads[i]
            if wd != 0 and not decoupled:
                g = g + p * wd
            m = st["exp_avg"] = _lerp(exp_avgs[i], g, 1 - beta1)
            v = st["exp_avg_sq"] = exp_avg_sqs[i] * beta2 + g * g * (1 - beta2)
            denom = (v * (1 / (1 - beta2 ** step))).sqrt() + eps
            update = (g / denom * (lr * (1.0 - mu) / (1.0 - mu_product))
                      + m / denom * (lr * mu_next / (1.0 - mu_product * mu_next)))
            if wd != 0 and decoupled:
                p.mul_(1 - lr * wd)
            p.sub_(update)
