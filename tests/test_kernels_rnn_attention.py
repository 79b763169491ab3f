"""The CUDA kernels of the recurrent cells (backends/cuda/rnn.cu: rnn_step_fwd/bwd,
rnn_accumulate) and of the fused attention (backends/cuda/attention.cu: sdpa_fwd/bwd)
against the CPU kernels, through the public modules and functions: nn.RNN (tanh, relu),
nn.LSTM (with projections), nn.GRU and the cells, multi-layer, bidirectional, batch_first,
packed sequences, with initial states, outputs and gradients of inputs, states and weights;
F.scaled_dot_product_attention without mask, causal, with bool / float masks broadcast over
batch and heads, custom scales, grouped-query heads, dropout (the same seed must draw the
same hashed mask on both devices), odd lengths and head dims (several tiles, head dims
past one staged chunk, accumulators too big for shared memory), non-contiguous inputs,
outputs and the gradients of q, k and v; nn.MultiheadAttention, which runs on the fused
kernel without weights.

How these tests run on each device: device_compare.py.
"""
import copy

import numpy as np
import pytest
from device_compare import assert_same, check, cmp_dev, dt, make, seeded, to_dev

import ember
import ember.nn.functional as F
from ember import nn

pytestmark = pytest.mark.usefixtures("compare_device")

# GEMMs (cuBLAS against the CPU BLAS) and exp/tanh differ in the last bits; errors grow along
# the sequence and through backward.
TOL = {"float16": (2e-2, 2e-2), "bfloat16": (8e-2, 8e-2), "float32": (2e-4, 2e-5),
       "float64": (1e-9, 1e-11)}


def _leaf(t):
    return t.detach().clone().requires_grad_(True)


def _pair(t):
    """The CPU leaf and its copy on the device (also a leaf)."""
    a = _leaf(t)
    return a, _leaf(to_dev(a.detach()))


def _grads_of(module):
    return [p.grad for p in module.parameters()]


# ---- recurrent layers -----------------------------------------------------------------------

RNN_DTYPES = ["float32", "float64"]


def _run_module(mod_cpu, dtype_name, x, states, weight_seed):
    """Forward and backward of mod_cpu and of its copy on the device on x (and the state tuple), then
    compare outputs and every gradient."""
    tol = TOL[dtype_name]
    for prm in mod_cpu.parameters():
        prm.grad = None
    mod_dev = copy.deepcopy(mod_cpu).to(cmp_dev())
    xc, xd = _pair(x)
    sc = [_pair(s) for s in states]
    st_c = [a for a, _ in sc]
    st_d = [b for _, b in sc]

    def call(mod, inp, st):
        if not st:
            return mod(inp)
        return mod(inp, st[0] if len(st) == 1 else tuple(st))

    out_c = call(mod_cpu, xc, st_c)
    out_d = call(mod_dev, xd, st_d)
    flat_c = _flatten(out_c)
    flat_d = _flatten(out_d)
    assert len(flat_c) == len(flat_d)
    for i, (a, b) in enumerate(zip(flat_c, flat_d)):
        assert_same(a, b, tol, what=f"output {i}")
    rng = seeded("weights", weight_seed)
    loss_c, loss_d = 0, 0
    for a, b in zip(flat_c, flat_d):
        w = make(tuple(a.shape), dtype_name, rng)
        loss_c = loss_c + (a * w).sum()
        loss_d = loss_d + (b * to_dev(w)).sum()
    loss_c.backward()
    loss_d.backward()
    assert_same(xc.grad, xd.grad, tol, what="input grad")
    for i, ((a, b)) in enumerate(sc):
        assert_same(a.grad, b.grad, tol, what=f"state {i} grad")
    for (name, pc), pd in zip(mod_cpu.named_parameters(), mod_dev.parameters()):
        assert_same(pc.grad, pd.grad, tol, what=f"{name} grad")


def _flatten(out):
    if isinstance(out, ember.Tensor):
        return [out]
    res = []
    for o in out:
        res.extend(_flatten(o))
    return res


@pytest.mark.parametrize("dtype_name", RNN_DTYPES)
@pytest.mark.parametrize("kind", ["RNN_TANH", "RNN_RELU", "LSTM", "GRU"])
@pytest.mark.parametrize("layers,bidir,batch_first", [(1, False, False), (2, True, False),
                                                      (2, False, True), (3, True, True)])
def test_rnn_layers_match_cpu(kind, dtype_name, layers, bidir, batch_first):
    ember.manual_seed(3)
    d = dt(dtype_name)
    kw = {"num_layers": layers, "bidirectional": bidir, "batch_first": batch_first, "dtype": d}
    n_in, H, T, B = 5, 7, 6, 4
    if kind.startswith("RNN"):
        mod = nn.RNN(n_in, H, nonlinearity="tanh" if kind == "RNN_TANH" else "relu", **kw)
    else:
        mod = getattr(nn, kind)(n_in, H, **kw)
    rng = seeded(kind, dtype_name, layers, bidir, batch_first)
    x = make((B, T, n_in) if batch_first else (T, B, n_in), dtype_name, rng, lo=-1, hi=1)
    D = 2 if bidir else 1
    h0 = make((layers * D, B, H), dtype_name, rng, lo=-1, hi=1)
    states = [h0]
    if kind == "LSTM":
        states = [(h0, make((layers * D, B, H), dtype_name, rng, lo=-1, hi=1))]
    _run_module(mod, dtype_name, x, [], (kind, "nostate"))
    if kind == "LSTM":
        _run_module(mod, dtype_name, x, list(states[0]), (kind, "state"))
    else:
        _run_module(mod, dtype_name, x, states, (kind, "state"))


@pytest.mark.parametrize("dtype_name", RNN_DTYPES)
def test_lstm_projection_and_no_bias(dtype_name):
    ember.manual_seed(4)
    d = dt(dtype_name)
    rng = seeded("lstm-proj", dtype_name)
    mod = nn.LSTM(6, 9, num_layers=2, proj_size=4, bidirectional=True, dtype=d)
    x = make((5, 3, 6), dtype_name, rng, lo=-1, hi=1)
    _run_module(mod, dtype_name, x, [], "proj")
    mod = nn.GRU(6, 9, bias=False, dtype=d)
    _run_module(mod, dtype_name, x, [], "gru-nobias")


@pytest.mark.parametrize("dtype_name", RNN_DTYPES)
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_rnn_large_and_unbatched(kind, dtype_name):
    # enough (row, unit) pairs for many blocks and grid-stride iterations
    ember.manual_seed(5)
    d = dt(dtype_name)
    rng = seeded("large", kind, dtype_name)
    mod = getattr(nn, kind)(16, 300, dtype=d)
    x = make((3, 70, 16), dtype_name, rng, lo=-1, hi=1)
    _run_module(mod, dtype_name, x, [], (kind, "large"))
    x1 = make((4, 16), dtype_name, rng, lo=-1, hi=1)  # unbatched
    _run_module(mod, dtype_name, x1, [], (kind, "unbatched"))


@pytest.mark.parametrize("dtype_name", RNN_DTYPES)
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_rnn_packed_sequences(kind, dtype_name):
    # packed input: later steps have fewer rows (rows = batch_sizes[t] < B)
    ember.manual_seed(6)
    d = dt(dtype_name)
    rng = seeded("packed", kind, dtype_name)
    mod_c = getattr(nn, kind)(3, 5, num_layers=2, bidirectional=True, dtype=d)
    mod_d = copy.deepcopy(mod_c).to(cmp_dev())
    x = make((6, 4, 3), dtype_name, rng, lo=-1, hi=1)
    lengths = [6, 4, 4, 1]
    xc, xd = _pair(x)
    pc = nn.utils.rnn.pack_padded_sequence(xc, lengths)
    pd = nn.utils.rnn.pack_padded_sequence(xd, lengths)
    oc, hc = mod_c(pc)
    od, hd = mod_d(pd)
    tol = TOL[dtype_name]
    assert_same(oc.data, od.data, tol, what="packed output")
    assert_same(_flatten(hc), _flatten(hd), tol, what="final states")
    w = make(tuple(oc.data.shape), dtype_name, rng)
    ((oc.data * w).sum() + sum(t.sum() for t in _flatten(hc))).backward()
    ((od.data * to_dev(w)).sum() + sum(t.sum() for t in _flatten(hd))).backward()
    assert_same(xc.grad, xd.grad, tol, what="input grad")
    assert_same(_grads_of(mod_c), _grads_of(mod_d), tol, what="weight grads")


@pytest.mark.parametrize("dtype_name", RNN_DTYPES)
@pytest.mark.parametrize("cell", ["RNNCell-tanh", "RNNCell-relu", "LSTMCell", "GRUCell"])
def test_rnn_cells_match_cpu(cell, dtype_name):
    ember.manual_seed(7)
    d = dt(dtype_name)
    rng = seeded(cell, dtype_name)
    name, _, act = cell.partition("-")
    mod = getattr(nn, name)(6, 8, dtype=d, **({"nonlinearity": act} if act else {}))
    x = make((5, 6), dtype_name, rng, lo=-1, hi=1)
    h = make((5, 8), dtype_name, rng, lo=-1, hi=1)
    _run_module(mod, dtype_name, x, [], (cell, "nostate"))
    if name == "LSTMCell":
        c = make((5, 8), dtype_name, rng, lo=-1, hi=1)
        _run_module(mod, dtype_name, x, [h, c], (cell, "state"))
    else:
        _run_module(mod, dtype_name, x, [h], (cell, "state"))
    _run_module(mod, dtype_name, make((6,), dtype_name, rng, lo=-1, hi=1), [], (cell, "1-d"))


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_rnn_16bit(dtype_name):
    # 16-bit layers run the float kernels on float copies (ops/nn_rnn.cpp)
    ember.manual_seed(8)
    rng = seeded("16bit", dtype_name)
    for kind in ["RNN", "LSTM", "GRU"]:
        mod = getattr(nn, kind)(4, 6, num_layers=2, dtype=dt(dtype_name))
        _run_module(mod, dtype_name, make((3, 2, 4), dtype_name, rng, lo=-1, hi=1), [], kind)


def test_rnn_errors_match_cpu():
    rng = seeded("rnn-errors")
    mod = nn.LSTM(4, 6)
    x = make((3, 2, 4), "float32", rng)
    bad_h = (make((1, 3, 6), "float32", rng), make((1, 2, 6), "float32", rng))
    mod_d = copy.deepcopy(mod).to(cmp_dev())
    with pytest.raises(RuntimeError):
        mod(x, bad_h)
    with pytest.raises(RuntimeError):
        mod_d(to_dev(x), to_dev(bad_h))
    # a wrong input size
    bad_x = make((3, 2, 5), "float32", rng)
    with pytest.raises(RuntimeError):
        mod(bad_x)
    with pytest.raises(RuntimeError):
        mod_d(to_dev(bad_x))


# ---- scaled_dot_product_attention -----------------------------------------------------------

SDPA_DTYPES = ["float32", "float64"]


def _sdpa_compare(q, k, v, dtype_name, tol=None, grads=True, seed=None, **kw):
    """F.scaled_dot_product_attention on the CPU leaves and on their copies on the device: the output
    and the gradients of q, k and v (and of a float mask when it requires grad)."""
    tol = tol or TOL[dtype_name]
    qc, qd = _pair(q)
    kc, kd = _pair(k)
    vc, vd = _pair(v)
    kwd = {n: (to_dev(t) if isinstance(t, ember.Tensor) else t) for n, t in kw.items()}
    if seed is not None:
        ember.manual_seed(seed)
    oc = F.scaled_dot_product_attention(qc, kc, vc, **kw)
    if seed is not None:
        ember.manual_seed(seed)
    od = F.scaled_dot_product_attention(qd, kd, vd, **kwd)
    assert_same(oc, od, tol, what="output")
    if not grads:
        return oc, od
    g = make(tuple(oc.shape), dtype_name, seeded("dout", tuple(oc.shape)))
    oc.backward(g)
    od.backward(to_dev(g))
    assert_same(qc.grad, qd.grad, tol, what="dq")
    assert_same(kc.grad, kd.grad, tol, what="dk")
    assert_same(vc.grad, vd.grad, tol, what="dv")
    return oc, od


def _qkv(B, Hq, Hk, L, S, E, Ev, dtype_name, rng, lo=-1.0, hi=1.0):
    return (make((B, Hq, L, E), dtype_name, rng, lo=lo, hi=hi),
            make((B, Hk, S, E), dtype_name, rng, lo=lo, hi=hi),
            make((B, Hk, S, Ev), dtype_name, rng, lo=lo, hi=hi))


@pytest.mark.parametrize("dtype_name", SDPA_DTYPES)
@pytest.mark.parametrize("L,S", [(1, 1), (7, 7), (65, 33), (130, 65), (7, 130), (33, 1)])
@pytest.mark.parametrize("E", [1, 16, 64, 80, 128])
def test_sdpa_plain_and_causal(dtype_name, L, S, E):
    rng = seeded("sdpa", dtype_name, L, S, E)
    q, k, v = _qkv(2, 2, 2, L, S, E, E, dtype_name, rng)
    _sdpa_compare(q, k, v, dtype_name)
    _sdpa_compare(q, k, v, dtype_name, is_causal=True)


@pytest.mark.parametrize("dtype_name", SDPA_DTYPES)
@pytest.mark.parametrize("E,Ev", [(256, 256), (300, 40), (16, 80), (3, 257)])
def test_sdpa_head_dims(dtype_name, E, Ev):
    # head dims past one staged chunk of 32, and E != Ev
    rng = seeded("sdpa-dims", dtype_name, E, Ev)
    q, k, v = _qkv(1, 2, 2, 37, 45, E, Ev, dtype_name, rng, lo=-0.3, hi=0.3)
    _sdpa_compare(q, k, v, dtype_name)
    _sdpa_compare(q, k, v, dtype_name, is_causal=True, scale=0.05)


def test_sdpa_accumulators_in_global_memory():
    # float64 and head dims of 1000: the forward, dQ and dK/dV accumulators do not fit in a
    # block's shared memory and live in the outputs
    rng = seeded("sdpa-global")
    q, k, v = _qkv(1, 1, 1, 40, 33, 1000, 1000, "float64", rng, lo=-0.1, hi=0.1)
    _sdpa_compare(q, k, v, "float64")
    _sdpa_compare(q, k, v, "float64", is_causal=True)


@pytest.mark.parametrize("dtype_name", SDPA_DTYPES)
@pytest.mark.parametrize("mask_shape", [(7, 9), (1, 1, 7, 9), (2, 1, 7, 9), (1, 3, 1, 9),
                                        (2, 3, 7, 9)])
def test_sdpa_bool_and_float_masks(dtype_name, mask_shape):
    rng = seeded("sdpa-mask", dtype_name, mask_shape)
    q, k, v = _qkv(2, 3, 3, 7, 9, 16, 12, dtype_name, rng)
    bm = ember.from_numpy(rng.uniform(size=mask_shape) > 0.3)
    _sdpa_compare(q, k, v, dtype_name, attn_mask=bm)
    fm = make(mask_shape, dtype_name, rng, lo=-2, hi=2)
    _sdpa_compare(q, k, v, dtype_name, attn_mask=fm)
    # -inf entries in a float mask, and a float mask of another float dtype
    fm2 = fm.masked_fill(~bm, float("-inf"))
    _sdpa_compare(q, k, v, dtype_name, attn_mask=fm2, scale=0.3)
    other = "float64" if dtype_name == "float32" else "float32"
    _sdpa_compare(q, k, v, dtype_name, attn_mask=fm.to(dt(other)))


@pytest.mark.parametrize("dtype_name", SDPA_DTYPES)
def test_sdpa_fully_masked_rows(dtype_name):
    # rows with no key: output 0, lse -inf, zero gradients (as the CPU)
    rng = seeded("sdpa-masked-rows", dtype_name)
    q, k, v = _qkv(1, 2, 2, 40, 35, 8, 8, dtype_name, rng)
    m = rng.uniform(size=(40, 35)) > 0.5
    m[3, :] = False
    m[33:, :] = False
    m[:, 34] = False
    _sdpa_compare(q, k, v, dtype_name, attn_mask=ember.from_numpy(m))
    oc, _ = _sdpa_compare(q, k, v, dtype_name, attn_mask=ember.from_numpy(m))
    assert float(oc[0, 0, 3].abs().sum()) == 0.0


@pytest.mark.parametrize("dtype_name", SDPA_DTYPES)
def test_sdpa_noncontiguous_gqa_and_batch_shapes(dtype_name):
    rng = seeded("sdpa-nc", dtype_name)
    # (B, L, H, E) permuted to (B, H, L, E): strided rows and heads
    q = make((2, 33, 4, 16), dtype_name, rng).permute(0, 2, 1, 3)
    k = make((2, 20, 4, 16), dtype_name, rng).permute(0, 2, 1, 3)
    v = make((2, 4, 16, 20), dtype_name, rng).transpose(-1, -2)
    _sdpa_compare(q, k, v, dtype_name)
    # grouped-query heads: 6 query heads over 2 key/value heads
    q, k, v = _qkv(2, 6, 2, 35, 40, 16, 8, dtype_name, rng)
    _sdpa_compare(q, k, v, dtype_name, enable_gqa=True)
    _sdpa_compare(q, k, v, dtype_name, enable_gqa=True, is_causal=True)
    # 3-d and 5-d inputs
    q3, k3, v3 = (make((3, 9, 8), dtype_name, rng) for _ in range(3))
    _sdpa_compare(q3, k3, v3, dtype_name)
    q5, k5, v5 = (make((2, 2, 2, 9, 8), dtype_name, rng) for _ in range(3))
    _sdpa_compare(q5, k5, v5, dtype_name, attn_mask=make((9, 9), dtype_name, rng))


@pytest.mark.parametrize("dtype_name", SDPA_DTYPES)
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_dropout_same_seed_same_result(dtype_name, causal):
    # the keep/drop decision is a hash of (seed, offset, batch*head, row, column): the same
    # seed gives the same mask on both devices
    rng = seeded("sdpa-drop", dtype_name, causal)
    q, k, v = _qkv(2, 3, 3, 45, 70, 16, 24, dtype_name, rng)
    oc, _ = _sdpa_compare(q, k, v, dtype_name, dropout_p=0.3, is_causal=causal, seed=1234)
    plain = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    assert not np.allclose(oc.detach().numpy(), plain.numpy())  # dropout did something
    m = ember.from_numpy(rng.uniform(size=(45, 70)) > 0.2)
    _sdpa_compare(q, k, v, dtype_name, dropout_p=0.5, attn_mask=m, seed=99)


def test_sdpa_dropout_double_backward():
    # the double backward rebuilds the dropout mask on the host and moves it to the device
    rng = seeded("sdpa-drop-2")
    q, k, v = _qkv(1, 2, 2, 9, 11, 8, 8, "float64", rng)
    res = []
    for dev in ["cpu", cmp_dev()]:
        qq, kk, vv = (_leaf(t.to(dev)) for t in (q, k, v))
        ember.manual_seed(77)
        o = F.scaled_dot_product_attention(qq, kk, vv, dropout_p=0.4)
        (gq,) = ember.autograd.grad((o * o).sum(), [qq], create_graph=True)
        gq.sum().backward()
        res.append((o, gq, kk.grad, vv.grad))
    for a, b in zip(res[0], res[1]):
        assert_same(a, b.to(cmp_dev()), TOL["float64"])


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_sdpa_16bit(dtype_name):
    # 16-bit inputs run the float kernels on float copies (ops/nn_attention.cpp)
    rng = seeded("sdpa-16", dtype_name)
    q, k, v = _qkv(2, 2, 2, 33, 40, 16, 16, dtype_name, rng)
    _sdpa_compare(q, k, v, dtype_name)
    _sdpa_compare(q, k, v, dtype_name, is_causal=True)


def test_sdpa_empty_and_errors():
    rng = seeded("sdpa-empty")
    f = F.scaled_dot_product_attention
    for L, S, E in [(0, 5, 4), (5, 0, 4), (3, 4, 0)]:
        q, k, v = _qkv(1, 2, 2, L, S, E, 3, "float32", rng)
        _sdpa_compare(q, k, v, "float32")
    q, k, v = _qkv(1, 2, 2, 5, 6, 4, 4, "float32", rng)
    m = ember.ones((5, 6), dtype=ember.bool)
    check(lambda a, b, c, mm: f(a, b, c, attn_mask=mm, is_causal=True), q, k, v, m,
          what="mask and causal")
    check(lambda a, b, c: f(a, b, c.to(ember.float64)), q, k, v, what="dtype mismatch")
    check(lambda a, b, c: f(a, b, c, attn_mask=ember.ones((5, 6), dtype=ember.int32)), q, k, v,
          what="int mask")
    check(lambda a, b, c: f(a, b[:, :1], c[:, :1]), q, k, v, what="heads without enable_gqa")


@pytest.mark.parametrize("dtype_name", SDPA_DTYPES)
def test_multihead_attention_matches_cpu(dtype_name):
    ember.manual_seed(9)
    d = dt(dtype_name)
    rng = seeded("mha", dtype_name)
    for batch_first in [False, True]:
        mha_c = nn.MultiheadAttention(16, 4, batch_first=batch_first, dtype=d)
        mha_d = copy.deepcopy(mha_c).to(cmp_dev())
        shape = (3, 7, 16) if batch_first else (7, 3, 16)
        x = make(shape, dtype_name, rng, lo=-1, hi=1)
        xc, xd = _pair(x)
        kpm = ember.from_numpy(np.array([[False] * 7, [False] * 5 + [True] * 2,
                                         [True] + [False] * 6]))
        oc, _ = mha_c(xc, xc, xc, need_weights=False, key_padding_mask=kpm)
        od, _ = mha_d(xd, xd, xd, need_weights=False, key_padding_mask=to_dev(kpm))
        tol = TOL[dtype_name]
        assert_same(oc, od, tol, what="mha output")
        g = make(tuple(oc.shape), dtype_name, rng)
        oc.backward(g)
        od.backward(to_dev(g))
        assert_same(xc.grad, xd.grad, tol, what="mha input grad")
        assert_same(_grads_of(mha_c), _grads_of(mha_d), tol, what="mha weight grads")


def test_float_mask_requiring_grad_runs_the_composite():
    rng = seeded("sdpa-mask-grad")
    q, k, v = _qkv(1, 2, 2, 6, 7, 8, 8, "float32", rng)
    m = make((6, 7), "float32", rng)
    mc, md = _pair(m)
    oc = F.scaled_dot_product_attention(q, k, v, attn_mask=mc)
    od = F.scaled_dot_product_attention(to_dev(q), to_dev(k), to_dev(v), attn_mask=md)
    assert_same(oc, od, TOL["float32"])
    oc.sum().backward()
    od.sum().backward()
    assert_same(mc.grad, md.grad, TOL["float32"])

