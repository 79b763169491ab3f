"""ember.compile: signatures, recompiles and their warnings, fallbacks, fullgraph, modules,
gradients through fused kernels, the kernel cache across processes, the no-compiler path,
logging, and the seeds' ratio_iou and chunked cross-entropy."""
import subprocess
import sys
import warnings

import pytest
from child_env import child_env

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember._compile import _toolchain

needs_cc = pytest.mark.skipif(_toolchain.compiler() is None, reason="no C++ compiler")


def ratio_iou(x1, y1, w1, h1, x2, y2, w2, h2):
    xi = ember.max(x1, x2)
    yi = ember.max(y1, y2)
    wi = ember.clamp(ember.min(x1 + w1, x2 + w2) - xi, min=0)
    hi = ember.clamp(ember.min(y1 + h1, y2 + h2) - yi, min=0)
    area_i = wi * hi
    area_u = w1 * h1 + w2 * h2 - wi * hi
    return area_i / ember.clamp(area_u, min=1e-5)


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _entries(cfn):
    st = cfn._state if hasattr(cfn, "_state") else cfn._compiled_state
    return st.entries


@needs_cc
def test_ratio_iou_is_one_fusion_group():
    xs = [ember.randn(8, 100, 100).exp() for _ in range(8)]
    c = ember.compile(ratio_iou)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = c(*xs)
    ember.testing.assert_close(got, ratio_iou(*xs), rtol=1e-6, atol=1e-6)
    (e,) = _entries(c)
    assert len(e.kernels) == 1
    assert e.graph_text.count("ember::fusion_group") == 1
    assert "aten::mul" not in e.graph_text  # every elementwise op went into the group
    assert "ember::fusion_group" in c.graph_for(*xs)


@needs_cc
def test_gradcheck_through_compiled():
    xs = [ember.rand(3, 4, dtype=ember.float64).add(0.5).requires_grad_() for _ in range(8)]
    c = ember.compile(ratio_iou)
    assert ember.autograd.gradcheck(lambda *a: _quiet(c, *a), xs)
    assert _entries(c)[0].kernels

    def chain(x, y, b):
        z = (x * y).sigmoid() + ember.tanh(b) * x.exp() - (y / (b.abs() + 1)).sqrt()
        return ember.where(x > 0, z, z * z).clamp(-2, 2) ** 2, x.sin() + b.cos()
    x = ember.randn(4, 5, dtype=ember.float64, requires_grad=True)
    y = ember.rand(4, 5, dtype=ember.float64).add(0.1).t().contiguous().t().requires_grad_()
    b = ember.randn(5, dtype=ember.float64, requires_grad=True)  # broadcast: grad is summed
    c2 = ember.compile(chain)
    assert ember.autograd.gradcheck(lambda *a: _quiet(c2, *a), (x, y, b))
    assert _entries(c2)[0].kernels


@needs_cc
def test_backward_matches_eager_float32():
    def f(x, w):
        return (x * w + 1).tanh() * x.sigmoid()
    x = ember.randn(64, 33, requires_grad=True)
    w = ember.randn(33, requires_grad=True)
    g = ember.randn(64, 33)
    c = ember.compile(f)
    out = _quiet(c, x, w)
    out.backward(g)
    gx, gw = x.grad.clone(), w.grad.clone()
    x.grad = None
    w.grad = None
    f(x, w).backward(g)
    ember.testing.assert_close(out, f(x, w))
    ember.testing.assert_close(gx, x.grad, rtol=1e-5, atol=1e-5)
    ember.testing.assert_close(gw, w.grad, rtol=1e-4, atol=1e-4)
    assert out.grad_fn is not None


def test_recompile_warns_naming_the_guard():
    def f(x):
        return x * 2 + 1
    c = ember.compile(f, dynamic=False)
    _quiet(c, ember.randn(3, 4))
    with pytest.warns(UserWarning, match=r"x\.shape\[0\] was 3, now 4"):
        c(ember.randn(4, 4))
    with pytest.warns(UserWarning, match=r"x\.dtype was ember\.float32, now ember\.float64"):
        c(ember.randn(4, 4, dtype=ember.float64))
    with pytest.warns(UserWarning, match=r"x\.requires_grad was False, now True"):
        c(ember.randn(4, 4, dtype=ember.float64, requires_grad=True))
    with pytest.warns(UserWarning, match="grad mode was enabled, now disabled"):
        with ember.no_grad():
            c(ember.randn(4, 4, dtype=ember.float64, requires_grad=True))
    # a known signature replays without a warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = c(ember.ones(3, 4))
    assert ember.equal(out, ember.full((3, 4), 3.0))


def test_automatic_dynamic_shapes():
    def f(x):
        return (x * 2).exp()
    c = ember.compile(f)
    _quiet(c, ember.randn(3, 4))
    _quiet(c, ember.randn(5, 4))  # recompiles once, as a dynamic entry
    n = len(_entries(c))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for rows in (6, 7, 9):
            x = ember.randn(rows, 4)
            ember.testing.assert_close(c(x), f(x))
    assert len(_entries(c)) == n == 2
    d = ember.compile(f, dynamic=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for rows in (2, 3, 8):
            x = ember.randn(rows, 5)
            ember.testing.assert_close(d(x), f(x))
    assert len(_entries(d)) == 1


def test_recompile_limit_falls_back_to_eager():
    def f(x):
        return x + 1
    c = ember.compile(f, dynamic=False)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for n in range(1, 12):
            x = ember.randn(n)
            assert ember.equal(c(x), x + 1)
    assert len(_entries(c)) == 8
    assert any("cache_size_limit (8)" in str(m.message) for m in w)


def test_data_dependent_branch_retraces():
    def f(x):
        if x.sum() > 0:
            return x * 2
        return x - 10
    c = ember.compile(f)
    pos = ember.ones(3)
    neg = -ember.ones(3)
    assert ember.equal(_quiet(c, pos), pos * 2)
    with pytest.warns(UserWarning, match="guard failed"):
        out = c(neg)
    assert ember.equal(out, neg - 10)
    assert ember.equal(_quiet(c, pos), pos * 2)


def _untraceable(x):
    # a view the tracer cannot record (untyped_storage has no graph op)
    return x * 2 + x.untyped_storage().nbytes()


def test_untraceable_falls_back_and_fullgraph_raises():
    x = ember.randn(4)
    c = ember.compile(_untraceable)
    with pytest.warns(UserWarning, match="cannot be compiled and runs eagerly"):
        out = c(x)
    ember.testing.assert_close(out, _untraceable(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the eager entry is cached: no second warning
        ember.testing.assert_close(c(x), _untraceable(x))
    with pytest.raises(RuntimeError, match="not be recorded|cannot be recorded"):
        ember.compile(_untraceable, fullgraph=True)(x)


class _MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 8)

    def forward(self, x):
        h = self.fc1(x)
        h = h * ember.sigmoid(1.702 * h)  # a GELU-like elementwise chain
        return x + self.fc2(h) * 0.5


@needs_cc
def test_module_state_dict_and_training():
    ember.manual_seed(0)
    m = _MLP()
    ref = _MLP()
    ref.load_state_dict(m.state_dict())
    cm = ember.compile(m)
    assert list(cm.state_dict().keys()) == list(m.state_dict().keys())
    ref2 = _MLP()
    ref2.load_state_dict(cm.state_dict())  # a compiled model's checkpoint loads into the original
    opt = ember.optim.SGD(cm.parameters(), lr=0.1)
    opt_ref = ember.optim.SGD(ref.parameters(), lr=0.1)
    x = ember.randn(32, 8)
    for _ in range(3):
        loss = _quiet(cm, x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss_ref = ref(x).pow(2).mean()
        opt_ref.zero_grad()
        loss_ref.backward()
        opt_ref.step()
        ember.testing.assert_close(loss, loss_ref, rtol=1e-5, atol=1e-6)
    for p, q in zip(m.parameters(), ref.parameters()):
        ember.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    assert any(e.kernels for e in _entries(cm))
    cm.eval()
    with pytest.warns(UserWarning, match="self.training was True, now False"):
        cm(x)


@needs_cc
def test_bound_method_and_decorator():
    class Loss(nn.Module):
        def compute(self, a, b):
            return ((a - b) ** 2 * 0.5).sum()
    loss = Loss()
    c = ember.compile(loss.compute)
    a, b = ember.randn(5, 6), ember.randn(5, 6)
    ember.testing.assert_close(_quiet(c, a, b), loss.compute(a, b))

    @ember.compile(dynamic=True)
    def g(x):
        return x.relu() * x
    ember.testing.assert_close(_quiet(g, a), a.relu() * a)


def test_bad_arguments():
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        ember.compile(ratio_iou, mode="fast")
    with pytest.raises(RuntimeError, match="expected a callable"):
        ember.compile(3)


def _run(code, env):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=child_env(**env),
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return r


_CHILD = """
import warnings, ember
warnings.simplefilter("ignore")
def f(x, y):
    return (x * y + 3.25).sigmoid() - y
x, y = ember.randn(50, 7), ember.randn(7)
c = ember.compile(f)
ember.testing.assert_close(c(x, y), f(x, y))
print("GRAPH", c.graph_for(x, y).count("ember::fusion_group"))
"""


@needs_cc
def test_second_process_reuses_the_cache(tmp_path):
    env = {"EMBER_CACHE_DIR": str(tmp_path), "EMBER_LOGS": "fusion"}
    first = _run(_CHILD, env)
    assert "compiled " in first.stderr and "GRAPH 1" in first.stdout
    libs = sorted(p.name for p in (tmp_path / "compile").glob("*.so"))
    assert libs
    second = _run(_CHILD, env)
    assert "compiled " not in second.stderr and "GRAPH 1" in second.stdout
    assert sorted(p.name for p in (tmp_path / "compile").glob("*.so")) == libs


def test_no_compiler_runs_the_interpreter(tmp_path):
    r = _run(_CHILD, {"EMBER_CACHE_DIR": str(tmp_path), "EMBER_COMPILE_CC": "",
                      "EMBER_LOGS": "fusion"})
    assert "GRAPH 0" in r.stdout and "no C++ compiler" in r.stderr
    assert not list(tmp_path.glob("compile/*.so"))


@needs_cc
def test_logs_show_graph_fusion_recompiles_and_source(capsys):
    ember._logging.set_logs(graph=True, fusion=True, recompiles=True, output_code=True)
    try:
        c = ember.compile(lambda x: (x + 1).exp() * 2, dynamic=False)
        _quiet(c, ember.randn(3))
        _quiet(c, ember.randn(4))
    finally:
        ember._logging.set_logs(graph=False, fusion=False, recompiles=False, output_code=False)
    err = capsys.readouterr().err
    assert "traced graph of" in err and "fused graph of" in err
    assert "fusion group 0" in err
    assert "Recompiling function" in err and "x.shape[0] was 3, now 4" in err
    assert 'extern "C" void ember_kernel' in err and "ember::fn::Exp" in err


class CEWithChunkedOutputLoss(nn.Module):
    """The seed's torchtune loss: cross-entropy of bf16 logits upcast one chunk at a time."""

    def __init__(self, num_output_chunks=4, ignore_index=-100):
        super().__init__()
        self.num_output_chunks = num_output_chunks
        self.ignore_index = ignore_index

    def compute_cross_entropy(self, logits, labels):
        return F.cross_entropy(logits.float(), labels, ignore_index=self.ignore_index,
                               reduction="sum")

    def forward(self, logits, labels):
        total_elements = (labels != self.ignore_index).sum()
        labels = [t.reshape(-1) for t in labels.chunk(self.num_output_chunks, dim=1)]
        logits = [c.reshape(-1, c.size(-1)) for c in logits]
        total_loss = 0.0
        for chunk, label in zip(logits, labels):
            total_loss += self.compute_cross_entropy(chunk, label)
        return total_loss / total_elements


def test_chunked_cross_entropy_compiled_method():
    ember.manual_seed(0)
    loss_fn = CEWithChunkedOutputLoss()
    ref = CEWithChunkedOutputLoss()
    loss_fn.compute_cross_entropy = ember.compile(loss_fn.compute_cross_entropy)
    logits = ember.randn(2, 16, 50, dtype=ember.bfloat16, requires_grad=True)
    labels = ember.randint(0, 50, (2, 16))
    labels[0, 3] = -100
    chunks = list(logits.chunk(4, dim=1))
    out = _quiet(loss_fn, chunks, labels)
    out.backward()
    g = logits.grad.clone()
    logits.grad = None
    expected = ref(list(logits.chunk(4, dim=1)), labels)
    expected.backward()
    ember.testing.assert_close(out, expected)
    ember.testing.assert_close(g, logits.grad)


@needs_cc
def test_reductions_fuse_with_their_producers_and_consumers():
    def attn(x, m):
        a = (x * 0.125).masked_fill(m, float("-inf"))
        return ember.softmax(a, -1) * 2, ember.log_softmax(x.half(), dim=-1).float() + 1

    def norm(x):
        c = x - x.mean(-1, keepdim=True)
        return (c * c).sum(-1), ember.logsumexp(x * 3, dim=[1]) - 1, (x.exp() + 1).amax(-1)

    x = ember.randn(6, 33)
    m = ember.rand(6, 33) > 0.7
    for fn, args in ((attn, (x, m)), (norm, (x,)), (norm, (x.t().contiguous().t(),))):
        c = ember.compile(fn)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = c(*args)
        for g, e in zip(got, fn(*args)):
            assert g.shape == e.shape and g.dtype == e.dtype
            ember.testing.assert_close(g, e, rtol=2e-6, atol=2e-6)
        (entry,) = _entries(c)
        assert entry.kernels and any(k.prog.red is not None for k in entry.kernels)
        assert "aten::softmax" not in entry.graph_text and "aten::amax" not in entry.graph_text
    # training through the fused softmax: gradients equal eager
    xg = x.clone().requires_grad_()
    c = ember.compile(attn)
    out = _quiet(c, xg, m)
    out[0].sum().backward()
    ref = xg.detach().clone().requires_grad_()
    attn(ref, m)[0].sum().backward()
    ember.testing.assert_close(xg.grad, ref.grad)


@needs_cc
def test_gradcheck_through_fused_reductions():
    def attn(x, m, w):
        a = (x * w).masked_fill(m, float("-inf"))
        return ember.softmax(a, -1) * w, ember.log_softmax(x.sin(), -1).exp()

    def norm(x, w):
        c = x - x.mean(-1, keepdim=True)
        return (c * c * w).sum(-1), ember.logsumexp(x * w, dim=[1]) - 1

    x = ember.randn(4, 7, dtype=ember.float64, requires_grad=True)
    w = ember.randn(7, dtype=ember.float64, requires_grad=True)  # broadcast
    m = ember.rand(4, 7) > 0.7
    m[:, 0] = False
    ember._compile.config.fuse_reductions_with_grad = True
    try:
        for fn, args in ((attn, (x, m, w)), (norm, (x, w))):
            c = ember.compile(fn)
            assert ember.autograd.gradcheck(lambda *a: _quiet(c, *a), args)
            entry = _entries(c)[0]  # the first call: gradients flow
            assert any(k.prog.red is not None for k in entry.kernels), entry.graph_text
    finally:
        ember._compile.config.fuse_reductions_with_grad = False
    c = ember.compile(attn)  # by default a row group is fused only where no gradient flows
    _quiet(c, x, m, w)
    assert not any(k.prog.red is not None for k in _entries(c)[0].kernels)


def test_backend_eager_traces_without_fusing():
    c = ember.compile(ratio_iou, backend="eager")
    xs = [ember.rand(3, 4) + 0.1 for _ in range(8)]
    ember.testing.assert_close(_quiet(c, *xs), ratio_iou(*xs))
    (e,) = _entries(c)
    assert not e.kernels and "aten::maximum" in e.graph_text
    with pytest.raises(ValueError, match="unknown backend"):
        ember.compile(ratio_iou, backend="tvm")


def test_autocast_state_is_part_of_the_signature():
    def f(a, b):
        return (a @ b).relu() + 1
    a, b = ember.randn(4, 4), ember.randn(4, 4)
    c = ember.compile(f)
    _quiet(c, a, b)
    with pytest.warns(UserWarning, match=r"autocast\('cpu'\) was off, now on"):
        with ember.autocast("cpu", dtype=ember.bfloat16):
            out = c(a, b)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        expected = f(a, b)
    assert out.dtype == expected.dtype
    ember.testing.assert_close(out, expected)
