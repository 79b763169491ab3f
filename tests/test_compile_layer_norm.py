"""ember.compile's fused layer_norm (Note [Fused layer_norm] in _compile/_codegen.py): a row
reduction with its elementwise producers and consumers, its backward (gradients of the input,
weight and bias, the last two summed per range of rows, Note [Row partial sums]) and a dropout
after it whose mask the forward saves for the backward."""
import re

import pytest
from test_compile import _entries

import ember
from ember._compile import _toolchain, config

F = ember.nn.functional
pytestmark = pytest.mark.skipif(_toolchain.compiler() is None, reason="no C++ compiler")


def _kernels(compiled):
    return [k for e in _entries(compiled) for k in getattr(e, "kernels", [])]


def _ln_groups(compiled):
    return [k for k in _kernels(compiled)
            if k.prog.red is not None and k.prog.steps[k.prog.red][1]["name"] == "layer_norm"]


@pytest.fixture
def with_grad_groups(monkeypatch):
    monkeypatch.setattr(config, "fuse_reductions_with_grad", True)


TOL = {ember.float64: 1e-12, ember.float32: 2e-5, ember.float16: 2e-2, ember.bfloat16: 5e-2}


@pytest.mark.parametrize("dtype", list(TOL), ids=str)
@pytest.mark.parametrize("affine", ["both", "weight", "none"])
@pytest.mark.parametrize("shape", [(4, 37), (2, 3, 768), (1, 1), (3, 0, 5)])
def test_forward_equals_eager(dtype, affine, shape):
    L = shape[-1]
    w = ember.randn(L).to(dtype) if affine != "none" else None
    b = ember.randn(L).to(dtype) if affine == "both" else None

    def f(x, r):
        return F.layer_norm(x + r, (L,), w, b, 1e-5) * 2 - 1
    cf = ember.compile(f)
    x, r = ember.randn(*shape).to(dtype), ember.randn(*shape).to(dtype)
    with ember.no_grad():
        e, c = f(x, r), cf(x, r)
    assert c.dtype == dtype and c.shape == e.shape
    assert ember.allclose(c.double(), e.double(), rtol=TOL[dtype], atol=TOL[dtype])
    if x.numel():
        assert len(_ln_groups(cf)) == 1


def test_strided_rows_and_large_values():
    """A transposed input (the strided row body) and rows with a large mean (the statistics
    in double). The fused x * 1.5 - mean may be one FMA (exact product) where eager rounds
    x * 1.5 = 15000-odd first: up to half its ulp (2^-10) apart, over a std of 1.5."""
    def f(x):
        return F.layer_norm(x.t() * 1.5, (x.shape[0],), eps=1e-6)
    cf = ember.compile(f)
    x = ember.randn(300, 7) + 1e4
    with ember.no_grad():
        assert ember.allclose(cf(x), f(x), rtol=0, atol=2e-3)
    assert len(_ln_groups(cf)) == 1


def test_grad_groups_off_by_default():
    """Where a gradient flows, layer_norm stays eager unless the config says otherwise."""
    w = ember.randn(16, requires_grad=True)

    def f(x):
        return F.layer_norm(x * 2, (16,), w)
    cf = ember.compile(f)
    x = ember.randn(4, 16, requires_grad=True)
    cf(x).sum().backward()
    assert not _ln_groups(cf)


@pytest.mark.usefixtures("with_grad_groups")
def test_backward_equals_eager_and_gradcheck():
    L = 37
    w = ember.randn(L, dtype=ember.float64, requires_grad=True)
    b = ember.randn(L, dtype=ember.float64, requires_grad=True)

    def f(x, r):
        return F.layer_norm(x + r, (L,), w, b, 1e-5).tanh()
    cf = ember.compile(f)
    x = ember.randn(50, L, dtype=ember.float64, requires_grad=True)
    r = ember.randn(50, L, dtype=ember.float64, requires_grad=True)
    g = ember.randn(50, L, dtype=ember.float64)
    grads = []
    for fn in (f, cf):
        fn(x, r).backward(g)
        grads.append([t.grad.clone() for t in (x, r, w, b)])
        for t in (x, r, w, b):
            t.grad = None
    for a, c in zip(*grads):
        assert ember.allclose(a, c, rtol=1e-10, atol=1e-12)
    (k,) = _ln_groups(cf)
    assert any(key[3] for key in k._bwd), "weight and bias were not summed per range of rows"
    xs, rs = x[:6].detach().requires_grad_(), r[:6].detach().requires_grad_()
    assert ember.autograd.gradcheck(cf, (xs, rs))
    assert ember.autograd.gradcheck(lambda w_, b_: F.layer_norm(xs, (L,), w_, b_).sum(-1),
                                    (w, b))


@pytest.mark.usefixtures("with_grad_groups")
@pytest.mark.parametrize("threads", [1, 2])
def test_weight_gradient_partial_sums(threads):
    """Rows split among threads (and more rows than a range): the weight's and bias's sums
    over every range are all there, float32 against eager."""
    prev = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        m = ember.nn.LayerNorm(96)
        scale = ember.arange(96.0)

        def f(x):
            return m(x) * scale
        cm = ember.compile(f)
        x = ember.randn(3000, 96, requires_grad=True)
        grads = []
        for fn in (f, cm):
            fn(x).sum().backward()
            grads.append([t.grad.clone() for t in (x, m.weight, m.bias)])
            x.grad = m.weight.grad = m.bias.grad = None
        for a, c in zip(*grads):  # float sums over 3000 rows, in another order than eager's
            err = (a - c).abs().max().item() / a.abs().max().item()
            assert err < 1e-5, err
        assert len(_ln_groups(cm)) == 1
    finally:
        ember.set_num_threads(prev)


@pytest.mark.usefixtures("with_grad_groups")
@pytest.mark.parametrize("wshape", [(37,), (1, 37), (1, 1, 37)])
def test_row_invariant_inputs_of_any_rank(wshape):
    """Row-invariant inputs of shape [L], [1, L] or [1, 1, L] in a row group (softmax here):
    their per-range sums come back in the input's own shape, equal to eager's gradient."""
    w = ember.randn(*wshape, dtype=ember.float64, requires_grad=True)
    b = ember.randn(37, dtype=ember.float64, requires_grad=True)

    def f(x):
        return F.softmax(x * w + b, -1)
    cf = ember.compile(f)
    x = ember.randn(2, 3, 37, dtype=ember.float64, requires_grad=True)
    grads = []
    for fn in (f, cf):
        fn(x).pow(2).sum().backward()
        grads.append([t.grad.clone() for t in (x, w, b)])
        x.grad = w.grad = b.grad = None
    for a, c in zip(*grads):
        assert a.shape == c.shape and ember.allclose(a, c, rtol=1e-10, atol=1e-12)
    assert any(key[3] for k in _kernels(cf) for key in k._bwd)


@pytest.mark.usefixtures("with_grad_groups")
def test_dropout_after_layer_norm_saves_its_mask():
    """add -> layer_norm -> dropout is one row kernel; its backward reads the forward's mask,
    and everything equals eager (same draws)."""
    m = ember.nn.Sequential(ember.nn.LayerNorm(64), ember.nn.Dropout(0.25))
    cm = ember.compile(lambda x, r: m(x + r))
    x = ember.randn(40, 64, requires_grad=True)
    r = ember.randn(40, 64, requires_grad=True)
    outs = []
    for fn in (lambda x, r: m(x + r), cm):
        ember.manual_seed(2)
        y = fn(x, r)
        y.sum().backward()
        outs.append([y.detach()] + [t.grad.clone() for t in (x, r, m[0].weight, m[0].bias)])
        for t in (x, r, m[0].weight, m[0].bias):
            t.grad = None
    assert ember.equal(outs[0][0] == 0, outs[1][0] == 0)
    for a, c in zip(*outs):
        assert ember.allclose(a, c, rtol=1e-4, atol=1e-5)
    (k,) = _ln_groups(cm)
    assert k.prog.dropouts and k._masked is not None and any(key[1] for key in k._bwd)


def test_forms_left_eager():
    """normalized_shape over two dimensions, a weight of another dtype: not fused, still
    eager's result."""
    def two(x):
        return F.layer_norm(x * 2, (3, 4))

    def mixed(x):
        return F.layer_norm(x * 2, (4,), ember.ones(4, dtype=ember.float64))
    x = ember.randn(5, 3, 4)
    for fn in (two, mixed):
        cf = ember.compile(fn)
        with ember.no_grad():
            try:
                e = fn(x)
            except RuntimeError as err:
                with pytest.raises(RuntimeError, match=re.escape(str(err)[:20])):
                    cf(x)
                continue
            assert ember.allclose(cf(x), e, rtol=1e-6, atol=1e-6)
        assert not _ln_groups(cf)
