"""Packing and loading: left-aligned or streamed windows, and a stream fixed by (task config,
seed, data.packing) alone."""

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
from playground.data.packing import (
    check_fits,
    count_windows,
    pack,
    pack_shard,
    pack_stream,
    resolve_packing,
)
from playground.errors import ConfigError

TASK = ("task=depo_tiny", "task.context=128")
PACKINGS = ["aligned", "stream"]


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


def test_aligned_drop_leaves_out_exactly_the_examples_longer_than_the_context():
    """``aligned_drop`` packs as ``aligned`` would pack the examples that fit, and nothing else;
    with none too long, the shard is the aligned one."""
    task = task_from("task=depo1", "task.N=8")
    exs = examples_of(task, 0, 60)
    context = int(np.percentile([len(ex) for ex in exs], 80))
    kept = [ex for ex in exs if len(ex) <= context]
    assert 0 < len(kept) < len(exs)
    dropped = pack(exs, context, task.vocab.pad, drop=True)
    for a, b in zip(dropped, pack(kept, context, task.vocab.pad)):
        assert a.tobytes() == b.tobytes()
    small = task_from(*TASK)
    for a, b in zip(pack_shard(small, "train", 2, 8, "aligned_drop"),
                    pack_shard(small, "train", 2, 8, "aligned")):
        assert a.tobytes() == b.tobytes()
    assert check_fits(small, "aligned_drop") is None  # its longest example fits: nothing to count


def test_aligned_drop_is_refused_past_a_rare_share_or_an_eval_example_too_long():
    """Brevo2 N = 50 at the paper's context 1536: possible examples of 1,812 tokens, so aligned
    packing refuses it; aligned_drop counts none in its sample and every eval example fits. At
    700 tokens over 1 in 1,000 training examples are longer; at 900 the train share passes but
    eval examples (n = N, the longest) do not fit."""
    task = task_from("task=brevo2", "task.N=50", "task.context=1536")
    with pytest.raises(ConfigError, match="aligned_drop"):
        check_fits(task, "auto")
    assert check_fits(task, "aligned_drop").startswith(
        "data.packing=aligned_drop: 0 of the first 4,096 training examples longer than "
        "task.context=1536")
    for context, why in ((700, "training examples are longer"),
                         (900, "evaluation examples are longer")):
        with pytest.raises(ConfigError, match=f"task.context={context}.*{why}"):
            check_fits(task_from("task=brevo2", "task.N=50", f"task.context={context}"),
                       "aligned_drop")


@pytest.mark.parametrize("packing", PACKINGS)
def test_stream_independent_of_batch_size(packing):
    task = task_from(*TASK)
    one = np.concatenate([next(b)[0].numpy() for b in [Batches(task, 24, 16, packing=packing)]])
    b6 = Batches(task, 6, 16, packing=packing)
    four = np.concatenate([next(b6)[0].numpy() for _ in range(4)])
    assert one.tobytes() == four.tobytes()


@pytest.mark.parametrize("packing", PACKINGS)
def test_stream_independent_of_workers(packing):
    task = task_from(*TASK)
    plain = next(Batches(task, 40, 8, num_workers=0, packing=packing))
    workers = next(Batches(task, 40, 8, num_workers=2, prefetch=2, packing=packing))
    for a, b in zip(plain, workers):  # tokens, mask, segments
        assert a.numpy().tobytes() == b.numpy().tobytes()


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


def test_a_hung_worker_fails_the_run_after_data_stall_s(monkeypatch):
    """A loader worker that stops delivering shards (hung) fails the training after
    ``data.stall_s`` seconds, with an error that names the key, instead of hanging it."""
    import playground.data.loader as loader

    real = loader.pack_shard

    def hangs_at_shard_2(task, split, shard, *rest):
        if shard == 2:
            time.sleep(60)  # without the time limit: next() returns late, the test fails
        return real(task, split, shard, *rest)

    monkeypatch.setattr(loader, "pack_shard", hangs_at_shard_2)  # the forked worker's too
    from playground.run.loop import PREEMPT_SIGNALS

    start = time.monotonic()
    batches = Batches(task_from(*TASK), 40, 8, num_workers=1, prefetch=1, stall_s=1,
                      ignore_signals=PREEMPT_SIGNALS)
    workers = list(batches._shards._workers)
    with pytest.raises(RuntimeError, match="data.stall_s=1: no shard 2") as caught, batches:
        for _ in range(3):
            next(batches)
    assert "timed out" in str(caught.value)
    # leaving ``with`` ended the hung worker, though it ignores SIGTERM (the run's preemption
    # signals), so the process can exit
    assert not any(worker.is_alive() for worker in workers)
    assert time.monotonic() - start < 30


def test_closed_batches_stop_their_workers_and_refuse_a_next_shard():
    batches = Batches(task_from(*TASK), 40, 8, num_workers=2, prefetch=1)
    next(batches)
    workers = list(batches._shards._workers)
    batches.close()
    assert not any(worker.is_alive() for worker in workers)
    with pytest.raises(RuntimeError, match="closed"):
        next(batches)


@pytest.mark.parametrize("packing", PACKINGS)
def test_resume_from_state_continues_the_stream(packing):
    task = task_from(*TASK)
    ref = Batches(task, 5, 8, packing=packing)
    batches = [next(ref) for _ in range(6)]
    part = Batches(task, 5, 8, packing=packing)
    for _ in range(3):
        next(part)
    resumed = Batches(task, 5, 8, state=part.state_dict(), packing=packing)
    for expected in batches[3:]:
        got = next(resumed)
        for a, b in zip(got, expected):
            assert a.numpy().tobytes() == b.numpy().tobytes()


@pytest.mark.parametrize("packing", PACKINGS)
def test_shards_are_pure_functions(packing):
    task = task_from(*TASK)
    a, b = pack_shard(task, "train", 3, 8, packing), pack_shard(task, "train", 3, 8, packing)
    assert all(x.tobytes() == y.tobytes() for x, y in zip(a, b))
    first = task.example("train", 24)
    assert a[0][0, : len(first)].tobytes() == first.tokens.tobytes()


STREAM_HASH = """
import hashlib
import os
import signal
import sys
from conftest import task_from
from playground.data.loader import window_stream
w = window_stream(task_from("task=depo1", "task.N=60"), 16, 30, packing=sys.argv[1])
print(hashlib.sha256(w.tobytes()).hexdigest())
"""


@pytest.mark.slow
@pytest.mark.parametrize("packing", PACKINGS)
def test_stream_byte_identical_across_processes(packing):
    digests = {
        subprocess.run([sys.executable, "-c", STREAM_HASH, packing], capture_output=True, text=True,
                       check=True, cwd=__file__.rsplit("/", 1)[0]).stdout.strip()
        for _ in range(2)
    }
    windows = window_stream(task_from("task=depo1", "task.N=60"), 16, 30, packing=packing)
    assert digests == {hashlib.sha256(windows.tobytes()).hexdigest()}


def test_automatic_loader_workers(monkeypatch):
    """data.num_workers=-1: none on CPU; on CUDA, this process's share of the cores (a local
    sweep's runs and the data-parallel ranks on the host share them), less one, but not fewer
    than a sweep's run would have alone, up to 3; explicit counts stand."""
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
    monkeypatch.setenv(HOST_RUNS, "6")  # 16 // 6 - 1 = 1, but three once the others have ended
    assert loader_workers(-1, cuda) == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(3)), raising=False)
    assert loader_workers(-1, cuda) == 2  # never more than the cores less one
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(16)), raising=False)
    monkeypatch.setenv(HOST_RUNS, "4")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "8")
    assert loader_workers(-1, cuda) == 1


# -- stream packing (data.packing=stream; Lano's own) -------------------------------------------


def test_stream_windows_cut_the_concatenated_examples():
    """Every token of the examples, in order, then the next example's first token (its target
    flag with it), then padding in the last window only; a segment starts exactly where an
    example starts, and each window counts its segments from 0."""
    task = task_from(*TASK)
    exs, follow = examples_of(task, 0, 40), task.example("train", 40)
    tokens, mask, segments = pack_stream(exs, 128, task.vocab.pad, follow)
    flat, flat_mask = (np.concatenate([ex.tokens for ex in exs]),
                       np.concatenate([ex.loss_mask for ex in exs]))
    n = len(flat)
    assert n % 128 and tokens.shape == mask.shape == segments.shape == (-(-n // 128), 128)
    assert (tokens.ravel()[:n] == flat).all() and (mask.ravel()[:n] == flat_mask).all()
    assert tokens.ravel()[n] == follow.tokens[0] and mask.ravel()[n] == follow.loss_mask[0]
    tail = slice(n + 1, None)
    assert (tokens.ravel()[tail] == task.vocab.pad).all() and not mask.ravel()[tail].any()
    assert (segments.ravel()[tail] == -1).all() and (segments[:-1] >= 0).all()
    # global positions where an example starts
    starts = set(np.cumsum([len(ex) for ex in exs]).tolist())
    for w, row in enumerate(segments):
        assert row[0] == 0
        for p in range(1, 128):
            g = w * 128 + p
            if g <= n:
                assert row[p] - row[p - 1] == (1 if g in starts else 0), (w, p)


def test_stream_shard_ends_like_every_example():
    """A stream shard closes its last window with the first token of the next shard (a Lano
    ``<bos>``, a target: the shard's last sentence ends), which opens that shard at position 0,
    where nothing is trained."""
    task = task_from("task=cfg3f")
    bos = task.vocab.bos
    for shard in range(3):
        tokens, mask, segments = pack_shard(task, "train", shard, 8)
        used = int((segments[-1] >= 0).sum())
        last = tokens[-1, used - 1]
        total = sum(len(task.example("train", i)) for i in range(8 * shard, 8 * shard + 8))
        assert tokens.size - (tokens == task.vocab.pad).sum() == total + (total % 512 > 0)
        if total % 512:
            assert (last == bos and mask[-1, used - 1]
                    and segments[-1, used - 1] == segments[-1, used - 2] + 1)
        nxt = pack_shard(task, "train", shard + 1, 8)[0]
        assert nxt[0, 0] == bos


def test_stream_packing_lets_examples_cross_window_edges():
    """Examples longer than the context: aligned packing refuses them (naming task.context), a
    stream cuts them."""
    task = task_from("task=depo1", "task.context=512")
    with pytest.raises(ConfigError, match="task.context"):
        check_fits(task, "auto")
    check_fits(task, "stream")
    lengths = [len(task.example("train", i)) for i in range(6)]
    tokens, _, segments = pack_shard(task, "train", 0, 6, "stream")
    assert max(lengths) > 512 and len(tokens) == -(-sum(lengths) // 512)
    assert (tokens[:-1] != task.vocab.pad).all() and (segments[:, 0] == 0).all()


@pytest.mark.parametrize("packing", PACKINGS)
def test_count_windows_matches_the_loader(packing):
    task = task_from(*TASK)
    shards = [pack_shard(task, "train", s, 8, packing)[0] for s in range(3)]
    assert count_windows(task, 24, 8, packing) == (sum(len(w) for w in shards), 24)
    loader = next(Batches(task, sum(len(w) for w in shards), 8,
                          packing=packing))[0].numpy().astype(np.int32)
    assert loader.tobytes() == np.concatenate(shards).tobytes()
    # a partial last shard: the windows of its examples, packed the same way
    lengths = [len(task.example("train", i)) for i in range(24, 29)]
    partial = (-(-sum(lengths) // 128) if packing == "stream"
               else len(pack(examples_of(task, 24, 5), 128, 0)[0]))
    assert (count_windows(task, 29, 8, packing)[0]
            == count_windows(task, 24, 8, packing)[0] + partial)


def test_auto_packing_is_the_tasks_own():
    from playground.config import plugins

    lano, depo = task_from("task=cfg3f"), task_from(*TASK)
    assert resolve_packing(lano, "auto") == "stream" and resolve_packing(depo, "auto") == "aligned"
    assert (resolve_packing(lano, "aligned") == "aligned"
            and resolve_packing(depo, "stream") == "stream")
    assert {name: cls.packing for name, cls in plugins("playground.tasks").items()
            if cls.packing != "aligned"} == {"lano": "stream"}
    with pytest.raises(ConfigError, match="data.packing='packed'"):
        resolve_packing(depo, "packed")
    assert (window_stream(lano, 8, 3).tobytes()
            == window_stream(lano, 8, 3, packing="stream").tobytes())
    assert (window_stream(lano, 8, 3).tobytes()
            != window_stream(lano, 8, 3, packing="aligned").tobytes())


def test_isolated_stream_windows_equal_separate_forwards():
    """data.isolate_examples with a stream: each segment of a window, the example cut at the
    window start included, gets exactly its stand-alone logits, so the <bos> that ends a
    sentence is predicted from that sentence alone."""
    import torch

    from playground.config import ModelConfig
    from playground.layers.canon import CanonConfig
    from playground.mixers.attention import AttentionConfig
    from playground.model import build_model

    task = task_from(*TASK)
    batch = next(Batches(task, 4, 8, packing="stream"))
    model = build_model(ModelConfig(n_layers=2, d_model=64, head_dim=16, mixer=AttentionConfig(),
                                    canon=CanonConfig(positions="ABCD")), len(task.vocab),
                        seed=1).eval()
    with torch.no_grad():
        packed = model(batch.tokens, segments=batch.segments)
        for row in range(4):
            seg = batch.segments[row]
            assert (seg[1:] - seg[:-1]).min() >= 0 and seg[0] == 0
            for k in seg.unique().tolist():
                where = (seg == k).nonzero().flatten()
                alone = model(batch.tokens[row : row + 1, where])
                torch.testing.assert_close(packed[row : row + 1, where], alone,
                                           rtol=1e-5, atol=1e-5)
