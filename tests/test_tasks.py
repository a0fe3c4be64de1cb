"""Every task preset: determinism, JSON dumps, length bounds, and a tiny run that learns."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import task_from

from playground.config import CONF_DIR
from playground.data.cli import main as data_main
from playground.run import rundir as runs
from playground.run.train import run

PRESETS = sorted(p.stem for p in (CONF_DIR / "task").glob("*.yaml"))
TINY = {"depo": "depo_tiny", "brevo": "brevo_tiny", "mano": "mano_tiny", "mqar": "mqar_tiny",
        "capo": "capo_tiny"}  # and the plug-in example, Reverse: tests/test_adding_a_task.py


@pytest.mark.parametrize("preset", PRESETS)
def test_examples_deterministic_and_bounded(preset):
    task = task_from(f"task={preset}")
    for split in ("train", "eval"):
        for index in (0, 1, 17):
            a, b = task.example(split, index), task.example(split, index)
            assert a.tokens.dtype == np.int32 and a.loss_mask.dtype == bool
            assert (a.tokens.tobytes() == b.tokens.tobytes()
                    and a.loss_mask.tobytes() == b.loss_mask.tobytes())
            assert json.dumps(task.to_json(a)) == json.dumps(task.to_json(b))
            assert len(a) <= task.max_length() <= task.cfg.context
            assert (a.loss_mask.any() and (a.tokens < len(task.vocab)).all()
                    and (a.tokens[1:] != 0).all())
    other = task_from(f"task={preset}", f"task.seed={task.cfg.seed + 1}")
    assert other.example("train", 0).tokens.tobytes() != task.example("train", 0).tokens.tobytes()


@pytest.mark.parametrize("preset", PRESETS)
def test_data_cli_show_and_dump(preset, tmp_path, capsys):
    data_main(["show", f"task={preset}", "count=1"])
    assert "# example 0" in capsys.readouterr().out
    out = tmp_path / "x.jsonl"
    data_main(["dump", f"task={preset}", "count=3", f"out={out}"])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 3 and all(len(r["tokens"]) == len(r["pieces"]) == len(r["loss_mask"])
                                  for r in rows)


# one preset of every task family
@pytest.mark.slow
@pytest.mark.parametrize("preset", sorted({*TINY.values(), "cfg3f"}))
def test_data_cli_windows_are_the_training_windows(preset, tmp_path, capsys):
    """``dump windows=N`` writes the loader's first windows byte for byte (ids, the loss mask
    as the loss applies it, segments); ``show windows=N`` prints them."""
    from playground.config import compose, to_objects
    from playground.data.loader import Batches
    from playground.data.packing import shard_size

    out = tmp_path / "w.jsonl"
    data_main(["dump", f"task={preset}", "windows=3", f"out={out}"])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    cfg = to_objects(compose([f"task={preset}"]))
    task = task_from(f"task={preset}")
    batch = next(Batches(task, 3, shard_size(task, cfg.data.shard_examples),
                         packing=cfg.data.packing))
    targets = batch.mask.clone()
    targets[:, 0] = False
    assert len(rows) == 3 and all(len(r["ids"]) == len(r["targets"]) == task.cfg.context
                                  for r in rows)
    assert np.array([r["ids"] for r in rows], np.int64).tobytes() == batch.tokens.numpy().tobytes()
    assert np.array([r["targets"] for r in rows], bool).tobytes() == targets.numpy().tobytes()
    assert (np.array([r["segments"] for r in rows], np.int32).tobytes()
            == batch.segments.numpy().tobytes())
    assert [r["text"] for r in rows] == [task.vocab.decode(ids) for ids in batch.tokens]
    capsys.readouterr()
    data_main(["show", f"task={preset}", "windows=1", "start=2"])
    shown = capsys.readouterr().out
    assert shown.startswith("# window 2 (") and shown.count("# window") == 1


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(TINY))
def test_tiny_run_learns(family, make_cfg, tmp_path):
    run(make_cfg(f"task={TINY[family]}", "size=2L64D", "train.steps=40", "train.batch_size=8",
                 "train.warmup_steps=4", "train.log_every=1", "train.eval_every=0",
                 "task.eval_size=16"))
    losses = [r["loss"] for r in runs.MetricsLog(tmp_path / "run" / "metrics.jsonl").records()
              if r["split"] == "train"]
    assert np.mean(losses[-5:]) < 0.85 * np.mean(losses[:5])
    summary = runs.read_json(tmp_path / "run" / "summary.json")
    assert summary["status"] == "finished" and summary["primary"] is not None
