"""Every kernel file registers itself (Note [Kernel registration], kernels/registration.h).

The families each backend's sources declare with EMBER_REGISTER_CPU_KERNELS /
EMBER_REGISTER_KERNELS(CUDA, ...) must each have registered exactly once: a registration that
stops running (dropped from the build, a wrong capability condition, a lost object file) fails
here instead of raising "not implemented for 'CUDA'" at a user. The CUDA half runs wherever
ember was built with CUDA, GPU or not: loading ember._C_cuda needs no device.
"""
import pathlib
import re

import pytest

import ember
from ember import _C

SRC = pathlib.Path(__file__).resolve().parent.parent / "csrc" / "ember" / "backends"


def declared(device):
    if device == "cpu":
        pattern, files = r"^EMBER_REGISTER_CPU_KERNELS\((\w+)\)", (SRC / "cpu").glob("*.cpp")
    else:
        pattern, files = r"^EMBER_REGISTER_KERNELS\(CUDA, (\w+)\)", (SRC / "cuda").glob("*.cu")
    names = []
    for f in sorted(files):
        names += re.findall(pattern, f.read_text(), re.M)
    return names


def test_sources_declare_the_families():
    cpu, cuda = declared("cpu"), declared("cuda")
    # one registration per kernel file at least; the names are unique per device
    assert len(cpu) >= len(list((SRC / "cpu").glob("*_kernels.cpp")))
    assert len(cuda) == len(list((SRC / "cuda").glob("*.cu")))
    assert len(set(cpu)) == len(cpu) and len(set(cuda)) == len(cuda)
    # no central registration list is left for a new file to edit
    for f in (SRC / "cuda").glob("*"):
        assert not re.search(r"\bregister_\w*kernels\s*\(", f.read_text()), f.name


def test_every_cpu_family_registered_once():
    got = _C._kernel_families("cpu")
    want = declared("cpu")
    if not _C._has_mkldnn():  # conv_onednn.cpp is built only where oneDNN is found
        want.remove("conv_onednn")
    assert sorted(got) == sorted(want)  # exactly once each: one capability copy


def test_every_cuda_family_registered_once():
    if ember.cuda._lazy() is None:
        pytest.skip("ember was built without the CUDA backend")
    got = _C._kernel_families("cuda")
    assert sorted(got) == sorted(declared("cuda"))


def test_registered_kernels_run():
    # the registry is what the ops use: a CPU op of each of a few families works
    x = ember.arange(6.0).reshape(2, 3)
    assert x.sum().item() == 15.0  # reduce
    assert ember.sort(-x, dim=1).values[0, 0].item() == -2.0  # sort
    assert ember.nn.functional.max_pool2d(x.reshape(1, 1, 2, 3), 2).item() == 4.0  # nn_pool


def test_bad_device_is_a_value_error():
    with pytest.raises(ValueError, match="_kernel_families: device must be 'cpu' or 'cuda'"):
        _C._kernel_families("tpu")
