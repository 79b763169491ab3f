"""RMSprop (optionally centered, with momentum)."""
from __future__ import annotations

import ember

from .. import _C
from .optimizer import _advance_step, _check_lr, _GroupStepOptimizer, _lerp, _new_step, _to_scalar

__all__ = ["RMSprop"]


class RMSprop(_GroupStepOptimizer):
    """RMSprop, as torch.optim.RMSprop."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay, "capturable": capturable,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("momentum", 0)
            group.setdefault("centered", False)
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)
        self._tensor_steps("step")

    def _state_keys(self, group):
        keys = ("square_avg", "grad_avg", "momentum_buffer", "step")
        return tuple(k for k in keys
                     if (k != "grad_avg" or group["centered"])
                     and (k != "momentum_buffer" or _to_scalar(group["momentum"]) > 0))

    def _init_state(self, group, p, state):
        state["step"] = _new_step()
        state["square_avg"] = ember.zeros_like(p)
        if _to_scalar(group["momentum"]) > 0:
            state["momentum_buffer"] = ember.zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = ember.zeros_like(p)

    def _lists(self, group, lists):
        """(square_avgs, grad_avgs, momentum_buffers, steps), [] for the unused ones."""
        it = iter(lists)
        square_avgs = next(it)
        grad_avgs = next(it) if group["centered"] else []
        bufs = next(it) if _to_scalar(group["momentum"]) > 0 else []
        return square_avgs, grad_avgs, bufs, next(it)

    def _fused_step(self, group, params, grads, *lists):
        square_avgs, grad_avgs, bufs, steps = self._lists(group, lists)
        _C._rmsprop_step_(
            params, grads, square_avgs, grad_avgs, bufs, steps, lr=_to_scalar(group["lr"]),
            alpha=_to_scalar(group["alpha"]), eps=_to_scalar(group["eps"]),
            weight_decay=_to_scalar(group["weight_decay"]),
            momentum=_to_scalar(group["momentum"]), centered=group["centered"],
            maximize=group["maximize"])

    def _composite_step(self, group, params, grads, *lists):
        """The fused kernel's update in ember ops (differentiable=True)."""
        square_avgs, grad_avgs, bufs, steps = self._lists(group, lists)
        lr, alpha, eps, wd, momentum = (
            _to_scalar(group[k]) for k in ("lr", "alpha", "eps", "weight_decay", "momentum"))
        for i, p in enumerate(params):
            st = self.state[p]
            _advance_step(steps[i])
            g = -grads[i] if group["maximize"] else grads[i]
            if wd != 0:
                g = g + p * wd
            sq = st["square_avg"] = square_avgs[i] * alpha + g * g * (1 - alpha)
            if group["centered"]:
                ga = st["grad_avg"] = _lerp(grad_avgs[i], g, 1 - alpha)
                avg = (sq - ga * ga).sqrt() + eps
            else:
                avg = sq.sqrt() + eps
            if momentum > 0:
                buf = st["momentum_buffer"] = bufs[i] * momentum + g / avg
                p.sub_(buf * lr)
            else:
                p.sub_(g / avg * lr)
