"""Deterministic training batches: shards built by loader workers, re-batched in stream order.

Worker w of W builds shards w, w+W, w+2W, …; PyTorch's DataLoader returns the items of its
workers round-robin, i.e. in shard order, so the window stream does not depend on the number of
workers. Batches are cut from that stream in the main process, so they do not depend on how the
batch is later split into micro-batches or devices. The position in the stream,
``{"shard": s, "offset": o}`` (next window = window o of shard s), is saved in checkpoints.

Data parallel (:class:`ShardExchange`): rank r of R builds only the shards s₀ + r, s₀ + r + R, …
(s₀: the shard the run starts or resumes at), its workers sharing them out as above, and the
ranks swap each round of R shards (one all-gather over a gloo group of its own), so every rank
holds every shard and cuts the same global batches as one process would; each trains on its
slice of them. A thread builds the next round while the current one is trained on, so neither
the swap nor the wait for this rank's shard sits in a training step.
A rank cannot build only the windows it trains on: a shard's window count is known only once
its examples are made (their lengths decide it, in both packing modes), and a shard (about
250 windows for cfg3f at context 512) spans several global batches, so every rank's slice
touches every shard. Swapping whole shards costs about 12 bytes a token between ranks and
keeps the stream, the checkpointed position and a resume under another world size exactly as
with one process.
"""

from __future__ import annotations

import itertools
import signal
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import NamedTuple

import numpy as np
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from playground.data.packing import pack_shard, resolve_packing
from playground.tasks.base import Task


class Batch(NamedTuple):
    tokens: torch.Tensor  # int64[B, T]
    mask: torch.Tensor  # bool[B, T]: targets
    segments: torch.Tensor  # int32[B, T]: example index within the window, -1 on padding


class ShardStream(IterableDataset):
    """Yields (shard index, tokens, mask, segments) [W, T] each, packed in mode ``packing``
    (resolved: aligned or stream), for the shards rank ``rank`` of ``ranks`` builds: start + rank,
    start + rank + ranks, … in order (all of them with one rank)."""

    def __init__(self, task: Task, split: str, shard_examples: int, start: int = 0,
                 packing: str = "aligned", rank: int = 0, ranks: int = 1):
        self.task, self.split, self.shard_examples, self.start = task, split, shard_examples, start
        self.packing, self.rank, self.ranks = packing, rank, ranks

    def __iter__(self):
        info = get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        first = self.start + self.rank + self.ranks * worker
        for shard in itertools.count(first, self.ranks * workers):
            arrays = pack_shard(self.task, self.split, shard, self.shard_examples, self.packing)
            yield shard, *(torch.from_numpy(a) for a in arrays)


Shard = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # tokens int32, mask, segments int32 [W, T]


class ShardExchange:
    """Data parallel: this rank's place among the ranks, and the swap of shards between them.

    Each round, every rank brings the one shard it built and leaves with all R of them, in rank
    order (:meth:`gather`). The swap runs over a gloo group made for it (CPU tensors), so it
    neither touches the GPUs nor waits on their streams, and a thread may run it beside the
    training's own collectives. Every rank cuts the same batches, so every rank needs each round
    at the same batch: the collectives line up without any further coordination."""

    def __init__(self, rank: int, size: int, group=None):
        self.rank, self.size, self.group = rank, size, group

    @classmethod
    def join(cls, rank: int, size: int, stall_s: float = 0) -> ShardExchange | None:
        """The exchange of rank ``rank`` of ``size`` in the initialised process group (every
        rank must call this at the same point), or None for one process. ``stall_s``: a swap
        still waiting for another rank's shard after that many seconds fails (0: gloo's
        default, 30 minutes)."""
        if size == 1:
            return None
        timeout = timedelta(seconds=stall_s) if stall_s else None
        return cls(rank, size, dist.new_group(backend="gloo", timeout=timeout))

    def gather(self, shard: Shard) -> list[Shard]:
        """This rank's shard in, every rank's shard of the round out (index = rank). Shards
        differ in window count: the counts go first, then the shards padded to the longest."""
        tokens, mask, segments = shard
        packed = torch.stack([tokens, mask.to(torch.int32), segments], 1)  # int32 [W, 3, T]
        counts = [torch.zeros(1, dtype=torch.int64) for _ in range(self.size)]
        dist.all_gather(counts, torch.tensor([len(packed)]), group=self.group)
        sizes = [int(c) for c in counts]
        padded = packed.new_zeros((max(sizes), *packed.shape[1:]))
        padded[: len(packed)] = packed
        parts = [torch.empty_like(padded) for _ in range(self.size)]
        dist.all_gather(parts, padded, group=self.group)
        return [(p[:n, 0], p[:n, 1].bool(), p[:n, 2]) for p, n in zip(parts, sizes)]


class _IgnoreSignals:
    """A worker's init: ignore ``signals``. Preemption signals reach the whole process group
    (SLURM, ``timeout``); workers ignore them, so the main process can checkpoint and then shut
    its workers down itself."""

    def __init__(self, signals: tuple[int, ...]):
        self.signals = signals

    def __call__(self, _worker_id: int) -> None:
        for signum in self.signals:
            signal.signal(signum, signal.SIG_IGN)


class _Ahead:
    """``build(first)`` run by a thread of its own, the result (or its error) kept for
    :meth:`result`. A daemon thread: one stuck in a swap with a rank that died does not keep
    the process alive."""

    def __init__(self, build, first: int):
        self.first, self._out = first, None
        self._thread = threading.Thread(target=self._run, args=(build, first), daemon=True,
                                        name=f"round-{first}")
        self._thread.start()

    def _run(self, build, first: int) -> None:
        try:
            self._out = (build(first), None)
        except BaseException as error:  # handed to the training thread by result()
            self._out = (None, error)

    def wait(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def result(self):
        self.wait()
        value, error = self._out
        if error is not None:
            raise error
        return value


class Batches:
    """Infinite iterator of :class:`Batch` training batches: the global batches, on every rank.

    Data parallel: the next round of shards is built (this rank's shard, then the swap) by a
    thread while the current one is cut into batches. Rounds are built one at a time, in
    order, so the swaps' collectives come in the same order on every rank. :meth:`close` (or
    leaving ``with batches:``) waits for the round in hand; do so before another
    :class:`Batches` uses the same exchange."""

    CLOSE_ON_ERROR_S = 10  # leaving ``with`` on an error: the other ranks may be gone

    def __init__(self, task: Task, batch_size: int, shard_examples: int, num_workers: int = 0,
                 prefetch: int = 4, state: dict | None = None, split: str = "train",
                 ignore_signals: tuple[int, ...] = (), packing: str = "auto",
                 exchange: ShardExchange | None = None, stall_s: float = 0):
        """``ignore_signals``: signals the loader workers leave to this process (the run's
        preemption signals); ``packing``: ``data.packing`` (auto: the task's own); ``exchange``:
        data parallel, this rank builds its share of the shards and swaps them with the others'
        (:class:`ShardExchange`; None: one process builds them all); ``stall_s``
        (``data.stall_s``): waiting longer than that for a worker's next shard fails (0:
        waits forever; a shard built in this process is not timed)."""
        state = state or {"shard": 0, "offset": 0}
        self.batch_size, self.exchange, self.stall_s = batch_size, exchange, stall_s
        self.packing = resolve_packing(task, packing)
        rank, ranks = (exchange.rank, exchange.size) if exchange else (0, 1)
        stream = ShardStream(task, split, shard_examples, start=state["shard"],
                             packing=self.packing, rank=rank, ranks=ranks)
        loader = DataLoader(stream, batch_size=None, num_workers=num_workers,
                            prefetch_factor=prefetch if num_workers else None,
                            persistent_workers=False, timeout=stall_s if num_workers else 0,
                            worker_init_fn=_IgnoreSignals(ignore_signals) if num_workers else None)
        self._shards: Iterator = iter(loader)
        self.built: list[int] = []  # the shards this process's loader built (also ahead), in order
        self._ready: dict[int, Shard] = {}  # shards of the current round not yet reached
        self._ahead: _Ahead | None = None  # data parallel: the next round, being built
        self._closed = False
        self._shard, self._offset = state["shard"], state["offset"]
        self._arrays = self._next_shard(expect=self._shard)

    def _next_shard(self, expect: int) -> Shard:
        if expect not in self._ready:
            self._ready = self._take_round(expect)
        return self._ready.pop(expect)

    def _take_round(self, first: int) -> dict[int, Shard]:
        """The round at shard ``first``; data parallel: built ahead, and the next one started."""
        if self._closed:
            raise RuntimeError("these batches are closed: their loader is stopped (and past any "
                               "round built ahead); make new Batches from the saved state_dict()")
        if self.exchange is None:
            return self._round(first)
        ahead, self._ahead = self._ahead, None
        if ahead is None:  # the first round
            ready = self._round(first)
        else:
            assert ahead.first == first, f"round {ahead.first} built ahead, {first} wanted"
            ready = ahead.result()
        self._ahead = _Ahead(self._round, first + self.exchange.size)
        return ready

    def close(self, timeout: float | None = None) -> None:
        """No batch follows: data parallel, wait for the round being built (every rank builds
        the same one, so every rank's swap ends; without ``timeout``, for as long as the swap
        takes; a round's error is not raised here, no batch needs it); then stop the loader's
        workers (:meth:`_stop_workers`)."""
        self._closed = True
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            ahead.wait(timeout)
        self._stop_workers()

    def _stop_workers(self) -> None:
        """End the loader's worker processes as the DataLoader does (a stop sign, up to 5 s
        each, then SIGTERM), then SIGKILL any still alive: a run's workers ignore its
        preemption signals, SIGTERM among them, so a hung one (``stall_s``) would outlive the
        training, and Python's exit waits for its daemon processes to end."""
        workers = list(getattr(self._shards, "_workers", ()))
        shutdown = getattr(self._shards, "_shutdown_workers", None)
        if shutdown is not None:
            shutdown()
        for worker in workers:
            if worker.is_alive():
                worker.kill()
                worker.join()

    def __enter__(self) -> Batches:
        return self

    def __exit__(self, error_type, *_) -> None:
        self.close(timeout=None if error_type is None else self.CLOSE_ON_ERROR_S)

    def _round(self, first: int) -> dict[int, Shard]:
        """Shards first, first+1, … first+R-1: this rank's own from its loader (shard first+rank),
        the others' through the exchange."""
        rank = self.exchange.rank if self.exchange else 0
        try:
            shard, *arrays = next(self._shards)
            assert shard == first + rank, f"loader returned shard {shard}, expected {first + rank}"
            self.built.append(shard)
            own: Shard = tuple(arrays)  # type: ignore[assignment]
            if self.exchange is None:
                return {shard: own}
            return dict(enumerate(self.exchange.gather(own), start=first))
        except RuntimeError as error:  # the DataLoader's or gloo's time limit
            if not (self.stall_s and "timed out" in str(error).lower()):
                raise
            raise RuntimeError(
                f"data.stall_s={self.stall_s:g}: no shard {first}+ came in that time, from this "
                "rank's loader workers or (data parallel) from another rank; a worker or rank "
                "hung, or a shard takes longer to build (raise data.stall_s; 0 waits forever). "
                f"{error}") from error

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
    return first_windows(task, shard_examples, count, split,
                         packing).tokens.numpy().astype(np.int32)
