"""ember.backends.cuda.matmul, ember.backends.cudnn, set_float32_matmul_precision and
use_deterministic_algorithms: PyTorch's defaults, names and errors, and that the switches
reach the C++ flags the kernels read (core/flags.h)."""
import pytest

import ember
from ember import _C


@pytest.fixture(autouse=True)
def restore_flags():
    names = ["allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction",
             "cudnn_enabled", "cudnn_benchmark", "cudnn_deterministic", "cudnn_allow_tf32",
             "deterministic_algorithms", "deterministic_warn_only"]
    saved = {n: _C._get_backend_flag(n) for n in names}
    precision = ember.get_float32_matmul_precision()
    yield
    for n, v in saved.items():
        _C._set_backend_flag(n, v)
    ember.set_float32_matmul_precision(precision)


def test_defaults_are_pytorchs():
    m = ember.backends.cuda.matmul
    assert m.allow_tf32 is False
    assert m.allow_fp16_reduced_precision_reduction is True
    assert m.allow_bf16_reduced_precision_reduction is True
    assert ember.get_float32_matmul_precision() == "highest"
    c = ember.backends.cudnn
    assert (c.enabled, c.benchmark, c.deterministic, c.allow_tf32) == (True, False, False, True)
    assert ember.are_deterministic_algorithms_enabled() is False
    assert ember.is_deterministic_algorithms_warn_only_enabled() is False


def test_tf32_and_matmul_precision_are_one_switch():
    m = ember.backends.cuda.matmul
    ember.set_float32_matmul_precision("high")
    assert m.allow_tf32 is True
    ember.set_float32_matmul_precision("medium")
    assert m.allow_tf32 is True and ember.get_float32_matmul_precision() == "medium"
    m.allow_tf32 = False
    assert ember.get_float32_matmul_precision() == "highest"
    m.allow_tf32 = True
    assert ember.get_float32_matmul_precision() == "high"
    assert _C._get_float32_matmul_precision() == 1


def test_reduced_precision_flags_reach_cpp():
    m = ember.backends.cuda.matmul
    m.allow_fp16_reduced_precision_reduction = False
    assert _C._get_backend_flag("allow_fp16_reduced_precision_reduction") is False
    m.allow_bf16_reduced_precision_reduction = False
    assert _C._get_backend_flag("allow_bf16_reduced_precision_reduction") is False
    assert "allow_tf32=False" in repr(m)


def test_cudnn_flags_assign_through_the_module():
    import ember.backends.cudnn as cudnn
    cudnn.benchmark = True
    assert _C._get_backend_flag("cudnn_benchmark") is True
    assert ember.backends.cudnn.benchmark is True
    ember.backends.cudnn.deterministic = True
    assert _C._get_backend_flag("cudnn_deterministic") is True
    ember.backends.cudnn.enabled = False
    assert _C._get_backend_flag("cudnn_enabled") is False


def test_cudnn_flags_context_restores():
    c = ember.backends.cudnn
    c.benchmark = True
    with c.flags(enabled=True, benchmark=False, deterministic=True, allow_tf32=False):
        assert (c.enabled, c.benchmark, c.deterministic, c.allow_tf32) == (True, False, True, False)
    assert (c.benchmark, c.deterministic, c.allow_tf32) == (True, False, True)


def test_cudnn_queries():
    """Without a GPU: no cuDNN. With one: version() is the loaded library's (an int like
    91900) or None when libcudnn could not be loaded, and is_available() says which."""
    v = ember.backends.cudnn.version()
    if not ember.cuda.is_available():
        assert v is None
    else:
        assert v is None or (isinstance(v, int) and v >= 8000)
    assert ember.backends.cudnn.is_available() is (v is not None)


def test_is_built_matches_the_build():
    assert ember.backends.cuda.is_built() == bool(_C._cuda_version)


def test_deterministic_algorithms():
    ember.use_deterministic_algorithms(True, warn_only=True)
    assert ember.are_deterministic_algorithms_enabled() is True
    assert ember.is_deterministic_algorithms_warn_only_enabled() is True
    ember.use_deterministic_algorithms(False)
    assert ember.are_deterministic_algorithms_enabled() is False
    assert ember.is_deterministic_algorithms_warn_only_enabled() is False


def test_errors():
    with pytest.raises(RuntimeError, match="invalid precision 'low'"):
        ember.set_float32_matmul_precision("low")
    with pytest.raises(TypeError, match="allow_tf32 expects a bool"):
        ember.backends.cuda.matmul.allow_tf32 = 1
    with pytest.raises(TypeError, match="benchmark expects a bool"):
        ember.backends.cudnn.benchmark = "yes"
    with pytest.raises(AttributeError, match="no setting 'allow_tf33'"):
        ember.backends.cuda.matmul.allow_tf33 = True
    with pytest.raises(TypeError):
        ember.use_deterministic_algorithms(1)
    with pytest.raises(ValueError, match="unknown backend flag"):
        _C._get_backend_flag("nope")


def test_cpu_matmul_ignores_tf32():
    a = ember.randn(64, 64)
    b = ember.randn(64, 64)
    ref = (a @ b).numpy()
    ember.set_float32_matmul_precision("high")
    assert ((a @ b).numpy() == ref).all()


def test_default_device():
    assert ember.get_default_device() == ember.device("cpu")
    ember.set_default_device("cpu")
    try:
        assert ember.zeros(2).device.type == "cpu"
    finally:
        ember.set_default_device(None)
    assert ember.get_default_device() == ember.device("cpu")
    with ember.device("cpu") as d:
        assert d == ember.device("cpu") and ember.get_default_device() == d
    with pytest.raises(RuntimeError):
        ember.set_default_device("tpu")


@pytest.mark.skipif(ember.cuda.is_available(), reason="without a GPU only")
def test_default_device_cuda_without_a_gpu_raises_at_the_factory():
    ember.set_default_device("cuda")
    try:
        assert ember.get_default_device() == ember.device("cuda")
        with pytest.raises(RuntimeError, match="CUDA|cuda"):
            ember.zeros(2)
        # tensors keep their device; from_numpy is never redirected
        x = ember.ones(1, device="cpu")
        assert ember.as_tensor(x).device.type == "cpu"
        assert ember.from_numpy(x.numpy()).device.type == "cpu"
    finally:
        ember.set_default_device(None)
    with pytest.raises(RuntimeError):
        with ember.device("cuda"):
            ember.randn(3)
    assert ember.get_default_device() == ember.device("cpu")
