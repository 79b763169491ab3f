"""Types of the script compiler, spelled as the C++ IR prints them ("Tensor", "int[]",
"Tensor?", "(Tensor, int)", "__ember__.pkg.Module"), and Python annotations to them."""
from __future__ import annotations

import typing

from .. import _C

TENSOR, INT, FLOAT, BOOL, STR, NONE, ANY = "Tensor", "int", "float", "bool", "str", "NoneType", "Any"
DTYPE, DEVICE, NUMBER = "ScalarType", "Device", "Scalar"


def is_list(t):
    return t.endswith("[]")


def is_optional(t):
    return t.endswith("?")


def is_tuple(t):
    return t.startswith("(")


def is_object(t):
    return t.startswith("__ember__")


def elem(t):
    """The element type of a list or optional."""
    return t[:-2] if is_list(t) else t[:-1]


def list_of(t):
    return t + "[]"


def optional(t):
    if t in (NONE, ANY) or is_optional(t):
        return t
    if is_tuple(t) or "[" in t:
        return t + "?"
    return t + "?"


def tuple_of(ts):
    return "(" + ", ".join(ts) + ")"


def tuple_elems(t):
    """Element types of "(A, B[], (C, D))"."""
    inner = t[1:-1]
    out, depth, cur = [], 0, ""
    for ch in inner:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def subtype(a, b):
    """True when a value of type a may be passed where b is expected."""
    if a == b or b == ANY:
        return True
    if is_optional(b):
        return a == NONE or subtype(a, elem(b)) or (is_optional(a) and subtype(elem(a), elem(b)))
    if b == NUMBER:
        return a in (INT, FLOAT, BOOL, NUMBER)
    if is_list(a) and is_list(b):
        return elem(a) == ANY or subtype(elem(a), elem(b)) and elem(a) == elem(b)
    if is_tuple(a) and is_tuple(b):
        ea, eb = tuple_elems(a), tuple_elems(b)
        return len(ea) == len(eb) and all(subtype(x, y) for x, y in zip(ea, eb))
    return False


def unify(a, b):
    """A type both values fit in, or None (If outputs, list elements)."""
    if a == b:
        return a
    if a == NONE:
        return optional(b)
    if b == NONE:
        return optional(a)
    if is_optional(a) and subtype(b, elem(a)):
        return a
    if is_optional(b) and subtype(a, elem(b)):
        return b
    if {a, b} == {INT, FLOAT}:
        return None  # TorchScript does not merge them either
    if is_tuple(a) and is_tuple(b):
        ea, eb = tuple_elems(a), tuple_elems(b)
        if len(ea) == len(eb):
            parts = [unify(x, y) for x, y in zip(ea, eb)]
            if all(p is not None for p in parts):
                return tuple_of(parts)
    return None


def type_of_value(v):
    """The type of a Python constant."""
    if v is None:
        return NONE
    if isinstance(v, bool):
        return BOOL
    if isinstance(v, int):
        return INT
    if isinstance(v, float):
        return FLOAT
    if isinstance(v, str):
        return STR
    if isinstance(v, _C.Tensor):
        return TENSOR
    if isinstance(v, _C.dtype):
        return DTYPE
    if isinstance(v, _C.device):
        return DEVICE
    if isinstance(v, tuple):
        return tuple_of([type_of_value(x) for x in v])
    if isinstance(v, list):
        ts = {type_of_value(x) for x in v}
        return list_of(ts.pop() if len(ts) == 1 else (INT if not v else ANY))
    return None


def from_annotation(ann, where=""):
    """The IR type of a Python annotation (typing or builtin generics, strings too)."""
    import ember
    if ann is None or ann is type(None):
        return NONE
    if isinstance(ann, str):
        ann = _eval_annotation(ann)
    if ann is ember.Tensor or ann is _C.Tensor or (isinstance(ann, type) and issubclass(ann, _C.Tensor)):
        return TENSOR
    simple = {int: INT, float: FLOAT, bool: BOOL, str: STR}
    if ann in simple:
        return simple[ann]
    if ann is typing.Any:
        return ANY
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if origin in (list, list):
        return list_of(from_annotation(args[0], where) if args else TENSOR)
    if origin in (tuple, tuple):
        return tuple_of([from_annotation(a, where) for a in args])
    if origin is typing.Union:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            return optional(from_annotation(rest[0], where))
    try:
        import types as _types
        if isinstance(ann, _types.UnionType):
            rest = [a for a in ann.__args__ if a is not type(None)]
            if len(rest) == 1:
                return optional(from_annotation(rest[0], where))
    except AttributeError:
        pass
    raise _unsupported_annotation(ann, where)


def _eval_annotation(s):
    import ember
    ns = {"Tensor": ember.Tensor, "List": list, "Tuple": tuple,
          "Optional": typing.Optional, "int": int, "float": float, "bool": bool, "str": str,
          "Any": typing.Any, "torch": ember, "ember": ember, "None": None}
    return eval(s, ns)  # noqa: S307 - annotations of the user's own source


def _unsupported_annotation(ann, where):
    from ._script import ScriptError
    return ScriptError(f"ember.jit.script: unsupported type annotation {ann!r}{where}; use "
                       "Tensor, int, float, bool, str, List[T], Tuple[...], Optional[T]")
