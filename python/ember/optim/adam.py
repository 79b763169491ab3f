"""Adam (and, with decoupled_weight_decay=True, AdamW)."""
from __future__ import annotations

import math

import ember

from .. import _C
from .optimizer import (
    _advance_step,
    _check_fused_foreach,
    _check_lr,
    _GroupStepOptimizer,
    _lerp,
    _new_step,
    _to_scalar,
)

__all__ = ["Adam"]


def _check_betas(betas):
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")



class Adam(_GroupStepOptimizer):
    """Adam, as torch.optim.Adam: L2 weight decay folded into the gradient, or decoupled
    (AdamW's) when ``decoupled_weight_decay=True``."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        if isinstance(lr, ember.Tensor):
            if foreach and not capturable:
                raise ValueError("lr as a Tensor is not supported for capturable=False and "
                                 "foreach=True")
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_betas(betas)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (isinstance(betas[0], ember.Tensor) and isinstance(betas[1], ember.Tensor))):
            raise ValueError("betas must be either both floats or both Tensors")
        for i in (0, 1):
            if isinstance(betas[i], ember.Tensor):
                if not capturable and foreach:
                    raise ValueError(f"betas[{i}] as a Tensor is not supported for "
                                     "capturable=False and foreach=True")
                if betas[i].numel() != 1:
                    raise ValueError(f"Tensor betas[{i}] must be 1-element")
        betas = tuple(b.squeeze() if isinstance(b, ember.Tensor) and b.dim() != 0 else b
                      for b in betas)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)
        _check_fused_foreach(defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("fused", None)
        self._tensor_steps("step")

    def _state_keys(self, group):
        keys = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step")
        return keys if group["amsgrad"] else keys[:2] + keys[3:]

    def _init_state(self, group, p, state):
        state["step"] = _new_step()
        state["exp_avg"] = ember.zeros_like(p)
        state["exp_avg_sq"] = ember.zeros_like(p)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = ember.zeros_like(p)

    def _fused_step(self, group, params, grads, exp_avgs, exp_avg_sqs, *rest):
        max_sqs, steps = rest if group["amsgrad"] else ([], rest[0])
        beta1, beta2 = group["betas"]
        _C._adam_step_(
            params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps,
            lr=_to_scalar(group["lr"]), beta1=_to_scalar(beta1), beta2=_to_scalar(beta2),
            weight_decay=_to_scalar(group["weight_decay"]), eps=_to_scalar(group["eps"]),
            amsgrad=group["amsgrad"], maximize=group["maximize"],
            decoupled_weight_decay=group["decoupled_weight_decay"])

    def _composite_step(self, group, params, grads, exp_avgs, exp_avg_sqs, *rest):
        """The fused kernel's update in ember ops (differentiable=True)."""
        amsgrad = group["amsgrad"]
        max_sqs, steps = rest if amsgrad else (None, rest[0])
        lr, wd, eps = (_to_scalar(group[k]) for k in ("lr", "weight_decay", "eps"))
        beta1, beta2 = (_to_scalar(b) for b in group["betas"])
        decoupled = group["decoupled_weight_decay"]
        for i, p in enumerate(params):
            st = self.state[p]
            step = _advance_step(steps[i])
            g = -grads[i] if group["maximize"] else grads[i]
            if wd != 0 and not decoupled:
                g = g + p * wd
            m = st["exp_avg"] = _lerp(exp_avgs[i], g, 1 - beta1)
            v = st["exp_avg_sq"] = exp_avg_sqs[i] * beta2 + g * g * (1 - beta2)
            if amsgrad:
                v = st["max_exp_avg_sq"] = ember.maximum(max_sqs[i], v)
            denom = v.sqrt() * (1 / math.sqrt(1 - beta2 ** step)) + eps
            update = m / denom * (lr / (1 - beta1 ** step))
            if wd != 0 and decoupled:
                p.mul_(1 - lr * wd)
            p.sub_(update)
