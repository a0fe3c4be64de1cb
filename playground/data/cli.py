"""``playground-data``: inspect any task's examples.

    playground-data show task=depo1 split=eval count=3          # decoded, targets in [brackets]
    playground-data dump task=depo1 split=eval count=200 out=FILE.jsonl
    playground-data stats task=depo1 count=1000                 # lengths, packing, speed

Other ``key=value`` arguments are Hydra overrides of the task (``task.N=50``). ``dump`` writes
one JSON object per example: ``tokens``, ``pieces``, ``loss_mask`` and the task's ``meta``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from playground.cli import fail, int_arg, parse_args
from playground.config import compose, to_objects
from playground.data.packing import pack
from playground.errors import ConfigError
from playground.run.rundir import atomic_write
from playground.tasks import build_task
from playground.tasks.base import SPLITS

USAGE = __doc__
KNOWN = {"split": "eval", "count": "3", "start": "0", "out": ""}


def _short(value, limit: int = 12):
    if isinstance(value, list) and len(value) > limit:
        return value[:limit] + [f"... ({len(value)} in all)"]
    return value


def show(task, examples) -> None:
    for i, ex in examples:
        meta = {k: _short(v) for k, v in ex.meta.items()}
        print(f"# example {i} ({len(ex)} tokens)\n{task.describe(ex)}\nmeta: {json.dumps(meta)}\n")


def dump(task, examples, out: str) -> None:
    if not out:
        fail("dump needs out=FILE.jsonl")
    lines = "".join(json.dumps(task.to_json(ex)) + "\n" for _, ex in examples)
    atomic_write(Path(out), lines.encode())
    print(f"wrote {out}")


def stats(task, examples) -> None:
    tic = time.perf_counter()
    exs = [ex for _, ex in examples]
    elapsed = time.perf_counter() - tic
    lengths = np.array([len(ex) for ex in exs])
    tokens = pack(exs, task.cfg.context, task.vocab.pad)[0]
    fill = lengths.sum() / tokens.size
    print(f"vocabulary: {len(task.vocab)} tokens; max example length: {task.max_length()}")
    print(f"length: mean {lengths.mean():.1f}, min {lengths.min()}, max {lengths.max()}; "
          f"targets per example: {np.mean([ex.loss_mask.sum() for ex in exs]):.1f}")
    print(f"packing into context {task.cfg.context}: {len(tokens)} windows, {fill:.1%} non-pad")
    print(f"generation: {lengths.sum() / elapsed:,.0f} tokens/s on one core")


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in ("show", "dump", "stats"):
        print(USAGE)
        raise SystemExit(0 if argv and argv[0] in ("-h", "--help") else 2)
    args, overrides = parse_args(argv[1:], KNOWN)
    if args["split"] not in SPLITS:
        fail(f"split={args['split']!r} is invalid: expected one of {sorted(SPLITS)}")
    try:
        task = build_task(to_objects(compose(overrides)).task)
    except ConfigError as err:
        fail(str(err))
    start, count = int_arg(args, "start"), int_arg(args, "count", 1)
    examples = ((i, task.example(args["split"], i)) for i in range(start, start + count))
    {"show": lambda: show(task, examples), "dump": lambda: dump(task, examples, args["out"]),
     "stats": lambda: stats(task, examples)}[argv[0]]()


if __name__ == "__main__":
    main()
