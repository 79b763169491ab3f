"""Registry entries of nn.functional.scaled_dot_product_attention (fused C++
kernel; the composite path when a float mask requires grad, which gradcheck's
float64 masks do) and nn.functional.multi_head_attention_forward."""
import numpy as np

import ember
import ember.nn.functional  # noqa: F401

from . import ErrorCase, OpEntry, Sample
from .nn_rnn import sdpa as sdpa_ref


def _t(rng, shape, device, dtype, scale=1.0):
    return ember.tensor(rng.uniform(-scale, scale, size=shape), dtype=dtype, device=device)


def _sdpa(*a, **k):
    return ember.nn.functional.scaled_dot_product_attention(*a, **k)


def _sdpa_samples(device, dtype):
    rng = np.random.default_rng(11)
    q, k, v = (_t(rng, s, device, dtype) for s in ((1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 3)))
    yield Sample((q, k, v), {}, "4-D")
    yield Sample((_t(rng, (2, 4, 3), device, dtype), _t(rng, (2, 4, 3), device, dtype),
                  _t(rng, (2, 4, 3), device, dtype)), {"is_causal": True}, "3-D causal")
    mask = ember.tensor(rng.uniform(size=(3, 5)) > 0.3, device=device)
    mask[1] = False  # a row that attends to nothing
    yield Sample((q, k, v), {"attn_mask": mask}, "bool mask with an empty row")
    yield Sample((q, k, v), {"attn_mask": _t(rng, (2, 1, 5), device, dtype), "scale": 0.7},
                 "float mask, scale")
    yield Sample((_t(rng, (1, 4, 2, 4), device, dtype), _t(rng, (1, 2, 3, 4), device, dtype),
                  _t(rng, (1, 2, 3, 2), device, dtype)), {"enable_gqa": True}, "gqa")
    yield Sample((_t(rng, (2, 1, 2, 3, 4), device, dtype), _t(rng, (2, 1, 2, 3, 4), device, dtype),
                  _t(rng, (2, 1, 2, 3, 4), device, dtype)), {}, "5-D")


def _sdpa_errors(device):
    q = ember.zeros((1, 2, 3, 4), device=device)
    yield ErrorCase((q, q, q), {"attn_mask": ember.ones((3, 3), dtype=ember.bool),
                                "is_causal": True}, RuntimeError,
                    "Explicit attn_mask should not be set when is_causal=True")
    yield ErrorCase((q, ember.zeros((1, 2, 3, 5)), q), {}, RuntimeError, "last dim")
    yield ErrorCase((q, q.double(), q), {}, RuntimeError, "same dtype")
    yield ErrorCase((q, ember.zeros((1, 3, 3, 4)), ember.zeros((1, 3, 3, 4))),
                    {"enable_gqa": True}, RuntimeError, "must divide")
    yield ErrorCase((q, ember.zeros((1, 1, 3, 4)), ember.zeros((1, 1, 3, 4))), {}, RuntimeError,
                    "enable_gqa")
    yield ErrorCase(("q", q, q), {}, TypeError, "must be Tensor")


def _mha(query, key, value, in_w, in_b, out_w, out_b, num_heads, **kw):
    F = ember.nn.functional
    return F.multi_head_attention_forward(query, key, value, query.shape[-1], num_heads, in_w,
                                          in_b, None, None, False, 0.0, out_w, out_b, **kw)


def _mha_ref(query, key, value, in_w, in_b, out_w, out_b, num_heads, need_weights=True,
             attn_mask=None, key_padding_mask=None, training=True, average_attn_weights=True):
    L, N, E = query.shape
    S = key.shape[0]
    hd = E // num_heads
    wq, wk, wv = np.split(in_w, 3)
    bq, bk, bv = np.split(in_b, 3)
    q = (query @ wq.T + bq).reshape(L, N, num_heads, hd).transpose(1, 2, 0, 3)
    k = (key @ wk.T + bk).reshape(S, N, num_heads, hd).transpose(1, 2, 0, 3)
    v = (value @ wv.T + bv).reshape(S, N, num_heads, hd).transpose(1, 2, 0, 3)
    mask = np.zeros((N, 1, L, S))
    if attn_mask is not None:
        mask = mask + (np.where(attn_mask, -np.inf, 0) if attn_mask.dtype == bool else attn_mask)
    if key_padding_mask is not None:
        mask = mask + np.where(key_padding_mask, -np.inf, 0)[:, None, None, :]
    o = sdpa_ref(q, k, v, mask)  # (N, H, L, hd)
    out = o.transpose(2, 0, 1, 3).reshape(L, N, E) @ out_w.T + out_b
    if not need_weights:
        return out
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(hd) + mask
    w = np.exp(s - s.max(-1, keepdims=True))
    w = w / w.sum(-1, keepdims=True)
    return out, (w.mean(1) if average_attn_weights else w)


def _mha_samples(device, dtype):
    rng = np.random.default_rng(12)
    L, S, N, E, H = 3, 4, 2, 4, 2
    x = _t(rng, (L, N, E), device, dtype)
    kv = _t(rng, (S, N, E), device, dtype)
    params = (_t(rng, (3 * E, E), device, dtype, 0.5), _t(rng, (3 * E,), device, dtype, 0.5),
              _t(rng, (E, E), device, dtype, 0.5), _t(rng, (E,), device, dtype, 0.5))
    kpm = ember.tensor([[False, False, True, False], [False, True, False, False]], device=device)
    yield Sample((x, kv, kv, *params, H), {}, "weights")
    am = ember.tensor(rng.uniform(size=(L, S)) > 0.7, device=device)
    yield Sample((x, kv, kv, *params, H), {"need_weights": False, "key_padding_mask": kpm,
                                           "attn_mask": am}, "sdpa path, masks")


def _mha_op(*a, **k):
    out = _mha(*a, **k)
    return out[0] if out[1] is None else out


ENTRIES = [
    OpEntry(name="nn.functional.scaled_dot_product_attention", op=_sdpa,
            samples=_sdpa_samples, ref=sdpa_ref, errors=_sdpa_errors, atol=1e-6, rtol=1e-5,
            note="dropout, large shapes and the fused-vs-composite gradients in "
                 "tests/test_nn_attention.py"),
    OpEntry(name="nn.functional.multi_head_attention_forward", op=_mha_op,
            samples=_mha_samples, ref=_mha_ref, atol=1e-6, rtol=1e-5),
]
