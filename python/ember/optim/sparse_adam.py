"""SparseAdam: Adam's lazy variant for sparse gradients (torch.optim.SparseAdam)."""
from __future__ import annotations

import math

import ember

from .. import _C
from .optimizer import Optimizer, _closure_loss, _to_scalar

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Adam for parameters whose gradients are sparse COO tensors (an Embedding with
    ``sparse=True``): the moments and the parameter change only at the rows a gradient
    specifies, with PyTorch's arithmetic. The work per parameter is a few ember ops over
    the gradient's rows."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)
        sparse_params = []
        for gi, group in enumerate(self.param_groups):
            for pi, p in enumerate(group["params"]):
                if p.is_sparse:
                    sparse_params.append([gi, pi])
        if sparse_params:
            raise ValueError(f"Sparse params at indices {sparse_params}: SparseAdam requires "
                             "dense parameter tensors")

    def step(self, closure=None):
        """Performs one step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _closure_loss(closure)
        with ember.no_grad():
            for group in self.param_groups:
                beta1, beta2 = group["betas"]
                lr, eps = _to_scalar(group["lr"]), _to_scalar(group["eps"])
                maximize = group.get("maximize", False)
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if not p.grad.is_sparse:
                        raise RuntimeError("SparseAdam does not support dense gradients, please "
                                           "consider Adam instead")
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = 0
                        state["exp_avg"] = ember.zeros_like(p)
                        state["exp_avg_sq"] = ember.zeros_like(p)
                    state["step"] += 1
                    _sparse_adam_update(p, p.grad, state["exp_avg"], state["exp_avg_sq"],
                                        state["step"], beta1, beta2, lr, eps, maximize)
        return loss


def _sparse_adam_update(param, grad, exp_avg, exp_avg_sq, step, beta1, beta2, lr, eps,
                        maximize):
    grad = (-grad if maximize else grad).coalesce()  # the update is not linear: unique rows
    idx, vals = grad._indices(), grad._values()
    if vals.numel() == 0:
        return
    size = grad.shape

    def make_sparse(v):
        return _C._sparse_coo_tensor_unsafe(idx, v, size, True)

    # old <- b * old + (1 - b) * new, written old += (1 - b) * (new - old), as PyTorch.
    old_exp_avg = exp_avg.sparse_mask(grad)._values()
    exp_avg_update = vals.sub(old_exp_avg).mul_(1 - beta1)
    exp_avg.add_(make_sparse(exp_avg_update))
    old_exp_avg_sq = exp_avg_sq.sparse_mask(grad)._values()
    exp_avg_sq_update = vals.pow(2).sub_(old_exp_avg_sq).mul_(1 - beta2)
    exp_avg_sq.add_(make_sparse(exp_avg_sq_update))
    numer = exp_avg_update.add_(old_exp_avg)
    exp_avg_sq_update.add_(old_exp_avg_sq)
    denom = exp_avg_sq_update.sqrt_().add_(eps)
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    step_size = lr * math.sqrt(bias_correction2) / bias_correction1
    param.add_(make_sparse(-step_size * numer.div_(denom)))
