"""Times the benchmark cases with PyTorch and prints the results as JSON.

Run by bench_core.py as ``/usr/bin/python3 benchmarks/_torch_worker.py THREADS
CASE...`` because Debian's python3-torch lives in the system interpreter, not in
the one ember is built for."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from _cases import CASES, timeit  # noqa: E402


def main():
    threads = int(sys.argv[1])
    config = torch.__config__.show()
    blas = next((w.rstrip(",") for w in config.split() if w.startswith("BLAS_INFO=")), "")
    out = {"version": torch.__version__, "blas": blas.partition("=")[2], "times": {}}
    for name in sys.argv[2:]:
        kind, _, make = CASES[name]
        torch.set_num_threads(1 if kind == "one" else threads)
        fn = make(torch, torch.from_numpy)
        out["times"][name] = timeit(fn)
        del fn
    print(json.dumps(out))


if __name__ == "__main__":
    main()
