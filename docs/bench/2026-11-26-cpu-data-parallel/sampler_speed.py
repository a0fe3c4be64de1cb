"""Lano's training sentences per CPU second of one core (docs/PERFORMANCE.md, "Data parallel").

``python sampler_speed.py COUNT``: COUNT training examples of cfg3f, cfg3j and cfg3k as the
stream makes them, a shard at a time (``Task.examples``; on code without it, ``Task.example``
one by one), timed in CPU seconds; prints one JSON object. Run from the repository root with the
package installed (for the code before, with PYTHONPATH at a copy of it).
"""

from __future__ import annotations

import json
import sys
import time

from playground.config import compose, to_objects
from playground.data.packing import shard_size
from playground.tasks import build_task


def speed(preset: str, count: int) -> dict:
    task = build_task(to_objects(compose([f"task={preset}"])).task)
    shard = shard_size(task)
    many = getattr(task, "examples", None) or (
        lambda split, lo, hi, meta: [task.example(split, i, meta) for i in range(lo, hi)])
    many("train", 10**6, 10**6 + 8, meta=False)  # warm
    tic = time.process_time()
    tokens = sum(len(ex) for lo in range(0, count, shard)
                 for ex in many("train", lo, min(lo + shard, count), meta=False))
    cpu = time.process_time() - tic
    return {"examples": count, "shard": shard, "tokens": tokens, "cpu_s": round(cpu, 3),
            "tokens_per_cpu_s": round(tokens / cpu), "us_per_example": round(cpu / count * 1e6, 1)}


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
    print(json.dumps({preset: speed(preset, count) for preset in ("cfg3f", "cfg3j", "cfg3k")}))
