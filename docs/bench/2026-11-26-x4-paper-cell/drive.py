"""The hold's plan, run in the background on the 4-GPU host (python3 drive.py ROOT OUT DEADLINE_S LR):
1. scaling phase A: cfg3f at 1 process (GPU 0) and 2 (GPUs 1-2), Depo1 at 1 (GPU 3), at once;
2. the paper cell (experiment=lano_paper, RoPE + Canon-ABCD, lr LR) on 4 processes, if its projected
   end (from phase A's per-GPU rate, then from its own first 1,000 steps) is before DEADLINE_S
   seconds after this script started; else (or when it is stopped) the fallback campaign
   (fallback_runs.json on the slots of fallback_plan.json, 4 per GPU);
3. with time left: the Depo1 scaling at 2 and 4 processes.
Every decision goes to OUT/drive.jsonl."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

here = Path(__file__).parent
sys.path.insert(0, str(here))
import scaling  # noqa: E402

root, out, deadline, lr = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
t0 = time.time()
TOKENS = 100_000 * 96 * 512
SPARE_S = 180  # compile, the final eval (2,000 samples, 512 KL sentences), the checkpoint


def note(**row) -> None:
    row["t_s"] = round(time.time() - t0)
    print(json.dumps(row), flush=True)
    with open(out / "drive.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")


def left() -> float:
    return deadline - (time.time() - t0)


def fallback(reason: str) -> None:
    campaign = here.parent / "2026-11-26-x2-probe-campaign"
    shutil.copy(here / "fallback_runs.json", campaign / "runs.json")
    shutil.copy(here / "fallback_plan.json", campaign / "plan.json")
    cutoff = max(0.0, left() - 1100)  # a slot's later run starts only if a Depo1 run still fits
    note(decision="fallback campaign", reason=reason, cutoff_s=round(cutoff))
    with open(root / "campaign.log", "w") as log:
        subprocess.call([sys.executable, str(campaign / "campaign.py"), str(root), str(cutoff)],
                        stdout=log, stderr=subprocess.STDOUT)
    note(decision="fallback campaign ended")


def train_rows(run_dir: Path) -> list[dict]:
    path = run_dir / "metrics.jsonl"
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if '"train"' in x]


def paper_cell() -> bool:
    """Run the cell; False when it was stopped because it would end too late."""
    cell = root / "lano_paper"
    cell.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "WANDB_MODE": "disabled", "PLAYGROUND_HOST_RUNS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=4", "-m", "playground.run.train",
           "experiment=lano_paper", "mixer=rope", "canon=ABCD", f"train.lr={lr}", "train.ckpt_every=25000", f"out_dir={cell}/${{run_name}}"]
    with open(root / "lano_paper.log", "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    note(decision="paper cell started", command=" ".join(cmd))
    checked = False
    while proc.poll() is None:
        time.sleep(10)
        runs = list(cell.glob("*/metrics.jsonl"))
        rows = train_rows(runs[0].parent) if runs else []
        if not checked and rows and rows[-1]["step"] >= 1000:
            a = next(r for r in rows if r["step"] >= 300)
            b = rows[-1]
            rate = (b["tokens"] - a["tokens"]) / (b["train_time_s"] - a["train_time_s"])
            end = (TOKENS - b["tokens"]) / rate + 90
            checked = True
            note(check="paper cell rate", step=b["step"], tokens_per_s=round(rate), projected_left_s=round(end),
                 time_left_s=round(left()))
            if end > left():
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait()
                note(decision="paper cell stopped", reason="would end after the deadline")
                return False
    note(decision="paper cell ended", exit=proc.returncode)
    return True


def main() -> None:
    (out / "scaling.jsonl").unlink(missing_ok=True)
    scaling.run_phase(root / "scaling", out, "cfg3f_w1:0;cfg3f_w2:1,2;depo1_w1:3")
    rows = {r["job"]: r for r in map(json.loads, (out / "scaling.jsonl").read_text().splitlines())}
    per_gpu = rows.get("cfg3f_w2", {}).get("tokens_per_s", 0) / 2
    projected = TOKENS / max(4 * per_gpu, 1) + SPARE_S
    note(check="phase A", cfg3f_per_gpu_at_w2=round(per_gpu), projected_cell_s=round(projected),
         time_left_s=round(left()))
    if projected < left() and paper_cell():
        pass
    elif left() > 600:
        fallback("paper cell would not end in time")
    for phase in ("depo1_w2:0,1", "depo1_w4:0,1,2,3"):
        if left() > 150:
            scaling.run_phase(root / "scaling", out, phase)
    note(decision="done")


if __name__ == "__main__":
    main()
