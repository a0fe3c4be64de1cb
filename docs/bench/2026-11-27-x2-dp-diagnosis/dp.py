"""Data parallel with CUDA graphs, diagnosed on a 2-GPU host: python3 dp.py OUT PHASE [PHASE ...].
A phase is ';'-separated jobs run at once on disjoint GPUs, each NAME:GPUS:BATCH[:prof]: the Depo1
mini config (K = 4, N = 15, context 512, 8L512D RoPE + Canon-ABCD, compiled with CUDA graphs,
`train.compile_mode=reduce-overhead`) at global batch BATCH, with torchrun on len(GPUS) processes;
`prof` runs it under ../2026-11-27-x4-dp-profile/prof_train.py (steps PROF_FROM..+19 profiled, every
rank). Each job's global tokens/s over steps SKIP..STEPS from its own metrics.jsonl goes to
OUT/dp.jsonl; its log to OUT/NAME.log."""
import json
import os
import subprocess
import sys
import time
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROF = HERE.parent / "2026-11-27-x4-dp-profile" / "prof_train.py"
STEPS, SKIP, PROF_FROM = 600, 200, 560
TASK = ["task=depo1_K4", "task.context=512", "task.N=15", "train=paper", "train.warmup_steps=200",
        "train.lr=1e-3", "task.eval_size=64"]
COMMON = [f"train.steps={STEPS}", "train.log_every=50", "train.eval_every=0",
          "train.ckpt_every=100000", "train.compile=true", "train.compile_mode=reduce-overhead",
          "mixer=rope", "canon=ABCD", "size=8L512D"]


def start(out: Path, job: str, jobs: int):
    name, gpus, batch, *flags = job.split(":")
    procs = len(gpus.split(","))
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpus, "PLAYGROUND_HOST_RUNS": str(jobs),
           "WANDB_MODE": "disabled", "PROF_FROM": str(PROF_FROM)}
    port = 29600 + zlib.crc32(name.encode()) % 300
    entry = [str(PROF)] if "prof" in flags else ["-m", "playground.run.train"]
    run_dir = out / "runs" / name
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={procs}",
           f"--master_port={port}", *entry, *TASK, *COMMON, f"train.batch_size={batch}",
           f"out_dir={run_dir}"]
    log = open(out / f"{name}.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    return {"job": name, "gpus": gpus, "processes": procs, "batch": int(batch),
            "profiled": "prof" in flags}, run_dir, proc


def measure(run_dir: Path) -> dict:
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in rows if r.get("split") == "train"]
    first = [r for r in train if r["step"] <= SKIP][-1]
    later = [r for r in train if r["step"] > SKIP]
    tokens = later[-1]["tokens"] - first["tokens"]
    seconds = later[-1]["train_time_s"] - first["train_time_s"]
    return {"tokens_per_s": round(tokens / seconds), "steps": later[-1]["step"] - first["step"],
            "seconds": round(seconds, 3), "intervals": [round(r["tokens_per_s"]) for r in later],
            "final_loss": later[-1]["loss"]}


def phase(out: Path, spec: str) -> None:
    jobs = spec.split(";")
    t0 = time.time()
    running = [start(out, j, len(jobs)) for j in jobs]
    for row, run_dir, proc in running:
        row.update(exit=proc.wait(), together_with=[j.split(":")[0] for j in jobs])
        row["wall_s"] = round(time.time() - t0, 1)
        if row["exit"] == 0:
            row.update(measure(run_dir))
        print(json.dumps(row), flush=True)
        with open(out / "dp.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    for p in sys.argv[2:]:
        phase(target, p)
