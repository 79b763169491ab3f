"""ember.jit.trace: run a function once and record its ops (Note [Tracing] in
csrc/ember/jit/tracer.h), with guards where the traced program depended on a value.

Note [Traced sizes]
While tracing, ``Tensor.size()``, ``.shape``, ``.dim()``, ``.numel()`` and ``len()``
return ``TracedInt``s: ints (every int operation works) that also name a value of the
graph (``aten::size``). Arithmetic between them and plain ints records int ops, so
``x.view(x.size(0), -1)`` or ``q.reshape(tgt_len, bsz * heads, head_dim)`` keep the
batch size dynamic, as PyTorch's tracer does. When a TracedInt reaches ember's C++
functions, the call's ints are handed to the tracer (``set_pending``) and the op that
records next lines its int arguments up with them; a size the op used where the
alignment is exact becomes a graph input of that op. Wherever a size is instead turned
into a plain number the graph cannot follow (a comparison, ``bool``, ``int()``,
``range()``, a size passed where an op computes something else from it), the tracer
records a guard on it with the source line, so a later call with another size either
takes the same path or raises naming that line (PyTorch bakes such values silently).
Sizes 0 and 1 stay specialized (guarded), as PyTorch's dynamic shapes do.

The patches that make this work (TracedInt-returning size queries, guards on
``bool``/``item``/``tolist``, module scopes on ``Module.__call__`` and the int
hand-off on every C function) are installed only while a trace runs on some thread
and do nothing on threads that are not tracing.
"""
from __future__ import annotations

import functools
import sys
import threading
import types

from .. import _C
from ..nn.modules.module import Module
from . import _module

__all__ = ["trace", "trace_module", "TracerWarning", "TracingCheckError", "is_tracing",
           "TracedInt", "_untraced"]


class TracerWarning(Warning):
    """A warning about something the trace may not capture (torch.jit.TracerWarning)."""


class TracingCheckError(Exception):
    """The traced function does not reproduce the original's outputs (check_trace=True)."""


_local = threading.local()


def _st():
    st = getattr(_local, "st", None)
    if st is None:
        st = _local.st = types.SimpleNamespace(tracer=None, busy=0, scopes=[], memo={},
                                               paths={}, methods={})
    return st


def is_tracing():
    """True inside a function being traced on this thread (torch.jit.is_tracing)."""
    return _st().tracer is not None


class _untraced:
    """``with ember.jit._untraced():`` runs code that is not part of the traced program
    (logging, assertions on values): nothing in it is recorded, refused or guarded."""

    def __enter__(self):
        st = _st()
        self._saved = (st.tracer, _C._jit_pause_tracing())
        st.tracer = None
        return self

    def __exit__(self, *exc):
        st = _st()
        st.tracer = self._saved[0]
        _C._jit_resume_tracing(self._saved[1])
        return False


class _Busy:
    """Marks the inside of a patch: nested patched calls go straight to the originals."""

    def __enter__(self):
        _st().busy += 1

    def __exit__(self, *exc):
        _st().busy -= 1
        return False


def _active():
    st = _st()
    return st.tracer if (st.tracer is not None and not st.busy) else None


# ---- TracedInt ---------------------------------------------------------------------------

_BINOPS = {"add": int.__add__, "sub": int.__sub__, "mul": int.__mul__,
           "floordiv": int.__floordiv__, "remainder": int.__mod__}
_CMPS = {"eq": int.__eq__, "ne": int.__ne__, "lt": int.__lt__, "le": int.__le__,
         "gt": int.__gt__, "ge": int.__ge__}


def _operand(x):
    """(handle, value) of an int operand, or None when it is not an int."""
    if isinstance(x, TracedInt) and x._tracer is _st().tracer:
        return x._h, int(x._v)
    if isinstance(x, int) and not isinstance(x, bool):
        return -1, int(x)
    return None


class TracedInt(int):
    """An int that also names a value of the graph being traced (Note [Traced sizes])."""

    def __new__(cls, value, handle, tracer, what):
        o = int.__new__(cls, value)
        o._v = int(value)
        o._h = handle
        o._tracer = tracer
        o._what = what
        return o

    def _live(self):
        t = _st().tracer
        return t if (t is not None and t is self._tracer and not _st().busy) else None

    def _bake(self, how):
        t = self._live()
        if t is not None:
            t.guard_sym_value(self._h, f"{self._what} (used as {how})")
        return self._v

    def _binop(self, other, op, reflected=False):
        t = self._live()
        o = _operand(other)
        if t is None or o is None:
            a, b = (other, self._v) if reflected else (self._v, other)
            if o is None and t is not None and not isinstance(other, int):
                self._bake(f"{type(other).__name__} arithmetic")
            return getattr(int, f"__{'r' if reflected else ''}{_PYOP[op]}__")(self._v, other)
        (ha, va), (hb, vb) = ((o, (self._h, self._v)) if reflected else ((self._h, self._v), o))
        result = _BINOPS[op](va, vb)
        h = t.sym_op(f"aten::{op}.int", ha, va, hb, vb, result)
        what = f"({_desc(ha, va, self)} {_SYMBOL[op]} {_desc(hb, vb, self)})"
        return TracedInt(result, h, t, what)

    def __add__(self, o): return self._binop(o, "add")
    def __radd__(self, o): return self._binop(o, "add", True)
    def __sub__(self, o): return self._binop(o, "sub")
    def __rsub__(self, o): return self._binop(o, "sub", True)
    def __mul__(self, o): return self._binop(o, "mul")
    def __rmul__(self, o): return self._binop(o, "mul", True)
    def __floordiv__(self, o): return self._binop(o, "floordiv")
    def __rfloordiv__(self, o): return self._binop(o, "floordiv", True)
    def __mod__(self, o): return self._binop(o, "remainder")
    def __rmod__(self, o): return self._binop(o, "remainder", True)

    def __neg__(self):
        return self._binop(0, "sub", True)

    def __pos__(self):
        return self

    def _cmp(self, other, op):
        t = self._live()
        o = _operand(other)
        result = _CMPS[op](self._v, other if o is None else o[1]) if o is not None else \
            getattr(int, f"__{op}__")(self._v, other)
        if t is None or result is NotImplemented:
            return result
        if o is None:
            self._bake("a comparison")
            return result
        t.guard_sym_compare(op, self._h, self._v, o[0], o[1], bool(result),
                            f"{self._what} {_CMP_SYMBOL[op]} {_desc(o[0], o[1], self)}")
        return result

    def __eq__(self, o): return self._cmp(o, "eq")
    def __ne__(self, o): return self._cmp(o, "ne")
    def __lt__(self, o): return self._cmp(o, "lt")
    def __le__(self, o): return self._cmp(o, "le")
    def __gt__(self, o): return self._cmp(o, "gt")
    def __ge__(self, o): return self._cmp(o, "ge")

    def __bool__(self):
        t = self._live()
        if t is not None:
            t.guard_sym_compare("ne", self._h, self._v, -1, 0, self._v != 0, f"bool({self._what})")
        return self._v != 0

    def __index__(self): return self._bake("an index or range")
    def __int__(self): return self._bake("int()")
    def __float__(self): return float(self._bake("float()"))
    def __hash__(self): return hash(self._bake("a dict key"))
    def __truediv__(self, o): return self._bake("true division") / o
    def __rtruediv__(self, o): return o / self._bake("true division")
    def __pow__(self, o, m=None): return pow(self._bake("a power"), o, m)
    def __rpow__(self, o): return pow(o, self._bake("a power"))
    def __abs__(self): return abs(self._bake("abs()"))
    def __repr__(self): return repr(self._v)
    def __str__(self): return str(self._v)
    def __format__(self, spec): return format(self._v, spec)
    def __reduce__(self): return (int, (self._v,))


_PYOP = {"add": "add", "sub": "sub", "mul": "mul", "floordiv": "floordiv", "remainder": "mod"}
_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "remainder": "%"}
_CMP_SYMBOL = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _desc(h, v, ref):
    return ref._what if h == ref._h else str(v)


# ---- patches ------------------------------------------------------------------------------

_patch_lock = threading.Lock()
_patch_count = 0
_saved = []  # (owner, name, original)


def _sym_size(t, d, tracer):
    n = t.dim()
    d = d + n if d < 0 else d
    return TracedInt(_orig("size")(t, d), tracer.sym_size(t, d), tracer, f"a size of a tensor: size({d})")


def _orig(name):
    return _originals[name]


_originals = {}


def _p_size(self, dim=None):
    t = _active()
    if t is None or not t.has_value(self):
        return _orig("size")(self, dim) if dim is not None else _orig("size")(self)
    with _Busy():
        if dim is not None:
            return _sym_size(self, dim.__index__(), t)
        from .._size import Size
        return Size(_sym_size(self, i, t) for i in range(_orig("dim")(self)))


def _p_shape(self):
    return _p_size(self)


def _p_len(self):
    t = _active()
    if t is None or not t.has_value(self):
        return _orig("__len__")(self)
    if _orig("dim")(self) == 0:
        return _orig("__len__")(self)
    with _Busy():
        return _sym_size(self, 0, t)


def _guarded(name, kind):
    orig = _originals[name]

    @functools.wraps(orig)
    def wrapper(self, *args, **kwargs):
        t = _active()
        if t is None:
            return orig(self, *args, **kwargs)
        with _Busy():
            r = orig(self, *args, **kwargs)
            if t.has_value(self):
                if kind == "bool":
                    t.guard_tensor_bool(self, bool(r), "bool(tensor)")
                elif kind == "item":
                    t.guard_tensor_item(self, r, f"tensor.{name}()" if name == "item" else
                                        f"{name.strip('_')}(tensor)")
                else:
                    t.guard_tensor_values(self, f"tensor.{name}()")
        return r
    return wrapper


def _paused(name):
    orig = _originals[name]

    @functools.wraps(orig)
    def wrapper(self, *args, **kwargs):
        if _st().tracer is None:
            return orig(self, *args, **kwargs)
        with _untraced(), _Busy():
            return orig(self, *args, **kwargs)
    return wrapper


def _note_ints(args, kwargs):
    """The call's ints in order, as (value, sym handle or -1) (Note [Traced sizes])."""
    out = []
    tracer = _st().tracer

    def add(x, depth):
        if isinstance(x, bool):
            return
        if isinstance(x, TracedInt):
            out.append((x._v, x._h if x._tracer is tracer else -1))
        elif isinstance(x, int):
            out.append((int(x), -1))
        elif isinstance(x, (tuple, list)) and depth < 2:
            for y in x:
                add(y, depth + 1)
        elif isinstance(x, slice):
            for y in (x.start, x.stop, x.step):
                if y is not None:
                    add(y, depth + 1)
    for a in args:
        add(a, 0)
    for a in kwargs.values():
        add(a, 0)
    return out


def _c_wrapper(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        st = _st()
        if st.tracer is not None and not st.busy:
            ints = _note_ints(args, kwargs)
            if any(h >= 0 for _, h in ints):
                st.tracer.set_pending(ints)
            else:
                st.tracer.flush_pending()
        return fn(*args, **kwargs)
    wrapper.__ember_jit_wrapped__ = fn
    return wrapper


_TENSOR_GUARDED = {"item": "item", "__bool__": "bool", "__float__": "item", "__int__": "item",
                   "__index__": "item", "tolist": "values", "numpy": "values"}
_TENSOR_PAUSED = ("__repr__", "__str__", "__format__")
_TENSOR_SIZES = {"size": _p_size, "__len__": _p_len}
_SKIP_DUNDERS = {"__init__", "__new__", "__getattribute__", "__setattr__", "__delattr__",
                 "__class__", "__hash__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
                 "__ge__", "__repr__", "__str__", "__format__", "__bool__", "__float__",
                 "__int__", "__index__", "__len__", "__iter__", "__reduce__", "__reduce_ex__",
                 "__copy__", "__deepcopy__", "__array__", "__array_interface__", "__dir__",
                 "__sizeof__", "__init_subclass__", "__subclasshook__", "__getstate__",
                 "__setstate__", "__dlpack__", "__dlpack_device__", "__contains__",
                 "__reversed__", "__array_priority__"}


def _is_c_callable(v):
    return isinstance(v, (types.BuiltinFunctionType, types.BuiltinMethodType)) or \
        type(v).__name__ in ("instancemethod", "builtin_function_or_method", "method_descriptor")


def _install():
    global _patch_count
    with _patch_lock:
        _patch_count += 1
        if _patch_count > 1:
            return
        T = _C.Tensor
        for name in ("size", "dim", "numel", "__len__", *_TENSOR_GUARDED, *_TENSOR_PAUSED):
            _originals[name] = getattr(T, name)
        _originals["shape"] = T.__dict__.get("shape") or T.shape
        _originals["__call__"] = Module.__call__

        def setp(owner, name, value):
            _saved.append((owner, name, owner.__dict__.get(name, _MISSING)))
            setattr(owner, name, value)

        # C functions of _C and their re-exports: hand TracedInts over (Note [Traced sizes]).
        wrapped = {}
        for name, v in list(vars(_C).items()):
            if callable(v) and _is_c_callable(v) and not name.startswith("_jit"):
                wrapped[id(v)] = _c_wrapper(v)
                setp(_C, name, wrapped[id(v)])
        for modname, mod in list(sys.modules.items()):
            if mod is None or mod is _C or not (modname == "ember" or modname.startswith("ember.")):
                continue
            if modname.startswith("ember.jit"):
                continue
            try:
                items = list(vars(mod).items())
            except TypeError:
                continue
            for name, v in items:
                w = wrapped.get(id(v))
                if w is not None:
                    setp(mod, name, w)
        for name, v in list(vars(T).items()):
            if name in _TENSOR_SIZES or name in _TENSOR_GUARDED or name in _TENSOR_PAUSED:
                continue
            if name.startswith("__") and name not in ("__getitem__", "__setitem__"):
                continue
            if name in _SKIP_DUNDERS or name == "shape" or not _is_c_callable(v):
                continue
            setp(T, name, _c_wrapper(v))
        for name, fn in _TENSOR_SIZES.items():
            setp(T, name, fn)
        setp(T, "numel", _p_numel_fn)
        setp(T, "shape", property(_p_shape))
        for name, kind in _TENSOR_GUARDED.items():
            setp(T, name, _guarded(name, kind))
        for name in _TENSOR_PAUSED:
            setp(T, name, _paused(name))
        setp(Module, "__call__", _traced_call)
        import builtins
        setp(builtins, "range", _TracedRange)


_MISSING = object()
_real_range = range


class _RangeMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, _real_range)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, _real_range)


class _TracedRange(metaclass=_RangeMeta):
    """``range`` while a trace runs: Python's range takes an int subclass without calling
    ``__index__``, so a TracedInt bound (``range(x.dim())``, ``range(x.size(0))``) would be
    unrolled with no guard. This one guards each traced bound (Note [Traced sizes])."""

    def __new__(cls, *args):
        return _real_range(*[a._bake("a range() bound") if isinstance(a, TracedInt) else a
                             for a in args])


def _uninstall():
    global _patch_count
    with _patch_lock:
        _patch_count -= 1
        if _patch_count > 0:
            return
        while _saved:
            owner, name, value = _saved.pop()
            if value is _MISSING:
                try:
                    delattr(owner, name)
                except AttributeError:
                    pass
            else:
                setattr(owner, name, value)


def _p_numel_fn(self):
    t = _active()
    n = _originals["numel"](self)
    if t is None or not t.has_value(self):
        return n
    with _Busy():
        return TracedInt(n, t.sym_tensor_op("aten::numel", self), t,
                         "the number of elements of a tensor: numel()")


def _p_dim(self):
    t = _active()
    n = _originals["dim"](self)
    if t is None or not t.has_value(self):
        return n
    with _Busy():
        return TracedInt(n, t.sym_tensor_op("aten::dim", self), t,
                         "the number of dimensions of a tensor: dim()")


_TENSOR_SIZES["dim"] = _p_dim


# ---- module scopes ------------------------------------------------------------------------

def _flatten_tensors(x, out):
    if isinstance(x, _C.Tensor):
        out.append(x)
    elif isinstance(x, (tuple, list)):
        for y in x:
            _flatten_tensors(y, out)
    elif isinstance(x, dict):
        for y in x.values():
            _flatten_tensors(y, out)
    return out


def _traced_call(self, *args, **kwargs):
    st = _st()
    orig = _originals["__call__"]
    if st.tracer is None or st.busy or not st.scopes:
        return orig(self, *args, **kwargs)
    scope_module, scope_path = st.scopes[-1]
    if self is scope_module:
        return orig(self, *args, **kwargs)
    path = st.paths.get(id(self))
    obj = st.memo.get(id(self))
    rel = None
    if path is not None and obj is not None:
        if scope_path == "":
            rel = path
        elif path.startswith(scope_path + "."):
            rel = path[len(scope_path) + 1:]
    if rel is None:
        # Not a submodule of the module being traced here: its ops join this graph.
        return orig(self, *args, **kwargs)
    t = st.tracer
    inputs = []
    seen = set()
    for x in _flatten_tensors(list(args) + list(kwargs.values()), []):
        if id(x) not in seen:
            seen.add(id(x))
            inputs.append(x)
    parent_values = [t.value_of(x) for x in inputs]
    g = _C._jit_Graph()
    self_v = g.add_input(obj.type_name, "self")
    sub_values = [g.add_input("Tensor") for _ in inputs]
    t.push_scope(g, self_v)
    st.scopes.append((self, path))
    try:
        for x, v in zip(inputs, sub_values):
            t.set_value(x, v)
        _register_params(t, self)
        out = orig(self, *args, **kwargs)
        out_v = _output_value(t, g, out)
        g.register_output(out_v)
        t.flush_pending()
    finally:
        st.scopes.pop()
        t.pop_scope()
    name = _method_name(obj, g)
    parent_g = t.graph()
    sub = t.attr_value(rel)
    call = parent_g.create("prim::CallMethod", [sub] + parent_values, 1)
    call.set_attr("name", name)
    call.output().set_type(out_v.type)
    call.source = t.location()
    parent_g.insert(call)
    _unpack_output(t, parent_g, call.output(), out)
    return out


def _structure(g):
    """The graph's text without value names and recorded sizes: two calls of a submodule
    that ran the same ops give the same structure."""
    import re
    text = g.str(False)
    names = {}
    text = re.sub(r"%[\w.]+", lambda m: names.setdefault(m.group(0), f"%{len(names)}"), text)
    return re.sub(r"\b[A-Z][A-Za-z]*\([\d, ]*\)", "Tensor", text)


def _method_name(obj, g):
    """'forward', or forward_N when this module's earlier call traced a different graph."""
    text = _structure(g)
    known = _st().methods.setdefault(id(obj), {})
    for name, other in known.items():
        if other == text:
            return name
    name = "forward" if not known else f"forward_{len(known)}"
    known[name] = text
    obj.type.add_method(name, g)
    return name


def _register_params(t, module):
    for name, p in module.named_parameters():
        t.add_param(p, name)
    for name, b in module.named_buffers():
        t.add_param(b, name)


def _output_value(t, g, out):
    """The value of `out` in the current graph (tuples and lists built, None a constant)."""
    if isinstance(out, _C.Tensor):
        return t.value_of(out)
    if isinstance(out, (tuple, list)):
        vals = [_output_value(t, g, x) for x in out]
        kind = "prim::TupleConstruct" if isinstance(out, tuple) else "prim::ListConstruct"
        n = g.create(kind, vals, 1)
        if isinstance(out, tuple):
            n.output().set_type("(" + ", ".join(v.type for v in vals) + ")")
        else:
            elem = vals[0].type if vals and all(v.type == vals[0].type for v in vals) else "Any"
            n.output().set_type(elem + "[]")
        g.insert(n)
        return n.output()
    if out is None or isinstance(out, (bool, int, float, str)):
        if isinstance(out, TracedInt) and out._tracer is t:
            return t.sym_value(out._h)
        return t.constant(out)
    raise RuntimeError(f"ember.jit.trace: a traced function may return tensors, tuples and lists "
                       f"of them, numbers and None; got {type(out).__name__}")


def _unpack_output(t, g, value, out):
    if isinstance(out, _C.Tensor):
        t.set_value(out, value)
        return
    if isinstance(out, (tuple, list)) and _flatten_tensors(out, []):
        kind = "prim::TupleUnpack" if isinstance(out, tuple) else "prim::ListUnpack"
        n = g.create(kind, [value], len(out))
        g.insert(n)
        for i, x in enumerate(out):
            _unpack_output(t, g, n.outputs()[i], x)


# ---- trace / trace_module -----------------------------------------------------------------

def _input_values(t, g, args):
    """Graph inputs for the example inputs: tensors, and tuples/lists of them."""
    for i, a in enumerate(args):
        if isinstance(a, _C.Tensor):
            t.set_value(a, g.add_input("Tensor", f"x.{i}" if len(args) > 1 else "x"))
        elif isinstance(a, (tuple, list)) and a and all(isinstance(x, _C.Tensor) for x in a):
            typ = "(" + ", ".join("Tensor" for _ in a) + ")" if isinstance(a, tuple) else "Tensor[]"
            v = g.add_input(typ, f"x.{i}")
            n = g.create("prim::TupleUnpack" if isinstance(a, tuple) else "prim::ListUnpack", [v],
                         len(a))
            g.insert(n)
            for x, o in zip(a, n.outputs()):
                t.set_value(x, o)
        else:
            raise RuntimeError(
                f"ember.jit.trace: example input {i} is a {type(a).__name__}; traced inputs are "
                "tensors or tuples/lists of tensors (other values would be baked into the graph "
                "as constants: bind them with functools.partial, or script the function)")


def _name_inputs(g, fn, args):
    try:
        import inspect
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        ins = [v for v in g.inputs() if v.type != "" and not v.type.startswith("__ember__")]
        for v, p in zip(ins, params):
            v.set_name(p.name)
    except (TypeError, ValueError):
        pass


def _run_traced(fn, args, module=None, memo=None, paths=None):
    """Traces fn(*args) (fn is module.forward when tracing a module); returns (graph, outputs)."""
    tracer = _C._jit_Tracer()
    st = _st()
    if st.tracer is not None:
        raise RuntimeError("ember.jit.trace: tracing inside a trace is not supported")
    g = _C._jit_Graph()
    self_v = g.add_input(memo[id(module)].type_name, "self") if module is not None else None
    saved = (st.scopes, st.memo, st.paths, st.methods)
    _install()
    st.tracer = tracer
    st.scopes = [(module, "")] if module is not None else []
    st.memo = memo or {}
    st.paths = paths or {}
    st.methods = {}
    tracer.activate()
    try:
        tracer.push_scope(g, self_v)
        _input_values(tracer, g, args)
        if module is not None:
            _register_params(tracer, module)
        _name_inputs(g, fn, args)
        out = fn(*args)
        tracer.flush_pending()
        g.register_output(_output_value(tracer, g, out))
        tracer.flush_pending()
        tracer.pop_scope()
        _C._jit_pass_dce(g)  # constants a size hand-off replaced
    finally:
        tracer.deactivate()
        st.tracer = None
        st.scopes, st.memo, st.paths, st.methods = saved
        _uninstall()
    return g, out, tracer


def _detached(x):
    if isinstance(x, _C.Tensor):
        return x.detach()
    if isinstance(x, (tuple, list)):
        return type(x)(_detached(y) for y in x)
    return x


def _compare(a, b, what):
    from ..testing import assert_close
    try:
        assert_close(_detached(a), _detached(b), rtol=1e-5, atol=1e-5, equal_nan=True)
    except AssertionError as e:
        raise TracingCheckError(
            f"ember.jit.trace: the traced {what} does not reproduce the original's outputs on "
            f"the example inputs:\n{e}") from None


def _has_random(g):
    rand = {name for name, _, _, eff in _C._jit_operators() if eff == "random"}

    def walk(block_nodes):
        for n in block_nodes:
            if n.qualified_name in rand:
                return True
            for b in n.blocks():
                if walk(b.nodes()):
                    return True
        return False
    return walk(g.nodes())


def _clone_inputs(args):
    from .. import no_grad
    with no_grad():
        return tuple(a.clone() if isinstance(a, _C.Tensor) else
                     (type(a)(x.clone() for x in a) if isinstance(a, (tuple, list)) else a)
                     for a in args)


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-5, strict=True, _force_outplace=False, _module_class=None,
          _compilation_unit=None, example_kwarg_inputs=None, _store_inputs=True):
    """Runs ``func`` on ``example_inputs`` and records its ops as a graph
    (torch.jit.trace). A module gives a ``TopLevelTracedModule`` whose submodules keep
    their hierarchy; a function gives a ``ScriptFunction``. Values the function turned
    into Python values (``bool(t)``, ``t.item()``, sizes used as plain ints) become guards
    that raise when a later call would take another path (Note [Traced sizes]).
    ``check_trace`` runs the result on the example inputs and compares with the original.
    """
    if example_inputs is None and example_kwarg_inputs is not None:
        raise RuntimeError("ember.jit.trace: example_kwarg_inputs are not supported; pass "
                           "example_inputs positionally")
    if isinstance(example_inputs, _C.Tensor) or not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    if isinstance(func, _module.ScriptModule) and getattr(func, "_c", None) is not None:
        return func  # already a graph
    if isinstance(func, Module):
        return trace_module(func, {"forward": example_inputs}, check_trace=check_trace,
                            check_inputs=check_inputs, check_tolerance=check_tolerance,
                            strict=strict)
    if not callable(func):
        raise TypeError(f"ember.jit.trace: expected a function or module, got {type(func).__name__}")
    if isinstance(func, _module.ScriptFunction):
        return func
    originals = _clone_inputs(example_inputs) if check_trace else None
    g, out, _ = _run_traced(func, example_inputs)
    name = getattr(func, "__name__", "fn")
    fn = _C._jit_Function(name, g)
    sf = _module.ScriptFunction(fn, original=None, name=name)
    if check_trace:
        if not _has_random(g):
            _compare(sf(*originals), out, f"function {name}")
        for inputs in check_inputs or ():
            inputs = inputs if isinstance(inputs, tuple) else (inputs,)
            if not _has_random(g):
                _compare(sf(*inputs), func(*inputs), f"function {name}")
    return sf


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None,
                 check_tolerance=1e-5, strict=True, _force_outplace=False,
                 _module_class=None, _compilation_unit=None, example_inputs_is_kwarg=False,
                 _store_inputs=True):
    """Traces the methods of ``mod`` named in ``inputs`` ({name: example inputs})."""
    if not isinstance(mod, Module):
        raise AttributeError("ember.jit.trace_module: expected an nn.Module")
    if not isinstance(inputs, dict):
        raise AttributeError("ember.jit.trace_module: expected a dict of {method name: inputs}")
    memo = {}
    root = _module.build_object(mod, memo)
    paths = {id(m): name for name, m in mod.named_modules(remove_duplicate=False)}
    results = {}
    for method, args in inputs.items():
        if isinstance(args, _C.Tensor) or not isinstance(args, (tuple, list)):
            args = (args,)
        args = tuple(args)
        originals = _clone_inputs(args) if check_trace else None
        fn = getattr(mod, method)
        g, out, _ = _run_traced(fn, args, module=mod, memo=memo, paths=paths)
        root.type.add_method(method, g)
        results[method] = (originals, out, g)
    forward = getattr(type(mod), "forward", None)
    traced = _module.TopLevelTracedModule(root, forward_fn=None)
    object.__setattr__(traced, "_forward_signature_fn", forward)
    if check_trace:
        for method, (originals, out, g) in results.items():
            if _has_random(g) or mod.training and _has_random(traced.inlined_graph):
                continue
            got = traced(*originals) if method == "forward" else getattr(traced, method)(*originals)
            _compare(got, out, f"module's {method}")
    return traced
