"""Builds and runs the GoogleTest suite in tests/cpp (the C++ core's unit tests).

The suite is configured with CMake into build/cpp-tests (ccache when present,
CUDA off) and only the ``ember_cpp_tests`` target is built. Building takes the
same lock as tools/dev_build.sh so that it never competes with a developer's
build for the cores. A missing GoogleTest is a failure, not a skip: the C++
tests are part of the suite.
"""
import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build" / "cpp-tests"
LOCK = "/tmp/ember-build.lock"


@contextlib.contextmanager
def _build_lock():
    with open(LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _run(cmd, timeout, what):
    try:
        p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{what} timed out after {timeout} s:\n{e.output or ''}"[-20000:])
    return p.returncode, p.stdout


def _configure():
    cmd = ["cmake", "-S", str(ROOT), "-B", str(BUILD), "-DCMAKE_BUILD_TYPE=Release",
           "-DEMBER_BUILD_TESTS=ON", "-DEMBER_CUDA=OFF", f"-DPython_EXECUTABLE={sys.executable}"]
    if shutil.which("ninja") and not (BUILD / "CMakeCache.txt").exists():
        cmd += ["-G", "Ninja"]
    if shutil.which("ccache"):
        cmd += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
    rc, out = _run(cmd, 600, "CMake configure")
    if rc != 0:
        if "GoogleTest" in out or "GTest" in out:
            pytest.fail("GoogleTest was not found, so the C++ unit tests cannot be built. "
                        "Install it (Debian/Ubuntu: apt-get install libgtest-dev) and rerun.\n"
                        + out[-8000:])
        pytest.fail("CMake configure of the C++ tests failed:\n" + out[-8000:])


def test_cpp_unit_tests():
    if shutil.which("cmake") is None:
        pytest.fail("cmake is needed to build the C++ unit tests (apt-get install cmake)")
    # CMakeLists.txt configures the Python bindings too, which needs pybind11's CMake files.
    probe = subprocess.run([sys.executable, "-m", "pybind11", "--cmakedir"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if probe.returncode != 0:
        pytest.fail("configuring the C++ tests needs pybind11 in this Python "
                    f"({sys.executable} -m pip install pybind11):\n{probe.stdout[-2000:]}")
    with _build_lock():
        _configure()
        jobs = str(os.cpu_count() or 2)
        rc, out = _run(["cmake", "--build", str(BUILD), "--target", "ember_cpp_tests",
                        "--parallel", jobs], 1800, "building ember_cpp_tests")
    if rc != 0:
        pytest.fail("building the C++ unit tests failed:\n" + out[-12000:])
    exe = BUILD / "ember_cpp_tests"
    rc, out = _run([str(exe), "--gtest_brief=1"], 600, "ember_cpp_tests")
    print(out[-4000:])
    assert rc == 0, "C++ unit tests failed:\n" + out[-12000:]
    assert "[  PASSED  ]" in out, out[-4000:]
