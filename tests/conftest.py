import os

# Under pytest -n N each worker process gets its share of the cores (unless the caller
# chose), so N processes x all-cores thread pools do not oversubscribe the machine;
# notebook kernels started by the tests inherit the setting.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _share = max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))
    os.environ.setdefault("EMBER_NUM_THREADS", str(_share))

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import ember  # noqa: E402


def _devices():
    devs = ["cpu"]
    if ember.cuda.is_available():
        devs.append("cuda")
    return devs


@pytest.fixture(params=_devices())
def device(request):
    """Every op test runs on the CPU and, where a GPU is present, on CUDA."""
    return request.param


@pytest.fixture
def compare_device(device):
    """The device-comparison tests (test_kernels_*.py, device_compare.py) run their comparison
    against the CPU on `device`: CUDA's kernels against the CPU's, or on "cpu" CPU against CPU,
    which checks the tests themselves."""
    import device_compare

    device_compare._DEV = device
    yield device
    device_compare._DEV = None


@pytest.fixture
def rng():
    return np.random.default_rng(0)


# Note [Sticky CUDA errors in the suite]
# An illegal address (or any fault inside a kernel) leaves the process's CUDA context broken:
# every later CUDA call in it fails, so one bad kernel used to fail thousands of later tests in
# the same xdist worker, and the test that caused it could not be told from its victims. After
# each test that used CUDA, the worker synchronizes; a kernel fault then fails *that* test,
# is written to $EMBER_CUDA_FAULT_LOG (tools/gpu_check.sh collects it) and ends the worker, which
# xdist replaces by a fresh one (it reports the next test of the old worker as crashed).
_CUDA_FAULTS = ("illegal memory access", "unspecified launch failure", "misaligned address",
                "illegal instruction", "device-side assert", "an illegal", "launch timed out",
                "uncorrectable ECC", "operation not permitted when stream is capturing")
_cuda_broken = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    global _cuda_broken
    if call.when != "teardown" or _cuda_broken is not None or not ember.cuda.is_initialized():
        return
    try:
        ember.cuda.synchronize()
        return
    except RuntimeError as exc:
        if not any(s in str(exc) for s in _CUDA_FAULTS):
            return
        msg = str(exc)
        _cuda_broken = f"{item.nodeid}\t{msg}"
    rep = outcome.get_result()
    rep.outcome = "failed"
    rep.longrepr = f"this test left the CUDA context broken (a kernel faulted): {msg}"
    path = os.environ.get("EMBER_CUDA_FAULT_LOG")
    if path:
        with open(path, "a") as f:
            f.write(_cuda_broken.replace("\n", " ") + "\n")  # node id, tab, the error


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    yield
    if _cuda_broken is not None and os.environ.get("PYTEST_XDIST_WORKER"):
        os._exit(3)  # a fresh worker replaces this one; its CUDA context cannot recover
