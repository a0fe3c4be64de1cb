"""Each run's progress under ROOT (every sweep folder): step of steps, tokens/s, minutes left at
that rate; then tar the finished runs' records (no checkpoints) into OUT/runs.tgz.
python3 poll.py ROOT OUT"""
import json
import re
import subprocess
import sys
from pathlib import Path

root, out = Path(sys.argv[1]), sys.argv[2]
worst, done = 0.0, []
for d in sorted(p.parent for p in root.glob("*/*/config.yaml")):
    steps = int(re.search(r"\n  steps: (\d+)", (d / "config.yaml").read_text()).group(1))
    text = (d / "metrics.jsonl").read_text() if (d / "metrics.jsonl").exists() else ""
    rows = [json.loads(x) for x in text.splitlines() if '"train"' in x]
    status = json.loads((d / "summary.json").read_text()).get("status") if (d / "summary.json").exists() else "-"
    if status == "finished":
        done.append(str(d.relative_to(root)))
    if not rows:
        print(f"{d.parent.name}/{d.name}: no step yet ({status})")
        continue
    r = rows[-1]
    rate = r["step"] / max(r.get("train_time_s", 1), 1)
    left = (steps - r["step"]) / rate / 60 if status != "finished" else 0.0
    worst = max(worst, left)
    print(f"{d.parent.name}/{d.name}: {r['step']}/{steps} {r.get('tokens_per_s', 0):,.0f} tok/s {status} ~{left:.1f} min")
print(f"longest left ~{worst:.1f} min; {len(done)} finished")
if done:
    subprocess.run(["tar", "czf", f"{out}/runs.tgz", "--exclude=checkpoints", "-C", str(root), ".logs", *done], check=True)
