"""nn.functional: rnn.

The recurrent layers' argument handling, shared by the modules in
``nn/modules/rnn.py``: batch_first, unbatched inputs, PackedSequence, default
and checked hidden states. The time loop, the layers and directions and the
dropout between layers run in C++ (``_C._rnn_forward`` / ``_C._rnn_layer``,
csrc/ember/ops/nn_rnn.cpp); torch.nn.functional has no public recurrent
functions, so neither does this module.
"""
import ember
from ember import _C

__all__ = []

MODES = {"RNN_TANH": 0, "RNN_RELU": 1, "LSTM": 2, "GRU": 3}


def _name(mode):
    return {"RNN_TANH": "RNN", "RNN_RELU": "RNN"}.get(mode, mode)


def _check_hidden(hx, expected, msg="Expected hidden size {}, got {}"):
    if tuple(hx.shape) != tuple(expected):
        raise RuntimeError(msg.format(tuple(expected), list(hx.shape)))


def rnn_forward(mode, input, hx, weights, *, input_size, hidden_size, num_layers, bias,
                batch_first, dropout, training, bidirectional, proj_size=0):
    """The forward of nn.RNN/LSTM/GRU. ``hx`` is a tensor, an (h, c) pair for LSTM,
    or None. Returns (output, h_n) or, for LSTM, (output, (h_n, c_n))."""
    from ..utils.rnn import PackedSequence
    lstm = mode == "LSTM"
    name = _name(mode)
    D = 2 if bidirectional else 1
    real_hidden = proj_size if proj_size > 0 else hidden_size
    packed = isinstance(input, PackedSequence)
    h = c = None
    if hx is not None:
        if lstm:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError(f"{name}: expected hx to be a tuple (h_0, c_0)")
            h, c = hx
        else:
            if not isinstance(hx, ember.Tensor):
                raise TypeError(f"{name}: expected hx to be a Tensor, got {type(hx).__name__}")
            h = hx
    if packed:
        data, batch_sizes = input.data, input.batch_sizes
        sorted_indices, unsorted_indices = input.sorted_indices, input.unsorted_indices
        bs = [int(v) for v in batch_sizes.tolist()]
        B = bs[0]
        is_batched = True
        if sorted_indices is not None:
            if h is not None:
                h = h.index_select(1, sorted_indices)
            if c is not None:
                c = c.index_select(1, sorted_indices)
    else:
        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D instead")
        is_batched = input.dim() == 3
        batch_dim = 0 if batch_first else 1
        if not is_batched:
            input = input.unsqueeze(batch_dim)
            if h is not None:
                if h.dim() != 2 or (c is not None and c.dim() != 2):
                    dims = f"({h.dim()}-D, {c.dim()}-D)" if lstm else f"{h.dim()}-D"
                    what = "hx and cx" if lstm else "hx"
                    raise RuntimeError(f"For unbatched 2-D input, {what} should also be 2-D but "
                                       f"got {dims} tensor{'s' if lstm else ''}")
                h = h.unsqueeze(1)
                if c is not None:
                    c = c.unsqueeze(1)
        elif h is not None:
            if h.dim() != 3 or (c is not None and c.dim() != 3):
                dims = f"({h.dim()}-D, {c.dim()}-D)" if lstm else f"{h.dim()}-D"
                what = "hx and cx" if lstm else "hx"
                raise RuntimeError(f"For batched 3-D input, {what} should also be 3-D but got "
                                   f"{dims} tensor{'s' if lstm else ''}")
        if batch_first:
            input = input.transpose(0, 1)
        T, B = int(input.shape[0]), int(input.shape[1])
        data = input.reshape(T * B, input.shape[2])
        bs = [B] * T
    if data.shape[-1] != input_size:
        raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {input_size}, "
                           f"got {data.shape[-1]}")
    if data.dtype != weights[0].dtype:
        raise ValueError(f"input must have the type {weights[0].dtype}, got type {data.dtype}")
    expected_h = (num_layers * D, B, real_hidden)
    expected_c = (num_layers * D, B, hidden_size)
    if h is None:
        h = ember.zeros(expected_h, dtype=data.dtype, device=data.device)
    elif lstm:
        _check_hidden(h, expected_h, "Expected hidden[0] size {}, got {}")
    else:
        _check_hidden(h, expected_h)
    if lstm:
        if c is None:
            c = ember.zeros(expected_c, dtype=data.dtype, device=data.device)
        else:
            _check_hidden(c, expected_c, "Expected hidden[1] size {}, got {}")
    out, hn, cn = _C._rnn_forward(MODES[mode], data, bs, h, c, list(weights), bool(bias),
                                  int(num_layers), float(dropout), bool(training),
                                  bool(bidirectional))
    if packed:
        output = PackedSequence(out, batch_sizes, sorted_indices, unsorted_indices)
        if unsorted_indices is not None:
            hn = hn.index_select(1, unsorted_indices)
            if cn is not None:
                cn = cn.index_select(1, unsorted_indices)
    else:
        output = out.view(T, B, out.shape[-1])
        if batch_first:
            output = output.transpose(0, 1)
        if not is_batched:
            output = output.squeeze(batch_dim)
            hn = hn.squeeze(1)
            if cn is not None:
                cn = cn.squeeze(1)
    return (output, (hn, cn)) if lstm else (output, hn)


def rnn_cell_forward(mode, name, input, hx, w_ih, w_hh, b_ih, b_hh, hidden_size):
    """The forward of nn.RNNCell/LSTMCell/GRUCell: one step of the C++ layer.
    Returns h' or, for LSTM, (h', c')."""
    lstm = mode == "LSTM"
    if input.dim() not in (1, 2):
        raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
    h = c = None
    if hx is not None:
        if lstm:
            h, c = hx
        else:
            h = hx
        for t in (h, c):
            if t is not None and t.dim() != input.dim():
                what = "hx[0]" if lstm and t is h else ("hx[1]" if lstm else "hx")
                raise RuntimeError(
                    f"{name}: Expected {what} to be {input.dim()}D, got {t.dim()}D instead")
    batched = input.dim() == 2
    if not batched:
        input = input.unsqueeze(0)
        h = None if h is None else h.unsqueeze(0)
        c = None if c is None else c.unsqueeze(0)
    B = int(input.shape[0])
    if input.shape[1] != w_ih.shape[1]:
        raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected "
                           f"{w_ih.shape[1]}")
    if h is None:
        h = ember.zeros((B, hidden_size), dtype=input.dtype, device=input.device)
    if lstm and c is None:
        c = ember.zeros((B, hidden_size), dtype=input.dtype, device=input.device)
    for i, t in enumerate((h, c) if lstm else (h,)):
        if t.shape[0] != B:
            raise RuntimeError(f"Input batch size {B} doesn't match hidden{i} batch size "
                               f"{t.shape[0]}")
        if t.shape[1] != hidden_size:
            raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {t.shape[1]}, "
                               f"expected {hidden_size}")
    _, hn, cn = _C._rnn_layer(MODES[mode], input, [B], h, c, w_ih, w_hh, b_ih, b_hh, None, False)
    if not batched:
        hn = hn.squeeze(0)
        cn = None if cn is None else cn.squeeze(0)
    return (hn, cn) if lstm else hn
