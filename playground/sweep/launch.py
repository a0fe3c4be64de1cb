"""Launching a sweep's runs: each in its own process on this host (``local``: ``per_gpu``
runs on each of ``gpus`` GPUs, costliest first, fault-isolated, interruptible and resumable), or
as Hydra multiruns (``basic``, or ``slurm`` through submitit). A rerun skips finished runs and
resumes interrupted ones: that is the run's own behaviour (``playground.run.train``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from playground.errors import ConfigError
from playground.run.device import HOST_RUNS
from playground.sweep.spec import Sweep

LAUNCHERS = ("basic", "local", "slurm")


def multirun_commands(sweep: Sweep, launcher: str) -> list[list[str]]:
    """One Hydra multirun per (row, variant); the grid becomes Hydra's comma sweeps."""
    extra = ["hydra/launcher=slurm"] if launcher == "slurm" else []
    commands = []
    for panel, row, row_grid in sweep.rows:
        grid = [f"{k}={','.join(v)}" for k, v in {**sweep.grid, **row_grid}.items()]
        for name, variant in sweep.variants.items():
            commands.append([sys.executable, "-m", "playground.run.train", "-m", *sweep.common, *row,
                             *variant, *grid, *sweep.labels(panel, name), *sweep.extra, f"sweep={sweep.sweep_dir}",
                             f"out_dir={sweep.folder}/${{run_name}}", *extra])
    return commands


def run_local(runs: list[list[str]], gpus: int, log_dir: Path, per_gpu: int = 1) -> int:
    """Run each run in its own process, ``per_gpu`` runs on each of ``gpus`` GPUs at a time;
    returns the number of failed runs."""
    log_dir.mkdir(parents=True, exist_ok=True)
    devices = _device_ids(gpus)
    free, active, failures = [d for _ in range(per_gpu) for d in devices], {}, 0
    slots = len(free)  # runs at once: each run's automatic loader workers take its share of the cores
    queue = [(i, runs[i]) for i in longest_first(runs)] if len(runs) > len(free) else list(enumerate(runs))
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        while queue or active:
            while queue and free:
                index, overrides = queue.pop(0)
                gpu = free.pop(0)
                env = {**os.environ, HOST_RUNS: str(slots), **({"CUDA_VISIBLE_DEVICES": gpu} if gpus else {})}
                log = open(log_dir / f"run{index:04d}.log", "w")  # noqa: SIM115 - closed when it ends
                proc = subprocess.Popen([sys.executable, "-m", "playground.run.train", *overrides],
                                        stdout=log, stderr=subprocess.STDOUT, env=env)
                active[proc] = (gpu, log, index)
            for proc in [p for p in active if p.poll() is not None]:
                gpu, log, index = active.pop(proc)
                log.close()
                free.append(gpu)
                failures += proc.returncode != 0
                print(f"run {index}: exit {proc.returncode} (log {log.name})", flush=True)
            time.sleep(0.2)
    except KeyboardInterrupt:  # SIGTERM/Ctrl-C: each run checkpoints as preempted; wait for them
        for proc in active:
            proc.send_signal(signal.SIGTERM)
        for proc, (_, log, _) in active.items():
            proc.wait()
            log.close()
        print(f"sweep interrupted: {len(active)} run(s) stopped resumably, {len(queue)} not started", flush=True)
        raise SystemExit(130) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    return failures


def longest_first(runs: list[list[str]]) -> list[int]:
    """The runs' indices, costliest first (layers × width² × training tokens of each composed
    config; ties keep the sweep's order). With more runs than slots, starting the long runs first
    keeps every slot busy to the end instead of leaving the longest runs alone at the tail."""
    from playground.config import compose

    def cost(overrides: list[str]) -> int:
        c = compose(overrides)
        return c.model.n_layers * c.model.d_model**2 * c.train.steps * c.train.batch_size * c.task.context

    costs = [cost(r) for r in runs]
    return sorted(range(len(runs)), key=costs.__getitem__, reverse=True)  # stable: ties keep order


def _device_ids(gpus: int) -> list[str]:
    """The ``gpus`` device ids the runs go to: the first of those this process may see
    (``CUDA_VISIBLE_DEVICES=2,3 playground-sweep … gpus=2`` uses GPUs 2 and 3), else 0…gpus-1."""
    if not gpus:
        return [""]
    visible = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    if not visible:
        return [str(g) for g in range(gpus)]
    if gpus > len(visible):
        raise ConfigError(f"gpus={gpus} is more than the {len(visible)} device(s) in "
                          f"CUDA_VISIBLE_DEVICES={','.join(visible)}")
    return visible[:gpus]


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def _gpu_count() -> int:
    try:
        import torch

        return torch.cuda.device_count()
    except ImportError:  # pragma: no cover - torch is a dependency
        return 0


