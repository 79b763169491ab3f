"""The derivative table of the elementwise ops (csrc/ember/autograd/derivatives/elementwise.def)
is checked when it compiles: an op of kernels/ops.def without a row, or an op with a floating
result marked N(op) (not differentiable), must fail the build naming the op. This compiles
derivatives/elementwise.cpp (syntax only) against a broken copy of the table."""
import pathlib
import re
import shutil
import subprocess

import pytest

SRC = pathlib.Path(__file__).resolve().parent.parent / "csrc"
TABLE = SRC / "ember" / "autograd" / "derivatives" / "elementwise.def"
CXX = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_table_errors_fail_the_build(tmp_path):
    text = TABLE.read_text()
    # Drop atan2's row (two lines) and mark exp2 not differentiable.
    broken, n = re.subn(r"  D\(atan2, .*?\\\n.*?\\\n", "", text, count=1, flags=re.S)
    assert n == 1
    broken, n = re.subn(r"  D\(exp2, [^\n]*\\\n", "  N(exp2) \\\\\n", broken, count=1)
    assert n == 1
    shadow = tmp_path / "ember" / "autograd" / "derivatives"
    shadow.mkdir(parents=True)
    (shadow / "elementwise.def").write_text(broken)
    r = subprocess.run([CXX, "-std=gnu++17", "-fsyntax-only", f"-I{tmp_path}", f"-I{SRC}",
                        str(SRC / "ember" / "autograd" / "derivatives" / "elementwise.cpp")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert "needs exactly one row for the binary op 'atan2'" in r.stderr, r.stderr[-2000:]
    assert "marks 'exp2' not differentiable" in r.stderr, r.stderr[-2000:]
