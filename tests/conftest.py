import numpy as np
import pytest

import ember


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
def rng():
    return np.random.default_rng(0)
