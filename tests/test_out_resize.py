"""out= as PyTorch's resize_output (ops/out.h), out= of cat/stack, of the (values, indices)
ops (sort, topk, kthvalue, max, min) and of the factories,
scatter(reduce=...), grad_fn node hooks and matmul's UnsafeViewBackward0."""
import contextlib
import warnings

import numpy as np
import pytest

import ember

RESIZE = r"An output with one or more elements was resized since it had shape \[{}\], which does " \
         r"not match the required output shape \[{}\]\. This behavior is deprecated"


def silent():
    """A context in which any warning is an error."""
    c = warnings.catch_warnings()
    c.__enter__()
    warnings.simplefilter("error")
    return c


@contextlib.contextmanager
def no_warnings():
    """A with-block in which any warning is an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# ---- resize_output --------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda o, d: ember.add(ember.ones(3, 4, device=d), 1, out=o),
    lambda o, d: ember.exp(ember.zeros(3, 4, device=d), out=o),
    lambda o, d: ember.mm(ember.ones(3, 2, device=d), ember.ones(2, 4, device=d), out=o),
    lambda o, d: ember.sum(ember.ones(3, 4, 5, device=d), 2, out=o),
    lambda o, d: ember.div(ember.ones(3, 4, device=d), 2, rounding_mode="floor", out=o),
    lambda o, d: ember.hypot(ember.ones(3, 4, device=d), ember.zeros(4, device=d), out=o),
    lambda o, d: ember.cat([ember.ones(1, 4, device=d), ember.ones(2, 4, device=d)], out=o),
], ids=["add", "exp", "mm", "sum", "div_floor", "hypot", "cat"])
def test_nonempty_out_resized_with_warning(call, device):
    o = ember.zeros(2, device=device)
    with pytest.warns(UserWarning, match=RESIZE.format("2", "3, 4")):
        r = call(o, device)
    assert r is o and o.shape == (3, 4) and o.is_contiguous()


def test_empty_out_resized_silently(device):
    o = ember.empty(0, device=device)
    c = silent()
    try:
        ember.add(ember.ones(3, 4, device=device), 1, out=o)
    finally:
        c.__exit__(None, None, None)
    assert o.shape == (3, 4) and o.tolist() == [[2.0] * 4] * 3


def test_resized_values_and_strides(device):
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    # a transposed (non-contiguous) out of another shape becomes contiguous
    o = ember.zeros(4, 4, device=device).t()
    with pytest.warns(UserWarning):
        ember.mul(ember.tensor(a, device=device), 2, out=o)
    assert o.stride() == (4, 1)
    np.testing.assert_array_equal(o.cpu().numpy(), a * 2)
    # same numel, other shape: still resized (and warned)
    o = ember.zeros(12, device=device)
    with pytest.warns(UserWarning, match=RESIZE.format("12", "3, 4")):
        ember.neg(ember.tensor(a, device=device), out=o)
    np.testing.assert_array_equal(o.cpu().numpy(), -a)


def test_warnings_as_errors_propagate(device):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="was resized"):
            ember.add(ember.ones(3, device=device), 1, out=ember.zeros(2, device=device))


def test_inplace_shape_still_an_error(device):
    a = ember.ones(2, device=device)
    with pytest.raises(RuntimeError, match=r"output with shape \[2\] doesn't match the broadcast shape \[3, 2\]"):
        a.add_(ember.ones(3, 2, device=device))
    with pytest.raises(RuntimeError, match=r"doesn't match the broadcast shape"):
        a.hypot_(ember.ones(3, 2, device=device))


def test_cast_rules_in_one_place(device):
    x = ember.ones(3, device=device)
    for call in (lambda: ember.add(x, 1, out=ember.zeros(3, dtype=ember.int64, device=device)),
                 lambda: ember.exp(x, out=ember.zeros(3, dtype=ember.int64, device=device)),
                 lambda: ember.hypot(x, x, out=ember.zeros(3, dtype=ember.int64, device=device)),
                 lambda: ember.ones(3, dtype=ember.int64, device=device).mul_(1.5),
                 lambda: ember.add(x, 1, out=ember.zeros(3, dtype=ember.bool, device=device))):
        with pytest.raises(RuntimeError, match=r"result type float(32|64) can't be cast to the desired "
                                               r"output type (int64|bool)"):
            call()


def test_out_type_errors():
    for f in (lambda: ember.add(ember.ones(2), 1, out=3), lambda: ember.sum(ember.ones(2), out=[1]),
              lambda: ember.cat([ember.ones(2)], out="x"), lambda: ember.zeros(2, out=1.0)):
        with pytest.raises(TypeError, match="argument 'out' must be"):
            f()
    with pytest.raises(TypeError, match="must be a tuple of two Tensors"):
        ember.sort(ember.ones(2), out=ember.ones(2))


# ---- out= for cat / stack / sort ------------------------------------------------------------

def test_cat_stack_out(device):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((4, 3))
    ta, tb = ember.tensor(a, device=device), ember.tensor(b, device=device)
    o = ember.empty(0, dtype=ember.float64, device=device)
    assert ember.cat([ta, tb], out=o) is o
    np.testing.assert_array_equal(o.cpu().numpy(), np.concatenate([a, b]))
    o = ember.zeros(6, 3, dtype=ember.float64, device=device)
    ember.concat([ta, tb], dim=0, out=o)
    np.testing.assert_array_equal(o.cpu().numpy(), np.concatenate([a, b]))
    # an out of a wider dtype takes the cast result
    o = ember.empty(0, dtype=ember.float64, device=device)
    ember.stack([ta.float(), ta.float()], 1, out=o)
    np.testing.assert_allclose(o.cpu().numpy(), np.stack([a, a], 1), rtol=1e-6)
    assert o.dtype == ember.float64
    with pytest.raises(TypeError, match=r"cat\(\): input types can't be cast to the desired output type int64"):
        ember.cat([ta], out=ember.empty(0, dtype=ember.int64, device=device))
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ember.cat([ta.requires_grad_()], out=ember.empty(0, dtype=ember.float64, device=device))


def test_sort_out(device):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 5))
    v = ember.empty(0, dtype=ember.float64, device=device)
    i = ember.empty(0, dtype=ember.int64, device=device)
    r = ember.sort(ember.tensor(a, device=device), 1, descending=True, out=(v, i))
    assert r.values is v and r.indices is i and type(r) is ember.return_types.sort_out
    np.testing.assert_array_equal(v.cpu().numpy(), -np.sort(-a, 1))
    np.testing.assert_array_equal(i.cpu().numpy(), np.argsort(-a, 1, kind="stable"))
    with pytest.raises(RuntimeError, match="expected out tensor to have dtype int64, but got float64"):
        ember.sort(ember.tensor(a, device=device), out=(v, ember.empty(0, dtype=ember.float64, device=device)))
    with pytest.raises(RuntimeError, match="expected out tensor to have dtype float64, but got int64"):
        ember.sort(ember.tensor(a, device=device), out=(i.clone(), i))


# out= of the (values, indices) ops: PyTorch returns torch.return_types.<op>_out, checks the
# dtypes exactly (values: the input's, indices: int64) and resizes as resize_output.
_PAIR_OPS = {
    "sort": (lambda x, **k: ember.sort(x, 1, **k), lambda a: (np.sort(a, 1), np.argsort(a, 1, kind="stable"))),
    "topk": (lambda x, **k: ember.topk(x, 2, **k),
             lambda a: (-np.sort(-a, 1)[:, :2], np.argsort(-a, 1, kind="stable")[:, :2])),
    "kthvalue": (lambda x, **k: ember.kthvalue(x, 2, **k),
                 lambda a: (np.sort(a, 1)[:, 1], np.argsort(a, 1, kind="stable")[:, 1])),
    "max": (lambda x, **k: ember.max(x, 1, **k), lambda a: (a.max(1), a.argmax(1))),
    "min": (lambda x, **k: ember.min(x, 1, **k), lambda a: (a.min(1), a.argmin(1))),
}


@pytest.mark.parametrize("name", list(_PAIR_OPS))
def test_values_indices_out(name, device):
    call, ref = _PAIR_OPS[name]
    a = np.random.default_rng(2).permutation(15).reshape(3, 5).astype(np.float32)
    x = ember.tensor(a, device=device)
    ev, ei = ref(a)
    # an empty out is resized silently; the result is the out tensors in <op>_out
    v = ember.empty(0, device=device)
    i = ember.empty(0, dtype=ember.int64, device=device)
    with no_warnings():
        r = call(x, out=(v, i))
    assert type(r) is getattr(ember.return_types, name + "_out")
    assert type(r).__name__ == name + "_out" and r._fields == ("values", "indices")
    assert repr(r).startswith(f"ember.return_types.{name}_out(\nvalues=")
    assert r.values is v and r.indices is i and r[0] is v and r[1] is i
    np.testing.assert_array_equal(v.cpu().numpy(), ev)
    np.testing.assert_array_equal(i.cpu().numpy(), ei)
    # without out=, the plain type
    assert type(call(x)) is getattr(ember.return_types, name)
    # an out of the right shape is written in place, a wrong nonempty one resized with the warning
    v2 = ember.zeros(ev.shape, device=device)
    i2 = ember.zeros(ev.shape, dtype=ember.int64, device=device)
    with no_warnings():
        call(x, out=(v2, i2))
    np.testing.assert_array_equal(v2.cpu().numpy(), ev)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        call(x, out=(ember.zeros(7, device=device), ember.zeros(7, dtype=ember.int64, device=device)))
    # indices must be int64
    with pytest.raises(RuntimeError, match="int64"):
        call(x, out=(ember.empty(0, device=device), ember.empty(0, dtype=ember.int32, device=device)))
    with pytest.raises(TypeError, match="must be a tuple of two Tensors"):
        call(x, out=ember.empty(0, device=device))
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        call(x.clone().requires_grad_(), out=(ember.empty(0, device=device),
                                              ember.empty(0, dtype=ember.int64, device=device)))


@pytest.mark.parametrize("name", ["sort", "topk", "kthvalue"])
def test_values_out_dtype_must_match(name, device):
    call, _ = _PAIR_OPS[name]
    x = ember.ones(3, 5, device=device)
    with pytest.raises(RuntimeError, match="expected out tensor to have dtype float32, but got float64"):
        call(x, out=(ember.empty(0, dtype=ember.float64, device=device),
                     ember.empty(0, dtype=ember.int64, device=device)))


def test_kthvalue_topk_out_keepdim_and_0d(device):
    x = ember.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]], device=device)
    v, i = ember.empty(0, device=device), ember.empty(0, dtype=ember.int64, device=device)
    ember.kthvalue(x, 2, 0, True, out=(v, i))
    assert tuple(v.shape) == (1, 3)
    np.testing.assert_array_equal(v.cpu().numpy(), [[3.0, 5.0, 4.0]])
    np.testing.assert_array_equal(i.cpu().numpy(), [[0, 1, 1]])
    s = ember.tensor(7.0, device=device)
    r = ember.topk(s, 1, out=(ember.empty(0, device=device), ember.empty(0, dtype=ember.int64, device=device)))
    assert r.values.shape == () and r.values.item() == 7.0 and r.indices.item() == 0
    with pytest.raises(RuntimeError, match="selected number k out of range"):
        ember.kthvalue(x, 4, out=(v, i))


# ---- out= for the factories -----------------------------------------------------------------

FACTORIES = [
    ("zeros", lambda **k: ember.zeros(2, 3, **k), np.zeros((2, 3))),
    ("ones", lambda **k: ember.ones((2, 3), **k), np.ones((2, 3))),
    ("full", lambda **k: ember.full((2, 3), 1.5, **k), np.full((2, 3), 1.5)),
    ("arange", lambda **k: ember.arange(1, 7, 2, **k), np.arange(1, 7, 2)),
    ("linspace", lambda **k: ember.linspace(0, 1, 5, **k), np.linspace(0, 1, 5)),
    ("logspace", lambda **k: ember.logspace(0, 2, 3, **k), np.logspace(0, 2, 3)),
    ("eye", lambda **k: ember.eye(3, 2, **k), np.eye(3, 2)),
    ("empty", lambda **k: ember.empty(4, **k), None),
]


@pytest.mark.parametrize("name,f,expected", FACTORIES, ids=[x[0] for x in FACTORIES])
def test_factory_out(name, f, expected, device):
    o = ember.empty(0, dtype=ember.float64, device=device)
    assert f(out=o) is o
    assert o.dtype == ember.float64  # out's dtype is the factory's
    if expected is not None:
        np.testing.assert_allclose(o.cpu().numpy(), expected, rtol=1e-12)
    else:
        assert o.shape == (4,)
    o = ember.zeros(7, dtype=ember.float64, device=device)
    with pytest.warns(UserWarning, match="was resized"):
        f(out=o)
    with pytest.raises(RuntimeError, match="dtype float32 does not match dtype of out parameter"):
        f(out=ember.empty(0, dtype=ember.float64, device=device), dtype=ember.float32)
    with pytest.raises(RuntimeError, match=rf"{name}\(\): functions with out=\.\.\. arguments don't support"):
        f(out=ember.empty(0, dtype=ember.float64, device=device), requires_grad=True)


def test_factory_out_integer_dtypes(device):
    o = ember.empty(0, dtype=ember.int64, device=device)
    ember.linspace(0, 10, 5, out=o)
    assert o.tolist() == [0, 2, 5, 7, 10]
    ember.full((2,), 3, out=o.resize_(0))
    assert o.tolist() == [3, 3]
    ember.arange(4, out=o.resize_(0))
    assert o.tolist() == [0, 1, 2, 3]


def test_random_factory_out(device):
    ember.manual_seed(5)
    ref = ember.rand(3, 2, dtype=ember.float64, device=device)
    ember.manual_seed(5)
    o = ember.empty(0, dtype=ember.float64, device=device)
    assert ember.rand(3, 2, out=o) is o
    np.testing.assert_array_equal(o.cpu().numpy(), ref.cpu().numpy())
    with pytest.warns(UserWarning, match=RESIZE.format("3, 2", "4")):
        ember.randn(4, out=o)
    assert o.shape == (4,)
    r = ember.empty(0, dtype=ember.int64, device=device)
    ember.randint(3, 7, (50,), out=r)
    vals = r.cpu().numpy()
    assert vals.min() >= 3 and vals.max() < 7
    ember.randperm(6, out=r.resize_(0))
    assert sorted(r.tolist()) == list(range(6))
    f = ember.empty(0, dtype=ember.float32, device=device)
    ember.randint(5, (4,), out=f)
    assert f.dtype == ember.float32 and f.shape == (4,)


def test_like_factories_take_no_out():
    with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
        ember.ones_like(ember.zeros(2), out=ember.zeros(2))


# ---- scatter(reduce=) ------------------------------------------------------------------------

def np_scatter(self, dim, index, src, op):
    r = self.copy()
    for pos in np.ndindex(index.shape):
        tgt = list(pos)
        tgt[dim] = index[pos]
        v = src[pos] if isinstance(src, np.ndarray) else src
        if op == "add":
            r[tuple(tgt)] += v
        else:
            r[tuple(tgt)] *= v
    return r


@pytest.mark.parametrize("reduce", ["add", "multiply"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_reduce_tensor_src(reduce, dim, device):
    rng = np.random.default_rng(2)
    self = rng.standard_normal((4, 5))
    index = rng.integers(0, self.shape[dim], (3, 4))  # duplicates on purpose
    src = rng.standard_normal((3, 5))
    expected = np_scatter(self, dim, index, src[:, :4], reduce)
    t = ember.tensor(self, device=device)
    idx = ember.tensor(index, device=device)
    with pytest.warns(UserWarning, match="deprecated"):
        got = ember.scatter(t, dim, idx, ember.tensor(src, device=device), reduce=reduce)
    np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-12)
    with pytest.warns(UserWarning):
        got2 = t.scatter(dim, idx, ember.tensor(src, device=device), reduce=reduce)
    np.testing.assert_allclose(got2.cpu().numpy(), expected, rtol=1e-12)
    # in place: self itself, version bumped
    v0 = t._version
    with pytest.warns(UserWarning):
        assert t.scatter_(dim, idx, ember.tensor(src, device=device), reduce=reduce) is t
    assert t._version > v0
    np.testing.assert_allclose(t.cpu().numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_reduce_value(reduce, device):
    rng = np.random.default_rng(3)
    self = rng.standard_normal((3, 4))
    index = rng.integers(0, 3, (2, 4))
    expected = np_scatter(self, 0, index, 1.5, reduce)
    t = ember.tensor(self, device=device)
    idx = ember.tensor(index, device=device)
    np.testing.assert_allclose(ember.scatter(t, 0, idx, 1.5, reduce=reduce).cpu().numpy(), expected)
    np.testing.assert_allclose(t.scatter(0, idx, value=1.5, reduce=reduce).cpu().numpy(), expected)
    assert t.scatter_(0, idx, 1.5, reduce=reduce) is t
    np.testing.assert_allclose(t.cpu().numpy(), expected)
    # integer self: the value is cast to self's dtype (2.5 -> 2), as PyTorch
    ti = ember.full((3, 4), 2, dtype=ember.int64, device=device)
    got = ember.scatter(ti, 0, idx, 2.5, reduce=reduce).cpu().numpy()
    np.testing.assert_array_equal(got, np_scatter(np.full((3, 4), 2), 0, index, 2, reduce))


def test_scatter_reduce_odd_shapes(device):
    # 0-d self and index
    s = ember.tensor(3.0, device=device)
    r = ember.scatter(s, 0, ember.tensor(0, device=device), 2.0, reduce="multiply")
    assert r.shape == () and r.item() == 6.0
    # empty index: self unchanged
    t = ember.ones(2, 3, device=device)
    e = ember.empty(0, 3, dtype=ember.int64, device=device)
    assert ember.scatter(t, 0, e, 5.0, reduce="add").tolist() == t.tolist()
    # non-contiguous self
    base = ember.arange(12.0, device=device).reshape(3, 4).t()
    idx = ember.tensor([[0, 1, 2]], device=device)
    got = ember.scatter(base, 1, idx, 10.0, reduce="add").cpu().numpy()
    exp = base.cpu().numpy().copy()
    exp[0, [0, 1, 2]] += 10
    np.testing.assert_array_equal(got, exp)


def test_scatter_reduce_errors_and_autograd(device):
    t = ember.ones(3, device=device)
    idx = ember.tensor([0, 2], device=device)
    with pytest.raises(RuntimeError, match="reduce argument must be either add or multiply."):
        ember.scatter(t, 0, idx, 2.0, reduce="mean")
    with pytest.raises(RuntimeError, match="index 5 is out of bounds"):
        ember.scatter(t, 0, ember.tensor([5], device=device), 2.0, reduce="add")
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ember.scatter(t, 0, idx, ember.ones(2, dtype=ember.float64, device=device), reduce="add")
    with pytest.raises(TypeError, match="argument 'reduce' must be str"):
        ember.scatter(t, 0, idx, 2.0, reduce=1)
    x = ember.ones(3, requires_grad=True, device=device)
    y = ember.scatter(x, 0, idx, 2.0, reduce="multiply")
    assert y.requires_grad and y.grad_fn.name() == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented"):
        y.sum().backward()


# ---- node hooks ------------------------------------------------------------------------------

def test_node_hooks_see_and_replace_grads(device):
    x = ember.ones(3, requires_grad=True, device=device)
    y = x * 2
    log = []
    h_post = y.grad_fn.register_hook(lambda gi, go: log.append(("post", gi, go)))
    h_pre = y.grad_fn.register_prehook(lambda go: log.append(("pre", go)))
    y.sum().backward()
    assert [e[0] for e in log] == ["pre", "post"]
    (gout,) = log[0][1]
    assert gout.tolist() == [1.0] * 3
    gi, go = log[1][1], log[1][2]
    assert len(gi) == 2 and gi[0].tolist() == [2.0] * 3 and gi[1] is None
    assert go[0].tolist() == [1.0] * 3
    h_post.remove()
    h_pre.remove()
    # replacing: pre-hook scales what apply sees, post hook what flows on
    x.grad = None
    y = x * 2
    y.grad_fn.register_prehook(lambda go: (go[0] * 3,))
    y.grad_fn.register_hook(lambda gi, go: (gi[0] * 10, None))
    y.sum().backward()
    assert x.grad.tolist() == [60.0] * 3
    # removed hooks no longer run
    x.grad = None
    y = x * 2
    h = y.grad_fn.register_hook(lambda gi, go: (gi[0] * 10, None))
    h.remove()
    y.sum().backward()
    assert x.grad.tolist() == [2.0] * 3


def test_node_hook_errors(device):
    x = ember.ones(3, requires_grad=True, device=device)
    y = x * 2
    y.grad_fn.register_hook(lambda gi, go: (gi[0],))
    with pytest.raises(RuntimeError, match=r"hook '<lambda>' has returned an incorrect number of values "
                                           r"\(got 1, but expected 2\)"):
        y.sum().backward()
    y = x * 2
    y.grad_fn.register_prehook(lambda go: 5)
    with pytest.raises(TypeError, match="expected tuple, but hook returned 'int'"):
        y.sum().backward()
    y = x * 2
    y.grad_fn.register_prehook(lambda go: (5,))
    with pytest.raises(TypeError, match="expected Variable, but hook returned 'int'"):
        y.sum().backward()


# ---- matmul's UnsafeViewBackward0 ------------------------------------------------------------

def names(fn, depth=0, out=None):
    out = [] if out is None else out
    if fn is None:
        return out
    out.append("  " * depth + fn.name())
    for f, _ in fn.next_functions:
        names(f, depth + 1, out)
    return out


def test_matmul_unsafe_view_graph(device):
    a = ember.randn(2, 3, 4, requires_grad=True, dtype=ember.float64, device=device)
    b = ember.randn(4, 5, requires_grad=True, dtype=ember.float64, device=device)
    y = a @ b
    assert names(y.grad_fn) == ["UnsafeViewBackward0", "  MmBackward0", "    ViewBackward0",
                                "      AccumulateGrad", "    AccumulateGrad"]
    assert y._base is None
    bb = ember.randn(2, 4, 5, requires_grad=True, dtype=ember.float64, device=device)
    assert names((a @ bb).grad_fn)[:2] == ["UnsafeViewBackward0", "  BmmBackward0"]
    v = ember.randn(4, requires_grad=True, dtype=ember.float64, device=device)
    assert names((a @ v).grad_fn)[:2] == ["UnsafeViewBackward0", "  MvBackward0"]
    # reshape of a non-viewable tensor: clone + _unsafe_view, as PyTorch
    r = a.transpose(1, 2).reshape(8, 3)
    assert names(r.grad_fn)[:2] == ["UnsafeViewBackward0", "  CloneBackward0"]
    assert ember.autograd.gradcheck(lambda p, q: p @ q, (a, b))
    assert ember.autograd.gradgradcheck(lambda p, q: p @ q, (a, b))
    assert ember.autograd.gradcheck(lambda p: p.transpose(1, 2).reshape(8, 3), (a,))
