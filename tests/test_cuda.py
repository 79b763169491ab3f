"""The CUDA device path. Without a GPU (CI, developer machines) this checks that
importing and querying never needs one and that using one fails with a clear
RuntimeError; on a GPU machine it runs the device copies and fills."""
import numpy as np
import pytest

import ember


def test_import_and_queries_never_need_a_gpu():
    assert isinstance(ember.cuda.is_available(), bool)
    assert ember.cuda.device_count() >= 0
    built_with_cuda = ember.cuda._lazy() is not None
    assert (ember.version.cuda is not None) == built_with_cuda
    if built_with_cuda:
        major, minor = ember.version.cuda.split(".")
        assert major.isdigit() and minor.isdigit()


@pytest.mark.skipif(ember.cuda.is_available(), reason="checks the no-GPU error path")
def test_using_cuda_without_a_gpu_raises_clearly():
    x = ember.ones(2)
    expected = "built without CUDA" if ember.version.cuda is None else "Found no NVIDIA driver"
    for make in (lambda: x.cuda(), lambda: x.to("cuda"), lambda: ember.zeros(2, device="cuda")):
        with pytest.raises(RuntimeError, match=expected):
            make()
    assert not ember.cuda.is_available()
    assert ember.cuda.memory_allocated() == 0


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")
def test_device_round_trips_and_fills():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = ember.from_numpy(a)
    g = t.cuda()
    assert g.is_cuda and g.device == ember.device("cuda", 0)
    np.testing.assert_array_equal(g.cpu().numpy(), a)
    np.testing.assert_array_equal(t.t().cuda().cpu().numpy(), a.T)  # strided host -> device
    np.testing.assert_array_equal(g.t().contiguous().cpu().numpy(), a.T)  # strided on device
    np.testing.assert_array_equal(g.to(ember.float64).cpu().numpy(), a.astype(np.float64))
    z = ember.zeros(3, 5, device="cuda")
    np.testing.assert_array_equal(z.cpu().numpy(), np.zeros((3, 5), np.float32))
    z.fill_(2.5)
    np.testing.assert_array_equal(z.cpu().numpy(), np.full((3, 5), 2.5, np.float32))
    with pytest.raises(TypeError, match="can't convert cuda"):
        g.numpy()
