"""Runs the code cells of a Jupyter notebook in order, without Jupyter.

    python3 notebooks/run_notebook.py notebooks/01_tensors.ipynb [more.ipynb ...]

All cells of one notebook share one namespace, as in a kernel. Each cell's
printed output appears under a ``[n]`` marker, and a cell ending in an
expression shows that expression's repr, as Jupyter does. The first failing
cell stops the run with its traceback and exit status 1. IPython magics
(``%...``, ``!...``) are not supported: notebooks here are plain Python.
"""
from __future__ import annotations

import ast
import json
import sys
import traceback
from pathlib import Path


def code_cells(path: Path) -> list[str]:
    """The source of every code cell of the notebook at `path`, in order."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    if nb.get("nbformat") != 4:
        raise ValueError(f"{path}: expected an nbformat 4 notebook, got {nb.get('nbformat')!r}")
    cells = []
    for cell in nb["cells"]:
        if cell.get("cell_type") == "code":
            src = cell["source"]
            cells.append(src if isinstance(src, str) else "".join(src))
    return cells


def run_cell(source: str, namespace: dict, name: str) -> None:
    """Executes one cell; echoes the value of a trailing expression."""
    tree = ast.parse(source, filename=name)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, name, "exec"), namespace)
    if last is not None:
        value = eval(compile(last, name, "eval"), namespace)
        if value is not None:
            print(repr(value))


def run_notebook(path: str | Path) -> None:
    """Runs every code cell of `path` in one fresh namespace; raises on the first error."""
    path = Path(path)
    namespace = {"__name__": "__main__", "__file__": str(path)}
    for i, source in enumerate(code_cells(path), 1):
        print(f"[{i}]")
        run_cell(source, namespace, f"<{path.name} cell {i}>")
        sys.stdout.flush()


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for p in argv:
        print(f"=== {p}")
        try:
            run_notebook(p)
        except Exception:
            traceback.print_exc()
            print(f"=== {p}: FAILED", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
