"""The tables of this folder's README from its run records: per run, accuracy at l = 1 and at
l = L = 2 at every evaluation, and the last logged training loss.

    python results/mini/mano_residual_cpu/table.py
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def records(run: Path, split: str) -> list[dict]:
    lines = (run / "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r.get("split") == split]


def main() -> int:
    runs = sorted(p for p in HERE.iterdir() if (p / "metrics.jsonl").exists())
    steps = sorted({r["step"] for run in runs for r in records(run, "eval")})
    for metric, what in (("acc_l1", "l = 1"), ("acc", "l = L = 2")):
        print(f"\nAccuracy at {what} (%), by step:\n")
        print("| run | " + " | ".join(f"{s:,}" for s in steps) + " | last training loss |")
        print("|---|" + "---|" * (len(steps) + 1))
        for run in runs:
            evals = {r["step"]: r[metric] for r in records(run, "eval")}
            train = records(run, "train")
            print(f"| {run.name} | " + " | ".join(
                f"{100 * evals[s]:.1f}" if s in evals else "—" for s in steps)
                + f" | {train[-1]['loss']:.3f} (step {train[-1]['step']:,}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
