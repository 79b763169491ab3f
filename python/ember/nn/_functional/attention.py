"""nn.functional: attention.

``scaled_dot_product_attention`` runs the fused C++ kernel (flash-style
online softmax, no L x S matrix kept for backward: csrc/ember/ops/nn_attention.cpp)
(dropout included, on the CPU and CUDA) unless dropout_p is 1 or a float mask requires
grad, where it runs the composite softmax(q k^T * scale + mask) v, also in C++.
``multi_head_attention_forward`` is the functional form of nn.MultiheadAttention.
"""
import math

import ember
from ember import _C

from ..._errors import ArgumentAssertionError

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


def _to4d(t, batch_shape):
    """(*batch, H, L, E) -> (B, H, L, E); 2-D and 3-D inputs get size-1 dims."""
    if t.dim() == 2:
        return t.unsqueeze(0).unsqueeze(0)
    if t.dim() == 3:
        return t.unsqueeze(1)
    if t.dim() == 4 and tuple(t.shape[:1]) == tuple(batch_shape):
        return t
    t = t.expand(*batch_shape, *t.shape[-3:])
    return t.reshape(-1, *t.shape[-3:])


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value, as
    torch.nn.functional.scaled_dot_product_attention.

    query (..., Hq, L, E), key (..., H, S, E), value (..., H, S, Ev); attn_mask is
    bool (True: take part) or float (added), broadcastable to (..., Hq, L, S).
    is_causal masks key j > query i. enable_gqa lets Hq be a multiple of H
    (each key/value head serves Hq / H query heads). Rows that attend to no key
    give 0.
    """
    for n, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, ember.Tensor):
            raise TypeError(f"scaled_dot_product_attention(): argument '{n}' must be Tensor, "
                            f"not {type(t).__name__}")
    nd = query.dim()
    if nd < 2 or key.dim() != nd or value.dim() != nd:
        raise RuntimeError(
            "scaled_dot_product_attention: expected query, key and value to have the same "
            f"number of dims (at least 2), got {query.dim()}, {key.dim()} and {value.dim()}")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(
            f"scaled_dot_product_attention: query's last dim ({query.shape[-1]}) must equal "
            f"key's ({key.shape[-1]})")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(
            f"scaled_dot_product_attention: key and value must have the same sequence length, "
            f"got {key.shape[-2]} and {value.shape[-2]}")
    if nd >= 3:
        hq, hk = query.shape[-3], key.shape[-3]
        if nd == 3:
            hq = hk = 1
        if hq != hk:
            if not enable_gqa:
                raise RuntimeError(
                    f"scaled_dot_product_attention: query has {hq} heads but key/value have "
                    f"{hk}; pass enable_gqa=True for grouped-query attention")
            if hk == 0 or hq % hk != 0:
                raise RuntimeError(
                    f"scaled_dot_product_attention: number of heads in key/value ({hk}) must "
                    f"divide the number of heads in query ({hq})")
    if attn_mask is not None and is_causal:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    L, S, E = query.shape[-2], key.shape[-2], query.shape[-1]
    if scale is None:
        scale = 1.0 / math.sqrt(E) if E > 0 else 1.0
    batch_shape = tuple(query.shape[:-3]) if nd >= 4 else ()
    if nd >= 4:
        kb, vb = tuple(key.shape[:-3]), tuple(value.shape[:-3])
        if kb != batch_shape or vb != batch_shape:
            raise RuntimeError(
                f"scaled_dot_product_attention: batch dims of query {list(batch_shape)}, key "
                f"{list(kb)} and value {list(vb)} must match")
    B = 1
    for s in batch_shape:
        B *= s
    q4 = _to4d(query, batch_shape[:1] if nd == 4 else batch_shape)
    k4 = _to4d(key, batch_shape[:1] if nd == 4 else batch_shape)
    v4 = _to4d(value, batch_shape[:1] if nd == 4 else batch_shape)
    mask = attn_mask
    if mask is not None:
        if nd == 3 and mask.dim() == 3:
            mask = mask.unsqueeze(1)
        elif nd >= 5:
            mask = mask.expand(*batch_shape, query.shape[-3], L, S).reshape(
                B, query.shape[-3], L, S)
    # Dropout below 1 is fused, on the CPU and on CUDA (Note [Fused attention dropout]); p = 1
    # zeroes every weight and a mask that wants a gradient needs the composite.
    use_math = (dropout_p >= 1.0) or (mask is not None and mask.requires_grad)
    if use_math:
        out = _C._sdpa_math(q4, k4, v4, mask, bool(is_causal), float(scale), float(dropout_p))
    else:
        out = _C._sdpa_flash(q4, k4, v4, mask, bool(is_causal), float(scale), float(dropout_p))
    if nd == 2:
        return out.squeeze(0).squeeze(0)
    if nd == 3:
        return out.squeeze(1)
    if nd == 4:
        return out
    return out.reshape(*batch_shape, *out.shape[1:])


def _linear(x, w, b):
    from .misc import linear
    return linear(x, w, b)


def _softmax(x):
    from .activation import softmax
    return softmax(x, dim=-1)


def _dropout(x, p, training):
    from .misc import dropout
    return dropout(x, p, training)


def _canonical_mask(mask, name, other_name, other, target_dtype):
    if mask is None:
        return None
    if mask.dtype == ember.bool:
        return ember.zeros(mask.shape, dtype=target_dtype, device=mask.device).masked_fill(
            mask, float("-inf"))
    if not mask.is_floating_point():
        raise ArgumentAssertionError(f"only bool and floating types of {name} are supported")
    return mask


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p,
                                 out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """torch.nn.functional.multi_head_attention_forward: inputs (L, N, E) or unbatched
    (L, E); returns (attn_output, attn_weights or None)."""
    is_batched = query.dim() == 3
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    if embed_dim != embed_dim_to_check:
        raise ArgumentAssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise ArgumentAssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if key.shape[:2] != value.shape[:2]:
        raise ArgumentAssertionError(f"key shape {tuple(key.shape)} does not match value shape "
                             f"{tuple(value.shape)}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", "attn_mask",
                                       attn_mask, query.dtype)
    attn_mask = _canonical_mask(attn_mask, "attn_mask", None, None, query.dtype)
    if not use_separate_proj_weight:
        if in_proj_bias is None:
            bq = bk = bv = None
        else:
            bq, bk, bv = in_proj_bias.chunk(3)
        wq, wk, wv = in_proj_weight.chunk(3)
    else:
        wq, wk, wv = q_proj_weight, k_proj_weight, v_proj_weight
        if in_proj_bias is None:
            bq = bk = bv = None
        else:
            bq, bk, bv = in_proj_bias.chunk(3)
    q = _linear(query, wq, bq)
    k = _linear(key, wk, bk)
    v = _linear(value, wv, bv)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, "
                                   f"but should be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, "
                                   f"but should be {(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        k = ember.cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = ember.cat([v, bias_v.expand(1, bsz, embed_dim)])
        if attn_mask is not None:
            attn_mask = ember.cat([attn_mask, ember.zeros((attn_mask.shape[0], tgt_len, 1),
                                                          dtype=attn_mask.dtype,
                                                          device=attn_mask.device)], dim=-1)
        if key_padding_mask is not None:
            key_padding_mask = ember.cat([key_padding_mask, ember.zeros(
                (bsz, 1), dtype=key_padding_mask.dtype, device=key_padding_mask.device)], dim=-1)
    # (L, N, E) -> (N, H, L, hd)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if add_zero_attn:
        zshape = (bsz * num_heads, 1, head_dim)
        k = ember.cat([k, ember.zeros(zshape, dtype=k.dtype, device=k.device)], dim=1)
        v = ember.cat([v, ember.zeros(zshape, dtype=v.dtype, device=v.device)], dim=1)
        if attn_mask is not None:
            attn_mask = ember.cat([attn_mask, ember.zeros(
                (attn_mask.shape[0], tgt_len, 1), dtype=attn_mask.dtype, device=attn_mask.device)], dim=-1)
        if key_padding_mask is not None:
            key_padding_mask = ember.cat([key_padding_mask, ember.zeros(
                (bsz, 1), dtype=key_padding_mask.dtype, device=key_padding_mask.device)], dim=-1)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise ArgumentAssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                 f"{tuple(key_padding_mask.shape)}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(
            bsz, num_heads, 1, src_len).reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0
    if need_weights:
        scores = ember.matmul(q * (1.0 / math.sqrt(head_dim)), k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = _softmax(scores)
        weights = _dropout(weights, dropout_p, True)
        out = ember.matmul(weights, v)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = _linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights
    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, False)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = _linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    if not is_batched:
        out = out.squeeze(1)
    return out, None
