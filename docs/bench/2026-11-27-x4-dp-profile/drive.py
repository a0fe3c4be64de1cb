"""The hold's plan, run in the background on the 4-GPU host (python3 drive.py ROOT OUT DEADLINE_S):
1. data-parallel diagnosis, Depo1 mini (K = 4, N = 15, batch 64 x 512, 8L512D RoPE + Canon-ABCD,
   compiled), two phases of jobs at once on disjoint GPUs; each job 430 steps, global tokens/s over
   steps 150-400 from its own log (the 2026-11-26 scaling.py), then steps 405-424 under the PyTorch
   profiler where the job is profiled (prof_train.py);
2. the probe campaign: runs.json on the slots of plan.json (4 per GPU), started only while the
   campaign can end before DEADLINE_S seconds after this script started.
Every decision goes to OUT/drive.jsonl."""
import json
import os
import shutil
import subprocess
import sys
import time
import zlib
from pathlib import Path

here = Path(__file__).parent
sys.path.insert(0, str(here.parent / "2026-11-26-x4-paper-cell"))
import scaling  # noqa: E402

root, out, deadline = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
t0 = time.time()
STEPS = 430
PHASES = [
    {"w1": ("0", [], True), "w2": ("1,2", [], True),
     "w1_torchconv": ("3", ["model.canon.backend=torch"], False)},
    {"w2_torchconv": ("0,1", ["model.canon.backend=torch"], True),
     "w2_cudagraphs": ("2,3", ["train.compile_mode=reduce-overhead"], False)},
]
CAMPAIGN_S = 900  # the longest run of the campaign at 4 per GPU (Mano ~700-830 s on 2026-11-26)


def note(**row) -> None:
    row["t_s"] = round(time.time() - t0)
    print(json.dumps(row), flush=True)
    with open(out / "drive.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")


def start(name: str, gpus: str, extra: list[str], profiled: bool, jobs: int):
    procs = len(gpus.split(","))
    run = root / "scaling" / name
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpus, "PLAYGROUND_HOST_RUNS": str(jobs),
           "WANDB_MODE": "disabled", "PROF_FROM": "405" if profiled else "1000000",
           "TORCH_LOGS": "recompiles,graph_breaks"}
    port = 29600 + zlib.crc32(name.encode()) % 300
    target = [str(here / "prof_train.py")] if profiled else ["-m", "playground.run.train"]
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={procs}",
           f"--master_port={port}", *target, *scaling.TASKS["depo1"], *scaling.COMMON,
           f"train.steps={STEPS}", *extra, f"out_dir={run}"]
    log = open(root / "scaling" / f"{name}.log", "w")
    note(job=name, gpus=gpus, command=" ".join(cmd))
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    return name, gpus, procs, extra, run, proc


def phase(jobs: dict) -> None:
    (root / "scaling").mkdir(parents=True, exist_ok=True)
    running = [start(n, g, e, p, len(jobs)) for n, (g, e, p) in jobs.items()]
    for name, gpus, procs, extra, run, proc in running:
        code = proc.wait()
        row = {"job": name, "gpus": gpus, "processes": procs, "extra": extra,
               "together_with": list(jobs), "exit": code}
        if code == 0:
            row.update(scaling.measure(run))
        note(**row)
        for f in run.glob("profile_rank*.json"):
            shutil.copy(f, out / f"{name}_{f.name}")
        for f in run.glob("trace_rank*.json.gz"):
            shutil.copy(f, out / f"{name}_{f.name}")
        shutil.copy(root / "scaling" / f"{name}.log", out / f"{name}.log")


def main() -> None:
    for jobs in PHASES:
        phase(jobs)
    left = deadline - (time.time() - t0)
    if left < CAMPAIGN_S:
        note(decision="no campaign", left_s=round(left))
        return
    campaign = here.parent / "2026-11-26-x2-probe-campaign"
    shutil.copy(here / "runs.json", campaign / "runs.json")
    shutil.copy(here / "plan.json", campaign / "plan.json")
    note(decision="campaign", left_s=round(left))
    with open(root / "campaign.log", "w") as log:
        subprocess.call([sys.executable, str(campaign / "campaign.py"), str(root), "0"],
                        stdout=log, stderr=subprocess.STDOUT)
    note(decision="campaign ended")


if __name__ == "__main__":
    main()
