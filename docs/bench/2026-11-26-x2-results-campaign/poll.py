"""Each campaign run's progress from its metrics.jsonl: step of steps, tokens/s, minutes left at
that rate (the runs of this campaign are those with a checkpoints/ folder: committed ones have none)."""
import json
import re
import sys
from pathlib import Path

worst = 0.0
for d in sorted((Path(sys.argv[1] if len(sys.argv) > 1 else "results/mini/runs") / "fig7_mini").glob("*/checkpoints")):
    d = d.parent
    steps = int(re.search(r"\n  steps: (\d+)", (d / "config.yaml").read_text()).group(1))
    rows = [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines() if '"train"' in x] \
        if (d / "metrics.jsonl").exists() else []
    status = json.loads((d / "summary.json").read_text()).get("status") if (d / "summary.json").exists() else "-"
    if not rows:
        print(f"{d.name}: no step yet ({status})")
        continue
    r = rows[-1]
    rate = r["step"] / max(r.get("train_time_s", 1), 1)
    left = (steps - r["step"]) / rate / 60 if status != "finished" else 0.0
    worst = max(worst, left)
    print(f"{d.name}: {r['step']}/{steps} {r.get('tokens_per_s', 0):,.0f} tok/s {status} ~{left:.1f} min left")
print(f"longest left ~{worst:.1f} min")
