"""Runs every notebook in notebooks/ end to end (each in a fresh interpreter)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUNNER = ROOT / "notebooks" / "run_notebook.py"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert [p.name for p in NOTEBOOKS][:1] == ["01_tensors.ipynb"]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(notebook):
    # EMBER_NOTEBOOK_TEST lets a long notebook run on a small slice of its data.
    env = dict(os.environ, EMBER_NOTEBOOK_TEST="1")
    p = subprocess.run([sys.executable, str(RUNNER), str(notebook)], cwd=ROOT, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert p.returncode == 0, f"{notebook.name} failed:\n{p.stdout[-12000:]}"
    assert "FAILED" not in p.stdout


def test_runner_reports_the_failing_cell(tmp_path):
    import json
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# title"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": ["x = 40\n", "x + 2"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": "print(x)\nraise ValueError('boom')"},
    ]}
    path = tmp_path / "t.ipynb"
    path.write_text(json.dumps(nb))
    p = subprocess.run([sys.executable, str(RUNNER), str(path)], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=60)
    assert p.returncode == 1
    assert "[1]\n42\n[2]\n40\n" in p.stdout
    assert "<t.ipynb cell 2>" in p.stdout and "ValueError: boom" in p.stdout
