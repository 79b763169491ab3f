"""The fusion pass: finds maximal groups of elementwise ops in a traced graph and
describes each as a small program the code generator turns into one loop
(Note [Fusion groups]).

Note [Fusion groups]
The pass walks the graph's top block in order. A node is fusible when it is an op of
Note [Fusible ops] whose tensor inputs and output have a recorded dtype and sizes (the
tracer records them; ember.compile specializes on them, Note [Compile signatures]) and
whose result has the group's iteration shape. A node joins the group of a fusible
producer with the same shape unless that would make a cycle (a path leaving the group
and coming back through an unfused node); producers in several compatible groups merge
them. Broadcast inputs and views stay outside: the kernel reads every input through
its strides broadcast to the iteration shape (stride 0 along broadcast dimensions), so
views and expands cost nothing. Scalar constants become literals. A group of a single
node is left to eager (nothing to fuse); a group's results are the values used after
it. Where a gradient can flow, only ops with a backward rule join (``_ops.GRADS``).
"""
from __future__ import annotations

from . import _ops

_SKIP_ARGS = {"alpha"}


class Group:
    def __init__(self, shape):
        self.shape = list(shape)
        self.nodes = []  # jit nodes, in graph order
        self.id = None
        self.reduction = None  # the group's reduction node (one at most)
        self.draws = False  # holds a dropout (Note [Fused dropout])

    def __repr__(self):
        return f"Group({[n.kind for n in self.nodes]}, shape={self.shape})"


def _const(v):
    """The Python number of a constant value (a number, None, or a 0-d tensor the tracer
    recorded for a Python scalar), or raises KeyError."""
    n = v.node()
    if n.kind != "prim::Constant":
        raise KeyError
    x = n.attr("value") if n.has_attr("value") else None
    if isinstance(x, (bool, int, float)) or x is None:
        return x
    if hasattr(x, "dim") and x.dim() == 0 and not x.requires_grad and \
            str(x.device) == "cpu" and str(x.dtype).replace("ember.", "") in _ops.CTYPES:
        return x.item()
    raise KeyError


def _tensor_info(v):
    if v.type != "Tensor" or v.dtype is None or v.sizes is None:
        return None
    name = str(v.dtype).replace("ember.", "")
    if name not in _ops.CTYPES:
        return None
    return name, list(v.sizes)


def describe(node, requires_grad):
    """(op, args, out dtype) when `node` is fusible, else None. op is a dict with 'kind'
    ('unary', 'binary', 'where', 'clamp', 'cast') and 'fn' (functor) / 'name'."""
    tab = _ops.table()
    q = node.qualified_name
    if q is None or len(node.outputs()) != 1:
        return None
    out = _tensor_info(node.output(0))
    if out is None:
        return None
    ins = node.inputs()
    args = []
    op = None
    base, _, overload = q[len("aten::"):].partition(".") if q.startswith("aten::") else ("", "", "")
    if base == "round" and len(ins) == 2:  # round(x, decimals=0) is the table's round
        try:
            if _const(ins[1]) == 0:
                ins = ins[:1]
                overload = ""
        except KeyError:
            pass
    if base in tab["unary"] and len(ins) == 1 and overload in ("", "decimals"):
        op = {"kind": "unary", "name": base, "fn": tab["unary"][base][0],
              "cls": tab["unary"][base][1]}
        args = [ins[0]]
    elif overload in ("Tensor", "Scalar") and len(ins) == 2 and (
            base in tab["binary"] or (base.startswith("r") and base[1:] in tab["binary"]
                                      and overload == "Scalar")):
        rev = base not in tab["binary"]
        name = base[1:] if rev else base
        op = {"kind": "binary", "name": name, "fn": tab["binary"][name][0],
              "cls": tab["binary"][name][1]}
        args = [ins[1], ins[0]] if rev else [ins[0], ins[1]]
    elif q in ("aten::maximum", "aten::minimum", "aten::max.other", "aten::min.other") \
            and len(ins) == 2:
        name = "maximum" if "max" in q else "minimum"
        op = {"kind": "binary", "name": name, "fn": tab["binary"][name][0], "cls": "ARITH"}
        args = list(ins)
    elif base == "masked_fill" and len(ins) == 3:
        op = {"kind": "where", "name": "where"}  # masked_fill(x, m, v) = where(m, v, x)
        args = [ins[1], ins[2], ins[0]]
    elif base == "where" and len(ins) == 3:
        op = {"kind": "where", "name": "where"}
        args = list(ins)
    elif base in ("clamp", "clip", "clamp_min", "clamp_max") and len(ins) in (2, 3):
        op = {"kind": "clamp", "name": "clamp"}
        if base == "clamp_min":
            args = [ins[0], ins[1], None]
        elif base == "clamp_max":
            args = [ins[0], None, ins[1]]
        else:
            args = list(ins) + [None] * (3 - len(ins))
    elif q in _ops.CASTS:
        x = ins[0]
        if _tensor_info(x) is None:
            return None
        # the other arguments must be constants (dtype, non_blocking, copy, ...) or
        # a tensor whose dtype is the target (type_as / to.other)
        for extra in ins[1:]:
            if extra.type == "Tensor":
                continue
            if extra.node().kind != "prim::Constant":
                return None
        op = {"kind": "cast", "name": "cast"}
        args = [x]
    if op is None and q == "aten::dropout":
        return _describe_dropout(ins, out)
    if op is None and q == "aten::layer_norm" and not (requires_grad and
                                                       not _reductions_with_grad()):
        return _describe_layer_norm(ins, out)
    if op is None and base in REDUCTIONS and not (requires_grad and (
            base == "amax" or not _reductions_with_grad())):
        return _describe_reduction(node, base, ins, out)
    if op is None:
        return None
    # operands: tensors with recorded dtype/sizes, or constants (numbers / None)
    operands = []
    for a in args:
        if a is None:
            operands.append(("c", None))
            continue
        if a.type == "Tensor":
            try:
                operands.append(("c", _const(a)))
                continue
            except KeyError:
                pass
            info = _tensor_info(a)
            if info is None:
                return None
            operands.append(("t", a))
        else:
            try:
                operands.append(("c", _const(a)))
            except KeyError:
                return None
    if op["kind"] in ("unary", "binary") and any(k == "c" and x is None for k, x in operands):
        return None
    if op["kind"] == "where" and operands[0][0] != "t":
        return None
    if op["kind"] == "clamp" and any(k != "c" for k, _ in operands[1:]):
        return None  # tensor bounds stay eager
    # a gradient flows: the op needs a backward rule
    if requires_grad:
        name = op["name"]
        if op["kind"] == "unary" and UNARY_NO_GRAD_OK.get(name) is None and \
                name not in _ops.UNARY_GRADS and out[0] in _ops.FLOATING:
            return None
        if op["kind"] == "binary" and name not in _ops.BINARY_GRADS and \
                op["cls"] not in ("COMPARE", "LOGICAL", "BITS"):
            return None
    return op, operands, out


def _describe_dropout(ins, out):
    """dropout(x, p, train=True, feature=False, alpha=False, generator=None) with 0 < p < 1
    (Note [Fused dropout] in _codegen.py); other forms draw nothing or per channel and stay
    eager."""
    if len(ins) != 6 or out[0] not in _ops.FLOATING:
        return None
    try:
        p, train, feature, alpha, gen = (_const_any(v) for v in ins[1:])
    except KeyError:
        return None
    if not (isinstance(p, float) and 0 < p < 1) or train is not True or feature or alpha \
            or gen is not None:
        return None
    info = _tensor_info(ins[0])
    if info is None or info[0] != out[0]:
        return None
    return {"kind": "dropout", "name": "dropout", "p": p}, [("t", ins[0])], out


def _describe_layer_norm(ins, out):
    """layer_norm over the last dimension (Note [Fused layer_norm] in _codegen.py): a row
    reduction whose weight and bias (None, or one value per column) are read along the row.
    Where a gradient flows, only with config.fuse_reductions_with_grad, as softmax."""
    if len(ins) != 5:
        return None
    x = _tensor_info(ins[0])
    if x is None or not x[1] or x[0] not in _ops.FLOATING or out[0] != x[0]:
        return None
    try:
        shape, eps = _const_any(ins[1]), _const_any(ins[4])
    except KeyError:
        return None
    if not isinstance(shape, list) or shape != x[1][-1:] or not isinstance(eps, float):
        return None
    operands = [("t", ins[0])]
    for v in ins[2:4]:
        if v.type != "Tensor" or v.node().kind == "prim::Constant" and \
                v.node().has_attr("value") and v.node().attr("value") is None:
            operands.append(("c", None))
            continue
        info = _tensor_info(v)
        if info is None or info[0] != x[0] or info[1] != shape:
            return None
        operands.append(("t", v))
    return {"kind": "reduce", "name": "layer_norm", "keepdim": True, "in_shape": list(x[1]),
            "eps": eps}, operands, out


def random_ops():
    """Qualified names of the graph ops that draw from a generator."""
    from .. import _C
    return {name for name, _, _, eff in _C._jit_operators() if eff == "random"}


# unary ops whose result is not floating never need a rule (predicates)
UNARY_NO_GRAD_OK = {}

# Reductions over the last dimension that a group can hold (amax only where no gradient
# flows: its backward splits ties, which a row kernel does not do yet).
REDUCTIONS = ("softmax", "log_softmax", "sum", "mean", "amax", "logsumexp")


def _reductions_with_grad():
    from . import config
    return config.fuse_reductions_with_grad


def _describe_reduction(node, base, ins, out):
    x = ins[0]
    info = _tensor_info(x)
    if info is None or not info[1] or info[0] not in _ops.FLOATING or out[0] not in _ops.FLOATING:
        return None
    nd = len(info[1])
    try:
        consts = [_const_any(v) for v in ins[1:]]
    except KeyError:
        return None
    if base in ("softmax", "log_softmax"):
        dim = consts[0]
        if not isinstance(dim, int) or dim % nd != nd - 1:
            return None
        keep = True
    else:
        dims = consts[0]
        if isinstance(dims, int):
            dims = [dims]
        if dims is None or len(dims) != 1 or dims[0] % nd != nd - 1:
            return None
        keep = bool(consts[1]) if len(consts) > 1 else False
    op = {"kind": "reduce", "name": base, "keepdim": keep, "in_shape": list(info[1])}
    return op, [("t", x)], out


def _const_any(v):
    n = v.node()
    if n.kind != "prim::Constant":
        raise KeyError
    x = n.attr("value") if n.has_attr("value") else None
    if isinstance(x, (list, tuple)):
        return list(x)
    return x


def find_groups(graph, rg_values):
    """The fusion groups of `graph`'s top block. rg_values: set of values a gradient may
    flow through (requires_grad propagated from the inputs)."""
    nodes = graph.nodes()
    group_of = {}  # node -> Group
    desc = {}
    # ancestors[v] = set of ids of groups v depends on (through any path)
    anc = {}
    groups = []
    mutating = set()
    from .. import _C
    for name, _, _, eff in _C._jit_operators():
        if eff == "mutates":
            mutating.add(name)
    randoms = random_ops()

    def deps(v):
        return anc.get(v, frozenset())

    for n in nodes:
        rg = any(i in rg_values for i in n.inputs())
        d = None if n.blocks() else describe(n, rg)
        my_anc = set()
        for i in n.inputs():
            my_anc |= deps(i)
            if i.node() in group_of:
                my_anc.add(id(group_of[i.node()]))
        if d is None:
            for o in n.outputs():
                anc[o] = frozenset(my_anc)
            if n.qualified_name in randoms:
                # draws come in graph order: no later node joins a group that draws
                for gr in groups:
                    if gr.draws:
                        gr.closed = True
            if n.qualified_name in mutating:
                # a write: groups before it must not absorb nodes after it
                for gr in groups:
                    gr.closed = True
            continue
        op, operands, out = d
        desc[n] = d
        is_red = op["kind"] == "reduce"
        shape = op["in_shape"] if is_red else out[1]
        # candidate groups: those of fusible producers with the same shape
        cands = []
        for kind, v in operands:
            if kind != "t":
                continue
            p = v.node()
            g = group_of.get(p)
            if g is not None and g.shape == shape and not getattr(g, "closed", False) \
                    and g not in cands and not (is_red and g.reduction is not None):
                cands.append(g)
        if not cands:
            # horizontal fusion: an open group of the same shape that reads one of n's
            # inputs (the input is then read once for both)
            mine = {v for kind, v in operands if kind == "t"}
            for g in reversed(groups):
                if g.shape == shape and not getattr(g, "closed", False) and \
                        g.reduction is None and any(
                        i in mine for m in g.nodes for i in m.inputs()):
                    cands.append(g)
                    break
        # merging is legal when no input of n reaches a candidate through an unfused path
        ok = []
        for g in cands:
            bad = False
            for kind, v in operands:
                if kind == "t" and group_of.get(v.node()) is not g and id(g) in deps(v):
                    bad = True
            if not bad:
                ok.append(g)
        if ok:
            g = ok[0]
            for other in ok[1:]:
                if other.reduction is not None and g.reduction is not None:
                    continue
                # merge other into g (both precede n; they are independent of each other
                # through unfused paths only if neither depends on the other)
                if id(other) in _group_anc(g, anc, group_of) or \
                        id(g) in _group_anc(other, anc, group_of):
                    continue
                if g.draws and other.draws:
                    continue  # their draws would need an order between them
                g.reduction = g.reduction or other.reduction
                g.draws = g.draws or other.draws
                for m in other.nodes:
                    group_of[m] = g
                g.nodes = sorted(g.nodes + other.nodes, key=lambda m: nodes.index(m))
                groups.remove(other)
                for v, s in list(anc.items()):
                    if id(other) in s:
                        anc[v] = frozenset((s - {id(other)}) | {id(g)})
                my_anc.discard(id(other))
        else:
            g = Group(shape)
            groups.append(g)
        if is_red:
            g.reduction = n
        if op["kind"] == "dropout":
            for gr in groups:  # another group's draws come before this one's
                if gr is not g and gr.draws:
                    gr.closed = True
            g.draws = True
        g.nodes.append(n)
        group_of[n] = g
        my_anc.discard(id(g))
        for o in n.outputs():
            anc[o] = frozenset(my_anc)
    result = []
    for g in groups:
        if len(g.nodes) < 2 and not g.draws:  # a lone dropout still saves two passes
            continue
        g.desc = [desc[n] for n in g.nodes]
        result.append(g)
    return result


def _group_anc(g, anc, group_of):
    s = set()
    for n in g.nodes:
        for i in n.inputs():
            if group_of.get(i.node()) is not g:
                s |= anc.get(i, frozenset())
    return s


def requires_grad_values(graph, input_flags):
    """Values a gradient may flow through, from the graph inputs' requires_grad flags
    (parameters read through GetAttr and tensor constants count as requiring grad when
    they do)."""
    rg = set()
    for v, f in zip(graph.inputs(), input_flags):
        if f:
            rg.add(v)
    for n in graph.nodes():
        flows = any(i in rg for i in n.inputs())
        if n.kind == "prim::GetAttr":
            flows = True
        elif n.kind == "prim::Constant" and n.has_attr("value"):
            try:
                val = n.attr("value")
                flows = bool(getattr(val, "requires_grad", False))
            except Exception:
                flows = False
        if flows:
            for o in n.outputs():
                rg.add(o)
    return rg
