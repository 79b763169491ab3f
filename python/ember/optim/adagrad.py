"""Adagrad (with learning-rate decay and an initial accumulator value)."""
from __future__ import annotations

import ember

from .. import _C
from .optimizer import (
    _advance_step,
    _check_fused_foreach,
    _check_lr,
    _GroupStepOptimizer,
    _new_step,
    _to_scalar,
)

__all__ = ["Adagrad"]


class Adagrad(_GroupStepOptimizer):
    """Adagrad, as torch.optim.Adagrad. State is created for every parameter at
    construction (``step`` and ``sum`` filled with ``initial_accumulator_value``)."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_lr(lr)
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: "
                             f"{initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        _check_fused_foreach(defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(group, p, self.state[p])

    def _init_state(self, group, p, state):
        state["step"] = _new_step()
        state["sum"] = ember.full_like(p, self.defaults["initial_accumulator_value"])

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)
        self._tensor_steps("step")

    def share_memory(self):
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["sum"].share_memory_()

    def _state_keys(self, group):
        return ("sum", "step")

    def _fused_step(self, group, params, grads, sums, steps):
        _C._adagrad_step_(
            params, grads, sums, steps, lr=_to_scalar(group["lr"]),
            lr_decay=_to_scalar(group["lr_decay"]),
            weight_decay=_to_scalar(group["weight_decay"]), eps=_to_scalar(group["eps"]),
            maximize=group["maximize"])

    def _sparse_step(self, group, params, grads, sums, steps):
        """PyTorch's Adagrad update for a sparse gradient: coalesced (the update is not
        linear), the accumulator and the parameter change at the gradient's rows only."""
        lr, lr_decay, wd, eps = (
            _to_scalar(group[k]) for k in ("lr", "lr_decay", "weight_decay", "eps"))
        if wd != 0:
            raise RuntimeError("weight_decay option is not compatible with sparse gradients")
        for i, p in enumerate(params):
            step = _advance_step(steps[i])
            g = (-grads[i] if group["maximize"] else grads[i]).coalesce()
            clr = lr / (1 + (step - 1) * lr_decay)
            idx, vals = g._indices(), g._values()
            sums[i].add_(_C._sparse_coo_tensor_unsafe(idx, vals.pow(2), g.shape, True))
            std = sums[i].sparse_mask(g)._values().sqrt_().add_(eps)
            p.add_(_C._sparse_coo_tensor_unsafe(idx, vals / std, g.shape, True), alpha=-clr)

    def _composite_step(self, group, params, grads, sums, steps):
        """The fused kernel's update in ember ops (differentiable=True)."""
        lr, lr_decay, wd, eps = (
            _to_scalar(group[k]) for k in ("lr", "lr_decay", "weight_decay", "eps"))
        for i, p in enumerate(params):
            step = _advance_step(steps[i])
            g = -grads[i] if group["maximize"] else grads[i]
            if wd != 0:
                g = g + p * wd
            s = self.state[p]["sum"] = sums[i] + g * g
            p.sub_(g / (s.sqrt() + eps) * (lr / (1 + (step - 1) * lr_decay)))
