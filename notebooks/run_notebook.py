"""Executes Jupyter notebooks with Jupyter's own machinery (nbclient + ipykernel).

    python notebooks/run_notebook.py notebooks/01_tensors.ipynb [more.ipynb ...]
    python notebooks/run_notebook.py --quick notebooks/*.ipynb     # small data slices

Each notebook runs in a fresh ``python3`` kernel whose working directory is the
notebook's folder, with matplotlib's Agg backend. The first failing cell stops
that notebook: its traceback is printed and the exit status is 1. With
``--inplace`` the executed notebook (outputs included) is written back.
``--quick`` sets ``EMBER_NOTEBOOK_TEST=1``, which the chapters read to shrink
their epochs and data, as the test suite does.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def execute(path: str | Path, *, timeout: int = 900, inplace: bool = False):
    """Runs every cell of the notebook at ``path`` in a new kernel; returns the
    executed notebook. Raises ``nbclient.exceptions.CellExecutionError`` on the
    first failing cell."""
    import nbformat
    from nbclient import NotebookClient

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    os.environ.setdefault("MPLBACKEND", "Agg")
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    if inplace:
        nbformat.write(nb, path)
    return nb


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("notebooks", nargs="+")
    p.add_argument("--quick", action="store_true", help="small data slices (EMBER_NOTEBOOK_TEST=1)")
    p.add_argument("--inplace", action="store_true", help="write the outputs back")
    p.add_argument("--timeout", type=int, default=900, help="seconds per cell")
    args = p.parse_args(argv)
    if args.quick:
        os.environ["EMBER_NOTEBOOK_TEST"] = "1"
    from nbclient.exceptions import CellExecutionError

    status = 0
    for name in args.notebooks:
        try:
            execute(name, timeout=args.timeout, inplace=args.inplace)
            print(f"ok      {name}")
        except CellExecutionError as e:
            print(f"FAILED  {name}\n{e}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
