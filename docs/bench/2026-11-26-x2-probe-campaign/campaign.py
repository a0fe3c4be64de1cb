"""Start this folder's runs (runs.json) on the slots of plan.json: {gpu: [[run index, ...], ...]},
each slot one process at a time on that GPU, its runs in order. A slot's later runs start only
while no file ROOT/.no-more-starts exists and fewer than CUTOFF_S seconds have passed; a GPU named
in WAIT waits for the file ROOT/.gpu<N>.go first (a benchmark runs there meanwhile). Run records
go under ROOT (outside the checkout, which each device call re-sends); logs keep every attempt.
python3 campaign.py ROOT CUTOFF_S [WAIT_GPU,...]"""
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

root, cutoff = Path(sys.argv[1]), float(sys.argv[2])
wait = set(sys.argv[3].split(",")) if len(sys.argv) > 3 and sys.argv[3] else set()
here = Path(__file__).parent
runs = [[o.replace("results/mini/runs/", f"{root}/") if o.startswith("out_dir=") else o for o in r["overrides"]]
        for r in json.loads((here / "runs.json").read_text())]
plan = json.loads((here / "plan.json").read_text())
slots = sum(len(s) for s in plan.values())
logs = root / ".logs"
logs.mkdir(parents=True, exist_ok=True)
start = time.time()


def slot(gpu: str, queue: list[int]) -> None:
    while gpu in wait and not (root / f".gpu{gpu}.go").exists():
        time.sleep(2)
    for n, index in enumerate(queue):
        late = time.time() - start > cutoff or (root / ".no-more-starts").exists()
        if n and late:
            print(f"run {index}: not started (cutoff)", flush=True)
            continue
        env = {**os.environ, "PLAYGROUND_HOST_RUNS": str(slots), "CUDA_VISIBLE_DEVICES": gpu}
        attempt = len(list(logs.glob(f"run{index:02d}.*.log")))
        with open(logs / f"run{index:02d}.{attempt}.log", "w") as log:
            t0 = time.time()
            print(f"run {index} on GPU {gpu}: start at {t0 - start:.0f} s", flush=True)
            code = subprocess.call([sys.executable, "-m", "playground.run.train", *runs[index]],
                                   stdout=log, stderr=subprocess.STDOUT, env=env)
        print(f"run {index} on GPU {gpu}: exit {code} after {time.time() - t0:.0f} s", flush=True)


threads = [threading.Thread(target=slot, args=(g, q)) for g, qs in plan.items() for q in qs]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"done after {time.time() - start:.0f} s", flush=True)
