"""The worked example of docs/adding_a_task.md: a task that exists only as its own module, its
preset and test parameters trains and evaluates end to end."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import playground
from playground.run import rundir as runs
from playground.run.evaluate import evaluate_run
from playground.run.train import run
from playground.tasks import TASKS

ROOT = Path(playground.__file__).resolve().parent


def test_no_other_file_names_the_task():
    assert "reverse" in TASKS
    own = {ROOT / "tasks" / "reverse.py"}
    for path in ROOT.rglob("*.py"):
        text = path.read_text()
        if path not in own:
            for ref in ("tasks.reverse", "tasks import reverse", "ReverseConfig", "Reverse)", "Reverse,"):
                assert ref not in text, f"{path} refers to the example task ({ref})"


def test_reverse_answers_recomputed():
    from conftest import task_from

    task = task_from("task=reverse")
    for i in range(20):
        pieces = task.vocab.decode(task.example("train", i).tokens).split()
        a = pieces.index("<ans>")
        assert pieces[a + 1 : -1] == pieces[1:a][::-1] and pieces[-1] == "<eos>"


def test_trains_and_evaluates_end_to_end(make_cfg, tmp_path):
    summary = run(make_cfg("task=reverse", "task.N=6", "task.eval_size=32", "size=2L64D",
                           "train.steps=150", "train.batch_size=16", "train.lr=3e-3",
                           "train.warmup_steps=10", "train.eval_every=0"))
    assert summary["status"] == "finished" and summary["task_name"] == "reverse"
    losses = [r["loss"] for r in runs.MetricsLog(tmp_path / "run" / "metrics.jsonl").records()
              if r["split"] == "train"]
    assert np.mean(losses[-3:]) < 0.5 * np.mean(losses[:3])
    assert summary["metrics"]["tok_acc"] > 0.5
    assert evaluate_run(tmp_path / "run", device="cpu")["metrics"] == summary["metrics"]
