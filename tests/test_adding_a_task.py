"""The worked example of docs/adding_a_task.md: a task that lives in its own package outside
``playground/`` (examples/reverse_task), registered by one entry point, trains and evaluates
end to end through ``playground-train`` and ``playground-eval``, with no file of ours naming it.

The test installs the package the way pip would, without pip: the module beside a
``*.dist-info`` folder whose ``entry_points.txt`` holds the package's one entry point, on
PYTHONPATH."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import playground
from playground.run import rundir as runs

ROOT = Path(playground.__file__).resolve().parent
EXAMPLE = ROOT.parent / "examples" / "reverse_task"


def install(site: Path) -> dict:
    """The example package 'installed' into ``site``; the environment that sees it."""
    site.mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLE / "reverse_task.py", site)
    meta = site / "reverse_task-0.1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: reverse-task\nVersion: 0.1.0\n")
    toml = (EXAMPLE / "pyproject.toml").read_text()
    entry = next(line for line in toml.splitlines() if line.startswith("reverse = "))
    (meta / "entry_points.txt").write_text(f"[playground.tasks]\n{entry.replace(chr(34), '')}\n")
    return {**os.environ,
            "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return install(tmp_path_factory.mktemp("site"))


def test_no_file_of_ours_names_the_task():
    for path in ROOT.rglob("*.py"):
        text = path.read_text()
        for ref in ("reverse_task", "ReverseConfig", "Reverse)", "Reverse,"):
            assert ref not in text, f"{path} refers to the example task ({ref})"


@pytest.mark.slow
def test_reverse_answers_recomputed(env):
    code = ("from playground.config import compose, to_objects\n"
            "from playground.tasks import build_task\n"
            "task = build_task(to_objects(compose(['task=reverse'])).task)\n"
            "import json; print(json.dumps([task.vocab.decode(task.example('train', i).tokens) for "
            "i in range(20)]))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    for text in json.loads(out.stdout):
        pieces = text.split()
        a = pieces.index("<ans>")
        assert pieces[a + 1 : -1] == pieces[1:a][::-1] and pieces[-1] == "<eos>"


@pytest.mark.slow
def test_trains_and_evaluates_end_to_end(env, tmp_path):
    run_dir = tmp_path / "run"
    train = subprocess.run(
        [sys.executable, "-m", "playground.run.train", "task=reverse", "task.N=6",
         "task.eval_size=32", "size=2L64D", "train.steps=150", "train.batch_size=16",
         "train.lr=3e-3", "train.warmup_steps=10",
         "train.eval_every=0", "train.device=cpu", "train.progress=false", "wandb.mode=disabled",
         f"out_dir={run_dir}"], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert train.returncode == 0, train.stderr[-3000:]
    summary = runs.read_json(run_dir / "summary.json")
    assert summary["status"] == "finished" and summary["record"]["task"]["family"] == "reverse"
    losses = [r["loss"] for r in runs.MetricsLog(run_dir / "metrics.jsonl").records()
              if r["split"] == "train"]
    assert np.mean(losses[-3:]) < 0.5 * np.mean(losses[:3])
    assert summary["metrics"]["tok_acc"] > 0.5
    evaluate = subprocess.run([sys.executable, "-m", "playground.run.evaluate", str(run_dir),
                               "device=cpu"],
                              env=env, capture_output=True, text=True)
    assert evaluate.returncode == 0, evaluate.stderr[-3000:]
    assert runs.read_json(run_dir / "eval.json")["metrics"] == summary["metrics"]


@pytest.mark.slow
def test_without_the_package_the_task_is_unknown(tmp_path):
    out = subprocess.run([sys.executable, "-m", "playground.run.train", "task=reverse",
                          "wandb.mode=disabled",
                          f"out_dir={tmp_path / 'x'}"], capture_output=True, text=True)
    assert (out.returncode != 0
            and "task=reverse is not an option of task" in out.stderr + out.stdout)
