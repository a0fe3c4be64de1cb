"""The analysis notebook finds its results folder from the working directory or the repository
root, says when it finds no runs, and draws what the runs hold: a gain below zero, a run with
one eval point."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from playground.report import cells as aggregate
from playground.report import plots
from playground.report.table import results_folder

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "analysis.ipynb"


def cell(index: int) -> str:
    return "".join(json.loads(NOTEBOOK.read_text())["cells"][index]["source"])


def test_results_folder(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "notebooks" / "results" / "a").mkdir(parents=True)
    (tmp_path / "results" / "b").mkdir(parents=True)
    notebooks = tmp_path / "notebooks"
    assert results_folder(tmp_path / "x", notebooks) == tmp_path / "x"  # absolute: as given
    # the working directory first
    assert results_folder("results/a", notebooks) == notebooks / "results" / "a"
    # then the repository root
    assert results_folder("results/b", notebooks) == tmp_path / "results" / "b"
    # neither: where it was looked for
    assert results_folder("results/c", notebooks) == notebooks / "results" / "c"
    monkeypatch.chdir(notebooks)
    assert results_folder("results/b") == tmp_path / "results" / "b"


def execute_first_cells(results: str, tmp_path: Path):
    """The notebook's first code cell, run by a kernel in notebooks/ as Jupyter runs it."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells = nb.cells[:2]
    env_cell = nbformat.v4.new_code_cell("import os\n"
                                         f"os.environ['PLAYGROUND_RESULTS'] = {results!r}")
    nb.cells.insert(0, env_cell)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]


@pytest.mark.slow
def test_a_path_relative_to_the_repository_root_is_found(tmp_path):
    outputs = execute_first_cells("tests/fixtures/results/fig7_cpu", tmp_path)
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("48 runs under " + str(ROOT / "tests/fixtures/results/fig7_cpu") in o.get("text", "")
               for o in outputs)


@pytest.mark.slow
def test_no_runs_found_is_said(tmp_path):
    outputs = execute_first_cells(str(tmp_path), tmp_path)
    errors = [o for o in outputs if o.output_type == "error"]
    assert errors and errors[0]["evalue"].startswith(f"no runs found under {tmp_path}")
    assert errors[0]["ename"] == "FileNotFoundError"


def test_canons_gain_by_size_shows_negative_gains():
    shown = []
    cells = pd.DataFrame({"panel": "p", "row": "N=8", "size": ["2L64D", "2L64D", "4L64D", "4L64D"],
                          "canon": ["none", "abcd_res"] * 2, "value": [0.6, 0.4, 0.2, 0.5]})
    exec(cell(6), {"cells": cells, "aggregate": aggregate, "plots": plots,
                   "display": lambda _: None, "show": shown.append})
    ax = shown[0].axes[0]
    heights = sorted(round(p.get_height(), 6) for p in ax.patches)
    assert heights == [-20.0, 30.0] and ax.get_ylim()[0] < -20 < 30 < ax.get_ylim()[1]


def test_a_run_with_one_eval_point_is_drawn(tmp_path):
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 50, "split": "eval", "acc_k1": 0.5,
                                                        "acc_k2": 0.25}) + "\n")
    shown = []
    runs = pd.DataFrame([{"run": "one_eval", "run_dir": str(tmp_path)}])
    exec(cell(8), {"runs": runs, "pd": pd, "Path": Path, "plots": plots, "show": shown.append})
    lines = shown[0].axes[0].get_lines()
    assert len(lines) == 2 and all(line.get_marker() == "o" and len(line.get_xdata()) == 1
                                   for line in lines)
