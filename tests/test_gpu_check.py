"""The GPU check's own machinery, which must work the first time a GPU is lent: the summary
writer (tools/gpu_check_summary.py) and the script's option handling. CI also runs
`tools/gpu_prepare.sh && tools/gpu_check.sh --dry-run` (.ci/run), which checks the whole plan."""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUMMARY = ROOT / "tools" / "gpu_check_summary.py"
SCRIPT = ROOT / "tools" / "gpu_check.sh"

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
  <testcase classname="tests.test_cuda_kernels" name="test_sum"/>
  <testcase classname="tests.test_cuda_kernels" name="test_var">
    <failure message="AssertionError: tensors differ at [3]">trace</failure></testcase>
  <testcase classname="tests.test_cuda_sort" name="test_topk[float32]">
    <skipped message="needs a CUDA GPU"/></testcase>
  <testcase classname="tests.test_stubs" name="test_mypy">
    <skipped message="mypy is not installed"/></testcase>
  <testcase classname="tests.test_build" name="test_one_runtime">
    <error message="ImportError: libstdc++">trace</error></testcase>
</testsuite></testsuites>
"""


def _summary(tmp_path, *extra):
    (tmp_path / "junit.xml").write_text(JUNIT)
    p = subprocess.run([sys.executable, str(SUMMARY), str(tmp_path), *extra], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_summary_counts_per_module_and_flags_gpu_skips(tmp_path):
    out = _summary(tmp_path)
    assert "## Tests: 1 passed, 1 failed, 1 errors, 2 skipped" in out
    assert "| tests/test_cuda_kernels.py **!** | 1 | 1 | 0 | 0 |" in out
    assert "| tests/test_cuda_sort.py | 0 | 0 | 0 | 1 |" in out
    # one skip is for want of a GPU (flagged), the other is not
    assert "(1 for want of a GPU: must be 0 on the GPU machine)" in out
    assert "- 1 x **GPU** needs a CUDA GPU" in out
    assert "- 1 x mypy is not installed" in out
    assert "tests/test_cuda_kernels.py::test_var: AssertionError: tensors differ at [3]" in out


def test_summary_writes_the_failed_modules_for_only_failed(tmp_path):
    fm = tmp_path / "failed_modules"
    _summary(tmp_path, "--failed-modules", str(fm))
    assert fm.read_text().splitlines() == ["tests/test_build.py", "tests/test_cuda_kernels.py"]


def test_summary_includes_steps_and_the_bench_table(tmp_path):
    steps = tmp_path / "steps"
    steps.write_text("build ember: rc 0 in 212s\ntest suite: rc 1 in 180s\n")
    bench = tmp_path / "bench.log"
    bench.write_text("bench_cuda: timing ember from /x\ncase   ember   PyTorch   ratio\nadd   1 us   2 us   0.50x\n")
    out = _summary(tmp_path, "--steps", str(steps), "--bench", str(bench))
    assert "- test suite: rc 1 in 180s" in out
    assert "case   ember   PyTorch   ratio\nadd   1 us   2 us   0.50x" in out
    assert "timing ember from" not in out


def test_summary_without_junit_still_writes(tmp_path):
    p = subprocess.run([sys.executable, str(SUMMARY), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "## Tests: 0 passed" in p.stdout


def test_script_parses_and_rejects_unknown_options():
    assert subprocess.run(["bash", "-n", str(SCRIPT)]).returncode == 0
    p = subprocess.run(["bash", str(SCRIPT), "--frobnicate"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "unknown option --frobnicate" in p.stderr
    p = subprocess.run(["bash", str(SCRIPT), "--help"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "--only-failed" in p.stdout and "--dry-run" in p.stdout


def _memcheck_ids():
    text = SCRIPT.read_text()
    body = text[text.index("MEMCHECK=(") + len("MEMCHECK=("):]
    body = body[:body.index("\n)")]
    return [line.split("#")[0].strip().strip('"') for line in body.splitlines()
            if line.split("#")[0].strip()]


def test_every_memcheck_node_id_collects_a_test():
    # A parametrized id collects one item per parameter set (devices differ between this
    # machine and a GPU's); an id that collects nothing would make the GPU run fail.
    # Without a GPU a device-comparison id with the parameter "cuda" is checked through its
    # CPU twin (the same id with "cpu").
    ids = _memcheck_ids()
    assert len(ids) > 20 and all("::" in i for i in ids), ids
    # (pytest lists nothing when any id it is given is not found, so give it only those
    # that should exist here).
    from child_env import child_env

    import ember
    if not ember.cuda.is_available():
        ids = [re.sub(r"([\[-])cuda([\]-])", r"\1cpu\2", i) for i in ids]
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p",
                        "no:cacheprovider", *ids],
                       capture_output=True, text=True, cwd=ROOT, env=child_env(), timeout=300)
    got = [line for line in p.stdout.splitlines() if "::" in line]
    missing = [i for i in ids if not any(g == i or g.startswith(i + "[") for g in got)]
    assert not missing, (missing, p.stdout[-3000:] + p.stderr[-3000:])
