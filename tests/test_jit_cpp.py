"""ember.jit's C++ runtime with no Python in the process: the seed's example app
(examples/cpp) built with CMake's find_package(Ember) against this ember package, run on a
resnet18 that Python traced; and the GoogleTest that loads an archive written here
(tests/cpp/test_jit.cpp, Jit.ArchiveFromPython)."""
import os
import re
import shutil
import subprocess

import pytest
from test_cpp import ROOT, _build, _build_lock, _fresh_prebuilt, _run

import ember
import ember.utils
import ember.vision.models

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")


def _numbers(text):
    return [float(x) for x in re.findall(r"-?\d+\.\d+(?:e[-+]?\d+)?", text)]


@pytest.fixture(scope="module")
def example_app(tmp_path_factory):
    """examples/cpp configured and built exactly as its README says."""
    build = tmp_path_factory.mktemp("example-app")
    cmd = ["cmake", "-S", str(ROOT / "examples" / "cpp"), "-B", str(build),
           f"-DCMAKE_PREFIX_PATH={ember.utils.cmake_prefix_path}", "-DCMAKE_BUILD_TYPE=Release"]
    if shutil.which("ninja"):
        cmd += ["-G", "Ninja"]
    if shutil.which("ccache"):
        cmd += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
    with _build_lock():
        rc, out = _run(cmd, 300, "configuring examples/cpp")
        assert rc == 0, out[-6000:]
        rc, out = _run(["cmake", "--build", str(build)], 600, "building examples/cpp")
        assert rc == 0, out[-6000:]
    return build / "example-app"


def test_cmake_prefix_path_has_the_config():
    p = os.path.join(ember.utils.cmake_prefix_path, "Ember", "EmberConfig.cmake")
    assert os.path.isfile(p)


def test_example_app_runs_traced_resnet18(example_app, tmp_path):
    ember.manual_seed(0)
    model = ember.vision.models.resnet18()
    model.eval()
    traced = ember.jit.trace(model, ember.rand(1, 3, 224, 224))
    path = tmp_path / "traced_resnet_model.pt"
    traced.save(str(path))
    p = subprocess.run([str(example_app), str(path)], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert p.returncode == 0, p.stdout
    assert p.stdout.startswith("ok\n")
    expected = model(ember.ones(1, 3, 224, 224))[:, 0:5]
    got = _numbers(p.stdout[3:])
    assert len(got) == 5, p.stdout
    assert all(abs(a - b) <= 1e-4 + 1e-4 * abs(b) for a, b in zip(got, expected.flatten().tolist()))
    # printed as Python prints it (4 decimals, tensor([[...]]) with a grad_fn)
    assert p.stdout[3:].startswith("tensor([[")
    assert "grad_fn=<SliceBackward0>" in p.stdout


def test_example_app_links_the_blas(example_app):
    """The core finds the BLAS with dlsym: the app must load it itself (no Python to do it),
    or every matmul would run the fallback GEMM."""
    from ember import _blas
    if _blas.PATH is None or shutil.which("readelf") is None:
        pytest.skip("no scipy-openblas32 or readelf here")
    out = subprocess.run(["readelf", "-d", str(example_app)], stdout=subprocess.PIPE, text=True).stdout
    assert os.path.basename(_blas.PATH) in out


def test_example_app_reports_a_bad_file(example_app, tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not an archive")
    p = subprocess.run([str(example_app), str(bad)], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=60)
    assert p.returncode != 0
    assert "error loading the model" in p.stdout


def test_gtest_loads_archive_from_python(tmp_path):
    exe = _fresh_prebuilt()
    if exe is None:
        exe = _build()
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Conv2d(3, 4, 3, padding=1), ember.nn.ReLU(),
                                ember.nn.AdaptiveAvgPool2d(1), ember.nn.Flatten(),
                                ember.nn.Linear(4, 3))
    model.eval()
    traced = ember.jit.trace(model, ember.rand(2, 3, 8, 8))
    path = tmp_path / "conv.pt"
    traced.save(str(path))
    with ember.no_grad():
        expect = repr(model(ember.ones(1, 3, 8, 8)))
    env = dict(os.environ, EMBER_JIT_ARCHIVE=str(path), EMBER_JIT_INPUT_SHAPE="1,3,8,8",
               EMBER_JIT_EXPECT=expect)
    env.pop("PYTHONPATH", None)
    p = subprocess.run([str(exe), "--gtest_filter=Jit.*"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stdout[-6000:]
    assert "ArchiveFromPython" in p.stdout and "SKIPPED" not in p.stdout, p.stdout[-3000:]
