"""A CI-size run of the benchmarks, so that they never rot: bench_kernels.py --smoke builds and
runs every case once, in a worker process, through the same alternating-process harness as a
real run (benchmarks/_common.py), and prints the build it timed."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "benchmarks")


def test_bench_kernels_smoke():
    sys.path.insert(0, BENCH)
    try:
        import bench_kernels
    finally:
        sys.path.remove(BENCH)
    from child_env import child_env
    env = child_env()  # the worker must time the ember these tests import
    p = subprocess.run([sys.executable, os.path.join(BENCH, "bench_kernels.py"), "--smoke",
                        "--threads", "1"], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    out = p.stdout
    assert "ember " in out and ("installed wheel" in out or "source tree" in out)
    for name in bench_kernels.CASES:
        row = next(line for line in out.splitlines() if line.startswith(f"| {name} "))
        assert " n/a " in row.split("|")[3]  # --smoke runs without PyTorch
        assert row.split("|")[2].strip().endswith(("us", "ms", " s"))


def test_ratio_rows_medians_and_spread():
    sys.path.insert(0, BENCH)
    try:
        import _common
    finally:
        sys.path.remove(BENCH)
    res = {"ember": {"times": {"a": [1.0, 3.0, 2.0]}},
           "torch": {"times": {"a": [2.0, 2.0, 4.0]}}}
    [row] = _common.ratio_rows(res, ["a"])
    assert row[0] == "a" and row[1] == "2.00 s" and row[2] == "2.00 s"
    assert row[3] == "1.00x" and row[4] == "0.50-1.50"
    [row] = _common.ratio_rows({"ember": {"times": {"a": [1e-3]}}}, ["a"])
    assert row[2:] == ["n/a", "n/a", "n/a"]
