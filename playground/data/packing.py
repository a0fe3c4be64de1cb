"""Packing examples into fixed-length, left-aligned windows.

A window starts at an example boundary (every example starts with ``<bos>``); examples are
appended while they fit; one that does not fit is never truncated: it starts the next window,
and the tail of the current window is padded (``<pad>``, loss masked).

The training stream is cut into shards of ``shard_examples`` consecutive example indices, each
packed on its own (the last window of a shard is flushed). A shard is therefore a pure function
of (task config, split, shard index), which lets loader workers build shards in parallel while
the stream stays identical for any number of workers, batch size or world size.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from playground.errors import check
from playground.tasks.base import Example, Task


def pack(examples: Iterable[Example], context: int, pad_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pack examples in order into windows. Returns tokens int32[W, context], mask bool[W, context]
    and segments int32[W, context] (the example's index within its window; -1 on padding)."""
    rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    row: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    used = 0
    for ex in examples:
        n = len(ex)
        if n > context:
            raise ValueError(f"an example of {n} tokens does not fit in task.context={context}; "
                             f"raise task.context or lower the task's difficulty")
        if row is None or used + n > context:
            row = (np.full(context, pad_id, np.int32), np.zeros(context, bool), np.full(context, -1, np.int32))
            rows.append(row)
            used = 0
        tokens, mask, segments = row
        tokens[used : used + n] = ex.tokens
        mask[used : used + n] = ex.loss_mask
        segments[used : used + n] = segments[used - 1] + 1 if used else 0
        used += n
    return tuple(np.stack([r[i] for r in rows]) for i in range(3))  # type: ignore[return-value]


SHARD_TOKENS = 1 << 18  # a shard holds about this many tokens unless data.shard_examples says


def shard_size(task: Task, requested: int = 0) -> int:
    """Examples per shard: ``requested`` (data.shard_examples), or 0 for enough examples to fill
    about SHARD_TOKENS tokens at the task's longest example — a function of the task config
    only, so it fixes the stream like any other config value. (Short examples, e.g. Mano's,
    need big shards or the loader's per-shard overhead dominates.)"""
    return requested or max(16, SHARD_TOKENS // task.max_length())


def pack_shard(task: Task, split: str, shard: int, shard_examples: int) -> tuple[np.ndarray, ...]:
    """The windows of shard ``shard``: examples [shard·S, (shard+1)·S) of ``split``, packed."""
    first = shard * shard_examples
    examples = (task.example(split, i, meta=False) for i in range(first, first + shard_examples))
    return pack(examples, task.cfg.context, task.vocab.pad)


EXACT_COUNT, SAMPLE = 20_000, 4096  # count_windows packs up to this many examples, else a sample


def count_windows(task: Task, count: int, shard_examples: int) -> tuple[int, int]:
    """How many windows the first ``count`` training examples fill, packed exactly as the
    loader packs them (shards of ``shard_examples``), and how many examples were packed to know
    it: all of them up to EXACT_COUNT; beyond, whole shards covering SAMPLE examples, and the
    window count scaled up (rounded up)."""
    measured = count if count <= EXACT_COUNT else min(count, math.ceil(SAMPLE / shard_examples) * shard_examples)
    windows = 0
    for lo in range(0, measured, shard_examples):
        exs = (task.example("train", k, meta=False) for k in range(lo, min(lo + shard_examples, measured)))
        windows += len(pack(exs, task.cfg.context, task.vocab.pad)[0])
    return (windows if measured == count else math.ceil(windows * count / measured)), measured


def check_fits(task: Task) -> None:
    """Every example of the task fits in ``task.context`` (examples are never cut)."""
    longest = task.max_length()
    check(longest <= task.cfg.context, "task.context", task.cfg.context,
          f"at least {longest} tokens, the longest example of task {task.cfg.preset!r} at its "
          "hardest setting (raise task.context or lower the difficulty)")
