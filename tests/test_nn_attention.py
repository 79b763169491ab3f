"""scaled_dot_product_attention (fused flash-style C++ kernel, and the composite
path), multi_head_attention_forward, and (after nn.Module lands) MultiheadAttention
and the transformer encoder."""
import numpy as np
import pytest
from torch_python import TORCH_PY

import ember
import ember.nn.functional as F
from ember import _C
from ember.testing.registry.nn_rnn import sdpa as sdpa_ref


def _t(rng, shape, dtype=ember.float64, device="cpu", grad=False, scale=1.0):
    t = ember.tensor(rng.uniform(-scale, scale, size=shape), dtype=dtype, device=device)
    return t.requires_grad_(True) if grad else t


def _np(t):
    return t.detach().cpu().numpy()


SHAPES = [  # (B, Hq, Hk, L, S, E, Ev)
    (2, 3, 3, 70, 130, 64, 64),    # compile-time head size, partial key blocks
    (1, 2, 2, 5, 7, 16, 24),       # generic head sizes
    (1, 4, 2, 33, 65, 32, 32),     # grouped-query
    (1, 1, 1, 3, 200, 128, 128),
]


def _qkv(rng, shape, dtype, device="cpu", grad=False):
    B, Hq, Hk, L, S, E, Ev = shape
    return (_t(rng, (B, Hq, L, E), dtype, device, grad), _t(rng, (B, Hk, S, E), dtype, device, grad),
            _t(rng, (B, Hk, S, Ev), dtype, device, grad))


def _masks(rng, shape):
    B, Hq, Hk, L, S, E, Ev = shape
    yield {}
    yield {"is_causal": True}
    m = rng.uniform(size=(L, S)) > 0.4
    m[0] = False
    yield {"attn_mask": m}
    yield {"attn_mask": rng.standard_normal((B, 1, L, S)).astype(np.float64)}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_fused_matches_reference(shape, dtype, device):
    rng = np.random.default_rng(0)
    q, k, v = _qkv(rng, shape, dtype, device)
    gqa = shape[1] != shape[2]
    for kw in _masks(rng, shape):
        ekw = dict(kw)
        if "attn_mask" in kw:
            m = kw["attn_mask"]
            ekw["attn_mask"] = ember.tensor(m, device=device) if m.dtype == bool else \
                ember.tensor(m, dtype=dtype, device=device)
        out = F.scaled_dot_product_attention(q, k, v, enable_gqa=gqa, **ekw)
        assert out.grad_fn is None
        exp = sdpa_ref(_np(q), _np(k), _np(v), kw.get("attn_mask"), kw.get("is_causal", False),
                       enable_gqa=gqa)
        tol = 2e-5 if dtype == ember.float32 else 1e-12
        np.testing.assert_allclose(_np(out), exp, atol=tol, rtol=tol, err_msg=str(kw))


@pytest.mark.parametrize("shape", SHAPES[:3])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_fused_gradients_match_composite(shape, dtype, device):
    rng = np.random.default_rng(1)
    gqa = shape[1] != shape[2]
    for kw in _masks(rng, shape):
        if "attn_mask" in kw:
            m = kw["attn_mask"]
            kw["attn_mask"] = ember.tensor(m, device=device) if m.dtype == bool else \
                ember.tensor(m, dtype=dtype, device=device)
        grads = []
        g = None
        for fused in (True, False):
            q, k, v = _qkv(np.random.default_rng(2), shape, dtype, device, grad=True)
            if fused:
                out = F.scaled_dot_product_attention(q, k, v, enable_gqa=gqa, **kw)
                assert out.grad_fn.name() == "ScaledDotProductFlashAttentionForCpuBackward0"
            else:
                out = _C._sdpa_math(q, k, v, kw.get("attn_mask"), kw.get("is_causal", False),
                                    1.0 / np.sqrt(shape[5]), 0.0)
            if g is None:
                g = _t(rng, out.shape, dtype, device)
            (out * g).sum().backward()
            grads.append([_np(t.grad) for t in (q, k, v)])
        tol = 5e-5 if dtype == ember.float32 else 1e-11
        for a, b in zip(*grads):
            np.testing.assert_allclose(a, b, atol=tol, rtol=tol)


def _values_and_grads(out, g, inputs):
    """out and the inputs' gradients of sum(out * g), as arrays."""
    (out * g).sum().backward()
    return [_np(out)] + [_np(t.grad) for t in inputs]


def _assert_pairs(res, rtol, kw):
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, atol=1e-11, rtol=rtol, err_msg=str(kw))


@pytest.mark.parametrize("blas", [True, False])
@pytest.mark.parametrize("shape", [(1, 2, 1, 150, 1100, 8, 8),   # several key chunks, query tiles
                                   (2, 2, 2, 129, 3, 5, 7)])     # a partial backward tile
def test_tiled_and_row_kernels_match_composite(shape, blas, device):
    # The BLAS path (tiled GEMMs, online softmax across key chunks) and the row kernel
    # (the BLAS switched off) both agree with the composite path, values and gradients.
    rng = np.random.default_rng(11)
    gqa = shape[1] != shape[2]
    _C._set_blas_enabled(blas)
    try:
        for kw in _masks(rng, shape):
            if "attn_mask" in kw:
                m = kw["attn_mask"]
                kw["attn_mask"] = ember.tensor(m, device=device) if m.dtype == bool else \
                    ember.tensor(m, dtype=ember.float64, device=device)
            res, g = [], None
            for fused in (True, False):
                q, k, v = _qkv(np.random.default_rng(2), shape, ember.float64, device, grad=True)
                if fused:
                    out = F.scaled_dot_product_attention(q, k, v, enable_gqa=gqa, **kw)
                else:
                    out = _C._sdpa_math(q, k, v, kw.get("attn_mask"), kw.get("is_causal", False),
                                        1.0 / np.sqrt(shape[5]), 0.0)
                g = _t(rng, out.shape, ember.float64, device) if g is None else g
                res.append(_values_and_grads(out, g, (q, k, v)))
            _assert_pairs(res, 1e-11, kw)
    finally:
        _C._set_blas_enabled(True)


def test_blas_threads_restored_after_attention(device):
    # The tiled kernels run the BLAS single-threaded inside the pool (blas::SerialScope)
    # and give it back its thread count afterwards.
    n = ember.get_num_threads()
    try:
        ember.set_num_threads(2)
        ember.ones(40, 40) @ ember.ones(40, 40)  # applies the thread count
        before = _C._blas_info()
        q = ember.randn(1, 2, 70, 16, requires_grad=True)
        F.scaled_dot_product_attention(q, q, q).sum().backward()
        assert _C._blas_info() == before
        if before["available"]:
            assert before["threads"] == 2
    finally:
        ember.set_num_threads(n)


def test_fully_masked_rows_give_zero_output_and_gradient(device):
    rng = np.random.default_rng(3)
    q, k, v = _qkv(rng, (1, 1, 1, 4, 6, 8, 8), ember.float64, device, grad=True)
    m = ember.ones((4, 6), dtype=ember.bool, device=device)
    m[2] = False
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    assert np.all(_np(out)[0, 0, 2] == 0)
    out.sum().backward()
    assert np.all(_np(q.grad)[0, 0, 2] == 0)
    assert np.isfinite(_np(k.grad)).all() and np.isfinite(_np(v.grad)).all()


@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"scale": 0.3}])
def test_gradcheck_and_gradgradcheck(kw, device):
    rng = np.random.default_rng(4)
    q, k, v = _qkv(rng, (1, 2, 1, 3, 4, 3, 2), ember.float64, device, grad=True)
    m = ember.tensor(rng.uniform(size=(3, 4)) > 0.3, device=device)

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True, **kw)

    def fn_mask(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True)
    for f in (fn, fn_mask):
        assert ember.autograd.gradcheck(f, (q, k, v))
        assert ember.autograd.gradgradcheck(f, (q, k, v))


def test_float_mask_requiring_grad_gets_gradient(device):
    rng = np.random.default_rng(5)
    q, k, v = _qkv(rng, (1, 1, 1, 3, 4, 2, 2), ember.float64, device, grad=True)
    mask = _t(rng, (3, 4), grad=True, device=device)
    assert ember.autograd.gradcheck(
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), (q, k, v, mask))


def test_non_contiguous_inputs(device):
    rng = np.random.default_rng(6)
    base = _t(rng, (2, 9, 3, 64), ember.float32, device)  # (B, L, H, E) viewed as (B, H, L, E)
    q = base.transpose(1, 2)
    k = _t(rng, (2, 64, 3, 11), ember.float32, device).permute(0, 2, 3, 1)
    v = _t(rng, (2, 3, 11, 64), ember.float32, device)
    out = F.scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(_np(out), sdpa_ref(_np(q), _np(k), _np(v)), atol=2e-5)


def test_threads_do_not_change_the_result(device):
    rng = np.random.default_rng(7)
    q, k, v = _qkv(rng, (2, 4, 4, 40, 50, 64, 64), ember.float32, device, grad=True)
    n = ember.get_num_threads()
    try:
        res = []
        for threads in (1, max(2, n)):
            ember.set_num_threads(threads)
            for t in (q, k, v):
                t.grad = None
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            out.square().sum().backward()
            res.append([_np(out)] + [_np(t.grad) for t in (q, k, v)])
    finally:
        ember.set_num_threads(n)
    for a, b in zip(*res):
        np.testing.assert_array_equal(a, b)


def test_dropout(device):
    rng = np.random.default_rng(8)
    q, k, v = _qkv(rng, (1, 1, 1, 64, 64, 8, 8), ember.float64, device)
    v = ember.ones_like(v)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=1.0)
    assert np.all(_np(out) == 0)
    ember.manual_seed(3)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    ember.manual_seed(3)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    np.testing.assert_array_equal(_np(a), _np(b))
    # rows of ones: each output is sum(p * keep / 0.5) whose mean is 1
    assert abs(_np(a).mean() - 1) < 0.1 and _np(a).std() > 0.05


def _dropout_reference(q, k, v, p, seed, kw, gqa):
    """The composite path with the scaled keep mask the fused call under `seed` draws."""
    B, Hq, L, E = q.shape
    S = k.shape[2]
    ember.manual_seed(seed)
    z = _C._sdpa_dropout_mask(B, Hq, L, S, p, q.dtype)
    if gqa:
        k, v = (t.repeat_interleave(Hq // k.shape[1], 1) for t in (k, v))
    s = (q @ k.transpose(-2, -1)) * kw.get("scale", 1.0 / np.sqrt(E))
    if kw.get("is_causal"):
        s = s.masked_fill(ember.ones((L, S), dtype=ember.bool).triu(1), float("-inf"))
    if "attn_mask" in kw:
        s = s.masked_fill(~kw["attn_mask"], float("-inf"))
    return (s.softmax(-1) * z) @ v, z


@pytest.mark.parametrize("blas", [True, False])
@pytest.mark.parametrize("shape", [(2, 2, 2, 70, 130, 64, 64),   # several key chunks
                                   (1, 4, 2, 33, 65, 5, 7),       # grouped-query, odd sizes
                                   (1, 1, 1, 150, 1100, 8, 8)])   # query tiles, key chunks
def test_fused_dropout_matches_composite_with_the_same_mask(shape, blas):
    # Note [Fused attention dropout]: the fused kernels (tiled and row) apply exactly the mask
    # _sdpa_dropout_mask materializes; values and all three gradients match the composite.
    rng = np.random.default_rng(21)
    gqa = shape[1] != shape[2]
    L, S = shape[3], shape[4]
    m = ember.tensor(rng.uniform(size=(L, S)) > 0.3)
    _C._set_blas_enabled(blas)
    try:
        for kw in ({}, {"is_causal": True}, {"attn_mask": m, "scale": 0.2}):
            res, g = [], None
            for fused in (True, False):
                q, k, v = _qkv(np.random.default_rng(2), shape, ember.float64, grad=True)
                if fused:
                    ember.manual_seed(77)
                    out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3, enable_gqa=gqa,
                                                         **kw)
                    assert type(out.grad_fn).__name__ == \
                        "ScaledDotProductFlashAttentionForCpuBackward0"
                else:
                    out, z = _dropout_reference(q, k, v, 0.3, 77, kw, gqa)
                    frac = float((z == 0).double().mean())
                    assert abs(frac - 0.3) < 0.03, frac
                g = _t(rng, out.shape, ember.float64) if g is None else g
                res.append(_values_and_grads(out, g, (q, k, v)))
            _assert_pairs(res, 1e-10, kw)
    finally:
        _C._set_blas_enabled(True)


def test_fused_dropout_gradcheck_gradgradcheck_and_float32():
    rng = np.random.default_rng(22)
    q, k, v = _qkv(rng, (1, 2, 1, 5, 6, 3, 2), ember.float64, grad=True)

    def f(q, k, v):  # the same mask on every call: a function gradcheck can difference
        ember.manual_seed(9)
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.4, enable_gqa=True)
    assert ember.autograd.gradcheck(f, (q, k, v))
    assert ember.autograd.gradgradcheck(f, (q, k, v))
    # float32 through the same kernels
    q32, k32, v32 = (t.detach().float() for t in (q, k, v))
    ember.manual_seed(9)
    a = F.scaled_dot_product_attention(q32, k32, v32, dropout_p=0.4, enable_gqa=True)
    b = f(q, k, v)
    np.testing.assert_allclose(_np(a), _np(b), rtol=1e-5, atol=1e-6)


def test_fused_dropout_draws_a_new_mask_each_call_and_errors():
    q = ember.randn(1, 1, 32, 8)
    ember.manual_seed(1)
    a = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    b = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    assert not np.array_equal(_np(a), _np(b))
    with pytest.raises(RuntimeError, match="0 <= dropout_p < 1"):
        _C._sdpa_flash(q, q, q, None, False, 1.0, 1.5)
    with pytest.raises(RuntimeError, match="0 <= dropout_p < 1"):
        _C._sdpa_flash(q, q, q, None, False, 1.0, -0.1)
    with pytest.raises(RuntimeError, match="floating dtype"):
        _C._sdpa_dropout_mask(1, 1, 2, 2, 0.5, ember.int64)
    with pytest.raises(RuntimeError, match="0 < p < 1"):
        _C._sdpa_dropout_mask(1, 1, 2, 2, 1.0, ember.float32)
    with pytest.raises(RuntimeError, match="negative dimension"):
        _C._sdpa_dropout_mask(-1, 1, 2, 2, 0.5, ember.float32)


def test_empty_and_small_shapes(device):
    q = ember.zeros((1, 2, 0, 4), device=device)
    k = ember.zeros((1, 2, 3, 4), device=device)
    assert tuple(F.scaled_dot_product_attention(q, k, k).shape) == (1, 2, 0, 4)
    q2 = ember.ones((3, 4), device=device)
    out = F.scaled_dot_product_attention(q2, q2, q2)
    np.testing.assert_allclose(_np(out), np.ones((3, 4)), atol=1e-6)


def test_errors():
    q = ember.zeros((1, 2, 3, 4))
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=ember.ones((3, 3), dtype=ember.bool),
                                       is_causal=True)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.scaled_dot_product_attention(q, q.double(), q)
    with pytest.raises(RuntimeError, match="same number of dims"):
        F.scaled_dot_product_attention(q, q[0], q)
    with pytest.raises(RuntimeError, match="bool or float"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=ember.ones((3, 3), dtype=ember.int64))
    with pytest.raises(RuntimeError):
        F.scaled_dot_product_attention(q, q, q, attn_mask=ember.ones((3, 5)))


# ---- MultiheadAttention and the transformer encoder --------------------------------------

def test_multihead_attention_parameters_and_forms():
    ember.manual_seed(0)
    m = ember.nn.MultiheadAttention(8, 2, batch_first=True).double()
    assert [n for n, _ in m.named_parameters()] == ["in_proj_weight", "in_proj_bias",
                                                    "out_proj.weight", "out_proj.bias"]
    assert tuple(m.in_proj_weight.shape) == (24, 8)
    rng = np.random.default_rng(30)
    x = _t(rng, (2, 5, 8))
    kpm = ember.tensor([[False] * 4 + [True], [False] * 5])
    out, w = m(x, x, x, key_padding_mask=kpm)
    assert tuple(out.shape) == (2, 5, 8) and tuple(w.shape) == (2, 5, 5)
    np.testing.assert_allclose(_np(w)[0, :, 4], 0, atol=1e-12)
    np.testing.assert_allclose(_np(w).sum(-1), 1, atol=1e-12)
    out2, none = m(x, x, x, key_padding_mask=kpm, need_weights=False)
    assert none is None
    np.testing.assert_allclose(_np(out2), _np(out), atol=1e-12)
    _, wh = m(x, x, x, average_attn_weights=False)
    assert tuple(wh.shape) == (2, 2, 5, 5)
    one, _ = m(x[0], x[0], x[0])  # unbatched
    full, _ = m(x, x, x)
    np.testing.assert_allclose(_np(one), _np(full)[0], atol=1e-12)
    kv = ember.nn.MultiheadAttention(8, 4, kdim=3, vdim=6, add_bias_kv=True)
    names = [n for n, _ in kv.named_parameters()]
    assert names == ["q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias", "bias_k",
                     "bias_v", "out_proj.weight", "out_proj.bias"]
    o, w = kv(ember.zeros((5, 2, 8)), ember.ones((7, 2, 3)), ember.ones((7, 2, 6)))
    assert tuple(o.shape) == (5, 2, 8) and tuple(w.shape) == (2, 5, 8)
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):  # also ValueError
        ember.nn.MultiheadAttention(6, 4)


_TORCH_TRANSFORMER = r"""
import json, numpy as np, torch
torch.manual_seed(0)
res = {}
mha = torch.nn.MultiheadAttention(8, 2, batch_first=True).double().eval()
x = torch.randn(2, 5, 8, dtype=torch.float64, requires_grad=True)
am = torch.rand(5, 5) > 0.7
am.fill_diagonal_(False)
o, w = mha(x, x, x, attn_mask=am)
o.square().sum().backward()
res["mha"] = dict(state={k: v.tolist() for k, v in mha.state_dict().items()}, x=x.tolist(),
                  am=am.tolist(), o=o.tolist(), w=w.tolist(), xg=x.grad.tolist())
for norm_first, act in ((False, "relu"), (True, "gelu")):
    layer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                             activation=act, batch_first=True,
                                             norm_first=norm_first)
    enc = torch.nn.TransformerEncoder(layer, 2, norm=torch.nn.LayerNorm(8),
                                      enable_nested_tensor=False).double()
    src = torch.randn(2, 6, 8, dtype=torch.float64)
    kpm = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
    mask = torch.nn.Transformer.generate_square_subsequent_mask(6, dtype=torch.float64)
    y = enc(src, mask=mask, src_key_padding_mask=kpm)
    res[f"enc{int(norm_first)}"] = dict(state={k: v.tolist() for k, v in enc.state_dict().items()},
                                        src=src.tolist(), kpm=kpm.tolist(), y=y.tolist())
print(json.dumps(res))
"""


@pytest.mark.skipif(TORCH_PY is None, reason="PyTorch not installed")
def test_mha_and_transformer_encoder_against_torch():
    import json
    import os
    import subprocess
    r = subprocess.run([TORCH_PY, "-c", _TORCH_TRANSFORMER],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PYTHONPATH=""))
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])

    def load(m, state):
        m.load_state_dict({k: ember.tensor(np.array(v), dtype=ember.float64)
                           for k, v in state.items()})
    d = res["mha"]
    mha = ember.nn.MultiheadAttention(8, 2, batch_first=True).double().eval()
    load(mha, d["state"])
    x = ember.tensor(np.array(d["x"]), dtype=ember.float64).requires_grad_(True)
    o, w = mha(x, x, x, attn_mask=ember.tensor(np.array(d["am"])))
    np.testing.assert_allclose(_np(o), np.array(d["o"]), atol=1e-10)
    np.testing.assert_allclose(_np(w), np.array(d["w"]), atol=1e-10)
    o.square().sum().backward()
    np.testing.assert_allclose(_np(x.grad), np.array(d["xg"]), atol=1e-10)
    for norm_first, act in ((False, "relu"), (True, "gelu")):
        d = res[f"enc{int(norm_first)}"]
        layer = ember.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                                 activation=act, batch_first=True,
                                                 norm_first=norm_first)
        enc = ember.nn.TransformerEncoder(layer, 2, norm=ember.nn.LayerNorm(8)).double()
        load(enc, d["state"])
        src = ember.tensor(np.array(d["src"]), dtype=ember.float64)
        mask = ember.triu(ember.full((6, 6), float("-inf"), dtype=ember.float64), 1)
        y = enc(src, mask=mask, src_key_padding_mask=ember.tensor(np.array(d["kpm"])))
        np.testing.assert_allclose(_np(y), np.array(d["y"]), atol=1e-10, err_msg=str(norm_first))


def test_transformer_encoder_layer_structure_and_training():
    ember.manual_seed(0)
    layer = ember.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.1)
    names = [n for n, _ in layer.named_parameters()]
    assert names == ["self_attn.in_proj_weight", "self_attn.in_proj_bias",
                     "self_attn.out_proj.weight", "self_attn.out_proj.bias", "linear1.weight",
                     "linear1.bias", "linear2.weight", "linear2.bias", "norm1.weight",
                     "norm1.bias", "norm2.weight", "norm2.bias"]
    enc = ember.nn.TransformerEncoder(layer, 3)
    assert len(enc.layers) == 3 and enc.layers[0] is not layer
    x = ember.randn(7, 2, 8)
    y = enc(x)
    y.sum().backward()
    assert all(p.grad is not None for p in enc.parameters())
    enc.eval()
    np.testing.assert_array_equal(_np(enc(x)), _np(enc(x)))
    custom = ember.nn.TransformerEncoderLayer(8, 2, 16, 0.0, activation=ember.tanh, bias=False)
    assert custom.activation is ember.tanh and custom.linear1.bias is None
    assert tuple(custom(x).shape) == (7, 2, 8)


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16])
@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"dropout_p": 0.2}])
def test_16_bit_inputs_compute_in_float(dtype, kw):
    # Note [16-bit recurrent and attention math]
    rng = np.random.default_rng(30)
    q, k, v = (t.to(dtype).requires_grad_() for t in _qkv(rng, (2, 2, 2, 9, 11, 8, 4),
                                                          ember.float32))
    ember.manual_seed(4)
    out = F.scaled_dot_product_attention(q, k, v, **kw)
    assert out.dtype == dtype
    q32, k32, v32 = (t.detach().float().requires_grad_() for t in (q, k, v))
    ember.manual_seed(4)
    ref = F.scaled_dot_product_attention(q32, k32, v32, **kw)
    tol = 2e-2 if dtype == ember.bfloat16 else 2e-3
    np.testing.assert_allclose(_np(out.float()), _np(ref.to(dtype).float()), rtol=tol, atol=tol)
    out.float().sum().backward()
    ref.sum().backward()
    for a, b in ((q, q32), (k, k32), (v, v32)):
        assert a.grad.dtype == dtype
        np.testing.assert_allclose(_np(a.grad.float()), _np(b.grad), rtol=5 * tol, atol=5 * tol)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.scaled_dot_product_attention(q, k.float(), v)
