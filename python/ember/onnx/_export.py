"""ember.onnx.export: traced graph -> ONNX model (see the package docstring)."""
from __future__ import annotations

import io
import os
import warnings

import numpy as np

from .. import _C

_EXPORTING = False

_ONNX_DTYPE = {"float32": 1, "uint8": 2, "int8": 3, "int16": 5, "int32": 6, "int64": 7,
               "bool": 9, "float16": 10, "float64": 11, "bfloat16": 16}


class UnsupportedOperatorError(RuntimeError):
    """An op of the graph has no ONNX mapping (torch.onnx.errors.UnsupportedOperatorError)."""


def _dtype_name(dt):
    return str(dt).rpartition(".")[2]


def _np(t):
    """A tensor's values as a NumPy array (bfloat16 kept as float32 in ONNX initializers)."""
    t = t.detach().cpu().contiguous()
    if _dtype_name(t.dtype) == "bfloat16":
        t = t.float()
    return t.numpy().copy()


class Ctx:
    """What the symbolic functions build on: names of ONNX values, constants known while
    exporting, the nodes and initializers written so far."""

    def __init__(self, opset):
        import onnx.helper
        self.helper = onnx.helper
        self.numpy_helper = __import__("onnx.numpy_helper", fromlist=["x"])
        self.opset = opset
        self.nodes = []
        self.initializers = []
        self.names = {}     # graph value unique -> ONNX name
        self.consts = {}    # graph value unique -> Python value
        self.lists = {}     # graph value unique -> list of (const | value) items
        self.tuples = {}    # graph value unique -> list of graph values
        self.dtypes = {}    # ONNX name -> ember dtype name (when known)
        self.counter = 0
        self.ranks = {}     # ONNX name -> rank (when known)

    def fresh(self, base="t"):
        self.counter += 1
        return f"{base}_{self.counter}"

    # ---- values ----
    def is_const(self, v):
        return v.unique in self.consts

    def const(self, v):
        return self.consts[v.unique]

    def add_const_tensor(self, array, base="const"):
        name = self.fresh(base)
        self.initializers.append(self.numpy_helper.from_array(np.asarray(array), name))
        self.dtypes[name] = str(np.asarray(array).dtype)
        return name

    def name(self, v, like=None):
        """The ONNX name of a tensor input; constants become initializers (numbers take the
        dtype of `like`, as a Python scalar does in the op)."""
        if v.unique in self.names:
            return self.names[v.unique]
        if v.unique in self.consts:
            c = self.consts[v.unique]
            if isinstance(c, _C.Tensor):
                arr = _np(c)
                if c.dim() == 0 and like is not None and like in self.dtypes:
                    arr = arr.astype(self.dtypes[like])
                n = self.add_const_tensor(arr, "const")
                if c.dim() > 0:
                    self.names[v.unique] = n
                return n
            if isinstance(c, (bool, int, float)):
                dt = self.dtypes.get(like, "float32") if like is not None else \
                    ("int64" if isinstance(c, int) and not isinstance(c, bool) else "float32")
                return self.add_const_tensor(np.array(c, dtype=dt), "scalar")
            if isinstance(c, (list, tuple)) and all(isinstance(x, int) for x in c):
                return self.add_const_tensor(np.array(c, dtype=np.int64), "ints")
            raise UnsupportedOperatorError(f"ember.onnx.export: the constant {c!r} cannot be an "
                                           "ONNX tensor input")
        if v.unique in self.lists:
            return self.int_list(self.lists[v.unique])
        raise UnsupportedOperatorError(f"ember.onnx.export: value %{v.name} was not exported")

    def int_list(self, items):
        """A 1-d int64 tensor from a list of constants and int values (dynamic shapes)."""
        if all(not hasattr(i, "unique") for i in items):
            return self.add_const_tensor(np.array(items, dtype=np.int64), "ints")
        parts = []
        for i in items:
            if hasattr(i, "unique") and i.unique not in self.consts:
                parts.append(self.op("Unsqueeze", [self.names[i.unique],
                                                   self.add_const_tensor(np.array([0]), "axes")]))
            else:
                c = self.consts[i.unique] if hasattr(i, "unique") else i
                parts.append(self.add_const_tensor(np.array([c], dtype=np.int64), "ints"))
        return self.op("Concat", parts, axis=0)

    def int_items(self, v):
        """The items of an int list value (constants or graph values)."""
        if v.unique in self.consts:
            return list(self.consts[v.unique])
        if v.unique in self.lists:
            return self.lists[v.unique]
        return None

    def op(self, op_type, inputs, outputs=1, dtype=None, **attrs):
        outs = [self.fresh(op_type.lower()) for _ in range(outputs)]
        self.nodes.append(self.helper.make_node(op_type, inputs, outs, **attrs))
        if dtype is not None:
            for o in outs:
                self.dtypes[o] = dtype
        elif inputs and inputs[0] in self.dtypes:
            for o in outs:
                self.dtypes.setdefault(o, self.dtypes[inputs[0]])
        return outs[0] if outputs == 1 else outs

    def bind(self, v, name, dtype=None):
        self.names[v.unique] = name
        if dtype is not None:
            self.dtypes[name] = dtype
        elif v.dtype is not None:
            self.dtypes.setdefault(name, _dtype_name(v.dtype))


_DATA_GUARDS = ("prim::GuardTensorBool", "prim::GuardItem", "prim::GuardValues")


def _drop_guards(g):
    """Removes the trace's guards (an ONNX graph has no way to raise): the shape guards
    become the exported model's fixed sizes, as PyTorch's export specializes them; a guard
    on tensor values (a data-dependent branch) is named in a warning, since the exported
    model always takes the traced path. The int ops that only fed guards go with DCE."""
    from ..jit import TracerWarning
    for n in list(g.nodes()):
        if n.kind.startswith("prim::Guard"):
            if n.kind in _DATA_GUARDS:
                what = n.attr("what") if n.has_attr("what") else n.kind
                warnings.warn(f"ember.onnx.export: the traced model depended on tensor values "
                              f"({what}, at {n.source}); the exported graph always takes the "
                              "path the example inputs took", TracerWarning, stacklevel=3)
            n.destroy()
    _C._jit_pass_dce(g)


def _fold_tuples(g):
    """TupleUnpack/ListUnpack of a TupleConstruct/ListConstruct (a submodule's result after
    inlining) reads the constructed values directly, so nested tuples leave the graph."""
    pairs = {"prim::TupleUnpack": "prim::TupleConstruct", "prim::ListUnpack": "prim::ListConstruct"}
    changed = True
    while changed:
        changed = False
        for n in g.nodes():
            want = pairs.get(n.kind)
            if want is None:
                continue
            src = n.inputs()[0].node()
            if src.kind == want and len(src.inputs()) == len(n.outputs()):
                for o, i in zip(n.outputs(), src.inputs()):
                    o.replace_all_uses_with(i)
                changed = True
        _C._jit_pass_dce(g)


def _graph_for(model, args, training):
    import ember
    from ember import jit
    mode = None
    if isinstance(model, ember.nn.Module):
        mode = model.training
        if training is None or int(training) == 0:
            model.train(False)
        elif int(training) == 2:
            model.train(True)
    try:
        if isinstance(model, jit.ScriptFunction):
            g = model.graph.copy()
            _drop_guards(g)
            _C._jit_pass_optimize(g)
            return g, False
        traced = model if isinstance(model, jit.ScriptModule) and getattr(model, "_c", None) \
            is not None else jit.trace(model, args, check_trace=False)
        if isinstance(traced, jit.ScriptFunction):
            g = traced.graph.copy()
            _drop_guards(g)
            _C._jit_pass_optimize(g)
            return g, False
        traced._sync_to_c()
        g = traced._c.inlined_graph("forward")
        _C._jit_pass_freeze(g, traced._c)
        _drop_guards(g)
        _fold_tuples(g)
        _C._jit_pass_optimize(g)
        return g, True
    finally:
        if mode is not None:
            model.train(mode)


def export(model, args, f=None, export_params=True, verbose=False, training=None,
           input_names=None, output_names=None, operator_export_type=None, opset_version=None,
           do_constant_folding=True, dynamic_axes=None, keep_initializers_as_inputs=None,
           custom_opsets=None, export_modules_as_functions=False, autograd_inlining=True,
           dynamo=False, **kwargs):
    """Exports ``model`` run on ``args`` to an ONNX file (torch.onnx.export). ``args`` is a
    tensor or a tuple of inputs; ``dynamic_axes`` ({name: {axis: "name"} or [axes]})
    marks input/output dimensions as symbolic."""
    global _EXPORTING
    try:
        import onnx
        import onnx.checker
    except ImportError as e:  # pragma: no cover - onnx is a test dependency
        raise ImportError("ember.onnx.export needs the 'onnx' package (pip install onnx)") from e
    from . import _symbolics
    opset = opset_version or 17
    if opset < 13:
        raise ValueError(f"ember.onnx.export supports opset_version >= 13, got {opset}")
    if isinstance(args, _C.Tensor):
        args = (args,)
    args = tuple(args)
    if args and isinstance(args[-1], dict):
        if args[-1]:
            raise ValueError("ember.onnx.export: keyword inputs are not supported")
        args = args[:-1]
    _EXPORTING = True
    try:
        graph, is_method = _graph_for(model, args, training)
    finally:
        _EXPORTING = False
    ctx = Ctx(opset)
    g_inputs = graph.inputs()[1:] if is_method else graph.inputs()
    flat_args = []
    for a in args:
        flat_args += list(a) if isinstance(a, (tuple, list)) else [a]
    onnx_inputs = []
    names = list(input_names or [])
    dyn = dynamic_axes or {}
    k = 0
    for v in g_inputs:
        if v.type.startswith("(") or v.type.endswith("[]"):
            # a tuple of tensors: one ONNX input per element
            node_items = [u for u in v.uses()]
            n_elems = len(v.type.strip("()").split(","))
            elems = []
            for _j in range(n_elems):
                t = flat_args[k]
                nm = names[k] if k < len(names) else f"input.{k}"
                onnx_inputs.append(_value_info(ctx, nm, t, dyn.get(nm)))
                ctx.dtypes[nm] = _dtype_name(t.dtype)
                elems.append(nm)
                k += 1
            ctx.tuples[v.unique] = elems
            del node_items
            continue
        t = flat_args[k]
        nm = names[k] if k < len(names) else f"input.{k}"
        onnx_inputs.append(_value_info(ctx, nm, t, dyn.get(nm)))
        ctx.bind(v, nm, _dtype_name(t.dtype))
        k += 1
    for n in graph.nodes():
        _symbolics.convert(ctx, n)
    outs = graph.outputs()
    flat_out = []
    ranks = {}
    for o in outs:
        if o.unique in ctx.tuples:
            flat_out += ctx.tuples[o.unique]
        else:
            flat_out.append(ctx.name(o))
            if _rank(o.type) is not None:
                ranks[flat_out[-1]] = _rank(o.type)
    onames = list(output_names or [])
    inferred = _inferred_ranks(ctx, onnx_inputs, flat_out, export_params, opset)
    for nm, r in inferred.items():
        ranks.setdefault(nm, r)
    onnx_outputs = []
    for j, nm in enumerate(flat_out):
        want = onames[j] if j < len(onames) else f"output.{j}" if j else "output"
        if nm != want:
            ctx.nodes.append(ctx.helper.make_node("Identity", [nm], [want]))
            ctx.dtypes[want] = ctx.dtypes.get(nm, "float32")
        elem = _ONNX_DTYPE.get(ctx.dtypes.get(want, "float32"), 1)
        # The rank is known; the sizes are left to shape inference (they may follow a
        # dynamic input axis), named where dynamic_axes names them.
        rank = ranks.get(nm, ranks.get(want))
        if rank is None:
            rank = ctx.ranks.get(nm)
        shape = [None] * rank if rank is not None else None
        axes = dyn.get(want)
        if axes and shape is not None:
            items = axes.items() if isinstance(axes, dict) else ((a, f"{want}_dim{a}") for a in axes)
            for a, sym in items:
                shape[a] = sym
        onnx_outputs.append(ctx.helper.make_tensor_value_info(want, elem, shape))
    gp = ctx.helper.make_graph(ctx.nodes, "ember_graph", onnx_inputs, onnx_outputs,
                               initializer=ctx.initializers if export_params else [])
    m = ctx.helper.make_model(gp, opset_imports=[ctx.helper.make_opsetid("", opset)],
                              producer_name="ember", producer_version="0.1.0")
    m.ir_version = min(m.ir_version, 8)
    onnx.checker.check_model(m)
    if verbose:
        print(onnx.helper.printable_graph(m.graph))
    if f is None:
        return m
    if isinstance(f, (str, os.PathLike)):
        onnx.save(m, os.fspath(f))
    elif isinstance(f, io.IOBase) or hasattr(f, "write"):
        f.write(m.SerializeToString())
    return None


def _inferred_ranks(ctx, onnx_inputs, names, export_params, opset):
    """The ranks ONNX shape inference finds for the values ``names`` (graph outputs whose
    traced type carries no sizes)."""
    import onnx
    h = ctx.helper
    outs = [h.make_empty_tensor_value_info(n) for n in names]
    gp = h.make_graph(list(ctx.nodes), "ranks", onnx_inputs, outs,
                      initializer=ctx.initializers if export_params else [])
    m = h.make_model(gp, opset_imports=[h.make_opsetid("", opset)])
    try:
        m = onnx.shape_inference.infer_shapes(m)
    except Exception:  # noqa: BLE001 - ranks stay unknown, the checker says what is wrong
        return {}
    found = {}
    for vi in list(m.graph.value_info) + list(m.graph.output):
        t = vi.type.tensor_type
        if t.HasField("shape"):
            found[vi.name] = len(t.shape.dim)
    return found


def _rank(type_str):
    """The rank a traced tensor type records ("Float(3, 16)" -> 2, "Float()" -> 0), or None."""
    if "(" not in type_str or not type_str[:1].isupper() or type_str.startswith("("):
        return None
    inner = type_str[type_str.index("(") + 1:type_str.rindex(")")].strip()
    return 0 if not inner else len(inner.split(","))


def _value_info(ctx, name, t, axes):
    shape = list(t.shape)
    if axes:
        items = axes.items() if isinstance(axes, dict) else ((a, f"{name}_dim{a}") for a in axes)
        for a, sym in items:
            shape[a] = sym
    return ctx.helper.make_tensor_value_info(name, _ONNX_DTYPE[_dtype_name(t.dtype)], shape)


_ = warnings
