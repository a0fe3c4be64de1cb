"""The GPU time finished runs took, read from their records, to set beside the estimate
(``playground.sweep.cost``): the dry run prints both for a sweep's finished runs.

A run's GPU-seconds are its elapsed time (``started`` → ``finished`` of its summary) times its
share of a GPU at each moment. Runs whose elapsed times overlap form a group. Where every run of
a group names its host and GPU (``host``, ``cuda_visible_devices``; records since 2026-12-02 04:37),
the runs active on one GPU share it equally. Else the group shared its GPUs equally, each run
holding min(1, GPUs / runs active) of one: the GPUs that ``GROUPS_CSV`` beside the sweep folders
gives for the group's first start (UTC, to the minute), else 1. A run is estimated at the runs
its GPU had on average over its life: its elapsed time over its GPU-seconds, rounded (a run that
starts at a launch's tail, its GPU's other runs ended, has it alone). Runs stopped or lost leave
no finished record: the GPU they shared counts to the records beside them.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

GROUPS_CSV = "gpus.csv"  # first_start (UTC, YYYY-MM-DDTHH:MM), gpus, device; # comment lines


@dataclass
class Measured:
    """One finished run's GPU time, from its record."""

    gpu_s: float  # elapsed seconds × its share of a GPU
    per_gpu: int  # the runs its GPU had on average over its life: its estimate's sharing
    group: str  # the group's first start, UTC, to the minute
    device: str  # the group's device: its runs' GPU, else GROUPS_CSV's, else ?


def read_groups(root: Path) -> dict[str, tuple[int, str]]:
    """``root/gpus.csv``: a group's first start -> (its GPUs, its device); {} without one."""
    path = root / GROUPS_CSV
    if not path.is_file():
        return {}
    with open(path, newline="") as f:
        lines = [line for line in f if not line.startswith("#")]
    return {r["first_start"]: (int(r["gpus"]), r["device"]) for r in csv.DictReader(lines)}


def _records(root: Path) -> list[dict]:
    """The finished summaries under ``root/<sweep>/<run>/``, each with its folder and times."""
    runs = []
    for path in sorted(root.glob("*/*/summary.json")):
        try:  # a record that cannot be read measures nothing (the launch names damaged ones)
            summary = json.loads(path.read_text())
            if summary.get("status") != "finished":
                continue
            a, b = (datetime.fromisoformat(summary[k]).timestamp() for k in ("started", "finished"))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        slot = (summary.get("host"), summary.get("cuda_visible_devices"))
        runs.append({"dir": path.parent, "a": a, "b": b, "slot": slot,
                     "device": (summary.get("device_name") or "").replace("NVIDIA ", "")})
    return sorted(runs, key=lambda r: r["a"])


def _groups(runs: list[dict]) -> list[list[dict]]:
    """Runs whose elapsed times overlap, one after the other, as groups."""
    groups, end = [], -1.0
    for run in runs:
        if run["a"] >= end:
            groups.append([])
            end = run["b"]
        groups[-1].append(run)
        end = max(end, run["b"])
    return groups


def measured(root: Path) -> dict[Path, Measured]:
    """Every finished run under ``root`` (its folder -> :class:`Measured`)."""
    table, found = read_groups(root), {}
    for group in _groups(_records(root)):
        key = datetime.fromtimestamp(group[0]["a"], timezone.utc).strftime("%Y-%m-%dT%H:%M")
        known = all(host and gpu for host, gpu in (r["slot"] for r in group))
        gpus, device = table.get(key, (1, ""))
        gpus = len({r["slot"] for r in group}) if known else gpus
        device = device or next((r["device"] for r in group if r["device"]), "?")
        share = {id(r): 0.0 for r in group}
        cuts = sorted({t for r in group for t in (r["a"], r["b"])})
        for t0, t1 in zip(cuts, cuts[1:]):
            active = [r for r in group if r["a"] <= t0 and r["b"] >= t1]
            for r in active:
                share[id(r)] += (t1 - t0) * (
                    1 / sum(o["slot"] == r["slot"] for o in active) if known
                    else min(1.0, gpus / len(active)))
        for r in group:  # the runs its GPU had, on average over its life
            per_gpu = round((r["b"] - r["a"]) / share[id(r)]) if share[id(r)] > 0 else 1
            found[r["dir"]] = Measured(share[id(r)], max(1, per_gpu), key, device)
    return found
