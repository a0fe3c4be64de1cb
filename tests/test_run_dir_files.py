"""A run directory explains itself: ``train.log`` (what the run printed, also per multirun job,
rank 0 only), the command line and overrides in ``summary.json``, checkpoints that hold their
config and load alone, every file mode 0644."""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from playground.config import compose
from playground.run import rundir as runs
from playground.run.evaluate import evaluate_run, load_model
from playground.run.runlog import RunLog, visible

TINY = ["wandb.mode=disabled", "train.progress=false", "train.device=cpu", "task.N=8", "task.V=8",
        "task.context=96", "task.eval_size=16", "size=2L64D", "train.batch_size=8",
        "train.warmup_steps=2", "train.log_every=2", "train.eval_every=4", "train.ckpt_every=3",
        "train.steps=6"]


def train(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "playground.run.train", *args]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """One finished tiny run, and what it printed."""
    tmp = tmp_path_factory.mktemp("run")
    out = tmp / "run"
    proc = train(*TINY, "train.progress=true", f"out_dir={out}", cwd=tmp)
    return out, proc


def test_train_log_holds_what_the_run_printed(run_dir):
    out, proc = run_dir
    log = (out / "train.log").read_text()
    assert log == proc.stdout + proc.stderr  # nothing on stderr here: one stream, in order
    assert (log.splitlines()[-1] == f"{out}: finished; "
                                    f"acc_at_K={runs.read_json(out / 'summary.json')['primary']}")
    assert "step 6/6 loss" in log and "[eval step 4]" in log


def test_summary_records_the_command_line_and_overrides(run_dir):
    out, _ = run_dir
    summary = runs.read_json(out / "summary.json")
    given = [*TINY, "train.progress=true", f"out_dir={out}"]
    assert summary["argv"][0].endswith("train.py") and summary["argv"][1:] == given
    assert summary["overrides"] == given
    assert summary["compile"] is None  # not compiled: nothing of torch.compile to record


def test_files_are_shared_alike(run_dir):
    out, _ = run_dir
    files = [p for p in out.rglob("*") if p.is_file()]
    assert {p.suffix for p in files} >= {".pt", ".sha256", ".json", ".yaml", ".jsonl", ".log"}
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in files} == {p.name: 0o644 for p in files}


def test_a_checkpoint_loads_alone(run_dir, tmp_path):
    out, _ = run_dir
    latest = runs.checkpoint_paths(out / "checkpoints")[-1]
    alone = tmp_path / latest.name
    shutil.copy(latest, alone)
    assert [p.name for p in tmp_path.iterdir()] == [latest.name]  # no config.yaml, no .sha256
    model, cfg, state = load_model(alone)
    assert state["config"] == OmegaConf.to_container(OmegaConf.load(out / "config.yaml"))
    assert cfg.model.size == "2L64D" and state["step"] == 6
    reference = load_model(latest)[0]
    tokens = torch.randint(1, 10, (2, 12))
    assert torch.equal(model(tokens), reference(tokens))
    assert (evaluate_run(alone, device="cpu")["metrics"]
            == evaluate_run(out, device="cpu")["metrics"])


def test_a_checkpoint_of_another_config_is_refused_in_a_run_dir(run_dir, tmp_path):
    out, _ = run_dir
    state = runs.load_checkpoint(runs.checkpoint_paths(out / "checkpoints")[-1])
    state["config"]["model"]["n_layers"] = 3
    other = tmp_path / "step_00000006.pt"
    torch.save(state, other)
    with pytest.raises(Exception, match="model.n_layers: 2 -> 3|model.n_layers: 3 -> 2"):
        evaluate_run(out, checkpoint=str(other), device="cpu")


@pytest.mark.slow
@pytest.mark.parametrize("launcher", ["basic", "joblib"])
def test_each_multirun_job_has_its_own_train_log(tmp_path, launcher):
    """In this process (basic) or in a launcher's worker processes (joblib, 2 at once)."""
    if launcher == "joblib":
        pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    given = ["-m", f"hydra/launcher={launcher}", *TINY, "train.steps=2", "train.eval_every=0",
             "seed=0,1", f"out_dir={tmp_path}/s${{seed}}"]
    train(*given, cwd=tmp_path)
    for seed in (0, 1):
        log = (tmp_path / f"s{seed}" / "train.log").read_text()
        assert f"s{seed}: finished" in log and f"s{1 - seed}: finished" not in log
        summary = runs.read_json(tmp_path / f"s{seed}" / "summary.json")
        assert summary["argv"][1:] == given and f"seed={seed}" in summary["overrides"]


def test_only_rank_0_writes_the_log(tmp_path, monkeypatch):
    from playground.run.train import run

    monkeypatch.setenv("RANK", "1")  # a rank other than 0 (world size 1: no process group)
    out = tmp_path / "rank1"
    with RunLog() as log:
        run(compose([*TINY, "train.steps=2", "train.eval_every=0", f"out_dir={out}"]), log)
    assert not (out / "train.log").exists()


TEE = """
import logging, sys, warnings
from pathlib import Path
from playground.run.runlog import RunLog
logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)  # as Hydra's
with RunLog() as log:
    print("before the lock")  # held until attached
    log.attach(Path(sys.argv[1]))
    warnings.warn("a warning", stacklevel=1)
    logging.getLogger("playground.test").warning("a log record")
    print("bar  10%\\rbar  50%\\rbar 100%")  # a progress bar's redraws: the last one stays
    raise RuntimeError("it failed")
"""


def test_run_log_tees_prints_warnings_log_records_and_a_failure(tmp_path):
    path = tmp_path / "train.log"
    proc = subprocess.run([sys.executable, "-c", TEE, str(path)], capture_output=True)
    assert proc.returncode == 1 and b"RuntimeError: it failed" in proc.stderr
    text = path.read_text()
    assert text.startswith("before the lock\n") and "UserWarning: a warning" in text
    assert "a log record\n" in text and "bar 100%\n" in text and "bar  50%" not in text
    assert "RuntimeError: it failed" in text  # the traceback, which Hydra prints after the job
    assert text.count("a log record") == 1
    # unchanged
    assert proc.stdout == b"before the lock\na log record\nbar  10%\rbar  50%\rbar 100%\n"


def test_run_log_appends_unless_fresh_and_keeps_nothing_when_discarded(tmp_path):
    path = tmp_path / "train.log"
    for text, fresh in (("one", False), ("two", False), ("three", True)):
        with RunLog() as log:
            log.attach(path, fresh=fresh)
            print(text)
    assert path.read_text() == "three\n"
    with RunLog() as log:
        print("dropped")
        log.discard()
    assert path.read_text() == "three\n"


@pytest.mark.parametrize("text,shown",
                         [("abc", "abc"), ("a\rb", "b"), ("abc\r   \r", "abc"), ("", "")])
def test_visible(text, shown):
    assert visible(text) == shown
