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


# ---- which ember is timed -------------------------------------------------------------------
def ember_build(ember):
    """One line naming the ember build this interpreter imported: an installed wheel (under
    site-packages) or a source-tree build (python/ember with its libraries linked from a build
    folder, whose CMAKE_BUILD_TYPE is read from the CMake cache), the commit of a source tree, the
    CPU capability its dispatched kernels run with and the BLAS."""
    import glob
    pkg = os.path.dirname(os.path.realpath(ember.__file__))
    libs = glob.glob(os.path.join(os.path.dirname(ember.__file__), "_C*.so"))
    lib = os.path.realpath(libs[0]) if libs else "?"
    if "site-packages" in pkg or "dist-packages" in pkg:
        kind = f"installed wheel ({pkg})"
    else:
        build_dir = os.path.dirname(os.path.dirname(lib))
        build_type = "?"
        try:
            with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
                for line in f:
                    if line.startswith("CMAKE_BUILD_TYPE:"):
                        build_type = line.strip().partition("=")[2] or "(none)"
        except OSError:
            pass
        commit = subprocess.run(["git", "-C", pkg, "describe", "--always", "--dirty"],
                                capture_output=True, text=True).stdout.strip() or "?"
        kind = f"source tree {pkg} at {commit}, libraries from {build_dir} ({build_type})"
    cap = ember.backends.cpu.get_cpu_capability()
    blas = os.path.basename(getattr(ember._blas, "PATH", None) or "none")
    return f"ember {ember.__version__}: {kind}; CPU kernels: {cap}; BLAS: {blas}"


def torch_build(torch):
    """One line naming the PyTorch build: version, path, and whether oneDNN (mkldnn) is on."""
    return (f"PyTorch {torch.__version__} ({os.path.dirname(torch.__file__)}; "
            f"mkldnn={torch.backends.mkldnn.is_available()}, "
            f"capability={torch.backends.cpu.get_cpu_capability()})")


# ---- alternating processes ---------------------------------------------------------------
def alternate(script, names, threads, rounds, torch_python=None, no_torch=False, extra=(),
              baseline_path=None):
    """Runs `script --worker {ember,torch} --threads N [extra] -- NAMES...` in fresh processes,
    ember then PyTorch, `rounds` times, so both see the same machine state in turn. ember runs
    under this interpreter (with this environment, so it times the ember this interpreter
    imports), PyTorch under `torch_python` with an empty PYTHONPATH. Each worker prints one JSON
    line {"build": str, "times": {name: median seconds}}. Returns {lib: {"build": str,
    "times": {name: [one median per round]}}}. With `baseline_path`, a third process per round
    times the ember found on that PYTHONPATH (an earlier build, as "before"), under the key
    "before"."""
    torch_python = torch_python or PYPI_TORCH_PYTHON
    libs = [("ember", sys.executable, os.environ.get("PYTHONPATH", ""))]
    if baseline_path:
        libs.insert(0, ("before", sys.executable, baseline_path))
    if not no_torch and os.path.exists(torch_python):
        libs.append(("torch", torch_python, ""))
    out = {lib: {"build": None, "times": {n: [] for n in names}} for lib, _, _ in libs}
    for _ in range(rounds):
        for lib, py, path in libs:
            env = dict(os.environ, PYTHONPATH=path)
            for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
                env[var] = str(threads)
            worker = "torch" if lib == "torch" else "ember"
            p = subprocess.run([py, script, "--worker", worker, "--threads", str(threads), *extra,
                                "--", *names], capture_output=True, text=True, env=env)
            if p.returncode != 0:
                raise RuntimeError(f"{lib} worker failed:\n{p.stderr[-3000:]}")
            res = json.loads(p.stdout.strip().splitlines()[-1])
            out[lib]["build"] = res["build"]
            for n, t in res["times"].items():
                out[lib]["times"][n].append(t)
    return out


def _median(xs):
    xs = sorted(xs)
    k = len(xs)
    return None if not k else (xs[k // 2] if k % 2 else 0.5 * (xs[k // 2 - 1] + xs[k // 2]))


def ratio_rows(res, names):
    """Table rows: case, ember and PyTorch medians over the rounds, the ratio of the medians and
    the spread of the per-round ratios (min-max); with a "before" run, its ratio to PyTorch
    first."""
    rows = []
    et = res["ember"]["times"]
    tt = res.get("torch", {}).get("times", {})
    bt = res.get("before", {}).get("times")
    for n in names:
        e, t = et[n], tt.get(n, [])
        me, mt = _median(e), _median(t)
        before = []
        if bt is not None:
            mb = _median(bt[n])
            before = [f"{mb / mt:.2f}x" if mt and mb is not None else "n/a"]
        if me is None or not mt:
            rows.append([n, fmt_time(me), fmt_time(mt), *before, "n/a", "n/a"])
            continue
        per = sorted(a / b for a, b in zip(e, t))
        rows.append([n, fmt_time(me), fmt_time(mt), *before, f"{me / mt:.2f}x",
                     f"{per[0]:.2f}-{per[-1]:.2f}"])
    return rows


def load_line():
    """The 1/5/15-minute load averages, for the report (other users share the cores)."""
    try:
        return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "load average n/a"
