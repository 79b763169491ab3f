"""What every benchmark script shares: the command line, thread pinning, time
formatting and the markdown table."""
import argparse
import json
import os
import subprocess
import sys

#: Debian's python3-torch runs under the system Python, not the one ember is built for.
TORCH_PYTHON = "/usr/bin/python3"


def base_parser(description, threads_help="threads for every library (default: all cores)"):
    """--threads, --cases and --no-torch, the options every benchmark takes."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1, help=threads_help)
    p.add_argument("--cases", nargs="*", default=None,
                   help="run only the cases whose name contains one of these strings")
    p.add_argument("--no-torch", action="store_true", help="skip PyTorch")
    return p


def pin_threads(n):
    """BLAS thread pools read these when they load: call before importing NumPy and ember."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)


def fmt_time(t):
    if t is None:
        return "n/a"
    if t < 1e-3:
        return f"{t * 1e6:.2f} us"
    if t < 1:
        return f"{t * 1e3:.2f} ms"
    return f"{t:.2f} s"


def print_table(title, header, rows):
    """Prints `title`, then a markdown table with columns padded to their widest cell."""
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]

    def line(r):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"
    print(title)
    print(line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))


#: A current PyTorch from PyPI, in its own venv outside the repository (the reference).
PYPI_TORCH_PYTHON = os.environ.get("TORCH_PYTHON", "/work/torchvenv/bin/python")


def run_torch_worker(cmd, skip=False, python=None):
    """Runs a PyTorch timing worker (`cmd` after the interpreter) under `python` (default
    TORCH_PYTHON); returns (version label, {case: seconds}), or (None, {}) when skipped or it
    fails."""
    python = python or TORCH_PYTHON
    if skip or not os.path.exists(python):
        return None, {}
    p = subprocess.run([python, *cmd], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=""))
    if p.returncode != 0:
        print(f"PyTorch worker failed:\n{p.stderr[-2000:]}", file=sys.stderr)
        return None, {}
    res = json.loads(p.stdout.strip().splitlines()[-1])
    version = res["version"] + (f", BLAS: {res['blas']}" if res.get("blas") else "")
    return version, res["times"]
