"""``playground-data``: inspect any task's examples, exactly as the generators make them, or
its packed training windows, exactly as the model sees them.

``show`` decodes them (targets in [brackets]); ``dump`` writes one JSON object per example
(``tokens``, ``pieces``, ``loss_mask`` and the task's ``meta``) atomically; ``stats`` reports
lengths, packing and generation speed. Config overrides are the task's and the data's
(``task=depo1``, ``task.N=50``, ``task.seed=3``, ``data.packing=aligned``); the data seed is
``task.seed``.

With ``windows=N``, ``show`` and ``dump`` read windows ``start .. start+N-1`` of the stream
instead: through the training loader (``playground.data.loader``) with the config's
``data.packing`` and ``data.shard_examples``, so they are the training windows byte for byte
(of the ``train`` split unless ``split=`` says). A window's targets are the positions the loss
trains: its loss mask, except position 0, which nothing in the window precedes. ``dump`` writes
one object per window: ``ids``, ``targets`` (0/1), ``segments`` (the example index within the
window, -1 on padding: what ``data.isolate_examples`` separates) and ``text`` (decoded).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from playground.cli import Args, Command, atomic_write, check_writable
from playground.cli import main as cli_main
from playground.config import compose, to_objects
from playground.data.loader import first_windows
from playground.data.packing import check_fits, pack_as, resolve_packing, shard_size
from playground.errors import ConfigError
from playground.tasks import build_task
from playground.tasks.base import SPLITS

# count=: the examples are made and held in memory (a dump is written at once); take more in parts
# with start=
MAX_EXAMPLES = 1_000_000
# start= + windows=: the loader packs every window up to the last in memory, 13 bytes a token
# (about 1.7 GB)
MAX_WINDOW_TOKENS = 1 << 27


def _short(value, limit: int = 12):
    if isinstance(value, list) and len(value) > limit:
        return value[:limit] + [f"... ({len(value)} in all)"]
    return value


def split_of(args: Args, windows: bool) -> str:
    """``split``; ``auto``: eval for examples, train for windows (the training stream)."""
    split = args.choice("split", ("auto", *SPLITS))
    return ("train" if windows else "eval") if split == "auto" else split


def config_of(args: Args):
    """The task the overrides describe and their data config."""
    cfg = to_objects(compose(args.overrides))
    return build_task(cfg.task), cfg.data


def examples_of(args: Args):
    """The task the overrides describe and its examples ``start .. start + count`` of ``split``."""
    split = split_of(args, windows=False)
    task, data = config_of(args)
    start = args.int("start")
    count = args.int("count", 1, MAX_EXAMPLES,
                     "examples are made and held in memory; take more in parts with start=")
    return task, data, ((i, task.example(split, i)) for i in range(start, start + count))


def windows_of(args: Args) -> tuple:
    """The task, its resolved packing, and windows ``start .. start + windows`` of the stream
    as the training loader yields them: tokens int32[N, T], targets bool[N, T] (the loss mask
    without position 0) and segments int32[N, T]."""
    split, start, count = split_of(args, windows=True), args.int("start"), args.int("windows", 1)
    task, data = config_of(args)
    if (start + count) * task.cfg.context > MAX_WINDOW_TOKENS:
        raise ConfigError(f"windows={count} is invalid with start={start}: the loader would pack "
                          f"{start + count:,} windows of task.context={task.cfg.context} tokens in "
                          f"memory, more than {MAX_WINDOW_TOKENS:,} tokens; ask for fewer")
    check_fits(task, data.packing)
    batch = first_windows(task, shard_size(task, data.shard_examples), start + count, split,
                          data.packing)
    tokens, mask, segments = (a[start:].numpy() for a in batch)
    targets = mask.copy()
    targets[:, 0] = False  # the loss reads mask[:, 1:]: nothing precedes position 0
    return (task, resolve_packing(task, data.packing), split,
            (tokens.astype(np.int32), targets, segments))


def render(task, ids: np.ndarray, targets: np.ndarray) -> str:
    """Decoded tokens, targets in [brackets]."""
    pieces = [task.vocab.pieces[t] for t in ids.tolist()]
    return " ".join(f"[{p}]" if m else p for p, m in zip(pieces, targets.tolist()))


def show_windows(args: Args) -> None:
    task, mode, split, (tokens, targets, segments) = windows_of(args)
    for k, (ids, tgt, seg) in enumerate(zip(tokens, targets, segments), start=args.int("start")):
        print(f"# window {k} ({mode} packing, {split} split): {len(ids)} tokens, {int(tgt.sum())} "
              f"targets, {int((seg < 0).sum())} padding, {int(seg.max()) + 1} examples\n"
              f"{render(task, ids, tgt)}\n")


def cmd_show(args: Args) -> None:
    if args.int("windows"):
        return show_windows(args)
    task, _, examples = examples_of(args)
    for i, ex in examples:
        meta = {k: _short(v) for k, v in ex.meta.items()}
        print(f"# example {i} ({len(ex)} tokens)\n{task.describe(ex)}\nmeta: {json.dumps(meta)}\n")


def window_lines(args: Args) -> str:
    task, _, _, (tokens, targets, segments) = windows_of(args)
    return "".join(json.dumps({"ids": ids.tolist(), "targets": tgt.astype(int).tolist(),
                               "segments": seg.tolist(), "text": task.vocab.decode(ids)}) + "\n"
                   for ids, tgt, seg in zip(tokens, targets, segments))


def cmd_dump(args: Args) -> None:
    if not args["out"]:
        raise ConfigError("dump needs out=FILE.jsonl")
    check_writable(Path(args["out"]).parent, "out")
    if args.int("windows"):
        lines = window_lines(args)
    else:
        task, _, examples = examples_of(args)
        lines = "".join(json.dumps(task.to_json(ex)) + "\n" for _, ex in examples)
    atomic_write(Path(args["out"]), lines.encode())
    print(f"wrote {args['out']}")


def cmd_stats(args: Args) -> None:
    task, data, examples = examples_of(args)
    tic = time.perf_counter()
    exs = [ex for _, ex in examples]
    elapsed = time.perf_counter() - tic
    lengths = np.array([len(ex) for ex in exs])
    mode = resolve_packing(task, data.packing)
    tokens = pack_as(mode, exs, task.cfg.context, task.vocab.pad)[0]
    fill = lengths.sum() / tokens.size
    print(f"vocabulary: {len(task.vocab)} tokens; max example length: {task.max_length()}")
    print(f"length: mean {lengths.mean():.1f}, min {lengths.min()}, max {lengths.max()}; "
          f"targets per example: {np.mean([ex.loss_mask.sum() for ex in exs]):.1f}")
    print(f"{mode} packing into context {task.cfg.context}: "
          f"{len(tokens)} windows, {fill:.1%} non-pad")
    print(f"generation: {lengths.sum() / elapsed:,.0f} tokens/s on one core")


SECTIONS = ("task", "data")
PICK = {"split": ("auto", f"one of {list(SPLITS)}; auto: eval for examples, train for windows"),
        "count": ("3", "how many examples"),
        "start": ("0", "index of the first example (or window)")}
WINDOWS = {"windows": ("0", "N > 0: N windows of the training stream from window start=, instead "
                            "of examples, as the loader packs them (data.packing, "
                            "data.shard_examples)")}
COMMANDS = [
    Command("show", "decoded examples or training windows, targets in [brackets]", cmd_show,
            {**PICK, **WINDOWS}, overrides=SECTIONS,
            examples=("playground-data show task=depo1 split=eval count=3",
                      "playground-data show task=cfg3f windows=2")),
    Command("dump", "examples as JSON lines with their ground truth (meta), or training windows",
            cmd_dump, {**PICK, **WINDOWS, "out": ("", "the JSONL file to write")},
            overrides=SECTIONS,
            examples=("playground-data dump task=brevo1 split=eval count=200 out=brevo1.jsonl",
                      "playground-data dump task=cfg3f windows=300 out=cfg3f_windows.jsonl")),
    Command("stats", "lengths, packing and generation speed", cmd_stats,
            {**PICK, "count": ("1000", "examples")},
            overrides=SECTIONS, examples=("playground-data stats task=mano",)),
]


def main(argv: list[str] | None = None) -> None:
    cli_main("playground-data", "inspect any task's examples", COMMANDS, argv)


if __name__ == "__main__":
    main()
