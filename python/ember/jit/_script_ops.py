"""Resolving a call against the operator registry (Note [Script compiler]): schemas,
overloads by argument type, kwargs, defaults and the conversions TorchScript allows."""
from __future__ import annotations

from .. import _C
from . import _types as T

_by_name = None
_schemas = {}

# Python keyword names that differ from the C++ front-ends' argument names.
_KW_ALIASES = {
    "start_dim": "start", "end_dim": "end", "input": "self", "other": "b", "dims": "dim",
    "negative_slope": "slope", "min_val": "min_val", "size": "size", "shape": "size",
    "tensors": "tensors", "mat2": "b", "vec2": "b", "out": "out",
}
# Defaults the Python API has and the front-end's declaration does not.
_EXTRA_DEFAULTS = {
    "aten::flatten": {"start": 0, "end": -1},
    "aten::transpose": {},
    "aten::unbind": {"dim": 0},
    "aten::split": {"dim": 0},
    "aten::chunk": {"dim": 0},
    "aten::split_with_sizes": {"dim": 0},
    "aten::slice": {"dim": 0, "start": None, "end": None, "step": 1},
    "aten::diagonal": {"offset": 0, "dim1": 0, "d2": 1},
    "aten::tril": {"diagonal": 0}, "aten::triu": {"diagonal": 0},
    "aten::cumsum": {"dtype": None},
    "aten::mse_loss": {"reduction": 1}, "aten::l1_loss": {"reduction": 1},
    "aten::cross_entropy": {"weight": None, "reduction": 1},
    "aten::nll_loss": {"weight": None, "reduction": 1},
    "aten::glu": {"dim": -1},
    "aten::var": {}, "aten::std": {},
    "aten::where.self": {},
    "aten::to.dtype": {"copy": False}, "aten::to.device": {"copy": False},
    "aten::max_pool": {}, "aten::linear": {"bias": None},
    "aten::layer_norm": {"weight": None, "bias": None, "eps": 1e-5},
    "aten::alias": {"share_version": True},
}
_FACTORY_DEFAULTS = ("aten::zeros", "aten::ones", "aten::full", "aten::rand", "aten::randn",
                     "aten::eye", "aten::linspace", "aten::logspace", "aten::randint",
                     "aten::randperm", "aten::arange", "aten::empty_strided")


def ops_named(base):
    """Qualified names of the overloads of ``aten::base`` in registration order."""
    global _by_name
    if _by_name is None:
        _by_name = {}
        for q, _, _, _ in _C._jit_operators():
            _by_name.setdefault(q.split(".")[0], []).append(q)
    return _by_name.get(base, [])


def schema(q):
    s = _schemas.get(q)
    if s is None:
        args, rets = _C._jit_operator_schema(q)
        extra = dict(_EXTRA_DEFAULTS.get(q.split(".")[0], {}))
        extra.update(_EXTRA_DEFAULTS.get(q, {}))
        if q.split(".")[0] in _FACTORY_DEFAULTS:
            import ember
            extra.setdefault("dtype", ember.get_default_dtype())
            extra.setdefault("device", _C.device("cpu"))
            extra.setdefault("generator", None)
        fixed = []
        for name, typ, dflt, kwonly, lsize in args:
            if dflt is Ellipsis and name in extra:
                dflt = extra[name]
            fixed.append((name, typ, dflt, kwonly, lsize))
        s = _schemas[q] = (fixed, rets)
    return s


def _is_int_like(t):
    return t in (T.INT,)


def _kind(x):
    """The type of a compile-time or graph value (tuples of values are tuples)."""
    from ._script import Const, Val
    from ._script_expr import Tup
    if isinstance(x, Val):
        return x.type
    if isinstance(x, Tup):
        return T.tuple_of([_kind(i) for i in x.items])
    if isinstance(x, Const):
        return T.type_of_value(x.value)
    return None


def accepts(t_given, t_want, strict):
    """0 no, 1 with a conversion, 2 exactly."""
    if t_given is None:
        return 0
    if t_given == t_want:
        return 2
    if t_want == T.ANY:
        return 2
    if T.is_optional(t_want):
        if t_given == T.NONE:
            return 2
        return accepts(t_given, T.elem(t_want), strict)
    if t_want == T.NUMBER:
        return 2 if t_given in (T.INT, T.FLOAT, T.BOOL) else 0
    if t_want == T.FLOAT and t_given == T.INT:
        return 1
    if t_want in (T.TENSOR,) and t_given in (T.INT, T.FLOAT, T.BOOL):
        return 0 if strict else 1
    if T.is_list(t_want):
        if t_given == T.INT and T.elem(t_want) == T.INT:
            return 1
        if T.is_list(t_given):
            eg, ew = T.elem(t_given), T.elem(t_want)
            if eg == ew or ew == T.ANY:
                return 2
            if eg == T.ANY:
                return 1
            if ew == T.FLOAT and eg == T.INT:
                return 1
            if T.is_optional(ew) and accepts(eg, ew, strict):
                return 1
            return 0
        if T.is_tuple(t_given):
            ew = T.elem(t_want)
            if all(accepts(e, ew, strict) for e in T.tuple_elems(t_given)):
                return 1
        return 0
    if t_want == T.DEVICE and t_given == T.STR:
        return 1
    return 0


def match(q, args, kwargs, strict):
    """(score, [bound args in schema order]) or None."""
    sargs, _ = schema(q)
    slots = [None] * len(sargs)
    pos = list(args)
    positional = [k for k, a in enumerate(sargs) if not a[3]]
    i = 0
    for idx, k in enumerate(positional):
        if i >= len(pos):
            break
        typ = sargs[k][1]
        remaining_params = len(positional) - idx
        extra = len(pos) - i - remaining_params
        if T.is_list(typ) and T.elem(typ) == T.INT and extra > 0 and _kind(pos[i]) == T.INT:
            from ._script_expr import Tup
            slots[k] = Tup(pos[i:i + extra + 1])
            i += extra + 1
            continue
        slots[k] = pos[i]
        i += 1
    if i < len(pos):
        return None
    names = [a[0] for a in sargs]
    for name, v in kwargs.items():
        key = name if name in names else _KW_ALIASES.get(name)
        if key not in names:
            return None
        k = names.index(key)
        if slots[k] is not None:
            return None
        slots[k] = v
    from ._script import Const
    score = 0
    for k, (_name, typ, dflt, _, _) in enumerate(sargs):
        if slots[k] is None:
            if dflt is Ellipsis:
                return None
            slots[k] = Const(dflt)
            continue
        a = accepts(_kind(slots[k]), typ, strict)
        if a == 0:
            return None
        score += a
    return score, slots


def resolve(candidates, args, kwargs):
    """The best overload among qualified names: exact matches first."""
    for strict in (True, False):
        best = None
        for q in candidates:
            m = match(q, args, kwargs, strict)
            if m is not None and (best is None or m[0] > best[0]):
                best = (m[0], q, m[1])
        if best is not None:
            return best[1], best[2]
    return None, None
