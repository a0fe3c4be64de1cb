"""One hold's plan, run detached on the host: python3 plan.py ROOT REPORT MODE.

MODE ``scaling`` (2 GPUs):
1. The two-GPU test of `tests/test_gpu.py` (NCCL; DDP and the flat gradient sum; the round of
   shards built ahead), output in REPORT/gpu_tests.txt.
2. The scaling phases (`PHASES`; a phase's jobs at once on disjoint GPUs, one phase at a time
   while one fits): STEPS steps, global tokens/s over steps SKIP..UNTIL from the run's log; one
   process at the full batch first (the denominator), then 2 processes with the code of this
   commit (`new`: each round of shards built ahead by a thread) and, for Depo1, with the code
   before it (`old`: commit 8bb08d9, carried as .whl/old.tar), side by side on the same host.

MODE ``findings`` (1 GPU): the four Mano GLA runs of Result 6 (`playground-sweep probe
panels=mano variants=gla,gla_canon`, all at once on the GPU), then with the time left the
Depo1 runs of Result 4 (`playground-sweep findings results=4`); each launch with a deadline.

The hold's end is the epoch second in /tmp/hold_end, which the start call sets. Every decision goes
to REPORT/plan.jsonl (kept here as plan_<mode>.jsonl); the figures to REPORT/scaling.jsonl;
REPORT/../done marks the end."""
import json
import os
import subprocess
import sys
import time
import zlib
from pathlib import Path

root, report, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
HOLD_END = Path("/tmp/hold_end")
MARGIN_S = 45  # packing the records and the last poll's return
PHASE_S = 100  # a scaling phase: start-up, compilation (CUDA graphs), STEPS steps
TEST_S = 240  # the two-GPU test: four runs of 30 steps
STEPS, SKIP, UNTIL = 700, 200, 650
ENV = {**os.environ, "WANDB_MODE": "disabled", "PYTHONUNBUFFERED": "1"}
CODE = {"new": Path("/tmp/head"), "old": Path("/tmp/old")}

DEPO1 = ["task=depo1_K4", "task.context=512", "task.N=15", "train=paper", "train.warmup_steps=200",
         "train.lr=1e-3", "task.eval_size=64", "train.compile=true",
         "train.compile_mode=reduce-overhead", "mixer=rope", "canon=ABCD", "size=8L512D",
         "train.batch_size=64"]
CFG3F = ["experiment=lano_paper", "train.lr=1e-3", "task.gen_samples=8", "task.eval_size=8",
         "train.save_samples=false"]
BASE = {"depo1": DEPO1, "cfg3f": CFG3F}
# phases of jobs NAME:GPUS:BASE:CODE, the jobs of a phase at once on disjoint GPUs
PHASES = [
    "depo1_w1:0:depo1:new;cfg3f_w1:1:cfg3f:new",
    "depo1_w2:0,1:depo1:new",
    "depo1_w2_old:0,1:depo1:old",
    "cfg3f_w2:0,1:cfg3f:new",
]
t0 = time.time()


def note(**row) -> None:
    row["t_s"] = round(time.time() - t0)
    print(json.dumps(row), flush=True)
    with open(report / "plan.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")


def left() -> float:
    return float(HOLD_END.read_text()) - time.time()


def torchrun(gpus: str, args: list[str], log: Path, code: Path, jobs: int) -> subprocess.Popen:
    procs = len(gpus.split(","))
    port = 29500 + zlib.crc32(str(log).encode()) % 400
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={procs}",
           f"--master_port={port}", "-m", "playground.run.train", *args]
    path = f"{code}:{ENV.get('PYTHONPATH', '')}"  # this code's package before the installed one
    with open(log, "w") as f:
        return subprocess.Popen(cmd, cwd=code, stdout=f, stderr=subprocess.STDOUT,
                                start_new_session=True,
                                env={**ENV, "PYTHONPATH": path, "CUDA_VISIBLE_DEVICES": gpus,
                                     "PLAYGROUND_HOST_RUNS": str(jobs)})


def measure(run: Path) -> dict:
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in rows if r.get("split") == "train"]
    first = [r for r in train if r["step"] <= SKIP][-1]
    later = [r for r in train if SKIP < r["step"] <= UNTIL]
    tokens = later[-1]["tokens"] - first["tokens"]
    seconds = later[-1]["train_time_s"] - first["train_time_s"]
    return {"tokens_per_s": round(tokens / seconds), "seconds": round(seconds, 3),
            "intervals": [round(r["tokens_per_s"]) for r in later], "final_loss": later[-1]["loss"]}


def scaling_phase(spec: str) -> None:
    jobs, started, t = spec.split(";"), [], time.time()
    for job in jobs:
        name, gpus, base, code = job.split(":")
        run = root / "scaling" / name
        args = [*BASE[base], f"train.steps={STEPS}", "train.log_every=50", "train.eval_every=0",
                f"train.ckpt_every={10 * STEPS}", "train.progress=false", f"out_dir={run}"]
        row = {"job": name, "gpus": gpus, "processes": len(gpus.split(",")), "code": code,
               "overrides": BASE[base], "together_with": [j.split(":")[0] for j in jobs]}
        started.append((row, run, torchrun(gpus, args, root / f"{name}.log", CODE[code],
                                           len(jobs))))
    for row, run, proc in started:
        row.update(exit=proc.wait(), wall_s=round(time.time() - t, 1))
        if row["exit"] == 0:
            row.update(measure(run))
            row["compile"] = json.loads((run / "summary.json").read_text()).get("compile")
        with open(report / "scaling.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
        note(scaling=row["job"], exit=row["exit"], tokens_per_s=row.get("tokens_per_s"))


def gpu_test() -> None:
    note(decision="two-GPU test started", time_left_s=round(left()))
    with open(report / "gpu_tests.txt", "w") as out:
        try:
            test = ["tests/test_gpu.py", "-k", "two_gpus", "-p", "no:cacheprovider"]
            code = subprocess.call([sys.executable, "-m", "pytest", "-q", "-m", "gpu", *test],
                                   cwd=CODE["new"], stdout=out, stderr=subprocess.STDOUT,
                                   env={**ENV, "CUDA_VISIBLE_DEVICES": "0,1"}, timeout=TEST_S)
        except subprocess.TimeoutExpired:
            code = "timeout"
    note(decision="two-GPU test ended", exit=code, time_left_s=round(left()))


def sweep(name: str, *args: str) -> None:
    deadline = left() - MARGIN_S - 20
    note(decision=f"{name} launched", deadline_s=round(deadline))
    with open(root / f"{name}.log", "w") as log:
        subprocess.call(["playground-sweep", *args, "scale=mini", "root=results/mini/runs",
                         "launcher=local", f"deadline={deadline:.0f}"], cwd=CODE["new"],
                        stdout=log, stderr=subprocess.STDOUT, env=ENV)
    note(decision=f"{name} ended", time_left_s=round(left()))


def main() -> None:
    if mode == "scaling":
        if left() - MARGIN_S > TEST_S:
            gpu_test()
        for spec in PHASES:
            if left() - MARGIN_S > PHASE_S:
                scaling_phase(spec)
    else:
        sweep("mano_gla", "probe", "panels=mano", "variants=gla,gla_canon", "per_gpu=4")
        sweep("result4", "findings", "results=4", "per_gpu=3")
    note(decision="done", time_left_s=round(left()))
    (root / "done").touch()


if __name__ == "__main__":
    main()
