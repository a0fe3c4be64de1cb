"""Estimate vs actual GPU-seconds of the finished run records under ROOT (default results/mini/runs).

Actual: playground.sweep.measured (each run's elapsed time, summary started -> finished, times its
share of a GPU; the GPUs and devices of the groups whose records do not say them: ROOT/gpus.csv).
Estimate: playground.sweep.cost.estimate of the run's config.yaml at the runs its GPU had on average
over its life (playground.sweep.measured). The dry run of playground-sweep prints the same comparison for a sweep's finished runs.
"""
import json
import sys
from collections import defaultdict
from pathlib import Path

from omegaconf import OmegaConf

from playground.sweep.cost import Shape, estimate
from playground.sweep.measured import measured

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else "results/mini/runs")
runs = []
for folder, m in measured(ROOT).items():
    shape = Shape.of(OmegaConf.load(folder / "config.yaml"))
    runs.append({"dir": folder, "d": json.loads((folder / "summary.json").read_text()),
                 "gpu_s": m.gpu_s, "per_gpu": m.per_gpu, "group": m.group, "device": m.device,
                 "est": estimate(shape, m.per_gpu), "alone": estimate(shape, 1)})


def panel(r):
    rec = r["d"]["record"]
    return f"{r['dir'].parent.name}:{rec['task'].get('panel') or rec['task']['family']}"


def table(keyf, title):
    acc = defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for r in runs:
        k = keyf(r)
        acc[k][0] += 1
        acc[k][1] += r["gpu_s"]
        acc[k][2] += r["est"].gpu_s
        acc[k][3] += r["alone"].gpu_s
    print(f"\n{title:44s} runs  actual GPU-h  est. GPU-h (per_gpu as run)  ratio  | est. alone  ratio")
    tot = [0, 0.0, 0.0, 0.0]
    for k, (n, act, est, alone) in sorted(acc.items()):
        print(f"{k:44s} {n:4d}  {act / 3600:11.2f}  {est / 3600:26.2f}  {est / act:5.2f}  | {alone / 3600:10.2f}  {alone / act:5.2f}")
        tot = [tot[0] + n, tot[1] + act, tot[2] + est, tot[3] + alone]
    print(f"{'all':44s} {tot[0]:4d}  {tot[1] / 3600:11.2f}  {tot[2] / 3600:26.2f}  {tot[2] / tot[1]:5.2f}  | {tot[3] / 3600:10.2f}  {tot[3] / tot[1]:5.2f}")


table(panel, "panel (sweep:panel)")
table(lambda r: f"{r['group']} {r['device']}", "group of overlapping runs (device)")

if "-v" in sys.argv:
    for r in runs:
        if r["group"] >= "2026-11-26":
            e = r["est"]
            print(f"{r['group']} {r['dir'].name[:58]:58s} act {r['gpu_s']:6.0f} est {e.gpu_s:6.0f} "
                  f"(train {e.train_s:5.0f} over {e.overhead_s:4.0f}) {e.gpu_s / r['gpu_s']:5.2f}")

runs_all = runs
runs = [r for r in runs_all if r["group"] >= "2026-11-26"]
table(panel, "groups from 2026-11-26 on (newer code)")
runs = runs_all
