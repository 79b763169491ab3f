"""Render a result's backward graph: Graphviz dot text, and SVG/PNG where the
``dot`` program is installed (for notebooks)."""
import shutil
import subprocess

from .. import _C


def _label(node):
    name = node.name()
    if name == "AccumulateGrad":
        v = node.variable
        if v is not None:
            return f"AccumulateGrad\\n{tuple(v.shape)}"
    return name


def to_dot(tensor, name="output"):
    """The backward graph of ``tensor`` as Graphviz dot text. Leaves show their shapes."""
    if not isinstance(tensor, _C.Tensor):
        raise TypeError(f"to_dot expects a Tensor, got {type(tensor).__name__}")
    lines = ["digraph backward {", '  node [shape=box, fontname="monospace"];']
    root = tensor.grad_fn
    lines.append(f'  out [label="{name}\\n{tuple(tensor.shape)}", style=filled, fillcolor=lightblue];')
    if root is None:
        lines.append("}")
        return "\n".join(lines)
    ids = {}
    stack = [root]
    ids[root] = "n0"
    lines.append(f'  n0 [label="{_label(root)}"];')
    lines.append("  n0 -> out;")
    while stack:
        n = stack.pop()
        for nxt, _ in n.next_functions:
            if nxt is None:
                continue
            if nxt not in ids:
                ids[nxt] = f"n{len(ids)}"
                style = ", style=filled, fillcolor=lightgrey" if nxt.name() == "AccumulateGrad" else ""
                lines.append(f'  {ids[nxt]} [label="{_label(nxt)}"{style}];')
                stack.append(nxt)
            lines.append(f"  {ids[nxt]} -> {ids[n]};")
    lines.append("}")
    return "\n".join(lines)


class _Rendered:
    """Displays as SVG in notebooks when Graphviz is installed, else as dot text."""

    def __init__(self, dot):
        self.source = dot

    def _repr_svg_(self):
        exe = shutil.which("dot")
        if exe is None:
            return None
        return subprocess.run([exe, "-Tsvg"], input=self.source.encode(), capture_output=True,
                              check=True).stdout.decode()

    def __repr__(self):
        return self.source

    def save(self, path, fmt=None):
        """Writes ``path`` (.dot, .svg or .png; the latter two need Graphviz's ``dot``)."""
        fmt = fmt or path.rsplit(".", 1)[-1]
        if fmt == "dot":
            with open(path, "w") as f:
                f.write(self.source)
            return path
        exe = shutil.which("dot")
        if exe is None:
            raise RuntimeError("rendering to {fmt} needs Graphviz's `dot` program; "
                               "save as .dot or install graphviz")
        subprocess.run([exe, f"-T{fmt}", "-o", path], input=self.source.encode(), check=True)
        return path


def draw(tensor, name="output"):
    """The backward graph of ``tensor``, rendered inline in notebooks."""
    return _Rendered(to_dot(tensor, name))


# ---- node types (Note [Node types] in csrc/ember/python/autograd.cpp) ----
import abc as _abc  # noqa: E402


class Node(_abc.ABC):  # noqa: B024  (an isinstance target, as torch.autograd.graph.Node)
    """The base of every backward-graph node type: ``isinstance(y.grad_fn, Node)``.
    Each node kind is its own subclass of ``_C._Node`` named as in PyTorch."""

    @classmethod
    def __subclasshook__(cls, C):
        if cls is Node and issubclass(C, _C._Node):
            return True
        return NotImplemented


Node.register(_C._Node)

# The names PyTorch gives the saved tensors of common nodes, in save order.
_SAVED_NAMES = {
    "MulBackward0": ("_saved_self", "_saved_other"),
    "DivBackward0": ("_saved_self", "_saved_other"),
    "PowBackward0": ("_saved_self", "_saved_exponent"),
    "PowBackward1": ("_saved_self", "_saved_exponent"),
    "PowBackward2": ("_saved_self", "_saved_exponent"),
    "Atan2Backward0": ("_saved_self", "_saved_other"),
    "MaximumBackward0": ("_saved_self", "_saved_other"),
    "MinimumBackward0": ("_saved_self", "_saved_other"),
    "RemainderBackward1": ("_saved_self", "_saved_other"),
    "FmodBackward1": ("_saved_self", "_saved_other"),
    "WhereBackward0": ("_saved_condition",),
}
_RESULT_SAVERS = None


def _result_savers():
    """Unary formula nodes that save their result (from the derivative table,
    csrc/ember/autograd/derivatives/elementwise.def); the others save their input."""
    global _RESULT_SAVERS
    if _RESULT_SAVERS is None:
        table = _C._op_table()["unary_autograd"]
        _RESULT_SAVERS = frozenset(node for node, saves in table.values() if saves == "result")
    return _RESULT_SAVERS


def _saved_names(node):
    name = type(node).__name__
    if name in _SAVED_NAMES:
        return _SAVED_NAMES[name]
    if name in _result_savers():
        return ("_saved_result",)
    return ("_saved_self",)


def _node_getattr(self, attr):
    if attr.startswith("_saved_"):
        names = _saved_names(self)
        if attr in names:
            values = self._saved_values()
            i = names.index(attr)
            if i < len(values):
                return values[i]
    raise AttributeError(f"'{type(self).__name__}' object has no attribute '{attr}'")


_C._Node.__getattr__ = _node_getattr
