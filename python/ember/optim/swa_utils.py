"""Stochastic Weight Averaging and EMA utilities, as torch.optim.swa_utils."""
from __future__ import annotations

import itertools
import math
import warnings
from copy import deepcopy

import ember

from .lr_scheduler import LRScheduler, _format_param

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]


def get_ema_multi_avg_fn(decay=0.999):
    """An in-place EMA update over lists: ``ema = decay * ema + (1 - decay) * param``."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         "[0,1] range.")

    @ember.no_grad()
    def ema_update(ema_param_list, current_param_list, _):
        for p_ema, p_model in zip(ema_param_list, current_param_list):
            if p_ema.is_floating_point():
                p_ema.lerp_(p_model, 1 - decay)
            else:
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """An in-place running mean over lists: ``avg += (param - avg) / (n + 1)``."""

    @ember.no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        n = float(num_averaged)
        for p_avg, p_model in zip(averaged_param_list, current_param_list):
            if p_avg.is_floating_point():
                p_avg.lerp_(p_model, 1 / (n + 1))
            else:
                p_avg.copy_(p_avg + (p_model - p_avg) / (n + 1))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """``avg_fn(ema, param, n) -> decay * ema + (1 - decay) * param``."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         "[0,1] range.")

    @ember.no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """``avg_fn(avg, param, n) -> avg + (param - avg) / (n + 1)``."""

    @ember.no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def _module_base():
    try:
        from ..nn import Module
        return Module
    except ImportError:  # pragma: no cover - ember.nn.Module not merged yet
        return None


_Module = _module_base()


if _Module is not None:
    class AveragedModel(_Module):
        """Keeps a running average (SWA by default, or ``avg_fn``/``multi_avg_fn``, e.g.
        EMA) of a model's parameters (and buffers with ``use_buffers=True``)."""

        def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None,
                     use_buffers=False):
            super().__init__()
            assert avg_fn is None or multi_avg_fn is None, \
                "Only one of avg_fn and multi_avg_fn should be provided"
            self.module = deepcopy(model)
            if device is not None:
                self.module = self.module.to(device)
            self.register_buffer("n_averaged", ember.tensor(0, dtype=ember.long, device=device))
            self.avg_fn = avg_fn
            self.multi_avg_fn = multi_avg_fn
            self.use_buffers = use_buffers

        def forward(self, *args, **kwargs):
            return self.module(*args, **kwargs)

        def update_parameters(self, model):
            """Folds ``model``'s current parameters into the average."""
            self_param = (itertools.chain(self.module.parameters(), self.module.buffers())
                          if self.use_buffers else self.parameters())
            model_param = (itertools.chain(model.parameters(), model.buffers())
                           if self.use_buffers else model.parameters())
            self_detached, model_detached = [], []
            copy_param = bool(self.n_averaged == 0)
            for p_averaged, p_model in zip(self_param, model_param):
                p_model_ = p_model.detach().to(p_averaged.device)
                self_detached.append(p_averaged.detach())
                model_detached.append(p_model_)
                if copy_param:
                    p_averaged.detach().copy_(p_model_)
            if self.n_averaged > 0:
                if self.multi_avg_fn is not None or self.avg_fn is None:
                    fn = self.multi_avg_fn or get_swa_multi_avg_fn()
                    fn(self_detached, model_detached, self.n_averaged)
                else:
                    for p_averaged, p_model in zip(self_detached, model_detached):
                        p_averaged.copy_(self.avg_fn(p_averaged, p_model, self.n_averaged))
            if not self.use_buffers:
                # keep the buffers (e.g. BatchNorm statistics) in sync with the model
                for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                    b_swa.detach().copy_(b_model.detach().to(b_swa.device))
            self.n_averaged += 1


def _batchnorm_base():
    """ember.nn's _BatchNorm base class, wherever the nn package defines it (None if absent)."""
    import importlib

    for mod in ("batchnorm", "normalization"):
        try:
            base = getattr(importlib.import_module(f"ember.nn.modules.{mod}"), "_BatchNorm", None)
        except ImportError:
            base = None
        if base is not None:
            return base
    return None


def _is_batchnorm(module):
    base = _batchnorm_base()
    if base is not None:
        return isinstance(module, base)
    # duck-typed: a module with running statistics and a momentum
    return all(hasattr(module, a) for a in ("reset_running_stats", "momentum", "running_mean"))


@ember.no_grad()
def update_bn(loader, model, device=None):
    """Recomputes the BatchNorm running statistics of ``model`` with one pass over
    ``loader`` (cumulative averages: momentum=None during the pass)."""
    momenta = {}
    for module in model.modules():
        if _is_batchnorm(module):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for input in loader:
        if isinstance(input, (list, tuple)):
            input = input[0]
        if device is not None:
            input = input.to(device)
        model(input)
    for bn_module in momenta:
        bn_module.momentum = momenta[bn_module]
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's lr to ``swa_lr`` over ``anneal_epochs`` (cos or linear),
    then holds it."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1):
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self):
        return {key: value for key, value in self.__dict__.items()
                if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
