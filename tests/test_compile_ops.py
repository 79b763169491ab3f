"""ember.compile's fused kernels against eager, op by op: every elementwise op of the op
table (ember.testing.opinfo) in a fusion group, over dtypes, with broadcast and
non-contiguous inputs, on every device present (CPU kernels from the C++ compiler, CUDA
kernels from NVRTC); integer and bool results bitwise, floating ones within a few ulp
(Note [Generated kernels]: the compiler may contract a*b+c into one rounding). Where
NVRTC is installed (CI has the CUDA toolkit, not a GPU), every op's CUDA kernel, forward
and backward, is also compiled for sm_90."""
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember
from ember._compile import _toolchain
from ember.testing.opinfo import binary_ops, unary_ops

pytestmark = pytest.mark.skipif(_toolchain.compiler() is None, reason="no C++ compiler")

DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool"]
# ulp-scaled tolerances for floating results
TOL = {"float32": dict(rtol=4e-6, atol=1e-6), "float64": dict(rtol=1e-13, atol=1e-14),
       "float16": dict(rtol=1e-3, atol=1e-3), "bfloat16": dict(rtol=8e-3, atol=8e-3)}


def _input(rng, shape, dtype, domain, device="cpu"):
    lo, hi = domain or (-3, 3)
    if dtype == "bool":
        return ember.tensor(rng.random(shape) > 0.5).to(device)
    if dtype in ("int32", "int64", "uint8"):
        lo = max(lo, 0) if dtype == "uint8" else lo
        a = rng.integers(int(np.floor(lo)), int(np.ceil(hi)) + 1, size=shape)
        return ember.tensor(a).to(getattr(ember, dtype)).to(device)
    a = rng.uniform(lo, hi, size=shape)
    return ember.tensor(a, dtype=getattr(ember, dtype)).to(device)


def _check(fn, args, dtype):
    try:
        expected = fn(*args)
    except (RuntimeError, TypeError, NotImplementedError) as err:
        # Eager refuses this dtype: the compiled function must refuse it with the same error.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(type(err), match=re.escape(str(err).splitlines()[0][:60])):
                ember.compile(fn)(*args)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager would warn: must not happen
        cfn = ember.compile(fn)
        got = cfn(*args)
        got2 = cfn(*args)  # replay
    entry = next(iter(cfn._state.static.values()))[0]
    assert entry.kernels, f"nothing was fused:\n{entry.graph_text}"
    for e, g in zip(expected, got):
        assert e.dtype == g.dtype and e.shape == g.shape
        if e.dtype.is_floating_point:
            ember.testing.assert_close(g, e, equal_nan=True, **TOL[str(e.dtype)[6:]])
        else:
            assert ember.equal(g, e), (g, e)
    for a, b in zip(got, got2):
        assert ember.equal(a, b) or a.dtype.is_floating_point


def _unary_case(op, dtype, device="cpu"):
    rng = np.random.default_rng(0)
    f = getattr(ember, op.name)
    x = _input(rng, (5, 7), dtype, op.domain, device)
    y = _input(rng, (7, 5), dtype, op.domain, device).t()  # non-contiguous
    m = ember.tensor(rng.random((1, 7)) > 0.5).to(device)  # broadcast

    def fn(x, y, m):
        return (ember.where(m, f(x), f(y)),)
    return fn, (x, y, m)


def _binary_case(op, dtype, device="cpu"):
    rng = np.random.default_rng(1)
    f = getattr(ember, op.name)
    x = _input(rng, (5, 7), dtype, op.domain2, device)
    y = _input(rng, (7, 5), dtype, op.domain2, device).t()  # non-contiguous
    z = _input(rng, (7,), dtype, op.domain2, device)  # broadcast

    def fn(x, y, z):
        return f(f(x, y), z), f(y, x)
    return fn, (x, y, z)


def _mixed_case(dtype, device="cpu"):
    rng = np.random.default_rng(2)
    x = _input(rng, (4, 6), dtype, (-4, 4), device)
    m = ember.tensor(rng.random((4, 6)) > 0.3).to(device)

    def fn(x, m):
        y = x * 2 + 1
        z = ember.where(m, y, -y).float().clamp(min=-3.5, max=5)
        return z.to(x.dtype), (z > 0.5), z.double() / 3
    return fn, (x, m)


def _rows_case(device="cpu"):
    """Reductions over the last dimension with their producers and consumers."""
    rng = np.random.default_rng(3)
    x = _input(rng, (6, 37), "float32", (-3, 3), device)
    m = ember.tensor(rng.random((6, 37)) > 0.7).to(device)
    h = _input(rng, (6, 37), "float16", (-3, 3), device)

    def fn(x, m, h):
        a = (x * 0.125).masked_fill(m, float("-inf"))
        c = x - x.mean(-1, keepdim=True)
        return (ember.softmax(a, -1) * 2, ember.log_softmax(h, dim=-1).float() + 1,
                (c * c).sum(-1), ember.logsumexp(x * 3, dim=[1]) - 1, (x.exp() + 1).amax(-1))
    return fn, (x, m, h)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", unary_ops, ids=lambda o: o.name)
def test_unary(op, dtype, device):
    _check(*_unary_case(op, dtype, device), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", binary_ops, ids=lambda o: o.name)
def test_binary(op, dtype, device):
    _check(*_binary_case(op, dtype, device), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64"])
def test_scalars_casts_where_clamp(dtype, device):
    _check(*_mixed_case(dtype, device), dtype)


def test_row_groups(device):
    fn, args = _rows_case(device)
    _check(fn, args, "float32")


@pytest.mark.parametrize("case", ["elementwise", "rows"])
def test_fused_backward(case, device):
    """Gradients through fused groups (their generated backward kernels) equal eager's."""
    fused_backward(case, device)


def fused_backward(case, device, gradcheck=True):
    rng = np.random.default_rng(4)
    x = _input(rng, (6, 37), "float64", (-2, 2), device).requires_grad_()
    w = _input(rng, (37,), "float64", (-2, 2), device).requires_grad_()  # broadcast
    m = ember.tensor(rng.random((6, 37)) > 0.7).to(device)

    def elementwise(x, w, m):
        y = ember.where(m, (x * w).sin(), x.exp() - w) * 0.5
        return y.tanh() + y * y, (x / (w * w + 1)).sigmoid()

    def rows(x, w, m):
        a = (x * w).masked_fill(m, float("-inf"))
        c = x - x.mean(-1, keepdim=True)
        return (ember.softmax(a, -1) * w, ember.log_softmax(x.sin(), -1).exp(),
                (c * c * w).sum(-1), ember.logsumexp(x * w, dim=[1]) - 1)
    fn = elementwise if case == "elementwise" else rows
    ember._compile.config.fuse_reductions_with_grad = case == "rows"
    try:
        c = ember.compile(fn)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = c(x, w, m)
        entry = next(iter(c._state.static.values()))[0]
        assert entry.kernels
        assert case != "rows" or any(k.prog.red is not None for k in entry.kernels)
        seeds = [_input(rng, tuple(g.shape), "float64", (-1, 1), device) for g in got]
        gx, gw = ember.autograd.grad(sum((g * s).sum() for g, s in zip(got, seeds)), [x, w])
        expected = fn(x, w, m)
        ex, ew = ember.autograd.grad(sum((e * s).sum() for e, s in zip(expected, seeds)), [x, w])
        for g, e in zip(got, expected):
            ember.testing.assert_close(g, e)
        ember.testing.assert_close(gx, ex)
        ember.testing.assert_close(gw, ew)
        if gradcheck:
            with warnings.catch_warnings():  # gradcheck's no_grad perturbations recompile
                warnings.simplefilter("ignore")
                assert ember.autograd.gradcheck(lambda a, b: c(a, b, m), (x, w))
    finally:
        ember._compile.config.fuse_reductions_with_grad = False


def test_zero_dim_and_empty(device):
    def fn(x, y):
        return ((x + y) * y).exp()

    for shape in ([], [0], [3, 0]):
        x = ember.randn(shape, device=device)
        y = ember.randn(shape, device=device)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = ember.compile(fn)(x, y)
        ember.testing.assert_close(got, fn(x, y))


def _cuda_sources(fn, args):
    """The CUDA kernels (forward, and backward into every floating input) of fn's fusion
    groups, generated from a CPU trace: no GPU needed."""
    from ember._compile import _cuda, _runtime
    from ember.jit import _trace
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g, _, _ = _trace._run_traced(fn, tuple(args))
    ember._C._jit_pass_optimize(g)
    out = []
    for prog in _runtime.programs(g, [False] * len(args)):
        out.append(_cuda.forward_source(prog))
        need = tuple(k for k, (_, dt, _) in enumerate(prog.inputs)
                     if dt in ("float32", "float64", "float16", "bfloat16"))
        if prog.red is not None and prog.steps[prog.red][1]["name"] == "amax":
            continue  # fused only where no gradient flows (no backward rule)
        if need and any(prog.steps[s][0] in ("float32", "float64", "float16", "bfloat16")
                        for s in prog.outputs):
            out.append(_cuda.backward_source(prog, need))
    return out


def _one_program(sources):
    """The kernels of `sources` as one CUDA program (each renamed)."""
    from ember._compile import _cuda
    parts = []
    for i, src in enumerate(sources):
        assert src.startswith(_cuda.PRELUDE)
        parts.append(src[len(_cuda.PRELUDE):].replace("EmberArgs", f"EmberArgs{i}")
                     .replace("ember_kernel(", f"ember_kernel{i}("))
    return _cuda.PRELUDE + "".join(parts)


def test_every_cuda_kernel_compiles_with_nvrtc():
    """Every op x dtype case above, as CUDA (forward and backward): NVRTC's front end
    checks all of them in one program (every functor, backward rule and loop instantiated
    for every dtype), and the reductions' and the mixed cases' kernels are compiled to
    sm_90 machine code. A kernel NVRTC rejects fails here, on machines without a GPU."""
    from ember._compile import _cuda
    ok, why = _cuda.available()
    if not ok:
        pytest.skip(why)
    sources = []
    cases = [_unary_case(op, dt) for op in unary_ops for dt in DTYPES]
    cases += [_binary_case(op, dt) for op in binary_ops for dt in DTYPES]
    for fn, args in cases:
        try:
            fn(*args)
        except (RuntimeError, TypeError, NotImplementedError):
            continue  # eager refuses this dtype: nothing is compiled for it
        sources += _cuda_sources(fn, args)
    assert len(sources) > 500, len(sources)
    opts, _ = _cuda.options(90)
    front = ["--gpu-architecture=compute_90", "-fdevice-syntax-only"] + opts[1:]
    ember._C._nvrtc_compile(_one_program(sources), "all_ops.cu", front, _cuda._headers(), False)
    full = _cuda_sources(*_rows_case())
    assert sum("const int lane" in s for s in full) >= 4  # forward and backward row kernels
    for dt in ("float32", "float16", "int64"):
        full += _cuda_sources(*_mixed_case(dt))
    image, _ = ember._C._nvrtc_compile(_one_program(full), "rows.cu", opts, _cuda._headers(), True)
    assert image[:4] == b"\x7fELF"  # a CUBIN


def test_nvrtc_errors():
    """A source NVRTC rejects raises RuntimeError with its log; a missing library names what
    to install."""
    from ember._compile import _cuda
    ok, why = _cuda.available()
    if not ok:
        pytest.skip(why)
    with pytest.raises(RuntimeError, match=r"(?s)could not compile the fused kernel bad\.cu.*"
                       r"undefined_thing"):
        ember._C._nvrtc_compile("__global__ void k() { undefined_thing(); }", "bad.cu",
                                ["--gpu-architecture=sm_90"], [], True)
    with pytest.raises(RuntimeError, match="INVALID_OPTION"):
        ember._C._nvrtc_compile("__global__ void k() {}", "k.cu", ["--no-such-option"], [], True)
    assert 90 in ember._C._nvrtc_supported_archs()
    assert ember._C._nvrtc_version() >= (12, 0)
    # in a fresh process (a loaded NVRTC stays loaded): nothing loadable
    code = ("import ember\n"
            "try:\n"
            "    ember._C._nvrtc_load(['/nonexistent/libnvrtc.so.13'])\n"
            "except RuntimeError as e:\n"
            "    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "nvidia-cuda-nvrtc" in r.stdout and "/nonexistent/libnvrtc.so.13" in r.stdout, r


def test_cuda_launcher_matches_the_generated_kernels():
    """The launch (backends/cuda/fusion.h) and the generated sources (_cuda.py) agree on the
    block sizes (__launch_bounds__) and the parameter space; loading _C_cuda needs no GPU."""
    from ember._compile import _cuda
    try:
        from ember import _C_cuda
    except ImportError:
        pytest.skip("ember was built without its CUDA backend")
    assert _C_cuda._fusion_constants() == (_cuda.THREADS, _cuda.ROW_THREADS,
                                           _cuda.MAX_ARG_WORDS * 8)
    with pytest.raises(RuntimeError, match="exceeds the 4096-byte parameter limit"):
        _C_cuda._fusion_load(b"not an image", 600)
    with pytest.raises(RuntimeError, match="bad CUDA kernel handle"):
        _C_cuda._fusion_launch(10**6, [], [], [], 0)
