"""Statements of the script compiler: the function body, assignments, if/for/while,
return, assert/raise, and calls into submodules and other Python functions
(Note [Script compiler] in _script.py)."""
from __future__ import annotations

import ast
import copy
import inspect

from .. import _C
from . import _script_ops as ops
from . import _types as T
from ._script import HINT, Const, ModuleRef, ScriptError, Source, Undefined, Val
from ._script_expr import ExprMixin, Tup

_INT64_MAX = 2 ** 63 - 1
_RET = "$return"


class _Terminated(Exception):
    """Control left the block (return/raise): nothing after it in the block runs."""


def _always_exits(stmts):
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return _always_exits(last.body) and _always_exits(last.orelse)
    return False


def restructure(stmts):
    """Moves statements after an `if` whose branch always returns into the other branch,
    so that every return ends its block (TorchScript's early returns)."""
    out = []
    for i, s in enumerate(stmts):
        s = _restructure_inside(s)
        if isinstance(s, ast.If) and i + 1 < len(stmts) and \
                (_always_exits(s.body) or _always_exits(s.orelse)):
            rest = stmts[i + 1:]
            s = copy.copy(s)
            if _always_exits(s.body) and not _always_exits(s.orelse):
                s.orelse = restructure(list(s.orelse) + list(rest))
            elif _always_exits(s.orelse) and not _always_exits(s.body):
                s.body = restructure(list(s.body) + list(rest))
            out.append(s)
            return out
        out.append(s)
    return out


def _restructure_inside(s):
    if isinstance(s, ast.If):
        s = copy.copy(s)
        s.body = restructure(s.body)
        s.orelse = restructure(s.orelse)
    elif isinstance(s, (ast.For, ast.While)):
        s = copy.copy(s)
        s.body = restructure(s.body)
    return s


def _assigned_names(stmts):
    names = set()
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)
    return names


class FunctionBuilder(ExprMixin):
    def __init__(self, compiler, src, self_module=None, self_type=None, graph=None,
                 env=None, self_val=None):
        self.c = compiler
        self.src = src
        self.self_module = self_module
        self.self_type = self_type
        self.g = graph
        self.env = env if env is not None else {}
        self.self_val = self_val
        self.blocks = []
        self.where_now = src.file
        self.ret_type = None

    def error(self, node, msg):
        where = self.src.where(node) if node is not None else self.src.file
        return ScriptError(f"ember.jit.script: {msg} ({where}){'' if HINT in msg else HINT}")

    # ---- blocks --------------------------------------------------------------------------
    def push_block(self, b):
        self.blocks.append(b)
        self.g.set_insert_point_end(b)

    def pop_block(self):
        self.blocks.pop()
        self.g.set_insert_point_end(self.blocks[-1])

    # ---- the function ---------------------------------------------------------------------
    def build(self):
        fn = self.src.fn
        fdef = self.src.node
        self.g = _C._jit_Graph()
        self.blocks = [self.g.block()]
        sig = inspect.signature(fn)
        params = list(fdef.args.args)
        hints = getattr(fn, "__annotations__", {})
        if self.self_module is not None:
            v = self.g.add_input(self.self_type, "self")
            self.self_val = Val(v, self.self_type)
            self.env[params[0].arg] = ModuleRef(self.self_module, [])
            params = params[1:]
        for p in params + list(fdef.args.kwonlyargs):
            ann = hints.get(p.arg)
            default = sig.parameters[p.arg].default if p.arg in sig.parameters else inspect._empty
            if ann is None:
                t = T.TENSOR if default is inspect._empty or default is None or \
                    isinstance(default, _C.Tensor) else T.type_of_value(default) or T.TENSOR
                if default is None:
                    t = T.optional(T.TENSOR)
            else:
                t = T.from_annotation(ann, f" for argument '{p.arg}' ({self.src.where(p)})")
            v = self.g.add_input(t, p.arg)
            self.env[p.arg] = Val(v, t)
        if fdef.args.vararg or fdef.args.kwarg:
            raise self.error(fdef, "*args and **kwargs parameters are not supported")
        body = restructure(self._body(fdef))
        try:
            self.stmts(body)
            result = Const(None)
        except _Terminated:
            result = self.env.get(_RET, Const(None))
        out = self.val(result, fdef)
        if "return" in hints and hints["return"] is not None:
            want = T.from_annotation(hints["return"], " for the return type")
            out = self.coerce(result, want, fdef)
        self.g.register_output(out.v)
        return self.g

    def _body(self, fdef):
        body = list(fdef.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]  # docstring
        return body

    # ---- statements ------------------------------------------------------------------------
    def stmts(self, body):
        for s in body:
            self.where_now = self.src.where(s)
            m = getattr(self, "stmt_" + type(s).__name__, None)
            if m is None:
                raise self.error(s, f"{type(s).__name__} statements are not supported")
            m(s)

    def stmt_Pass(self, s):
        pass

    def stmt_Expr(self, s):
        if isinstance(s.value, ast.Constant):
            return  # a string comment
        self.expr(s.value)

    def stmt_Return(self, s):
        self.env[_RET] = self.expr(s.value) if s.value is not None else Const(None)
        raise _Terminated()

    def stmt_Raise(self, s):
        exc = s.exc
        cls, msg = "RuntimeError", Const("Exception")
        if isinstance(exc, ast.Call):
            f = self.expr(exc.func)
            if isinstance(f, Const) and isinstance(f.value, type):
                cls = f.value.__name__
            if exc.args:
                msg = self.expr(exc.args[0])
        elif exc is not None:
            f = self.expr(exc)
            if isinstance(f, Const) and isinstance(f.value, type):
                cls = f.value.__name__
        if cls not in ("ValueError", "TypeError", "IndexError", "AssertionError"):
            cls = "RuntimeError"
        m = self.coerce(msg, T.STR, s) if ops._kind(msg) == T.STR else \
            self.emit_op("aten::str", [self.val(msg)], s)
        self.prim("prim::RaiseException", [m], 0, {"exception": cls})
        raise _Terminated()

    def stmt_Assert(self, s):
        cond = self.truth(self.expr(s.test), s)
        msg = ast.Call(func=ast.Name(id="AssertionError", ctx=ast.Load()),
                       args=[s.msg] if s.msg is not None else [ast.Constant("")], keywords=[])
        for n in ast.walk(msg):
            ast.copy_location(n, s)
        if isinstance(cond, Const):
            if not cond.value:
                self.stmt_Raise(ast.Raise(exc=msg, cause=None, lineno=s.lineno))
            return
        fail = ast.If(test=ast.UnaryOp(op=ast.Not(), operand=s.test), body=[
            ast.Raise(exc=msg, cause=None, lineno=s.lineno)], orelse=[], lineno=s.lineno)
        self.stmt_If(fail, cond=self.emit_op("aten::__not__", [cond], s))

    def stmt_AnnAssign(self, s):
        if s.value is None:
            return
        v = self.expr(s.value)
        want = T.from_annotation(self.src.globals.get("__annotations_eval__") or
                                 _eval_ann(s.annotation, self.src), f" ({self.src.where(s)})")
        if isinstance(v, Val) and T.is_list(v.type) and T.is_list(want) and v.type != want \
                and v.v.node().kind == "prim::ListConstruct" and not v.v.node().inputs():
            v.v.set_type(want)
            v = Val(v.v, want)
        elif not (isinstance(v, Const) and v.value is None and T.is_optional(want)):
            v = self.coerce(v, want, s) if ops._kind(v) != want else v
        else:
            v = Val(self.val(v).v, want)
            v.v.set_type(want)
        self.assign(s.target, v, s)

    def stmt_Assign(self, s):
        v = self.expr(s.value)
        for t in s.targets:
            self.assign(t, v, s)

    def assign(self, target, v, s):
        if isinstance(target, ast.Name):
            self.env[target.id] = v
            if isinstance(v, Val) and not v.v.has_name and v.v.node().kind not in (
                    "prim::Param",):
                try:
                    v.v.set_name(target.id)
                except Exception:  # noqa: BLE001 - naming is cosmetic
                    pass
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            n = len(target.elts)
            if isinstance(v, Tup):
                items = v.items
            elif isinstance(v, Const) and isinstance(v.value, (tuple, list)):
                items = [Const(x) for x in v.value]
            elif isinstance(v, Val) and T.is_tuple(v.type):
                ts = T.tuple_elems(v.type)
                u = self.prim("prim::TupleUnpack", [v], len(ts))
                items = [Val(o, t) for o, t in zip(u.outputs(), ts)]
                for o, t in zip(u.outputs(), ts):
                    o.set_type(t)
            elif isinstance(v, Val) and T.is_list(v.type):
                u = self.prim("prim::ListUnpack", [v], n)
                items = []
                for o in u.outputs():
                    o.set_type(T.elem(v.type))
                    items.append(Val(o, T.elem(v.type)))
            elif isinstance(v, Val) and v.type == T.TENSOR:
                u = self.emit_op("aten::unbind", [v, Const(0)], s)
                lu = self.prim("prim::ListUnpack", [u], n)
                items = [Val(o, T.TENSOR) for o in lu.outputs()]
                for o in lu.outputs():
                    o.set_type(T.TENSOR)
            else:
                raise self.error(s, "cannot unpack this value")
            if len(items) != n:
                raise self.error(s, f"cannot unpack {len(items)} values into {n} names")
            for t, x in zip(target.elts, items):
                self.assign(t, x, s)
            return
        if isinstance(target, ast.Subscript):
            base = self.expr(target.value)
            t = ops._kind(base)
            if T.is_list(t):
                idx = self.expr(target.slice)
                self.emit_op("aten::_set_item.t", [base, idx, self.coerce(v, T.elem(t), s)], s)
                return
            if t == T.TENSOR:
                view = self.tensor_index(base, target.slice, s)
                if any(isinstance(e, ast.AST) and not isinstance(e, (ast.Slice, ast.Constant))
                       and ops._kind(self.expr(e)) == T.TENSOR
                       for e in (target.slice.elts if isinstance(target.slice, ast.Tuple)
                                 else [target.slice])):
                    raise self.error(s, "assigning through a tensor index is not supported")
                self.call_op("copy_", [view, self.coerce(v, T.TENSOR, s)], {}, s)
                return
            raise self.error(s, f"cannot assign into a {t}")
        if isinstance(target, ast.Attribute):
            base = self.expr(target.value)
            if isinstance(base, ModuleRef) and not base.path and isinstance(v, Val):
                self.prim("prim::SetAttr", [self.self_val, v], 0, {"name": target.attr})
                return
            raise self.error(s, "assigning attributes is supported on tensors of self only")
        raise self.error(s, "unsupported assignment target")

    def stmt_AugAssign(self, s):
        cur = self.expr(s.target)
        rhs = self.expr(s.value)
        t = ops._kind(cur)
        if t == T.TENSOR:
            from ._script_expr import _TENSOR_BINOPS
            name = _TENSOR_BINOPS.get(type(s.op))
            self.call_op(name + "_", [cur, rhs], {}, s)  # in place, as Python's += on tensors
            return
        if T.is_list(t) and isinstance(s.op, ast.Add):
            self.emit_op("aten::add_.t", [cur, self.coerce(rhs, t, s)], s)
            return
        self.assign(s.target, self.binop(type(s.op), cur, rhs, s), s)

    # ---- if --------------------------------------------------------------------------------
    def refinements(self, test):
        """Names an `is None` / `is not None` test narrows: {name: (type if true, type if false)}."""
        out = {}
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and \
                isinstance(test.left, ast.Name) and isinstance(test.comparators[0], ast.Constant) \
                and test.comparators[0].value is None and isinstance(test.ops[0], (ast.Is, ast.IsNot)):
            v = self.env.get(test.left.id)
            if isinstance(v, Val) and T.is_optional(v.type):
                inner = T.elem(v.type)
                out[test.left.id] = (None, inner) if isinstance(test.ops[0], ast.Is) else (inner, None)
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            for part in test.values:
                for k, (yes, _) in self.refinements(part).items():
                    out[k] = (yes, None)
        return out

    def with_refined(self, refine, branch, fn):
        saved = {}
        for name, (yes, no) in refine.items():
            t = yes if branch else no
            if t is not None:
                saved[name] = self.env[name]
                n = self.prim("prim::unchecked_cast", [self.env[name]], 1)
                n.output().set_type(t)
                self.env[name] = Val(n.output(), t)
        try:
            return fn()
        finally:
            for name, v in saved.items():
                if self.env.get(name) is not None and isinstance(self.env[name], Val) and \
                        self.env[name].v.node().kind == "prim::unchecked_cast":
                    self.env[name] = v

    def stmt_If(self, s, cond=None):
        if cond is None:
            cond = self.truth(self.expr(s.test), s)
        if isinstance(cond, Const):
            self.stmts(s.body if cond.value else s.orelse)
            return
        refine = self.refinements(s.test)
        n = self.prim("prim::If", [self.val(cond)], 0)
        before = dict(self.env)
        results = []
        for branch, body in ((True, s.body), (False, s.orelse)):
            b = n.add_block()
            self.push_block(b)
            self.env = dict(before)
            for name, (yes, no) in refine.items():
                t = yes if branch else no
                if t is not None:
                    u = self.prim("prim::unchecked_cast", [before[name]], 1)
                    u.output().set_type(t)
                    self.env[name] = Val(u.output(), t)
            terminated = False
            try:
                self.stmts(body)
            except _Terminated:
                terminated = True
            results.append((b, self.env, terminated))
            self.pop_block()
        self.env = before
        (b0, e0, t0), (b1, e1, t1) = results
        if t0 and t1 and _RET in e0 and _RET in e1 or (t0 and t1):
            # both branches leave: the returned value is the If's output
            self._merge(n, [(b0, e0), (b1, e1)], [_RET], s, terminated=(t0, t1))
            raise _Terminated()
        live = [(b, e) for b, e, t in results if not t]
        dead = [(b, e) for b, e, t in results if t]
        names = sorted({k for _, e in live for k in e if k != _RET and
                        (k not in before or e[k] is not before[k])})
        merged = []
        for k in names:
            if all(k in e for _, e in live) and (len(live) == 2 or k in before or True):
                merged.append(k)
            else:
                self.env[k] = Undefined()
        self._merge(n, live + dead, merged, s, dead_blocks={id(b) for b, _ in dead})

    def _merge(self, n, branches, names, s, terminated=None, dead_blocks=()):
        """Block outputs of prim::If n for `names` (dead blocks get Uninitialized)."""
        for k in names:
            vals = [(b, e.get(k)) for b, e in branches if id(b) not in dead_blocks]
            if all(isinstance(v, Const) for _, v in vals) and vals and \
                    all(v.value is vals[0][1].value for _, v in vals) and not dead_blocks:
                self.env[k] = vals[0][1]
                continue
            types = [ops._kind(v) for _, v in vals if v is not None and not isinstance(v, Undefined)]
            if not types:
                self.env[k] = Undefined()
                continue
            t = types[0]
            for u in types[1:]:
                t2 = T.unify(t, u)
                if t2 is None:
                    raise self.error(s, f"'{k if k != _RET else 'the returned value'}' has type {t} "
                                        f"in one branch and {u} in the other")
                t = t2
            for b, e in branches:
                self.push_block(b)
                if id(b) in dead_blocks or e.get(k) is None:
                    u = self.prim("prim::Uninitialized", [], 1)
                    u.output().set_type(t)
                    b.register_output(u.output())
                else:
                    b.register_output(self.coerce(e[k], t, s).v)
                self.pop_block()
            o = n.add_output(t)
            self.env[k] = Val(o, t)

    # ---- loops -------------------------------------------------------------------------------
    def stmt_For(self, s):
        if s.orelse:
            raise self.error(s, "for ... else is not supported")
        it = s.iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" \
                and it.func.id not in self.env:
            args = [self.expr(a) for a in it.args]
            if len(args) == 1:
                start, stop, step = Const(0), args[0], Const(1)
            elif len(args) == 2:
                start, stop, step = args[0], args[1], Const(1)
            else:
                start, stop, step = args
            if not (isinstance(step, Const) and step.value == 1 and isinstance(start, Const)
                    and start.value == 0):
                # trip count = max(0, ceil((stop - start) / step)) for a positive constant step
                if not (isinstance(step, Const) and step.value > 0):
                    raise self.error(s, "range() with a step that is not a positive constant")
                span = self.binop(ast.Sub, stop, start, s)
                span = self.binop(ast.Add, span, Const(step.value - 1), s)
                trips = self.binop(ast.FloorDiv, span, step, s)
                self.loop(s, trips, Const(True), lambda i: self.binop(
                    ast.Add, start, self.binop(ast.Mult, i, step, s), s))
                return
            self.loop(s, stop, Const(True), lambda i: i)
            return
        seq = self.expr(it)
        if isinstance(seq, ModuleRef):
            for name, sub in seq.module._modules.items():
                self.assign(s.target, ModuleRef(sub, seq.path + [name]), s)
                self.stmts(s.body)
            return
        if isinstance(seq, Tup) or (isinstance(seq, Const) and isinstance(seq.value, (tuple, list))):
            items = seq.items if isinstance(seq, Tup) else [Const(v) for v in seq.value]
            for x in items:
                self.assign(s.target, x, s)
                self.stmts(s.body)
            return
        t = ops._kind(seq)
        if T.is_list(t):
            n = self.emit_op("aten::len.t", [seq], s)

            def elem(i, seq=seq, t=t):
                r = self.emit_op("aten::__getitem__.t", [seq, i], s)
                r.v.set_type(T.elem(t))
                return Val(r.v, T.elem(t))
            self.loop(s, n, Const(True), elem)
            return
        if t == T.TENSOR:
            n = self.emit_op("aten::len.Tensor", [seq], s)
            self.loop(s, n, Const(True), lambda i: self.emit_op("aten::select", [seq, Const(0), i], s))
            return
        raise self.error(s, f"for loops over a {t} are not supported")

    def stmt_While(self, s):
        if s.orelse:
            raise self.error(s, "while ... else is not supported")
        cond = self.truth(self.expr(s.test), s)
        self.loop(s, Const(_INT64_MAX), cond, None, test=s.test)

    def loop(self, s, trips, cond0, target_value, test=None):
        """prim::Loop over s.body; the names the body assigns that exist before are carried."""
        assigned = _assigned_names(s.body) | (_assigned_names([s.target]) if hasattr(s, "target") else set())
        carried = sorted(k for k in assigned if k in self.env and isinstance(self.env[k], (Val, Const))
                         and not isinstance(self.env[k], ModuleRef))
        init = [self.val(self.env[k]) for k in carried]
        n = self.prim("prim::Loop", [self.val(trips), self.val(cond0)] + init, 0)
        b = n.add_block()
        i = b.add_input("int", "i")
        params = [b.add_input(v.type, k) for k, v in zip(carried, init)]
        before = dict(self.env)
        self.push_block(b)
        for k, p, v in zip(carried, params, init):
            self.env[k] = Val(p, v.type)
        if target_value is not None:
            self.assign(s.target, target_value(Val(i, T.INT)), s)
        try:
            self.stmts(s.body)
        except _Terminated:
            raise self.error(s, "return/raise inside a loop body is not supported") from None
        c = self.truth(self.expr(test), s) if test is not None else Const(True)
        b.register_output(self.val(c).v)
        for k, v in zip(carried, init):
            now = self.env.get(k)
            if isinstance(now, Undefined) or now is None:
                raise self.error(s, f"'{k}' is not defined at the end of the loop body")
            if T.unify(ops._kind(now), v.type) != v.type:
                raise self.error(s, f"'{k}' changes type in the loop ({v.type} -> {ops._kind(now)})")
            b.register_output(self.coerce(now, v.type, s).v)
        self.pop_block()
        self.env = before
        for k, v in zip(carried, init):
            o = n.add_output(v.type)
            self.env[k] = Val(o, v.type)
        for k in assigned - set(carried):
            if k not in before:
                self.env[k] = Undefined()

    def stmt_Break(self, s):
        raise self.error(s, "break is not supported")

    def stmt_Continue(self, s):
        raise self.error(s, "continue is not supported")

    # ---- calls into modules and functions ------------------------------------------------
    def call_submodule(self, ref, args, kwargs, node):
        mod = ref.module
        from ._module import ScriptModule
        fwd = getattr(type(mod), "forward", None)
        obj = self.c.compile_method(mod, "forward")
        sig = inspect.signature(_real(fwd) if fwd is not None else None)
        bound = _bind(sig, args, kwargs, node, self, skip_self=True)
        g = obj.type
        mg = obj.method_graph("forward")
        ins = mg.inputs()[1:]
        vals = [self.coerce(a, v.type, node) for a, v in zip(bound, ins)]
        if len(vals) != len(ins):
            raise self.error(node, f"{type(mod).__name__}.forward takes {len(ins)} arguments, "
                                   f"got {len(vals)}")
        n = self.prim("prim::CallMethod", [self.module_value(ref)] + vals, 1, {"name": "forward"})
        t = mg.outputs()[0].type
        n.output().set_type(t)
        del g, ScriptModule
        return self._untuple(Val(n.output(), t))

    def _untuple(self, v):
        if T.is_tuple(v.type):
            ts = T.tuple_elems(v.type)
            u = self.prim("prim::TupleUnpack", [v], len(ts))
            for o, t in zip(u.outputs(), ts):
                o.set_type(t)
            return Tup([Val(o, t) for o, t in zip(u.outputs(), ts)])
        return v

    def call_module_method(self, m, args, kwargs, node):
        """self.helper(x): compiled inline with self bound to the same module."""
        return self.inline_function(m.fn, [m.ref] + list(args), kwargs, node)

    def inline_function(self, fn, args, kwargs, node):
        fn = _real(fn)
        src = Source(fn)
        sig = inspect.signature(fn)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise self.error(node, f"calling {fn.__qualname__}: {e}") from None
        bound.apply_defaults()
        env = {}
        hints = getattr(fn, "__annotations__", {})
        for name, v in bound.arguments.items():
            if not isinstance(v, (Const, Val, Tup, ModuleRef)):
                v = Const(v)
            if name in hints and isinstance(v, Const) and v.value is None:
                pass
            env[name] = v
        if len(self.blocks) > 60:
            raise self.error(node, f"{fn.__qualname__} recurses too deeply to inline")
        sub = FunctionBuilder(self.c, src, self_module=self.self_module, self_type=self.self_type,
                              graph=self.g, env=env, self_val=self.self_val)
        sub.blocks = list(self.blocks)
        body = restructure(sub._body(src.node))
        try:
            sub.stmts(body)
            result = Const(None)
        except _Terminated:
            result = sub.env.get(_RET, Const(None))
        self.where_now = self.src.where(node)
        return result


def _real(fn):
    from ._module import _ScriptMethodStub
    if isinstance(fn, _ScriptMethodStub):
        return fn.original
    return fn


def _bind(sig, args, kwargs, node, b, skip_self):
    try:
        bound = sig.bind(None, *args, **kwargs) if skip_self else sig.bind(*args, **kwargs)
    except TypeError as e:
        raise b.error(node, str(e)) from None
    bound.apply_defaults()
    vals = list(bound.args[1:] if skip_self else bound.args) + list(bound.kwargs.values())
    return [v if isinstance(v, (Const, Val, Tup, ModuleRef)) else Const(v) for v in vals]


def _eval_ann(node, src):
    text = ast.unparse(node)
    ns = dict(src.globals)
    ns.update(src.closure)
    import typing
    ns.setdefault("List", list)
    ns.setdefault("Optional", typing.Optional)
    ns.setdefault("Tuple", tuple)
    return eval(text, ns)  # noqa: S307 - the user's own annotation
