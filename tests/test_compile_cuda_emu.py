"""ember.compile's CUDA fusion kernels executed without a GPU: the generated CUDA source
(Note [CUDA fusion kernels]) is compiled as C++ against a host emulation of the CUDA it uses
(tests/cuda_emu/cuda_emu.h: a std::thread per CUDA thread, warp shuffles through a barrier)
and run through the real runtime (FusedKernel's CUDA branches, the argument block of
kernels/fusion_args.h) on CPU tensors, two blocks of two warps so every grid-stride loop turns.
The results are checked against eager as test_compile_ops.py checks the CPU kernels. What
this cannot check is the GPU itself (NVRTC's machine code, the launch, streams): the GPU
run of test_compile_ops.py does."""
import ctypes
import hashlib
import os
import subprocess

import pytest
import test_compile_ops as ops
from test_compile import _entries

import ember
from ember._compile import _runtime, _toolchain
from ember.testing.opinfo import binary_ops, unary_ops

pytestmark = pytest.mark.skipif(_toolchain.compiler() is None, reason="no C++ compiler")

EMU = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda_emu", "cuda_emu.h")


class _Emulated:
    """A generated CUDA kernel built for the host emulation; called like the launcher."""

    def __init__(self, source, tmp):
        key = hashlib.sha256(source.encode()).hexdigest()[:20]
        so = os.path.join(tmp, f"emu_{key}.so")
        if not os.path.exists(so):
            src = so[:-3] + ".cpp"
            with open(src, "w") as f:
                f.write(source + "\nEMBER_EMU_ENTRY\n")
            cmd = [_toolchain.compiler(), "-std=c++17", "-O1", "-shared", "-fPIC", "-pthread",
                   "-w", "-include", EMU, "-I", _toolchain.include_dir(), src, "-o", so + ".tmp"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            assert r.returncode == 0, r.stderr[-4000:]
            os.replace(so + ".tmp", so)
        self.lib = ctypes.CDLL(so)
        self.lib.ember_emulate.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.c_int64,
                                           ctypes.c_uint, ctypes.c_uint, ctypes.c_int]
        self.rows = "const int lane" in source  # a warp per row: its lanes shuffle

    def __call__(self, operands, shape, scalar, rows):
        ptrs, meta, work = ember._C._fusion_args(operands, shape, scalar, rows)
        if work == 0:
            return
        words = list(ptrs) + list(meta) + [work]
        arr = (ctypes.c_int64 * len(words))(*words)
        # nonzero: the block has another size than the kernel's EmberArgs (_cuda.nargs)
        assert self.lib.ember_emulate(arr, len(words), 2, 64, int(self.rows)) == 0


class _EmulatedKernel(_runtime.FusedKernel):
    """A fusion group generated for CUDA, run by the emulation on CPU tensors."""

    tmp = None

    def __init__(self, prog, name, device="cpu", target=None):
        super().__init__(prog, name, device, target="cuda")

    def _load_cuda(self, source, nops):
        return _Emulated(source, self.tmp), None, False

    def run(self, handle, operands, shape, scalar, rows, grain, chunk=0):
        handle(operands, shape, scalar, rows)


@pytest.fixture(autouse=True)
def emulated(monkeypatch, tmp_path_factory):
    _EmulatedKernel.tmp = str(tmp_path_factory.mktemp("cuda_emu"))
    monkeypatch.setattr(_runtime, "FusedKernel", _EmulatedKernel)
    yield


def _op(ops_list, name):
    return next(o for o in ops_list if o.name == name)


@pytest.mark.parametrize("name,dtype", [("exp", "float32"), ("sigmoid", "float16"),
                                        ("erfinv", "float64"), ("round", "bfloat16"),
                                        ("abs", "int64"), ("logical_not", "bool")])
def test_unary(name, dtype):
    ops._check(*ops._unary_case(_op(unary_ops, name), dtype), dtype)


@pytest.mark.parametrize("name,dtype", [("div", "float32"), ("pow", "float16"),
                                        ("remainder", "int32"), ("atan2", "float64"),
                                        ("bitwise_xor", "uint8"), ("maximum", "bfloat16")])
def test_binary(name, dtype):
    ops._check(*ops._binary_case(_op(binary_ops, name), dtype), dtype)


def test_scalars_casts_where_clamp():
    ops._check(*ops._mixed_case("float16"), "float16")


def test_row_groups():
    """softmax, log_softmax (float16), mean, sum, logsumexp and amax over rows: a warp per
    row, with the lanes' partial results combined by shuffles."""
    fn, args = ops._rows_case()
    ops._check(fn, args, "float32")


@pytest.mark.parametrize("case", ["elementwise", "rows"])
def test_fused_backward(case):
    ops.fused_backward(case, "cpu", gradcheck=False)  # analytic gradients against eager


def test_zero_dim_and_empty():
    ops.test_zero_dim_and_empty("cpu")


def test_kernels_were_emulated():
    """The fixture's kernels are the CUDA ones: a compiled function's groups hold CUDA source."""
    c = ember.compile(lambda x, y: (x * y).exp() + 1)
    c(ember.randn(4, 5), ember.randn(5))
    entry = next(iter(c._state.static.values()))[0]
    (k,) = entry.kernels
    assert isinstance(k, _EmulatedKernel) and k.cuda
    assert "__global__" in k.source and "ember_kernel(const EmberArgs a)" in k.source


def test_dropout():
    """Fused dropout's CUDA form (each thread draws its element with philox::bernoulli53) in
    a flat kernel with its backward, a strided one and a row kernel: eager's masks."""
    F = ember.nn.functional

    def chain(x):
        return F.dropout(x * 2, 0.3) + 1

    def rows(x):
        return F.dropout(F.softmax(x, -1), 0.2)
    for fn, x, grad in ((chain, ember.randn(9, 70, dtype=ember.float64), True),
                        (chain, ember.randn(70, 9).t(), False),
                        (rows, ember.randn(5, 3, 40), False)):
        cf = ember.compile(fn)
        x.requires_grad_(grad)
        out = []
        for f in (fn, cf):
            ember.manual_seed(4)
            with ember.set_grad_enabled(grad):
                y = f(x)
            if grad:
                y.backward(ember.ones_like(y))
                out.append((y.detach(), x.grad))
                x.grad = None
            else:
                out.append((y,))
        for e, c in zip(*out):
            assert ember.equal(e == 1, c == 1) and ember.equal(e == 0, c == 0)
            assert ember.allclose(e, c, rtol=1e-6, atol=1e-7)
        kernels = [k for en in _entries(cf) for k in getattr(en, "kernels", [])]
        assert kernels and all(k.cuda and k.prog.dropouts for k in kernels)


def test_layer_norm(monkeypatch):
    """Fused layer_norm's CUDA form (a warp per row, its two statistics and the backward's two
    sums combined by shuffles; the weight's and bias's gradients summed over the rows after):
    eager's values and gradients."""
    from ember._compile import config
    monkeypatch.setattr(config, "fuse_reductions_with_grad", True)
    F = ember.nn.functional
    w = ember.randn(40, dtype=ember.float64, requires_grad=True)
    b = ember.randn(40, dtype=ember.float64, requires_grad=True)

    def f(x, r):
        return F.dropout(F.layer_norm(x + r, (40,), w, b), 0.2) * 3
    cf = ember.compile(f)
    x = ember.randn(6, 40, dtype=ember.float64, requires_grad=True)
    r = ember.randn(6, 40, dtype=ember.float64, requires_grad=True)
    outs = []
    for fn in (f, cf):
        ember.manual_seed(8)
        y = fn(x, r)
        y.backward(ember.ones_like(y))
        outs.append([y.detach()] + [t.grad.clone() for t in (x, r, w, b)])
        for t in (x, r, w, b):
            t.grad = None
    for e, c in zip(*outs):
        assert ember.allclose(e, c, rtol=1e-10, atol=1e-12)
    kernels = [k for en in _entries(cf) for k in getattr(en, "kernels", [])]
    assert any(k.cuda and k.prog.red is not None for k in kernels)
