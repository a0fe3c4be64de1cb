"""Replay fig7's Lano panel (RoPE ± Canon-ABCD, lr 5e-4, seeds 0 and 1: 48 runs) through 16 slots (4 GPUs, 4 a
GPU) in three orders: the sweep file's, costliest run first (by estimated GPU-seconds, then layers × width² ×
tokens: the launcher's order before 2026-12-05), and the launcher's (`launch.longest_first`: largest cell first, a
cell's variants together). Durations: (a) each run's recorded time (`started` -> `finished` of its summary in
results/mini/runs/fig7_mini; a run without a record takes the mean of its recorded seeds), each run list-scheduled
on the first free slot; (b) the dry run's estimates (`launch.simulate`, runs sharing a GPU slowed as estimated).
Run from the repository root: python docs/bench/2026-12-05-cpu-launch-order/replay.py"""
import heapq
import json
import math
import re
from datetime import datetime
from pathlib import Path
from statistics import mean
from unittest import mock

from playground.config import Composer
from playground.sweep import launch
from playground.sweep.cli import find_sweep_file
from playground.sweep.cost import estimate
from playground.sweep.spec import load_sweep

runs = load_sweep(find_sweep_file("fig7"), "mini", "lano", ["train.lr=5e-4", "seed=0,1"],
                  "llama_rope,llama_rope_canon").runs()
configs = [Composer()(r) for r in runs]
root = Path("results/mini/runs/fig7_mini")


def took(folder: Path) -> float:
    s = json.loads((folder / "summary.json").read_text())
    return (datetime.fromisoformat(s["finished"]) - datetime.fromisoformat(s["started"])).total_seconds()


recorded = [mean(took(d) for d in root.glob(re.sub(r"_s\d+$", "", c.run_name) + "_s*")
                 if (d / "summary.json").exists()) for c in configs]
work = [c.model.n_layers * c.model.d_model**2 * c.train.steps * c.train.batch_size * c.task.context
        for c in configs]
seconds = [round(estimate(c, 1).gpu_s) for c in configs]
orders = {"file": list(range(len(runs))),
          "costliest run first": sorted(range(len(runs)), key=lambda i: (seconds[i], work[i]), reverse=True),
          "largest cell first (launch.longest_first)": launch.longest_first(runs, configs)}


def list_schedule(order: list[int], slots: int = 16) -> float:
    free, end = [0.0] * slots, 0.0
    for i in order:
        t = heapq.heappop(free) + recorded[i]
        end = max(end, t)
        heapq.heappush(free, t)
    return end / 60


planned = launch.plan(runs)
print(f"{len(runs)} runs; recorded: {sum((root / c.run_name / 'summary.json').exists() for c in configs)} "
      f"(the others at their seeds' mean)")
for name, order in orders.items():
    with mock.patch.object(launch, "in_launch_order", lambda todo, slots, o=order: [planned[i] for i in o]):
        started, _ = launch.simulate(planned, 4, 4, math.inf)
    print(f"{name}: recorded durations {list_schedule(order):.1f} min; estimates "
          f"{max(e for _, _, e in started) / 60:.1f} min")
