"""nn.functional: linear layers, dropout, embeddings and distance helpers, as
torch.nn.functional. linear is one addmm through the BLAS (C++); dropout uses
ember's Philox generator; embedding records PyTorch's gradient (padding_idx,
scale_grad_by_freq) in C++.
"""
import warnings

from ... import _C
from ..._errors import ArgumentAssertionError

_nn = _C._nn

__all__ = [
    "linear", "bilinear", "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
    "feature_alpha_dropout", "embedding", "embedding_bag", "one_hot", "normalize",
    "cosine_similarity", "pairwise_distance", "pdist", "cdist",
]


def linear(input, weight, bias=None):
    return _nn.linear(input, weight, bias)


def bilinear(input1, input2, weight, bias=None):
    return _nn.bilinear(input1, input2, weight, bias)


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout(input, p, training, inplace, feature=False, alpha=False):
    _check_p(p)
    if not training or p == 0:
        return input
    f = _nn.dropout_ if inplace else _nn.dropout
    return f(input, p, True, feature, alpha)


def dropout(input, p=0.5, training=True, inplace=False):
    return _dropout(input, p, training, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _dropout(input, p, training, inplace, alpha=True)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _dropout(input, p, training, inplace, feature=True, alpha=True)


def _feature_dropout(name, input, p, training, inplace, batched_dim, spatial):
    _check_p(p)
    d = input.dim()
    if d not in (batched_dim - 1, batched_dim):
        raise RuntimeError(
            f"{name}: Expected {batched_dim - 1}D or {batched_dim}D input, but received a {d}D "
            f"input. Note that {name} exists to provide channel-wise dropout on inputs with "
            f"{spatial} spatial dimension{'s' if spatial > 1 else ''}, a channel dimension, and "
            f"an optional batch dimension (i.e. {batched_dim - 1}D or {batched_dim}D inputs).")
    if not training or p == 0:
        return input
    if d == batched_dim:
        return (_nn.dropout_ if inplace else _nn.dropout)(input, p, True, True, False)
    x = input.unsqueeze(0)
    out = _nn.dropout(x, p, True, True, False).squeeze(0)
    if inplace:
        return input.copy_(out)
    return out


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout("dropout1d", input, p, training, inplace, 3, 1)


def dropout2d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    d = input.dim()
    if d not in (3, 4):
        warnings.warn(f"dropout2d: Received a {d}-D input to dropout2d, which is deprecated and "
                      "will result in an error in a future release. To retain the behavior and "
                      "silence this warning, please use dropout instead. Note that dropout2d "
                      "exists to provide channel-wise dropout on inputs with 2 spatial dimensions, "
                      "a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
                      "inputs).", stacklevel=2)
    if d == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
                      "1D dropout behavior is desired - input is interpreted as shape (N, C, L), "
                      "where C is the channel dim. This behavior will change in a future release "
                      "to interpret the input as one without a batch dimension, i.e. shape (C, "
                      "H, W). To maintain the 1D channel-wise dropout behavior, please switch to "
                      "using dropout1d instead.", stacklevel=2)
    if not training or p == 0:
        return input
    return (_nn.dropout_ if inplace else _nn.dropout)(input, p, True, True, False)


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout("dropout3d", input, p, training, inplace, 5, 3)


def _padding_idx(padding_idx, num):
    if padding_idx is None:
        return -1
    if padding_idx > 0:
        if padding_idx >= num:
            raise ArgumentAssertionError("Padding_idx must be within num_embeddings")
    elif padding_idx < 0:
        if padding_idx < -num:
            raise ArgumentAssertionError("Padding_idx must be within num_embeddings")
        padding_idx = num + padding_idx
    return padding_idx


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` at ``input``. ``sparse=True``: the weight's gradient is a sparse
    COO tensor with a row per looked-up index (optim.SGD, SparseAdam and Adagrad step
    with it)."""
    padding_idx = _padding_idx(padding_idx, weight.shape[0])
    if max_norm is not None:
        _nn.embedding_renorm_(weight, input.contiguous(), float(max_norm), float(norm_type))
    return _nn.embedding(weight, input, padding_idx, bool(scale_grad_by_freq), bool(sparse))


def _check_bag_offsets(offsets, n):
    """PyTorch's checks of embedding_bag's offsets: they start at 0, never decrease and never
    pass the input's length (a bag past the end, or one of negative length, was silently
    empty or garbage)."""
    if offsets.is_floating_point() or offsets.dtype == _bool_dtype():
        raise RuntimeError(f"embedding_bag: offsets must be an integer tensor, got {offsets.dtype}")
    if offsets.numel() == 0:
        return
    first, last = int(offsets[0]), int(offsets[-1])
    if first != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has "
                           f"to start from position 0. However, got {first}")
    if last > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got "
                           f"offsets[-1] of {last}")
    if offsets.numel() > 1 and bool((offsets[1:] < offsets[:-1]).any()):
        raise RuntimeError("embedding_bag: offsets has to be a non-decreasing sequence (each bag "
                           f"starts where the previous one ends or later), got {offsets.tolist()[:16]}"
                           + (" ..." if offsets.numel() > 16 else ""))


def _bool_dtype():
    import ember
    return ember.bool


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    import ember
    if weight.dtype == ember.int64 and input.is_floating_point():
        raise TypeError("embedding_bag: input and weight look swapped: pass (input, weight)")
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode}")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(
                f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                f"GitHub.")
        if per_sample_weights.shape != input.shape:
            raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) "
                             f"is not None, then it must have the same shape as the input "
                             f"({input.shape})")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is "
                             "a mini-batch of fixed length sequences. However, found offsets of "
                             f"type {type(offsets)}")
        B, L = input.shape
        offsets = ember.arange(0, B * L, max(L, 1), dtype=ember.int64, device=input.device)
        if L == 0:
            offsets = ember.zeros(B, dtype=ember.int64, device=input.device)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        _check_bag_offsets(offsets, input.shape[0])
        if include_last_offset:
            offsets = offsets[:-1]
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    offsets = offsets.to(ember.int64)
    n = input.shape[0]
    nb = offsets.shape[0]
    padding_idx = _padding_idx(padding_idx, weight.shape[0])
    if max_norm is not None:
        _nn.embedding_renorm_(weight, input, float(max_norm), float(norm_type))
    D = weight.shape[1]
    # bag[i]: the bag of index i (the number of offsets <= i, minus one).
    starts = ember.zeros(n + 1, dtype=ember.int64, device=input.device)
    starts.index_add_(0, offsets.clamp(max=n), ember.ones(nb, dtype=ember.int64, device=input.device))
    bag = starts[:n].cumsum(0) - 1
    rows = _nn.embedding(weight, input, padding_idx, bool(scale_grad_by_freq), bool(sparse))
    keep = (input != padding_idx) if padding_idx >= 0 else None
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1)
    if keep is not None:
        rows = ember.where(keep.unsqueeze(1), rows, 0.0)
    ones = ember.ones(n, dtype=weight.dtype, device=input.device)
    counts = ember.zeros(nb, dtype=weight.dtype, device=input.device).index_add(
        0, bag, ones if keep is None else keep.to(weight.dtype))
    if mode in ("sum", "mean"):
        out = ember.zeros((nb, D), dtype=weight.dtype, device=input.device).index_add(0, bag, rows)
        if mode == "mean":
            out = out / counts.clamp(min=1).unsqueeze(1)
        return out
    # max: scatter each bag into a dense (bags, longest, D) block padded with -inf.
    pos = ember.arange(n, dtype=ember.int64, device=input.device) - offsets[bag] if n else bag
    longest = int(pos.max()) + 1 if n else 1
    dense = ember.full((nb, longest, D), float("-inf"), dtype=weight.dtype, device=input.device)
    if keep is not None:
        rows = ember.where(keep.unsqueeze(1), rows, float("-inf"))
    if n:
        dense = dense.index_put((bag, pos), rows)
    out = dense.amax(1)
    return ember.where((counts > 0).unsqueeze(1), out, 0.0)


def one_hot(tensor, num_classes=-1):
    return _nn.one_hot(tensor, num_classes)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    denom = input.norm(p, dim, keepdim=True).clamp(min=eps).expand_as(input)
    if out is None:
        return input / denom
    import ember
    return ember.div(input, denom, out=out)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    import ember
    if not x1.is_floating_point():
        x1 = x1.to(ember.get_default_dtype())
    if not x2.is_floating_point():
        x2 = x2.to(ember.get_default_dtype())
    n1 = x1.norm(2, dim, keepdim=True).clamp(min=eps)
    n2 = x2.norm(2, dim, keepdim=True).clamp(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    d = max(x1.dim(), x2.dim())
    return (x1 - x2 + eps).norm(p, d - 1 if d > 0 else None, keepdim=keepdim)


def pdist(input, p=2):
    return _C.pdist(input, p)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    return _C.cdist(x1, x2, p, compute_mode)
