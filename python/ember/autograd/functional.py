"""Higher-level derivatives built on ember.autograd.grad: jacobian, hessian, vjp, jvp, hvp."""
from .. import _C
from . import grad as _grad


def _tuple(x):
    return (x,) if isinstance(x, _C.Tensor) else tuple(x)


def _prep(inputs, create_graph):
    return tuple(i.detach().requires_grad_(True) if not create_graph or not i.requires_grad else i
                 for i in inputs)


def _zeros_like(t):
    return _C.zeros_like(t)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J)."""
    is_tuple = not isinstance(inputs, _C.Tensor)
    ins = _prep(_tuple(inputs), create_graph)
    with _C_enable_grad():
        out = func(*ins)
        outs = _tuple(out)
        vs = _tuple(v) if v is not None else tuple(_C.ones_like(o) for o in outs)
        g = _grad(outs, ins, vs, create_graph=create_graph, allow_unused=True)
    g = tuple(_zeros_like(i) if gi is None else gi for gi, i in zip(g, ins))
    out = out if create_graph else _detach(out)
    return out, (g if is_tuple else g[0])


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v) by the double-vjp trick."""
    ins = _prep(_tuple(inputs), True)
    vs = _tuple(v) if v is not None else tuple(_C.ones_like(i) for i in ins)
    with _C_enable_grad():
        out = func(*ins)
        outs = _tuple(out)
        us = tuple(_C.zeros_like(o).requires_grad_(True) for o in outs)
        g = _grad(outs, ins, us, create_graph=True, allow_unused=True)
        pairs = [(gi, vi) for gi, vi in zip(g, vs) if gi is not None]
        jv = _grad([p[0] for p in pairs], us, [p[1] for p in pairs], create_graph=create_graph,
                   allow_unused=True)
    jv = tuple(_C.zeros_like(o) if j is None else j for j, o in zip(jv, outs))
    out_is_tuple = not isinstance(out, _C.Tensor)
    out = out if create_graph else _detach(out)
    return out, (jv if out_is_tuple else jv[0])


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian: shape out.shape + in.shape for each (output, input) pair."""
    in_tuple = not isinstance(inputs, _C.Tensor)
    ins = _prep(_tuple(inputs), create_graph)
    with _C_enable_grad():
        out = func(*ins)
    out_tuple = not isinstance(out, _C.Tensor)
    outs = _tuple(out)
    result = []
    for o in outs:
        rows = []
        flat = o.reshape(-1)
        for k in range(flat.numel()):
            with _C_enable_grad():
                g = _grad(flat[k], ins, retain_graph=True, create_graph=create_graph, allow_unused=True)
            rows.append(tuple(_C.zeros_like(i) if gi is None else gi for gi, i in zip(g, ins)))
        per_in = []
        for j, i in enumerate(ins):
            if rows:
                jac = _C.stack([r[j] for r in rows]).reshape(tuple(o.shape) + tuple(i.shape))
            else:
                jac = _C.zeros(tuple(o.shape) + tuple(i.shape), dtype=i.dtype, device=i.device)
            per_in.append(jac)
        result.append(tuple(per_in) if in_tuple else per_in[0])
    return tuple(result) if out_tuple else result[0]


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function."""
    in_tuple = not isinstance(inputs, _C.Tensor)

    def grad_fn(*ins):
        out = func(*ins)
        if out.numel() != 1:
            raise RuntimeError("The function given to hessian should return a single element Tensor")
        g = _grad(out, ins, create_graph=True, allow_unused=True)
        g = tuple(_C.zeros_like(i) if gi is None else gi for gi, i in zip(g, ins))
        return g if in_tuple else g[0]

    return jacobian(grad_fn, inputs, create_graph=create_graph)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a scalar function."""
    is_tuple = not isinstance(inputs, _C.Tensor)
    ins = _prep(_tuple(inputs), True)
    vs = _tuple(v)
    with _C_enable_grad():
        out = func(*ins)
        g = _grad(out, ins, create_graph=True, allow_unused=True)
        pairs = [(gi, vi, i) for gi, vi, i in zip(g, vs, ins)]
        hv = _grad([p[0] for p in pairs if p[0] is not None], ins,
                   [p[1] for p in pairs if p[0] is not None], create_graph=create_graph,
                   allow_unused=True)
    hv = tuple(_C.zeros_like(i) if h is None else h for h, i in zip(hv, ins))
    out = out if create_graph else out.detach()
    return out, (hv if is_tuple else hv[0])


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """v^T H (equal to H v for the symmetric Hessian)."""
    return hvp(func, inputs, v, create_graph, strict)


def _detach(x):
    return x.detach() if isinstance(x, _C.Tensor) else tuple(o.detach() for o in x)


def _C_enable_grad():
    from .grad_mode import enable_grad
    return enable_grad()
