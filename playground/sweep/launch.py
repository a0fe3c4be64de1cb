"""Launching a sweep's runs: each in its own process on this host (``local``: ``per_gpu``
runs on each of ``gpus`` GPUs, largest cell first, fault-isolated, interruptible and resumable), or
as Hydra multiruns (``basic``, or ``slurm`` through submitit). A rerun skips finished runs and
resumes interrupted ones: that is the run's own behaviour (``playground.run.train``).

Before anything is launched every run is planned (:func:`plan`): its config composed and its run
directory formed. A run that cannot be (a misspelt key in a variant, a value of the wrong type)
is not launched, and says why in one line and in ``<log dir>/not_launched.json``; the others are
launched (in a Hydra multirun it would have stopped the whole multirun). Each attempt's output
goes to a log of its own in the log dir (``.logs/`` of the sweep's folder), never over an earlier
attempt's. When a run's process ends, a run that could not record its own end is recorded by the
launcher (``runs.record_end``): ``interrupted`` where its summary still says ``running`` (killed),
``failed`` where there is none (it ended before recording anything). The local launcher says
as each run ends how far the sweep is, with an ETA (:func:`progress_text`). With a
``deadline`` it starts a run only if the run is expected to end in time (:func:`expected_wall`):
for a machine or job that is held for a fixed time, so that no run is cut off half-way; and a
guard (:func:`guard_victim`) projects each GPU's end from its runs' measured step rates every
``GUARD_EVERY_S`` and stops, resumably, the least advanced run of a GPU projected past the
deadline, so that an estimate that was too low costs one run, not all the runs of that GPU.
Runs sharing a GPU (``per_gpu``) join one only while their expected memory fits in it
(:meth:`Slots.need`, against ``nvidia-smi``'s total less the driver's reserve:
:meth:`Slots.fits`).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from playground.cli import write_json
from playground.errors import ConfigError
from playground.run.budget import duration_text
from playground.run.device import HOST_RUNS
from playground.run.rundir import exit_text, identity, record_end
from playground.sweep.spec import Sweep

LAUNCHERS = ("basic", "local", "slurm")
NOT_LAUNCHED = "not_launched.json"  # in the log dir: the runs the last launch did not launch
# deadline=: a run's estimated wall time is multiplied by this before it is held against the
# deadline (estimates read 0.67-1.25 of the actual per panel: docs/bench/2026-11-26-cost-estimate)
DEADLINE_MARGIN = 1.5
# Once runs of a kind (mixer, task) have finished, a run of that kind is expected to take its
# estimate × the largest measured/estimated ratio among them × this margin instead; runs shorter
# than CALIBRATE_AFTER_S (start-up dominated) do not count.
CALIBRATED_MARGIN = 1.15
CALIBRATE_AFTER_S = 60.0
# deadline=: every GUARD_EVERY_S the launcher projects, from the running runs' measured step
# rates, when each GPU's last run ends, and stops (resumably) the least advanced run of a GPU
# projected past the deadline, at most one per GPU every GUARD_GAP_S (:func:`guard_victim`).
GUARD_EVERY_S = 30.0
GUARD_GAP_S = 120.0
GUARD_TAIL_S = 30.0  # after a run's last step: its final evaluation and summary
# a run's rate counts for the guard once it has done this share of its steps: its first steps run
# slower (compilation, warm-up; on an H200, Mamba2 at Depo1 245-300k tokens/s over its first 300 of
# 10,000 steps, 350-426k later, docs/bench/2026-12-03-h200-lost-holds)
GUARD_MIN_DONE = 0.1


def launcher_overrides(launcher: str) -> list[str]:
    """The Hydra overrides that pick ``launcher`` (so that its own keys, ``hydra.launcher.*``,
    compose)."""
    return ["hydra/launcher=slurm"] if launcher == "slurm" else []


@dataclass
class Planned:
    """One run of a sweep as a launcher sees it: its index in the sweep and overrides, with its
    composed config and run directory, or the error that keeps it from being launched."""

    index: int
    overrides: list[str]
    config: DictConfig | None = None
    out: Path | None = None
    error: str | None = None
    finished: bool = False  # its run directory holds the finished run (checked_finished)

    @property
    def labels(self) -> str:
        """Its place in the sweep, e.g. ``panel=depo1_K8 variant=llama_rope``."""
        return " ".join(o for o in self.overrides if o.startswith(("panel=", "variant=")))


def plan(runs: list[list[str]], extra: list[str] = ()) -> list[Planned]:
    """Compose each run's config (with ``extra``, e.g. the launcher's overrides), form its run
    directory (``runs.locate``) and make the checks the run makes first that need no device
    (``train.checked_config``: its values, its task's examples against the context), before
    anything is launched; a run for which one fails carries the error and is not launched."""
    from playground.config import Composer
    from playground.run.rundir import locate
    from playground.run.train import checked_config

    planned, compose = [], Composer()
    for index, overrides in enumerate(runs):
        try:
            config = compose([*overrides, *extra])
            out = locate(config)
            checked_config(config)
            planned.append(Planned(index, overrides, config, out))
        except ConfigError as err:
            planned.append(Planned(index, overrides, error=" ".join(str(err).split())))
    return planned


def refuse_if_none_launchable(planned: list[Planned]) -> None:
    """A ``ConfigError`` where no run of ``planned`` can be launched, every one carrying an error
    (as when an override given to every run is invalid: a misspelt key, a value no option has):
    the errors, each once, before anything is launched or written."""
    if planned and all(p.error is not None for p in planned):
        errors = list(dict.fromkeys(p.error for p in planned))
        raise ConfigError(f"none of the {len(planned)} runs can be launched: "
                          + "; ".join(errors[:3])
                          + (f" (and {len(errors) - 3} other errors)" if len(errors) > 3 else ""))


def checked_finished(run: Planned) -> Planned:
    """``run`` marked finished where its own process would skip it (``train.resume=auto``, a
    finished summary in its run directory, of the same config), so that a launch neither starts it
    nor holds its estimated time against a deadline; a run directory of a different config makes it
    a run not launched, with the error the run would give."""
    from playground.run.train import check_same_run, finished_summary

    if run.error is not None or run.config.train.resume != "auto":
        return run
    try:
        if finished_summary(run.out) is None:
            return run
        check_same_run(run.out, OmegaConf.to_container(run.config, resolve=True))
    except ConfigError as err:
        return replace(run, error=" ".join(str(err).split()))
    return replace(run, finished=True)


def report_not_launched(planned: list[Planned], log_dir: Path) -> int:
    """One line on stderr for each run not launched (its place in the sweep and why), and all of
    them in ``log_dir/not_launched.json`` (replaced at each launch, removed when none); returns how
    many."""
    bad = [p for p in planned if p.error is not None]
    for p in bad:
        print(f"run {p.index} ({p.labels}): not launched: {p.error}", file=sys.stderr, flush=True)
    path = log_dir / NOT_LAUNCHED
    if bad:
        listed = [{"index": p.index, "overrides": p.overrides, "error": p.error} for p in bad]
        write_json(path, {"time": datetime.now(timezone.utc).isoformat(), "runs": listed})
    else:
        path.unlink(missing_ok=True)
    return len(bad)


def attempt_log(log_dir: Path, name: str) -> Path:
    """``log_dir/<name>.<n>.log`` for the n-th attempt at ``name``: a rerun never writes over an
    earlier attempt's log."""
    pattern = re.compile(re.escape(name) + r"\.(\d+)\.log")
    taken = [int(m.group(1)) for p in log_dir.glob("*.log") if (m := pattern.fullmatch(p.name))]
    return log_dir / f"{name}.{max(taken, default=0) + 1}.log"


def ended(run: Planned, code: int, log: Path, label: str | None = None,
          took: float | None = None) -> tuple[str | None, str]:
    """Record what a run whose process ended with ``code`` (after ``took`` seconds, if given)
    could not (``runs.record_end``): the status recorded (or None), and the launcher's line for
    it: ``run <index>: exit …``, or with a label, ``run <label> exit …``."""
    recorded = record_end(run.out, code, log)
    how = f"exit {code}" + (f" ({exit_text(code)})" if code < 0 else "")
    how += "" if took is None else f" after {duration_text(took)}"
    head = f"run {run.index}:" if label is None else f"run {label}"
    return recorded, f"{head} {how} (log {log})" + (
        f"; recorded as {recorded} in its summary.json" if recorded else "")


def progress_text(durations: list[float], total: int, slots: int, elapsed: float) -> str:
    """How far a local sweep is ``elapsed`` seconds in, once ``len(durations)`` of its ``total``
    runs have ended (those runs' seconds each): the ETA is their mean duration × the runs left ÷
    the runs at once (``slots``, or fewer where fewer are left)."""
    left = total - len(durations)
    if not left:
        return f"all {total} run(s) ended, {duration_text(elapsed)} in all"
    eta = sum(durations) / len(durations) * left / min(slots, left)
    return f"{duration_text(elapsed)} elapsed, ETA {duration_text(eta)} ({left} run(s) left)"


def multirun_commands(sweep: Sweep, launcher: str, skip: frozenset[int] = frozenset()
                      ) -> list[tuple[str, list[str], list[int]]]:
    """One Hydra multirun per (row, variant), per size where an axis is given by size, the grid
    as Hydra's comma sweeps: (a name for its log, the command, the indices in ``sweep.runs()`` of
    its runs). Runs in ``skip`` (not launchable) are left out: the other runs of their multirun
    go one multirun each."""
    head = [sys.executable, "-m", "playground.run.train", "-m"]
    own = launcher_overrides(launcher)
    tail = [f"sweep={sweep.sweep_dir}", f"out_dir={sweep.folder}/${{run_name}}", *own]
    runs, commands, first = sweep.runs(), [], 0
    for number, (panel, row, row_grid) in enumerate(sweep.rows):
        blocks = sweep.blocks(row_grid, panel)
        for name, variant in sweep.variants.items():
            for grid in blocks:
                size = math.prod(len(v) for v in grid.values())
                mine, first = list(range(first, first + size)), first + size
                label = f"multirun_{panel or f'row{number}'}_{name}" + (
                    f"_{grid['size'][0]}" if len(blocks) > 1 else "")
                if not skip.intersection(mine):
                    sweeps = [f"{k}={','.join(v)}" for k, v in grid.items()]
                    commands.append((label, [*head, *sweep.common, *row, *variant, *sweeps,
                                             *sweep.labels(panel, name), *sweep.extra, *tail],
                                     mine))
                else:
                    commands += [(f"{label}_run{i}", [*head, *runs[i], *own], [i])
                                 for i in mine if i not in skip]
    return commands


def run_multiruns(sweep: Sweep, launcher: str, log_dir: Path) -> int:
    """Launch ``sweep`` as Hydra multiruns (:func:`multirun_commands`) one after another, its runs
    planned first (:func:`plan`); each command's output goes to the terminal and to a log of its
    own. Returns the failures: runs not launched, and commands that ended with an error."""
    planned = plan(sweep.runs(), launcher_overrides(launcher))
    refuse_if_none_launchable(planned)
    log_dir.mkdir(parents=True, exist_ok=True)
    failures = report_not_launched(planned, log_dir)
    skip = frozenset(p.index for p in planned if p.error)
    for label, command, indices in multirun_commands(sweep, launcher, skip):
        log = attempt_log(log_dir, label)
        code = _tee(command, log)
        failures += code != 0
        for i in indices:
            recorded, line = ended(planned[i], code, log)
            if code or recorded:  # a run of a failed multirun, or one killed inside it
                print(line, flush=True)
    return failures


def _tee(command: list[str], log: Path) -> int:
    """Run ``command``, its output (stdout and stderr) to ours and to ``log``; its exit status."""
    with open(log, "a") as f:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, bufsize=1)
        try:
            for line in proc.stdout:
                sys.stdout.write(line)
                sys.stdout.flush()
                f.write(line)
        except KeyboardInterrupt:  # Ctrl-C reached the multirun too: its run checkpoints; wait
            proc.wait()
            raise
        return proc.wait()


def expected_wall(config: DictConfig, sharing: int, margin: float = DEADLINE_MARGIN) -> float:
    """Seconds a run of ``config`` is expected to take on a GPU that ``sharing`` runs share: its
    estimated GPU-seconds there (``playground.sweep.cost``) × ``sharing`` × ``margin``."""
    from playground.sweep.cost import estimate

    return estimate(config, sharing).gpu_s * sharing * margin


class Slots:
    """The slots of a local launch (``per_gpu`` on each of ``devices``) and its deadline rule:
    where the next run starts and whether it is expected to end in time. The launcher and the
    dry run's :func:`simulate` share it. With ``deadline`` (seconds after the launch), a run
    starts on a GPU only if it and each run already there are expected to end before it, each
    run at ``wall(config, runs sharing the GPU)`` from moment to moment, the runs there having
    done the share of theirs their time so far gives, and no run joining after it
    (:meth:`ends`: a run that joins slows the runs there until one of them ends); the wall
    times rescaled once runs of their kind have finished (:func:`_kind`,
    ``CALIBRATED_MARGIN``). ``wall`` includes ``margin``: an estimate × the runs sharing ×
    ``margin`` (:func:`expected_wall`, the default). With ``capacity`` (GPU -> bytes of memory),
    a run joins the runs on a GPU only if their expected memory and its own fit in it
    (:meth:`need`: the estimate, ``memory(config)``, :func:`run_bytes` by default, rescaled
    once runs of its kind have recorded their peaks, :meth:`learn_memory`); a run alone always
    starts (a run too large for its device refuses itself)."""

    def __init__(self, devices: list[str], per_gpu: int, deadline: float | None = None,
                 wall=None, say=print, margin: float = DEADLINE_MARGIN,
                 capacity: dict[str, int] | None = None, memory=None):
        self.capacity, self.memory = capacity or {}, memory or run_bytes
        self.estimates: dict[int, int] = {}  # run -> its estimated GPU memory, bytes
        self.peaks: dict[tuple[str, str], float] = {}  # kind -> largest measured / estimated
        self.free = [d for _ in range(per_gpu) for d in devices]
        self.running: list[tuple[str, Planned, float]] = []  # (GPU, run, its start)
        self.deadline, self.say, self.margin = deadline, say, margin
        self.wall = wall or (lambda config, sharing: expected_wall(config, sharing, margin))
        self.walls: dict[tuple[int, int], float] = {}  # (run, runs sharing its GPU) -> seconds
        self.ratios: dict[tuple[str, str], float] = {}  # kind -> largest measured / estimated
        self.credit: dict[int, list[float]] = {}  # run -> [measured / estimated so far, since]
        self.kinds: dict[int, tuple[str, str]] = {}  # run -> its kind (_kind)
        self.floors: dict[int, float] = {}  # run -> its step's floor, seconds (:meth:`floor`)

    def expected(self, run: Planned, sharing: int) -> float:
        """Seconds ``run`` is expected to take with ``sharing`` runs on its GPU: ``wall``, or
        once runs of its kind have finished, its estimate (:meth:`estimated`) × their largest
        measured ratio × ``CALIBRATED_MARGIN``."""
        if id(run) not in self.kinds:  # read once: the deadline rule asks it often
            self.kinds[id(run)] = _kind(run.config)
        estimated, ratio = self.estimated(run, sharing), self.ratios.get(self.kinds[id(run)])
        return estimated * ratio * CALIBRATED_MARGIN if ratio else self.walls[(id(run), sharing)]

    def floor(self, run: Planned) -> float:
        """Seconds below which ``run``'s step does not go (the estimate's small-step floor,
        ``cost.floor_step``; 0 where it has none or no estimate): the guard's projection."""
        if id(run) not in self.floors:
            from playground.sweep.cost import Shape, floor_step

            try:
                self.floors[id(run)] = floor_step(Shape.of(run.config))[0]
            except (ValueError, KeyError, AttributeError):  # no estimate: compute-bound
                self.floors[id(run)] = 0.0
        return self.floors[id(run)]

    def estimated(self, run: Planned, sharing: int) -> float:
        """Seconds ``run`` is estimated to take with ``sharing`` runs on its GPU: ``wall`` less
        the margin; inf without an estimate."""
        key = (id(run), sharing)
        if key not in self.walls:
            try:
                self.walls[key] = self.wall(run.config, sharing)
            except (ValueError, KeyError, AttributeError):  # no estimate: never in time
                self.walls[key] = math.inf
        return self.walls[key] / self.margin

    def next_start(self, queue: list[Planned], elapsed: float) -> tuple[int, str, int] | None:
        """The queue's first run that may start ``elapsed`` seconds after the launch, its slot
        (the least shared GPU whose runs tolerate one more) and the runs that would share that
        GPU with it."""
        if not self.free:
            return None
        busy = [g for g, _, _ in self.running]
        sharing = {g: 1 + busy.count(g) for g in set(self.free)}
        for gpu in sorted(sharing, key=lambda g: (sharing[g], self.free.index(g))):
            for i, run in enumerate(queue):
                if self.fits(gpu, run) and (self.deadline is None
                                            or self.ends(gpu, run, elapsed) <= self.deadline):
                    return i, gpu, sharing[gpu]
        return None

    def fits(self, gpu: str, run: Planned) -> bool:
        """Whether ``run``'s expected memory and that of the runs on ``gpu`` fit in its
        ``capacity`` (True where it is not known, or the GPU has no run)."""
        here = [r for g, r, _ in self.running if g == gpu]
        if gpu not in self.capacity or not here:
            return True
        return sum(self.need(r) for r in (*here, run)) <= self.capacity[gpu]

    def memory_estimate(self, run: Planned) -> int:
        """``run``'s estimated GPU memory, bytes (``memory``; read once)."""
        if id(run) not in self.estimates:
            self.estimates[id(run)] = self.memory(run.config)
        return self.estimates[id(run)]

    def need(self, run: Planned) -> float:
        """The GPU memory ``run`` is expected to hold beside others: its estimate × the largest
        measured / estimated peak of the finished runs of its kind where above 1, +
        ``PROCESS_BYTES`` (CUDA context, allocator reserve)."""
        from playground.run.budget import PROCESS_BYTES

        ratio = max(1.0, self.peaks.get(_kind(run.config), 1.0))
        return self.memory_estimate(run) * ratio + PROCESS_BYTES

    def learn_memory(self, run: Planned) -> None:
        """Keep the largest measured / estimated peak of ``run``'s kind from its finished
        record (``summary.json``'s ``peak_reserved_bytes``, what the allocator held, where
        recorded, else ``peak_memory_bytes``: the training step's, or an evaluation's where
        that held more, as Lano's generation does), saying when it rises above 1."""
        from playground.run.train import finished_summary

        try:
            summary = finished_summary(run.out) or {}
        except ConfigError:  # a damaged summary: nothing to learn from
            return
        peak = summary.get("peak_reserved_bytes") or summary.get("peak_memory_bytes")
        if not peak or not (estimate := self.memory_estimate(run)):
            return
        kind, ratio = _kind(run.config), peak / estimate
        if ratio > self.peaks.get(kind, 0.0):
            self.peaks[kind] = ratio
            if ratio > 1.0:
                self.say(f"memory: {'/'.join(kind)} runs held up to ×{ratio:.2f} their estimated "
                         "memory; the next are expected to hold that")

    def ends(self, gpu: str, run: Planned, elapsed: float) -> float:
        """Seconds after the launch at which the last of ``gpu``'s runs would end if ``run``
        joined them ``elapsed`` seconds after it and no run after it, each run taking its
        expected time (:meth:`expected`) at the runs sharing the GPU from moment to moment; a
        run there has done the share of its expected time that its estimated share so far
        (:meth:`_credit`) gives. inf where a run there is past its expected time (nothing says
        when it ends) or has no estimate."""
        here = [r for g, r, _ in self.running if g == gpu]
        left = []  # [run, share of its expected time still to do]
        for other in here:
            done, since = self.credit[id(other)]
            estimated = self.estimated(other, len(here))
            done += (elapsed - since) / max(estimated, 1e-9)
            share = 1.0 - done * estimated / self.expected(other, len(here))
            if not share > 0:  # past its expected time, or no estimate (inf / inf)
                return math.inf
            left.append([other, share])
        left.append([run, 1.0])
        now = elapsed
        while left:
            seconds = [share * self.expected(r, len(left)) for r, share in left]
            step = min(seconds)
            if not math.isfinite(step):
                return math.inf
            now += step
            left = [[r, share * (1.0 - step / t)] for (r, share), t in zip(left, seconds)
                    if t - step > 1e-9 * max(now, 1.0)]
        return now

    def take(self, gpu: str, run: Planned, elapsed: float) -> None:
        self._credit(gpu, elapsed)
        self.free.remove(gpu)
        self.running.append((gpu, run, elapsed))
        self.credit[id(run)] = [0.0, elapsed]

    def give(self, gpu: str, run: Planned, elapsed: float) -> float:
        """Free ``run``'s slot ``elapsed`` seconds after the launch; returns its measured /
        estimated ratio: each stretch of its life over its estimate (:meth:`estimated`) at the
        runs its GPU had then, summed, so that a run that began alone and was joined by others
        is held to its estimate shared."""
        self._credit(gpu, elapsed)
        self.free.append(gpu)
        self.running = [r for r in self.running if r[1] is not run]
        return self.credit.pop(id(run))[0]

    def _credit(self, gpu: str, elapsed: float) -> None:
        """Before the runs on ``gpu`` change: add to each of them the stretch since it was last
        counted, over its estimate at the runs the GPU has had in it."""
        here = [run for g, run, _ in self.running if g == gpu]
        for run in here:
            ratio, since = self.credit[id(run)]
            estimated = max(self.estimated(run, len(here)), 1e-9)
            self.credit[id(run)] = [ratio + (elapsed - since) / estimated, elapsed]

    def calibrate(self, run: Planned, ratio: float, took: float) -> None:
        """Keep the largest measured / estimated ``ratio`` of ``run``'s kind (deadline only; the
        ratio :meth:`give` returns; of a run the guard stopped, over the share of its steps done)
        of a run that took ``took`` seconds."""
        if self.deadline is None or took < CALIBRATE_AFTER_S or not 0 < ratio < math.inf:
            return
        kind = _kind(run.config)
        if ratio > self.ratios.get(kind, 0.0):
            self.ratios[kind] = ratio
            self.say(f"deadline: {'/'.join(kind)} runs take up to ×{self.ratios[kind]:.2f} of "
                     f"their estimate; the next are expected to take their estimate × "
                     f"{self.ratios[kind] * CALIBRATED_MARGIN:.2f}")


def memory_rule_text(capacity: dict[str, int]) -> str:
    """What a local launch of runs sharing GPUs knows of their memory (``capacity``, from
    :func:`gpu_memory`) and does with it."""
    from playground.run.budget import PROCESS_BYTES, size_text

    if not capacity:
        return ("GPU memory: unknown (nvidia-smi did not answer): runs join a GPU whatever "
                "their estimated memory")
    sizes = ", ".join(f"GPU {g} {size_text(b)}" for g, b in capacity.items())
    return (f"GPU memory: {sizes}; a run joins a GPU's runs only if their expected memory fits "
            "(each: weights, gradients, AdamW states and activations, × the largest measured / "
            f"estimated peak of its kind's finished runs where above 1, + "
            f"{size_text(PROCESS_BYTES)})")


def run_bytes(config: DictConfig) -> int:
    """The GPU memory a run of ``config`` is estimated to hold (``budget.gpu_bytes``: state and
    activations); 0 where the estimate cannot read the config."""
    from playground.run.budget import gpu_bytes
    from playground.run.train import checked_config

    try:
        cfg, task, _ = checked_config(config)
        return gpu_bytes(cfg, len(task.vocab))
    except (ValueError, KeyError, AttributeError, ConfigError):
        return 0


def gpu_memory(devices: list[str]) -> dict[str, int]:
    """The memory a process can have, bytes, of each of ``devices`` (ids as ``nvidia-smi``
    numbers them): ``nvidia-smi``'s total less what the driver and firmware reserve (on an H100
    80GB HBM3, driver 580: 81,559 MiB total, of which CUDA offers 81,079); the total alone where
    the reserve is not reported; empty where ``nvidia-smi`` is not there or does not answer."""
    if shutil.which("nvidia-smi") is None:
        return {}
    for fields in ("index,memory.total,memory.reserved", "index,memory.total"):
        try:
            out = subprocess.run(["nvidia-smi", f"--query-gpu={fields}",
                                  "--format=csv,noheader,nounits"], capture_output=True,
                                 text=True, timeout=30, check=True).stdout
        except subprocess.CalledProcessError:
            continue  # an older nvidia-smi without the memory.reserved field
        except (OSError, subprocess.SubprocessError):
            return {}
        sizes = {}
        for line in out.splitlines():
            index, total, *reserved = [v.strip() for v in line.split(",")]
            if index in devices and total.isdigit():
                held = int(reserved[0]) if reserved and reserved[0].isdigit() else 0
                sizes[index] = (int(total) - held) * 2**20
        return sizes
    return {}


def in_launch_order(todo: list[Planned], slots: int) -> list[Planned]:
    """The planned runs in the order a local launch starts them: the largest cell first, a
    cell's variants together, where there are more runs than slots (:func:`longest_first`)."""
    if len(todo) <= slots:
        return list(todo)
    return [todo[i] for i in longest_first([p.overrides for p in todo], [p.config for p in todo])]


def simulate(todo: list[Planned], gpus: int, per_gpu: int, deadline: float, wall=None,
             margin: float = DEADLINE_MARGIN) -> tuple[list[tuple[Planned, float, float]],
                                                       list[Planned]]:
    """The launch ``run_local`` would make of the planned runs ``todo`` with ``deadline`` on
    ``gpus`` GPUs if every run took its estimate (``wall`` less the margin) at the runs sharing
    its GPU from moment to moment: a run with k on its GPU does 1 / (its estimate at k) of itself
    a second, so a run that starts alone and is joined ends as late as the sharing makes it
    (the measure :meth:`Slots.give` holds finished runs to, so the rescaling of their kinds, by
    1, leaves ``CALIBRATED_MARGIN``): (run, start, end) of each run that would start, in start
    order, and the runs that would not."""
    slots = Slots([str(g) for g in range(gpus)], per_gpu, deadline, wall, lambda _: None, margin)
    queue = in_launch_order(todo, len(slots.free))
    started, running, now = [], [], 0.0  # running: [run, GPU, index in started, share left]
    while True:
        while queue and (start := slots.next_start(queue, now)) is not None:
            run, gpu = queue.pop(start[0]), start[1]
            slots.take(gpu, run, now)
            running.append([run, gpu, len(started), 1.0])
            started.append((run, now, now))
        if not running:
            return started, queue
        here = {gpu: sum(r[1] == gpu for r in running) for _, gpu, _, _ in running}
        seconds = [slots.estimated(run, here[gpu]) for run, gpu, _, _ in running]
        step = min(r[3] * t for r, t in zip(running, seconds))
        now += step
        for r, t in zip(running, seconds):
            r[3] -= step / t
        for r in [r for r, t in zip(running, seconds) if r[3] * t <= 1e-9 * max(now, 1.0)]:
            running.remove(r)
            run, gpu, i, _ = r
            slots.calibrate(run, slots.give(gpu, run, now), now - started[i][1])
            started[i] = (run, started[i][1], now)


def whole_cells(groups: list[tuple[str, list[Planned]]], gpus: int, per_gpu: int,
                deadline: float, margin: float = DEADLINE_MARGIN, wall=None
                ) -> tuple[list[str], list[Planned], list[str]]:
    """Of ``groups`` (a label and its planned runs: a finding's cell), in order, those whose runs
    all start, with the runs of the groups taken before them, in a launch with ``deadline`` on
    ``gpus`` GPUs if each run took its estimate (:func:`simulate`); a group that does not fit is
    passed over for the next. Returns the labels taken, their runs (each once) and the labels
    passed over."""
    taken, runs, passed = [], [], []
    for label, group in groups:
        extra = [run for run in group if all(run is not r for r in runs)]
        if extra and simulate(runs + extra, gpus, per_gpu, deadline, wall, margin)[1]:
            passed.append(label)
            continue
        taken.append(label)
        runs += extra
    return taken, runs, passed


def train_rows(out: Path, since: float | None = None) -> list[dict]:
    """The training rows of the run writing ``out/metrics.jsonl`` ([] before it has one); with
    ``since`` (epoch seconds), those logged after it only, a row's time taken as the file's last
    write less its training time to the last row (the rows of an earlier attempt, whose time
    ends at its checkpoint, so fall before the attempt that resumed it)."""
    path = out / "metrics.jsonl"
    try:
        lines, written = path.read_text().splitlines(), path.stat().st_mtime
    except OSError:
        return []
    rows = []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:  # the line being written
            continue
        if row.get("split") == "train" and "train_time_s" in row:
            rows.append(row)
    if since is not None and rows:
        rows = [r for r in rows
                if written - (rows[-1]["train_time_s"] - r["train_time_s"]) >= since]
    return rows


def step_rate(out: Path, intervals: int = 10, since: float | None = None
              ) -> tuple[int, float] | None:
    """(last logged step, steps per second over its last ``intervals`` logged intervals) of the
    run writing ``out/metrics.jsonl``; with ``since`` (epoch seconds: when the runs sharing its GPU
    last changed), over the intervals logged after it only (:func:`train_rows`); None before
    three such training rows of one attempt."""
    rows = train_rows(out, since)[-(intervals + 1):]
    if len(rows) < 3 or rows[-1]["train_time_s"] <= rows[0]["train_time_s"]:
        return None
    return rows[-1]["step"], ((rows[-1]["step"] - rows[0]["step"])
                              / (rows[-1]["train_time_s"] - rows[0]["train_time_s"]))


def projected_end(runs: list[tuple[float, float, float]]) -> float:
    """Seconds until the last of the runs sharing one GPU ends, each run given as (steps left,
    steps per second now, its step's floor in seconds: the small-step floor of its estimate,
    0 if none). With k runs on the GPU a run's step takes the longer of k × its share of the
    GPU's compute and its floor: its compute share is its measured step time now over the runs
    now sharing (the GPU's time split evenly), its floor never above that measured step. As runs
    end, the others so speed up in proportion while compute-bound and not below their floor (on
    an H200, Llama 8L512D at Mano's 64 × 256: 282k tokens/s a run at four on the GPU, 375k at
    three, 547k alone, docs/bench/2026-12-02-h200-r5-brevo1)."""
    now, alive, k0 = 0.0, list(range(len(runs))), len(runs)
    left = [r[0] for r in runs]
    share = [1.0 / rate / k0 for _, rate, _ in runs]  # seconds of GPU compute a step
    floor = [min(f, 1.0 / rate) for _, rate, f in runs]
    while alive:
        k = len(alive)
        rates = {i: 1.0 / max(k * share[i], floor[i]) for i in alive}
        first = min(alive, key=lambda i: left[i] / rates[i])
        step = left[first] / rates[first]
        now += step
        for i in alive:
            left[i] -= step * rates[i]
        alive.remove(first)
    return now


def guard_victim(running: list[Planned], floors, time_left: float,
                 since: float | None = None, started=None) -> Planned | None:
    """The run to stop on a GPU whose ``running`` runs are projected (:func:`projected_end`, from
    each run's rate measured since the GPU's runs last changed, ``since``; ``floors(run)``: its
    step's floor in seconds) to end, with ``GUARD_TAIL_S`` more, after ``time_left`` seconds: the
    least advanced one; None if they end in time or a run has not yet measured its rate
    (start-up, or just after a run joined or left the GPU) or logged ``GUARD_MIN_DONE`` of its
    steps since its attempt began (``started(run)``: epoch seconds; None or no ``started``: its
    first row; a resumed run's first steps are as slow as a new one's)."""
    measured = []
    for run in running:
        found = step_rate(run.out, since=since)
        if found is None or not found[1] > 0:
            return None
        steps = int(run.config.train.steps)
        attempt = train_rows(run.out, started(run) if started else None)
        if not attempt or found[0] - attempt[0]["step"] < GUARD_MIN_DONE * steps:
            return None
        measured.append((run, steps, found[0], floors(run), found[1]))
    ends = projected_end([(steps - step, rate, floor)
                          for _, steps, step, floor, rate in measured])
    if ends + GUARD_TAIL_S <= time_left:
        return None
    return min(measured, key=lambda m: m[2] / m[1])[0]


def run_local(runs: list[list[str]], gpus: int, log_dir: Path, per_gpu: int = 1,
              deadline: float | None = None, wall=None, margin: float = DEADLINE_MARGIN) -> int:
    """Run each run in its own process, ``per_gpu`` runs on each of ``gpus`` GPUs at a time, its
    runs planned first (:func:`plan`) and each attempt's output in a log of its own; returns the
    failures: runs not launched, and runs whose process ended with an error. With ``deadline``
    (seconds from now), a run starts only if it is expected to end before it (:class:`Slots`: its
    estimate × the runs sharing its GPU × ``margin``); the runs that never fit are listed at the
    end, not counted as failures (the same command starts them later)."""
    planned = [checked_finished(p) for p in plan(runs)]
    refuse_if_none_launchable(planned)
    log_dir.mkdir(parents=True, exist_ok=True)
    failures = report_not_launched(planned, log_dir)
    if skipped := [p for p in planned if p.finished]:
        print(f"{len(skipped)} of {len(planned)} run(s) finished already (each a summary.json "
              "with status finished, of the same config): skipped", flush=True)
        planned = [p for p in planned if not p.finished]
    devices = _device_ids(gpus)
    capacity = gpu_memory(devices) if gpus and per_gpu > 1 else {}
    slots = Slots(devices, per_gpu, deadline, wall, lambda line: print(line, flush=True), margin,
                  capacity)
    for run in skipped if capacity else ():  # the measured peaks of the folder's finished runs
        slots.learn_memory(run)
    at_once = len(slots.free)  # the runs at once
    queue = in_launch_order([p for p in planned if p.error is None], at_once)
    total, durations, began, active = len(queue), [], time.monotonic(), {}
    guarded, stopped, halted = began, {}, set()  # the guard's last look, GPU -> its last stop,
    # and the processes it stopped
    changed = {}  # GPU -> when (epoch seconds) a run last started or ended there
    if total:
        print(f"launching {total} run(s), {min(at_once, total)} at a time; the output of each in "
              f"{log_dir}/<run>.<n>.log"
              + (f"; a run starts only if expected to end within deadline={deadline:g} s"
                 if deadline is not None else ""), flush=True)
        if per_gpu > 1 and gpus:
            print(memory_rule_text(capacity), flush=True)
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        while queue or active:
            while queue and (start := slots.next_start(
                    queue, time.monotonic() - began)) is not None:
                run, (_, gpu, _) = queue.pop(start[0]), start
                slots.take(gpu, run, time.monotonic() - began)
                # the runs that may share the host from now on: its automatic loader workers
                # take their share of the cores (the runs started earlier had a smaller one, so
                # together they stay within the cores), a run of the launch's tail a larger one
                host = min(at_once, len(active) + 1 + len(queue))
                env = {**os.environ, HOST_RUNS: str(host),
                       **({"CUDA_VISIBLE_DEVICES": gpu} if gpus else {})}
                # closed when it ends
                log = open(attempt_log(log_dir, run.out.name), "a")  # noqa: SIM115
                command = [sys.executable, "-m", "playground.run.train", *run.overrides]
                proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
                active[proc] = (gpu, log, run, time.monotonic())
                changed[gpu] = time.time()
            for proc in [p for p in active if p.poll() is not None]:
                gpu, log, run, start = active.pop(proc)
                log.close()
                ratio = slots.give(gpu, run, time.monotonic() - began)
                changed[gpu] = time.time()
                if proc in halted:  # stopped by the guard, resumable: left for a later launch
                    total -= 1
                    # its kind's next runs start only if, as slow as this one, they end in time
                    if (rows := train_rows(run.out)) and rows[-1]["step"] > 0:
                        share = rows[-1]["step"] / int(run.config.train.steps)
                        slots.calibrate(run, ratio / share, time.monotonic() - start)
                    line = ended(run, proc.returncode, Path(log.name), run.out.name)[1]
                    print(f"{line}; stopped by the deadline guard, the same command resumes it",
                          flush=True)
                    continue
                failures += proc.returncode != 0
                durations.append(time.monotonic() - start)
                if proc.returncode == 0:
                    slots.calibrate(run, ratio, durations[-1])
                    if capacity:
                        slots.learn_memory(run)
                label = f"{len(durations)}/{total}: {run.out.name}"
                line = ended(run, proc.returncode, Path(log.name), label, durations[-1])[1]
                done = progress_text(durations, total, at_once, time.monotonic() - began)
                print(f"{line}; {done}", flush=True)
            if not active and queue and slots.next_start(
                    queue, time.monotonic() - began) is None:
                break  # nothing runs and nothing left fits before the deadline
            if deadline is not None and time.monotonic() - guarded >= GUARD_EVERY_S:
                guarded = time.monotonic()
                halted |= guard(active, slots, deadline - (guarded - began), stopped, guarded,
                                halted, changed)
            time.sleep(0.2)
        if queue:
            print(f"{len(queue)} run(s) not started: each would end after deadline={deadline:g} s "
                  "(the same command starts them): "
                  + ", ".join(run.out.name for run in queue), flush=True)
    except KeyboardInterrupt:  # SIGTERM/Ctrl-C: each run checkpoints as preempted; wait for them
        for proc in active:
            proc.send_signal(signal.SIGTERM)
        for proc, (_, log, run, _) in active.items():
            proc.wait()
            log.close()
            record_end(run.out, proc.returncode, Path(log.name))
        print(f"sweep interrupted: {len(active)} run(s) stopped resumably, "
              f"{len(queue)} not started", flush=True)
        raise SystemExit(130) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    return failures


def guard(active: dict, slots: Slots, time_left: float, stopped: dict, now: float,
          halted: set, changed: dict) -> set:
    """The deadline guard's look at the ``active`` runs (process -> (GPU, log, run, start)) but
    those it stopped before (``halted``): on each GPU not stopped from within
    ``GUARD_GAP_S`` (``stopped``: GPU -> when), stop (SIGTERM: the run checkpoints as preempted)
    the run :func:`guard_victim` names from the rates since a run last started or ended there
    (``changed``: GPU -> epoch seconds) and the steps each run logged since it started; returns
    the processes it stopped."""
    signalled = set()
    began = {id(item[2]): time.time() - (time.monotonic() - item[3])
             for item in active.values()}  # when each run's attempt began, epoch seconds
    for gpu in {g for g, *_ in active.values()}:
        if now - stopped.get(gpu, -math.inf) < GUARD_GAP_S:
            continue
        here = [(proc, item[2]) for proc, item in active.items()
                if item[0] == gpu and proc not in halted]
        victim = guard_victim([run for _, run in here], slots.floor, time_left,
                              changed.get(gpu), lambda run: began[id(run)])
        if victim is not None:
            proc = next(p for p, run in here if run is victim)
            signalled.add(proc)
            proc.send_signal(signal.SIGTERM)
            stopped[gpu] = now
            print(f"deadline guard: GPU {gpu or 0}'s runs are projected past the deadline "
                  f"({time_left:,.0f} s left); stopping the least advanced, "
                  f"{victim.out.name}", flush=True)
    return signalled


def _kind(config: DictConfig) -> tuple[str, str]:
    """What a run's estimate error depends on most: its mixer and its task (the estimate read
    0.67–1.25 of the actual per panel and backbone, docs/bench/2026-11-26-cost-estimate)."""
    try:
        return str(config.model.mixer.name), str(config.task.name)
    except AttributeError:  # a config without them (tests' stand-ins): one kind for all
        return "", ""


def longest_first(runs: list[list[str]], configs: list[DictConfig] | None = None) -> list[int]:
    """The runs' indices, the largest cell first and a cell's runs together, costliest first
    (``configs``: the runs' composed configs, if at hand). A cell is the runs that differ only
    in their variant (:func:`cell_of`), so a launch cut short by its deadline leaves each variant
    beside its twin rather than every costly variant and none of their twins. A cell's size is
    layers × width² × training tokens (its variants share it, however many of them are left to
    run); cells of one size keep the sweep's order. Within a cell, a run's cost is its estimated
    GPU-seconds alone (``playground.sweep.cost``, which knows that a GLA or Mamba2 step is slower
    than a Llama step of the same size); without an estimate for every run, the sweep's order.
    With more runs than slots, starting the long runs first keeps every slot busy to the end
    instead of leaving the longest runs alone at the tail."""
    from playground.config import Composer
    from playground.sweep.cost import estimate

    compose = Composer()
    configs = configs or [compose(r) for r in runs]
    work = [c.model.n_layers * c.model.d_model**2 * c.train.steps * c.train.batch_size
            * c.task.context for c in configs]
    try:
        seconds = [round(estimate(c, 1).gpu_s) for c in configs]
    except (ValueError, KeyError, AttributeError):  # a run without an estimate: sizes, order
        seconds = [0] * len(configs)
    cells = [cell_of(c) for c in configs]
    first = {}  # cell -> its first run in the sweep's order
    for i, cell in enumerate(cells):
        first.setdefault(cell, i)
    return sorted(range(len(runs)), reverse=True,  # stable: ties keep order
                  key=lambda i: (work[i], -first[cells[i]], seconds[i]))


def cell_of(config: DictConfig) -> str:
    """What a run has in common with the other variants of its heatmap cell: its identity
    (``rundir.identity``: the config without the names and labels, ``variant`` among them) but
    the variant's part, ``model.mixer`` and ``model.canon``."""
    tree = identity(OmegaConf.to_container(config, resolve=False))
    return json.dumps({k: v for k, v in tree.items()
                       if not k.startswith(("model.mixer", "model.canon"))},
                      sort_keys=True, default=str)


def _device_ids(gpus: int) -> list[str]:
    """The ``gpus`` device ids the runs go to: the first of those this process may see
    (``CUDA_VISIBLE_DEVICES=2,3 playground-sweep … gpus=2`` uses GPUs 2 and 3), else 0…gpus-1."""
    if not gpus:
        return [""]
    visible = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
               if d.strip()]
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


