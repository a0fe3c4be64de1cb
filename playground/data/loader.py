"""Deterministic training batches: shards built by loader workers, re-batched in stream order.

Worker w of W builds shards w, w+W, w+2W, …; PyTorch's DataLoader returns the items of its
workers round-robin, i.e. in shard order, so the window stream does not depend on the number of
workers. Batches are cut from that stream in the main process, so they do not depend on how the
batch is later split into micro-batches or devices. The position in the stream,
``{"shard": s, "offset": o}`` (next window = window o of shard s), is saved in checkpoints.
"""

from __future__ import annotations

import itertools
import signal
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from playground.data.packing import pack_shard, resolve_packing
from playground.tasks.base import Task


class Batch(NamedTuple):
    tokens: torch.Tensor  # int64[B, T]
    mask: torch.Tensor  # bool[B, T]: targets
    segments: torch.Tensor  # int32[B, T]: example index within the window, -1 on padding


class ShardStream(IterableDataset):
    """Yields (shard index, tokens, mask, segments) [W, T] each, for shards start, start+1, …
    packed in mode ``packing`` (resolved: aligned or stream)."""

    def __init__(self, task: Task, split: str, shard_examples: int, start: int = 0, packing: str = "aligned"):
        self.task, self.split, self.shard_examples, self.start = task, split, shard_examples, start
        self.packing = packing

    def __iter__(self):
        info = get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        for shard in itertools.count(self.start + worker, workers):
            arrays = pack_shard(self.task, self.split, shard, self.shard_examples, self.packing)
            yield shard, *(torch.from_numpy(a) for a in arrays)


class _IgnoreSignals:
    """A worker's init: ignore ``signals``. Preemption signals reach the whole process group
    (SLURM, ``timeout``); workers ignore them, so the main process can checkpoint and then shut
    its workers down itself."""

    def __init__(self, signals: tuple[int, ...]):
        self.signals = signals

    def __call__(self, _worker_id: int) -> None:
        for signum in self.signals:
            signal.signal(signum, signal.SIG_IGN)


class Batches:
    """Infinite iterator of :class:`Batch` training batches."""

    def __init__(self, task: Task, batch_size: int, shard_examples: int, num_workers: int = 0,
                 prefetch: int = 4, state: dict | None = None, split: str = "train",
                 ignore_signals: tuple[int, ...] = (), packing: str = "auto"):
        """``ignore_signals``: signals the loader workers leave to this process (the run's
        preemption signals); ``packing``: ``data.packing`` (auto: the task's own)."""
        state = state or {"shard": 0, "offset": 0}
        self.batch_size = batch_size
        self.packing = resolve_packing(task, packing)
        stream = ShardStream(task, split, shard_examples, start=state["shard"], packing=self.packing)
        loader = DataLoader(stream, batch_size=None, num_workers=num_workers,
                            prefetch_factor=prefetch if num_workers else None,
                            persistent_workers=False,
                            worker_init_fn=_IgnoreSignals(ignore_signals) if num_workers else None)
        self._shards: Iterator = iter(loader)
        self._shard, self._offset = state["shard"], state["offset"]
        self._arrays = self._next_shard(expect=self._shard)

    def _next_shard(self, expect: int) -> tuple[torch.Tensor, ...]:
        shard, *arrays = next(self._shards)
        assert shard == expect, f"loader returned shard {shard}, expected {expect}"
        return tuple(arrays)

    def state_dict(self) -> dict:
        return {"shard": self._shard, "offset": self._offset}

    def __iter__(self):
        return self

    def __next__(self) -> Batch:
        parts, need = [], self.batch_size
        while need:
            if self._offset == len(self._arrays[0]):
                self._shard, self._offset = self._shard + 1, 0
                self._arrays = self._next_shard(expect=self._shard)
            take = min(need, len(self._arrays[0]) - self._offset)
            parts.append([a[self._offset : self._offset + take] for a in self._arrays])
            self._offset += take
            need -= take
        tokens, mask, segments = (torch.cat(p) for p in zip(*parts))
        return Batch(tokens.long(), mask, segments)


def first_windows(task: Task, shard_examples: int, count: int, split: str = "train",
                  packing: str = "auto") -> Batch:
    """The first ``count`` windows of the stream, exactly as training reads them."""
    return next(Batches(task, count, shard_examples, split=split, packing=packing))


def window_stream(task: Task, shard_examples: int, count: int, split: str = "train",
                  packing: str = "auto") -> np.ndarray:
    """The first ``count`` windows' tokens as int32[count, T] (for inspection and tests)."""
    return first_windows(task, shard_examples, count, split, packing).tokens.numpy().astype(np.int32)
