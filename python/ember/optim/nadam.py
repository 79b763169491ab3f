"""NAdam: Adam with Nesterov momentum (optionally with decoupled weight decay)."""
from __future__ import annotations

import ember

from .. import _C
from .adam import _check_betas
from .optimizer import (
    Optimizer,
    _check_lr,
    _closure_loss,
    _new_step,
    _scalar_dtype,
    _to_scalar,
    _use_grad,
)

__all__ = ["NAdam"]


class NAdam(Optimizer):
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

    @_use_grad
    def step(self, closure=None):
        """Performs one step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params, grads, exp_avgs, exp_avg_sqs, mu_products, steps = [], [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if len(st) == 0:
                    st["step"] = _new_step()
                    st["mu_product"] = ember.ones((), dtype=_scalar_dtype())
                    st["exp_avg"] = ember.zeros_like(p)
                    st["exp_avg_sq"] = ember.zeros_like(p)
                params.append(p)
                grads.append(p.grad)
                exp_avgs.append(st["exp_avg"])
                exp_avg_sqs.append(st["exp_avg_sq"])
                mu_products.append(st["mu_product"])
                steps.append(st["step"])
            if not params:
                continue
            beta1, beta2 = group["betas"]
            _C._nadam_step_(
                params, grads, exp_avgs, exp_avg_sqs, mu_products, steps,
                lr=_to_scalar(group["lr"]), beta1=_to_scalar(beta1), beta2=_to_scalar(beta2),
                weight_decay=_to_scalar(group["weight_decay"]), eps=_to_scalar(group["eps"]),
                momentum_decay=_to_scalar(group["momentum_decay"]),
                decoupled_weight_decay=group["decoupled_weight_decay"],
                maximize=group["maximize"])
        return loss
