"""Adam (and, with decoupled_weight_decay=True, AdamW)."""
from __future__ import annotations

import ember

from .. import _C
from .optimizer import (
    Optimizer,
    _check_fused_foreach,
    _check_lr,
    _closure_loss,
    _new_step,
    _to_scalar,
    _use_grad,
)

__all__ = ["Adam"]


def _check_betas(betas):
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")



class Adam(Optimizer):
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

    @_use_grad
    def step(self, closure=None):
        """Performs one step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _closure_loss(closure)
        state = self.state
        for group in self.param_groups:
            amsgrad = group["amsgrad"]
            params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps = [], [], [], [], [], []
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                st = state[p]
                if len(st) == 0:
                    st["step"] = _new_step()
                    st["exp_avg"] = ember.zeros_like(p)
                    st["exp_avg_sq"] = ember.zeros_like(p)
                    if amsgrad:
                        st["max_exp_avg_sq"] = ember.zeros_like(p)
                params.append(p)
                grads.append(g)
                exp_avgs.append(st["exp_avg"])
                exp_avg_sqs.append(st["exp_avg_sq"])
                if amsgrad:
                    max_sqs.append(st["max_exp_avg_sq"])
                steps.append(st["step"])
            if not params:
                continue
            beta1, beta2 = group["betas"]
            _C._adam_step_(
                params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps,
                lr=_to_scalar(group["lr"]), beta1=_to_scalar(beta1), beta2=_to_scalar(beta2),
                weight_decay=_to_scalar(group["weight_decay"]), eps=_to_scalar(group["eps"]),
                amsgrad=amsgrad, maximize=group["maximize"],
                decoupled_weight_decay=group["decoupled_weight_decay"])
        return loss
