"""nn.functional: losses, as torch.nn.functional.

nll_loss / cross_entropy (fused log_softmax + nll), mse/l1/smooth_l1/huber and the
binary cross entropies are C++ front-ends (ember._C._nn); the others are
composites of C++ ops. ``reduction`` is 'none' | 'mean' | 'sum'; the legacy
``size_average`` / ``reduce`` arguments are accepted.
"""
import math
import warnings

from ... import _C

_nn = _C._nn

__all__ = [
    "nll_loss", "cross_entropy", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
    "gaussian_nll_loss", "cosine_embedding_loss", "margin_ranking_loss", "triplet_margin_loss",
    "multilabel_soft_margin_loss", "ctc_loss",
]

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _legacy_reduction(size_average, reduce):
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        return "mean"
    return "sum" if reduce else "none"


def _reduction(size_average, reduce, reduction):
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    return reduction


def _enum(reduction):
    try:
        return _REDUCTIONS[reduction]
    except (KeyError, TypeError):
        raise ValueError(f"{reduction} is not a valid value for reduction") from None


def _reduce(loss, reduction):
    r = _enum(reduction)
    if r == 0:
        return loss
    return loss.mean() if r == 1 else loss.sum()


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    return _nn.nll_loss(input, target, weight, _enum(reduction), ignore_index)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    reduction = _reduction(size_average, reduce, reduction)
    return _nn.cross_entropy(input, target, weight, _enum(reduction), ignore_index,
                             float(label_smoothing))


def _check_sizes(name, input, target):
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size "
                      f"({input.shape}). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.", stacklevel=3)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    _check_sizes("mse_loss", input, target)
    return _nn.mse_loss(input, target, _enum(_reduction(size_average, reduce, reduction)))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    _check_sizes("l1_loss", input, target)
    return _nn.l1_loss(input, target, _enum(_reduction(size_average, reduce, reduction)))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    _check_sizes("smooth_l1_loss", input, target)
    return _nn.smooth_l1_loss(input, target, _enum(_reduction(size_average, reduce, reduction)),
                              float(beta))


def huber_loss(input, target, reduction="mean", delta=1.0):
    _check_sizes("huber_loss", input, target)
    return _nn.huber_loss(input, target, _enum(reduction), float(delta))


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    return _nn.binary_cross_entropy(input, target, weight, _enum(reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    reduction = _reduction(size_average, reduce, reduction)
    return _nn.binary_cross_entropy_with_logits(input, target, weight, pos_weight,
                                                _enum(reduction))


def _xlogx(t):
    """t * log(t), 0 where t == 0 (the log sees 1 there, so no NaN gradient)."""
    import ember as E
    pos = t > 0
    return E.where(pos, t * E.where(pos, t, 1.0).log(), 0.0)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    reduction = _reduction(size_average, reduce, reduction)
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", stacklevel=2)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = _xlogx(target) - target * input
    if reduction == "batchmean":
        if input.dim() == 0:
            return loss.sum()
        return loss.sum() / input.shape[0]
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    _enum(reduction)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        import ember as E
        big = target > 1
        safe = E.where(big, target, 2.0)
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + E.where(big, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = var.unsqueeze(-1)
        elif input.shape[:-1] == var.shape[:-1] and var.shape[-1] == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = var.clone()
    with _no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def _no_grad():
    from ...autograd import no_grad
    return no_grad()


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    import ember as E
    reduction = _reduction(size_average, reduce, reduction)
    if input1.dim() not in (1, 2) or input1.shape != input2.shape:
        raise RuntimeError(f"cosine_embedding_loss: expected 1D or 2D inputs of one shape, got "
                           f"{list(input1.shape)} and {list(input2.shape)}")
    eps = 1e-12
    prod = (input1 * input2).sum(-1)
    mag = ((input1 * input1).sum(-1) + eps) * ((input2 * input2).sum(-1) + eps)
    cos = prod / mag.sqrt()
    pos = E.where(target == 1, 1 - cos, 0.0)
    neg = E.where(target == -1, (cos - margin).clamp(min=0), 0.0)
    return _reduce(pos + neg, reduction)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    loss = (-target * (input1 - input2) + margin).clamp(min=0)
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    import ember as E

    from .misc import pairwise_distance
    reduction = _reduction(size_average, reduce, reduction)
    if not (anchor.dim() == positive.dim() == negative.dim()):
        raise RuntimeError(
            f"The anchor, positive, and negative tensors are expected to have the same number of "
            f"dimensions, but got: anchor {anchor.dim()}D, positive {positive.dim()}D, and "
            f"negative {negative.dim()}D inputs")
    d_ap = pairwise_distance(anchor, positive, p, eps)
    d_an = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_an = E.minimum(d_an, pairwise_distance(positive, negative, p, eps))
    loss = (margin + d_ap - d_an).clamp(min=0)
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    loss = -(target * _nn.logsigmoid(input) + (1 - target) * _nn.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(dim=input.dim() - 1) / input.shape[-1]
    return _reduce(loss, reduction)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    import ember as E
    if not isinstance(input_lengths, E.Tensor):
        input_lengths = E.tensor(list(input_lengths), dtype=E.int64)
    if not isinstance(target_lengths, E.Tensor):
        target_lengths = E.tensor(list(target_lengths), dtype=E.int64)
    return _nn.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                        _enum(reduction), zero_infinity)
