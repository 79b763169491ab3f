"""Python builtins, Tensor methods and list methods the script compiler handles itself
(the rest of the calls resolve against the operator registry)."""
from __future__ import annotations

import builtins

from .. import _C
from . import _script_ops as ops
from . import _types as T
from ._script import Const, ScriptError

# Python names whose op has another name.
ALIASES = {"max": "maximum", "min": "minimum", "absolute": "abs", "multiply": "mul",
           "subtract": "sub", "divide": "div", "true_divide": "div", "clip": "clamp",
           "greater": "gt", "less": "lt", "negative": "neg", "concat": "cat", "concatenate": "cat",
           "arctan2": "atan2", "swapaxes": "transpose"}


def _num(c, x, node, kind):
    t = ops._kind(x)
    if isinstance(x, Const):
        return Const({"int": int, "float": float, "bool": bool}[kind](x.value))
    if t == T.TENSOR:
        return c.emit_op({"int": "aten::Int.Tensor", "float": "aten::Float.Tensor",
                          "bool": "aten::Bool.Tensor"}[kind], [x], node)
    if t == kind:
        return x
    table = {("int", "float"): "aten::Int.float", ("int", "bool"): "aten::Int.bool",
             ("float", "int"): "aten::Float.int", ("bool", "int"): "aten::Bool.int",
             ("bool", "float"): "aten::Bool.float"}
    q = table.get((kind, t))
    if q is None:
        raise c.error(node, f"cannot convert a {t} to {kind}")
    return c.emit_op(q, [x], node)


def call_builtin(c, fn, args, kwargs, node):
    """A call to a Python builtin or an ember function the compiler emits itself, or
    NotImplemented."""
    import ember
    all_const = all(isinstance(a, Const) for a in args) and \
        all(isinstance(v, Const) for v in kwargs.values())
    if fn is builtins.len:
        x = args[0]
        t = ops._kind(x)
        from ._script_expr import Tup
        if isinstance(x, Tup):
            return Const(len(x.items))
        if isinstance(x, Const):
            return Const(len(x.value)) if not isinstance(x.value, _C.Tensor) else \
                c.emit_op("aten::len.Tensor", [c.val(x)], node)
        if t == T.TENSOR:
            return c.emit_op("aten::len.Tensor", [x], node)
        if T.is_list(t):
            return c.emit_op("aten::len.t", [x], node)
        raise c.error(node, f"len() of a {t}")
    if fn in (builtins.int, builtins.float, builtins.bool) and len(args) == 1 and not kwargs:
        return _num(c, args[0], node, fn.__name__)
    if fn is builtins.isinstance and len(args) == 2:
        x, cls = args
        if isinstance(x, Const):
            return NotImplemented
        t = ops._kind(x)
        want = cls.value if isinstance(cls, Const) else None
        want = want if isinstance(want, tuple) else (want,)
        names = set()
        for w in want:
            if w is ember.Tensor or w is _C.Tensor:
                names.add(T.TENSOR)
            elif w in (int, float, bool, str):
                names.add({int: T.INT, float: T.FLOAT, bool: T.BOOL, str: T.STR}[w])
            elif w in (list,):
                names.add("list")
            elif w in (tuple,):
                names.add("tuple")
        hit = t in names or (T.is_list(t) and "list" in names) or (T.is_tuple(t) and "tuple" in names)
        return Const(hit)
    if fn is builtins.print:
        vals = [c.val(a) if not (isinstance(a, Const) and isinstance(a.value, str)) else c.val(a)
                for a in args]
        c.prim("prim::Print", vals, 0)
        return Const(None)
    if fn in (builtins.min, builtins.max) and not all_const:
        name = fn.__name__
        if len(args) == 1 and T.is_list(ops._kind(args[0])):
            return c.emit_op(f"prim::{name}.int_list", args, node)
        if len(args) == 2:
            ta, tb = ops._kind(args[0]), ops._kind(args[1])
            if T.TENSOR in (ta, tb):
                return c.call_op("maximum" if name == "max" else "minimum", list(args), {}, node)
            kind = "float" if T.FLOAT in (ta, tb) else "int"
            return c.emit_op(f"aten::{name}.{kind}", args, node)
        raise c.error(node, f"{name}() of these arguments is not supported")
    if fn is builtins.abs and not all_const:
        t = ops._kind(args[0])
        if t == T.TENSOR:
            return c.call_op("abs", args, {}, node)
        if t == T.INT:
            return c.emit_op("aten::abs.int", args, node)
    if fn is builtins.list and len(args) == 1 and not all_const:
        t = ops._kind(args[0])
        if T.is_list(t):
            return c.emit_op("aten::list.t", args, node)
        from ._script_expr import Tup
        if isinstance(args[0], Tup):
            return c.coerce(args[0], T.list_of(ops._kind(args[0].items[0]) if args[0].items else T.INT))
    if fn is builtins.tuple and len(args) == 1:
        from ._script_expr import Tup
        if isinstance(args[0], Tup):
            return args[0]
        t = ops._kind(args[0])
        if T.is_list(t) and not isinstance(args[0], Const):
            return args[0]  # sizes stay a list (what the ops take)
    name = getattr(fn, "__name__", "")
    if name in _LIKE_FILL and fn is getattr(_C, name, None) and args:
        return _like_factory(c, name, args, kwargs, node)
    if name in ("conv1d", "conv2d", "conv3d") and fn is getattr(ember.nn.functional, name, None):
        return _conv(c, name, args, kwargs, node)
    if fn is builtins.type and len(args) == 1:
        from ._script import ModuleRef
        if isinstance(args[0], ModuleRef):  # type(self).__name__ in messages
            return Const(type(args[0].module))
    if fn is builtins.str and len(args) == 1 and not all_const:
        return c.emit_op("aten::str", [c.val(args[0])], node)
    if fn is builtins.range:
        raise c.error(node, "range() is supported in for loops only")
    if fn in (builtins.getattr, builtins.hasattr) and len(args) >= 2:
        from ._script import ModuleRef
        if isinstance(args[1], Const) and isinstance(args[0], ModuleRef):
            if fn is builtins.hasattr:
                return Const(hasattr(args[0].module, args[1].value))
            return c.module_attribute(args[0], args[1].value, node)
    if fn is getattr(ember, "arange", None) and not all_const:
        return _arange(c, args, kwargs, node)
    if fn in (getattr(ember, "tensor", None), getattr(ember.jit, "annotate", None)):
        if fn is getattr(ember.jit, "annotate", None):
            return args[1]
        if all_const:
            return c.run_python(fn, args, kwargs, node, fresh=True)
    if fn in (getattr(ember.jit, "is_scripting", None),):
        return Const(True)
    if fn in (getattr(ember.jit, "is_tracing", None),):
        return Const(False)
    return NotImplemented


_LIKE_FILL = {"zeros_like": 0, "ones_like": 1, "empty_like": None, "full_like": "arg"}


def _like_factory(c, name, args, kwargs, node):
    """zeros_like/ones_like/full_like/empty_like(x, [fill], dtype=, device=): empty_like
    then fill_, the ops a trace of them records."""
    kwargs = dict(kwargs)
    x = args[0]
    fill = _LIKE_FILL[name]
    if fill == "arg":
        if len(args) < 2 and "fill_value" not in kwargs:
            raise c.error(node, "full_like() missing its fill_value")
        fill = args[1] if len(args) > 1 else kwargs.pop("fill_value")
    elif len(args) > 1:
        raise c.error(node, f"{name}() takes 1 positional argument")
    dtype = kwargs.pop("dtype", Const(None))
    device = kwargs.pop("device", Const(None))
    kwargs.pop("layout", None)
    rg = kwargs.pop("requires_grad", Const(False))
    if kwargs or not (isinstance(rg, Const) and not rg.value):
        raise c.error(node, f"{name}(): only dtype= and device= are supported in scripts")
    t = c.emit_op("aten::empty_like", [x, dtype, device], node)
    if fill is None:
        return t
    return c.emit_op("aten::fill_.Scalar", [t, fill if not isinstance(fill, int) else Const(fill)],
                     node)


def _conv(c, name, args, kwargs, node):
    """F.conv1d/2d/3d: the Python wrapper's argument normalization at compile time (the
    options are constants in every module), then aten::convolution."""
    from ..nn._functional import conv as fconv
    nsp = int(name[4])
    names = ["input", "weight", "bias", "stride", "padding", "dilation", "groups"]
    defaults = [None, None, Const(None), Const(1), Const(0), Const(1), Const(1)]
    bound = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names or k in bound:
            raise c.error(node, f"{name}() got an unexpected keyword argument '{k}'")
        bound[k] = v
    vals = [bound.get(k, d) for k, d in zip(names, defaults)]
    if vals[0] is None or vals[1] is None:
        raise c.error(node, f"{name}() needs input and weight")
    opts = vals[3:]
    if not all(isinstance(o, Const) for o in opts):
        raise c.error(node, f"{name}(): stride, padding, dilation and groups must be constants "
                            "in a script")
    stride, padding, dilation, groups = (o.value for o in opts)
    stride = fconv._ntuple(stride, nsp, name, "stride")
    dilation = fconv._ntuple(dilation, nsp, name, "dilation")
    if isinstance(padding, str):
        if padding != "valid":
            raise c.error(node, f"{name}(): padding={padding!r} is not supported in scripts; "
                                "give the padding as numbers")
        lo = hi = (0,) * nsp
    else:
        lo = hi = fconv._ntuple(padding, nsp, name, "padding")
    cst = [Const(list(stride)), Const(list(lo)), Const(list(hi)), Const(list(dilation)),
           Const(False), Const([0] * nsp), Const(int(groups)), Const(name)]
    return c.emit_op("aten::convolution", vals[:3] + cst, node)


def _arange(c, args, kwargs, node):
    a = list(args)
    if len(a) == 1:
        a = [Const(0), a[0], Const(1)]
    elif len(a) == 2:
        a = a + [Const(1)]
    return c.call_op("arange", a, kwargs, node)


def tensor_method(c, x, name, args, kwargs, node):
    """Tensor methods whose Python signature the registry's ops do not spell."""
    if name == "size":
        if not args and not kwargs:
            return c.emit_op("aten::size", [x], node)
        d = args[0] if args else kwargs["dim"]
        return c.emit_op("aten::size.int", [x, d], node)
    if name == "dim" or name == "ndimension":
        return c.emit_op("aten::dim", [x], node)
    if name == "numel" or name == "nelement":
        return c.emit_op("aten::numel", [x], node)
    if name == "item":
        return c.emit_op("aten::item", [x], node)
    if name in _DTYPE_NAMES:
        import ember
        return c.emit_op("aten::to.dtype", [x, c.val(Const(getattr(ember, _DTYPE_NAMES[name]))),
                                            Const(False)], node)
    if name == "cpu":
        return c.emit_op("aten::to.device", [x, c.val(Const(_C.device("cpu"))), Const(False)], node)
    if name == "cuda":
        return c.emit_op("aten::to.device", [x, c.val(Const(_C.device("cuda"))), Const(False)], node)
    if name == "to":
        target = args[0] if args else kwargs.get("dtype", kwargs.get("device"))
        if target is None:
            raise c.error(node, "Tensor.to() needs a dtype or a device")
        t = ops._kind(target)
        copy = kwargs.get("copy", Const(False))
        if t == T.DTYPE:
            return c.emit_op("aten::to.dtype", [x, target, copy], node)
        if t in (T.DEVICE, T.STR):
            return c.emit_op("aten::to.device", [x, c.coerce(target, T.DEVICE), copy], node)
        if t == T.TENSOR:
            dt = c.emit_op("prim::dtype", [target], node)
            return c.emit_op("aten::to.dtype", [x, dt, copy], node)
        raise c.error(node, f"Tensor.to({t}) is not supported")
    if name == "type_as":
        dt = c.emit_op("prim::dtype", [args[0]], node)
        return c.emit_op("aten::to.dtype", [x, dt, Const(False)], node)
    if name == "view_as" or name == "reshape_as" or name == "expand_as":
        size = c.emit_op("aten::size", [args[0]], node)
        return c.call_op({"view_as": "view", "reshape_as": "reshape", "expand_as": "expand"}[name],
                         [x, size], {}, node)
    if name in ("tolist", "numpy", "data_ptr", "backward", "register_hook"):
        raise c.error(node, f"Tensor.{name}() cannot run in a compiled graph")
    if name in ("view", "reshape", "permute", "expand", "repeat", "flip") and len(args) == 1:
        a = args[0]
        if isinstance(a, Const) and isinstance(a.value, int):
            return NotImplemented
    return NotImplemented


_DTYPE_NAMES = {"float": "float32", "double": "float64", "half": "float16", "long": "int64",
                "int": "int32", "short": "int16", "bool": "bool", "bfloat16": "bfloat16",
                "byte": "uint8", "char": "int8"}


def list_method(c, lst, name, args, kwargs, node):
    et = T.elem(lst.type)
    if name == "append":
        v = c.coerce(args[0], et, node) if et != T.ANY else c.val(args[0])
        c.emit_op("aten::append.t", [lst, v], node)
        return Const(None)
    if name == "extend":
        c.emit_op("aten::add_.t", [lst, c.coerce(args[0], lst.type, node)], node)
        return Const(None)
    if name == "copy":
        return c.emit_op("aten::list.t", [lst], node)
    raise ScriptError(f"ember.jit.script: list.{name} is not supported ({c.src.where(node)})")
