"""Registry entries of the recurrent layers (ember.lstm/gru/rnn_tanh/rnn_relu and
their cells, as torch's) and of nn.utils.rnn's packing functions, with the NumPy
references that tests/test_nn_rnn.py and registry/nn_attention.py also use."""
import numpy as np

import ember

from . import ErrorCase, OpEntry, Sample

MODES = {"rnn_tanh": 0, "rnn_relu": 1, "lstm": 2, "gru": 3}
GATES = {"rnn_tanh": 1, "rnn_relu": 1, "lstm": 4, "gru": 3}


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def layer(mode, x, batch_sizes, h0, c0, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None,
          reverse=False):
    """One layer, one direction over packed rows x [N, I]: (y [N, Hout], h_n, c_n)."""
    H = w_ih.shape[0] // GATES[mode]
    off = np.concatenate([[0], np.cumsum(batch_sizes)]).astype(int)
    h = np.array(h0, dtype=np.float64)
    c = None if c0 is None else np.array(c0, dtype=np.float64)
    y = np.zeros((x.shape[0], h.shape[1]))
    T = len(batch_sizes)
    for s in range(T):
        t = T - 1 - s if reverse else s
        r = batch_sizes[t]
        xt = x[off[t]:off[t] + r]
        hs = h[:r]
        xg = xt @ w_ih.T + (0 if b_ih is None else b_ih)
        hg = hs @ w_hh.T + (0 if b_hh is None else b_hh)
        if mode == "lstm":
            g = xg + hg
            i, f, gg, o = (g[:, k * H:(k + 1) * H] for k in range(4))
            i, f, gg, o = _sig(i), _sig(f), np.tanh(gg), _sig(o)
            cn = f * c[:r] + i * gg
            hn = o * np.tanh(cn)
            if w_hr is not None:
                hn = hn @ w_hr.T
            c[:r] = cn
        elif mode == "gru":
            rr = _sig(xg[:, :H] + hg[:, :H])
            z = _sig(xg[:, H:2 * H] + hg[:, H:2 * H])
            n = np.tanh(xg[:, 2 * H:] + rr * hg[:, 2 * H:])
            hn = (1 - z) * n + z * hs
        else:
            pre = xg + hg
            hn = np.tanh(pre) if mode == "rnn_tanh" else np.maximum(pre, 0)
        h[:r] = hn
        y[off[t]:off[t] + r] = hn
    return y, h, c


def stack(mode, x, batch_sizes, hx, cx, params, has_biases, num_layers, bidirectional):
    """The multi-layer forward without dropout: (output, h_n, c_n)."""
    D = 2 if bidirectional else 1
    per = len(params) // (num_layers * D)
    inp = x
    hs, cs = [], []
    for layer_i in range(num_layers):
        ys = []
        for d in range(D):
            p = params[(layer_i * D + d) * per:(layer_i * D + d + 1) * per]
            w_ih, w_hh = p[0], p[1]
            b_ih, b_hh = (p[2], p[3]) if has_biases else (None, None)
            w_hr = p[-1] if per == (4 if has_biases else 2) + 1 else None
            y, h, c = layer(mode, inp, batch_sizes, hx[layer_i * D + d],
                            None if cx is None else cx[layer_i * D + d], w_ih, w_hh, b_ih, b_hh,
                            w_hr, reverse=d == 1)
            ys.append(y)
            hs.append(h)
            cs.append(c)
        inp = np.concatenate(ys, axis=1)
    return inp, np.stack(hs), (np.stack(cs) if cx is not None else None)


def sdpa(q, k, v, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    """softmax(q k^T * scale + mask) v with rows of no finite score giving 0."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    if scale is None:
        scale = 1.0 / np.sqrt(q.shape[-1])
    if enable_gqa and q.ndim >= 3 and q.shape[-3] != k.shape[-3]:
        rep = q.shape[-3] // k.shape[-3]
        k = np.repeat(k, rep, axis=-3)
        v = np.repeat(v, rep, axis=-3)
    s = q @ np.swapaxes(k, -1, -2) * scale
    L, S = s.shape[-2], s.shape[-1]
    if is_causal:
        s = np.where(np.tril(np.ones((L, S), bool)), s, -np.inf)
    mask = attn_mask
    if mask is not None:
        mask = np.asarray(mask)
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    m = np.max(s, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(s - m)
    den = e.sum(-1, keepdims=True)
    p = e / np.where(den == 0, 1, den)
    return p @ v


# ---- registry entries ----------------------------------------------------------------------

def _t(rng, shape, device, dtype, scale=0.5):
    return ember.tensor(rng.uniform(-scale, scale, size=shape), dtype=dtype, device=device)


def _params(rng, mode, In, H, layers, D, bias, proj, device, dtype):
    G = GATES[mode]
    Hout = proj or H
    ps = []
    for layer_i in range(layers):
        for _ in range(D):
            inp = In if layer_i == 0 else Hout * D
            ps += [_t(rng, (G * H, inp), device, dtype), _t(rng, (G * H, Hout), device, dtype)]
            if bias:
                ps += [_t(rng, (G * H,), device, dtype), _t(rng, (G * H,), device, dtype)]
            if proj:
                ps.append(_t(rng, (proj, H), device, dtype))
    return ps


_CONFIGS = [  # (T, B, In, H, layers, bidirectional, bias, batch_first, proj)
    (3, 2, 2, 3, 1, False, True, False, 0),
    (2, 2, 2, 2, 2, True, False, True, 0),
]


def _full_samples(mode):
    def samples(device, dtype):
        rng = np.random.default_rng(1)
        configs = list(_CONFIGS)
        if mode == "lstm":
            configs.append((3, 2, 2, 3, 1, True, True, False, 2))
        for T, B, In, H, L, bi, bias, bf, proj in configs:
            D = 2 if bi else 1
            x = _t(rng, (B, T, In) if bf else (T, B, In), device, dtype, 1.0)
            h = _t(rng, (L * D, B, proj or H), device, dtype)
            hx = [h, _t(rng, (L * D, B, H), device, dtype)] if mode == "lstm" else h
            ps = _params(rng, mode, In, H, L, D, bias, proj, device, dtype)
            yield Sample((x, hx, ps, bias, L, 0.0, False, bi, bf),
                         desc=f"T{T} B{B} L{L} bi{bi} bias{bias} bf{bf} proj{proj}")
        # the PackedSequence overload: batch sizes 3, 2, 1
        x = _t(rng, (6, 2), device, dtype, 1.0)
        bs = ember.tensor([3, 2, 1], dtype=ember.int64)
        h = _t(rng, (2, 3, 2), device, dtype)
        hx = [h, _t(rng, (2, 3, 2), device, dtype)] if mode == "lstm" else h
        ps = _params(rng, mode, 2, 2, 1, 2, True, 0, device, dtype)
        yield Sample((x, bs, hx, ps, True, 1, 0.0, False, True), desc="packed bidirectional")
    return samples


def _full_ref(mode):
    def ref(*a):
        if isinstance(a[1], np.ndarray) and a[1].dtype == np.int64:  # packed
            x, bs, hx, ps, bias, L, _, _, bi = a
            batch_sizes = [int(v) for v in bs]
            bf = False
        else:
            x, hx, ps, bias, L, _, _, bi, bf = a
            if bf:
                x = np.swapaxes(x, 0, 1)
            T, B = x.shape[:2]
            batch_sizes = [B] * T
            x = x.reshape(T * B, -1)
        h, c = (hx[0], hx[1]) if mode == "lstm" else (hx, None)
        out, hn, cn = stack(mode, x, batch_sizes, h, c, ps, bias, L, bi)
        if not isinstance(a[1], np.ndarray) or a[1].dtype != np.int64:
            out = out.reshape(T, B, -1)
            if bf:
                out = np.swapaxes(out, 0, 1)
        return (out, hn, cn) if mode == "lstm" else (out, hn)
    return ref


def _full_errors(mode):
    def errors(device):
        rng = np.random.default_rng(2)
        x = _t(rng, (3, 2, 2), device, ember.float64)
        ps = _params(rng, mode, 2, 3, 1, 1, True, 0, device, ember.float64)
        bad_h = _t(rng, (1, 5, 3), device, ember.float64)
        hx = [bad_h, _t(rng, (1, 2, 3), device, ember.float64)] if mode == "lstm" else bad_h
        yield ErrorCase((x, hx, ps, True, 1, 0.0, False, False, False), {}, RuntimeError,
                        "Expected hidden size")
        good_h = _t(rng, (1, 2, 3), device, ember.float64)
        hx = [good_h, good_h] if mode == "lstm" else good_h
        yield ErrorCase((x, hx, ps[:3], True, 1, 0.0, False, False, False), {}, RuntimeError,
                        "weights")
        yield ErrorCase((x.float(), hx, ps, True, 1, 0.0, False, False, False), {}, RuntimeError,
                        "dtype")
        yield ErrorCase((x, hx, ps, True, 1, 1.5, True, False, False), {}, RuntimeError,
                        "dropout should be a number in range")
    return errors


def _cell_samples(mode):
    def samples(device, dtype):
        rng = np.random.default_rng(3)
        G = GATES[mode]
        for bias in (True, False):
            x = _t(rng, (3, 2), device, dtype, 1.0)
            h = _t(rng, (3, 4), device, dtype)
            hx = [h, _t(rng, (3, 4), device, dtype)] if mode == "lstm" else h
            w = [_t(rng, (G * 4, 2), device, dtype), _t(rng, (G * 4, 4), device, dtype)]
            b = [_t(rng, (G * 4,), device, dtype), _t(rng, (G * 4,), device, dtype)] if bias \
                else [None, None]
            yield Sample((x, hx, *w, *b), desc=f"bias={bias}")
    return samples


def _cell_ref(mode):
    def ref(x, hx, w_ih, w_hh, b_ih=None, b_hh=None):
        h, c = (hx[0], hx[1]) if mode == "lstm" else (hx, None)
        _, hn, cn = layer(mode, x, [x.shape[0]], h, c, w_ih, w_hh, b_ih, b_hh)
        return (hn, cn) if mode == "lstm" else hn
    return ref


def _cell_errors(mode):
    def errors(device):
        rng = np.random.default_rng(4)
        G = GATES[mode]
        x = _t(rng, (3, 2), device, ember.float64)
        h = _t(rng, (3, 5), device, ember.float64)
        hx = [h, h] if mode == "lstm" else h
        w = [_t(rng, (G * 4, 2), device, ember.float64), _t(rng, (G * 4, 4), device, ember.float64)]
        yield ErrorCase((x, hx, *w), {}, RuntimeError, "Expected hidden size")
        yield ErrorCase((x[0], hx, *w), {}, RuntimeError, "expected a 2-D input")
    return errors


def _pad_sequence_samples(device, dtype):
    rng = np.random.default_rng(5)
    seqs = [_t(rng, (n, 2), device, dtype) for n in (3, 1, 2)]
    yield Sample((seqs,), {}, "default")
    yield Sample((seqs,), {"batch_first": True, "padding_value": -1.5}, "batch_first")
    yield Sample((seqs,), {"batch_first": True, "padding_side": "left"}, "left")
    yield Sample(([_t(rng, (n,), device, dtype) for n in (2, 4)],), {}, "1-D")


def _pad_sequence_ref(seqs, batch_first=False, padding_value=0.0, padding_side="right"):
    T = max(s.shape[0] for s in seqs)
    out = np.full((len(seqs), T) + seqs[0].shape[1:], padding_value, dtype=np.float64)
    for i, s in enumerate(seqs):
        if padding_side == "left":
            out[i, T - s.shape[0]:] = s
        else:
            out[i, :s.shape[0]] = s
    return out if batch_first else np.swapaxes(out, 0, 1)


def _pack(x, lengths, batch_first=False, enforce_sorted=True):
    from ember.nn.utils.rnn import pack_padded_sequence
    p = pack_padded_sequence(x, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    return p.data, p.batch_sizes


def _pack_samples(device, dtype):
    rng = np.random.default_rng(6)
    yield Sample((_t(rng, (4, 3, 2), device, dtype), [4, 2, 1]), {}, "sorted")
    yield Sample((_t(rng, (3, 4, 2), device, dtype), [1, 4, 2]),
                 {"batch_first": True, "enforce_sorted": False}, "unsorted batch_first")


def _pack_ref(x, lengths, batch_first=False, enforce_sorted=True):
    if batch_first:
        x = np.swapaxes(x, 0, 1)
    lengths = list(lengths)
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    rows, bs = [], []
    for t in range(max(lengths)):
        live = [b for b in order if lengths[b] > t]
        bs.append(len(live))
        rows += [x[t, b] for b in live]
    return np.stack(rows), np.array(bs, dtype=np.int64)


def _pad_packed(data, batch_sizes, **kw):
    from ember.nn.utils.rnn import PackedSequence, pad_packed_sequence
    return pad_packed_sequence(PackedSequence(data, batch_sizes), **kw)


def _pad_packed_samples(device, dtype):
    rng = np.random.default_rng(7)
    bs = ember.tensor([3, 2, 2, 1], dtype=ember.int64)
    yield Sample((_t(rng, (8, 2), device, dtype), bs), {}, "default")
    yield Sample((_t(rng, (8, 2), device, dtype), bs),
                 {"batch_first": True, "padding_value": 7.0, "total_length": 6}, "total_length")


def _pad_packed_ref(data, batch_sizes, batch_first=False, padding_value=0.0, total_length=None):
    T = len(batch_sizes)
    B = int(batch_sizes[0])
    Tt = max(T, total_length or 0)
    out = np.full((Tt, B) + data.shape[1:], padding_value, dtype=np.float64)
    off = 0
    for t, n in enumerate(batch_sizes):
        out[t, :n] = data[off:off + n]
        off += n
    lengths = np.array([sum(1 for n in batch_sizes if n > b) for b in range(B)], dtype=np.int64)
    return (np.swapaxes(out, 0, 1) if batch_first else out), lengths


def _pack_errors(device):
    x = ember.zeros((3, 2, 1), device=device)
    yield ErrorCase((x, [1, 3]), {}, RuntimeError, "must be sorted in decreasing order")
    yield ErrorCase((x, [2, 0]), {"enforce_sorted": False}, RuntimeError,
                    "Length of all samples has to be greater than 0")
    yield ErrorCase((x, [2]), {}, RuntimeError, "Expected `len\\(lengths\\)` to be equal")


def _pad_packed_errors(device):
    bs = ember.tensor([2, 1], dtype=ember.int64)
    yield ErrorCase((ember.zeros((3, 2), device=device), bs), {"total_length": 1}, ValueError,
                    "Expected total_length to be at least")


def _pad_sequence_errors(device):
    from ember.nn.utils.rnn import pad_sequence  # noqa: F401
    yield ErrorCase(([],), {}, RuntimeError, "received an empty list of sequences")
    yield ErrorCase(([ember.zeros((2, 3)), ember.zeros((2, 4))],), {}, RuntimeError,
                    "must match")
    yield ErrorCase(([ember.zeros((2,))],), {"padding_side": "middle"}, ValueError,
                    "padding_side")


def _pad_sequence_op(*a, **k):
    from ember.nn.utils.rnn import pad_sequence
    return pad_sequence(*a, **k)


ENTRIES = []
for _mode in ("lstm", "gru", "rnn_tanh", "rnn_relu"):
    ENTRIES.append(OpEntry(
        name=_mode, op=getattr(ember, _mode), samples=_full_samples(_mode), ref=_full_ref(_mode),
        errors=_full_errors(_mode), atol=1e-6, rtol=1e-5,
        note="multi-layer, bidirectional, batch_first, proj_size (lstm) and the "
             "PackedSequence overload; modules and dropout in tests/test_nn_rnn.py"))
    ENTRIES.append(OpEntry(
        name=f"{_mode}_cell", op=getattr(ember, f"{_mode}_cell"), samples=_cell_samples(_mode),
        ref=_cell_ref(_mode), errors=_cell_errors(_mode), atol=1e-6, rtol=1e-5))
ENTRIES += [
    OpEntry(name="nn.utils.rnn.pad_sequence", op=_pad_sequence_op, samples=_pad_sequence_samples,
            ref=_pad_sequence_ref, errors=_pad_sequence_errors),
    OpEntry(name="nn.utils.rnn.pack_padded_sequence", op=_pack, samples=_pack_samples,
            ref=_pack_ref, errors=_pack_errors, aliases=("nn.utils.rnn.pack_sequence",)),
    OpEntry(name="nn.utils.rnn.pad_packed_sequence", op=_pad_packed,
            samples=_pad_packed_samples, ref=_pad_packed_ref, errors=_pad_packed_errors,
            aliases=("nn.utils.rnn.unpack_sequence", "nn.utils.rnn.unpad_sequence")),
]
