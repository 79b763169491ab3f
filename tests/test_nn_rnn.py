"""Recurrent layers (C++ time loop, one autograd node per layer and direction),
nn.utils.rnn packing, and the RNN/LSTM/GRU modules. References: NumPy
(ember.testing.registry.nn_rnn) and, where installed, PyTorch in a subprocess."""
import json
import os
import subprocess

import numpy as np
import pytest
from torch_python import TORCH_PY

import ember
from ember import _C
from ember.testing.registry import nn_rnn as ref

MODES = ["lstm", "gru", "rnn_tanh", "rnn_relu"]


def _t(rng, shape, dtype=ember.float64, scale=0.5, device="cpu", grad=False):
    t = ember.tensor(rng.uniform(-scale, scale, size=shape), dtype=dtype, device=device)
    return t.requires_grad_(True) if grad else t


def _layer_args(rng, mode, bs, In=3, H=4, proj=0, bias=True, dtype=ember.float64, device="cpu",
                grad=False):
    G = ref.GATES[mode]
    Hout = proj or H
    B = bs[0]
    x = _t(rng, (sum(bs), In), dtype, 1.0, device, grad)
    h0 = _t(rng, (B, Hout), dtype, 0.5, device, grad)
    c0 = _t(rng, (B, H), dtype, 0.5, device, grad) if mode == "lstm" else None
    w_ih = _t(rng, (G * H, In), dtype, 0.5, device, grad)
    w_hh = _t(rng, (G * H, Hout), dtype, 0.5, device, grad)
    b_ih = _t(rng, (G * H,), dtype, 0.5, device, grad) if bias else None
    b_hh = _t(rng, (G * H,), dtype, 0.5, device, grad) if bias else None
    w_hr = _t(rng, (proj, H), dtype, 0.5, device, grad) if proj else None
    return x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr


def _np(t):
    return None if t is None else t.detach().cpu().numpy()


CASES = [  # (batch_sizes, reverse, proj, bias)
    ([3, 3, 3, 3], False, 0, True),
    ([3, 3, 3], True, 0, False),
    ([4, 3, 3, 1], False, 0, True),
    ([4, 3, 3, 1], True, 0, True),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bs,reverse,proj,bias", CASES)
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_layer_matches_numpy(mode, bs, reverse, proj, bias, dtype, device):
    rng = np.random.default_rng(0)
    args = _layer_args(rng, mode, bs, bias=bias, dtype=dtype, device=device)
    y, hn, cn = _C._rnn_layer(ref.MODES[mode], args[0], bs, *args[1:], reverse)
    ey, eh, ec = ref.layer(mode, _np(args[0]), bs, *[_np(a) for a in args[1:]], reverse=reverse)
    tol = 1e-5 if dtype == ember.float32 else 1e-12
    np.testing.assert_allclose(_np(y), ey, atol=tol, rtol=tol)
    np.testing.assert_allclose(_np(hn), eh, atol=tol, rtol=tol)
    if mode == "lstm":
        np.testing.assert_allclose(_np(cn), ec, atol=tol, rtol=tol)
    else:
        assert cn is None


@pytest.mark.parametrize("reverse", [False, True])
def test_lstm_projection_matches_numpy(reverse, device):
    rng = np.random.default_rng(1)
    bs = [3, 2, 2, 1]
    args = _layer_args(rng, "lstm", bs, H=5, proj=2, device=device)
    y, hn, cn = _C._rnn_layer(2, args[0], bs, *args[1:], reverse)
    ey, eh, ec = ref.layer("lstm", _np(args[0]), bs, *[_np(a) for a in args[1:]], reverse=reverse)
    for a, e in ((y, ey), (hn, eh), (cn, ec)):
        np.testing.assert_allclose(_np(a), e, atol=1e-12)
    assert tuple(y.shape) == (8, 2) and tuple(cn.shape) == (3, 5)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bs,reverse", [([2, 2, 2], False), ([3, 2, 1], True), ([3, 3, 1], False)])
def test_layer_gradcheck(mode, bs, reverse, device):
    rng = np.random.default_rng(2)
    args = _layer_args(rng, mode, bs, In=2, H=3, device=device, grad=True)
    inputs = tuple(a for a in args if a is not None)

    def fn(*ts):
        it = iter(ts)
        full = [next(it) if a is not None else None for a in args]
        out = _C._rnn_layer(ref.MODES[mode], full[0], bs, *full[1:], reverse)
        return tuple(o for o in out if o is not None)
    assert ember.autograd.gradcheck(fn, inputs)


def test_lstm_projection_gradcheck_and_gradgradcheck(device):
    rng = np.random.default_rng(3)
    bs = [2, 2, 1]
    args = _layer_args(rng, "lstm", bs, In=2, H=3, proj=2, device=device, grad=True)

    def fn(*ts):
        return _C._rnn_layer(2, ts[0], bs, *ts[1:], True)
    assert ember.autograd.gradcheck(fn, args)
    assert ember.autograd.gradgradcheck(fn, args)


@pytest.mark.parametrize("mode", MODES)
def test_layer_gradgradcheck(mode, device):
    rng = np.random.default_rng(4)
    bs = [2, 2, 1]
    args = _layer_args(rng, mode, bs, In=2, H=2, device=device, grad=True)
    inputs = tuple(a for a in args if a is not None)

    def fn(*ts):
        it = iter(ts)
        full = [next(it) if a is not None else None for a in args]
        out = _C._rnn_layer(ref.MODES[mode], full[0], bs, *full[1:], False)
        return tuple(o for o in out if o is not None)
    assert ember.autograd.gradgradcheck(fn, inputs)


@pytest.mark.parametrize("mode", MODES)
def test_fused_backward_equals_composite(mode, device):
    """float32 BPTT kernel against autograd through the step-by-step composite."""
    rng = np.random.default_rng(5)
    bs = [5, 4, 4, 2, 1]
    grads = []
    for fn in (_C._rnn_layer, _C._rnn_layer_composite):
        args = _layer_args(np.random.default_rng(6), mode, bs, In=6, H=7,
                           dtype=ember.float32, device=device, grad=True)
        out = fn(ref.MODES[mode], args[0], bs, *args[1:], True)
        w = [ember.tensor(rng.standard_normal(o.shape), dtype=ember.float32, device=device)
             for o in out if o is not None]
        loss = sum((o * g).sum() for o, g in zip([o for o in out if o is not None], w))
        loss.backward()
        grads.append([a.grad for a in args if a is not None])
        rng = np.random.default_rng(5)
    for a, b in zip(*grads):
        np.testing.assert_allclose(_np(a), _np(b), atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("threads", [1, 2])
def test_recurrent_gemm_tiles(mode, dtype, threads, device):
    """Sizes past one register tile of the packed recurrent GEMM (Note [Recurrent GEMM tile]):
    19 and 17 rows (two whole 8-row tiles and a clamped remainder, three 6-row tiles and one),
    hidden 37 (gate columns over several panels, the last one zero-padded) and, backward,
    a depth of G * 37 past one 128-row pass. Forward against NumPy; gradients against
    autograd through the step-by-step composite."""
    rng = np.random.default_rng(9)
    bs = [19, 19, 17]
    old = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        args = _layer_args(rng, mode, bs, In=5, H=37, dtype=dtype, device=device)
        y, hn, _ = _C._rnn_layer(ref.MODES[mode], args[0], bs, *args[1:], False)
        ey, eh, _ = ref.layer(mode, _np(args[0]), bs, *[_np(a) for a in args[1:]], reverse=False)
        tol = 1e-5 if dtype == ember.float32 else 1e-12
        np.testing.assert_allclose(_np(y), ey, atol=tol, rtol=tol)
        np.testing.assert_allclose(_np(hn), eh, atol=tol, rtol=tol)
        grads = []
        for fn in (_C._rnn_layer, _C._rnn_layer_composite):
            args = _layer_args(np.random.default_rng(10), mode, bs, In=5, H=37, dtype=dtype,
                               device=device, grad=True)
            out = [o for o in fn(ref.MODES[mode], args[0], bs, *args[1:], False) if o is not None]
            g = np.random.default_rng(11)
            sum((o * ember.tensor(g.standard_normal(o.shape), dtype=dtype, device=device)).sum()
                for o in out).backward()
            grads.append([a.grad for a in args if a is not None])
        gtol = dict(atol=2e-5, rtol=1e-4) if dtype == ember.float32 else dict(atol=1e-11, rtol=1e-10)
        for a, b in zip(*grads):
            np.testing.assert_allclose(_np(a), _np(b), **gtol)
    finally:
        ember.set_num_threads(old)


def test_one_node_per_layer_and_direction(device):
    rng = np.random.default_rng(7)
    names = {"lstm": "LstmBackward0", "gru": "GruBackward0", "rnn_tanh": "RnnTanhBackward0",
             "rnn_relu": "RnnReluBackward0"}
    for mode, name in names.items():
        args = _layer_args(rng, mode, [2, 2], device=device, grad=True)
        y, hn, cn = _C._rnn_layer(ref.MODES[mode], args[0], [2, 2], *args[1:], False)
        assert y.grad_fn.name() == name
        assert hn.grad_fn is y.grad_fn


def test_saved_output_modified_in_place_is_detected(device):
    rng = np.random.default_rng(8)
    args = _layer_args(rng, "rnn_tanh", [2, 2], device=device, grad=True)
    y, hn, _ = _C._rnn_layer(0, args[0], [2, 2], *args[1:], False)
    with ember.no_grad():
        y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        hn.sum().backward()


def _stack_args(rng, mode, T=4, B=3, In=3, H=4, L=2, bi=True, bias=True, proj=0):
    D = 2 if bi else 1
    ps = ref._params(rng, mode, In, H, L, D, bias, proj, "cpu", ember.float64)
    x = _t(rng, (T, B, In), scale=1.0)
    h = _t(rng, (L * D, B, proj or H))
    c = _t(rng, (L * D, B, H)) if mode == "lstm" else None
    return x, h, c, ps


@pytest.mark.parametrize("mode", MODES)
def test_stack_matches_numpy_and_dropout(mode):
    rng = np.random.default_rng(9)
    x, h, c, ps = _stack_args(rng, mode)
    T, B, _ = x.shape
    data = x.reshape(T * B, -1)
    out, hn, cn = _C._rnn_forward(ref.MODES[mode], data, [B] * T, h, c, ps, True, 2, 0.5, False,
                                  True)
    eo, eh, ec = ref.stack(mode, _np(data), [B] * T, _np(h), _np(c), [_np(p) for p in ps], True,
                           2, True)
    np.testing.assert_allclose(_np(out), eo, atol=1e-12)
    np.testing.assert_allclose(_np(hn), eh, atol=1e-12)
    # dropout=1 in training zeroes the second layer's input: it sees x = 0
    out1, hn1, _ = _C._rnn_forward(ref.MODES[mode], data, [B] * T, h, c, ps, True, 2, 1.0, True,
                                   True)
    zeros = np.zeros((T * B, eo.shape[1]))
    l1 = ref.stack(mode, zeros, [B] * T, _np(h)[2:], None if c is None else _np(c)[2:],
                   [_np(p) for p in ps[len(ps) // 2:]], True, 1, True)
    np.testing.assert_allclose(_np(out1), l1[0], atol=1e-12)
    # dropout=0.5 in training: random, and differs from eval
    ember.manual_seed(0)
    a = _C._rnn_forward(ref.MODES[mode], data, [B] * T, h, c, ps, True, 2, 0.5, True, True)[0]
    ember.manual_seed(0)
    b = _C._rnn_forward(ref.MODES[mode], data, [B] * T, h, c, ps, True, 2, 0.5, True, True)[0]
    np.testing.assert_array_equal(_np(a), _np(b))
    assert not np.allclose(_np(a), eo)


def test_errors():
    rng = np.random.default_rng(10)
    args = _layer_args(rng, "lstm", [2, 2])
    with pytest.raises(RuntimeError, match="batch_sizes sum to 4 but the input has 5 rows"):
        _C._rnn_layer(2, ember.zeros((5, 3), dtype=ember.float64), [2, 2], *args[1:], False)
    with pytest.raises(RuntimeError, match="non-increasing"):
        _C._rnn_layer(2, args[0], [1, 2, 1], *args[1:], False)
    with pytest.raises(RuntimeError, match="Expected cell size"):
        _C._rnn_layer(2, args[0], [2, 2], args[1], None, *args[3:], False)
    with pytest.raises(RuntimeError, match="weight_ih of shape"):
        _C._rnn_layer(2, ember.zeros((4, 5), dtype=ember.float64), [2, 2], *args[1:], False)
    with pytest.raises(RuntimeError, match="float32 or float64"):
        _C._rnn_layer(2, args[0].to(ember.int64), [2, 2], *args[1:], False)


# ---- nn.utils.rnn ------------------------------------------------------------------------

def test_pack_pad_roundtrip_unsorted():
    from ember.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
    rng = np.random.default_rng(11)
    x = _t(rng, (3, 5, 2), grad=True)  # batch_first
    lengths = [2, 5, 3]
    p = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    assert p.batch_sizes.tolist() == [3, 3, 2, 1, 1]
    assert p.sorted_indices.tolist() == [1, 2, 0]
    assert p.unsorted_indices.tolist() == [2, 0, 1]
    padded, lens = pad_packed_sequence(p, batch_first=True, padding_value=-1.0)
    assert lens.tolist() == lengths and lens.dtype == ember.int64
    e = _np(x).copy()
    for b, n in enumerate(lengths):
        e[b, n:] = -1.0
    np.testing.assert_array_equal(_np(padded), e)
    padded.sum().backward()
    g = np.zeros((3, 5, 2))
    for b, n in enumerate(lengths):
        g[b, :n] = 1
    np.testing.assert_array_equal(_np(x.grad), g)


def test_pack_sequence_unpack_sequence():
    from ember.nn.utils.rnn import pack_sequence, pad_sequence, unpack_sequence, unpad_sequence
    rng = np.random.default_rng(12)
    seqs = [_t(rng, (n, 3)) for n in (2, 4, 1)]
    p = pack_sequence(seqs, enforce_sorted=False)
    back = unpack_sequence(p)
    for a, b in zip(seqs, back):
        np.testing.assert_array_equal(_np(a), _np(b))
    padded = pad_sequence(seqs)
    assert tuple(padded.shape) == (4, 3, 3)
    for a, b in zip(seqs, unpad_sequence(padded, ember.tensor([2, 4, 1]))):
        np.testing.assert_array_equal(_np(a), _np(b))
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        pack_sequence(seqs)


def test_pack_padded_gradcheck():
    from ember.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
    rng = np.random.default_rng(13)
    x = _t(rng, (4, 3, 2), grad=True)

    def fn(x):
        p = pack_padded_sequence(x, [3, 4, 1], enforce_sorted=False)
        return p.data, pad_packed_sequence(p, total_length=5)[0]
    assert ember.autograd.gradcheck(fn, (x,))
    assert ember.autograd.gradgradcheck(fn, (x,))


def test_packed_stack_matches_per_sequence_runs():
    """A packed batch gives each sequence what running it alone gives."""
    from ember.nn.utils.rnn import pack_sequence
    rng = np.random.default_rng(14)
    seqs = [_t(rng, (n, 3), scale=1.0) for n in (4, 2, 3)]
    ps = ref._params(rng, "gru", 3, 4, 2, 2, True, 0, "cpu", ember.float64)
    p = pack_sequence(seqs, enforce_sorted=False)
    h = ember.zeros((4, 3, 4), dtype=ember.float64)
    h_sorted = h.index_select(1, p.sorted_indices)
    out, hn, _ = _C._rnn_forward(3, p.data, p.batch_sizes.tolist(), h_sorted, None, ps, True, 2,
                                 0.0, False, True)
    hn = hn.index_select(1, p.unsorted_indices)
    from ember.nn.utils.rnn import PackedSequence, unpack_sequence
    outs = unpack_sequence(PackedSequence(out, p.batch_sizes, p.sorted_indices,
                                          p.unsorted_indices))
    for b, s in enumerate(seqs):
        n = s.shape[0]
        eo, eh, _ = ref.stack("gru", _np(s), [1] * n, np.zeros((4, 1, 4)), None,
                              [_np(q) for q in ps], True, 2, True)
        np.testing.assert_allclose(_np(outs[b]), eo, atol=1e-12)
        np.testing.assert_allclose(_np(hn[:, b]), eh[:, 0], atol=1e-12)


# ---- against PyTorch ----------------------------------------------------------------------

_TORCH_SCRIPT = r"""
import json, sys, numpy as np, torch
torch.manual_seed(0)
out = {}
for mode, cls in (("lstm", torch.nn.LSTM), ("gru", torch.nn.GRU), ("rnn_tanh", torch.nn.RNN)):
    kw = dict(proj_size=2) if mode == "lstm" else {}
    m = cls(3, 4, num_layers=2, bidirectional=True, batch_first=True, **kw).double()
    x = torch.randn(2, 5, 3, dtype=torch.float64, requires_grad=True)
    y, h = m(x)
    hs = h if isinstance(h, tuple) else (h,)
    (y.sum() + sum(t.square().sum() for t in hs)).backward()
    out[mode] = dict(names=[n for n, _ in m.named_parameters()],
                     params=[p.detach().tolist() for p in m.parameters()],
                     grads=[p.grad.tolist() for p in m.parameters()],
                     x=x.detach().tolist(), y=y.detach().tolist(), xg=x.grad.tolist(),
                     h=[t.detach().tolist() for t in hs])
print(json.dumps(out))
"""


@pytest.mark.skipif(TORCH_PY is None, reason="PyTorch not installed")
def test_against_torch_modules_functional_form():
    r = subprocess.run([TORCH_PY, "-c", _TORCH_SCRIPT], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, PYTHONPATH=""))
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    for mode, d in res.items():
        ps = [ember.tensor(np.array(p), dtype=ember.float64).requires_grad_(True)
              for p in d["params"]]
        x = ember.tensor(np.array(d["x"]), dtype=ember.float64).requires_grad_(True)
        Hout = 2 if mode == "lstm" else 4
        h = ember.zeros((4, 2, Hout), dtype=ember.float64)
        hx = [h, ember.zeros((4, 2, 4), dtype=ember.float64)] if mode == "lstm" else h
        res_e = getattr(ember, mode)(x, hx, ps, True, 2, 0.0, False, True, True)
        y, hs = res_e[0], res_e[1:]
        np.testing.assert_allclose(_np(y), np.array(d["y"]), atol=1e-10)
        for a, e in zip(hs, d["h"]):
            np.testing.assert_allclose(_np(a), np.array(e), atol=1e-10)
        (y.sum() + sum(t.square().sum() for t in hs)).backward()
        np.testing.assert_allclose(_np(x.grad), np.array(d["xg"]), atol=1e-10)
        for p, g in zip(ps, d["grads"]):
            np.testing.assert_allclose(_np(p.grad), np.array(g), atol=1e-10)


# ---- modules ------------------------------------------------------------------------------

def test_module_parameters_names_shapes_init():
    m = ember.nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)
    names = [n for n, _ in m.named_parameters()]
    expected = []
    for layer_i in range(2):
        for sfx in ("", "_reverse"):
            expected += [f"{w}_l{layer_i}{sfx}" for w in
                         ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")]
    assert names == expected
    shapes = {n: tuple(p.shape) for n, p in m.named_parameters()}
    assert shapes["weight_ih_l0"] == (16, 3) and shapes["weight_hh_l0"] == (16, 2)
    assert shapes["weight_ih_l1_reverse"] == (16, 4) and shapes["weight_hr_l1"] == (2, 4)
    for p in m.parameters():
        a = _np(p)
        assert np.all(np.abs(a) <= 0.5) and a.std() > 0.1
    g = ember.nn.GRU(5, 6, bias=False)
    assert [n for n, _ in g.named_parameters()] == ["weight_ih_l0", "weight_hh_l0"]
    assert tuple(g.weight_ih_l0.shape) == (18, 5)
    r = ember.nn.RNN(2, 3, 1, "relu")
    assert r.mode == "RNN_RELU" and "RNN(2, 3)" == repr(r)
    assert repr(m) == "LSTM(3, 4, proj_size=2, num_layers=2, bidirectional=True)"


@pytest.mark.parametrize("cls,mode", [("LSTM", "lstm"), ("GRU", "gru"), ("RNN", "rnn_tanh")])
def test_module_forward_forms(cls, mode):
    ember.manual_seed(0)
    m = getattr(ember.nn, cls)(3, 4, num_layers=2, batch_first=True, bidirectional=True)
    m = m.double()
    rng = np.random.default_rng(20)
    x = _t(rng, (2, 5, 3), scale=1.0)
    out, hid = m(x)
    ps = [p for p in m.parameters()]
    hx = [ember.zeros((4, 2, 4), dtype=ember.float64)] * 2 if mode == "lstm" else \
        ember.zeros((4, 2, 4), dtype=ember.float64)
    ref_out = getattr(ember, mode)(x, hx, ps, True, 2, 0.0, False, True, True)
    np.testing.assert_allclose(_np(out), _np(ref_out[0]), atol=1e-12)
    assert tuple(out.shape) == (2, 5, 8)
    # unbatched input gives the batched result's row
    out1, hid1 = m(x[1])
    np.testing.assert_allclose(_np(out1), _np(out)[1], atol=1e-12)
    h_full = hid[0] if mode == "lstm" else hid
    h_one = hid1[0] if mode == "lstm" else hid1
    np.testing.assert_allclose(_np(h_one), _np(h_full)[:, 1], atol=1e-12)
    # a PackedSequence of unsorted lengths: each sequence as if run alone
    from ember.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
    lengths = [3, 5]
    p = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    po, ph = m(p)
    padded, lens = pad_packed_sequence(po, batch_first=True)
    assert lens.tolist() == lengths
    for b, n in enumerate(lengths):
        ob, hb = m(x[b, :n])
        np.testing.assert_allclose(_np(padded[b, :n]), _np(ob), atol=1e-12)
        hp = ph[0] if mode == "lstm" else ph
        hbb = hb[0] if mode == "lstm" else hb
        np.testing.assert_allclose(_np(hp[:, b]), _np(hbb), atol=1e-12)
    # gradients reach every parameter
    out.sum().backward()
    assert all(p.grad is not None for p in m.parameters())


def test_module_errors_and_warnings():
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        ember.nn.LSTM(3, 4, dropout=2)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        ember.nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        ember.nn.modules.rnn.RNNBase("GRU", 3, 4, proj_size=2)
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        ember.nn.GRU(3, 0)
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        ember.nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        ember.nn.GRU(3, 4, dropout=0.5)
    m = ember.nn.LSTM(3, 4)
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. "
                                           "Expected 3, got 5"):
        m(ember.zeros((2, 1, 5)))
    with pytest.raises(ValueError, match="Expected input to be 2D or 3D, got 4D instead"):
        m(ember.zeros((2, 1, 1, 3)))
    with pytest.raises(RuntimeError, match="Expected hidden\\[0\\] size \\(1, 1, 4\\), "
                                           "got \\[1, 2, 4\\]"):
        m(ember.zeros((2, 1, 3)), (ember.zeros((1, 2, 4)), ember.zeros((1, 1, 4))))
    with pytest.raises(RuntimeError, match="For batched 3-D input, hx and cx should also be 3-D"):
        m(ember.zeros((2, 1, 3)), (ember.zeros((1, 4)), ember.zeros((1, 4))))
    g = ember.nn.GRU(3, 4)
    with pytest.raises(RuntimeError, match="Expected hidden size \\(1, 1, 4\\), got \\[2, 1, 4\\]"):
        g(ember.zeros((2, 1, 3)), ember.zeros((2, 1, 4)))
    with pytest.raises(ValueError, match="input must have the type"):
        g(ember.zeros((2, 1, 3), dtype=ember.float64))


@pytest.mark.parametrize("cls,mode", [("LSTMCell", "lstm"), ("GRUCell", "gru"),
                                      ("RNNCell", "rnn_tanh")])
def test_cells(cls, mode):
    m = getattr(ember.nn, cls)(3, 4).double()
    assert [n for n, _ in m.named_parameters()] == ["weight_ih", "weight_hh", "bias_ih",
                                                     "bias_hh"]
    rng = np.random.default_rng(21)
    x = _t(rng, (2, 3), scale=1.0)
    h = _t(rng, (2, 4))
    hx = (h, _t(rng, (2, 4))) if mode == "lstm" else h
    out = m(x, hx)
    w = [_np(p) for p in m.parameters()]
    hh = [_np(t) for t in hx] if mode == "lstm" else [_np(hx), None]
    _, eh, ec = ref.layer(mode, _np(x), [2], hh[0], hh[1], *w)
    got_h = out[0] if mode == "lstm" else out
    np.testing.assert_allclose(_np(got_h), eh, atol=1e-12)
    if mode == "lstm":
        np.testing.assert_allclose(_np(out[1]), ec, atol=1e-12)
    one = m(x[0], tuple(t[0] for t in hx) if mode == "lstm" else hx[0])
    one_h = one[0] if mode == "lstm" else one
    np.testing.assert_allclose(_np(one_h), eh[0], atol=1e-12)
    zero = m(x)  # hx defaults to zeros
    assert tuple((zero[0] if mode == "lstm" else zero).shape) == (2, 4)
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 5 expected 3"):
        m(ember.zeros((2, 5), dtype=ember.float64))
    with pytest.raises(ValueError, match="Expected input to be 1D or 2D, got 3D instead"):
        m(ember.zeros((1, 2, 3), dtype=ember.float64))


_TORCH_MODULE_SCRIPT = r"""
import json, numpy as np, torch
torch.manual_seed(0)
out = {}
for name in ("LSTM", "GRU", "RNN"):
    kw = dict(proj_size=3) if name == "LSTM" else dict(nonlinearity="relu") if name == "RNN" else {}
    m = getattr(torch.nn, name)(4, 5, num_layers=2, bidirectional=True, **kw).double()
    x = torch.randn(6, 3, 4, dtype=torch.float64)
    lengths = [6, 2, 4]
    p = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, enforce_sorted=False)
    y, h = m(p)
    y, _ = torch.nn.utils.rnn.pad_packed_sequence(y)
    hs = h if isinstance(h, tuple) else (h,)
    out[name] = dict(state={k: v.tolist() for k, v in m.state_dict().items()}, x=x.tolist(),
                     lengths=lengths, y=y.detach().tolist(), h=[t.detach().tolist() for t in hs])
print(json.dumps(out))
"""


@pytest.mark.skipif(TORCH_PY is None, reason="PyTorch not installed")
def test_modules_against_torch_packed_state_dict():
    from ember.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
    r = subprocess.run([TORCH_PY, "-c", _TORCH_MODULE_SCRIPT], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, PYTHONPATH=""))
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    for name, d in res.items():
        kw = dict(proj_size=3) if name == "LSTM" else \
            dict(nonlinearity="relu") if name == "RNN" else {}
        m = getattr(ember.nn, name)(4, 5, num_layers=2, bidirectional=True, **kw).double()
        m.load_state_dict({k: ember.tensor(np.array(v), dtype=ember.float64)
                           for k, v in d["state"].items()})
        x = ember.tensor(np.array(d["x"]), dtype=ember.float64)
        y, h = m(pack_padded_sequence(x, d["lengths"], enforce_sorted=False))
        y, _ = pad_packed_sequence(y)
        np.testing.assert_allclose(_np(y), np.array(d["y"]), atol=1e-10, err_msg=name)
        for a, e in zip(h if isinstance(h, tuple) else (h,), d["h"]):
            np.testing.assert_allclose(_np(a), np.array(e), atol=1e-10, err_msg=name)


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16])
@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN"])
def test_16_bit_modules_compute_in_float(cls, dtype):
    # Note [16-bit recurrent and attention math]: the float kernels on float copies, the
    # results (and the gradients of 16-bit parameters) in the module's dtype.
    ember.manual_seed(0)
    m32 = getattr(ember.nn, cls)(6, 5, num_layers=2, bidirectional=True)
    m16 = getattr(ember.nn, cls)(6, 5, num_layers=2, bidirectional=True).to(dtype)
    m16.load_state_dict({k: v.to(dtype) for k, v in m32.state_dict().items()})
    x = ember.randn(7, 3, 6).to(dtype)
    out16, _ = m16(x.requires_grad_())
    assert out16.dtype == dtype
    # the reference: the same 16-bit weights and input, computed in float32
    m_ref = getattr(ember.nn, cls)(6, 5, num_layers=2, bidirectional=True)
    m_ref.load_state_dict({k: v.float() for k, v in m16.state_dict().items()})
    xr = x.detach().float().requires_grad_()
    out_ref, _ = m_ref(xr)
    tol = 2e-2 if dtype == ember.bfloat16 else 2e-3
    np.testing.assert_allclose(out16.float().detach().numpy(), out_ref.detach().to(dtype).float().numpy(),
                               rtol=tol, atol=tol)
    out16.float().sum().backward()
    out_ref.sum().backward()
    assert x.grad.dtype == dtype and m16.weight_hh_l1.grad.dtype == dtype
    np.testing.assert_allclose(x.grad.float().numpy(), xr.grad.numpy(), rtol=5 * tol, atol=5 * tol)


def test_16_bit_dtype_mismatch_is_an_error():
    m = ember.nn.LSTM(3, 4).half()
    with pytest.raises((RuntimeError, ValueError), match="type|dtype"):
        m(ember.randn(2, 1, 3))


def test_16_bit_hidden_dtype_mismatch_is_an_error():
    m = ember.nn.LSTM(3, 4).half()
    x = ember.randn(2, 1, 3).half()
    with pytest.raises(RuntimeError, match="not the same dtype.*Half.*Float"):
        m(x, (ember.zeros(1, 1, 4), ember.zeros(1, 1, 4).half()))
    with pytest.raises(RuntimeError, match="not the same dtype"):
        ember.nn.GRU(3, 4).to(ember.bfloat16)(x.to(ember.bfloat16), ember.zeros(1, 1, 4))
