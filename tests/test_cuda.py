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


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_cuda_tensor_names_its_device_index():
    # PyTorch's tensors made with device="cuda" report cuda:<current>; ember's reported "cuda",
    # and every same-device check between them and cuda:0 tensors failed (the first GPU run:
    # Module.to("cuda") with a cuda:0 input, SGD, NCCL's all_gather)
    for t in (ember.zeros(2, device="cuda"), ember.ones(2).to("cuda"), ember.ones(2).cuda(),
              ember.tensor([1.0], device="cuda"), ember.empty(0, device="cuda")):
        assert t.device == ember.device("cuda", 0), t.device
        assert str(t.device) == "cuda:0"
    lin = ember.nn.Linear(3, 2).to("cuda")
    x = ember.randn(4, 3, device="cuda:0")
    lin(x).sum().backward()
    opt = ember.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)
    opt.step()
    assert lin.weight.device == x.device


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")
def test_cpu_scalars_go_to_their_partners_device():
    # A Python number or a 0-d CPU tensor beside a CUDA tensor runs on CUDA (PyTorch's rule),
    # in either position; ember once ran `cpu_0d + cuda` on the CPU and passed a 0-d CPU
    # condition to the CUDA where kernel (lerp with a number weight).
    x = ember.arange(6.0, device="cuda")
    s = ember.tensor(2.0)
    for r in (x * 2, 2 * x, x * s, s * x, s + x, ember.where(x > 2, s, x), ember.where(s > 1, x, s),
              ember.lerp(x, x * 2, 0.25), ember.lerp(x, x * 2, 0.75),
              ember.clamp(x, min=s), ember.normal(s, x + 1)):
        assert r.device == x.device, r
    np.testing.assert_allclose(ember.lerp(x, x * 2, 0.25).cpu().numpy(), np.arange(6.0) * 1.25)
    np.testing.assert_array_equal(ember.where(x > 2, s, x).cpu().numpy(), [0, 1, 2, 2, 2, 2])
    y = ember.zeros(3, device="cuda")
    y[ember.tensor(1)] = ember.tensor(5.0)  # CPU index and CPU 0-d value
    y.index_fill_(0, ember.tensor([2]), ember.tensor(7.0))
    np.testing.assert_array_equal(y.cpu().numpy(), [0, 5, 7])
    np.testing.assert_array_equal(ember.index_select(x, 0, ember.tensor(3)).cpu().numpy(), [3])
    # operands that a kernel reads on the device are refused from another device, as in PyTorch
    with pytest.raises(RuntimeError, match="same device"):
        ember.nn.functional.cross_entropy(ember.randn(2, 3, device="cuda"), ember.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="same device"):
        x.clone().index_add_(0, ember.tensor([0]), ember.ones(1, device="cuda"))


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")
def test_host_values_copied_to_the_gpu_do_not_synchronize():
    # a single host value copied to the device is a fill kernel, with no transfer: `x * 2`
    # must not wait for the kernels already queued
    x = ember.randn(4096, 4096, device="cuda")
    ember.cuda.synchronize()
    for _ in range(20):
        x = (x @ x) * (1 / 64)  # about 50 ms of queued work on an H100; entries stay ~N(0, 1)
    y = x * 2.0
    end = ember.cuda.Event()
    end.record()
    still_running = not end.query()  # x * 2.0 returned before the products finished
    ember.cuda.synchronize()
    assert still_running
    np.testing.assert_allclose(y.cpu().numpy(), x.cpu().numpy() * 2, rtol=1e-6)
