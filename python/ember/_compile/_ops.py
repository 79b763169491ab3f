"""Which graph ops a fusion group can hold, and what they compute (Note [Fusible ops]).

Note [Fusible ops]
The elementwise ops come from ember's op table (``csrc/ember/kernels/ops.def``, read at
run time from the headers the generated code includes, so the table is never copied):
each row names the scalar functor in ``kernels/functors.h`` that eager's kernels call and
the row's kind, which says in which dtype the functor runs:
- SAME/ROUND/FLOAT/FLOATONLY/BITS unary, ARITH/TRUEDIV/FLOATING/BITS binary: the result's
  dtype (a 16-bit float computes in float and is rounded after every op, as eager rounds);
- COMPARE: the inputs' promoted dtype; PRED: the input's dtype; LOGICAL: bool.
Besides the table: ``where``, ``clamp`` and dtype casts. Each differentiable op has a
backward rule here (``GRADS``), written in the same scalar terms; an op without one is
fused only where no gradient flows through it.
"""
from __future__ import annotations

import os
import re

from . import _toolchain

_table = None


def table():
    """{'unary': {name: (Functor, kind)}, 'binary': {...}} from ops.def."""
    global _table
    if _table is None:
        _table = {"unary": {}, "binary": {}}
        inc = _toolchain.include_dir()
        text = ""
        if inc is not None:
            with open(os.path.join(inc, "ember", "kernels", "ops.def")) as f:
                text = f.read()
        for which, macro in (("unary", "EMBER_UNARY_OPS"), ("binary", "EMBER_BINARY_OPS")):
            m = re.search(r"#define " + macro + r"\(_\)(.*?)(?:\n\s*\n|\Z)", text, re.S)
            if not m:
                continue
            for name, functor, kind in re.findall(r"_\((\w+),\s*(\w+),\s*(\w+)\)", m.group(1)):
                _table[which][name] = (functor, kind)
    return _table


CTYPES = {
    "float32": "float", "float64": "double", "float16": "ember::Half",
    "bfloat16": "ember::BFloat16", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t",
    "int64": "int64_t", "uint8": "uint8_t", "bool": "bool",
}
FLOATING = {"float32", "float64", "float16", "bfloat16"}

# Casts: the op and which input carries the target dtype (None: a fixed dtype).
CASTS = {
    "aten::to.dtype": None, "aten::to.dtype_layout": None, "aten::to.other": None, "aten::type_as": None, "aten::float": "float32",
    "aten::double": "float64", "aten::half": "float16", "aten::bfloat16": "bfloat16",
    "aten::int": "int32", "aten::long": "int64", "aten::bool": "bool", "aten::_to_copy": None,
}

# Backward rules: node kind or functor name -> function(a, b, r, g) returning the gradient
# contributions to inputs 0 and 1 (C++ expressions in the node's compute type, or None).
_PI2 = "1.1283791670955126"   # 2/sqrt(pi)
_SPI2 = "0.88622692545275801"  # sqrt(pi)/2
UNARY_GRADS = {
    "neg": lambda a, r, g: f"-{g}",
    "abs": lambda a, r, g: f"{g} * ember::fn::Sign{{}}({a})",
    "square": lambda a, r, g: f"{g} * 2 * {a}",
    "relu": lambda a, r, g: f"({r} > 0 ? {g} : decltype({g})(0))",
    "frac": lambda a, r, g: f"{g}",
    "exp": lambda a, r, g: f"{g} * {r}",
    "exp2": lambda a, r, g: f"{g} * {r} * decltype({g})(0.6931471805599453)",
    "expm1": lambda a, r, g: f"{g} * ({r} + 1)",
    "log": lambda a, r, g: f"{g} / {a}",
    "log1p": lambda a, r, g: f"{g} / ({a} + 1)",
    "log2": lambda a, r, g: f"{g} / ({a} * decltype({g})(0.6931471805599453))",
    "log10": lambda a, r, g: f"{g} / ({a} * decltype({g})(2.302585092994046))",
    "sqrt": lambda a, r, g: f"{g} / (2 * {r})",
    "rsqrt": lambda a, r, g: f"-{g} * {r} * {r} * {r} / 2",
    "reciprocal": lambda a, r, g: f"-{g} * {r} * {r}",
    "sin": lambda a, r, g: f"{g} * std::cos({a})",
    "cos": lambda a, r, g: f"-{g} * std::sin({a})",
    "tan": lambda a, r, g: f"{g} * (1 + {r} * {r})",
    "asin": lambda a, r, g: f"{g} / std::sqrt(1 - {a} * {a})",
    "acos": lambda a, r, g: f"-{g} / std::sqrt(1 - {a} * {a})",
    "atan": lambda a, r, g: f"{g} / (1 + {a} * {a})",
    "sinh": lambda a, r, g: f"{g} * std::cosh({a})",
    "cosh": lambda a, r, g: f"{g} * std::sinh({a})",
    "tanh": lambda a, r, g: f"{g} * (1 - {r} * {r})",
    "sigmoid": lambda a, r, g: f"{g} * {r} * (1 - {r})",
    "erf": lambda a, r, g: f"{g} * decltype({g})({_PI2}) * std::exp(-{a} * {a})",
    "erfc": lambda a, r, g: f"-{g} * decltype({g})({_PI2}) * std::exp(-{a} * {a})",
    "erfinv": lambda a, r, g: f"{g} * decltype({g})({_SPI2}) * std::exp({r} * {r})",
    # piecewise constant: no gradient
    "sign": None, "floor": None, "ceil": None, "trunc": None, "round": None,
}
BINARY_GRADS = {
    "add": lambda a, b, r, g: (g, g),
    "sub": lambda a, b, r, g: (g, f"-{g}"),
    "mul": lambda a, b, r, g: (f"{g} * {b}", f"{g} * {a}"),
    "div": lambda a, b, r, g: (f"{g} / {b}", f"-{g} * {a} / ({b} * {b})"),
    "pow": lambda a, b, r, g: (
        f"({b} == 0 ? decltype({g})(0) : {g} * {b} * std::pow({a}, {b} - 1))",
        f"(({a} == 0 && {b} >= 0) ? decltype({g})(0) : {g} * {r} * std::log({a}))"),
    "atan2": lambda a, b, r, g: (f"{g} * {b} / ({a} * {a} + {b} * {b})",
                                 f"-{g} * {a} / ({a} * {a} + {b} * {b})"),
    "maximum": lambda a, b, r, g: (
        f"({a} == {b} ? {g} / 2 : ({a} < {b} ? decltype({g})(0) : {g}))",
        f"({a} == {b} ? {g} / 2 : ({a} > {b} ? decltype({g})(0) : {g}))"),
    "minimum": lambda a, b, r, g: (
        f"({a} == {b} ? {g} / 2 : ({a} > {b} ? decltype({g})(0) : {g}))",
        f"({a} == {b} ? {g} / 2 : ({a} < {b} ? decltype({g})(0) : {g}))"),
    "remainder": lambda a, b, r, g: (g, f"-{g} * std::floor({a} / {b})"),
    "fmod": lambda a, b, r, g: (g, f"-{g} * std::trunc({a} / {b})"),
    "floor_divide": None,
}
