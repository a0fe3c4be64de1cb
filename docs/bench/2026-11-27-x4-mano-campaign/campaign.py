"""Run this folder's runs.json on every GPU of the host, up to PER_GPU at once on each, in the
file's order, and keep the finished runs' records packed for the device call that copies them.

python3 campaign.py ROOT REPORT DEADLINE_S [PER_GPU]

- A run starts on the GPU with the fewest running only if it is expected to end before
  DEADLINE_S seconds after this script started. Its expected time is the longest finished run of
  its kind sharing a GPU with 3 others (before any finished: PRIOR_S), scaled to the number
  sharing its GPU when it starts (SHARE: measured fractions of the 4-at-once time), times 1.1.
  Runs later in the file that fit still start when an earlier one does not.
- After every finished run, REPORT/runs.tgz is rewritten (written aside, then renamed) with every
  finished run's records, checkpoints left out, and the logs of every attempt.
- Every start, end and refusal is a line of REPORT/campaign.jsonl.
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

root, report, deadline = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
per_gpu = int(sys.argv[4]) if len(sys.argv) > 4 else 4
here = Path(__file__).parent
PRIOR_S = {"llama": 650.0, "gla": 1000.0}  # Mano L = 4 at 4 per H200 (2026-11-27 dp-profile record)
SHARE = {1: 0.5, 2: 0.65, 3: 0.83, 4: 1.0}  # a run's time alone .. 4 at once, relative to 4 at once
t0 = time.time()
runs = json.loads((here / "runs.json").read_text())
for r in runs:
    r["overrides"] = [o.replace("results/mini/runs/", f"{root}/") if o.startswith("out_dir=") else o
                      for o in r["overrides"]]
gpus = [g for g in os.environ.get("CUDA_VISIBLE_DEVICES", "0,1,2,3").split(",") if g]
logs = root / ".logs"
logs.mkdir(parents=True, exist_ok=True)
report.mkdir(parents=True, exist_ok=True)
queue = list(range(len(runs)))
running: dict[int, tuple[str, float, subprocess.Popen]] = {}
longest: dict[str, float] = {}


def note(**row) -> None:
    row["t_s"] = round(time.time() - t0)
    with open(report / "campaign.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)


def expected(kind: str, sharing: int) -> float:
    full = longest.get(kind) or PRIOR_S[kind]
    return 1.1 * full * SHARE[min(sharing, 4)]


def pack() -> None:
    done = sorted(str(p.parent.relative_to(root)) for p in root.glob("*/*/summary.json")
                  if json.loads(p.read_text()).get("status") == "finished")
    if done:
        tmp = report / "runs.tgz.tmp"
        subprocess.run(["tar", "czf", str(tmp), "--exclude=checkpoints", "-C", str(root), ".logs",
                        *done], check=True)
        tmp.rename(report / "runs.tgz")
    note(event="packed", finished=len(done))


refused: set[int] = set()
while queue or running:
    for index, (gpu, start, proc) in list(running.items()):
        if proc.poll() is None:
            continue
        took = time.time() - start
        r = runs[index]
        if proc.returncode == 0 and sum(g == gpu for g, _, _ in running.values()) == per_gpu:
            longest[r["kind"]] = max(longest.get(r["kind"], 0.0), took)
        del running[index]
        note(event="end", run=index, panel=r["panel"], variant=r["variant"], seed=r["seed"],
             gpu=gpu, exit=proc.returncode, took_s=round(took))
        pack()
    for gpu in sorted(gpus, key=lambda g: sum(x == g for x, _, _ in running.values())):
        sharing = sum(x == gpu for x, _, _ in running.values()) + 1
        if sharing > per_gpu:
            continue
        fits = [i for i in queue
                if time.time() - t0 + expected(runs[i]["kind"], sharing) <= deadline]
        for i in set(queue) - set(fits) - refused:
            refused.add(i)
            note(event="refused", run=i, variant=runs[i]["variant"], seed=runs[i]["seed"],
                 expected_s=round(expected(runs[i]["kind"], sharing)))
        if not fits:
            continue
        index = fits[0]
        queue.remove(index)
        r = runs[index]
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpu,
               "PLAYGROUND_HOST_RUNS": str(per_gpu * len(gpus)), "WANDB_MODE": "disabled"}
        attempt = len(list(logs.glob(f"run{index:02d}.*.log")))
        with open(logs / f"run{index:02d}.{attempt}.log", "w") as log:
            proc = subprocess.Popen([sys.executable, "-m", "playground.run.train", *r["overrides"]],
                                    stdout=log, stderr=subprocess.STDOUT, env=env)
        running[index] = (gpu, time.time(), proc)
        note(event="start", run=index, panel=r["panel"], variant=r["variant"], seed=r["seed"],
             gpu=gpu, sharing=sharing)
    if not running and queue and not any(
            time.time() - t0 + expected(runs[i]["kind"], 1) <= deadline for i in queue):
        break
    time.sleep(5)
note(event="done", left=[runs[i]["variant"] + f"/s{runs[i]['seed']}" for i in queue])
