"""Packing and loading: left-aligned windows and a stream fixed by (task config, seed) alone."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import task_from

from playground.data.loader import Batches, window_stream
from playground.data.packing import pack, pack_shard

TASK = ("task=depo_tiny", "task.context=128")


def examples_of(task, start, count):
    return [task.example("train", i) for i in range(start, start + count)]


def test_windows_are_left_aligned_and_lossless():
    task = task_from(*TASK)
    exs = examples_of(task, 0, 40)
    tokens, mask, segments = pack(exs, 128, task.vocab.pad)
    cursor = 0
    for row, mrow, srow in zip(tokens, mask, segments):
        assert row[0] == task.vocab.bos  # every window starts at an example boundary
        used = int(np.flatnonzero(row != task.vocab.pad).max()) + 1
        assert not mrow[used:].any()
        # split the window at <bos> back into whole examples
        starts = np.flatnonzero(row[:used] == task.vocab.bos).tolist() + [used]
        for seg, (a, b) in enumerate(zip(starts, starts[1:])):
            ex = exs[cursor]
            assert row[a:b].tobytes() == ex.tokens.tobytes() and (mrow[a:b] == ex.loss_mask).all()
            assert (srow[a:b] == seg).all()
            cursor += 1
        assert (srow[used:] == -1).all()
        # the next example would not have fitted
        if cursor < len(exs):
            assert used + len(exs[cursor]) > 128
    assert cursor == len(exs)


def test_too_long_example_is_an_error():
    task = task_from("task=depo1")
    with pytest.raises(ValueError, match="task.context"):
        pack([task.example("train", 0)], 64, task.vocab.pad)


def test_stream_independent_of_batch_size():
    task = task_from(*TASK)
    one = np.concatenate([next(b)[0].numpy() for b in [Batches(task, 24, 16)]])
    b6 = Batches(task, 6, 16)
    four = np.concatenate([next(b6)[0].numpy() for _ in range(4)])
    assert one.tobytes() == four.tobytes()


def test_stream_independent_of_workers():
    task = task_from(*TASK)
    plain = next(Batches(task, 40, 8, num_workers=0))
    workers = next(Batches(task, 40, 8, num_workers=2, prefetch=2))
    assert plain[0].numpy().tobytes() == workers[0].numpy().tobytes()
    assert plain[1].numpy().tobytes() == workers[1].numpy().tobytes()


def test_workers_leave_preemption_signals_to_the_main_process():
    """SLURM and `timeout` signal the whole process group; a worker that died of it would turn a
    resumable preemption into a crash ("DataLoader worker ... killed by signal"). The run hands
    its preemption signals to the loader (``ignore_signals``)."""
    from playground.run.loop import PREEMPT_SIGNALS

    task = task_from(*TASK)
    ref = Batches(task, 40, 8, num_workers=0)
    want = [next(ref)[0].numpy().tobytes() for _ in range(9)]
    batches = Batches(task, 40, 8, num_workers=2, prefetch=1, ignore_signals=PREEMPT_SIGNALS)
    got = [next(batches)[0].numpy().tobytes()]
    workers = batches._shards._workers
    for worker in workers:
        os.kill(worker.pid, signal.SIGTERM)
    time.sleep(0.5)
    assert all(worker.is_alive() for worker in workers)
    got += [next(batches)[0].numpy().tobytes() for _ in range(8)]  # the stream goes on, unchanged
    assert got == want


def test_resume_from_state_continues_the_stream():
    task = task_from(*TASK)
    ref = Batches(task, 5, 8)
    batches = [next(ref) for _ in range(6)]
    part = Batches(task, 5, 8)
    for _ in range(3):
        next(part)
    resumed = Batches(task, 5, 8, state=part.state_dict())
    for expected in batches[3:]:
        got = next(resumed)
        assert got[0].numpy().tobytes() == expected[0].numpy().tobytes()


def test_shards_are_pure_functions():
    task = task_from(*TASK)
    a, b = pack_shard(task, "train", 3, 8), pack_shard(task, "train", 3, 8)
    assert a[0].tobytes() == b[0].tobytes()
    first = task.example("train", 24)
    assert a[0][0, : len(first)].tobytes() == first.tokens.tobytes()


STREAM_HASH = """
import hashlib
import os
import signal
from conftest import task_from
from playground.data.loader import window_stream
w = window_stream(task_from("task=depo1", "task.N=60"), 16, 30)
print(hashlib.sha256(w.tobytes()).hexdigest())
"""


def test_stream_byte_identical_across_processes():
    digests = {
        subprocess.run([sys.executable, "-c", STREAM_HASH], capture_output=True, text=True, check=True,
                       cwd=__file__.rsplit("/", 1)[0]).stdout.strip()
        for _ in range(2)
    }
    here = hashlib.sha256(window_stream(task_from("task=depo1", "task.N=60"), 16, 30).tobytes()).hexdigest()
    assert digests == {here}


def test_automatic_loader_workers(monkeypatch):
    """data.num_workers=-1: none on CPU; on CUDA, this process's share of the cores (a local
    sweep's runs and the data-parallel ranks on the host share them), less one; explicit counts
    stand."""
    import torch

    from playground.run.device import HOST_RUNS, loader_workers

    cuda = torch.device("cuda")
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(16)), raising=False)
    monkeypatch.delenv(HOST_RUNS, raising=False)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    assert loader_workers(-1, torch.device("cpu")) == 0 and loader_workers(3, cuda) == 3
    assert loader_workers(-1, cuda) == 15
    monkeypatch.setenv(HOST_RUNS, "4")
    assert loader_workers(-1, cuda) == 3
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "8")
    assert loader_workers(-1, cuda) == 1
