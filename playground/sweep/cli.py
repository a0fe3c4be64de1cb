"""``playground-sweep``: run a declarative figure sweep (``sweeps/<name>.yaml``) at a scale.

One command launches every run of a figure; a rerun skips finished runs and resumes interrupted
ones; the local launcher starts the largest cells first, a cell's variants together. See
``playground.sweep.spec`` for the file format and ``playground.sweep.launch`` for the launchers.
"""

from __future__ import annotations

import dataclasses
import math
import re
import subprocess
import sys

from omegaconf import OmegaConf

from playground.cli import Args, Command
from playground.cli import main as cli_main
from playground.errors import ConfigError
from playground.sweep.launch import (
    DEADLINE_MARGIN,
    LAUNCHERS,
    Slots,
    checked_finished,
    launcher_overrides,
    plan,
    refuse_if_none_launchable,
    run_local,
    run_multiruns,
    simulate,
    whole_cells,
)
from playground.sweep.spec import Sweep, find_sweep_file, load_sweep

LOG_DIR = ".logs"  # in the sweep's folder: each attempt's log, and the runs not launched
MAX_PER_GPU = 64  # per_gpu=: runs sharing one device at once


def cmd_sweep(args: Args) -> int:
    launcher = args.choice("launcher", LAUNCHERS)
    if launcher != "local" and (given := [k for k in ("gpus", "per_gpu")
                                          if args[k] != COMMAND.options[k][0]]):
        raise ConfigError(f"{given[0]}={args[given[0]]} is invalid with launcher={launcher}: only "
                          "the local launcher places runs on GPUs (launcher=local); Hydra's "
                          "launchers take theirs from hydra.launcher.*")
    gpus, dry = args.int("gpus"), args.flag("dry_run")
    per_gpu = args.int("per_gpu", 1, MAX_PER_GPU,
                       "each run is a process of its own, with its own memory")
    deadline, margin = deadline_s(args, launcher, dry)
    path = find_sweep_file(args.positional[0])
    if "findings" in (OmegaConf.load(path) or {}):
        return findings_runs(args, path, launcher, gpus, per_gpu, dry, deadline, margin)
    if args["results"]:
        raise ConfigError(f"results={args['results']} is invalid for a sweep file: it picks the "
                          "findings of a findings file (playground-sweep findings results=2,3a)")
    if args.flag("whole") and deadline is None:
        raise ConfigError("whole=true is invalid without deadline=: it keeps the panels' columns "
                          "whose runs all end by the deadline")
    sweep = load_sweep(find_sweep_file(args.positional[0]), args["scale"], args["panels"],
                       args.overrides, args["variants"])
    sweep = dataclasses.replace(sweep, root=args["root"] or "results")
    runs = sweep.runs()
    print(f"sweep {sweep.name} at scale={sweep.scale}: {len(runs)} runs -> {sweep.folder}/")
    if args.flag("whole"):
        runs = whole_columns(runs, gpus, per_gpu, deadline, margin)
    if dry:
        dry_run(sweep, runs, launcher, per_gpu if launcher == "local" else 1, gpus, deadline,
                margin)
        return 0
    logs = sweep.folder / LOG_DIR
    if launcher == "local":
        failures = run_local(runs, local_gpus(gpus, deadline), logs, per_gpu, deadline,
                             margin=margin)
    else:
        failures = run_multiruns(sweep, launcher, logs)
    print(f"sweep {sweep.name}: done ({failures} launcher failures; see {logs}/ and each run's "
          "summary.json)")
    return 1 if failures else 0


def deadline_s(args: Args, launcher: str, dry: bool) -> tuple[float | None, float]:
    """``deadline=`` (seconds, for the local launcher only) and ``margin=``, the factor on each
    run's estimated time held against it; a dry run says it does not apply them."""
    if not args["deadline"]:
        if args["margin"]:
            raise ConfigError(f"margin={args['margin']} is invalid without deadline=: it is the "
                              "factor on the estimated times held against the deadline")
        return None, DEADLINE_MARGIN
    if launcher != "local":
        raise ConfigError(f"deadline={args['deadline']} is invalid with launcher={launcher}: "
                          "only the local launcher starts runs one by one (launcher=local)")
    value = args.float("deadline")
    if not value > 0:
        raise ConfigError(f"deadline={args['deadline']} is invalid: expected seconds > 0")
    margin = args.float("margin") if args["margin"] else DEADLINE_MARGIN
    if not margin > 0:
        raise ConfigError(f"margin={args['margin']} is invalid: expected a factor > 0 on the "
                          "estimated times")
    if dry:
        print(f"deadline={value:g}: the launch starts a run only if its estimated time (the "
              f"estimate below, per run, × the runs sharing its GPU × {margin:g}) ends "
              "before it; the dry run lists every run, then the runs a launch would start")
    return value, margin


def local_gpus(gpus: int, deadline: float | None) -> int:
    """The GPUs of a local launch: ``gpus=``, else every visible one; a deadline needs GPUs."""
    gpus = gpus or _gpu_count()
    if deadline is not None and not gpus:
        raise ConfigError(f"deadline={deadline:g} is invalid here: no GPU is visible, and the "
                          "estimates it uses are of GPU throughput")
    return gpus


def findings_runs(args: Args, path, launcher: str, gpus: int, per_gpu: int, dry: bool,
                  deadline: float | None = None, margin: float = DEADLINE_MARGIN) -> int:
    """Launch (or, with ``dry_run``, list) every run the findings of ``path`` still need: the
    runs of each side's sweep at each cell and seed with no finished summary under ``root``."""
    from pathlib import Path

    from playground.report.findings import load_findings, needed_runs

    if launcher != "local" and not dry:
        raise ConfigError(f"launcher={launcher} is invalid for findings: their runs come from "
                          "several sweeps; use launcher=local (or dry_run=true to list them)")
    if clash := args.overrides or [k for k in ("panels", "variants") if args[k]]:
        raise ConfigError(f"{clash[0]!r} is invalid for findings: their runs are exactly the ones "
                          "the findings declare (choose them with results=)")
    root = args["root"] or "results"
    findings = load_findings(path, args["results"])
    if args.flag("whole"):
        if deadline is None:
            raise ConfigError("whole=true is invalid without deadline=: it keeps the findings' "
                              "cells whose runs all end by the deadline")
        runs = whole_runs(findings, root, gpus, per_gpu, deadline, margin)
    else:
        runs = needed_runs(findings, root)
    print(f"findings {path.name}: {len(runs)} runs to do under {root}/")
    if dry:
        dry_run(None, runs, launcher, per_gpu, gpus, deadline, margin)  # each run, GPU-hours
        return 0
    logs = Path(root) / ".findings_logs"
    failures = run_local(runs, local_gpus(gpus, deadline), logs, per_gpu, deadline,
                         margin=margin) if runs else 0
    print(f"findings: done ({failures} launcher failures; see {logs}/ and each run's summary.json)")
    return 1 if failures else 0


def whole_runs(findings: list, root: str, gpus: int, per_gpu: int, deadline: float,
               margin: float) -> list[list[str]]:
    """``whole=true``: the runs of the findings' cells (in the findings' order, the order of
    ``results=`` if given) that a launch with ``deadline`` starts whole, all the runs of a cell
    with those of the cells before it (:func:`take_whole`)."""
    from playground.report.findings import needed_runs_by_cell

    groups = [(label, runs) for label, runs in needed_runs_by_cell(findings, root) if runs]
    planned = {tuple(p.overrides): p for p in plan([r for _, g in groups for r in g])
               if p.error is None}
    return take_whole([(label, [planned[tuple(r)] for r in g if tuple(r) in planned])
                       for label, g in groups], "finding cells", gpus, per_gpu, deadline, margin)


def take_whole(groups: list, what: str, gpus: int, per_gpu: int, deadline: float,
               margin: float) -> list[list[str]]:
    """``whole=true``: of ``groups`` (a label and its planned runs), the ones whose runs all end
    by ``deadline`` on the hold's GPUs (``launch.whole_cells``); says which ``what`` are taken
    and which passed over, each of these with the seconds its runs would take by themselves
    (``launch.simulate``), and how many of them would not end whole even so; returns the
    taken runs' overrides."""
    count, where = hold_gpus(gpus)
    taken, runs, passed = whole_cells(groups, count, per_gpu, deadline, margin)
    alone = {label: group for label, group in groups if label in passed}
    seconds = {label: max((end for _, _, end in simulate(group, count, per_gpu, math.inf,
                                                         margin=margin)[0]), default=0.0)
               for label, group in alone.items()}
    never = [label for label, group in alone.items()
             if not whole_cells([(label, group)], count, per_gpu, deadline, margin)[0]]
    print(f"whole=true: {len(taken)} of the {len(groups)} {what} with runs to do end "
          f"whole by deadline={deadline:g} on {where}, {per_gpu} a GPU, if each run took its "
          f"estimate: {', '.join(taken) or 'none'}"
          + ("; passed over: " + ", ".join(f"{label} ({seconds[label]:,.0f} s by itself)"
                                           for label in passed) if passed else ""))
    if never:
        print(f"whole=true: {len(never)} of the passed over would not end whole by the deadline "
              f"even by themselves: {', '.join(never)}; whole=false runs their runs over "
              "several launches, each run in one")
    return [run.overrides for run in runs]


def whole_columns(runs: list[list[str]], gpus: int, per_gpu: int, deadline: float,
                  margin: float) -> list[list[str]]:
    """``whole=true`` for a sweep file: the runs still to do of the columns (a panel's model
    size: every row, variant and seed of it) that a launch with ``deadline`` ends whole, smallest
    model first (layers × width², the order of their parameter counts), a column passed over
    for the next smaller one that fits (:func:`take_whole`). A hold so stops on whole columns of
    the heatmaps."""
    todo = [p for p in map(checked_finished, plan(runs)) if p.error is None and not p.finished]
    columns: dict[tuple, list] = {}
    for run in todo:
        model = run.config.model
        key = (model.n_layers * model.d_model ** 2, model.size, run.config.get("panel") or "")
        columns.setdefault(key, []).append(run)
    groups = [(f"{panel} {size}".strip(), group)
              for (_, size, panel), group in sorted(columns.items())]
    return take_whole(groups, "columns", gpus, per_gpu, deadline, margin)


def dry_run(sweep: Sweep | None, runs: list[list[str]], launcher: str, per_gpu: int = 1,
            gpus: int = 0, deadline: float | None = None,
            margin: float = DEADLINE_MARGIN) -> None:
    """List the runs, each marked ``todo``, ``done`` (its directory holds the finished run: the
    launch would skip it, ``launch.checked_finished``) or ``not launchable`` (with why:
    ``launch.plan``, or a run directory of another config), and how many are left; then the
    estimated GPU-hours per panel and in all (``playground.sweep.cost``, from the configs the
    plan composed), with what the estimate assumed; with ``deadline``, the runs a local launch
    on ``gpus`` GPUs would start if each took its estimate (:func:`plan_hold`)."""
    done, costs = 0, []
    planned = [checked_finished(p) for p in plan(runs, launcher_overrides(launcher))]
    refuse_if_none_launchable(planned)
    for run in planned:
        if run.error is not None:
            print(f"  not launchable ({run.error}): playground-train " + " ".join(run.overrides))
            continue
        finished = run.finished
        done += finished
        mark = "  done " if finished else "  todo "
        print(mark + "playground-train " + " ".join(run.overrides))
        costs.append((run, finished))
    bad = sum(run.error is not None for run in planned)
    print(f"{len(runs) - done - bad} of {len(runs)} runs to do ({done} finished"
          + (f", {bad} not launchable" if bad else "") + ")")
    print_estimate(costs, per_gpu)
    print_memory(costs, per_gpu)
    print_measured([run for run, finished in costs if finished])
    if deadline is not None:
        plan_hold([run for run, finished in costs if not finished], gpus, per_gpu, deadline,
                  margin)
    if launcher == "slurm":  # show what submitit would be given, without submitting anything
        cmd = [sys.executable, "-m", "playground.run.train", *runs[0], "hydra/launcher=slurm",
               "--cfg", "hydra", "--package", "hydra.launcher"]
        print(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)


def hold_gpus(gpus: int) -> tuple[int, str]:
    """The GPUs a planned hold counts (``gpus=``, else the visible ones, else one) and how to say
    so."""
    known = gpus or _gpu_count()
    count = known or 1
    return count, f"{count} GPU{'s' * (count > 1)}" + ("" if known else
                                                      " (none visible: gpus= sets how many)")


def plan_hold(todo: list, gpus: int, per_gpu: int, deadline: float,
              margin: float = DEADLINE_MARGIN) -> None:
    """Print what a local launch with ``deadline`` would start on ``gpus`` GPUs (else the
    visible ones, else one) if every run took its estimate (``launch.simulate``): how many, when
    the last would end (past the deadline only where ``margin`` < 1 trusts the estimates to be
    high: then also when at the estimate × ``margin``), and the runs left for a later launch."""
    count, where = hold_gpus(gpus)
    started, left = simulate(todo, count, per_gpu, deadline, margin=margin)
    last = max((end for _, _, end in started), default=0.0)
    print(f"with deadline={deadline:g} on {where}, {per_gpu} a GPU, if each run took its "
          f"estimate: {len(started)} of {len(todo)} runs would start"
          + (f", the last ending at {last:,.0f} s" if started else "")
          + (f" (past the deadline: margin={margin:g} holds each run to its estimate × {margin:g}"
             f", {last * margin:,.0f} s)" if last > deadline else "")
          + ("; left for a later launch: " + ", ".join(run.out.name for run in left)
             if left else ""))


def print_memory(costs: list, per_gpu: int) -> None:
    """With runs sharing a GPU: the GPU memory the ``per_gpu`` runs to do that need the most
    are expected to hold together, as a launch expects it (``launch.Slots.need``: each run's
    estimate, rescaled by the peaks the finished runs of its kind recorded, + the process's
    overhead) and holds it against each GPU's memory."""
    from playground.run.budget import PROCESS_BYTES, size_text

    todo = [run for run, finished in costs if not finished]
    if per_gpu < 2 or not todo:
        return
    slots = Slots([], per_gpu, say=lambda _: None)
    for run in (run for run, finished in costs if finished):
        slots.learn_memory(run)
    needs = sorted(((slots.need(run), run.out.name) for run in todo), reverse=True)
    top = needs[:per_gpu]
    rescaled = ", ".join(f"{'/'.join(kind)} ×{ratio:.2f}" for kind, ratio in slots.peaks.items()
                         if ratio > 1.0)
    print("expected GPU memory (weights, gradients, AdamW states and activations"
          + (f", × the largest measured / estimated peak of the finished runs: {rescaled}"
             if rescaled else "")
          + f", + {size_text(PROCESS_BYTES)} a process): the {len(top)} largest runs together "
          f"{size_text(sum(b for b, _ in top))}, the largest {size_text(top[0][0])} "
          f"({top[0][1]}); a launch starts a run on a GPU only where it fits beside the GPU's "
          "runs")


def print_estimate(costs: list, per_gpu: int) -> None:
    """Print the estimated GPU-hours of the planned runs ``costs`` ((run, finished) pairs): per
    panel, each assumption once with how many runs it concerns, and in all."""
    from collections import Counter

    from playground.sweep.cost import estimate, provenance

    panels: dict[str, list[float]] = {}  # panel -> [GPU-seconds to do, of all]
    notes: Counter[str] = Counter()  # an assumption -> the runs it concerns
    used, failed = [], 0
    for run, finished in costs:
        try:
            est = estimate(run.config, per_gpu)
        except (ValueError, KeyError, AttributeError) as err:  # a config the estimate cannot read
            failed += 1
            notes[f"no estimate: {err}"] += 1
            continue
        sums = panels.setdefault(_panel(run), [0.0, 0.0])
        sums[0] += 0.0 if finished else est.gpu_s
        sums[1] += est.gpu_s
        used += est.rows
        notes.update(est.notes)
    sharing = f"{per_gpu} runs sharing a GPU" if per_gpu > 1 else "one run per GPU"
    print(f"estimated GPU-hours per panel, to do of all ({sharing}):")
    for panel, (todo, total) in panels.items():
        print(f"  {panel}: {todo / 3600:.2f} of {total / 3600:.2f}")
    for note, count in notes.most_common():
        print(f"  assumed ({count} run{'s' * (count > 1)}): {note}")
    todo, total = (sum(p[i] for p in panels.values()) / 3600 for i in (0, 1))
    print(f"estimated GPU-hours to do: {todo:.2f} (of {total:.2f} for the runs listed)"
          + (f", at {provenance(used)}" if used else "")
          + (f"; {failed} run(s) not estimated" if failed else ""))


def print_measured(finished: list) -> None:
    """For the ``finished`` planned runs: per panel, their estimate (at the runs its GPU had
    on average over its life) against the GPU time their records measured
    (``playground.sweep.measured``), and in all; nothing where none has a record to read."""
    from playground.sweep.cost import estimate
    from playground.sweep.measured import measured

    found = {}
    for root in {run.out.parent.parent for run in finished}:
        found.update(measured(root))
    panels: dict[str, dict] = {}  # panel -> GPU model -> [runs, estimated, measured GPU-s]
    for run in finished:
        if (took := found.get(run.out)) is None or not took.gpu_s > 0:
            continue
        try:
            est = estimate(run.config, took.per_gpu).gpu_s
        except (ValueError, KeyError, AttributeError):  # as print_estimate: not estimated
            continue
        model = re.sub(r"^\d+x", "", took.device)  # 4xH200 -> H200
        for key in (_panel(run), "all"):
            sums = panels.setdefault(key, {}).setdefault(model, [0, 0.0, 0.0])
            sums[0], sums[1], sums[2] = sums[0] + 1, sums[1] + est, sums[2] + took.gpu_s
    if not panels:
        return
    print("finished runs, estimated against measured GPU-hours (each at the runs its GPU had on "
          "average; measured: its record's elapsed time × its share of a GPU; ? a device not "
          "recorded; with several GPU models, the ratio on each):")
    for panel in [*(p for p in panels if p != "all"), "all"]:
        models = panels[panel]
        n, est, took = (sum(m[i] for m in models.values()) for i in range(3))
        runs = f"{n} run{'s' * (n > 1)}"
        each = (f"{runs} on {next(iter(models))}" if len(models) == 1 else f"{runs}: " + ", ".join(
            f"{model} ×{e / t:.2f} of {k}" for model, (k, e, t) in sorted(models.items())))
        print(f"  {panel}: {est / 3600:.2f} estimated, {took / 3600:.2f} measured "
              f"(×{est / took:.2f}; {each})")


def _panel(run) -> str:
    return next((o[6:] for o in run.overrides if o.startswith("panel=")), "(no panel)")


def _gpu_count() -> int:
    try:
        import torch

        return torch.cuda.device_count()
    except ImportError:  # pragma: no cover - torch is a dependency
        return 0




COMMAND = Command(
    "", "run every point of a sweep file at a scale; extra key=value arguments go to every run, "
    "over the rows' recipes (one naming a grid axis, e.g. seed=0,1, replaces it; a variant's "
    "key is refused)", cmd_sweep,
    {"scale": ("mini", "a scale of the sweep file: paper, mini or cpu"),
     "launcher": ("basic", f"one of {LAUNCHERS}: basic/slurm = Hydra multiruns; local = one "
                  "process per run"),
     "gpus": ("0", "local: GPUs to use (0: every visible one)"),
     "per_gpu": ("1", "local: runs sharing each GPU (tiny models)"),
     "deadline": ("", "local: seconds; start a run only if it is expected to end by then (its "
                  "estimated GPU time × runs sharing its GPU × margin), for a machine held for "
                  "a fixed time, and stop (resumably) the least advanced run of a GPU whose "
                  "runs' measured rates project past it; a rerun does the rest"),
     "margin": ("", f"local, with deadline=: the factor on the estimated times (default "
                f"{DEADLINE_MARGIN:g}); lower packs more runs into the hold, and the guard "
                "stops those that run late"),
     "panels": ("", "only these panels (comma-separated)"),
     "variants": ("", "only these variants (comma-separated)"),
     "root": ("results", "the folder the runs go under: ROOT/<name>_<scale>/<run>/ (a rerun skips "
              "the finished runs there, e.g. root=results/mini/runs keeps their records in the "
              "repository)"),
     "dry_run": ("false", "list the runs, launch nothing"),
     "results": ("", "NAME=findings only: the findings of these paper results (e.g. 2,3a) "
                 "or with these ids (e.g. R10-mamba2), in this order"),
     "whole": ("false", "with deadline=: only what ends whole by the deadline. A sweep file: its "
               "panels' columns (a model size, every row, variant and seed), smallest model "
               "first, so a hold completes whole columns of the heatmaps; NAME=findings: the "
               "findings' cells (with those before them), most important first, so a hold "
               "completes whole findings")},
    ("NAME",), overrides=(),
    examples=("playground-sweep fig7 scale=mini panels=depo1_K4 "
              "variants=llama_nope,llama_nope_canon",
              "playground-sweep fig7 scale=mini launcher=local gpus=8",
              "playground-sweep fig7 scale=mini panels=depo1_K4 launcher=local gpus=4 per_gpu=2 "
              "deadline=1620 whole=true dry_run=true",
              "playground-sweep mqar scale=mini launcher=local per_gpu=12",
              "playground-sweep fig7 scale=paper launcher=slurm hydra.launcher.partition=gpu",
              "playground-sweep fig7 scale=cpu panels=depo1_K8 dry_run=true",
              "playground-sweep findings root=results/mini/runs launcher=local dry_run=true"))


def main(argv: list[str] | None = None) -> None:
    cli_main("playground-sweep", "run a figure's sweep file (sweeps/<name>.yaml) at a scale",
             [COMMAND], argv)


if __name__ == "__main__":
    main()
