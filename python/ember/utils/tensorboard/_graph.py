"""add_graph: one forward pass recorded through module hooks, as a TensorBoard GraphDef.

Every module call opens a name scope (``Net/Sequential[features]/Conv2d[0]``); a leaf
module becomes an op node named after its class inside its scope. Tensor operations done
between modules (``F.relu(x)``, ``x.view(...)``) are found by walking the autograd graph
back from a module's inputs to the outputs already recorded, and become op nodes named
after their autograd node (``ReluBackward0`` -> ``Relu``). Each node carries its output
shapes as ``_output_shapes``.
"""
from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef

import ember


def _tensors(x):
    if isinstance(x, ember.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensors(v)]
    return []


def _shape_attr(tensors):
    shapes = [TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(s)) for s in t.shape]) for t in tensors]
    return AttrValue(list=AttrValue.ListValue(shape=shapes))


class _Recorder:
    def __init__(self, root):
        self.nodes = []  # NodeDef, in creation order
        self.names = set()
        self.by_tensor = {}  # id(tensor) -> node name (tensors kept alive in self.keep)
        self.by_fn = {}      # autograd node -> node name
        self.keep = []
        self.scope = [type(root).__name__]
        self.module_names = {id(m): n for n, m in root.named_modules()}

    def unique(self, name):
        base, i = name, 1
        while name in self.names:
            i += 1
            name = f"{base}_{i}"
        self.names.add(name)
        return name

    def add(self, name, op, inputs, outputs, **attrs):
        name = self.unique(name)
        node = NodeDef(name=name, op=op, input=inputs)
        node.attr["_output_shapes"].CopyFrom(_shape_attr(outputs))
        for k, v in attrs.items():
            node.attr[k].CopyFrom(AttrValue(s=str(v).encode()))
        self.nodes.append(node)
        for t in outputs:
            self.keep.append(t)
            self.by_tensor[id(t)] = name
            fn = getattr(t, "grad_fn", None)
            if fn is not None:
                self.by_fn[fn] = name
        return name

    def source(self, t):
        """The node producing tensor `t` (creating op nodes for untracked tensor ops)."""
        name = self.by_tensor.get(id(t))
        if name is not None:
            return name
        fn = getattr(t, "grad_fn", None)
        if fn is not None:
            return self._fn_node(fn, t)
        return self.add(f"{'/'.join(self.scope)}/Constant", "prim::Constant", [], [t])

    def _fn_node(self, fn, out=None):
        name = self.by_fn.get(fn)
        if name is not None:
            return name
        inputs = []
        for nxt, _ in getattr(fn, "next_functions", ()):
            if nxt is None or type(nxt).__name__ == "AccumulateGrad" or nxt.name() == "AccumulateGrad":
                continue
            inputs.append(self._fn_node(nxt))
        op = fn.name()
        short = op[:-len("Backward0")] if op.endswith("Backward0") else op
        node = NodeDef(name=self.unique(f"{'/'.join(self.scope)}/{short}"), op=short, input=inputs)
        if out is not None:
            node.attr["_output_shapes"].CopyFrom(_shape_attr([out]))
        self.nodes.append(node)
        self.by_fn[fn] = node.name
        return node.name


def build_graph(model, args):
    """Runs ``model(*args)`` once under hooks and returns its GraphDef."""
    if not isinstance(args, (list, tuple)):
        args = (args,)
    rec = _Recorder(model)
    for i, t in enumerate(_tensors(args)):
        rec.add(f"input/input.{i}", "IO Node", [], [t])
    handles, stack = [], []

    def pre(mod, inputs):
        attr = rec.module_names.get(id(mod), "")
        if mod is not model:
            rec.scope.append(f"{type(mod).__name__}[{attr.rsplit('.', 1)[-1]}]")
        stack.append([rec.source(t) for t in _tensors(inputs)])

    def post(mod, inputs, output):
        srcs = stack.pop()
        if not any(True for _ in mod.children()):
            rec.add(f"{'/'.join(rec.scope)}/{type(mod).__name__}", type(mod).__name__, srcs,
                    _tensors(output), module=rec.module_names.get(id(mod), ""))
        if mod is not model:
            rec.scope.pop()

    for _, m in model.named_modules():
        handles.append(m.register_forward_pre_hook(pre))
        handles.append(m.register_forward_hook(post))
    try:
        with ember.enable_grad():
            out = model(*args)
    finally:
        for h in handles:
            h.remove()
    for i, t in enumerate(_tensors(out)):
        rec.add(f"output/output.{i}", "IO Node", [rec.source(t)], [t])
    return GraphDef(node=rec.nodes, versions=VersionDef(producer=22))
