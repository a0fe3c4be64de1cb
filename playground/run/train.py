"""``playground-train``: the Hydra entry point of the one training loop (``playground.run.loop``).

    playground-train                                   # the embedded default (small CPU Depo run)
    playground-train task=depo1 size=12L768D canon=ABCD train.lr=1e-3
    playground-train -m size=8L512D,12L768D canon=none,ABCD   # a Hydra multirun

A run directory holds ``config.yaml``, ``metrics.jsonl``, ``summary.json`` and ``checkpoints/``.
Running the same config again resumes it (or skips it when finished). In a multirun a run that
fails, diverges or has an invalid config is recorded in its ``summary.json`` and the sweep goes
on; a preemption signal checkpoints the current run and stops the sweep (rerun to continue).
"""

from __future__ import annotations

import dataclasses
import math
import sys
import traceback
from datetime import datetime, timezone
from pathlib import Path

import hydra
import torch
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from playground.cli import check_writable, fail
from playground.config import CONF_DIR, Config, check_group_options, register, to_objects, upgrade
from playground.data.packing import check_fits, count_windows, shard_size
from playground.errors import ConfigError
from playground.run import evaluate as ev
from playground.run import rundir as runs
from playground.run.device import is_main, teardown, world
from playground.run.loop import Diverged, Preempted, Trainer
from playground.tasks import Task, build_task


class Mirror:
    """Optional Weights & Biases mirror. Reports never read from it. Its mode is
    ``WandbConfig.resolved_mode``: an explicit ``wandb.mode``, else ``WANDB_MODE`` /
    ``WANDB_DISABLED`` from the environment, else offline. Disabled: wandb is not even imported."""

    def __init__(self, cfg: Config, container: dict):
        self.run = None
        mode = cfg.wandb.resolved_mode()  # on every rank: a bad WANDB_MODE fails them all alike
        if mode == "disabled" or not is_main():
            return
        try:
            import wandb
        except ImportError:
            print("wandb is not installed; continuing without the mirror", file=sys.stderr)
            return
        self.run = wandb.init(project=cfg.wandb.project, name=cfg.run_name, dir=cfg.out_dir,
                              mode=mode, config=container)

    def log(self, record: dict, step: int) -> None:
        if self.run is not None:
            self.run.log(record, step=step)

    def finish(self) -> None:
        if self.run is not None:
            self.run.finish()


def resolve_steps(cfg: Config, task: Task) -> Config:
    """``train.steps=0`` asks the task for its step count: a fixed one (e.g. Lano's recipe), or
    the steps that cover exactly the training examples it prescribes (Capo: N·E biographies)."""
    if cfg.train.steps:
        return cfg
    batch = cfg.train.batch_size
    steps, why = task.train_steps(batch), "steps"
    if not steps and (examples := task.train_examples()):
        windows, measured = count_windows(task, examples, shard_size(task, cfg.data.shard_examples),
                                          cfg.data.packing)
        steps = math.ceil(windows / batch)
        how = "counted" if measured == examples else f"estimated from the first {measured:,}"
        why = (f"steps: {examples:,} training examples in {windows:,} windows of {cfg.task.context} "
               f"tokens ({how})")
    if not steps:
        raise ConfigError(f"train.steps=0 is invalid for task {cfg.task.name!r}: it prescribes no "
                          "step count; set train.steps")
    print(f"train.steps=0: the task prescribes {steps:,} {why}, at batch size {batch}")
    cfg.train = dataclasses.replace(cfg.train, steps=steps)
    return cfg


def check_same_run(out: Path, container: dict) -> None:
    """Refuse to resume or skip a run directory that holds a different configuration."""
    path = out / "config.yaml"
    if not path.exists():
        return
    try:
        stored = OmegaConf.to_container(OmegaConf.load(path))
    except Exception as err:  # noqa: BLE001 - YAML, encoding or OmegaConf errors alike
        raise ConfigError(f"{path} is damaged ({type(err).__name__}); if this command is the run's own, "
                          "delete that file and run again: the run resumes from its checkpoints and "
                          "writes the file anew") from None
    diff = runs.config_differences(upgrade(stored), container)
    if diff:
        raise ConfigError(f"{out} already holds a run with a different config ({'; '.join(diff)}). "
                          "Choose another run_name= or sweep=, or pass train.resume=never to replace it.")


def finished_summary(out: Path) -> dict | None:
    path = out / "summary.json"
    if path.exists():
        try:
            summary = runs.read_json(path)
        except (ValueError, UnicodeDecodeError) as err:
            raise ConfigError(f"{path} is damaged ({type(err).__name__}); delete it and run again: the run "
                              "resumes from its checkpoints (a finished run trains its last steps again "
                              "from the newest checkpoint) and writes it anew") from None
        if isinstance(summary, dict) and summary.get("status") == "finished":
            return summary
    return None


def run(dcfg: DictConfig) -> dict:
    """Train one run described by a composed config; returns its summary. The task is built
    here, once, and handed to whatever needs it."""
    cfg = to_objects(dcfg)
    task = build_task(cfg.task)
    check_fits(task, cfg.data.packing)
    cfg = resolve_steps(cfg, task)
    scales = list(cfg.train.length_scales)
    longer = ev.longer_tasks(task, scales, "train.length_scales")  # checked before any compute
    out = Path(cfg.out_dir)
    container = OmegaConf.to_container(dcfg, resolve=True)
    if not is_main():  # data parallel: rank 0 holds the run directory's lock for all ranks
        return _run(cfg, task, container, out, scales, longer)
    check_writable(out, "out_dir")
    out.mkdir(parents=True, exist_ok=True)
    with runs.writer_lock(out):  # one writer per run directory (a second is refused at once)
        if stale := runs.clean_stale(out):
            print(f"{out}: removed {len(stale)} file(s) a killed run left ({', '.join(p.name for p in stale)})")
        return _run(cfg, task, container, out, scales, longer)


def _run(cfg: Config, task: Task, container: dict, out: Path, scales: list, longer: list) -> dict:
    if cfg.train.resume == "auto":
        check_same_run(out, container)
        if (done := finished_summary(out)) is not None:
            print(f"{out}: already finished ({done.get('primary_metric')}={done.get('primary')}); "
                  "skipping. Use train.resume=never to start it again.")
            return done
    main = is_main()  # data parallel: only rank 0 writes the run directory
    if main:
        out.mkdir(parents=True, exist_ok=True)
        runs.atomic_write(out / "config.yaml", OmegaConf.to_yaml(container).encode())
    summary_path = out / "summary.json"
    base = {"git_sha": runs.git_sha(), "git_dirty": runs.git_dirty(), "config_hash": runs.config_hash(container),
            "versions": runs.versions(), "started": datetime.now(timezone.utc).isoformat()}
    trainer = None
    try:
        trainer = Trainer(cfg, task)
        base.update(record=runs.run_record(cfg), steps=cfg.train.steps,
                    params=trainer.model.param_counts(), device=str(trainer.device), world_size=world()[1],
                    kernels=trainer.model.kernel_paths(trainer.device),
                    deterministic=torch.are_deterministic_algorithms_enabled())
        if main:
            runs.write_json(summary_path, {**base, "status": "running"})
        metrics = train_with_mirror(trainer, cfg, container)
        if main and scales:
            rows = ev.length_gen_rows(trainer.model, scales, longer, cfg.train.eval_batch_size)
            ev.write_length_gen(out / "length_gen.csv", rows)
    except BaseException as err:
        facts = end_facts(trainer) if trainer is not None else {}
        if main:
            runs.write_json(summary_path, {**base, **facts, "status": status_of(err),
                                           "error": f"{type(err).__name__}: {err}"})
        raise
    summary = {**base, **end_facts(trainer), "status": "finished", "metrics": metrics,
               "primary_metric": trainer.task.primary_metric,
               "primary": metrics.get(trainer.task.primary_metric)}
    if main:
        runs.write_json(summary_path, summary)
        print(f"{out}: finished; {summary['primary_metric']}={summary['primary']}")
    return summary


def train_with_mirror(trainer: Trainer, cfg: Config, container: dict) -> dict:
    mirror = Mirror(cfg, container)
    try:
        return trainer.fit(mirror)
    finally:
        mirror.finish()


def status_of(err: BaseException) -> str:
    if isinstance(err, Preempted):
        return "preempted"  # resumable: rerun the same command
    if isinstance(err, Diverged):
        return "diverged"
    return "interrupted" if isinstance(err, KeyboardInterrupt) else "failed"


def end_facts(trainer: Trainer) -> dict:
    peak = torch.cuda.max_memory_allocated(trainer.device) if trainer.device.type == "cuda" else None
    train_logs = [r for r in trainer.log.records() if r.get("split") == "train"]
    return {"step": trainer.step, "tokens": trainer.tokens_seen, "wall_time_s": trainer.train_time,
            "tokens_per_s": trainer.tokens_seen / max(trainer.train_time, 1e-9),
            "peak_memory_bytes": peak, "final_loss": train_logs[-1]["loss"] if train_logs else None,
            "skipped_steps": trainer.skipped, "finished": datetime.now(timezone.utc).isoformat()}


def record_invalid(cfg: DictConfig, err: ConfigError) -> None:
    """In a sweep, an invalid point is recorded in its run directory and the sweep goes on."""
    try:
        out = Path(cfg.out_dir)
    except Exception:  # noqa: BLE001 - the run name itself could not be formed
        print(f"invalid sweep point (no run directory): {err}", file=sys.stderr)
        return
    runs.write_json(out / "summary.json", {"status": "invalid", "error": str(err),
                                            "finished": datetime.now(timezone.utc).isoformat()})
    print(f"{out}: invalid config, recorded; the sweep goes on:\n{err}", file=sys.stderr)


@hydra.main(config_path=str(CONF_DIR), config_name="config", version_base=None)
def _hydra_main(cfg: DictConfig) -> float | None:
    sweep = HydraConfig.get().mode == RunMode.MULTIRUN
    try:
        return run(cfg).get("primary")
    except runs.RunLocked as err:  # another process writes this run: leave it alone
        if sweep:
            print(f"{err}; the sweep goes on", file=sys.stderr)
            return None
        fail("playground-train", str(err))
    except ConfigError as err:
        if sweep:
            record_invalid(cfg, err)
            return None
        out = Path(cfg.out_dir)
        if out.is_dir() and not any(out.iterdir()):
            out.rmdir()  # Hydra made it before the config was checked; leave nothing behind
        fail("playground-train", str(err))
    except Preempted as err:
        print(f"{err}", file=sys.stderr)
        raise SystemExit(128 + err.signum) from None
    except Diverged as err:  # recorded as diverged in summary.json by run(); one line, no traceback
        print(f"playground-train: {cfg.out_dir}: diverged: {err} (recorded in summary.json)", file=sys.stderr)
        if sweep:
            return None
        raise SystemExit(1) from None
    except Exception:
        if not sweep:
            raise
        traceback.print_exc()
        print(f"{cfg.out_dir}: failed (recorded in summary.json); the sweep goes on", file=sys.stderr)
        return None


def main() -> None:
    register()
    try:
        check_group_options(sys.argv[1:])
        # Hydra makes the run directory before any code of ours runs: check where it goes first
        # (out_dir= as given, else the default's top folder, results/ under the working directory)
        given = [a.partition("=")[2] for a in sys.argv[1:] if a.startswith("out_dir=")]
        check_writable(Path(given[-1] if given else "results"), "out_dir")
    except ConfigError as err:
        fail("playground-train", str(err))
    try:
        _hydra_main()
    finally:
        teardown()


if __name__ == "__main__":
    main()
