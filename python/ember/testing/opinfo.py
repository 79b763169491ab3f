"""The op registry for the generic op tests, built from ember's op table.

Each elementwise op in ``csrc/ember/kernels/ops.def`` appears here once with its
NumPy reference and the input domain its reference is defined on; the generic
tests (tests/test_elementwise.py) run every op over every dtype, shape kind
(0-d, empty, non-contiguous, broadcast), in-place and ``out=`` form from this list.
"""
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .. import _C


@dataclass(frozen=True)
class OpInfo:
    name: str
    kind: str                      # the op table's kind column
    arity: int                     # 1 or 2
    ref: Callable                  # NumPy reference, computed in float64 / the input dtype
    domain: Optional[tuple] = None  # (low, high) for inputs where the reference is defined
    # Second argument domain for binary ops (e.g. nonzero divisors).
    domain2: Optional[tuple] = None
    integer_exact: bool = True     # integer results must match exactly
    # From autograd/derivatives/elementwise.def: the grad_fn name (PyTorch's; for a
    # binary op the tensor-op-tensor overload), None when not differentiable.
    node: Optional[str] = None

    @property
    def differentiable(self):
        return self.node is not None


_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])
_lgamma = np.vectorize(lambda x: math.lgamma(x) if x > 0 or x != math.floor(x) else math.inf,
                       otypes=[np.float64])


def _mp(name):
    """A float64 reference from mpmath (imported on first use)."""
    def f(x):
        import mpmath
        g = getattr(mpmath, name)

        def one(v):
            try:
                return float(g(v))
            except ValueError:  # a pole: digamma(0) = -inf, digamma(-n) = nan, as PyTorch
                return -math.inf if v == 0 else math.nan
        return np.vectorize(one, otypes=[np.float64])(x)
    return f


def _i1(x):
    import mpmath
    return np.vectorize(lambda v: float(mpmath.besseli(1, v)), otypes=[np.float64])(x)


def _relu(x):
    return np.where(np.isnan(x), x, np.maximum(x, 0)) if x.dtype.kind == "f" else np.maximum(x, 0)


def _sign(x):
    """PyTorch's sign: (0 < x) - (x < 0), so sign(nan) is 0 where NumPy's is nan."""
    r = np.sign(x)
    return np.where(np.isnan(x), r.dtype.type(0), r) if r.dtype.kind == "f" else r


def _floor_divide(a, b):
    return np.floor_divide(a, b)


_UNARY_REFS = {
    "neg": (np.negative, None), "abs": (np.abs, None), "sign": (_sign, None),
    "square": (np.square, None), "relu": (_relu, None), "bitwise_not": (np.invert, None),
    "floor": (np.floor, None), "ceil": (np.ceil, None), "trunc": (np.trunc, None),
    "round": (np.round, None),
    "frac": (lambda x: x - np.trunc(x), None),
    "exp": (np.exp, (-5, 5)), "exp2": (np.exp2, (-5, 5)), "log": (np.log, (0.1, 10)),
    "log1p": (np.log1p, (-0.9, 10)), "expm1": (np.expm1, (-5, 5)), "log2": (np.log2, (0.1, 10)),
    "log10": (np.log10, (0.1, 10)), "sqrt": (np.sqrt, (0, 10)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.1, 10)), "reciprocal": (lambda x: 1 / x, (0.5, 10)),
    "sin": (np.sin, None), "cos": (np.cos, None), "tan": (np.tan, (-1.2, 1.2)),
    "asin": (np.arcsin, (-0.99, 0.99)), "acos": (np.arccos, (-0.99, 0.99)),
    "atan": (np.arctan, None), "sinh": (np.sinh, (-4, 4)), "cosh": (np.cosh, (-4, 4)),
    "tanh": (np.tanh, None), "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), None),
    "erf": (_erf, None), "erfc": (_erfc, None), "erfinv": (_mp("erfinv"), (-0.99, 0.99)),
    "lgamma": (_lgamma, (0.1, 6)), "digamma": (_mp("digamma"), (0.1, 6)), "i0": (np.i0, None),
    "special_i1": (_i1, None), "isnan": (np.isnan, None), "isinf": (np.isinf, None),
    "isfinite": (np.isfinite, None), "logical_not": (np.logical_not, None),
}

_BINARY_REFS = {
    "add": (np.add, None), "sub": (np.subtract, None), "mul": (np.multiply, None),
    "div": (np.true_divide, (0.5, 4)), "floor_divide": (_floor_divide, (1, 4)),
    "remainder": (np.remainder, (1, 4)), "fmod": (np.fmod, (1, 4)),
    "pow": (np.power, (0, 3)), "atan2": (np.arctan2, None),
    "maximum": (np.maximum, None), "minimum": (np.minimum, None),
    "bitwise_and": (np.bitwise_and, None), "bitwise_or": (np.bitwise_or, None),
    "bitwise_xor": (np.bitwise_xor, None),
    "eq": (np.equal, None), "ne": (np.not_equal, None), "lt": (np.less, None),
    "le": (np.less_equal, None), "gt": (np.greater, None), "ge": (np.greater_equal, None),
    "logical_and": (np.logical_and, None), "logical_or": (np.logical_or, None),
    "logical_xor": (np.logical_xor, None),
}


def _build():
    table = _C._op_table()
    ops = []
    for name, kind in table["unary"]:
        ref, dom = _UNARY_REFS[name]
        node = table["unary_autograd"][name][0]
        ops.append(OpInfo(name, kind, 1, ref, dom, node=node))
    for name, kind in table["binary"]:
        ref, dom2 = _BINARY_REFS[name]
        node = table["binary_autograd"][name][0][0]
        ops.append(OpInfo(name, kind, 2, ref, None, dom2, node=node))
    return ops


#: Every elementwise op of the op table. A new row in ops.def without an entry
#: above fails at import, so no op goes untested.
op_db = _build()
unary_ops = [o for o in op_db if o.arity == 1]
binary_ops = [o for o in op_db if o.arity == 2]
