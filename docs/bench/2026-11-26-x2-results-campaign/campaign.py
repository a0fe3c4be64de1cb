"""Start the campaign's runs (runs.json, tiers <= MAX_TIER) with the sweep's local launcher, PER_GPU
runs on each of GPUS GPUs at once, under ROOT (outside the checkout, which each device call re-sends):
python3 campaign.py MAX_TIER GPUS PER_GPU ROOT [RUNS_FILE]. Runs found there resume from their
checkpoints."""
import json
import sys
from pathlib import Path

from playground.sweep.launch import run_local

tier, gpus, per_gpu, root = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
here = Path(__file__).parent
runs = [[o.replace("results/mini/runs/", root + "/") if o.startswith("out_dir=") else o for o in r["overrides"]]
        for r in json.loads((here / (sys.argv[5] if len(sys.argv) > 5 else "runs.json")).read_text())
        if r["tier"] <= tier]
print(f"{len(runs)} runs", flush=True)
failures = run_local(runs, gpus, Path(root) / "fig7_mini" / ".logs", per_gpu=per_gpu)
print(f"done: {failures} failed", flush=True)
