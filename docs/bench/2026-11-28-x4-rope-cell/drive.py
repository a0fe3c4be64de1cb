"""The 4-GPU hold's plan, run detached on the host: python3 drive.py ROOT REPORT LR [CANONS].

1. The paper cell (`experiment=lano_paper`, lr LR) on 4 processes: the first of CANONS (default
   `none`: RoPE), else the second if the first's need was within TRY_NEXT of the time left. A
   variant is stopped at step CHECK if its rate over steps SKIP..CHECK projects its end (the
   final evaluation included) past the hold's end less MARGIN_S. The hold's end is the epoch
   second in HOLD_END, which the calls that poll this plan keep current.
2. With time left: the two-GPU test of `tests/test_gpu.py` (NCCL, the round of shards built
   ahead; output in REPORT/gpu_tests.txt), then the scaling phases (`PHASES`, each phase's jobs
   at once on disjoint GPUs), one phase at a time while one fits: 500 steps, tokens/s over
   steps 200-400 from the run's log; one process at the full batch first (the denominator of
   the scaling), then DDP on 4 and 2 processes, on the same host.
3. When no variant of the cell ran: the findings campaign (`playground-sweep findings`, results
   10, 6, 7, 8, 4: the untested ones, most important first) with the time left as its deadline.

Every decision goes to REPORT/drive.jsonl; the cell's run (checkpoints left out) to
REPORT/cell.tgz, the figures to REPORT/scaling.jsonl, the logs to REPORT/logs.tgz."""
import json
import os
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

root, report, lr = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
CANONS = (sys.argv[4] if len(sys.argv) > 4 else "none").split(",")
HOLD_END = Path("/tmp/hold_end")
TOKENS = 100_000 * 96 * 512
SKIP, CHECK = 300, 800
TRY_NEXT = 1.2  # RoPE is tried when RoPE + Canon needed at most this × the time left
EVAL_S = 150  # the final evaluation (2,000 samples, 512 KL sentences), checkpoint, summary
MARGIN_S = 50  # packing the record and the last poll's return
PHASE_S = 90  # a scaling phase: start-up, compilation (CUDA graphs), 500 steps
TEST_S = 240  # the two-GPU test: four runs of 30 steps
ENV = {**os.environ, "WANDB_MODE": "disabled", "PYTHONUNBUFFERED": "1"}

DEPO1 = ["task=depo1_K4", "task.context=512", "task.N=15", "train=paper", "train.warmup_steps=200",
         "train.lr=1e-3", "task.eval_size=64", "train.compile=true",
         "train.compile_mode=reduce-overhead", "mixer=rope", "canon=ABCD", "size=8L512D"]
CFG3F = ["experiment=lano_paper", "train.lr=1e-3", "task.gen_samples=8", "task.eval_size=8",
         "train.save_samples=false"]
BASE = {"depo1": DEPO1, "cfg3f": CFG3F}
# phases of jobs NAME:GPUS:BASE[:OVERRIDE ...], the jobs of a phase at once on disjoint GPUs;
# first one process at the full batch (the denominator of the scaling), then 4 and 2 processes
PHASES = [
    "depo1_w1:0:depo1:train.batch_size=64;cfg3f_w1:1:cfg3f",
    "cfg3f_w4:0,1,2,3:cfg3f",
    "depo1_w4:0,1,2,3:depo1:train.batch_size=64",
    "depo1_w2:0,1:depo1:train.batch_size=64;cfg3f_w2:2,3:cfg3f",
]
t0 = time.time()


def note(**row) -> None:
    row["t_s"] = round(time.time() - t0)
    print(json.dumps(row), flush=True)
    with open(report / "drive.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")


def left() -> float:
    return float(HOLD_END.read_text()) - time.time()


def train_rows(run: Path) -> list[dict]:
    path = run / "metrics.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []
    return [r for r in rows if r.get("split") == "train"]


def pack_cell() -> None:
    subprocess.call(f"tar czf {report}/.cell.tgz --exclude=checkpoints -C {root} cell "
                    f"&& mv {report}/.cell.tgz {report}/cell.tgz", shell=True)


def torchrun(gpus: str, args: list[str], log: Path, jobs: int = 1) -> subprocess.Popen:
    procs = len(gpus.split(","))
    port = 29500 + zlib.crc32(str(log).encode()) % 400
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={procs}",
           f"--master_port={port}", "-m", "playground.run.train", *args]
    with open(log, "w") as f:
        return subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**ENV, "CUDA_VISIBLE_DEVICES": gpus,
                                     "PLAYGROUND_HOST_RUNS": str(jobs)})


def paper_cell(canon: str) -> float:
    """One variant: 0 when it ran to its end, inf when it failed, else (stopped because it
    would end after the hold) the time it needed over the time there was."""
    run = root / "cell" / f"lano_paper_{canon}_lr{lr}"
    variant = "llama_rope" if canon == "none" else "llama_rope_canon"  # the findings' label
    proc = torchrun("0,1,2,3", ["experiment=lano_paper", "mixer=rope", f"canon={canon}",
                                f"train.lr={lr}", f"variant={variant}", "train.ckpt_every=100000",
                                f"out_dir={run}"],
                    root / f"cell_{canon}.log")
    note(decision="paper cell started", canon=canon, lr=lr, time_left_s=round(left()))
    checked, packed = False, time.time()
    while proc.poll() is None:
        time.sleep(5)
        rows = train_rows(run)
        if not checked and rows and rows[-1]["step"] >= CHECK:
            a, b = next(r for r in rows if r["step"] >= SKIP), rows[-1]
            rate = (b["tokens"] - a["tokens"]) / (b["train_time_s"] - a["train_time_s"])
            need = (TOKENS - b["tokens"]) / rate + EVAL_S
            checked = True
            note(check="paper cell rate", canon=canon, step=b["step"], tokens_per_s=round(rate),
                 intervals=[round(r["tokens_per_s"]) for r in rows if r["step"] > SKIP],
                 needs_s=round(need), time_left_s=round(left()), margin_s=MARGIN_S)
            if need > left() - MARGIN_S:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                note(decision="paper cell stopped", canon=canon, reason="would end after the hold")
                pack_cell()
                return need / max(left() - MARGIN_S, 1)
        if time.time() - packed > 60:
            pack_cell()
            packed = time.time()
    pack_cell()
    note(decision="paper cell ended", canon=canon, exit=proc.returncode, time_left_s=round(left()))
    return 0.0 if proc.returncode == 0 else float("inf")


def measure(run: Path, skip: int, until: int) -> dict:
    train = train_rows(run)
    first = [r for r in train if r["step"] <= skip][-1]
    later = [r for r in train if skip < r["step"] <= until]
    tokens = later[-1]["tokens"] - first["tokens"]
    seconds = later[-1]["train_time_s"] - first["train_time_s"]
    return {"tokens_per_s": round(tokens / seconds), "seconds": round(seconds, 3),
            "intervals": [round(r["tokens_per_s"]) for r in later], "final_loss": later[-1]["loss"]}


def scaling_phase(spec: str, steps: int = 500, skip: int = 200, until: int = 400) -> None:
    started, t = [], time.time()
    for job in spec.split(";"):
        name, gpus, base, *extra = job.split(":")
        run = root / "scaling" / name
        args = [*BASE[base], *extra, f"train.steps={steps}", "train.log_every=50",
                "train.eval_every=0", f"train.ckpt_every={10 * steps}", "train.progress=false",
                f"out_dir={run}"]
        started.append(({"job": name, "gpus": gpus, "processes": len(gpus.split(",")),
                          "overrides": [*BASE[base], *extra]}, run,
                         torchrun(gpus, args, root / f"{name}.log", len(spec.split(";")))))
    for row, run, proc in started:
        row.update(exit=proc.wait(), wall_s=round(time.time() - t, 1),
                   together_with=[j.split(":")[0] for j in spec.split(";")])
        if row["exit"] == 0:
            row.update(measure(run, skip, until))
            summary = json.loads((run / "summary.json").read_text())
            row["compile"] = summary.get("compile")
        with open(report / "scaling.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
        note(scaling=row["job"], exit=row["exit"], tokens_per_s=row.get("tokens_per_s"))


def gpu_test() -> None:
    note(decision="two-GPU test started", time_left_s=round(left()))
    with open(report / "gpu_tests.txt", "w") as out:
        try:
            test = ["tests/test_gpu.py", "-k", "two_gpus", "-p", "no:cacheprovider"]
            code = subprocess.call([sys.executable, "-m", "pytest", "-q", "-m", "gpu", *test],
                                   cwd="/tmp/head", stdout=out, stderr=subprocess.STDOUT,
                                   env={**ENV, "CUDA_VISIBLE_DEVICES": "0,1"}, timeout=TEST_S)
        except subprocess.TimeoutExpired:
            code = "timeout"
    note(decision="two-GPU test ended", exit=code, time_left_s=round(left()))


def findings(deadline: float) -> None:
    note(decision="findings campaign", deadline_s=round(deadline))
    with open(root / "sweep.log", "w") as log:
        subprocess.call(["playground-sweep", "findings", "scale=mini", "root=results/mini/runs",
                         "launcher=local", "per_gpu=4", f"deadline={deadline:.0f}",
                         "results=10,6,7,8,4"], cwd="/tmp/head", stdout=log,
                        stderr=subprocess.STDOUT, env=ENV)
    note(decision="findings campaign ended", time_left_s=round(left()))


def main() -> None:
    short = paper_cell(CANONS[0])
    if 1 < short <= TRY_NEXT and len(CANONS) > 1:
        short = paper_cell(CANONS[1])
    ran = short == 0
    if left() - MARGIN_S > TEST_S:
        gpu_test()
    for spec in PHASES:
        if left() - MARGIN_S > PHASE_S:
            scaling_phase(spec)
    if not ran and left() - MARGIN_S > 400:
        findings(left() - MARGIN_S - 30)
    note(decision="done", time_left_s=round(left()))


if __name__ == "__main__":
    main()
