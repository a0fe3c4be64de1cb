"""The training thread's wait for data under data parallel, with a stand-in for the GPU step.

``python stall.py W STEPS STEP_MS [TASK]`` — W ranks joined over gloo (a file store), each
reading STEPS global batches through ``Batches`` (its ``ShardExchange``, 1 loader worker) and
sleeping STEP_MS after each (a step that leaves the host free, as a step queued on a GPU does);
prints, per rank, the milliseconds a step spent in ``next(batches)``: mean, 99th percentile,
largest, and their sum. Run from the repository root with the package installed (for the code
before, with PYTHONPATH at a copy of it). TASK: depo1 or cfg3f (default).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time

TASKS = {  # name: (overrides, global batch)
    "depo1": (["task=depo1", "task.K=4", "task.N=15", "task.context=512"], 64),
    "cfg3f": (["task=cfg3f"], 96),
}


def rank(r: int, size: int, store: str, steps: int, step_ms: float, name: str) -> None:
    import torch.distributed as dist

    from playground.config import compose, to_objects
    from playground.data.loader import Batches, ShardExchange
    from playground.data.packing import shard_size
    from playground.tasks import build_task

    dist.init_process_group("gloo", init_method=f"file://{store}", rank=r, world_size=size)
    task = build_task(to_objects(compose(TASKS[name][0])).task)
    b = Batches(task, TASKS[name][1], shard_size(task), num_workers=1, prefetch=4,
                exchange=ShardExchange.join(r, size))
    waits = []
    for _ in range(steps):
        tic = time.perf_counter()
        next(b)
        waits.append(time.perf_counter() - tic)
        time.sleep(step_ms / 1e3)
    getattr(b, "close", lambda: None)()
    dist.barrier()
    waits = sorted(w * 1e3 for w in waits[10:])  # the first steps wait for the workers' start
    print(json.dumps({"rank": r, "world": size, "task": name, "steps": steps, "step_ms": step_ms,
                      "wait_ms_mean": round(sum(waits) / len(waits), 3),
                      "wait_ms_p99": round(waits[int(0.99 * len(waits))], 3),
                      "wait_ms_max": round(waits[-1], 3), "wait_s_sum": round(sum(waits) / 1e3, 3),
                      "ahead": hasattr(b, "close")}), flush=True)
    dist.destroy_process_group()


def main() -> None:
    if sys.argv[1] == "rank":
        rank(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5]),
             float(sys.argv[6]), sys.argv[7])
        return
    size, steps, step_ms = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    name = sys.argv[4] if len(sys.argv) > 4 else "cfg3f"
    with tempfile.TemporaryDirectory() as tmp:
        procs = [subprocess.Popen([sys.executable, __file__, "rank", str(r), str(size),
                                   f"{tmp}/store", str(steps), str(step_ms), name],
                                  stdout=subprocess.PIPE, text=True)
                 for r in range(size)]
        outs = [p.communicate()[0] for p in procs]  # printed in rank order, whole lines
        if any(p.returncode for p in procs):
            raise SystemExit("a rank failed")
        print("".join(outs), end="", flush=True)


if __name__ == "__main__":
    main()
