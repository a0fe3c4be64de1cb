"""``playground-train``: the Hydra entry point of the one training loop (``playground.run.loop``).

    playground-train                                   # the embedded default (small CPU Depo run)
    playground-train task=depo1 size=12L768D canon=ABCD train.lr=1e-3
    playground-train -m size=8L512D,12L768D canon=none,ABCD   # a Hydra multirun

A run directory holds ``config.yaml``, ``metrics.jsonl``, ``summary.json`` (with the command line),
``train.log`` (what the run printed) and ``checkpoints/`` (each holding the resolved config too).
Running the same config again resumes it (or skips it when finished). In a multirun a run that
fails, diverges or has an invalid config is recorded in its ``summary.json`` and the sweep goes
on; a preemption signal checkpoints the current run and stops the sweep (rerun to continue).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
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
from playground.config import (
    CONF_DIR,
    Config,
    check_group_options,
    compose,
    plugin_overrides,
    register,
    to_objects,
    upgrade,
)
from playground.data.packing import check_fits, count_windows, shard_size
from playground.errors import ConfigError
from playground.run import evaluate as ev
from playground.run import rundir as runs
from playground.run.budget import check_cost, check_memory, oom_text
from playground.run.device import is_main, teardown, world
from playground.run.loop import Diverged, Preempted, Trainer
from playground.run.runlog import NAME as LOG_NAME
from playground.run.runlog import RunLog
from playground.tasks import Task, build_task


class Mirror:
    """Optional Weights & Biases mirror (the ``wandb`` extra). Reports never read from it. Its
    mode is ``WandbConfig.resolved_mode``: an explicit ``wandb.mode``, else ``WANDB_MODE`` /
    ``WANDB_DISABLED`` from the environment, else offline. Disabled: wandb is not even imported."""

    def __init__(self, cfg: Config, container: dict):
        self.run = None
        mode = cfg.wandb.resolved_mode()  # on every rank: a bad WANDB_MODE fails them all alike
        if mode == "disabled" or not is_main():
            return
        try:
            import wandb
        except ImportError:  # optional (the wandb extra): a note only where a mode was asked for
            if cfg.wandb.mode or os.environ.get("WANDB_MODE"):
                print("wandb is not installed (pip install 'canon-playground[wandb]'); continuing "
                      "without the mirror", file=sys.stderr)
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
        why = (f"steps: {examples:,} training examples in {windows:,} windows of "
               f"{cfg.task.context} tokens ({how})")
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
        raise ConfigError(f"{path} is damaged ({type(err).__name__}); if this command is the run's "
                          "own, delete that file and run again: the run resumes from its "
                          "checkpoints and writes the file anew") from None
    diff = runs.config_differences(upgrade(stored), container)
    if diff:
        raise ConfigError(f"{out} already holds a run with a different config ({'; '.join(diff)}). "
                          "Choose another run_name= or sweep=, or pass train.resume=never to "
                          "replace it.")


def finished_summary(out: Path) -> dict | None:
    path = out / "summary.json"
    if path.exists():
        try:
            summary = runs.read_json(path)
        except (ValueError, UnicodeDecodeError) as err:
            raise ConfigError(f"{path} is damaged ({type(err).__name__}); delete it and run again: "
                              "the run resumes from its checkpoints (a finished run trains its "
                              "last steps again from the newest checkpoint) "
                              "and writes it anew") from None
        if isinstance(summary, dict) and summary.get("status") == "finished":
            return summary
    return None


def checked_config(dcfg: DictConfig) -> tuple[Config, Task, list[Task]]:
    """The checks of a run that need no device (a sweep makes them of every run before it
    launches any, ``sweep.launch.plan``): the config's values, the task's examples against
    ``task.context``, the longer tasks of ``train.length_scales``. Returns the typed config, the
    task and the longer tasks."""
    cfg = to_objects(dcfg)
    task = build_task(cfg.task)
    check_fits(task, cfg.data.packing)
    return cfg, task, ev.longer_tasks(task, list(cfg.train.length_scales), "train.length_scales")


def checked(dcfg: DictConfig, warn: bool = True) -> tuple[Config, Task, list[Task]]:
    """Every check a run makes before anything is written (:func:`preflight` makes them before
    Hydra makes the run directory; a multirun's job for its own point): :func:`checked_config`'s,
    then the device and the memory the run needs (``budget.check_memory``: refused beyond the
    device's whole memory; beyond what is free, a warning, printed if ``warn``). Returns the
    typed config, the task and the longer tasks."""
    cfg, task, longer = checked_config(dcfg)
    if (warning := check_memory(cfg, len(task.vocab))) and warn:
        print(warning, file=sys.stderr)
    return cfg, task, longer


def run(dcfg: DictConfig, log: RunLog | None = None) -> dict:
    """Train one run described by a composed config; returns its summary. The task is built
    here, once, and handed to whatever needs it. ``log`` (rank 0, holding the run's lock) goes
    to the run's ``train.log``."""
    cfg, task, longer = checked(dcfg)
    cfg = resolve_steps(cfg, task)
    scales = list(cfg.train.length_scales)
    out = Path(cfg.out_dir)
    container = OmegaConf.to_container(dcfg, resolve=True)
    if not is_main():  # data parallel: rank 0 holds the run directory's lock for all ranks
        if log is not None:
            log.discard()
        return _run(cfg, task, container, out, scales, longer)
    check_writable(out, "out_dir")
    out.mkdir(parents=True, exist_ok=True)
    # one writer per run directory (a second is refused at once), with disk space held for the
    # summary that records how the run ends (runs.write_summary: a full disk)
    with runs.writer_lock(out), runs.reserved_space(out):
        if log is not None:
            log.attach(out / LOG_NAME, fresh=cfg.train.resume == "never")
        if stale := runs.clean_stale(out):
            print(f"{out}: removed {len(stale)} file(s) a killed run left "
                  f"({', '.join(p.name for p in stale)})")
        return _run(cfg, task, container, out, scales, longer)


def _run(cfg: Config, task: Task, container: dict, out: Path, scales: list, longer: list) -> dict:
    if cfg.train.resume == "auto":
        check_same_run(out, container)
        if (done := finished_summary(out)) is not None:
            print(f"{out}: already finished ({done.get('primary_metric')}={done.get('primary')}); "
                  "skipping. Use train.resume=never to start it again.")
            return done
    main = is_main()  # data parallel: only rank 0 writes the run directory
    if main and (warning := check_cost(cfg, len(task.vocab))):  # a run too big for a CPU
        print(warning, file=sys.stderr, flush=True)
    if main and (note := check_fits(task, cfg.data.packing)):  # aligned_drop's count
        print(note)
    if main:
        out.mkdir(parents=True, exist_ok=True)
        runs.atomic_write(out / "config.yaml", OmegaConf.to_yaml(container).encode())
    summary_path = out / "summary.json"
    base = {"git_sha": runs.git_sha(), "git_dirty": runs.git_dirty(),
            "config_hash": runs.config_hash(container), "versions": runs.versions(),
            "started": datetime.now(timezone.utc).isoformat(), **command_line()}
    trainer = None
    try:
        trainer = Trainer(cfg, task, container)
        base.update(record=runs.run_record(cfg), steps=cfg.train.steps,
                    params=trainer.model.param_counts(), device=str(trainer.device),
                    **runs.placement(trainer.device),
                    world_size=world()[1], kernels=trainer.model.kernel_paths(trainer.device),
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
            runs.write_summary(out, {**base, **facts, "status": status_of(err),
                                     "error": error_text(err)})
        raise
    summary = {**base, **end_facts(trainer), "status": "finished", "metrics": metrics,
               "primary_metric": trainer.task.primary_metric,
               "primary": metrics.get(trainer.task.primary_metric)}
    if main:
        runs.write_summary(out, summary)
        print(f"{out}: finished; {summary['primary_metric']}={summary['primary']}")
    return summary


ARGV_ENV = "PLAYGROUND_ARGV"  # main()'s command line, as JSON, for jobs a launcher runs elsewhere


def command_line() -> dict:
    """``argv``: the command as given (``main`` puts it in the environment, which a launcher's
    job processes inherit; else this process's); ``overrides``: this job's Hydra overrides as
    given (a multirun's, one point of the sweep), or None outside Hydra."""
    argv = json.loads(os.environ[ARGV_ENV]) if ARGV_ENV in os.environ else list(sys.argv)
    overrides = list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else None
    return {"argv": argv, "overrides": overrides}


def train_with_mirror(trainer: Trainer, cfg: Config, container: dict) -> dict:
    mirror = Mirror(cfg, container)
    try:
        return trainer.fit(mirror)
    finally:
        mirror.finish()


def error_text(err: BaseException) -> str:
    """summary.json's ``error``: ``no space left on device (writing PATH)`` for a full disk,
    ``out of GPU memory: …`` for CUDA's (``budget.oom_text``), else the exception's type and
    message."""
    return runs.disk_full_text(err) or oom_text(err) or f"{type(err).__name__}: {err}"


def resumable_text(err: BaseException) -> str | None:
    """One line for a failure the same command resumes from once its cause is gone (a full disk,
    the GPU out of memory): what failed and what to do; None for any other."""
    if (full := runs.disk_full_text(err)) is not None:
        return (f"{full}; free some space, then run the same command again: it resumes from the "
                "newest intact checkpoint")
    if (oom := oom_text(err)) is not None:
        return (f"{oom}; with fewer processes on the GPU (a sweep's per_gpu) or a smaller "
                "train.micro_batch_size, the same command resumes from the newest intact "
                "checkpoint")
    return None


def status_of(err: BaseException) -> str:
    if isinstance(err, Preempted):
        return "preempted"  # resumable: rerun the same command
    if isinstance(err, Diverged):
        return "diverged"
    return "interrupted" if isinstance(err, KeyboardInterrupt) else "failed"


def end_facts(trainer: Trainer) -> dict:
    """What a run's end records beside its status: steps, tokens, time and rate, the peak GPU
    memory its tensors took (``peak_memory_bytes``) and the caching allocator held from the GPU
    (``peak_reserved_bytes``, what runs sharing a GPU leave each other), the last loss."""
    cuda = trainer.device.type == "cuda"
    peak = torch.cuda.max_memory_allocated(trainer.device) if cuda else None
    reserved = torch.cuda.max_memory_reserved(trainer.device) if cuda else None
    train_logs = [r for r in trainer.log.records() if r.get("split") == "train"]
    return {"step": trainer.step, "tokens": trainer.tokens_seen, "wall_time_s": trainer.train_time,
            "tokens_per_s": trainer.tokens_seen / max(trainer.train_time, 1e-9),
            "peak_memory_bytes": peak, "peak_reserved_bytes": reserved,
            "final_loss": train_logs[-1]["loss"] if train_logs else None,
            "skipped_steps": trainer.skipped, "compile": trainer.compile_facts(),
            "finished": datetime.now(timezone.utc).isoformat()}


def record_invalid(cfg: DictConfig, err: ConfigError, log: RunLog) -> None:
    """In a sweep, an invalid point is recorded in its run directory and the sweep goes on."""
    try:
        out = runs.locate(cfg)
    except ConfigError:  # its run directory cannot be formed (e.g. run_name=: the sweep's folder)
        print(f"invalid sweep point (no run directory): {err}", file=sys.stderr)
        return
    runs.write_json(out / "summary.json", {"status": "invalid", "error": str(err), **command_line(),
                                            "finished": datetime.now(timezone.utc).isoformat()})
    log.attach(out / LOG_NAME)
    print(f"{out}: invalid config, recorded; the sweep goes on:\n{err}", file=sys.stderr)


@hydra.main(config_path=str(CONF_DIR), config_name="config", version_base=None)
def _hydra_main(cfg: DictConfig) -> float | None:
    with RunLog() as log:  # the job's train.log (rank 0, once it holds the run's lock)
        return _job(cfg, log)


def _job(cfg: DictConfig, log: RunLog) -> float | None:
    sweep = HydraConfig.get().mode == RunMode.MULTIRUN
    try:
        return run(cfg, log).get("primary")
    except runs.RunLocked as err:  # another process writes this run: leave it alone
        if sweep:
            print(f"{err}; the sweep goes on", file=sys.stderr)
            return None
        fail("playground-train", str(err))
    except ConfigError as err:
        if sweep:
            record_invalid(cfg, err, log)
            return None
        out = Path(cfg.out_dir)
        if out.is_dir() and not any(out.iterdir()):
            out.rmdir()  # Hydra made it before the config was checked; leave nothing behind
        fail("playground-train", str(err))
    except Preempted as err:
        print(f"{err}", file=sys.stderr)
        raise SystemExit(128 + err.signum) from None
    except Diverged as err:  # recorded as diverged in summary.json by run(); one line, no traceback
        print(f"playground-train: {cfg.out_dir}: diverged: {err} (recorded in summary.json)",
              file=sys.stderr)
        if sweep:
            return None
        raise SystemExit(1) from None
    except Exception as err:
        if (text := resumable_text(err)) is not None:  # recorded by run() where it could be
            print(f"playground-train: {cfg.out_dir}: failed: {text}", file=sys.stderr)
            if sweep:
                return None
            raise SystemExit(1) from None
        if not sweep:
            raise
        traceback.print_exc()
        print(f"{cfg.out_dir}: failed (recorded in summary.json); the sweep goes on",
              file=sys.stderr)
        return None


def preflight(args: list[str]) -> None:
    """Refuse, before Hydra makes any directory, what the command line's run cannot be: a single
    run gets every check of :func:`checked`; each point of a multirun (``-m``) the forming of its
    run directory (``runs.locate``: Hydra needs it before any code of ours runs; the point's
    values are checked by its job, which records an invalid one and lets the sweep go on). Other
    Hydra flags (``--cfg``, ``--help``, …) are left to Hydra."""
    flags = {a for a in args if a.startswith("-")}
    overrides = [a for a in args if not a.startswith("-")]
    if not flags:
        checked(compose(overrides), warn=False)
    elif flags <= {"-m", "--multirun"}:
        for point in sweep_points(overrides):
            try:
                runs.locate(compose(point))
            except ConfigError as err:
                raise ConfigError(f"the multirun's point {' '.join(point)}: {err}") from None


def sweep_points(overrides: list[str]) -> list[list[str]]:
    """Each point of a multirun's overrides (``seed=0,1`` → ``seed=0``, ``seed=1``), as Hydra's
    basic sweeper expands them; none if they do not parse (Hydra then says why)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except HydraException:
        return []
    return [list(point) for batch in BasicSweeper.split_arguments(parsed, None) for point in batch]


def main() -> None:
    register()
    os.environ[ARGV_ENV] = json.dumps(sys.argv)  # summary.json's argv (command_line)
    try:
        sys.argv[1:] = plugin_overrides(sys.argv[1:])  # a dotted task or mixer path: its class
        check_group_options(sys.argv[1:])
        # Hydra makes the run directory before any code of ours runs: check where it goes first
        # (out_dir= as given, else the default's top folder, results/ under the working directory)
        given = [a.partition("=")[2] for a in sys.argv[1:] if a.startswith("out_dir=")]
        check_writable(Path(given[-1] if given else "results"), "out_dir")
        preflight(sys.argv[1:])
    except ConfigError as err:
        fail("playground-train", str(err))
    try:
        _hydra_main()
    finally:
        teardown()


if __name__ == "__main__":
    main()
