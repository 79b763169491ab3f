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
