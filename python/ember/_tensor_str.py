"""Tensor printing, matching PyTorch's ``repr`` for strided tensors.

The values are read once, as Python lists, from the part of the tensor that is
shown: the whole tensor when it has at most ``threshold`` elements, otherwise
only the ``edgeitems`` leading and trailing slices of every dimension (C++
``tolist`` on narrowed views). Formatting then works on those lists only, so
printing a huge tensor costs O(shown elements).
"""
from __future__ import annotations

import math
from typing import Optional

_ELIDED = object()  # marks the "..." position in a summarized nested list


class _PrinterOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: Optional[bool] = None


PRINT_OPTS = _PrinterOptions()

_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Set options for printing tensors (PyTorch's ``set_printoptions``).

    precision: digits after the decimal point (default 4); threshold: element
    count above which the repr is summarized (default 1000); edgeitems: items
    shown at each end of a summarized dimension (default 3); linewidth:
    characters per line (default 80); profile: ``"default"``, ``"short"`` or
    ``"full"``; sci_mode: force scientific notation on (True) or off (False),
    None lets the formatter choose.
    """
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: unknown profile {profile!r}; "
                             f"expected one of {sorted(_PROFILES)}")
        for k, v in _PROFILES[profile].items():
            setattr(PRINT_OPTS, k, v)
    for name, value in (("precision", precision), ("edgeitems", edgeitems),
                        ("linewidth", linewidth)):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise TypeError(f"set_printoptions: {name} must be a non-negative int, got {value!r}")
            setattr(PRINT_OPTS, name, value)
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or threshold != threshold:
            raise TypeError(f"set_printoptions: threshold must be a number, got {threshold!r}")
        PRINT_OPTS.threshold = threshold
    if sci_mode is not None and not isinstance(sci_mode, bool):
        raise TypeError(f"set_printoptions: sci_mode must be True, False or None, got {sci_mode!r}")
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions():
    """The current print options as a dict."""
    return dict(precision=PRINT_OPTS.precision, threshold=PRINT_OPTS.threshold,
                edgeitems=PRINT_OPTS.edgeitems, linewidth=PRINT_OPTS.linewidth,
                sci_mode=PRINT_OPTS.sci_mode)


# ---- reading the shown values ---------------------------------------------------------

def _shown_values(t, summarize):
    """Nested lists of the values to print; summarized dims hold _ELIDED in the middle."""
    if not summarize or t.dim() == 0:
        return t.tolist()
    e = PRINT_OPTS.edgeitems
    n = t.size(0)
    if t.dim() == 1:
        if n > 2 * e:
            return t.narrow(0, 0, e).tolist() + [_ELIDED] + t.narrow(0, n - e, e).tolist()
        return t.tolist()
    if n > 2 * e:
        rows = list(range(e)) + [None] + list(range(n - e, n))
    else:
        rows = range(n)
    return [_ELIDED if i is None else _shown_values(t.select(0, i), summarize) for i in rows]


def _flat(values, out):
    if isinstance(values, list):
        for v in values:
            if v is not _ELIDED:
                _flat(v, out)
    else:
        out.append(values)
    return out


# ---- formatting -------------------------------------------------------------------------

class _Formatter:
    """Chooses one notation and width for all shown values (PyTorch's rules)."""

    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        if not floating:
            for v in values:
                self.max_width = max(self.max_width, len(str(v)))
            return
        finite = [v for v in values if v != 0 and math.isfinite(v)]
        if not finite:
            return
        absval = [abs(v) for v in finite]
        lo, hi = min(absval), max(absval)
        p = PRINT_OPTS.precision
        self.int_mode = all(v == math.ceil(v) for v in finite)
        if self.int_mode:
            # Integer-valued floats print as "1." (one extra char for the dot).
            if hi / lo > 1000.0 or hi > 1.0e8:
                self.sci_mode = True
                self.max_width = max(len(f"{v:.{p}e}") for v in finite)
            else:
                self.max_width = max(len(f"{v:.0f}") + 1 for v in finite)
        elif hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4:
            self.sci_mode = True
            self.max_width = max(len(f"{v:.{p}e}") for v in finite)
        else:
            self.max_width = max(len(f"{v:.{p}f}") for v in finite)
        if PRINT_OPTS.sci_mode is not None:
            self.sci_mode = PRINT_OPTS.sci_mode

    def width(self):
        return self.max_width

    def format(self, value):
        p = PRINT_OPTS.precision
        if self.floating:
            if self.sci_mode:
                s = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                s = f"{value:.0f}"
                if math.isfinite(value):
                    s += "."
            else:
                s = f"{value:.{p}f}"
        else:
            s = str(value)
        return (self.max_width - len(s)) * " " + s


def _vector_str(values, indent, fmt):
    element_length = fmt.width() + 2  # ", "
    per_line = max(1, int(math.floor((PRINT_OPTS.linewidth - indent) / element_length)))
    data = [" ..." if v is _ELIDED else fmt.format(v) for v in values]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(values, dim, indent, fmt):
    if dim == 0:
        return fmt.format(values)
    if dim == 1:
        return _vector_str(values, indent, fmt)
    parts = ["..." if v is _ELIDED else _nested_str(v, dim - 1, indent + 1, fmt) for v in values]
    return "[" + ("," + "\n" * (dim - 1) + " " * (indent + 1)).join(parts) + "]"


def _tensor_str(t, indent):
    if t.numel() == 0:
        return "[]"
    summarize = t.numel() > PRINT_OPTS.threshold
    values = _shown_values(t, summarize)
    fmt = _Formatter(_flat(values, []), t.dtype.is_floating_point)
    return _nested_str(values, t.dim(), indent, fmt)


def _add_suffixes(tensor_str, suffixes, indent, force_newline=False):
    out = [tensor_str]
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        if force_newline or last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            out.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
            force_newline = False
        else:
            out.append(", " + suffix)
            last_line_len += len(suffix) + 2
    out.append(")")
    return "".join(out)


def _grad_fn_name(grad_fn):
    name = getattr(grad_fn, "name", None)
    if callable(name):
        return name()
    return type(grad_fn).__name__


def _str(self, *, tensor_contents=None):
    """The repr of a tensor: ``tensor(<values>[, suffixes])``."""
    import ember
    cls = type(self)
    plain = cls is ember.Tensor or cls.__name__ == "Parameter"
    prefix = "tensor(" if plain else cls.__name__ + "("
    indent = len(prefix)
    suffixes = []
    if self.device.type != "cpu":
        suffixes.append(f"device='{self.device}'")
    default = ember.get_default_dtype()
    if self.is_sparse:
        # PyTorch's layout: the stored indices and values, then size, nnz and layout.
        suffixes.append("size=" + str(tuple(self.shape)))
        suffixes.append("nnz=" + str(self._nnz()))
        if self.dtype not in (default, ember.int64, ember.bool):
            suffixes.append("dtype=" + str(self.dtype))
        parts = []
        for name, part in (("indices", self._indices()), ("values", self._values())):
            prefix_ = name + "=tensor("
            s = _tensor_str(part.detach(), indent + len(prefix_))
            if part.numel() == 0:
                s += ", size=" + str(tuple(part.shape))
            parts.append(prefix_ + s + ")")
        body = (",\n" + " " * indent).join(parts)
    elif self.numel() == 0:
        # Empty tensors show their shape unless it is (0,), and any non-default dtype.
        if self.dim() != 1:
            suffixes.append("size=" + str(tuple(self.shape)))
        if self.dtype != default:
            suffixes.append("dtype=" + str(self.dtype))
        body = "[]"
    else:
        if self.dtype not in (default, ember.int64, ember.bool):
            suffixes.append("dtype=" + str(self.dtype))
        body = _tensor_str(self, indent)
    if tensor_contents is not None:
        body = tensor_contents
    if self.is_sparse:
        suffixes.append("layout=" + str(self.layout))
    grad_fn = getattr(self, "grad_fn", None)
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{_grad_fn_name(grad_fn)}>")
    elif getattr(self, "requires_grad", False):
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent, force_newline=self.is_sparse)
