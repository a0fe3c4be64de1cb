"""Data-parallel scaling on one multi-GPU host: global tokens/s of short compiled runs at 1, 2 and
4 processes (torchrun), for Lano cfg3f at the paper's recipe and Depo1 at the mini protocol.
python3 scaling.py ROOT OUT PHASE [PHASE ...]; a phase is ';'-separated jobs run at once, each
NAME:GPUS (e.g. "cfg3f_w1:0;cfg3f_w2:1,2"). Writes OUT/scaling.jsonl: per job the global tokens/s
over the log intervals after step SKIP (compilation excluded), its world size and GPUs."""
import json
import os
import subprocess
import sys
import time
import zlib
from pathlib import Path

STEPS, SKIP = 400, 150
COMMON = [f"train.steps={STEPS}", "train.log_every=50", "train.eval_every=0", "train.ckpt_every=100000",
          "train.compile=true", "mixer=rope", "canon=ABCD", "size=8L512D"]
TASKS = {
    "cfg3f": ["experiment=lano_paper", "train.lr=1e-3", "task.gen_samples=8", "task.eval_size=8"],
    "depo1": ["task=depo1_K4", "task.context=512", "task.N=15", "train=paper", "train.batch_size=64", "train.warmup_steps=200",
              "train.lr=1e-3", "task.eval_size=64"],
}


def start(root: Path, name: str, gpus: str, jobs: int):
    task, procs = name.split("_w")[0], len(gpus.split(","))
    out = root / name
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpus, "PLAYGROUND_HOST_RUNS": str(jobs), "WANDB_MODE": "disabled"}
    port = 29600 + zlib.crc32(name.encode()) % 300
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={procs}", f"--master_port={port}",
           "-m", "playground.run.train", *TASKS[task], *COMMON, f"out_dir={out}"]
    log = open(root / f"{name}.log", "w")
    return name, gpus, procs, out, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)


def measure(out: Path) -> dict:
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in rows if r.get("split") == "train"]
    later = [r for r in train if r["step"] > SKIP]
    first = [r for r in train if r["step"] <= SKIP][-1]
    tokens = later[-1]["tokens"] - first["tokens"]
    seconds = later[-1]["train_time_s"] - first["train_time_s"]
    return {"tokens_per_s": tokens / seconds, "steps": later[-1]["step"] - first["step"], "seconds": seconds,
            "intervals": [round(r["tokens_per_s"]) for r in later], "final_loss": later[-1]["loss"]}


def run_phase(root: Path, out: Path, phase: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    jobs = [j.split(":") for j in phase.split(";")]
    t0 = time.time()
    running = [start(root, name, gpus, len(jobs)) for name, gpus in jobs]
    for name, gpus, procs, run_out, proc in running:
        code = proc.wait()
        row = {"job": name, "gpus": gpus, "processes": procs, "together_with": [j[0] for j in jobs],
               "exit": code, "wall_s": round(time.time() - t0, 1)}
        if code == 0:
            row.update(measure(run_out))
        print(json.dumps(row), flush=True)
        with open(out / "scaling.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    for p in sys.argv[3:]:
        run_phase(Path(sys.argv[1]), Path(sys.argv[2]), p)
