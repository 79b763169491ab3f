"""nn.Transformer, TransformerDecoder(Layer) and generate_square_subsequent_mask: structure and
parameter names as torch.nn's, outputs and gradients equal to PyTorch's with the same weights
(PyTorch runs in a subprocess; that test skips without it), masks, and the error paths."""
import json
import os
import subprocess

import numpy as np
import pytest
from torch_python import TORCH_PY

import ember
from ember import nn


def _np(t):
    return t.detach().numpy()


def test_generate_square_subsequent_mask():
    m = nn.Transformer.generate_square_subsequent_mask(4)
    assert m.dtype == ember.float32 and m.device.type == "cpu" and tuple(m.shape) == (4, 4)
    want = np.triu(np.full((4, 4), -np.inf, dtype=np.float32), 1)
    np.testing.assert_array_equal(_np(m), want)
    m64 = nn.Transformer.generate_square_subsequent_mask(3, dtype=ember.float64, device="cpu")
    assert m64.dtype == ember.float64
    assert tuple(nn.Transformer.generate_square_subsequent_mask(0).shape) == (0, 0)
    # Also callable on an instance, as a staticmethod.
    t = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                       dim_feedforward=16)
    np.testing.assert_array_equal(_np(t.generate_square_subsequent_mask(4)), want)


def test_transformer_structure_and_parameter_names():
    t = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=3,
                       dim_feedforward=16)
    assert isinstance(t.encoder, nn.TransformerEncoder)
    assert isinstance(t.decoder, nn.TransformerDecoder)
    assert len(t.encoder.layers) == 2 and len(t.decoder.layers) == 3
    assert isinstance(t.encoder.norm, nn.LayerNorm) and isinstance(t.decoder.norm, nn.LayerNorm)
    assert (t.d_model, t.nhead, t.batch_first) == (8, 2, False)
    names = [n for n, _ in t.decoder.layers[0].named_parameters()]
    assert names == [
        "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
        "self_attn.out_proj.bias", "multihead_attn.in_proj_weight",
        "multihead_attn.in_proj_bias", "multihead_attn.out_proj.weight",
        "multihead_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight",
        "linear2.bias", "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias",
        "norm3.weight", "norm3.bias"]
    # Every matrix is xavier_uniform: bounded by sqrt(6 / (fan_in + fan_out)).
    for n, p in t.named_parameters():
        if p.dim() > 1:
            bound = (6.0 / (p.shape[0] + p.shape[1])) ** 0.5
            assert float(p.abs().max()) <= bound + 1e-7, n
            assert float(p.abs().max()) > 0.5 * bound, n
    # The decoder layers are independent copies.
    a, b = t.decoder.layers[0].linear1.weight, t.decoder.layers[1].linear1.weight
    assert a.data_ptr() != b.data_ptr()
    # Custom encoder/decoder replace the built ones.
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 1)
    custom = nn.Transformer(d_model=8, nhead=2, custom_encoder=enc, num_decoder_layers=1,
                            dim_feedforward=16)
    assert custom.encoder is enc
    # bias=False reaches every Linear and LayerNorm.
    nb = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                        dim_feedforward=16, bias=False)
    assert not any(n.endswith("bias") for n, _ in nb.named_parameters())


def test_transformer_shapes_batch_first_unbatched_and_backward(device):
    ember.manual_seed(0)
    for batch_first in (False, True):
        t = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=2,
                           dim_feedforward=16, dropout=0.0, batch_first=batch_first,
                           device=device)
        assert all(p.device.type == device for p in t.parameters())
        src_shape = (2, 7, 8) if batch_first else (7, 2, 8)
        tgt_shape = (2, 5, 8) if batch_first else (5, 2, 8)
        src = ember.randn(*src_shape, device=device, requires_grad=True)
        tgt = ember.randn(*tgt_shape, device=device, requires_grad=True)
        mask = t.generate_square_subsequent_mask(5, device=device)
        out = t(src, tgt, tgt_mask=mask)
        assert tuple(out.shape) == tgt_shape and out.device.type == device
        out.sum().backward()
        assert src.grad is not None and tgt.grad is not None
        assert all(p.grad is not None for p in t.parameters())
    # Unbatched (S, E) / (T, E) inputs.
    t.eval()
    src, tgt = ember.randn(7, 8, device=device), ember.randn(5, 8, device=device)
    one = t(src, tgt)
    batched = t(src.unsqueeze(0), tgt.unsqueeze(0))
    np.testing.assert_allclose(_np(one.cpu()), _np(batched[0].cpu()), rtol=1e-5, atol=1e-6)


def test_causal_mask_is_causal():
    """With the causal mask, position i of the decoder's output does not depend on tgt[j > i]."""
    ember.manual_seed(1)
    t = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=2,
                       dim_feedforward=16, dropout=0.0).double().eval()
    src = ember.randn(6, 1, 8, dtype=ember.float64)
    tgt = ember.randn(5, 1, 8, dtype=ember.float64)
    mask = t.generate_square_subsequent_mask(5, dtype=ember.float64)
    a = t(src, tgt, tgt_mask=mask)
    tgt2 = tgt.clone()
    tgt2[3:] = ember.randn(2, 1, 8, dtype=ember.float64)
    b = t(src, tgt2, tgt_mask=mask)
    np.testing.assert_allclose(_np(a)[:3], _np(b)[:3], atol=1e-12)
    assert not np.allclose(_np(a)[3:], _np(b)[3:])
    # tgt_is_causal=True states the same mask; the result is the same.
    c = t(src, tgt, tgt_mask=mask, tgt_is_causal=True)
    np.testing.assert_allclose(_np(a), _np(c), atol=1e-12)
    from ember.nn.modules.transformer import _detect_is_causal_mask
    assert _detect_is_causal_mask(mask) is True
    assert _detect_is_causal_mask(ember.zeros(5, 5, dtype=ember.float64)) is False
    assert _detect_is_causal_mask(None) is False
    assert _detect_is_causal_mask(None, True) is True


def test_transformer_errors():
    t = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                       dim_feedforward=16)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        t(ember.randn(4, 2, 8), ember.randn(3, 3, 8))
    with pytest.raises(RuntimeError, match="feature number of src and tgt must be equal to d_model"):
        t(ember.randn(4, 2, 8), ember.randn(3, 2, 6))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerDecoderLayer(8, 2, activation="tanh")
    layer = nn.TransformerDecoderLayer(8, 2, 16)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        layer(ember.randn(3, 2, 8), ember.randn(4, 2, 8), tgt_is_causal=True)


def test_transformer_decoder_layer_callable_activation_and_norm_first():
    ember.manual_seed(2)
    layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, activation=nn.functional.gelu,
                                       norm_first=True)
    assert layer.activation is nn.functional.gelu
    dec = nn.TransformerDecoder(layer, 2)
    assert dec.norm is None and dec.num_layers == 2
    out = dec(ember.randn(3, 2, 8), ember.randn(4, 2, 8))
    assert tuple(out.shape) == (3, 2, 8)


_TORCH = r"""
import json, torch
torch.manual_seed(0)
res = {}
for name, kw in (("post", dict(norm_first=False, activation="relu", batch_first=False)),
                 ("pre", dict(norm_first=True, activation="gelu", batch_first=True))):
    t = torch.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                             dim_feedforward=16, dropout=0.0, **kw).double()
    bf = kw["batch_first"]
    src = torch.randn(*((2, 6, 8) if bf else (6, 2, 8)), dtype=torch.float64, requires_grad=True)
    tgt = torch.randn(*((2, 5, 8) if bf else (5, 2, 8)), dtype=torch.float64, requires_grad=True)
    tgt_mask = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    skpm = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
    tkpm = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    out = t(src, tgt, tgt_mask=tgt_mask, src_key_padding_mask=skpm,
            tgt_key_padding_mask=tkpm, memory_key_padding_mask=skpm)
    out.square().sum().backward()
    res[name] = dict(keys=list(t.state_dict()),
                     state={k: v.tolist() for k, v in t.state_dict().items()},
                     src=src.tolist(), tgt=tgt.tolist(), out=out.tolist(),
                     src_grad=src.grad.tolist(), tgt_grad=tgt.grad.tolist(),
                     w_grad=t.decoder.layers[0].multihead_attn.in_proj_weight.grad.tolist())
print(json.dumps(res))
"""


@pytest.mark.skipif(TORCH_PY is None, reason="PyTorch not installed")
def test_transformer_matches_torch_outputs_and_gradients():
    r = subprocess.run([TORCH_PY, "-c", _TORCH], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PYTHONPATH=""))
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    for name, kw in (("post", dict(norm_first=False, activation="relu", batch_first=False)),
                     ("pre", dict(norm_first=True, activation="gelu", batch_first=True))):
        d = res[name]
        t = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                           dim_feedforward=16, dropout=0.0, **kw).double()
        assert list(t.state_dict()) == d["keys"]
        t.load_state_dict({k: ember.tensor(np.array(v), dtype=ember.float64)
                           for k, v in d["state"].items()})
        src = ember.tensor(np.array(d["src"]), dtype=ember.float64).requires_grad_(True)
        tgt = ember.tensor(np.array(d["tgt"]), dtype=ember.float64).requires_grad_(True)
        skpm = ember.tensor([[False] * 6, [False] * 4 + [True] * 2])
        tkpm = ember.tensor([[False] * 5, [False] * 3 + [True] * 2])
        out = t(src, tgt, tgt_mask=t.generate_square_subsequent_mask(5, dtype=ember.float64),
                src_key_padding_mask=skpm, tgt_key_padding_mask=tkpm,
                memory_key_padding_mask=skpm)
        np.testing.assert_allclose(_np(out), np.array(d["out"]), rtol=1e-9, atol=1e-10)
        out.square().sum().backward()
        np.testing.assert_allclose(_np(src.grad), np.array(d["src_grad"]), rtol=1e-8, atol=1e-9)
        np.testing.assert_allclose(_np(tgt.grad), np.array(d["tgt_grad"]), rtol=1e-8, atol=1e-9)
        g = t.decoder.layers[0].multihead_attn.in_proj_weight.grad
        np.testing.assert_allclose(_np(g), np.array(d["w_grad"]), rtol=1e-8, atol=1e-9)
