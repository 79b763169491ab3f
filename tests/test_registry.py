"""Generic tests driven by the op registry (ember.testing.registry): every entry's
forward against its NumPy reference for each dtype and device, gradcheck and
gradgradcheck in float64, and its error cases."""
import re

import numpy as np
import pytest

import ember
from ember.testing import registry

ENTRIES = registry.all_entries()
_BY_NAME = {e.name: e for e in ENTRIES}


def _ids(entries):
    return [e.name for e in entries]


def _map(x, f):
    if isinstance(x, ember.Tensor):
        return f(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_map(v, f) for v in x)
    if isinstance(x, dict):
        return {k: _map(v, f) for k, v in x.items()}
    return x


def _to_numpy(x):
    # sparse inputs reach the NumPy references in their dense form
    return _map(x, lambda t: (t.detach().to_dense() if t.is_sparse else t.detach()).cpu().numpy())


def _dtype(name):
    return getattr(ember, name)


def _compare(actual, expected, entry, dtype_name):
    if isinstance(expected, (list, tuple)):
        assert isinstance(actual, (list, tuple)), f"{entry.name}: expected a sequence of results"
        assert len(actual) == len(expected), f"{entry.name}: {len(actual)} results, expected {len(expected)}"
        for a, e in zip(actual, expected):
            _compare(a, e, entry, dtype_name)
        return
    if isinstance(actual, ember.Tensor):
        got = (actual.detach().to_dense() if actual.is_sparse else actual.detach()).cpu().numpy()
    else:
        got = np.asarray(actual)
    exp = np.asarray(expected)
    assert got.shape == exp.shape, f"{entry.name}: shape {got.shape}, expected {exp.shape}"
    if entry.low_precision_tol and dtype_name in ("float16", "bfloat16", "float32"):
        atol, rtol = entry.low_precision_tol
    elif dtype_name in ("float16", "bfloat16"):
        atol, rtol = 1e-2, 1e-2
    elif dtype_name == "float32":
        atol, rtol = max(entry.atol, 1e-5), max(entry.rtol, 1e-4)
    else:
        atol, rtol = entry.atol, entry.rtol
    if got.dtype.kind in "fc" or exp.dtype.kind in "fc":
        np.testing.assert_allclose(got.astype(np.float64), exp.astype(np.float64), atol=atol,
                                   rtol=rtol, equal_nan=True, err_msg=entry.name)
    else:
        np.testing.assert_array_equal(got, exp, err_msg=entry.name)


_FWD = [(e, d) for e in ENTRIES if e.ref is not None for d in e.dtypes]


@pytest.mark.parametrize("entry,dtype_name", _FWD, ids=[f"{e.name}-{d}" for e, d in _FWD])
def test_forward(entry, dtype_name, device):
    n = 0
    for s in entry.samples(device, _dtype(dtype_name)):
        out = entry.op(*s.args, **s.kwargs)
        expected = entry.ref(*_to_numpy(s.args), **_to_numpy(s.kwargs))
        _compare(out, expected, entry, dtype_name)
        n += 1
    assert n > 0, f"{entry.name}: no samples"


_GRAD = [e for e in ENTRIES if e.grad]


def _grad_inputs(sample):
    flat = []

    def visit(t):
        if t.dtype in (ember.float64,) and not t.requires_grad:
            t.requires_grad_(True)
        if t.requires_grad:
            flat.append(t)
        return t
    _map(sample.args, visit)
    _map(sample.kwargs, visit)
    return flat


def _call_with(entry, sample, inputs):
    it = iter(inputs)
    ids = {id(t): None for t in inputs}

    def sub(t):
        return next(it) if id(t) in ids else t
    args = _map(sample.args, sub)
    kwargs = _map(sample.kwargs, sub)
    return entry.op(*args, **kwargs)


@pytest.mark.parametrize("entry", _GRAD, ids=_ids(_GRAD))
def test_gradcheck(entry, device):
    n = 0
    for s in entry.samples(device, ember.float64):
        inputs = _grad_inputs(s)
        if not inputs:
            continue
        order = list(inputs)

        def fn(*ts, s=s, order=order):
            mapping = {id(o): t for o, t in zip(order, ts)}
            out = entry.op(*_map(s.args, lambda t: mapping.get(id(t), t)),
                           **_map(s.kwargs, lambda t: mapping.get(id(t), t)))
            return out
        # Sparse inputs: the gradients of their unspecified elements are not compared
        # (PyTorch's masked gradcheck; an op may give a sparse input a strided gradient).
        masked = any(t.is_sparse for t in inputs)
        assert ember.autograd.gradcheck(fn, tuple(inputs), masked=masked), f"{entry.name} {s.desc}"
        if entry.gradgrad:
            assert ember.autograd.gradgradcheck(fn, tuple(inputs), masked=masked), \
                f"{entry.name} {s.desc}"
        n += 1
    assert n > 0, f"{entry.name}: no differentiable samples"


_ERR = [e for e in ENTRIES if e.errors is not None]


@pytest.mark.parametrize("entry", _ERR, ids=_ids(_ERR))
def test_errors(entry, device):
    for case in entry.errors(device):
        with pytest.raises(case.exc, match=case.match):
            entry.op(*case.args, **case.kwargs)


def test_registry_names_unique_and_callable():
    for e in ENTRIES:
        assert callable(e.op), e.name
        assert re.fullmatch(r"[A-Za-z_][\w.]*", e.name), e.name


def _inplace_cases():
    """(entry, method) for every ``Tensor.<m>_`` alias of an entry: the in-place form must
    leave in its tensor what the entry's op returns."""
    cases = []
    for e in ENTRIES:
        for a in e.aliases:
            if a.startswith("Tensor.") and a.endswith("_") and not a.endswith("__"):
                if hasattr(ember.Tensor, a[len("Tensor."):]):
                    cases.append((e, a[len("Tensor."):]))
    return cases


_INPLACE = _inplace_cases()


@pytest.mark.parametrize("entry,method", _INPLACE, ids=[f"{e.name}-{m}" for e, m in _INPLACE])
def test_inplace_alias(entry, method, device):
    n = tensor_first = 0
    for dtype_name in entry.dtypes:
        for s in entry.samples(device, _dtype(dtype_name)):
            if not s.args or not isinstance(s.args[0], ember.Tensor):
                continue
            tensor_first += 1
            expected = entry.op(*s.args, **s.kwargs)
            x = s.args[0]
            if not isinstance(expected, ember.Tensor) or expected.dtype != x.dtype:
                continue  # the in-place form cannot hold a promoted result
            y = x.clone()
            if tuple(expected.shape) == tuple(x.shape):
                ret = getattr(y, method)(*s.args[1:], **s.kwargs)
            else:
                # a broadcast result does not fit an in-place op; a view op (t_, squeeze_)
                # changes its tensor's shape
                try:
                    ret = getattr(y, method)(*s.args[1:], **s.kwargs)
                except RuntimeError:
                    continue
            assert ret is y, f"{method} must return its tensor"
            _compare(y, expected.detach().cpu().numpy(), entry, dtype_name)
            n += 1
    if not tensor_first:
        pytest.skip(f"{entry.name} takes its tensor after other arguments; Tensor.{method} "
                    "is not the same call")
    assert n > 0, f"{entry.name}: no sample fits {method}"
