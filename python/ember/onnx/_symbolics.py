"""Each graph op as ONNX nodes (opset 13+). Constants of the graph stay Python values
until an ONNX node needs them as inputs (then they become initializers) or attributes."""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _C
from ._export import UnsupportedOperatorError, _dtype_name, _np

_SYM = {}


def symbolic(*names):
    def deco(fn):
        for n in names:
            _SYM[n] = fn
        return fn
    return deco


def convert(ctx, n):
    kind = n.kind
    outs = n.outputs()
    ins = n.inputs()
    if kind == "prim::Constant":
        ctx.consts[outs[0].unique] = n.attr("value")
        return
    if kind == "prim::ListConstruct":
        if all(ctx.is_const(v) for v in ins):
            ctx.consts[outs[0].unique] = [ctx.const(v) for v in ins]
        else:
            ctx.lists[outs[0].unique] = list(ins)
        return
    if kind in ("prim::TupleConstruct",):
        ctx.tuples[outs[0].unique] = [ctx.name(v) for v in ins]
        return
    if kind in ("prim::TupleUnpack", "prim::ListUnpack"):
        src = ins[0]
        if src.unique in ctx.tuples:
            for o, nm in zip(outs, ctx.tuples[src.unique]):
                ctx.bind(o, nm)
        elif src.unique in ctx.lists:
            for o, v in zip(outs, ctx.lists[src.unique]):
                if ctx.is_const(v):
                    ctx.consts[o.unique] = ctx.const(v)
                else:
                    ctx.bind(o, ctx.name(v))
        elif ctx.is_const(src):
            for o, c in zip(outs, ctx.const(src)):
                ctx.consts[o.unique] = c
        elif src.unique in _MULTI:
            for o, nm in zip(outs, _MULTI[src.unique]):
                ctx.bind(o, nm)
        else:
            raise UnsupportedOperatorError(f"ember.onnx.export: cannot unpack %{src.name}")
        return
    if kind == "prim::TupleIndex":
        ctx.bind(outs[0], ctx.tuples[ins[0].unique][n.attr("index")])
        return
    if kind.startswith("prim::Guard"):
        warnings.warn(f"ember.onnx.export: the guard '{n.attr('what')}' ({n.source}) cannot be "
                      "expressed in ONNX and is dropped: the exported model assumes it holds",
                      stacklevel=3)
        return
    if kind in ("prim::If", "prim::Loop", "prim::CallMethod", "prim::RaiseException"):
        raise UnsupportedOperatorError(f"ember.onnx.export: {kind} (control flow) is not "
                                       "supported; export a traced model")
    q = n.qualified_name
    fn = _SYM.get(q) or _SYM.get(kind)
    if fn is None:
        raise UnsupportedOperatorError(
            f"ember.onnx.export: the op '{q or kind}' has no ONNX mapping (opset {ctx.opset})"
            + (f" (at {n.source})" if n.source else ""))
    r = fn(ctx, n, *ins)
    if r is None:
        return
    if not isinstance(r, (list, tuple)):
        r = [r]
    for o, name in zip(outs, r):
        if name is None:
            continue
        ctx.bind(o, name)


_MULTI = {}


def C(ctx, v):
    return ctx.const(v)


def _axes(ctx, axes):
    return ctx.add_const_tensor(np.array(axes, dtype=np.int64), "axes")


def _float_dtype(ctx, name):
    return ctx.dtypes.get(name, "float32")


# ---- elementwise -------------------------------------------------------------------------

def _binary(op_type):
    def fn(ctx, n, a, b):
        if ctx.is_const(a) and not ctx.is_const(b):
            bn = ctx.name(b)
            an = ctx.name(a, like=bn)
        else:
            an = ctx.name(a)
            bn = ctx.name(b, like=an)
        return ctx.op(op_type, [an, bn])
    return fn


for _name, _onnx in (("add", "Add"), ("sub", "Sub"), ("mul", "Mul"), ("div", "Div"),
                     ("pow", "Pow"), ("maximum", "Max"), ("minimum", "Min"), ("eq", "Equal"),
                     ("lt", "Less"), ("gt", "Greater"), ("le", "LessOrEqual"),
                     ("ge", "GreaterOrEqual"), ("logical_and", "And"), ("logical_or", "Or")):
    for _ov in (".Tensor", "_.Tensor"):
        _SYM[f"aten::{_name}{_ov}"] = _binary(_onnx)


@symbolic("aten::ne.Tensor")
def _ne(ctx, n, a, b):
    return ctx.op("Not", [_binary("Equal")(ctx, n, a, b)], dtype="bool")


def _unary(op_type):
    def fn(ctx, n, a):
        return ctx.op(op_type, [ctx.name(a)])
    return fn


for _name, _onnx in (("relu", "Relu"), ("tanh", "Tanh"), ("sigmoid", "Sigmoid"), ("exp", "Exp"),
                     ("log", "Log"), ("sqrt", "Sqrt"), ("abs", "Abs"), ("neg", "Neg"),
                     ("sin", "Sin"), ("cos", "Cos"), ("floor", "Floor"), ("ceil", "Ceil"),
                     ("reciprocal", "Reciprocal"), ("erf", "Erf"), ("sign", "Sign"),
                     ("logical_not", "Not"), ("contiguous", "Identity"), ("clone", "Identity"),
                     ("detach", "Identity"), ("softsign", "Softsign")):
    _SYM[f"aten::{_name}"] = _unary(_onnx)
    _SYM[f"aten::{_name}_"] = _unary(_onnx)


@symbolic("aten::rsqrt")
def _rsqrt(ctx, n, a):
    return ctx.op("Reciprocal", [ctx.op("Sqrt", [ctx.name(a)])])


@symbolic("aten::square")
def _square(ctx, n, a):
    x = ctx.name(a)
    return ctx.op("Mul", [x, x])


@symbolic("aten::gelu")
def _gelu(ctx, n, a, approximate):
    x = ctx.name(a)
    if C(ctx, approximate) == "tanh":
        c = ctx.add_const_tensor(np.array(math.sqrt(2 / math.pi), dtype=np.float32))
        k = ctx.add_const_tensor(np.array(0.044715, dtype=np.float32))
        x3 = ctx.op("Mul", [ctx.op("Mul", [x, x]), x])
        inner = ctx.op("Mul", [c, ctx.op("Add", [x, ctx.op("Mul", [k, x3])])])
        one = ctx.add_const_tensor(np.array(1.0, dtype=np.float32))
        half = ctx.add_const_tensor(np.array(0.5, dtype=np.float32))
        return ctx.op("Mul", [ctx.op("Mul", [half, x]), ctx.op("Add", [one, ctx.op("Tanh", [inner])])])
    r2 = ctx.add_const_tensor(np.array(math.sqrt(2.0), dtype=np.float32))
    one = ctx.add_const_tensor(np.array(1.0, dtype=np.float32))
    half = ctx.add_const_tensor(np.array(0.5, dtype=np.float32))
    e = ctx.op("Erf", [ctx.op("Div", [x, r2])])
    return ctx.op("Mul", [ctx.op("Mul", [x, half]), ctx.op("Add", [e, one])])


@symbolic("aten::silu")
def _silu(ctx, n, a):
    x = ctx.name(a)
    return ctx.op("Mul", [x, ctx.op("Sigmoid", [x])])


@symbolic("aten::leaky_relu", "aten::leaky_relu_")
def _leaky(ctx, n, a, slope):
    return ctx.op("LeakyRelu", [ctx.name(a)], alpha=float(C(ctx, slope)))


@symbolic("aten::hardtanh", "aten::hardtanh_")
def _hardtanh(ctx, n, a, lo, hi):
    x = ctx.name(a)
    return ctx.op("Clip", [x, ctx.name(lo, like=x), ctx.name(hi, like=x)])


@symbolic("aten::clamp.Tensor")
def _clamp(ctx, n, a, lo, hi):
    x = ctx.name(a)
    lo_n = "" if ctx.is_const(lo) and C(ctx, lo) is None else ctx.name(lo, like=x)
    hi_n = "" if ctx.is_const(hi) and C(ctx, hi) is None else ctx.name(hi, like=x)
    return ctx.op("Clip", [x, lo_n, hi_n])


@symbolic("aten::softmax", "aten::log_softmax")
def _softmax(ctx, n, a, dim, dtype):
    op = "Softmax" if n.kind == "aten::softmax" else "LogSoftmax"
    return ctx.op(op, [ctx.name(a)], axis=int(C(ctx, dim)))


@symbolic("aten::where.self")
def _where(ctx, n, c, a, b):
    an = ctx.name(a)
    return ctx.op("Where", [ctx.name(c), an, ctx.name(b, like=an)])


@symbolic("aten::to.dtype")
def _to(ctx, n, a, dtype, copy):
    from ._export import _ONNX_DTYPE
    name = _dtype_name(C(ctx, dtype))
    return ctx.op("Cast", [ctx.name(a)], to=_ONNX_DTYPE[name], dtype=name)


# ---- linear algebra -------------------------------------------------------------------------

@symbolic("aten::linear")
def _linear(ctx, n, x, w, b):
    xn = ctx.name(x)
    has_b = not (ctx.is_const(b) and C(ctx, b) is None)
    rank = len(x.sizes) if x.sizes is not None else None
    if rank == 2 and ctx.is_const(w):
        inputs = [xn, ctx.name(w)] + ([ctx.name(b)] if has_b else [])
        return ctx.op("Gemm", inputs, transB=1)
    if ctx.is_const(w):
        wt = ctx.add_const_tensor(_np(C(ctx, w)).T.copy(), "weight_t")
    else:
        wt = ctx.op("Transpose", [ctx.name(w)], perm=[1, 0])
    y = ctx.op("MatMul", [xn, wt])
    return ctx.op("Add", [y, ctx.name(b)]) if has_b else y


@symbolic("aten::matmul", "aten::mm", "aten::bmm")
def _matmul(ctx, n, a, b):
    return ctx.op("MatMul", [ctx.name(a), ctx.name(b)])


@symbolic("aten::addmm")
def _addmm(ctx, n, c, a, b, beta, alpha):
    return ctx.op("Gemm", [ctx.name(a), ctx.name(b), ctx.name(c)], alpha=float(C(ctx, alpha)),
                  beta=float(C(ctx, beta)))


@symbolic("aten::t", "aten::numpy_T")
def _t(ctx, n, a):
    rank = len(a.sizes) if a.sizes is not None else 2
    return ctx.op("Transpose", [ctx.name(a)], perm=list(range(rank))[::-1])


def _rank(v):
    return len(v.sizes) if v.sizes is not None else None


@symbolic("aten::transpose")
def _transpose(ctx, n, a, d0, d1):
    r = _rank(a)
    if r is None:
        raise UnsupportedOperatorError("ember.onnx.export: transpose of a tensor of unknown rank")
    perm = list(range(r))
    i, j = C(ctx, d0) % r, C(ctx, d1) % r
    perm[i], perm[j] = perm[j], perm[i]
    return ctx.op("Transpose", [ctx.name(a)], perm=perm)


@symbolic("aten::permute")
def _permute(ctx, n, a, dims):
    r = _rank(a)
    perm = [d % r for d in C(ctx, dims)]
    return ctx.op("Transpose", [ctx.name(a)], perm=perm)


# ---- shapes -------------------------------------------------------------------------------------

@symbolic("aten::view", "aten::reshape", "aten::_unsafe_view")
def _reshape(ctx, n, a, size):
    return ctx.op("Reshape", [ctx.name(a), ctx.name(size)])


@symbolic("aten::flatten")
def _flatten(ctx, n, a, start, end):
    r = _rank(a)
    s, e = C(ctx, start), C(ctx, end)
    if r is not None:
        s, e = s % max(r, 1), e % max(r, 1)
    if r is not None and e == r - 1:
        y = ctx.op("Flatten", [ctx.name(a)], axis=s)
        if s == 0:
            return ctx.op("Reshape", [y, ctx.add_const_tensor(np.array([-1], dtype=np.int64))])
        return y
    shape = ctx.op("Shape", [ctx.name(a)], dtype="int64")
    head = ctx.op("Slice", [shape, _axes(ctx, [0]), _axes(ctx, [s])], dtype="int64")
    tail = ctx.op("Slice", [shape, _axes(ctx, [e + 1]), _axes(ctx, [2 ** 62])], dtype="int64")
    mid = ctx.add_const_tensor(np.array([-1], dtype=np.int64))
    return ctx.op("Reshape", [ctx.name(a), ctx.op("Concat", [head, mid, tail], axis=0,
                                                     dtype="int64")])


@symbolic("aten::unsqueeze")
def _unsqueeze(ctx, n, a, dim):
    return ctx.op("Unsqueeze", [ctx.name(a), _axes(ctx, [C(ctx, dim)])])


@symbolic("aten::squeeze.intList")
def _squeeze(ctx, n, a, dims):
    return ctx.op("Squeeze", [ctx.name(a), _axes(ctx, list(C(ctx, dims)))])


@symbolic("aten::squeeze.default")
def _squeeze_all(ctx, n, a):
    return ctx.op("Squeeze", [ctx.name(a)])


@symbolic("aten::expand")
def _expand(ctx, n, a, size):
    items = ctx.int_items(size)
    if items is not None and all(not hasattr(i, "unique") for i in items) and a.sizes is not None:
        r = len(a.sizes)
        items = [a.sizes[i - (len(items) - r)] if s == -1 else s for i, s in enumerate(items)]
        return ctx.op("Expand", [ctx.name(a), ctx.int_list(items)])
    return ctx.op("Expand", [ctx.name(a), ctx.name(size)])


@symbolic("aten::size")
def _shape(ctx, n, a):
    return ctx.op("Shape", [ctx.name(a)], dtype="int64")


@symbolic("aten::size.int")
def _size_int(ctx, n, a, dim):
    s = ctx.op("Shape", [ctx.name(a)], dtype="int64")
    return ctx.op("Gather", [s, ctx.add_const_tensor(np.array(C(ctx, dim), dtype=np.int64))],
                  axis=0, dtype="int64")


for _name, _onnx in (("add", "Add"), ("sub", "Sub"), ("mul", "Mul"), ("floordiv", "Div")):
    def _int_op(ctx, n, a, b, _onnx=_onnx):
        return ctx.op(_onnx, [ctx.name(a, like=None if ctx.is_const(a) else ctx.name(a)),
                              ctx.name(b, like=ctx.name(a) if not ctx.is_const(a) else None)],
                      dtype="int64")
    _SYM[f"aten::{_name}.int"] = _int_op


@symbolic("aten::cat")
def _cat(ctx, n, tensors, dim):
    items = ctx.lists.get(tensors.unique) or []
    return ctx.op("Concat", [ctx.name(t) for t in items], axis=int(C(ctx, dim)))


@symbolic("aten::stack")
def _stack(ctx, n, tensors, dim):
    d = int(C(ctx, dim))
    items = ctx.lists.get(tensors.unique) or []
    parts = [ctx.op("Unsqueeze", [ctx.name(t), _axes(ctx, [d])]) for t in items]
    return ctx.op("Concat", parts, axis=d)


@symbolic("aten::select")
def _select(ctx, n, a, dim, index):
    idx = ctx.name(index) if not ctx.is_const(index) else \
        ctx.add_const_tensor(np.array(C(ctx, index), dtype=np.int64))
    return ctx.op("Gather", [ctx.name(a), idx], axis=int(C(ctx, dim)))


@symbolic("aten::slice")
def _slice(ctx, n, a, dim, start, end, step):
    s = C(ctx, start) if ctx.is_const(start) else None
    e = C(ctx, end) if ctx.is_const(end) else None
    s = 0 if s is None else s
    e = 2 ** 62 if e is None else e
    return ctx.op("Slice", [ctx.name(a), _axes(ctx, [s]), _axes(ctx, [e]),
                            _axes(ctx, [int(C(ctx, dim))]), _axes(ctx, [int(C(ctx, step))])])


@symbolic("aten::chunk", "aten::split")
def _chunk(ctx, n, a, k, dim):
    d = int(C(ctx, dim))
    size = a.sizes[d]
    if n.kind == "aten::chunk":
        each = -(-size // C(ctx, k))
    else:
        each = C(ctx, k)
    parts = [each] * (size // each) + ([size % each] if size % each else [])
    outs = ctx.op("Split", [ctx.name(a), ctx.add_const_tensor(np.array(parts, dtype=np.int64))],
                  outputs=len(parts), axis=d)
    outs = outs if isinstance(outs, list) else [outs]
    _MULTI[n.outputs()[0].unique] = outs
    return [None]


@symbolic("aten::unbind")
def _unbind(ctx, n, a, dim):
    d = int(C(ctx, dim))
    size = a.sizes[d]
    outs = ctx.op("Split", [ctx.name(a), ctx.add_const_tensor(np.ones(size, dtype=np.int64))],
                  outputs=size, axis=d)
    outs = outs if isinstance(outs, list) else [outs]
    _MULTI[n.outputs()[0].unique] = [ctx.op("Squeeze", [o, _axes(ctx, [d])]) for o in outs]
    return [None]


# ---- reductions --------------------------------------------------------------------------------

def _reduce(op_type):
    def fn(ctx, n, a, dims=None, keepdim=None, *rest):
        x = ctx.name(a)
        kd = int(bool(C(ctx, keepdim))) if keepdim is not None else 0
        d = C(ctx, dims) if dims is not None else None
        if d is None:
            return ctx.op(op_type, [x], keepdims=kd)
        if op_type == "ReduceSum":
            return ctx.op(op_type, [x, _axes(ctx, list(d))], keepdims=kd)
        return ctx.op(op_type, [x], axes=list(d), keepdims=kd)
    return fn


_SYM["aten::sum"] = _reduce("ReduceSum")
_SYM["aten::mean"] = _reduce("ReduceMean")
_SYM["aten::amax"] = _reduce("ReduceMax")
_SYM["aten::amin"] = _reduce("ReduceMin")


@symbolic("aten::argmax")
def _argmax(ctx, n, a, dim, keepdim):
    return ctx.op("ArgMax", [ctx.name(a)], axis=int(C(ctx, dim)), keepdims=int(bool(C(ctx, keepdim))),
                  dtype="int64")


# ---- nn ------------------------------------------------------------------------------------------

@symbolic("aten::convolution")
def _conv(ctx, n, x, w, b, stride, pad_lo, pad_hi, dilation, transposed, out_pad, groups, op):
    inputs = [ctx.name(x), ctx.name(w)]
    if not (ctx.is_const(b) and C(ctx, b) is None):
        inputs.append(ctx.name(b))
    kernel = list(C(ctx, w).shape[2:]) if ctx.is_const(w) else None
    attrs = dict(strides=list(C(ctx, stride)), pads=list(C(ctx, pad_lo)) + list(C(ctx, pad_hi)),
                 dilations=list(C(ctx, dilation)), group=int(C(ctx, groups)))
    if kernel:
        attrs["kernel_shape"] = kernel
    if C(ctx, transposed):
        attrs["output_padding"] = list(C(ctx, out_pad))
        return ctx.op("ConvTranspose", inputs, **attrs)
    return ctx.op("Conv", inputs, **attrs)


@symbolic("aten::batch_norm")
def _batch_norm(ctx, n, x, rm, rv, w, b, training, momentum, eps):
    if C(ctx, training):
        raise UnsupportedOperatorError("ember.onnx.export: batch_norm in training mode; export "
                                       "the model in eval mode")
    c = C(ctx, rm).shape[0]
    dt = np.float32
    scale = ctx.name(w) if not (ctx.is_const(w) and C(ctx, w) is None) else \
        ctx.add_const_tensor(np.ones(c, dtype=dt))
    bias = ctx.name(b) if not (ctx.is_const(b) and C(ctx, b) is None) else \
        ctx.add_const_tensor(np.zeros(c, dtype=dt))
    return ctx.op("BatchNormalization", [ctx.name(x), scale, bias, ctx.name(rm), ctx.name(rv)],
                  epsilon=float(C(ctx, eps)), momentum=1.0 - float(C(ctx, momentum)))


@symbolic("aten::layer_norm")
def _layer_norm(ctx, n, x, shape, w, b, eps):
    k = len(C(ctx, shape))
    inputs = [ctx.name(x)]
    inputs.append(ctx.name(w) if not (ctx.is_const(w) and C(ctx, w) is None) else
                  ctx.add_const_tensor(np.ones(C(ctx, shape), dtype=np.float32)))
    if not (ctx.is_const(b) and C(ctx, b) is None):
        inputs.append(ctx.name(b))
    return ctx.op("LayerNormalization", inputs, axis=-k, epsilon=float(C(ctx, eps)))


@symbolic("aten::max_pool")
def _max_pool(ctx, n, x, nsp, kernel, stride, padding, dilation, ceil_mode, op):
    if n.outputs()[1].num_uses:
        raise UnsupportedOperatorError("ember.onnx.export: max pooling indices are not exported")
    p = list(C(ctx, padding))
    y = ctx.op("MaxPool", [ctx.name(x)], kernel_shape=list(C(ctx, kernel)),
               strides=list(C(ctx, stride)), pads=p + p, dilations=list(C(ctx, dilation)),
               ceil_mode=int(bool(C(ctx, ceil_mode))))
    return [y, None]


@symbolic("aten::avg_pool")
def _avg_pool(ctx, n, x, nsp, kernel, stride, padding, ceil_mode, count_include_pad, divisor, op):
    p = list(C(ctx, padding))
    return ctx.op("AveragePool", [ctx.name(x)], kernel_shape=list(C(ctx, kernel)),
                  strides=list(C(ctx, stride)), pads=p + p,
                  ceil_mode=int(bool(C(ctx, ceil_mode))),
                  count_include_pad=int(bool(C(ctx, count_include_pad))))


@symbolic("aten::adaptive_avg_pool")
def _adaptive_avg(ctx, n, x, nsp, size, op):
    out = list(C(ctx, size))
    if all(s == 1 for s in out):
        return ctx.op("GlobalAveragePool", [ctx.name(x)])
    ins = x.sizes[-len(out):] if x.sizes is not None else None
    if ins is None or any(i % o for i, o in zip(ins, out)):
        raise UnsupportedOperatorError("ember.onnx.export: adaptive_avg_pool with an output size "
                                       "that does not divide the input's")
    k = [i // o for i, o in zip(ins, out)]
    return ctx.op("AveragePool", [ctx.name(x)], kernel_shape=k, strides=k)


@symbolic("aten::embedding")
def _embedding(ctx, n, w, idx, padding_idx, scale, sparse=None):
    return ctx.op("Gather", [ctx.name(w), ctx.name(idx)], axis=0)


@symbolic("aten::_sdpa_math", "aten::_sdpa_flash")
def _sdpa(ctx, n, q, k, v, mask, is_causal, scale, dropout_p):
    if C(ctx, is_causal):
        raise UnsupportedOperatorError("ember.onnx.export: causal attention is not exported")
    kt = ctx.op("Transpose", [ctx.name(k)], perm=[0, 1, 3, 2])
    s = ctx.add_const_tensor(np.array(float(C(ctx, scale)), dtype=np.float32))
    scores = ctx.op("Mul", [ctx.op("MatMul", [ctx.name(q), kt]), s])
    if not (ctx.is_const(mask) and C(ctx, mask) is None):
        m = ctx.name(mask)
        if ctx.dtypes.get(m) == "bool":
            ninf = ctx.add_const_tensor(np.array(-np.inf, dtype=np.float32))
            zero = ctx.add_const_tensor(np.array(0.0, dtype=np.float32))
            m = ctx.op("Where", [m, zero, ninf])
        scores = ctx.op("Add", [scores, m])
    w = ctx.op("Softmax", [scores], axis=-1)
    return ctx.op("MatMul", [w, ctx.name(v)])


@symbolic("aten::rnn_forward")
def _rnn(ctx, n, mode, data, bs, hx, cx, params, has_biases, num_layers, dropout, train, bidi):
    """An LSTM/GRU/RNN stack as ONNX's LSTM/GRU/RNN per layer (gates reordered)."""
    m = int(C(ctx, mode))
    batch = list(C(ctx, bs))
    T = len(batch)
    B = batch[0]
    if any(b != B for b in batch):
        raise UnsupportedOperatorError("ember.onnx.export: packed sequences of varying length")
    # frozen parameters: the list's items are constant values of the graph
    items = ctx.lists[params.unique] if params.unique in ctx.lists else list(C(ctx, params))
    weights = [w if isinstance(w, _C.Tensor) else C(ctx, w) for w in items]
    layers = int(C(ctx, num_layers))
    D = 2 if C(ctx, bidi) else 1
    biased = bool(C(ctx, has_biases))
    per = 4 if biased else 2
    if len(weights) != layers * D * per:
        raise UnsupportedOperatorError("ember.onnx.export: recurrent layers with projections")
    lstm = m == _rnn_modes()["LSTM"]
    gru = m == _rnn_modes()["GRU"]
    H = weights[1].shape[1]
    x = ctx.op("Reshape", [ctx.name(data), ctx.int_list([T, B, -1])])
    h_all = ctx.name(hx)
    c_all = ctx.name(cx) if lstm else None
    hn, cn = [], []
    for layer in range(layers):
        ws, rs, bsum = [], [], []
        for d in range(D):
            base = (layer * D + d) * per
            w_ih, w_hh = _np(weights[base]), _np(weights[base + 1])
            b_ih = _np(weights[base + 2]) if biased else np.zeros(w_ih.shape[0], np.float32)
            b_hh = _np(weights[base + 3]) if biased else np.zeros(w_hh.shape[0], np.float32)
            order = _gate_order(lstm, gru, H)
            ws.append(w_ih[order])
            rs.append(w_hh[order])
            bsum.append(np.concatenate([b_ih[order], b_hh[order]]))
        W = ctx.add_const_tensor(np.stack(ws), "W")
        R = ctx.add_const_tensor(np.stack(rs), "R")
        Bc = ctx.add_const_tensor(np.stack(bsum), "B")
        h0 = ctx.op("Slice", [h_all, _axes(ctx, [layer * D]), _axes(ctx, [layer * D + D]),
                              _axes(ctx, [0])])
        inputs = [x, W, R, Bc, "", h0]
        attrs = dict(hidden_size=H, direction="bidirectional" if D == 2 else "forward")
        if lstm:
            c0 = ctx.op("Slice", [c_all, _axes(ctx, [layer * D]), _axes(ctx, [layer * D + D]),
                                  _axes(ctx, [0])])
            y, yh, yc = ctx.op("LSTM", inputs + [c0], outputs=3, **attrs)
            cn.append(yc)
        elif gru:
            y, yh = ctx.op("GRU", inputs, outputs=2, linear_before_reset=1, **attrs)
        else:
            act = "Tanh" if m == _rnn_modes()["RNN_TANH"] else "Relu"
            y, yh = ctx.op("RNN", inputs, outputs=2, activations=[act] * D, **attrs)
        hn.append(yh)
        # y: (T, D, B, H) -> (T, B, D*H)
        y = ctx.op("Transpose", [y], perm=[0, 2, 1, 3])
        x = ctx.op("Reshape", [y, ctx.int_list([T, B, D * H])])
    out = ctx.op("Reshape", [x, ctx.int_list([T * B, D * H])])
    h = ctx.op("Concat", hn, axis=0) if len(hn) > 1 else hn[0]
    if lstm:
        c = ctx.op("Concat", cn, axis=0) if len(cn) > 1 else cn[0]
        _MULTI[n.outputs()[0].unique] = [out, h, c]
    else:
        _MULTI[n.outputs()[0].unique] = [out, h]
    return [None]


def _rnn_modes():
    from ..nn._functional.rnn import MODES
    return MODES


def _gate_order(lstm, gru, H):
    idx = np.arange(H)
    if lstm:  # PyTorch i, f, g, o -> ONNX i, o, f, c
        return np.concatenate([idx, idx + 3 * H, idx + H, idx + 2 * H])
    if gru:  # PyTorch r, z, n -> ONNX z, r, h
        return np.concatenate([idx + H, idx, idx + 2 * H])
    return idx


_ = _C
