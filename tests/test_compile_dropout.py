"""ember.compile's fused dropout (Note [Fused dropout] in _compile/_codegen.py): the generated
kernel draws the mask from the same Philox blocks eager dropout reserves, so compiled and
eager results, gradients and generator state agree bit for bit; and eager bernoulli_'s
vector draws (Note [Vector Philox]) against the scalar definition of the stream."""
import math

import pytest
from test_compile import _entries

import ember
from ember._compile import _toolchain

F = ember.nn.functional
needs_cc = pytest.mark.skipif(_toolchain.compiler() is None, reason="no C++ compiler")

DTYPES = [ember.float32, ember.float64, ember.float16, ember.bfloat16]


def _kernels(compiled):
    return [k for e in _entries(compiled) for k in getattr(e, "kernels", [])]


def _draws(compiled):
    """The dropouts fused in the entry compiled last."""
    return sum(len(k.prog.dropouts) for k in getattr(_entries(compiled)[-1], "kernels", []))


def _same_run(fn, cfn, *args, seed=3):
    """fn and cfn from the same generator state: results, and the state after."""
    ember.manual_seed(seed)
    e = fn(*args)
    e_next = ember.rand(4)
    ember.manual_seed(seed)
    c = cfn(*args)
    c_next = ember.rand(4)
    assert ember.equal(e_next, c_next), "the compiled call left the generator elsewhere"
    return e, c


def _equal(a, b):
    a = a if isinstance(a, (tuple, list)) else (a,)
    b = b if isinstance(b, (tuple, list)) else (b,)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert ember.equal(x, y), (x, y)


@needs_cc
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(7, 13), (), (0, 3), (1001,), (3, 4, 5), (2, 700)])
def test_dropout_equals_eager(dtype, shape):
    def f(x):
        return F.dropout(x, 0.3)
    cf = ember.compile(f)
    x = ember.randn(*shape).to(dtype) + 0.5
    e, c = _same_run(f, cf, x)  # the first call (tracing) must not draw twice
    _equal(e, c)
    e, c = _same_run(f, cf, x, seed=11)  # a replay
    _equal(e, c)
    assert _draws(cf) == 1
    if x.numel() > 100:
        kept = (c != 0).float().mean().item()
        assert 0.6 < kept < 0.8


@needs_cc
@pytest.mark.parametrize("p", [0.5, 1e-3, 1 - 1e-3])
def test_dropout_probability_edges(p):
    def f(x):
        return F.dropout(x, p)
    cf = ember.compile(f)
    x = ember.rand(64, 65) + 1
    e, c = _same_run(f, cf, x)
    _equal(e, c)


@needs_cc
def test_noncontiguous_broadcast_chain():
    """The strided loop (a transposed input, a broadcast row, a run longer than a draw
    buffer) and a chain around the dropout, in float64: eager's mask, values to rounding."""
    def f(x, w, r):
        return F.dropout(x * w + 1, 0.25) + r
    cf = ember.compile(f)
    for x in (ember.randn(1300, 9, dtype=ember.float64).t(),
              ember.randn(4, 2600, dtype=ember.float64)[:, ::2]):
        w = ember.randn(x.shape[-1], dtype=ember.float64)
        r = ember.randn(x.shape[0], 1, dtype=ember.float64)
        e, c = _same_run(f, cf, x, w, r)
        assert ember.equal(e == r, c == r)  # the same elements dropped
        assert ember.allclose(e, c, rtol=1e-15, atol=1e-15)
        assert _draws(cf) == 1


@needs_cc
def test_gradients_equal_eager_and_gradcheck():
    def f(x, w):
        return F.dropout(x * w, 0.4).tanh()
    cf = ember.compile(f)
    x = ember.randn(6, 50, dtype=ember.float64, requires_grad=True)
    w = ember.randn(50, dtype=ember.float64, requires_grad=True)
    grads = []
    for fn in (f, cf):
        ember.manual_seed(5)
        y = fn(x, w)
        y.backward(ember.ones_like(y))
        grads.append((y.detach(), x.grad, w.grad))
        x.grad = w.grad = None
    assert ember.allclose(grads[0][0], grads[1][0], rtol=1e-14, atol=0)
    assert ember.equal(grads[0][1] == 0, grads[1][1] == 0)
    for a, b in zip(grads[0][1:], grads[1][1:]):
        assert ember.allclose(a, b, rtol=1e-13, atol=1e-15)
    assert _draws(cf) == 1
    # the backward read the forward's saved mask instead of drawing again
    assert all(k._masked is not None and any(key[1] for key in k._bwd) for k in _kernels(cf))

    def fixed(x, w):  # one mask for every evaluation gradcheck makes
        ember.manual_seed(7)
        return cf(x, w)
    xs = ember.randn(3, 5, dtype=ember.float64, requires_grad=True)
    ws = ember.randn(5, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(fixed, (xs, ws))


@needs_cc
def test_draws_keep_graph_order():
    """Random ops between dropouts: every draw happens where eager makes it."""
    def f(x):
        a = F.dropout(x, 0.5)
        b = ember.rand(x.shape, dtype=x.dtype)
        c = F.dropout(x * 2, 0.2)
        d = F.dropout(x.exp(), 0.7) + F.dropout(x + 1, 0.1)
        return a + b + c + d
    cf = ember.compile(f)
    x = ember.randn(33, 17, dtype=ember.float64)
    for seed in (1, 2):
        e, c = _same_run(f, cf, x, seed=seed)
        assert ember.allclose(e, c, rtol=1e-15, atol=1e-15)
    assert _draws(cf) == 4


@needs_cc
def test_row_group_softmax_dropout():
    """Attention's softmax then dropout, where no gradient flows: one row kernel."""
    def f(x):
        return F.dropout(F.softmax(x, -1), 0.1) * 3
    cf = ember.compile(f)
    for shape in ((4, 8, 700), (5, 3)):
        x = ember.randn(*shape)
        with ember.no_grad():
            e, c = _same_run(f, cf, x)
        assert ember.equal(e == 0, c == 0)
        assert ember.allclose(e, c, rtol=1e-6, atol=1e-7)
    assert any(k.prog.red is not None and k.prog.dropouts for k in _kernels(cf))


@needs_cc
def test_module_train_and_eval():
    m = ember.nn.Sequential(ember.nn.Linear(16, 32), ember.nn.GELU(), ember.nn.Dropout(0.2))
    cm = ember.compile(m)
    x = ember.randn(8, 16)
    e, c = _same_run(m, cm, x)
    assert ember.allclose(e, c, rtol=1e-6, atol=1e-6) and ember.equal(e == 0, c == 0)
    m.eval()
    with ember.no_grad():
        assert ember.allclose(cm(x), m(x), rtol=1e-6, atol=1e-6)
    assert ember.equal(ember.compile(lambda t: F.dropout(t, 0.3, training=False))(x), x)


@needs_cc
def test_forms_left_eager():
    """alpha dropout, dropout2d, p = 0 and p = 1 draw differently or not at all: not fused,
    still equal to eager."""
    fns = [lambda t: F.alpha_dropout(t, 0.3, training=True),
           lambda t: F.dropout2d(t, 0.3),
           lambda t: F.dropout(t, 0.0) * 2,
           lambda t: F.dropout(t, 1.0) + 1]
    x = ember.randn(2, 3, 4, 5)
    for fn in fns:
        cf = ember.compile(fn)
        e, c = _same_run(fn, cf, x)
        _equal(e, c)
        assert _draws(cf) == 0


def _reference_bernoulli(seed, offset, n, p):
    thr = math.ceil(p * 2.0 ** 53)
    out = []
    for i in range(n):
        w = ember._C._philox_block(seed, offset + i // 2)
        lo, hi = (w[2], w[3]) if i % 2 else (w[0], w[1])
        out.append(1.0 if (((hi << 32) | lo) >> 11) < thr else 0.0)
    return out


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.int64,
                                   ember.bool], ids=str)
@pytest.mark.parametrize("n", [1, 31, 64, 65, 333])
def test_eager_bernoulli_matches_the_stream(dtype, n):
    """bernoulli_(p): the vector draws equal the scalar definition of the stream."""
    ember.manual_seed(123)
    ember.empty(7).bernoulli_(0.5)  # an odd offset into the stream
    seed, offset = ember.initial_seed(), ember.default_generator.get_offset()
    got = ember.empty(n, dtype=dtype).bernoulli_(0.37)
    assert got.tolist() == [type(v)(r) for v, r in zip(got.tolist(), _reference_bernoulli(
        seed, offset, n, 0.37))]
    assert ember.default_generator.get_offset() == offset + (n + 1) // 2


def test_eager_bernoulli_threads_agree():
    x = ember.empty(300_001)
    got = []
    for threads in (1, 2):
        ember.set_num_threads(threads)
        ember.manual_seed(9)
        got.append(x.bernoulli_(0.25).clone())
    assert ember.equal(got[0], got[1])
    assert abs(got[0].mean().item() - 0.25) < 0.01


@needs_cc
def test_cuda_kernels_compile_with_nvrtc():
    """Fused dropout's CUDA kernels (drawing forward, mask-saving forward, the backward from
    saved masks and the drawing one; elementwise, softmax and layer_norm row kernels) for
    every floating dtype: NVRTC compiles them to sm_90 machine code, without a GPU."""
    import warnings

    from ember._compile import _cuda, _runtime
    from ember.jit import _trace
    ok, why = _cuda.available()
    if not ok:
        pytest.skip(why)
    import test_compile_ops as ops

    def chain(x):
        return F.dropout(x * 2, 0.3) + 1

    def rows(x):
        return F.dropout(F.softmax(x, -1), 0.2)

    def norm(x):  # layer_norm's row kernels too (Note [Fused layer_norm])
        return F.dropout(F.layer_norm(x * 2, (6,), ember.ones(6, dtype=x.dtype)), 0.1)
    sources = []
    for dt in DTYPES:
        for fn in (chain, rows, norm):
            x = ember.randn(4, 6).to(dt)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                g, _, _ = _trace._run_traced(fn, (x,))
            ember._C._jit_pass_optimize(g)
            (prog,) = _runtime.programs(g, [False])
            assert prog.dropouts
            sources.append(_cuda.forward_source(prog))
            sources += [_cuda.forward_source(prog, True),
                        _cuda.backward_source(prog, (0,), True, (True,)),
                        _cuda.backward_source(prog, (0,))]
    assert all("bernoulli53(" in s or "mk" in s for s in sources)
    opts, _ = _cuda.options(90)
    image, _ = ember._C._nvrtc_compile(ops._one_program(sources), "dropout.cu", opts,
                                       _cuda._headers(), True)
    assert image[:4] == b"\x7fELF"
