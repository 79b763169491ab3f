"""Executes every notebook in notebooks/ under Jupyter (nbclient + ipykernel), each in a
fresh kernel, on small data slices (EMBER_NOTEBOOK_TEST=1)."""
import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
_spec = importlib.util.spec_from_file_location("run_notebook", ROOT / "notebooks" / "run_notebook.py")
run_notebook = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_notebook)


@pytest.fixture(autouse=True)
def _quick_env(monkeypatch):
    monkeypatch.setenv("EMBER_NOTEBOOK_TEST", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 2 and NOTEBOOKS[0].name.startswith("00_")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(notebook, tmp_path):
    nb = run_notebook.execute(notebook, timeout=600)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
    assert all(c.get("execution_count") for c in nb.cells if c.cell_type == "code" and c.source.strip())


def test_runner_stops_at_the_failing_cell(tmp_path):
    import nbformat
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# title"),
        nbformat.v4.new_code_cell("x = 40\nx + 2"),
        nbformat.v4.new_code_cell("print(x)\nraise ValueError('boom')"),
        nbformat.v4.new_code_cell("print('never')"),
    ])
    path = tmp_path / "t.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(CellExecutionError, match=r"ValueError\S*: boom"):
        run_notebook.execute(path, timeout=60)
    assert run_notebook.main([str(path)]) == 1
    assert os.environ["EMBER_NOTEBOOK_TEST"] == "1"
