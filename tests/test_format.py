"""The tree is formatted and lint-clean: every C++ source matches .clang-format under the
pinned clang-format, and the Python passes ruff's rules (ruff.toml).

Both tools come from the test extra (`pip install ".[test]"`), pinned to one version each,
because two clang-format releases format the same file differently. Fix a failure with

    clang-format -i <files>        ruff check --fix python tests benchmarks tools
"""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLANG_FORMAT_VERSION = "19.1.7"  # keep equal to the pin in pyproject.toml's test extra
CXX_DIRS = ("csrc", "tests/cpp")
CXX_SUFFIXES = {".cpp", ".h", ".cu", ".cuh"}
PY_PATHS = ["python", "tests", "benchmarks", "tools"]


def _tool(name):
    here = Path(sys.executable).parent / name  # the venv's own copy first
    found = str(here) if here.exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed; it is part of the test extra: "
                    f"pip install '.[test]'")
    return found


def _cxx_files():
    files = sorted(p for d in CXX_DIRS for p in (ROOT / d).rglob("*")
                   if p.suffix in CXX_SUFFIXES and p.is_file())
    assert len(files) > 100, f"found only {len(files)} C++ files under {CXX_DIRS}"
    return files


def test_clang_format_is_the_pinned_version():
    out = subprocess.run([_tool("clang-format"), "--version"], capture_output=True, text=True)
    assert f"version {CLANG_FORMAT_VERSION}" in out.stdout, (
        f"clang-format {CLANG_FORMAT_VERSION} is the project's formatter (pyproject.toml's test "
        f"extra); found: {out.stdout.strip() or out.stderr.strip()}")


def test_cpp_sources_are_clang_formatted():
    files = _cxx_files()
    p = subprocess.run([_tool("clang-format"), "--dry-run", "--Werror", *map(str, files)],
                       capture_output=True, text=True, cwd=ROOT)
    bad = sorted({line.split(":")[0] for line in p.stderr.splitlines() if ": error:" in line})
    assert p.returncode == 0, (f"{len(bad)} C++ files are not formatted (clang-format -i them):\n"
                               + "\n".join(bad[:50]) + "\n" + p.stderr[-3000:])


def test_python_is_ruff_clean():
    p = subprocess.run([_tool("ruff"), "check", "--no-cache", *PY_PATHS], capture_output=True,
                       text=True, cwd=ROOT)
    assert p.returncode == 0, "ruff check found problems:\n" + (p.stdout + p.stderr)[-6000:]
