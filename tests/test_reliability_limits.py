"""Faults at the edges: values no machine can run (refused before anything is written), a full
disk (the run ends ``failed`` in one line), and sweeps whose runs cannot be launched or whose
processes die (each recorded per run, each attempt's log kept)."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf
from test_reliability import TINY

from playground.config import compose, to_objects
from playground.errors import ConfigError
from playground.run import budget
from playground.run import rundir as runs

NO_GPU = "cuda:99" if torch.cuda.is_available() else "cuda"  # a device this machine does not have

# Each value the train command refuses before anything is written, and the key its message names.
REFUSED = [
    (["model.d_model=0"], "model.d_model"),
    (["train.batch_size=100000000"], "train.batch_size"),
    (["task.context=100000000"], "task.context"),
    (["model.d_model=65536", "model.n_layers=64"], "model.d_model"),
    ([f"train.device={NO_GPU}"], "train.device"),
    (["task.name="], "task.name"),
    (["model.mixer.name="], "model.mixer.name"),
    (["run_name="], "run_name"),
    (["sweep="], "sweep"),
    (["run_name=.."], "run_name"),
    (["model.canon.init_current=nan"], "model.canon.init_current"),
    (["model.canon.init_current=abc"], "model.canon.init_current"),
    (["-m", "seed=0,1", "task.name="], "task.name"),  # a multirun: Hydra places its points first
    (["-m", "seed=0,1", "sweep="], "sweep"),
]


def train_main(argv: list[str], monkeypatch) -> SystemExit:
    """``playground-train`` in this process, up to where it exits (every case here is refused
    before Hydra runs)."""
    from playground.run.train import ARGV_ENV, main

    monkeypatch.setenv(ARGV_ENV, "[]")  # main sets it; restored afterwards
    monkeypatch.setattr(sys, "argv", ["playground-train", *argv])
    with pytest.raises(SystemExit) as exit_:
        main()
    return exit_.value


@pytest.mark.parametrize("overrides,key", REFUSED, ids=[" ".join(o) for o, _ in REFUSED])
def test_impossible_values_are_refused_before_anything_is_written(tmp_path, monkeypatch, capsys,
                                                                  overrides, key):
    """Each value of the list ends in one line naming its key (exit 2, no traceback), and no file
    or folder is made: not the run directory, not results/. The memory ones say the estimate."""
    monkeypatch.chdir(tmp_path)
    done = train_main([*TINY, "train.steps=3", *overrides], monkeypatch)  # a key's last value wins
    err = capsys.readouterr().err
    assert done.code == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and err.startswith("playground-train: error: ")
    assert f"{key}=" in err
    if "100000000" in " ".join(overrides) or "65536" in " ".join(overrides):
        assert "the run needs about" in err and "of memory" in err and "more than the" in err
    assert list(tmp_path.iterdir()) == []


def test_eval_and_data_refuse_a_missing_device_and_an_unbounded_count(tmp_path, capsys):
    """playground-eval device=cuda without one: one line naming device=, before any checkpoint is
    read. playground-data dump count=10**11: refused with its bound, nothing written."""
    from playground.data.cli import main as data_main
    from playground.run.evaluate import main as eval_main

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("not read: the device is checked first\n")
    with pytest.raises(SystemExit) as exit_:
        eval_main([str(run), f"device={NO_GPU}"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and f"device='{NO_GPU}' is invalid" in err
    assert "Traceback" not in err
    out = tmp_path / "d.jsonl"
    for arg, bound in (("count=100000000000", "1..1,000,000"),
                       ("windows=100000000", "134,217,728 tokens")):
        with pytest.raises(SystemExit) as exit_:
            data_main(["dump", "task=depo_tiny", arg, f"out={out}"])
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and f"{arg.partition('=')[0]}=" in err and bound in err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_the_memory_estimate_counts_the_real_parameters_and_warns_or_refuses(monkeypatch):
    """The estimate's parameters are the model's own (built on the meta device); a run that
    exceeds what is free gets a warning with the estimate, one that exceeds the whole memory is
    refused naming the keys of its largest part."""
    from playground.model import build_model
    from playground.tasks import build_task

    cfg = to_objects(compose([*TINY, "model.mlp=moe", "canon=AB"]))
    vocab = len(build_task(cfg.task).vocab)
    real = build_model(cfg.model, vocab).param_counts()["total"]
    assert budget.parameter_count(cfg, vocab) == real
    need = budget.estimate(cfg, vocab, torch.device("cpu"))
    size = need.state + need.activations + need.batches
    monkeypatch.setattr(budget, "memory_of", lambda device: (size // 2, size * 2))
    warning = budget.check_memory(cfg, vocab)
    assert warning.startswith("warning: the run may need about")
    assert budget.size_text(size) in warning
    monkeypatch.setattr(budget, "memory_of", lambda device: (size // 4, size // 2))
    with pytest.raises(ConfigError, match=r"model\.d_model=64, model\.n_layers=2 .* more than the"):
        budget.check_memory(cfg, vocab)  # 32 experts: the weights are the largest part
    monkeypatch.setattr(budget, "memory_of", lambda device: (size * 2, size * 4))
    assert budget.check_memory(cfg, vocab) is None



def test_the_memory_estimate_counts_the_canon_layers_channels():
    """Canon-ABCD adds, per token of a forward pass, ``CONV_VALUES`` values for each of its
    channels: A and C the model's width, B the attention's q, k, v, D the MLP's gate and up
    (counted here from the built model's projections)."""
    from playground.model import build_model
    from playground.tasks import build_task

    plain = to_objects(compose([*TINY, "canon=none"]))
    canon = to_objects(compose([*TINY, "canon=ABCD"]))
    vocab = len(build_task(plain.task).vocab)
    model = build_model(canon.model, vocab)
    d, block = canon.model.d_model, model.blocks[0]
    per_block = d + block.mixer.qkv.out_features + d + block.mlp.up.out_features
    assert budget.model_counts(canon, vocab)[1] == canon.model.n_layers * per_block
    assert budget.model_counts(plain, vocab)[1] == 0
    tokens = canon.train.batch_size * canon.task.context
    cpu = torch.device("cpu")
    extra = budget.estimate(canon, vocab, cpu).activations - \
        budget.estimate(plain, vocab, cpu).activations
    assert extra == int(tokens * canon.model.n_layers * per_block * budget.CONV_VALUES * 4)


def test_the_memory_estimate_is_near_the_measured_peaks_of_the_mini_runs():
    """Against the peak GPU memory the compiled mini runs recorded (``results/mini/runs``: every
    backbone at 8L512D and above, the tasks whose training step sets the peak: Depo, Brevo,
    Mano), the CUDA estimate is within ×0.75-1.25 for every run."""
    import yaml

    from playground.config import from_container
    from playground.tasks import build_task

    root = Path(__file__).resolve().parents[1] / "results/mini/runs"
    ratios = {}
    for summary in sorted(root.glob("*/*/summary.json")):
        peak = json.loads(summary.read_text()).get("peak_memory_bytes")
        cfg = from_container(yaml.safe_load((summary.parent / "config.yaml").read_text()))
        if not peak or cfg.task.name == "lano" or cfg.model.d_model < 512:
            continue
        need = budget.estimate(cfg, len(build_task(cfg.task).vocab), torch.device("cuda"))
        ratios[summary.parent.name] = peak / (need.state + need.activations)
    assert len(ratios) >= 200
    assert {name.split("_")[0] for name in ratios} >= {"depo1", "brevo1", "mano"}
    assert all(0.75 <= r <= 1.25 for r in ratios.values()), \
        {k: round(r, 2) for k, r in ratios.items() if not 0.75 <= r <= 1.25}

# -- a full disk ---------------------------------------------------------------------------------


def no_space(path) -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


def always_full(path, obj) -> None:
    raise no_space(path)


def test_a_full_disk_frees_the_reserve_to_record_the_end(tmp_path, monkeypatch):
    """summary.json on a full disk: written into the space the run held (``.reserve``); with no
    space at all, a short record over the old file in place; a finished run that cannot say so
    is recorded failed (and the full disk raised)."""
    real = runs.write_json
    with runs.reserved_space(tmp_path):
        assert (tmp_path / runs.RESERVE).stat().st_size == runs.RESERVE_BYTES
        runs.write_json(tmp_path / "summary.json", {"status": "running", "step": 1})

        def full_while_reserved(path, obj):
            if (tmp_path / runs.RESERVE).exists():
                raise no_space(path)
            real(path, obj)

        monkeypatch.setattr(runs, "write_json", full_while_reserved)
        runs.write_summary(tmp_path, {"status": "failed", "error": "no space", "step": 3})
        assert runs.read_json(tmp_path / "summary.json") == \
            {"status": "failed", "error": "no space", "step": 3}

        monkeypatch.setattr(runs, "write_json", always_full)
        runs.write_summary(tmp_path, {"status": "preempted", "error": "signal 15", "step": 9})
        assert runs.read_json(tmp_path / "summary.json") == \
            {"status": "preempted", "error": "signal 15"}
        with pytest.raises(OSError) as info:
            runs.write_summary(tmp_path, {"status": "finished", "metrics": {"acc": 1.0}})
        assert runs.disk_full(info.value) is not None
        summary = runs.read_json(tmp_path / "summary.json")
        assert summary["status"] == "failed"
        assert summary["error"].startswith("no space left on device")
    assert not (tmp_path / runs.RESERVE).exists()


DISK_FULL_DRIVER = textwrap.dedent("""
    import errno, os, sys
    import torch
    import playground.cli as cli

    full, real_write = [], cli.atomic_write

    def no_space(path):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    def save(obj, f, *args, **kwargs):  # the first checkpoint finds the disk full ...
        full.append(True)
        no_space(getattr(f, "name", f))

    def atomic_write(path, data):  # ... and every atomic write after it
        if full:
            no_space(path)
        return real_write(path, data)

    torch.save, cli.atomic_write = save, atomic_write
    from playground.run.train import main
    sys.argv = ["playground-train", *sys.argv[1:]]
    main()
""")


@pytest.mark.slow
def test_a_full_disk_ends_the_run_failed_in_one_line(tmp_path):
    """The disk fills at the first checkpoint and stays full: the run ends with exit 1 and one
    line naming the run, the cause and the file; summary.json says failed: no space left on
    device; what was written before is intact and the checkpoint's temp file is gone."""
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-c", DISK_FULL_DRIVER, *TINY, "train.steps=10",
                           f"out_dir={out}"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if "no space left on device" in line]
    assert len(lines) == 1
    assert lines[0].startswith(f"playground-train: {out}: failed: no space left on device")
    assert "step_00000003.pt" in lines[0]
    summary = runs.read_json(out / "summary.json")
    assert summary["status"] == "failed" and summary["error"].startswith("no space left on device")
    assert [r["step"] for r in runs.MetricsLog(out / "metrics.jsonl").records()] == [1, 2, 3]
    assert OmegaConf.load(out / "config.yaml").train.steps == 10
    assert list((out / "checkpoints").iterdir()) == [] and not (out / runs.RESERVE).exists()



OOM_DRIVER = textwrap.dedent("""
    import sys
    import torch
    import playground.run.loop as loop

    real_step, calls = loop.train_step, []

    def step(*args, **kwargs):  # the GPU runs out of memory at step 4, under a wrapper
        calls.append(1)
        if len(calls) == 4:
            try:
                raise torch.OutOfMemoryError(
                    "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
                    "of 79.19 GiB of which 1.06 GiB is free. Process 4242 has 30.00 GiB memory "
                    "in use. Of the allocated memory 45.1 GiB is allocated by PyTorch. If ...")
            except torch.OutOfMemoryError as err:
                raise RuntimeError("compiled step failed") from err
        return real_step(*args, **kwargs)

    loop.train_step = step
    from playground.run.train import main
    sys.argv = ["playground-train", *sys.argv[1:]]
    main()
""")


def test_the_gpu_out_of_memory_ends_the_run_failed_in_one_line(tmp_path):
    """CUDA out of memory (here behind the error of a wrapper, as compilation raises it) ends
    the run with exit 1 and one line: PyTorch's account of the GPU's memory, the processes
    holding it included, and what lets the same command resume; summary.json says failed: out
    of GPU memory; the same command then resumes from the checkpoint before it."""
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-c", OOM_DRIVER, *TINY, "train.steps=10",
                           f"out_dir={out}"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if "out of GPU memory" in line]
    assert len(lines) == 1, done.stderr[-3000:]
    assert lines[0].startswith(f"playground-train: {out}: failed: out of GPU memory: CUDA out of "
                               "memory. Tried to allocate 2.00 GiB.")
    assert "Process 4242 has 30.00 GiB memory in use" in lines[0]
    assert "Of the allocated" not in lines[0] and "per_gpu" in lines[0]
    summary = runs.read_json(out / "summary.json")
    assert summary["status"] == "failed" and summary["error"].startswith("out of GPU memory: CUDA")
    assert "step_00000003.pt" in {p.name for p in (out / "checkpoints").iterdir()}
    again = subprocess.run([sys.executable, "-m", "playground.run.train", *TINY,
                            "train.steps=10", f"out_dir={out}"],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "resum" in again.stdout.lower(), again.stdout[-2000:]
    assert runs.read_json(out / "summary.json")["status"] == "finished"

# -- sweeps ----------------------------------------------------------------------------------------

SWEEP_FILE = """
name: {name}
variants:
{variants}
grid: {{seed: [0]}}
scales:
  cpu:
    overrides: {{train: cpu, train.steps: {steps}, train.warmup_steps: 0, train.batch_size: 8,
                train.eval_every: 0, train.log_every: 1, train.ckpt_every: 3, task.eval_size: 16,
                wandb.mode: disabled, train.device: cpu, size: 2L64D}}
    rows:
      - {{panel: p, task: depo_tiny, task.N: 8, task.V: 8, task.context: 96}}
"""


def sweep_file(tmp_path: Path, name: str, variants: dict[str, str], steps: int) -> list[str]:
    path = tmp_path / f"{name}.yaml"
    listed = "\n".join(f"  {k}: {v}" for k, v in variants.items())
    path.write_text(SWEEP_FILE.format(name=name, steps=steps, variants=listed))
    return [sys.executable, "-m", "playground.sweep.cli", str(path), "scale=cpu"]


@pytest.mark.slow
def test_a_variant_that_does_not_compose_is_recorded_and_the_rest_runs(tmp_path):
    """launcher=basic, one variant with a misspelt key: that run is not launched, and says so in
    one line (its variant and the key) and in .logs/not_launched.json; the other variant's
    multirun runs and finishes; exit 1. A rerun keeps the first attempt's log."""
    cmd = sweep_file(tmp_path, "broken", {"good": "{canon: none}",
                                          "typo": "{canon: none, model.canon.kernal: 3}"}, steps=3)
    done = subprocess.run([*cmd, "launcher=basic"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    line = [x for x in done.stderr.splitlines() if "not launched" in x]
    assert len(line) == 1 and "variant=typo" in line[0] and "model.canon.kernal" in line[0]
    folder = tmp_path / "results" / "broken_cpu"
    record = runs.read_json(folder / ".logs" / "not_launched.json")["runs"]
    assert len(record) == 1 and "variant=typo" in record[0]["overrides"]
    assert "kernal" in record[0]["error"]
    assert [s["status"] for s in map(runs.read_json, folder.glob("*/summary.json"))] == ["finished"]
    first = folder / ".logs" / "multirun_p_good.1.log"
    assert "finished" in first.read_text()
    again = subprocess.run([*cmd, "launcher=basic"], cwd=tmp_path, capture_output=True, text=True,
                           timeout=300)
    second = folder / ".logs" / "multirun_p_good.2.log"
    assert again.returncode == 1 and "already finished" in second.read_text()
    assert "finished" in first.read_text()


@pytest.mark.slow
def test_a_killed_run_is_recorded_interrupted_and_each_attempt_keeps_its_log(tmp_path):
    """launcher=local: the run's process is killed with SIGKILL mid-run. The launcher records it
    interrupted (summary.json said running; its lock is free), naming the signal and the log; the
    rerun resumes it to the end in a second log, the first kept as it was."""
    cmd = sweep_file(tmp_path, "one", {"good": "{canon: none}"}, steps=60)
    sweep = subprocess.Popen([*cmd, "launcher=local"], cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    folder, logs = tmp_path / "results" / "one_cpu", []
    deadline = time.time() + 240
    while time.time() < deadline and sweep.poll() is None:
        logs = list(folder.glob("*/metrics.jsonl"))
        if logs and len(runs.MetricsLog(logs[0]).records()) >= 4 and \
                (logs[0].parent / runs.WRITER).exists():
            break
        time.sleep(0.05)
    run = logs[0].parent
    os.kill(runs.read_json(run / runs.WRITER)["pid"], signal.SIGKILL)
    out, _ = sweep.communicate(timeout=120)
    assert sweep.returncode == 1 and "killed by SIGKILL" in out, out
    assert "recorded as interrupted" in out
    summary = runs.read_json(run / "summary.json")
    first = folder / ".logs" / f"{run.name}.1.log"
    assert summary["status"] == "interrupted"
    assert "SIGKILL" in summary["error"] and first.name in summary["error"]
    assert not (run / runs.WRITER).exists() and not (run / runs.RESERVE).exists()
    kept = first.read_text()
    again = subprocess.run([*cmd, "launcher=local"], cwd=tmp_path, capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stdout[-2000:]
    assert runs.read_json(run / "summary.json")["status"] == "finished"
    assert first.read_text() == kept
    assert "resumed from step" in (folder / ".logs" / f"{run.name}.2.log").read_text()


def test_record_end_marks_only_runs_whose_writer_is_gone(tmp_path):
    """A summary that says running with its lock free is interrupted; with its lock held, or a
    fresh heartbeat from another host, it is left alone; no summary and an error: failed (killed:
    interrupted); a clean exit with nothing to record leaves nothing (not even the folder)."""
    out = tmp_path / "run"
    out.mkdir()
    runs.write_json(out / "summary.json", {"status": "running", "step": 4})
    with runs.writer_lock(out):
        assert runs.record_end(out, -9) is None
    runs.write_json(out / runs.WRITER, {"pid": 1, "host": "elsewhere", "since": "now"})
    assert runs.record_end(out, -9) is None
    assert runs.read_json(out / "summary.json")["status"] == "running"
    old = time.time() - 4 * runs.HEARTBEAT_S
    os.utime(out / runs.WRITER, (old, old))  # its heartbeat stopped: the writer there is gone
    assert runs.record_end(out, -9, Path("x.log")) == "interrupted"
    summary = runs.read_json(out / "summary.json")
    assert summary["step"] == 4 and "killed by SIGKILL; its output: x.log" in summary["error"]
    assert runs.record_end(tmp_path / "never", 0) is None and not (tmp_path / "never").exists()
    assert runs.record_end(tmp_path / "crashed", 1) == "failed"
    assert runs.record_end(tmp_path / "killed", -15) == "interrupted"
    assert "exit status 1" in runs.read_json(tmp_path / "crashed" / "summary.json")["error"]


def test_multirun_commands_launch_the_rest_of_a_group_one_by_one():
    """A (row, variant) group with a run that cannot be launched: its other runs go one multirun
    each; whole groups keep their comma sweep."""
    from playground.sweep.launch import attempt_log, multirun_commands
    from playground.sweep.spec import find_sweep_file, load_sweep

    sweep = load_sweep(find_sweep_file("nope"), "cpu", extra=["seed=0,1"])
    runs_ = sweep.runs()
    assert len(runs_) == 4
    whole = multirun_commands(sweep, "basic")
    assert [i for _, _, i in whole] == [[0, 1], [2, 3]] and "seed=0,1" in whole[0][1]
    split = multirun_commands(sweep, "basic", frozenset({0}))
    assert [i for _, _, i in split] == [[1], [2, 3]]
    assert split[0][1][4:] == runs_[1] and split[0][0].endswith("_run1")
    assert attempt_log(Path("/nonexistent"), "x").name == "x.1.log"
