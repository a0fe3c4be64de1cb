"""Data generation per rank under data parallel (docs/PERFORMANCE.md, "Data parallel").

``python data_parallel.py shards STEPS [TASK …]`` — the ranks simulated in one process: for each
task, the shards that one process's stream consumes in STEPS global batches (``Batches.built``),
then for each rank r of W = 1, 2, 4 the shards its loader builds for the same batches
(``ShardStream`` rank r of W, whole rounds of W shards) and the CPU seconds it takes to build
them. Before ranks shared the shards, every rank built all of them: the W = 1 row.

``python data_parallel.py ranks W STEPS`` — real processes: W ranks joined over gloo (a file
store), each reading STEPS global batches through ``Batches`` with its ``ShardExchange`` and no
loader workers; prints the global tokens/s of the slowest rank. ``alone`` instead of ``ranks``:
W processes at once, each reading the whole stream by itself (how every rank read it before).

Run from the repository root with the package installed; prints one JSON object per line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TASKS = {  # name: (overrides, global batch)
    "depo1": (["task=depo1", "task.K=4", "task.N=15", "task.context=512"], 64),
    "cfg3f": (["task=cfg3f"], 96),
}


def emit(**fields) -> None:
    print(json.dumps(fields), flush=True)


def task_of(name: str):
    from playground.config import compose, to_objects
    from playground.tasks import build_task

    return build_task(to_objects(compose(TASKS[name][0])).task)


def shards(steps: int, names: list[str]) -> None:
    from playground.data.loader import Batches, ShardStream
    from playground.data.packing import shard_size

    for name in names:
        task, batch = task_of(name), TASKS[name][1]
        size = shard_size(task)
        one = Batches(task, batch, size)
        for _ in range(steps):
            next(one)
        consumed = len(one.built)
        for world in (1, 2, 4):
            rounds = -(-consumed // world)
            for rank in range(world):
                stream = iter(ShardStream(task, "train", size, packing=one.packing, rank=rank,
                                          ranks=world))
                tic, windows = time.process_time(), 0
                for _ in range(rounds):
                    _, tokens, _, _ = next(stream)
                    windows += len(tokens)
                cpu = time.process_time() - tic
                tokens = steps * batch * task.cfg.context  # the global batches', padding included
                emit(task=name, world=world, rank=rank, steps=steps, batch=batch,
                     shards_consumed=consumed, shards_built=rounds, windows_built=windows,
                     cpu_s=round(cpu, 3), global_tokens_per_cpu_s=round(tokens / cpu))


def read(name: str, rank: int, world: int, steps: int, store: str | None) -> None:
    """One process: STEPS global batches, through the exchange when ``store`` is given."""
    import torch.distributed as dist

    from playground.data.loader import Batches, ShardExchange
    from playground.data.packing import shard_size

    task, batch = task_of(name), TASKS[name][1]
    exchange = None
    if store:
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
        exchange = ShardExchange.join(rank, world)
    b = Batches(task, batch, shard_size(task), exchange=exchange)
    tic = time.perf_counter()
    for _ in range(steps):
        next(b)
    wall = time.perf_counter() - tic
    tokens = steps * batch * task.cfg.context
    emit(task=name, rank=rank, world=world, exchange=bool(store), steps=steps,
         wall_s=round(wall, 3), shards_built=len(b.built), global_tokens_per_s=round(tokens / wall))
    if store:
        dist.destroy_process_group()


def processes(mode: str, world: int, steps: int) -> None:
    for name in TASKS:
        with tempfile.TemporaryDirectory() as tmp:
            store = str(Path(tmp) / "store") if mode == "ranks" else ""
            args = [sys.executable, __file__, "read", name]
            procs = [subprocess.Popen([*args, str(r), str(world), str(steps), store])
                     for r in range(world)]
            for p in procs:
                p.wait()


if __name__ == "__main__":
    verb = sys.argv[1]
    if verb == "shards":
        shards(int(sys.argv[2]), sys.argv[3:] or list(TASKS))
    elif verb in ("ranks", "alone"):
        processes(verb, int(sys.argv[2]), int(sys.argv[3]))
    else:  # read NAME RANK WORLD STEPS STORE
        read(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6] or None)
