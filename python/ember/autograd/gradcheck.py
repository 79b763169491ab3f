"""gradcheck / gradgradcheck: compare analytical gradients with finite differences.

The defaults match PyTorch's (eps=1e-6, atol=1e-5, rtol=1e-3). Numerical
Jacobians perturb one input element at a time (central differences) in C++
ops; the analytical Jacobian is assembled one vector-Jacobian product per
output element.

Sparse COO inputs and outputs are checked as PyTorch's gradcheck does: an input's
specified values are the elements perturbed (its Jacobian has a column for every element
of the dense shape, zero for unspecified ones), gradients and outputs are compared in
their dense form, and ``masked=True`` ignores the gradients of a sparse input's
unspecified elements (an op such as ``ember.mm`` gives a sparse input a strided gradient).
"""
import warnings

import numpy as np

from .. import _C


class GradcheckError(RuntimeError):
    """Raised by gradcheck when gradients do not match."""


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _differentiable_outputs(outs):
    return [o for o in outs if isinstance(o, _C.Tensor) and o.requires_grad]


def _flat_numpy(t):
    if t.is_sparse:
        t = t.detach().to_dense()
    return t.detach().to(_C.float64).contiguous().cpu().numpy().reshape(-1).copy()


def _sparse_positions(x):
    """(values row, element within the row, flat dense index) of every specified element
    of a sparse tensor; a repeated index (uncoalesced) counts once."""
    sizes = tuple(x.shape)
    idx = x._indices().cpu().numpy()
    block = int(np.prod(sizes[x.sparse_dim():], dtype=np.int64))
    lin = (np.ravel_multi_index(tuple(idx), sizes[:x.sparse_dim()]) if idx.shape[1]
           else np.zeros(0, dtype=np.int64))
    seen, out = set(), []
    for e, li in enumerate(lin.tolist()):
        for k in range(block):
            d = li * block + k
            if d not in seen:
                seen.add(d)
                out.append((e, k, d))
    return out


def _numerical_jacobian_sparse(fn, inputs, idx, eps):
    x = inputs[idx]
    values = x._values()  # the stored values: perturbed in place, autograd never sees them
    flat = values.view(-1) if values.numel() else values
    block = max(1, values[0].numel()) if values.shape[0] else 1
    with _no_grad():
        base = [_flat_numpy(o) for o in _as_tuple(fn(*inputs)) if isinstance(o, _C.Tensor)]
    cols = [[np.zeros_like(b) for b in base] for _ in range(x.numel())]
    for e, k, d in _sparse_positions(x):
        where = e * block + k
        orig = flat[where].item()
        flat[where] = orig - eps
        with _no_grad():
            lo = [_flat_numpy(o) for o in _as_tuple(fn(*inputs)) if isinstance(o, _C.Tensor)]
        flat[where] = orig + eps
        with _no_grad():
            hi = [_flat_numpy(o) for o in _as_tuple(fn(*inputs)) if isinstance(o, _C.Tensor)]
        flat[where] = orig
        cols[d] = [(h - lo_) / (2 * eps) for h, lo_ in zip(hi, lo)]
    return cols


def _sparse_mask_columns(x):
    """A 0/1 vector over x's dense elements: 1 where x specifies a value."""
    m = np.zeros(x.numel())
    for _, _, d in _sparse_positions(x):
        m[d] = 1.0
    return m


def _densify_outputs(func, masked):
    """func with its sparse outputs in dense form (their gradients masked to their pattern
    when ``masked``)."""
    def wrapped(*args):
        outs = func(*args)
        if isinstance(outs, (tuple, list)):
            dense = [o.to_dense(masked_grad=bool(masked))
                     if isinstance(o, _C.Tensor) and o.is_sparse else o for o in outs]
            # a namedtuple (sort, topk, slogdet's return types) takes its fields one by one
            return type(outs)(*dense) if hasattr(outs, "_fields") else type(outs)(dense)
        if isinstance(outs, _C.Tensor) and outs.is_sparse:
            return outs.to_dense(masked_grad=bool(masked))
        return outs
    return wrapped


def _numerical_jacobian(fn, inputs, idx, eps):
    """Columns: d outputs / d inputs[idx].flat[j] by central differences."""
    x = inputs[idx]
    if x.is_sparse:
        return _numerical_jacobian_sparse(fn, inputs, idx, eps)
    n = x.numel()
    data = x.data  # perturbed in place, without autograd seeing the writes
    flat = data.view(-1) if x.is_contiguous() else None
    shape = tuple(x.shape)
    cols = []
    for j in range(n):
        # Non-contiguous inputs are perturbed element by element through their own strides.
        where = j if flat is not None else tuple(int(i) for i in np.unravel_index(j, shape))
        target = flat if flat is not None else data
        orig = target[where].item()
        target[where] = orig - eps
        with _no_grad():
            lo = [_flat_numpy(o) for o in _as_tuple(fn(*inputs)) if isinstance(o, _C.Tensor)]
        target[where] = orig + eps
        with _no_grad():
            hi = [_flat_numpy(o) for o in _as_tuple(fn(*inputs)) if isinstance(o, _C.Tensor)]
        target[where] = orig
        cols.append([(h - lo_) / (2 * eps) for h, lo_ in zip(hi, lo)])
    return cols  # [input element][output index] -> vector over output elements


def _no_grad():
    from .grad_mode import no_grad
    return no_grad()


def _analytical_rows(outputs, inputs, idx_list, nondet_tol):
    """rows[o][i] = matrix [out elems, in elems] of d out_o / d in_i via one VJP per element."""
    from . import grad as _grad
    result = []
    for o in outputs:
        per_input = [np.zeros((o.numel(), inputs[i].numel())) for i in idx_list]
        for k in range(o.numel()):
            g = _C.zeros(o.numel(), dtype=o.dtype, device=o.device).view(o.shape) if o.numel() else None
            gv = g.view(-1)
            gv[k] = 1.0
            grads = _grad(o, [inputs[i] for i in idx_list], g, retain_graph=True, allow_unused=True)
            for slot, gr in enumerate(grads):
                if gr is not None:
                    if gr.shape != inputs[idx_list[slot]].shape:
                        raise GradcheckError(f"Gradient has incorrect size: got {tuple(gr.shape)}, "
                                             f"expected {tuple(inputs[idx_list[slot]].shape)}")
                    per_input[slot][k, :] = _flat_numpy(gr)
        result.append(per_input)
    return result


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False, check_forward_ad=False,
              check_backward_ad=True, fast_mode=False, masked=None):
    """True when the analytical Jacobian of ``func`` at ``inputs`` matches finite
    differences for every input that requires grad; otherwise raises GradcheckError
    (or returns False with ``raise_exception=False``)."""
    inputs = _as_tuple(inputs)
    func = _densify_outputs(func, masked)
    tensor_idx = [i for i, x in enumerate(inputs) if isinstance(x, _C.Tensor) and x.requires_grad]
    if any(inputs[i].is_sparse for i in tensor_idx):
        fast_mode = False  # the random direction would leave the sparsity pattern
    if not tensor_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of the them have requires_grad=True.")
    for i in tensor_idx:
        if inputs[i].dtype != _C.float64:
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point. "
                          "This check will likely fail if all the inputs are not of double precision "
                          "floating point. ", stacklevel=2)
    try:
        outputs = _differentiable_outputs(_as_tuple(func(*inputs)))
        if fast_mode and outputs:
            _fast_check(func, inputs, outputs, tensor_idx, eps, atol, rtol)
            return True
        if not outputs:
            # Nothing differentiable: the numerical Jacobian must be zero.
            for i in tensor_idx:
                for col in _numerical_jacobian(func, inputs, i, eps):
                    for v in col:
                        if np.any(np.abs(v) > atol):
                            raise GradcheckError("Numerical gradient for function expected to be zero")
            return True
        analytical = _analytical_rows(outputs, inputs, tensor_idx, nondet_tol)
        if nondet_tol == 0.0:
            again = _analytical_rows(_differentiable_outputs(_as_tuple(func(*inputs))), inputs,
                                     tensor_idx, nondet_tol)
            for a, b in zip(analytical, again):
                for x, y in zip(a, b):
                    if not np.array_equal(x, y):
                        raise GradcheckError("Backward is not reentrant, i.e., running backward with "
                                             "same input and grad_output multiple times gives different "
                                             "values, although analytical gradient matches numerical "
                                             "gradient. The tolerance for nondeterminism was 0.0.")
        for slot, i in enumerate(tensor_idx):
            cols = _numerical_jacobian(func, inputs, i, eps)
            all_outs = [o for o in _as_tuple(func(*inputs)) if isinstance(o, _C.Tensor)]
            diff_positions = [k for k, o in enumerate(all_outs) if o.requires_grad]
            for oi, pos in enumerate(diff_positions):
                ana = analytical[oi][slot]
                if masked and inputs[i].is_sparse:
                    ana = ana * _sparse_mask_columns(inputs[i])[None, :]
                numerical = (np.stack([c[pos] for c in cols], axis=1) if cols
                             else np.zeros((ana.shape[0], 0)))
                if numerical.shape != ana.shape or not np.allclose(ana, numerical, rtol=rtol, atol=atol):
                    raise GradcheckError(
                        f"Jacobian mismatch for output {oi} with respect to input {i},\n"
                        f"numerical:{_fmt(numerical)}\nanalytical:{_fmt(ana)}\n")
        return True
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _fast_check(func, inputs, outputs, tensor_idx, eps, atol, rtol):
    """fast_mode: compare u^T J v instead of whole Jacobians, for random unit vectors u over
    each output and v over each input: the numerical side is one central difference along v,
    the analytical side one vector-Jacobian product with u (PyTorch's fast gradcheck)."""
    from . import grad as _grad
    rng = np.random.default_rng(0)

    def rand_like(t):
        a = rng.standard_normal(t.numel())
        a /= max(np.linalg.norm(a), 1e-300)
        return a

    us = [rand_like(o) for o in outputs]
    u_tensors = [_C.from_numpy(u.reshape(tuple(o.shape))).to(device=o.device, dtype=o.dtype) for u, o in zip(us, outputs)]
    grads = _grad(outputs, [inputs[i] for i in tensor_idx], u_tensors, retain_graph=True,
                  allow_unused=True)
    for slot, i in enumerate(tensor_idx):
        x = inputs[i]
        v = rand_like(x)
        analytical = 0.0 if grads[slot] is None else float(_flat_numpy(grads[slot]) @ v)
        data = x.data
        orig = data.detach().clone()
        step = _C.from_numpy(v.reshape(tuple(x.shape))).to(device=x.device, dtype=x.dtype)
        with _no_grad():
            data.copy_(orig - eps * step)
            lo = [_flat_numpy(o) for o in _as_tuple(func(*inputs)) if isinstance(o, _C.Tensor)]
            data.copy_(orig + eps * step)
            hi = [_flat_numpy(o) for o in _as_tuple(func(*inputs)) if isinstance(o, _C.Tensor)]
            data.copy_(orig)
        all_outs = [o for o in _as_tuple(func(*inputs)) if isinstance(o, _C.Tensor)]
        positions = [k for k, o in enumerate(all_outs) if o.requires_grad]
        numerical = sum(float(us[oi] @ ((hi[pos] - lo[pos]) / (2 * eps)))
                        for oi, pos in enumerate(positions))
        if not abs(analytical - numerical) <= atol + rtol * abs(numerical):
            raise GradcheckError(
                f"Jacobian mismatch for output 0 with respect to input {i},\n"
                f"numerical:{numerical!r}\nanalytical:{analytical!r}\n\n"
                "(fast_mode compared u^T J v for random u and v; rerun with fast_mode=False for "
                "the whole Jacobians)")


def _fmt(a):
    with np.printoptions(precision=4, suppress=True):
        return str(np.asarray(a))


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False, masked=False):
    """gradcheck of the first-order gradients of ``func`` (so second derivatives are checked)."""
    from . import grad as _grad
    inputs = _as_tuple(inputs)
    outs = _differentiable_outputs(_as_tuple(func(*inputs)))
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(
            _C.from_numpy(rng.standard_normal(tuple(o.shape)).astype(np.float64)).to(device=o.device, dtype=o.dtype).requires_grad_()
            for o in outs)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    tensor_idx = [i for i, x in enumerate(inputs) if isinstance(x, _C.Tensor) and x.requires_grad]

    def first_order(*args):
        from .grad_mode import enable_grad
        ins, gos = args[:n_in], args[n_in:]
        with enable_grad():  # gradcheck evaluates this under no_grad for finite differences
            outputs = _differentiable_outputs(_as_tuple(func(*ins)))
            grads = _grad(outputs, [ins[i] for i in tensor_idx], gos, create_graph=True,
                          allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_order, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol, fast_mode=fast_mode,
                     masked=masked)
