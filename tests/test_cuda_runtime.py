"""The CUDA runtime API (ember.cuda streams, events, memory statistics, pinned
memory, __cuda_array_interface__). Without a GPU every entry point must answer
sanely or raise a clear RuntimeError; with one, the same tests exercise the
device (they take the `device` fixture or skip on is_available())."""
import pickle

import numpy as np
import pytest

import ember

HAS_CUDA = ember.cuda.is_available()
no_gpu = pytest.mark.skipif(HAS_CUDA, reason="checks the no-GPU behaviour")
needs_gpu = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
NO_CUDA = "built without CUDA|no NVIDIA driver|Found no NVIDIA driver"


def test_is_pinned_false_on_ordinary_cpu_tensors(device):
    t = ember.randn(16, 16, device=device)
    assert t.is_pinned() is False
    assert ember.ones(3).is_pinned() is False


@no_gpu
def test_pin_memory_without_cuda_raises():
    t = ember.randn(4, 4)
    with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
        t.pin_memory()
    for make in (lambda: ember.empty(3, pin_memory=True), lambda: ember.zeros(2, 2, pin_memory=True),
                 lambda: ember.ones(2, pin_memory=True), lambda: ember.full((2,), 1.0, pin_memory=True),
                 lambda: ember.arange(3, pin_memory=True), lambda: ember.tensor([1.0], pin_memory=True)):
        with pytest.raises(RuntimeError, match="none is available"):
            make()
    # pin_memory=False is the ordinary path.
    np.testing.assert_array_equal(ember.zeros(2, pin_memory=False).numpy(), [0, 0])


@needs_gpu
def test_pin_memory_on_gpu():
    t = ember.randn(64, 64)
    p = t.pin_memory()
    assert p.is_pinned() and not t.is_pinned()
    np.testing.assert_array_equal(p.numpy(), t.numpy())
    assert p.pin_memory() is p
    z = ember.zeros(8, pin_memory=True)
    assert z.is_pinned()
    g = p.to("cuda", non_blocking=True)
    ember.cuda.synchronize()
    np.testing.assert_array_equal(g.cpu().numpy(), t.numpy())
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        g.pin_memory()


def test_cuda_array_interface_only_on_cuda(device):
    t = ember.ones(3, 4, device=device)
    if device == "cpu":
        assert not hasattr(t, "__cuda_array_interface__")
        with pytest.raises(AttributeError, match="non-CUDA tensor"):
            _ = t.__cuda_array_interface__
    else:
        cai = t.__cuda_array_interface__
        assert cai["version"] == 3 and cai["shape"] == (3, 4) and cai["typestr"] == "<f4"
        assert cai["strides"] is None and cai["data"][0] == t.data_ptr()
        assert t.t().__cuda_array_interface__["strides"] == (4, 16)


@no_gpu
def test_queries_without_gpu():
    assert ember.cuda.is_available() is False
    assert ember.cuda.device_count() == 0
    assert ember.cuda.is_initialized() is False
    for fn in (ember.cuda.current_device, ember.cuda.synchronize, ember.cuda.get_device_name,
               ember.cuda.get_device_properties, ember.cuda.get_device_capability,
               ember.cuda.init, lambda: ember.cuda.set_device(0), ember.cuda.mem_get_info,
               lambda: ember.cuda.set_per_process_memory_fraction(0.5)):
        with pytest.raises(RuntimeError, match=NO_CUDA):
            fn()


@no_gpu
def test_streams_and_events_without_gpu():
    for make in (ember.cuda.Stream, ember.cuda.Event, ember.cuda.current_stream,
                 ember.cuda.default_stream, lambda: ember.cuda.Event(enable_timing=True)):
        with pytest.raises(RuntimeError, match=NO_CUDA):
            make()
    # The no-op forms PyTorch allows without a device.
    with ember.cuda.stream(None):
        pass
    with ember.cuda.device(None):
        pass
    with ember.cuda.device(-1):
        pass
    with pytest.raises(RuntimeError, match=NO_CUDA):
        with ember.cuda.device(0):
            pass
    with ember.cuda.device_of(ember.ones(1)):
        pass


@no_gpu
def test_memory_stats_without_gpu(tmp_path):
    c = ember.cuda
    assert c.memory_allocated() == 0 and c.max_memory_allocated() == 0
    assert c.memory_reserved() == 0 and c.max_memory_reserved() == 0
    assert c.memory_stats() == {}
    assert c.memory_stats_as_nested_dict() == {}
    c.reset_peak_memory_stats()
    c.reset_accumulated_memory_stats()
    c.empty_cache()
    summary = c.memory_summary()
    assert "Allocated memory" in summary and "CUDA OOMs: 0" in summary
    c._record_memory_history()
    c._record_memory_history(enabled=None)
    path = tmp_path / "snap.pickle"
    c._dump_snapshot(str(path))
    snap = pickle.load(open(path, "rb"))
    assert snap["segments"] == [] and snap["device_traces"] == []
    with pytest.raises(ValueError, match="enabled must be"):
        c._record_memory_history(enabled="bogus")


def test_argument_errors_precede_device_checks():
    with pytest.raises(TypeError, match="must be `float`"):
        ember.cuda.set_per_process_memory_fraction(1)
    with pytest.raises(ValueError, match="Allowed range"):
        ember.cuda.set_per_process_memory_fraction(1.5)


def test_out_of_memory_error_type():
    assert issubclass(ember.cuda.OutOfMemoryError, RuntimeError)


@needs_gpu
def test_streams_events_on_gpu():
    s = ember.cuda.Stream()
    assert s != ember.cuda.default_stream()
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    with ember.cuda.stream(s):
        assert ember.cuda.current_stream() == s
        start.record()
        x = ember.ones(1024, 1024, device="cuda")
        y = x + x
        end.record()
    assert ember.cuda.current_stream() == ember.cuda.default_stream()
    end.synchronize()
    assert end.query() and s.query()
    assert start.elapsed_time(end) >= 0
    ember.cuda.current_stream().wait_stream(s)
    y.record_stream(ember.cuda.current_stream())
    np.testing.assert_array_equal(y.cpu().numpy()[:2, :2], 2)
    e = s.record_event()
    e.wait()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        ember.cuda.Event().elapsed_time(end)


@needs_gpu
def test_memory_stats_on_gpu():
    c = ember.cuda
    c.empty_cache()
    c.reset_peak_memory_stats()
    base = c.memory_allocated()
    x = ember.empty(1 << 20, device="cuda")
    assert c.memory_allocated() >= base + (4 << 20)
    assert c.max_memory_allocated() >= c.memory_allocated()
    assert c.memory_reserved() >= c.memory_allocated()
    free, total = c.mem_get_info()
    assert 0 < free <= total
    del x
    assert c.memory_allocated() == base
    props = c.get_device_properties(0)
    assert props.total_memory == total and c.get_device_capability() == (props.major, props.minor)
