"""Packing examples into fixed-length windows, in one of two modes (``data.packing``).

``aligned``: a window starts at an example boundary (every example starts with ``<bos>``);
examples are appended while they fit; one that does not fit is never truncated: it starts the
next window, and the tail of the current window is padded (``<pad>``, loss masked). The answer
of a question–answer example is never cut from its question.

``stream``: the examples are concatenated and cut into windows of exactly ``context`` tokens,
so an example may cross a window edge and nothing is padded but the end of a shard. This is
the paper's Lano data: the ``<bos>`` that opens a sentence is the target that ends the one
before it, and with a stream it always follows it (with aligned windows only when the next
sentence fits in the same window).

``aligned_drop``: ``aligned``, but an example longer than ``task.context`` is left out of the
training stream instead of refused, for a task whose longest possible example exceeds a context
its examples almost never reach (Brevo2 N = 50 at the paper's 1536: possible 1,812 tokens,
sampled ones ~1,000). :func:`check_fits` counts them in a sample of the training examples and
refuses past one in ``DROP_LIMIT``; every evaluation example must fit.

``auto`` (the default) is the task's own mode, ``Task.packing``: :func:`resolve_packing`, the one
place that reads it; the loader, ``count_windows``, ``check_fits``, the data CLI and the bench
go through it.

The training stream is cut into shards of ``shard_examples`` consecutive example indices, each
packed on its own (the last window of a shard is flushed, padded). A shard is therefore a pure
function of (task config, packing, split, shard index), which lets loader workers build shards
in parallel while the stream stays identical for any number of workers, batch size or world
size. A stream shard whose tokens do not fill its last window exactly closes it with the first
token of the next shard's first example (its ``<bos>``, with that token's own target flag), so
the shard's last example ends like every other; that token is position 0 of the next shard, a
position the loss never trains, so no target is seen twice.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from playground.config import PACKINGS
from playground.errors import check
from playground.tasks.base import Example, Task

# tokens int32, mask bool, segments int32 [W, T]
Windows = tuple[np.ndarray, np.ndarray, np.ndarray]


def resolve_packing(task: Task | type[Task], packing: str) -> str:
    """The packing mode of ``data.packing=packing`` for ``task`` (an instance or its class):
    ``aligned``, ``aligned_drop`` or ``stream``; ``auto`` is the task's own (``Task.packing``)."""
    check(packing in PACKINGS, "data.packing", packing, f"one of {PACKINGS}")
    return task.packing if packing == "auto" else packing


def pack(examples: Iterable[Example], context: int, pad_id: int, drop: bool = False) -> Windows:
    """Pack examples in order into left-aligned windows. Returns tokens int32[W, context], mask
    bool[W, context] and segments int32[W, context] (the example's index within its window; -1
    on padding). An example longer than ``context`` is refused, or left out with ``drop``."""
    rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    row: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    used = 0
    for ex in examples:
        n = len(ex)
        if n > context:
            if drop:
                continue
            raise ValueError(f"an example of {n} tokens does not fit in task.context={context}; "
                             f"raise task.context or lower the task's difficulty")
        if row is None or used + n > context:
            row = (np.full(context, pad_id, np.int32), np.zeros(context, bool),
                   np.full(context, -1, np.int32))
            rows.append(row)
            used = 0
        tokens, mask, segments = row
        tokens[used : used + n] = ex.tokens
        mask[used : used + n] = ex.loss_mask
        segments[used : used + n] = segments[used - 1] + 1 if used else 0
        used += n
    return tuple(np.stack([r[i] for r in rows]) for i in range(3))  # type: ignore[return-value]


def pack_stream(examples: Iterable[Example], context: int, pad_id: int,
                follow: Example | None = None) -> Windows:
    """Concatenate examples in order and cut them into windows of ``context`` tokens; only the
    last window is padded. ``follow``, the example after the last, lends its first token (and
    that token's target flag) to close the stream when the last window has room: with a
    ``<bos>``-separated stream that token is the target "the last example ended". Segments (as
    in :func:`pack`) count the examples of each window from 0, so an example cut at the window
    start is segment 0 there."""
    exs = list(examples)
    parts = [(ex.tokens, ex.loss_mask) for ex in exs]
    total = sum(len(ex) for ex in exs)
    if follow is not None and total % context:
        parts.append((follow.tokens[:1], follow.loss_mask[:1]))
    lengths = [len(t) for t, _ in parts]
    tokens = (np.concatenate([t for t, _ in parts]).astype(np.int32) if parts
              else np.zeros(0, np.int32))  # [N]
    mask = np.concatenate([m for _, m in parts]).astype(bool) if parts else np.zeros(0, bool)  # [N]
    owner = np.repeat(np.arange(len(parts), dtype=np.int32), lengths)  # [N]: example of each token
    windows = -(-len(tokens) // context)
    pad = windows * context - len(tokens)
    tokens = np.pad(tokens, (0, pad), constant_values=pad_id).reshape(windows, context)
    mask = np.pad(mask, (0, pad)).reshape(windows, context)
    owner = np.pad(owner, (0, pad), constant_values=-1).reshape(windows, context)
    segments = np.where(owner >= 0, owner - owner[:, :1], -1).astype(np.int32)  # [W, T]
    return tokens, mask, segments


def pack_as(packing: str, examples: Iterable[Example], context: int, pad_id: int,
            follow: Example | None = None) -> Windows:
    """Pack in mode ``packing`` (resolved: ``aligned``, ``aligned_drop`` or ``stream``;
    ``follow``: stream only)."""
    if packing == "stream":
        return pack_stream(examples, context, pad_id, follow)
    return pack(examples, context, pad_id, drop=packing == "aligned_drop")


SHARD_TOKENS = 1 << 18  # a shard holds about this many tokens unless data.shard_examples says


def shard_size(task: Task, requested: int = 0) -> int:
    """Examples per shard: ``requested`` (data.shard_examples), or 0 for enough examples to fill
    about SHARD_TOKENS tokens at the task's longest example — a function of the task config
    only, so it fixes the stream like any other config value. (Short examples, e.g. Mano's,
    need big shards or the loader's per-shard overhead dominates.)"""
    return requested or max(16, SHARD_TOKENS // task.max_length())


def pack_shard(task: Task, split: str, shard: int, shard_examples: int,
               packing: str = "auto") -> Windows:
    """The windows of shard ``shard``: examples [shard·S, (shard+1)·S) of ``split``, packed as
    ``data.packing=packing`` says (a stream shard also reads the first token of example
    (shard+1)·S to close its last window)."""
    mode = resolve_packing(task, packing)
    first, end = shard * shard_examples, (shard + 1) * shard_examples
    examples = task.examples(split, first, end, meta=False)
    follow = task.example(split, end, meta=False) if mode == "stream" else None
    return pack_as(mode, examples, task.cfg.context, task.vocab.pad, follow)


EXACT_COUNT, SAMPLE = 20_000, 4096  # count_windows packs up to this many examples, else a sample


def count_windows(task: Task, count: int, shard_examples: int,
                  packing: str = "auto") -> tuple[int, int]:
    """How many windows the first ``count`` training examples fill, packed exactly as the
    loader packs them (shards of ``shard_examples``, mode ``data.packing=packing``), and how
    many examples were packed to know it: all of them up to EXACT_COUNT; beyond, whole shards
    covering SAMPLE examples, and the window count scaled up (rounded up). (A stream shard's
    closing token never opens a window, so it is left out here.)"""
    mode = resolve_packing(task, packing)
    measured = (count if count <= EXACT_COUNT
                else min(count, math.ceil(SAMPLE / shard_examples) * shard_examples))
    windows = 0
    for lo in range(0, measured, shard_examples):
        exs = task.examples("train", lo, min(lo + shard_examples, measured), meta=False)
        windows += len(pack_as(mode, exs, task.cfg.context, task.vocab.pad)[0])
    return (windows if measured == count else math.ceil(windows * count / measured)), measured


# aligned_drop: the training examples counted; at most 1 in DROP_LIMIT of them left out
DROP_SAMPLE, DROP_LIMIT = 4096, 1000


def check_fits(task: Task, packing: str) -> str | None:
    """With aligned packing (``data.packing``), every example of the task fits in
    ``task.context`` (examples are never cut); a stream cuts them, so any length will do. With
    ``aligned_drop`` and a task whose longest possible example exceeds the context: at most one
    in DROP_LIMIT of the first DROP_SAMPLE training examples is longer (those are left out), and
    every evaluation example fits; returns what was counted, for the run's log (else None)."""
    mode = resolve_packing(task, packing)
    longest, context = task.max_length(), task.cfg.context
    if mode == "stream" or longest <= context:
        return None
    how = "raise task.context, lower the difficulty, or use data.packing=stream" + (
        "" if mode == "aligned_drop" else " or aligned_drop (leaves out rare longer examples)")
    check(mode == "aligned_drop", "task.context", context,
          f"at least {longest} tokens, the longest example of task {task.cfg.preset!r} at its "
          f"hardest setting ({how})")
    over, evals = overlong_counts(task)
    check(over * DROP_LIMIT <= DROP_SAMPLE, "task.context", context,
          f"more tokens: {over:,} of the first {DROP_SAMPLE:,} training examples are longer, and "
          f"data.packing=aligned_drop leaves out at most 1 in {DROP_LIMIT:,} ({how})")
    check(evals == 0, "task.context", context,
          f"more tokens: {evals:,} of the {task.cfg.eval_size:,} evaluation examples are longer, "
          "and every evaluation example must fit")
    return (f"data.packing=aligned_drop: {over:,} of the first {DROP_SAMPLE:,} training examples "
            f"longer than task.context={context} (left out; the longest possible: {longest:,} "
            "tokens); every evaluation example fits")


_OVERLONG: dict[str, tuple[int, int]] = {}  # overlong_counts per task config (its repr)


def overlong_counts(task: Task) -> tuple[int, int]:
    """How many of the first DROP_SAMPLE training examples and of the evaluation examples are
    longer than ``task.context`` (kept per task config: a sweep checks each of its runs)."""
    key, context = repr(task.cfg), task.cfg.context
    if key not in _OVERLONG:
        train = task.examples("train", 0, DROP_SAMPLE, meta=False)
        _OVERLONG[key] = (sum(len(ex) > context for ex in train),
                          sum(len(ex) > context for ex in task.eval_examples()))
    return _OVERLONG[key]
