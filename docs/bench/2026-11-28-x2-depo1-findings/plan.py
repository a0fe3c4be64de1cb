"""One two-GPU hold's plan, run detached on the host: python3 plan.py ROOT REPORT.

The Depo1 runs of Result 6 (GLA seed 2, GLA + Canon-ABCD seeds 0-2) and of Result 4 without
residual (NoPE + Canon-ABCD-nores seeds 0-2), seven runs, split between the two GPUs by hand
(`findings_gpu0.yaml`, `findings_gpu1.yaml`: 2 GLA + 1 NoPE and 2 GLA + 2 NoPE, estimated
1,218 and 1,363 s), each share a `playground-sweep` launch on one GPU with all its runs at once.

No launch deadline: the launcher's ×1.5 margin would start fewer runs than fit. A guard takes its
place: every 30 s, from each running run's measured step rate, it projects when each GPU's last
run ends (the runs sharing a GPU speed up as others end, by the estimate's wall time at each
sharing, `playground.sweep.cost`); if that is after the hold's end less MARGIN_S, it stops the
least advanced run on that GPU so the others end in time, at most one per GPU every 120 s.

The hold's end is the epoch second in /tmp/hold_end, which the start call sets. Every decision goes
to REPORT/plan.jsonl; REPORT/../done marks the end."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

root, report = Path(sys.argv[1]), Path(sys.argv[2])
HERE = Path(__file__).resolve().parent
HOLD_END = Path("/tmp/hold_end")
MARGIN_S = 45  # packing the records and the last poll's return
EVAL_S = 40  # the final evaluation and summary, after the last step
RUNS = Path("results/mini/runs")
ENV = {**os.environ, "WANDB_MODE": "disabled", "PYTHONUNBUFFERED": "1"}
t0 = time.time()


def note(**row) -> None:
    row["t_s"] = round(time.time() - t0)
    print(json.dumps(row), flush=True)
    with open(report / "plan.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")


def left() -> float:
    return float(HOLD_END.read_text()) - time.time()


def planned(gpu: str) -> list:
    from playground.report.findings import load_findings, needed_runs
    from playground.sweep.launch import plan

    return plan(needed_runs(load_findings(HERE / f"findings_gpu{gpu}.yaml", ""), str(RUNS)))


def walls(run) -> list[float]:
    """The estimated wall seconds of ``run`` at sharing 1..4."""
    from playground.sweep.cost import estimate

    return [estimate(run.config, k).gpu_s * k for k in (1, 2, 3, 4)]


def progress(run) -> tuple[int, float, bool] | None:
    """(step, steps per second over the last ≤ 10 logged intervals, finished) or None."""
    summary = run.out / "summary.json"
    if summary.exists() and json.loads(summary.read_text()).get("status") == "finished":
        return run.config.train.steps, 0.0, True
    path = run.out / "metrics.jsonl"
    if not path.exists():
        return None
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    train = [r for r in rows if r.get("split") == "train"][-11:]
    if len(train) < 3 or train[-1]["step"] < 300:
        return None
    rate = ((train[-1]["step"] - train[0]["step"])
            / (train[-1]["train_time_s"] - train[0]["train_time_s"]))
    return train[-1]["step"], rate, False


def projected_end(active: list[tuple]) -> float:
    """Seconds from now until the last of ``active`` runs (run, step, rate, walls) ends: each
    run's remaining steps at its measured rate, rescaled by walls[k-1] / walls[now-1] as the
    sharing k falls."""
    k0 = len(active)
    left_steps = {id(r): r.config.train.steps - step for r, step, _, _ in active}
    speed = {id(r): rate * w[k0 - 1] for r, _, rate, w in active}  # steps/s × wall at k0
    ws = {id(r): w for r, _, _, w in active}
    now, alive = 0.0, [r for r, *_ in active]
    while alive:
        k = len(alive)
        rates = {id(r): speed[id(r)] / ws[id(r)][min(k, 4) - 1] for r in alive}
        first = min(alive, key=lambda r: left_steps[id(r)] / rates[id(r)])
        dt = left_steps[id(first)] / rates[id(first)]
        now += dt
        for r in alive:
            left_steps[id(r)] -= dt * rates[id(r)]
        alive.remove(first)
    return now + EVAL_S


def stop(run) -> None:
    """Stop the training process of ``run`` (its overrides name it: variant, seed)."""
    keys = [o for o in run.overrides if o.startswith(("variant=", "seed="))]
    out = subprocess.run(["pgrep", "-f", "playground.run.train"], capture_output=True, text=True)
    for pid in out.stdout.split():
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        if all(k in cmd for k in keys) and "panel=depo1_K4" in cmd:
            os.kill(int(pid), signal.SIGTERM)
            note(decision="stopped", run=run.out.name, pid=int(pid))


def main() -> None:
    groups = {gpu: planned(gpu) for gpu in ("0", "1")}
    est = {id(r): walls(r) for runs in groups.values() for r in runs}
    note(decision="planned", runs={g: [r.out.name for r in runs] for g, runs in groups.items()},
         walls={r.out.name: [round(w) for w in est[id(r)]] for rs in groups.values() for r in rs},
         time_left_s=round(left()))
    procs = {}
    for gpu in groups:
        log = open(root / f"launch_gpu{gpu}.log", "w")  # noqa: SIM115 - closed at exit
        procs[gpu] = subprocess.Popen(
            ["playground-sweep", str(HERE / f"findings_gpu{gpu}.yaml"), "scale=mini",
             f"root={RUNS}", "launcher=local", "gpus=1", "per_gpu=4"], stdout=log,
            stderr=subprocess.STDOUT, env={**ENV, "CUDA_VISIBLE_DEVICES": gpu})
    last_stop = {gpu: 0.0 for gpu in groups}
    stopped: set[int] = set()
    while any(p.poll() is None for p in procs.values()):
        time.sleep(30)
        for gpu, runs in groups.items():
            seen = [(r, progress(r)) for r in runs if id(r) not in stopped]
            active = [(r, p[0], p[1], est[id(r)]) for r, p in seen if p and not p[2]]
            if not active or any(p is None for _, p in seen):
                continue
            end = projected_end(active)
            row = {"gpu": gpu, "projected_end_s": round(end), "time_left_s": round(left()),
                   "steps": {r.out.name[-28:]: s for r, s, _, _ in active}}
            if end > left() - MARGIN_S and time.time() - last_stop[gpu] > 120:
                victim = min(active, key=lambda a: a[1] / a[0].config.train.steps)[0]
                note(**row, decision="projected past the hold: stop the least advanced run")
                stop(victim)
                stopped.add(id(victim))
                last_stop[gpu] = time.time()
            elif int(time.time() - t0) % 120 < 30:
                note(**row)
    note(decision="launches ended", exits={g: p.returncode for g, p in procs.items()},
         time_left_s=round(left()))
    note(decision="done", time_left_s=round(left()))
    (root / "done").touch()


if __name__ == "__main__":
    main()
