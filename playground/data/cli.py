"""``playground-data``: inspect any task's examples, exactly as the generators make them.

``show`` decodes them (targets in [brackets]); ``dump`` writes one JSON object per example
(``tokens``, ``pieces``, ``loss_mask`` and the task's ``meta``) atomically; ``stats`` reports
lengths, packing and generation speed. Config overrides are the task's and the data's
(``task=depo1``, ``task.N=50``, ``task.seed=3``); the data seed is ``task.seed``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from playground.cli import Args, Command, atomic_write
from playground.cli import main as cli_main
from playground.config import compose, to_objects
from playground.data.packing import pack
from playground.errors import ConfigError
from playground.tasks import build_task
from playground.tasks.base import SPLITS


def _short(value, limit: int = 12):
    if isinstance(value, list) and len(value) > limit:
        return value[:limit] + [f"... ({len(value)} in all)"]
    return value


def examples_of(args: Args):
    """The task the overrides describe and its examples ``start .. start + count`` of ``split``."""
    split = args.choice("split", tuple(SPLITS))
    task = build_task(to_objects(compose(args.overrides)).task)
    start, count = args.int("start"), args.int("count", 1)
    return task, ((i, task.example(split, i)) for i in range(start, start + count))


def cmd_show(args: Args) -> None:
    task, examples = examples_of(args)
    for i, ex in examples:
        meta = {k: _short(v) for k, v in ex.meta.items()}
        print(f"# example {i} ({len(ex)} tokens)\n{task.describe(ex)}\nmeta: {json.dumps(meta)}\n")


def cmd_dump(args: Args) -> None:
    if not args["out"]:
        raise ConfigError("dump needs out=FILE.jsonl")
    task, examples = examples_of(args)
    lines = "".join(json.dumps(task.to_json(ex)) + "\n" for _, ex in examples)
    atomic_write(Path(args["out"]), lines.encode())
    print(f"wrote {args['out']}")


def cmd_stats(args: Args) -> None:
    task, examples = examples_of(args)
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


SECTIONS = ("task", "data")
PICK = {"split": ("eval", f"one of {list(SPLITS)}"), "count": ("3", "how many examples"),
        "start": ("0", "index of the first example")}
COMMANDS = [
    Command("show", "decoded examples, targets in [brackets]", cmd_show, dict(PICK), overrides=SECTIONS,
            examples=("playground-data show task=depo1 split=eval count=3",)),
    Command("dump", "examples as JSON lines with their ground truth (meta)", cmd_dump,
            {**PICK, "out": ("", "the JSONL file to write")}, overrides=SECTIONS,
            examples=("playground-data dump task=brevo1 split=eval count=200 out=brevo1.jsonl",)),
    Command("stats", "lengths, packing and generation speed", cmd_stats, {**PICK, "count": ("1000", "examples")},
            overrides=SECTIONS, examples=("playground-data stats task=mano",)),
]


def main(argv: list[str] | None = None) -> None:
    cli_main("playground-data", "inspect any task's examples", COMMANDS, argv)


if __name__ == "__main__":
    main()
