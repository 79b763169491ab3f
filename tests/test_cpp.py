"""Builds and runs the GoogleTest suite in tests/cpp (the C++ core's unit tests).

`pip install .` builds the suite with the library (EMBER_BUILD_TESTS=AUTO, when GoogleTest
is found) into its build directory, build/<wheel tag>; `tools/dev_build.sh ember_cpp_tests`
builds it into build/dev. A binary there that is newer than every C++ source and CMake file
is the one run: it links the library that was just built, so a second compile of the whole
core would only cost time. Otherwise the suite is configured with CMake into
build/cpp-tests (ccache when present, CUDA off) and only the ``ember_cpp_tests`` target
is built. Building takes the
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


def _newest_source_mtime():
    newest = max((ROOT / "CMakeLists.txt").stat().st_mtime, 0.0)
    for d in ("csrc", "tests/cpp", "cmake"):
        for p in (ROOT / d).rglob("*"):
            if p.is_file():
                newest = max(newest, p.stat().st_mtime)
    return newest


def _fresh_prebuilt():
    """The newest ember_cpp_tests under build/ (not the sanitizer build, which needs its own
    environment: tools/sanitize.sh runs it) built after the last source change, or None."""
    found = [p for p in (ROOT / "build").glob("*/ember_cpp_tests")
             if p.parent.name != "sanitize" and os.access(p, os.X_OK)]
    if not found:
        return None
    exe = max(found, key=lambda p: p.stat().st_mtime)
    return exe if exe.stat().st_mtime > _newest_source_mtime() else None


def test_cpp_unit_tests():
    exe = _fresh_prebuilt()
    if exe is None:
        exe = _build()
    rc, out = _run([str(exe), "--gtest_brief=1"], 600, "ember_cpp_tests")
    print(f"{exe}:\n" + out[-4000:])
    assert rc == 0, "C++ unit tests failed:\n" + out[-12000:]
    assert "[  PASSED  ]" in out, out[-4000:]


def _build():
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
    return BUILD / "ember_cpp_tests"
