"""Estimate vs actual GPU-seconds of the finished run records under ROOT (default results/mini/runs).

Actual: each run's elapsed time (summary started -> finished) times its share of a GPU: runs whose
elapsed times overlap form a group; where their summaries name host and GPU (cuda_visible_devices),
the runs active on one GPU share it equally; else they shared the group's GPUs (1 unless GPUS names
the group's first start), each holding min(1, gpus / runs active) of a GPU at each moment. Estimate:
playground.sweep.cost.estimate of the run's config.yaml, per_gpu = the group's runs per GPU at its start.
"""
import json
import sys
from collections import defaultdict
from datetime import datetime
from pathlib import Path

from omegaconf import OmegaConf

from playground.sweep.cost import Shape, estimate

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else "results/mini/runs")
# Groups that ran on several GPUs (their campaign READMEs): first start (UTC, minute) -> GPUs
GPUS = {"2026-11-26T16:23": 2, "2026-11-26T19:44": 2, "2026-11-26T23:02": 4,
        "2026-11-27T05:57": 4, "2026-11-27T09:08": 4, "2026-11-27T12:12": 2,
        "2026-11-27T12:21": 2, "2026-11-28T07:18": 2, "2026-11-28T21:30": 2}
DEVICE = {"2026-11-24T16:03": "H200", "2026-11-24T21:20": "H200", "2026-11-24T21:29": "H200",
          "2026-11-25T02:01": "H100", "2026-11-25T02:22": "H100", "2026-11-25T09:40": "H100 (MPS)",
          "2026-11-26T16:23": "2xH100", "2026-11-26T16:47": "H100", "2026-11-26T19:44": "2xH100",
          "2026-11-26T23:02": "4xH200",
          "2026-11-27T05:57": "4xH200", "2026-11-27T09:08": "4xH200",
          "2026-11-27T12:12": "2xH200", "2026-11-27T12:21": "2xH200", "2026-11-28T04:23": "H100",
          "2026-11-28T07:18": "2xH200", "2026-11-28T10:28": "H200",
          "2026-11-28T21:30": "2xH200", "2026-11-28T21:56": "H200",
          "2026-11-29T00:46": "H200", "2026-11-29T07:39": "H200", "2026-11-29T08:11": "H200",
          "2026-11-29T10:59": "H200", "2026-11-29T11:19": "H200",
          "2026-11-29T14:20": "H200", "2026-11-29T14:39": "H200",
          "2026-12-01T23:07": "H200", "2026-12-01T23:24": "H200",
          "2026-12-02T01:59": "H200", "2026-12-02T02:17": "H200"}

runs = []
for summary in sorted(ROOT.glob("*/*/summary.json")):
    d = json.loads(summary.read_text())
    if d.get("status") != "finished":
        continue
    a, b = (datetime.fromisoformat(d[k]).timestamp() for k in ("started", "finished"))
    cfg = OmegaConf.load(summary.parent / "config.yaml")
    runs.append({"a": a, "b": b, "d": d, "shape": Shape.of(cfg), "dir": summary.parent})
runs.sort(key=lambda r: r["a"])
groups, end = [], -1.0
for r in runs:
    if r["a"] >= end:
        groups.append([])
    groups[-1].append(r)
    end = max(end, r["b"]) if len(groups[-1]) > 1 else r["b"]

for g in groups:
    key = datetime.utcfromtimestamp(g[0]["a"]).strftime("%Y-%m-%dT%H:%M")
    # where every summary names its host and GPU (recorded from 2026-12-02 on), the runs of one
    # host and GPU share that GPU; else the group's GPUs (typed in above) are shared equally
    slots = [(r["d"].get("host"), r["d"].get("cuda_visible_devices")) for r in g]
    known = all(host and gpu for host, gpu in slots)
    gpus = len(set(slots)) if known else GPUS.get(key, 1)
    cuts = sorted({t for r in g for t in (r["a"], r["b"])})
    for r, slot in zip(g, slots):
        r["gpu_s"], r["slot"] = 0.0, slot
    for t0, t1 in zip(cuts, cuts[1:]):
        active = [r for r in g if r["a"] <= t0 and r["b"] >= t1]
        for r in active:
            share = (1 / sum(o["slot"] == r["slot"] for o in active) if known
                     else min(1.0, gpus / len(active)))
            r["gpu_s"] += (t1 - t0) * share
    first = [r for r in g if r["a"] < g[0]["a"] + 60]
    per_gpu = max(1, round(len(first) / gpus))
    for r in g:
        # the estimate at the runs per GPU at the group's start: of its own GPU where known
        own = max(1, sum(o["slot"] == r["slot"] for o in first)) if known else per_gpu
        r["group"], r["per_gpu"] = key, per_gpu
        r["est"] = estimate(r["shape"], own)
        r["alone"] = estimate(r["shape"], 1)


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
def device(r):
    """The group's device: typed in above, else the GPU the summary names (``device_name``, recorded
    from 2026-12-02 on), else ?."""
    return DEVICE.get(r["group"]) or (r["d"].get("device_name") or "?").replace("NVIDIA ", "")


table(lambda r: f"{r['group']} {device(r)} p{r['per_gpu']}", "group of overlapping runs (device, per GPU)")

if "-v" in sys.argv:
    for r in runs:
        if r["group"] >= "2026-11-26":
            e = r["est"]
            print(f"{r['group']} {r['dir'].name[:58]:58s} act {r['gpu_s']:6.0f} est {e.gpu_s:6.0f} "
                  f"(train {e.train_s:5.0f} over {e.overhead_s:4.0f}) {e.gpu_s / r['gpu_s']:5.2f}")

runs_all = runs
runs = [r for r in runs_all if r["group"] >= "2026-11-26"]
table(panel, "2026-11-26 groups only (code of that day)")
runs = runs_all
