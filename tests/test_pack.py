"""Packed run records: a finished run's ``metrics.jsonl`` kept as ``metrics.jsonl.gz``
(``MetricsLog.pack``, ``playground-report pack``) reads the same everywhere, packs to the same
bytes, and unpacks itself before any write."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from playground.errors import ConfigError
from playground.report.cli import main as report_main
from playground.run import rundir as runs


def _log(folder, steps=(1, 2, 3)) -> runs.MetricsLog:
    folder.mkdir(parents=True, exist_ok=True)
    log = runs.MetricsLog(folder / "metrics.jsonl")
    for step in steps:
        log.append({"step": step, "loss": 1.0 / step, "split": "train"})
    return log


def test_a_packed_log_reads_the_same_packs_to_the_same_bytes_and_unpacks_before_a_write(tmp_path):
    log, twin = _log(tmp_path / "a"), _log(tmp_path / "b")
    want, raw = log.records(), log.path.read_bytes()
    before, after = log.pack()
    assert (before, after) == (len(raw), log.packed.stat().st_size) and after < before
    assert not log.path.exists() and gzip.decompress(log.packed.read_bytes()) == raw
    assert log.records() == want and runs.MetricsLog(log.path).records() == want
    assert log.pack() is None  # packed already
    twin.pack()
    assert twin.packed.read_bytes() == log.packed.read_bytes()  # no time or name in the header
    log.append({"step": 4, "loss": 0.25, "split": "train"})  # a write: unpacked first
    assert not log.packed.exists() and [r["step"] for r in log.records()] == [1, 2, 3, 4]
    twin.truncate_after(2)  # a resume: unpacked, cut at the checkpoint's step
    assert not twin.packed.exists() and [r["step"] for r in twin.records()] == [1, 2]
    assert runs.MetricsLog(tmp_path / "none" / "metrics.jsonl").pack() is None


def test_both_logs_or_a_damaged_packed_log_is_an_error_naming_the_files(tmp_path):
    log = _log(tmp_path / "run")
    log.pack()
    log.path.write_text(json.dumps({"step": 1}) + "\n")
    for call in (log.records, log.pack):
        with pytest.raises(ConfigError, match="metrics.jsonl and metrics.jsonl.gz are both"):
            call()
    log.path.unlink()
    log.packed.write_bytes(log.packed.read_bytes()[:-9])  # cut short
    with pytest.raises(ConfigError, match=r"metrics.jsonl.gz cannot be unpacked"):
        log.records()
    log.packed.write_bytes(gzip.compress(b'{"step": 1}\nnot json\n{"step": 3}\n'))
    with pytest.raises(ConfigError, match=r"metrics.jsonl.gz, line 2, is not a JSON record"):
        log.records()


def test_pack_packs_the_finished_runs_only_and_a_report_reads_them_the_same(synthetic, tmp_path,
                                                                           capsys):
    """``playground-report pack`` over a folder of finished runs and one still running: the
    finished ones are packed, the running one keeps its plain log, a second pack finds nothing to
    do, and ``playground-report record`` (which reads every log) writes the same bytes as before."""
    root, _, _ = synthetic
    plain, packed = tmp_path / "plain", tmp_path / "packed"
    shutil.copytree(root, plain)
    running = plain / "syn_cpu" / "base_s0"
    summary = runs.read_json(running / "summary.json")
    runs.write_json(running / "summary.json", {**summary, "status": "running"})
    shutil.copytree(plain, packed)
    finished = len(list(packed.rglob("metrics.jsonl"))) - 1
    report_main(["pack", str(packed)])
    said = capsys.readouterr().out
    assert f"packed the metrics.jsonl of {finished} finished run(s)" in said
    assert "1 not finished, left as they are" in said
    assert len(list(packed.rglob("metrics.jsonl.gz"))) == finished
    assert [p.parent.name for p in packed.rglob("metrics.jsonl")] == ["base_s0"]
    report_main(["pack", str(packed)])
    assert f"of 0 finished run(s) under {packed}; {finished} packed already" in \
        capsys.readouterr().out
    for folder in (plain, packed):
        report_main(["record", str(folder), f"out={folder}_record"])
    record = (tmp_path / "packed_record" / "record.md").read_text()
    assert "| 1.000 |" in record  # the final loss, read from the logs
    assert record == (tmp_path / "plain_record" / "record.md").read_text()
    with pytest.raises(SystemExit) as exit_:
        report_main(["pack", str(tmp_path / "absent")])
    assert exit_.value.code == 2 and "RESULTS=" in capsys.readouterr().err


def test_the_committed_records_are_packed():
    """``results/mini/runs`` keeps every finished run's log packed (``results/mini/regenerate.sh``
    packs new records first): the tree that travels to a lent GPU machine stays under its limit
    (docs/reproducing_figures.md)."""
    root = Path(__file__).resolve().parents[1] / "results" / "mini" / "runs"
    finished = [d for d in (p.parent for p in root.rglob("summary.json"))
                if runs.read_json(d / "summary.json").get("status") == "finished"]
    assert len(finished) >= 323
    assert [str(d) for d in finished if (d / "metrics.jsonl").exists()] == []
    assert all((d / "metrics.jsonl.gz").exists() for d in finished)


def test_a_packed_run_started_anew_begins_an_empty_log(tmp_path):
    """``train.resume=never`` over a finished run whose log is packed: the new run's log holds its
    own steps only (the packed one is removed with the plain one, never unpacked into it)."""
    out = tmp_path / "run"
    tiny = ["wandb.mode=disabled", "train.progress=false", "train.device=cpu", "task=mqar_tiny",
            "size=2L64D", "train.batch_size=4", "train.log_every=1", "train.eval_every=100",
            "train.warmup_steps=1",
            f"out_dir={out}"]
    train = [sys.executable, "-m", "playground.run.train", *tiny]
    subprocess.run([*train, "train.steps=4"], check=True, capture_output=True)
    log = runs.MetricsLog(out / "metrics.jsonl")
    assert log.pack() is not None
    subprocess.run([*train, "train.steps=2", "train.resume=never"], check=True,
                   capture_output=True)
    assert not log.packed.exists()
    assert [r["step"] for r in log.records() if r["split"] == "train"] == [1, 2]
