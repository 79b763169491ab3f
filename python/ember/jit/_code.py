"""``.code``: a graph printed as Python-like source, as TorchScript's ``.code`` shows it
(single-use pure values are folded into the expression that uses them)."""
from __future__ import annotations

import keyword
import re

_PURE_PRIMS = {"prim::Constant", "prim::GetAttr", "prim::ListConstruct", "prim::TupleConstruct",
               "prim::TupleIndex", "prim::unchecked_cast", "prim::NumToTensor"}
_INFIX = {"aten::add.int": "+", "aten::sub.int": "-", "aten::mul.int": "*",
          "aten::floordiv.int": "//", "aten::remainder.int": "%", "aten::add.float": "+",
          "aten::sub.float": "-", "aten::mul.float": "*", "aten::div.float": "/",
          "aten::eq.int": "==", "aten::ne.int": "!=", "aten::lt.int": "<", "aten::le.int": "<=",
          "aten::gt.int": ">", "aten::ge.int": ">=", "aten::__and__.bool": "and",
          "aten::__or__.bool": "or"}


def _literal(v):
    import ember
    if isinstance(v, ember.Tensor):
        if v.dim() == 0:
            return f"ember.tensor({v.item()!r})"
        return "CONSTANTS.c"  # a tensor constant, as TorchScript shows it
    if isinstance(v, ember.dtype):
        return str(v)
    if isinstance(v, ember.device):
        return f'ember.device("{v}")'
    if isinstance(v, str):
        return repr(v).replace("'", '"')
    return repr(v)


class _Printer:
    def __init__(self):
        self.names = {}
        self.used = set()
        self.lines = []
        self.inline = {}
        self.const_tensors = 0

    def name(self, v, like=None):
        """The printed name of ``v``; an unnamed value takes ``like``'s name (a loop's or
        if's result is named after the variable it carries)."""
        key = v.unique
        if key in self.names:
            return self.names[key]
        base = v.name if v.has_name else (like.name if like is not None and like.has_name else "")
        base = re.sub(r"\.\d+$", "", base)
        base = re.sub(r"[^A-Za-z0-9_]", "_", base)
        if not base or base[0].isdigit() or keyword.iskeyword(base):
            base = "_" + (base or "")
        cand = base if base != "_" else "_0"
        i = 0
        while cand in self.used:
            cand = f"{base}{i}"
            i += 1
        self.used.add(cand)
        self.names[key] = cand
        return cand

    def expr(self, v):
        if v.unique in self.inline:
            return self.inline[v.unique]
        return self.name(v)

    def node_expr(self, n):
        kind = n.kind
        ins = [self.expr(v) for v in n.inputs()]
        if kind == "prim::Constant":
            v = n.attr("value")
            import ember
            if isinstance(v, ember.Tensor) and v.dim() > 0:
                c = f"CONSTANTS.c{self.const_tensors}"
                self.const_tensors += 1
                return c
            return _literal(v)
        if kind == "prim::GetAttr":
            attr = n.attr("name")
            if attr.isidentifier() and not keyword.iskeyword(attr):
                return f"{ins[0]}.{attr}"
            return f'getattr({ins[0]}, "{attr}")'
        if kind == "prim::ListConstruct":
            return "[" + ", ".join(ins) + "]"
        if kind == "prim::TupleConstruct":
            return "(" + ", ".join(ins) + ("," if len(ins) == 1 else "") + ")"
        if kind == "prim::TupleIndex":
            return f"{ins[0]}[{n.attr('index')}]"
        if kind == "prim::unchecked_cast":
            return f"unchecked_cast({ins[0]})"
        if kind == "prim::CallMethod":
            return f"({ins[0]}).{n.attr('name')}({', '.join(ins[1:])}, )"
        q = n.qualified_name
        if q in _INFIX:
            op = _INFIX[q]
            return f"({ins[0]} {op} {ins[1]})" if op not in ("and", "or") else f"({ins[0]} {op} {ins[1]})"
        if q is not None:
            ns, name = n.kind.split("::")
            prefix = "torch" if ns == "aten" else ns
            return f"{prefix}.{name}({', '.join(ins)})"
        return f"{kind}({', '.join(ins)})"

    def emit(self, line, indent):
        self.lines.append("    " * indent + line)

    def block(self, nodes, indent):
        for n in nodes:
            self.node(n, indent)

    def node(self, n, indent):
        kind = n.kind
        outs = n.outputs()
        if kind == "prim::If":
            names = [self.name(o, like=r) for o, r in zip(outs, n.blocks()[0].outputs())]
            self.emit(f"if {self.expr(n.inputs()[0])}:", indent)
            for bi, b in enumerate(n.blocks()):
                if bi == 1:
                    self.emit("else:", indent)
                start = len(self.lines)
                self.block(b.nodes(), indent + 1)
                for name, v in zip(names, b.outputs()):
                    self.emit(f"{name} = {self.expr(v)}", indent + 1)
                if len(self.lines) == start:
                    self.emit("pass", indent + 1)
            return
        if kind == "prim::Loop":
            trips, cond, *init = n.inputs()
            b = n.blocks()[0]
            names = [self.name(o, like=p) for o, p in zip(outs, b.inputs()[1:])]
            for name, v in zip(names, init):
                e = self.expr(v)
                if e != name:
                    self.emit(f"{name} = {e}", indent)
            params = b.inputs()
            self.names[params[0].unique] = self.name(params[0])
            for p, name in zip(params[1:], names):
                self.names[p.unique] = name
            cond_e = self.expr(cond)
            if cond_e == "True":
                self.emit(f"for {self.names[params[0].unique]} in range({self.expr(trips)}):", indent)
            else:
                self.emit(f"while {cond_e}:  # at most {self.expr(trips)} times", indent)
            start = len(self.lines)
            self.block(b.nodes(), indent + 1)
            for name, v in zip(names, b.outputs()[1:]):
                e = self.expr(v)
                if e != name:
                    self.emit(f"{name} = {e}", indent + 1)
            if len(self.lines) == start:
                self.emit("pass", indent + 1)
            return
        if kind == "prim::RaiseException":
            exc = n.attr("exception") if n.has_attr("exception") else "RuntimeError"
            self.emit(f"raise {exc}({self.expr(n.inputs()[0])})", indent)
            return
        if kind.startswith("prim::Guard"):
            what = n.attr("what") if n.has_attr("what") else ""
            val = _literal(n.attr("value")) if n.has_attr("value") else ""
            self.emit(f"ember.jit._guard({self.expr(n.inputs()[0])}, {val})"
                      f"  # {what}" + (f" ({n.source})" if n.source else ""), indent)
            return
        if kind in ("prim::TupleUnpack", "prim::ListUnpack"):
            names = [self.name(o) for o in outs]
            self.emit(", ".join(names) + (", " if len(names) == 1 else "") +
                      f" = {self.expr(n.inputs()[0])}", indent)
            return
        if kind == "prim::Print":
            self.emit(f"print({', '.join(self.expr(v) for v in n.inputs())})", indent)
            return
        if kind == "prim::SetAttr":
            a, v = n.inputs()
            self.emit(f"{self.expr(a)}.{n.attr('name')} = {self.expr(v)}", indent)
            return
        e = self.node_expr(n)
        if len(outs) == 1 and outs[0].num_uses == 1 and (kind in _PURE_PRIMS or
                                                           n.qualified_name is not None):
            self.inline[outs[0].unique] = e
            return
        if len(outs) == 1 and kind == "prim::Constant":
            self.inline[outs[0].unique] = e
            return
        if not outs:
            self.emit(e, indent)
        elif len(outs) == 1:
            if outs[0].num_uses == 0:
                self.emit(e, indent)
            else:
                self.emit(f"{self.name(outs[0])} = {e}", indent)
        else:
            self.emit(", ".join(self.name(o) for o in outs) + f" = {e}", indent)


def _render(graph, name, is_method):
    p = _Printer()
    ins = graph.inputs()
    params = []
    for i, v in enumerate(ins):
        n = p.name(v)
        if is_method and i == 0:
            p.names[v.unique] = "self"
            params.append("self")
        else:
            params.append(f"{n}: {v.type}")
    body_start = len(p.lines)
    p.block(graph.nodes(), 1)
    outs = graph.outputs()
    ret_t = outs[0].type if len(outs) == 1 else "Tuple[" + ", ".join(o.type for o in outs) + "]"
    p.emit("return " + ", ".join(p.expr(o) for o in outs), 1)
    del body_start
    if is_method and len(params) > 1:
        sep = ",\n" + " " * (len(f"def {name}("))
        head = f"def {name}(" + sep.join(params) + f") -> {ret_t}:"
    else:
        head = f"def {name}(" + ", ".join(params) + f") -> {ret_t}:"
    return head + "\n" + "\n".join(p.lines) + "\n"


def function_code(graph, name):
    return _render(graph, name, False)


def method_code(obj, name):
    return _render(obj.method_graph(name), name, True)
