"""Small queries and *_as forms that the op registry does not cover (see registry/_exempt.py)."""
import pytest

import ember


def test_dtype_queries(device):
    f, i, u, b = (ember.zeros(2, dtype=d, device=device)
                  for d in (ember.float32, ember.int64, ember.uint8, ember.bool))
    assert f.is_floating_point() and not i.is_floating_point()
    assert not f.is_complex() and not i.is_complex()
    assert f.is_signed() and i.is_signed() and not u.is_signed() and not b.is_signed()


def test_shape_queries_and_as_forms(device):
    x = ember.arange(6.0, device=device)
    other = ember.zeros(2, 3, device=device)
    assert x.ndimension() == 1 and other.ndimension() == 2 and x.nelement() == 6
    v = x.view_as(other)
    assert v.shape == (2, 3) and v._base is x
    assert x.reshape_as(other).tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    e = ember.ones(3, 1, device=device).expand_as(other.t())
    assert e.shape == (3, 2) and e.stride() == (1, 0)
    with pytest.raises(RuntimeError):
        x.view_as(ember.zeros(4, device=device))


def test_promotion_queries():
    assert ember.promote_types(ember.int32, ember.float16) == ember.float16
    assert ember.promote_types(ember.uint8, ember.int8) == ember.int16
    assert ember.result_type(ember.tensor([1, 2]), 1.5) == ember.get_default_dtype()
    assert ember.result_type(ember.tensor([1], dtype=ember.int8), ember.tensor(5)) == ember.int8
    assert ember.can_cast(ember.int32, ember.float32) and not ember.can_cast(ember.float32, ember.int32)
    assert not ember.can_cast(ember.int64, ember.bool)


def test_mode_queries():
    assert not ember.is_inference_mode_enabled()
    with ember.inference_mode():
        assert ember.is_inference_mode_enabled()
    assert ember.is_anomaly_check_nan_enabled()  # PyTorch's default
    with ember.autograd.detect_anomaly(check_nan=False):
        assert not ember.is_anomaly_check_nan_enabled()
    assert ember.is_anomaly_check_nan_enabled()


def test_autocast_state_functions():
    assert ember.is_autocast_available("cpu")
    assert ember.get_autocast_cpu_dtype() == ember.bfloat16
    assert ember.get_autocast_gpu_dtype() == ember.float16
    assert ember.is_autocast_cache_enabled()
    ember.set_autocast_cache_enabled(False)
    try:
        assert not ember.is_autocast_cache_enabled()
    finally:
        ember.set_autocast_cache_enabled(True)
    ember.set_autocast_dtype("cpu", ember.float16)
    try:
        assert ember.get_autocast_dtype("cpu") == ember.float16
    finally:
        ember.set_autocast_dtype("cpu", ember.bfloat16)
    ember.set_autocast_enabled("cpu", True)
    try:
        assert ember.is_autocast_enabled("cpu")
    finally:
        ember.set_autocast_enabled("cpu", False)
    ember.clear_autocast_cache()


def test_eigvals_says_complex_is_missing():
    with pytest.raises(NotImplementedError):
        ember.linalg.eigvals(ember.eye(2))


def test_broadcast_shapes():
    assert ember.broadcast_shapes((5, 1, 4), (3, 1)) == (5, 3, 4)
    assert ember.broadcast_shapes(2, (3, 1)) == (3, 2)
    assert ember.broadcast_shapes() == ()
    assert ember.broadcast_shapes((0, 1), (1, 7)) == (0, 7)
    assert isinstance(ember.broadcast_shapes((1,)), ember.Size)
    with pytest.raises(RuntimeError, match="between arg 0 and arg 1"):
        ember.broadcast_shapes((2, 3), (4,))
    with pytest.raises(TypeError, match="argument 1"):
        ember.broadcast_shapes((2,), "x")
