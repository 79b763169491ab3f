"""Expressions and calls of the script compiler (Note [Script compiler] in _script.py)."""
from __future__ import annotations

import ast
import builtins
import inspect
import operator

from .. import _C
from . import _script_ops as ops
from . import _types as T
from ._script import HINT, Const, ModuleRef, Val

_INT_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.FloorDiv: "floordiv",
               ast.Mod: "remainder", ast.Div: "div", ast.Pow: "pow"}
_TENSOR_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
                  ast.FloorDiv: "floor_divide", ast.Mod: "remainder", ast.Pow: "pow",
                  ast.BitAnd: "bitwise_and", ast.BitOr: "bitwise_or", ast.BitXor: "bitwise_xor",
                  ast.MatMult: "matmul", ast.LShift: "bitwise_left_shift",
                  ast.RShift: "bitwise_right_shift"}
_PY_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
              ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
              ast.Pow: operator.pow, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
              ast.BitXor: operator.xor, ast.MatMult: operator.matmul,
              ast.LShift: operator.lshift, ast.RShift: operator.rshift}
_CMP = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
_PY_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_,
           ast.IsNot: operator.is_not, ast.In: lambda a, b: a in b,
           ast.NotIn: lambda a, b: a not in b}
_COMMUTATIVE = {"add", "mul", "bitwise_and", "bitwise_or", "bitwise_xor", "eq", "ne"}
_REFLECT_CMP = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le", "eq": "eq", "ne": "ne"}
_DTYPE_METHODS = {"float": "float32", "double": "float64", "half": "float16", "long": "int64",
                  "int": "int32", "short": "int16", "bool": "bool", "bfloat16": "bfloat16",
                  "byte": "uint8", "char": "int8"}


class Tup:
    """A tuple of compile-time and graph values (tuples are immutable: no graph value
    is needed until one escapes)."""
    __slots__ = ("items",)

    def __init__(self, items):
        self.items = list(items)


def _is_ember_builtin(f):
    mod = getattr(f, "__module__", None) or ""
    return callable(f) and type(f).__name__ in ("builtin_function_or_method", "instancemethod") \
        and (mod.startswith("ember._C") or getattr(getattr(f, "__self__", None), "__name__", "")
             .startswith("ember._C"))


def _op_candidates(name):
    names = [name]
    if name.startswith("_"):
        names.append(name.lstrip("_"))
    out = []
    for n in names:
        out += ops.ops_named("aten::" + n)
    return out


class ExprMixin:
    """Compiles expressions to Const/Val/Tup/ModuleRef."""

    # ---- values -------------------------------------------------------------------------
    def val(self, x, node=None):
        """A graph value for x (constants are inserted; tuples built)."""
        if isinstance(x, Val):
            return x
        if isinstance(x, Tup):
            items = [self.val(i, node) for i in x.items]
            n = self.prim("prim::TupleConstruct", items, 1)
            n.output().set_type(T.tuple_of([i.type for i in items]))
            return Val(n.output(), n.output().type)
        if isinstance(x, ModuleRef):
            return self.module_value(x)
        if isinstance(x, Const):
            v = x.value
            t = T.type_of_value(v)
            if t is None:
                raise self.error(node, f"the value {v!r} (a {type(v).__name__}) cannot be used "
                                       "in a compiled function")
            if isinstance(v, tuple):
                return self.val(Tup([Const(i) for i in v]), node)
            if isinstance(v, list) and not v:
                g = self.g.constant([])
                g.set_type("int[]")
                return Val(g, "int[]")
            return Val(self.g.constant(v), t)
        raise self.error(node, f"cannot use {x!r} as a value")

    def prim(self, kind, inputs, n_out, attrs=None):
        n = self.g.create(kind, [i.v for i in inputs], n_out)
        for k, v in (attrs or {}).items():
            n.set_attr(k, v)
        n.source = self.where_now
        self.g.insert(n)
        return n

    def emit_op(self, q, args, node=None):
        vals = [self.coerce(a, t, node) for a, (_, t, _, _, _) in zip(args, ops.schema(q)[0])]
        n = self.g.create_op(q, [v.v for v in vals])
        n.source = self.where_now
        self.g.insert(n)
        outs = [Val(o, o.type) for o in n.outputs()]
        return outs[0] if len(outs) == 1 else Tup(outs)

    def coerce(self, x, want, node=None):
        """x as a graph value of (a subtype of) type `want`."""
        if isinstance(x, Const) and x.value is None:
            return self.val(x, node)
        if T.is_optional(want):
            want = T.elem(want)
        if want == T.TENSOR and isinstance(x, Const) and isinstance(x.value, (int, float, bool)):
            v = self.val(x, node)
            return self.emit_op("prim::NumToTensor.Scalar", [v])
        if want == T.TENSOR and isinstance(x, Val) and x.type in (T.INT, T.FLOAT, T.BOOL):
            return self.emit_op("prim::NumToTensor.Scalar", [x])
        if T.is_list(want):
            if isinstance(x, Tup) or (isinstance(x, Const) and isinstance(x.value, (tuple, list))):
                items = x.items if isinstance(x, Tup) else [Const(v) for v in x.value]
                ew = T.elem(want)
                if all(isinstance(i, Const) for i in items) and ew != T.TENSOR:
                    c = Val(self.g.constant([i.value for i in items]), want)
                    c.v.set_type(want if ew != T.ANY else T.list_of(T.type_of_value(items[0].value)
                                                                    if items else T.INT))
                    return Val(c.v, c.v.type)
                vals = [self.coerce(i, ew if ew != T.ANY else T.ANY, node) for i in items]
                n = self.prim("prim::ListConstruct", vals, 1)
                et = ew if ew != T.ANY else (vals[0].type if vals else T.TENSOR)
                n.output().set_type(T.list_of(et))
                return Val(n.output(), n.output().type)
            if isinstance(x, Val) and T.is_tuple(x.type):
                u = self.prim("prim::TupleUnpack", [x], len(T.tuple_elems(x.type)))
                vals = [Val(o, t) for o, t in zip(u.outputs(), T.tuple_elems(x.type))]
                return self.coerce(Tup(vals), T.list_of(T.elem(want)), node)
        if want == T.DEVICE and isinstance(x, Const) and isinstance(x.value, str):
            return self.val(Const(_C.device(x.value)), node)
        return self.val(x, node)

    def module_value(self, ref):
        v = self.self_val
        for name in ref.path:
            n = self.prim("prim::GetAttr", [v], 1, {"name": name})
            sub = self.c.object_of(_follow(self.self_module, ref.path[:ref.path.index(name) + 1]))
            n.output().set_type(sub.type_name)
            v = Val(n.output(), sub.type_name)
        return v

    # ---- expressions ---------------------------------------------------------------------
    def expr(self, node):
        self.where_now = self.src.where(node)
        m = getattr(self, "expr_" + type(node).__name__, None)
        if m is None:
            raise self.error(node, f"{type(node).__name__} expressions are not supported")
        return m(node)

    def expr_Constant(self, node):
        return Const(node.value)

    def expr_Name(self, node):
        if node.id in self.env:
            v = self.env[node.id]
            if v.__class__.__name__ == "Undefined":
                raise self.error(node, f"'{node.id}' is not defined on every path reaching here")
            return v
        if node.id in self.src.closure:
            return self.wrap_python(self.src.closure[node.id])
        if node.id in self.src.globals:
            return self.wrap_python(self.src.globals[node.id])
        if hasattr(builtins, node.id):
            return Const(getattr(builtins, node.id))
        raise self.error(node, f"undefined name '{node.id}'")

    def wrap_python(self, v):
        return Const(v)

    def expr_Tuple(self, node):
        return Tup([self.expr(e) for e in node.elts])

    def expr_List(self, node):
        items = [self.expr(e) for e in node.elts]
        if all(isinstance(i, Const) for i in items):
            # a fresh list each time: lists are mutable
            pass
        if not items:
            n = self.prim("prim::ListConstruct", [], 1)
            n.output().set_type("Tensor[]")
            return Val(n.output(), "Tensor[]")
        types = [ops._kind(i) for i in items]
        et = types[0]
        for t in types[1:]:
            u = T.unify(et, t)
            if u is None:
                raise self.error(node, f"list elements have different types ({et} and {t})")
            et = u
        vals = [self.val(i, node) for i in items]
        n = self.prim("prim::ListConstruct", vals, 1)
        n.output().set_type(T.list_of(et))
        return Val(n.output(), T.list_of(et))

    def expr_Attribute(self, node):
        base = self.expr(node.value)
        return self.attribute(base, node.attr, node)

    def attribute(self, base, name, node):
        if isinstance(base, ModuleRef):
            return self.module_attribute(base, name, node)
        if isinstance(base, Const):
            try:
                return self.wrap_python(getattr(base.value, name))
            except AttributeError:
                raise self.error(node, f"{type(base.value).__name__} has no attribute '{name}'") from None
        if isinstance(base, Val) and base.type == T.TENSOR:
            if name == "shape":
                return self.emit_op("aten::size", [base])
            if name == "dtype":
                return self.emit_op("prim::dtype", [base])
            if name == "device":
                return self.emit_op("prim::device", [base])
            if name == "requires_grad":
                return self.emit_op("prim::requires_grad", [base])
            if name in ("T", "mT"):
                return self.emit_op("aten::numpy_T" if name == "T" else "aten::mT", [base])
            if name == "data":
                return self.emit_op("aten::detach", [base])
            if name == "is_cuda":
                dev = self.emit_op("prim::device", [base])
                return dev  # rarely used; compared against devices
            return _BoundMethod(base, name)
        if isinstance(base, Val):
            return _BoundMethod(base, name)
        if isinstance(base, Tup):
            raise self.error(node, f"tuples have no attribute '{name}'")
        raise self.error(node, f"cannot read attribute '{name}' here")

    def module_attribute(self, ref, name, node):
        mod = ref.module
        if name in mod._modules:
            sub = mod._modules[name]
            return Const(None) if sub is None else ModuleRef(sub, ref.path + [name])
        if name in mod._parameters or name in mod._buffers or name == "training":
            if name != "training":
                t = mod._parameters.get(name, mod._buffers.get(name))
                if t is None:
                    return Const(None)
            obj = self.module_value(ref) if ref.path else self.self_val
            n = self.prim("prim::GetAttr", [obj], 1, {"name": name})
            typ = T.BOOL if name == "training" else T.TENSOR
            n.output().set_type(typ)
            if name != "training":
                n.output().set_name(name)
            return Val(n.output(), typ)
        try:
            v = getattr(mod, name)
        except AttributeError:
            raise self.error(node, f"module {type(mod).__name__} has no attribute '{name}'") from None
        if inspect.ismethod(v) and v.__self__ is mod:
            return _ModuleMethod(ref, name, v.__func__)
        return self.wrap_python(v)

    def expr_BinOp(self, node):
        a, b = self.expr(node.left), self.expr(node.right)
        return self.binop(type(node.op), a, b, node)

    def binop(self, opcls, a, b, node):
        if isinstance(a, Const) and isinstance(b, Const):
            return Const(_PY_BINOPS[opcls](a.value, b.value))
        ta, tb = ops._kind(a), ops._kind(b)
        if T.TENSOR in (ta, tb):
            name = _TENSOR_BINOPS.get(opcls)
            if name is None:
                raise self.error(node, "unsupported operator on tensors")
            if name == "matmul":
                return self.call_op("matmul", [a, b], {}, node)
            if ta == T.TENSOR:
                return self.call_op(name, [a, b], {}, node)
            if name in _COMMUTATIVE:
                return self.call_op(name, [b, a], {}, node)
            return self.emit_op(f"aten::r{name}.Scalar", [b, a], node)
        if ta in (T.INT, T.FLOAT, T.BOOL) and tb in (T.INT, T.FLOAT, T.BOOL):
            name = _INT_BINOPS.get(opcls)
            if name is None:
                raise self.error(node, "unsupported operator on numbers")
            kind = "int" if ta != T.FLOAT and tb != T.FLOAT else "float"
            if name in ("div",) and kind == "int":
                return self.emit_op("aten::div.int", [a, b], node)
            if name == "pow" and kind == "int":
                return self.emit_op("aten::pow.int", [a, b], node)
            return self.emit_op(f"aten::{name}.{kind}", [a, b], node)
        if T.is_list(ta or "") and opcls is ast.Add:
            return self.emit_op("aten::add.t", [a, b], node)
        if ta == T.STR and tb == T.STR and opcls is ast.Add:
            return self.emit_op("aten::add.str", [a, b], node)
        if isinstance(a, Tup) and isinstance(b, Tup) and opcls is ast.Add:
            return Tup(a.items + b.items)
        raise self.error(node, f"unsupported operand types {ta} and {tb}")

    def expr_UnaryOp(self, node):
        x = self.expr(node.operand)
        if isinstance(x, Const):
            return Const({ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
                          ast.Invert: operator.invert}[type(node.op)](x.value))
        t = ops._kind(x)
        if isinstance(node.op, ast.Not):
            return self.emit_op("aten::__not__", [self.truth(x, node)], node)
        if isinstance(node.op, ast.USub):
            if t == T.TENSOR:
                return self.call_op("neg", [x], {}, node)
            return self.emit_op("aten::neg.int" if t == T.INT else "aten::neg.float", [x], node)
        if isinstance(node.op, ast.UAdd):
            return x
        if isinstance(node.op, ast.Invert) and t == T.TENSOR:
            return self.call_op("bitwise_not", [x], {}, node)
        raise self.error(node, "unsupported unary operator")

    def truth(self, x, node):
        """x as a graph bool (or a Const)."""
        if isinstance(x, Const):
            return x
        t = ops._kind(x)
        if t == T.BOOL:
            return x
        if t == T.TENSOR:
            return self.emit_op("aten::Bool.Tensor", [x], node)
        if t == T.INT:
            return self.emit_op("aten::Bool.int", [x], node)
        if t == T.FLOAT:
            return self.emit_op("aten::Bool.float", [x], node)
        if T.is_optional(t):
            return self.emit_op("aten::__isnot__", [x, self.val(Const(None))], node)
        if T.is_list(t):
            n = self.emit_op("aten::len.t", [x], node)
            return self.emit_op("aten::Bool.int", [n], node)
        raise self.error(node, f"cannot use a {t} as a condition")

    def expr_BoolOp(self, node):
        # Short-circuit: a and b -> b if a else a (as prim::If when a is not constant)
        result = self.expr(node.values[0])
        for rhs in node.values[1:]:
            cond = self.truth(result, node)
            is_and = isinstance(node.op, ast.And)
            if isinstance(cond, Const):
                if bool(cond.value) == is_and:
                    result = self.expr(rhs)
                continue
            result = self.if_expr(cond, (lambda r=rhs: self.truth(self.expr(r), node)) if is_and
                                  else (lambda: Const(True)),
                                  (lambda: Const(False)) if is_and else
                                  (lambda r=rhs: self.truth(self.expr(r), node)), node)
        return result

    def expr_IfExp(self, node):
        cond = self.truth(self.expr(node.test), node)
        if isinstance(cond, Const):
            return self.expr(node.body if cond.value else node.orelse)
        refine = self.refinements(node.test)
        return self.if_expr(cond, lambda: self.with_refined(refine, True, lambda: self.expr(node.body)),
                            lambda: self.with_refined(refine, False, lambda: self.expr(node.orelse)),
                            node)

    def expr_Compare(self, node):
        left = self.expr(node.left)
        result = None
        for opnode, comp in zip(node.ops, node.comparators):
            right = self.expr(comp)
            r = self.compare(type(opnode), left, right, node)
            result = r if result is None else self.binand(result, r, node)
            left = right
        return result

    def binand(self, a, b, node):
        if isinstance(a, Const) and isinstance(b, Const):
            return Const(a.value and b.value)
        if isinstance(a, Const):
            return b if a.value else Const(False)
        return self.emit_op("aten::__and__.bool", [self.truth(a, node), self.truth(b, node)], node)

    def compare(self, opcls, a, b, node):
        if isinstance(a, Const) and isinstance(b, Const) and not isinstance(a.value, _C.Tensor):
            return Const(_PY_CMP[opcls](a.value, b.value))
        if opcls in (ast.Is, ast.IsNot):
            if not (isinstance(b, Const) and b.value is None):
                raise self.error(node, "'is' compares with None only")
            ta = ops._kind(a)
            if ta == T.NONE or (isinstance(a, Const) and a.value is None):
                return Const(opcls is ast.Is)
            if not (T.is_optional(ta) or ta == T.ANY):
                return Const(opcls is ast.IsNot)
            return self.emit_op("aten::__is__" if opcls is ast.Is else "aten::__isnot__",
                                [a, self.val(b)], node)
        if opcls in (ast.In, ast.NotIn):
            if isinstance(b, (Tup, Const)):
                items = b.items if isinstance(b, Tup) else [Const(i) for i in b.value]
                r = Const(False)
                for i in items:
                    r = self.binor(r, self.compare(ast.Eq, a, i, node), node)
                return r if opcls is ast.In else self.emit_op("aten::__not__", [self.val(r)], node)
            if ops._kind(b) == "int[]":
                r = self.emit_op("aten::__contains__.int_list", [b, a], node)
                return r if opcls is ast.In else self.emit_op("aten::__not__", [r], node)
            raise self.error(node, "'in' on this value is not supported")
        name = _CMP[opcls]
        ta, tb = ops._kind(a), ops._kind(b)
        if T.TENSOR in (ta, tb):
            if ta == T.TENSOR:
                return self.call_op(name, [a, b], {}, node)
            return self.call_op(_REFLECT_CMP[name], [b, a], {}, node)
        if ta in (T.INT, T.FLOAT, T.BOOL) and tb in (T.INT, T.FLOAT, T.BOOL):
            if ta == T.BOOL and tb == T.BOOL and name in ("eq", "ne"):
                return self.emit_op(f"aten::{name}.bool", [a, b], node)
            kind = "int" if T.FLOAT not in (ta, tb) else "float"
            return self.emit_op(f"aten::{name}.{kind}", [a, b], node)
        if ta == T.STR and tb == T.STR and name in ("eq", "ne"):
            return self.emit_op(f"aten::{name}.str", [a, b], node)
        if isinstance(a, Tup) and isinstance(b, (Tup, Const)) and name in ("eq", "ne"):
            bi = b.items if isinstance(b, Tup) else [Const(x) for x in b.value]
            if len(a.items) != len(bi):
                return Const(name == "ne")
            r = Const(True)
            for x, y in zip(a.items, bi):
                r = self.binand(r, self.compare(ast.Eq, x, y, node), node)
            return r if name == "eq" else self.emit_op("aten::__not__", [self.val(r)], node)
        raise self.error(node, f"cannot compare {ta} with {tb}")

    def binor(self, a, b, node):
        if isinstance(a, Const) and isinstance(b, Const):
            return Const(a.value or b.value)
        if isinstance(a, Const):
            return Const(True) if a.value else b
        return self.emit_op("aten::__or__.bool", [self.truth(a, node), self.truth(b, node)], node)

    def expr_JoinedStr(self, node):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(Const(str(v.value)))
            else:
                x = self.expr(v.value)
                if isinstance(x, Const):
                    parts.append(Const(format(x.value, self._spec(v))))
                else:
                    parts.append(self.emit_op("aten::str", [self.val(x)], node))
        result = Const("")
        for p in parts:
            if isinstance(result, Const) and isinstance(p, Const):
                result = Const(result.value + p.value)
            else:
                result = self.emit_op("aten::add.str", [result, p], node)
        return result

    def _spec(self, v):
        if v.format_spec is None:
            return ""
        return "".join(str(x.value) for x in v.format_spec.values if isinstance(x, ast.Constant))

    def expr_Subscript(self, node):
        base = self.expr(node.value)
        sl = node.slice
        if isinstance(base, Const) and not isinstance(base.value, _C.Tensor):
            idx = self.expr(sl)
            if isinstance(idx, Const):
                v = base.value[idx.value]
                from ..nn.modules.module import Module
                return self.wrap_python(v) if not isinstance(v, Module) else Const(v)
            raise self.error(node, "indexing a constant with a run-time value is not supported")
        if isinstance(base, ModuleRef):
            idx = self.expr(sl)
            if not isinstance(idx, Const):
                raise self.error(node, "a ModuleList/Sequential index must be a constant")
            keys = list(base.module._modules.keys())
            key = keys[idx.value] if isinstance(idx.value, int) else idx.value
            return ModuleRef(base.module._modules[key], base.path + [key])
        if isinstance(base, Tup):
            idx = self.expr(sl)
            if isinstance(idx, Const) and isinstance(idx.value, (int, slice)):
                r = base.items[idx.value]
                return Tup(r) if isinstance(idx.value, slice) else r
            raise self.error(node, "a tuple index must be a constant")
        t = ops._kind(base)
        if T.is_tuple(t):
            idx = self.expr(sl)
            if isinstance(idx, Const) and isinstance(idx.value, int):
                n = self.prim("prim::TupleIndex", [base], 1, {"index": idx.value})
                et = T.tuple_elems(t)[idx.value]
                n.output().set_type(et)
                return Val(n.output(), et)
            raise self.error(node, "a tuple index must be a constant")
        if T.is_list(t):
            if isinstance(sl, ast.Slice):
                args = [self.expr(x) if x is not None else Const(None)
                        for x in (sl.lower, sl.upper)]
                step = self.expr(sl.step) if sl.step is not None else Const(1)
                r = self.emit_op("aten::slice.t", [base] + args + [step], node)
                r.v.set_type(t)
                return Val(r.v, t)
            idx = self.expr(sl)
            r = self.emit_op("aten::__getitem__.t", [base, idx], node)
            r.v.set_type(T.elem(t))
            return Val(r.v, T.elem(t))
        if t == T.TENSOR:
            return self.tensor_index(base, sl, node)
        raise self.error(node, f"cannot index a {t}")

    def tensor_index(self, base, sl, node):
        """x[...] as PyTorch's indexing: ints select, slices slice, None unsqueezes,
        tensors gather (aten::index)."""
        elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        x = base
        dim = 0
        adv = []
        for e in elts:
            if isinstance(e, ast.Slice):
                start = self.expr(e.lower) if e.lower is not None else Const(None)
                end = self.expr(e.upper) if e.upper is not None else Const(None)
                step = self.expr(e.step) if e.step is not None else Const(1)
                trivial = all(isinstance(v, Const) and v.value is None for v in (start, end)) and \
                    isinstance(step, Const) and step.value == 1
                if not trivial:
                    x = self.emit_op("aten::slice", [x, Const(dim), start, end, step], node)
                dim += 1
                continue
            if isinstance(e, ast.Constant) and e.value is Ellipsis:
                raise self.error(node, "'...' in an index is not supported by the script "
                                       "compiler")
            v = self.expr(e)
            k = ops._kind(v)
            if isinstance(v, Const) and v.value is None:
                x = self.emit_op("aten::unsqueeze", [x, Const(dim)], node)
                dim += 1
            elif k == T.INT:
                x = self.emit_op("aten::select", [x, Const(dim), v], node)
            elif k == T.TENSOR:
                adv.append((dim, v))
                dim += 1
            elif k == T.BOOL:
                raise self.error(node, "indexing with a bool is not supported")
            else:
                raise self.error(node, f"cannot index a tensor with a {k}")
        if adv:
            last = max(d for d, _ in adv)
            items = [Const(None)] * (last + 1)
            for d, v in adv:
                items[d] = v
            vals = [self.val(i) for i in items]
            n = self.prim("prim::ListConstruct", vals, 1)
            n.output().set_type("Tensor?[]")
            x = self.emit_op("aten::index", [x, Val(n.output(), "Tensor?[]")], node)
        return x

    # ---- calls ---------------------------------------------------------------------------
    def expr_Call(self, node):
        f = self.expr(node.func)
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                s = self.expr(a.value)
                if isinstance(s, Tup):
                    args += s.items
                elif isinstance(s, Const) and isinstance(s.value, (tuple, list)):
                    args += [Const(v) for v in s.value]
                else:
                    raise self.error(node, "*args must be a tuple known while compiling")
            else:
                args.append(self.expr(a))
        kwargs = {}
        for k in node.keywords:
            if k.arg is None:
                d = self.expr(k.value)
                if not (isinstance(d, Const) and isinstance(d.value, dict)):
                    raise self.error(node, "**kwargs must be a dict known while compiling")
                kwargs.update({kk: Const(vv) for kk, vv in d.value.items()})
            else:
                kwargs[k.arg] = self.expr(k.value)
        return self.call(f, args, kwargs, node)

    def call(self, f, args, kwargs, node):
        from ..nn.modules.module import Module
        if isinstance(f, _BoundMethod):
            return self.call_method(f.base, f.name, args, kwargs, node)
        if isinstance(f, _ModuleMethod):
            return self.call_module_method(f, args, kwargs, node)
        if isinstance(f, ModuleRef):
            return self.call_submodule(f, args, kwargs, node)
        if not isinstance(f, Const):
            raise self.error(node, "calling a run-time value is not supported")
        fn = f.value
        if isinstance(fn, Module):
            raise self.error(node, f"the module {type(fn).__name__} is not a submodule of the "
                                   "module being compiled")
        from . import _script_builtins as bi
        handled = bi.call_builtin(self, fn, args, kwargs, node)
        if handled is not NotImplemented:
            return handled
        all_const = all(isinstance(a, Const) for a in args) and \
            all(isinstance(v, Const) for v in kwargs.values())
        if _is_ember_builtin(fn):
            cands = _op_candidates(fn.__name__)
            q, bound = ops.resolve(cands, args, kwargs) if cands else (None, None)
            if q is not None:
                return self.emit_op(q, bound, node)
            if all_const:
                return self.run_python(fn, args, kwargs, node, fresh=True)
            alias = bi.ALIASES.get(fn.__name__)
            if alias:
                q, bound = ops.resolve(_op_candidates(alias), args, kwargs)
                if q is not None:
                    return self.emit_op(q, bound, node)
            raise self.error(node, f"no ember op matches {fn.__name__}("
                                   f"{', '.join(self.describe(a) for a in args)}"
                                   + "".join(f", {k}={self.describe(v)}" for k, v in kwargs.items())
                                   + ")")
        if getattr(fn, "_ember_jit_unused", False):
            msg = f"{getattr(fn, '__qualname__', fn)} was marked @ember.jit.unused and not compiled"
            self.prim("prim::RaiseException", [self.val(Const(msg))], 0, {"exception": "RuntimeError"})
            return Const(None)
        if getattr(fn, "_ember_jit_ignore", False):
            if all_const:
                return self.run_python(fn, args, kwargs, node)
            raise self.error(node, f"{getattr(fn, '__qualname__', fn)} is marked "
                                   "@ember.jit.ignore: a compiled graph cannot call back into "
                                   "Python (it must run from C++ too); trace the model, or mark "
                                   "the function @ember.jit.unused")
        if all_const:
            return self.run_python(fn, args, kwargs, node)
        if isinstance(fn, type):
            raise self.error(node, f"constructing a {fn.__name__} from run-time values is not "
                                   f"supported{HINT}")
        if inspect.isfunction(fn) or inspect.ismethod(fn):
            return self.inline_function(fn, args, kwargs, node)
        raise self.error(node, f"cannot call {fn!r} with run-time values{HINT}")

    def describe(self, x):
        return repr(x.value) if isinstance(x, Const) else (ops._kind(x) or type(x).__name__)

    def run_python(self, fn, args, kwargs, node, fresh=False):
        try:
            r = fn(*[a.value for a in args], **{k: v.value for k, v in kwargs.items()})
        except Exception as e:  # the same error the eager call would raise
            raise type(e)(f"{e}\n  (while compiling {self.src.where(node)})") from None
        if fresh and isinstance(r, _C.Tensor):
            return self.emit_op("aten::clone", [self.val(Const(r))], node)
        return self.wrap_python(r)

    def call_op(self, name, args, kwargs, node):
        q, bound = ops.resolve(_op_candidates(name), args, kwargs)
        if q is None:
            from . import _script_builtins as bi
            alias = bi.ALIASES.get(name)
            if alias:
                q, bound = ops.resolve(_op_candidates(alias), args, kwargs)
        if q is None:
            raise self.error(node, f"no ember op matches {name}("
                                   f"{', '.join(self.describe(a) for a in args)})")
        return self.emit_op(q, bound, node)

    def call_method(self, base, name, args, kwargs, node):
        from . import _script_builtins as bi
        t = ops._kind(base)
        if T.is_list(t):
            return bi.list_method(self, base, name, args, kwargs, node)
        if t == T.STR:
            raise self.error(node, f"str.{name} is not supported")
        if t != T.TENSOR:
            raise self.error(node, f"a {t} has no method {name}")
        r = bi.tensor_method(self, base, name, args, kwargs, node)
        if r is not NotImplemented:
            return r
        import ember
        py = getattr(ember.Tensor, name, None)
        if py is None:
            raise self.error(node, f"Tensor has no method '{name}'")
        if inspect.isfunction(py):  # a Python-level Tensor method
            return self.inline_function(py, [base] + args, kwargs, node)
        return self.call_op(name, [base] + args, kwargs, node)

    def if_expr(self, cond, then_fn, else_fn, node):
        """A value chosen at run time: prim::If with one output."""
        n = self.prim("prim::If", [self.val(cond)], 0)
        b0, b1 = n.add_block(), n.add_block()
        outs = []
        for b, fn in ((b0, then_fn), (b1, else_fn)):
            self.push_block(b)
            r = fn()
            outs.append(r)
            self.pop_block()
        t0, t1 = ops._kind(outs[0]), ops._kind(outs[1])
        t = T.unify(t0, t1)
        if t is None:
            raise self.error(node, f"the two branches give different types ({t0} and {t1})")
        for b, r in ((b0, outs[0]), (b1, outs[1])):
            self.push_block(b)
            b.register_output(self.coerce(r, t).v)
            self.pop_block()
        o = n.add_output(t)
        return Val(o, t)


class _BoundMethod:
    __slots__ = ("base", "name")

    def __init__(self, base, name):
        self.base = base
        self.name = name


class _ModuleMethod:
    __slots__ = ("ref", "name", "fn")

    def __init__(self, ref, name, fn):
        self.ref = ref
        self.name = name
        self.fn = fn


def _follow(module, path):
    m = module
    for p in path:
        m = m._modules[p]
    return m
