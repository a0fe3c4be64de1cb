"""Where 2-process scaling goes, run detached on the host: python3 scaling.py ROOT REPORT.

Depo1 at 2 processes reached 86 % (2026-11-28, ../2026-11-28-round-ahead-and-mano-gla): is the rest
data parallel's own cost, or one GPU's lower rate at the per-rank batch? Phases (a phase's jobs at
once on disjoint GPUs, one phase at a time while one fits before the hold's end):
1. one process at the full batch (64) and at the per-rank batch (32), one on each GPU;
2. two processes at batch 64 (32 a rank: strong scaling, the setting of the 86 %);
3. two processes at batch 128 (64 a rank: weak scaling, data parallel's own cost);
4-5. the same for cfg3f at the paper's batch 96 (48 a rank) and 192.
8L512D + Canon-ABCD, CUDA graphs, DDP; STEPS steps, global tokens/s over steps SKIP..UNTIL from the
run's log. Figures to REPORT/scaling.jsonl, decisions to REPORT/plan.jsonl, ROOT/done at the end."""
import json
import os
import subprocess
import sys
import time
import zlib
from pathlib import Path

root, report = Path(sys.argv[1]), Path(sys.argv[2])
HOLD_END = Path("/tmp/hold_end")
MARGIN_S, PHASE_S = 30, 80
STEPS, SKIP, UNTIL = 700, 200, 650
ENV = {**os.environ, "WANDB_MODE": "disabled", "PYTHONUNBUFFERED": "1"}
DEPO1 = ["task=depo1_K4", "task.context=512", "task.N=15", "train=paper", "train.warmup_steps=200",
         "train.lr=1e-3", "task.eval_size=64", "train.compile=true",
         "train.compile_mode=reduce-overhead", "mixer=rope", "canon=ABCD", "size=8L512D"]
CFG3F = ["experiment=lano_paper", "train.lr=1e-3", "task.gen_samples=8", "task.eval_size=8",
         "train.save_samples=false"]
BASE = {"depo1": DEPO1, "cfg3f": CFG3F}
PHASES = [  # jobs NAME:GPUS:BASE:BATCH, the jobs of a phase at once on disjoint GPUs
    "depo1_w1_b64:0:depo1:64;depo1_w1_b32:1:depo1:32",
    "depo1_w2_b64:0,1:depo1:64",
    "depo1_w2_b128:0,1:depo1:128",
    "cfg3f_w1_b96:0:cfg3f:96;cfg3f_w1_b48:1:cfg3f:48",
    "cfg3f_w2_b192:0,1:cfg3f:192",
]
t0 = time.time()


def note(**row) -> None:
    row["t_s"] = round(time.time() - t0)
    print(json.dumps(row), flush=True)
    with open(report / "plan.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")


def left() -> float:
    return float(HOLD_END.read_text()) - time.time()


def measure(run: Path) -> dict:
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in rows if r.get("split") == "train"]
    first = [r for r in train if r["step"] <= SKIP][-1]
    later = [r for r in train if SKIP < r["step"] <= UNTIL]
    tokens = later[-1]["tokens"] - first["tokens"]
    seconds = later[-1]["train_time_s"] - first["train_time_s"]
    return {"tokens_per_s": round(tokens / seconds), "seconds": round(seconds, 3),
            "intervals": [round(r["tokens_per_s"]) for r in later], "final_loss": later[-1]["loss"]}


def phase(spec: str) -> None:
    jobs, started, t = spec.split(";"), [], time.time()
    for job in jobs:
        name, gpus, base, batch = job.split(":")
        run, procs = root / "scaling" / name, len(gpus.split(","))
        overrides = [*BASE[base], f"train.batch_size={batch}"]
        args = [*overrides, f"train.steps={STEPS}", "train.log_every=50", "train.eval_every=0",
                f"train.ckpt_every={10 * STEPS}", "train.progress=false", f"out_dir={run}"]
        port = 29500 + zlib.crc32(name.encode()) % 400
        cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={procs}",
               f"--master_port={port}", "-m", "playground.run.train", *args]
        with open(root / f"{name}.log", "w") as log:
            proc = subprocess.Popen(cmd, cwd="/tmp/head", stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True,
                                    env={**ENV, "CUDA_VISIBLE_DEVICES": gpus,
                                         "PLAYGROUND_HOST_RUNS": str(len(jobs))})
        started.append(({"job": name, "gpus": gpus, "processes": procs, "overrides": overrides,
                         "together_with": [j.split(":")[0] for j in jobs]}, run, proc))
    for row, run, proc in started:
        row.update(exit=proc.wait(), wall_s=round(time.time() - t, 1))
        if row["exit"] == 0:
            row.update(measure(run))
        with open(report / "scaling.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
        note(scaling=row["job"], exit=row["exit"], tokens_per_s=row.get("tokens_per_s"))


def main() -> None:
    for spec in PHASES:
        if left() - MARGIN_S > PHASE_S:
            phase(spec)
        else:
            note(decision="phase left out: no time", phase=spec, time_left_s=round(left()))
    note(decision="done", time_left_s=round(left()))
    (root / "done").touch()


if __name__ == "__main__":
    main()
