"""Data parallel loading: rank r of R builds only the shards r, r+R, … and the ranks swap them
(playground/data/loader.py), so each rank's slice of every global batch is, byte for byte, the
same slice of the one-process batch, for any world size, worker count and packing, also after a
resume. The ranks here are real processes joined over gloo (file store)."""

from __future__ import annotations

import itertools
import pickle
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import task_from
from torch.utils.data import DataLoader

from playground.data.loader import Batches, ShardStream

TESTS = Path(__file__).parent
STEPS, RESUME_AT = 6, 2
WORKERS, PACKINGS = (0, 2), ("aligned", "stream")
# (overrides, batch size, examples a shard): shards of 1-3 windows (several a batch) and of ~6
# (a shard spans batches)
CASES = {
    "depo": (("task=depo_tiny", "task.context=128"), 8, 3),
    "mqar": (("task=mqar_tiny",), 4, 12),
    "cfg3f": (("task=cfg3f",), 8, 3),
}


def read(task, batch, shard, packing, workers=0, exchange=None, state=None, steps=STEPS):
    """The first ``steps`` global batches (bytes of each field), the state after RESUME_AT of
    them, and the shards this process's loader built."""
    b = Batches(task, batch, shard, num_workers=workers, prefetch=2, packing=packing, state=state,
                exchange=exchange)
    out, mark = [], None
    for step in range(steps):
        if step == RESUME_AT:
            mark = b.state_dict()
        out.append(next(b))
    b.close()  # data parallel: the round built ahead, before the next Batches swaps
    # a fork while another thread of this process starts or ends (the round's thread, the
    # closed loader's queue feeder threads) can deadlock the child in CPython's after-fork
    # clean-up, before any worker code (PyOS_AfterFork_Child -> _PyThreadState_DeleteExcept
    # waits on the inherited HEAD_LOCK: CPython gh-112275, fixed in 3.12 and 3.11.10). Seen on
    # 2 cores under Python 3.11.7 here: 2 hangs in about 190 runs of the ranks' loop, and the
    # same with the round built on a thread kept alive. Training makes one Batches a run, its
    # workers forked first, so this back-to-back pattern is the test's own: let threads settle.
    time.sleep(0.05)
    return out, mark, b.built


RANK_S = 240  # a rank still running then prints every thread's stack and exits (a hang)

RANK = """
import faulthandler, pickle, sys
import torch.distributed as dist
from conftest import task_from
from test_data_parallel import CASES, PACKINGS, RANK_S, RESUME_AT, STEPS, WORKERS, read
from playground.data.loader import ShardExchange

faulthandler.dump_traceback_later(RANK_S, exit=True)
rank, size, store, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=size)
exchange = ShardExchange.join(rank, size)
found = {}
for name, (overrides, batch, shard) in CASES.items():
    task, share = task_from(*overrides), batch // size
    for packing in PACKINGS:
        for workers in WORKERS:
            batches, mark, built = read(task, batch, shard, packing, workers, exchange)
            resumed, _, _ = read(task, batch, shard, packing, workers, exchange, state=mark,
                                 steps=STEPS - RESUME_AT)
            cut = lambda bs: [[f[rank * share:(rank + 1) * share].numpy().tobytes() for f in b]
                              for b in bs]
            found[name, packing, workers] = {"slices": cut(batches), "resumed": cut(resumed),
                                             "mark": mark, "built": built}
dist.destroy_process_group()
pickle.dump(found, open(out, "wb"))
"""


@pytest.fixture(scope="module")
def reference():
    """One process: the global batches, the state after RESUME_AT steps, the shards built."""
    found = {}
    for name, (overrides, batch, shard) in CASES.items():
        task = task_from(*overrides)
        for packing in PACKINGS:
            found[name, packing] = read(task, batch, shard, packing)
    return found


def run_ranks(tmp_path: Path, size: int, script: str = RANK) -> list:
    """Each rank's findings. The ranks run side by side, their stderr in files (no pipe to fill);
    a failed or hung rank (its stacks dumped, see RANK) fails the test with every rank's
    stderr, as soon as the last rank has ended."""
    outs = [tmp_path / f"rank{r}.pkl" for r in range(size)]
    errs = [tmp_path / f"rank{r}.err" for r in range(size)]
    store = str(tmp_path / "store")
    procs = []
    for r, (out, err) in enumerate(zip(outs, errs)):
        with err.open("w") as stderr:
            procs.append(subprocess.Popen([sys.executable, "-c", script, str(r), str(size), store,
                                           str(out)], cwd=TESTS, stderr=stderr))
    end = time.monotonic() + RANK_S + 60
    for p in procs:
        try:
            p.wait(timeout=max(end - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    report = "\n".join(f"rank {r}: exit {p.returncode}\n{e.read_text()[-3000:]}"
                       for r, (p, e) in enumerate(zip(procs, errs)))
    assert all(p.returncode == 0 for p in procs), report
    return [pickle.loads(out.read_bytes()) for out in outs]


@pytest.mark.slow
@pytest.mark.parametrize("size", [2, 4])
def test_rank_slices_are_the_one_process_batches(tmp_path, reference, size):
    """Concatenated over the ranks, the slices are the world-size-1 batches byte for byte (every
    field, several steps, both packings, 0 or 2 workers); resuming from the state after
    RESUME_AT steps continues them; each rank's loader built only its own shards, 1/size of
    them, and those of the one round built ahead; and the state saved equals one process's, so a
    run resumes under any world size."""
    ranks = run_ranks(tmp_path, size)
    for (name, packing), (batches, mark, built) in reference.items():
        whole = [[f.numpy().tobytes() for f in b] for b in batches]
        rounds = -(-len(built) // size) * size  # the one process's shards, whole rounds of them
        for workers in WORKERS:
            got = [r[name, packing, workers] for r in ranks]
            for key, want in (("slices", whole), ("resumed", whole[RESUME_AT:])):
                per_rank = zip(*(g[key] for g in got))  # steps, each [rank][field]
                joined = [[b"".join(f) for f in zip(*fields)] for fields in per_rank]
                assert joined == want, (name, packing, workers, key)
            for rank, g in enumerate(got):
                assert g["mark"] == mark
                ahead = list(range(rank, rounds + size, size))  # and the next round
                assert g["built"] == ahead, (name, packing, workers, rank)


STALLED = """
import pickle, sys, time
import torch.distributed as dist
from conftest import task_from
from test_data_parallel import CASES
from playground.data.loader import Batches, ShardExchange

rank, size, store, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=size)
exchange = ShardExchange.join(rank, size, stall_s=2)
found, start = None, time.monotonic()
if rank == 0:
    try:
        Batches(task_from(*CASES["depo"][0]), 8, 3, exchange=exchange, stall_s=2)
    except RuntimeError as error:
        found = (str(error), time.monotonic() - start)
else:
    time.sleep(8)  # joined, then never swaps: hung (for longer than rank 0 waits)
# as training ends (playground.run.device.teardown): a process that exits with a gloo group whose
# collective timed out may abort in its C++ teardown (docs/bench/2026-12-03-cpu-gloo-timeout-exit)
dist.destroy_process_group()
pickle.dump(found, open(out, "wb"))
"""


@pytest.mark.slow
def test_a_swap_with_a_hung_rank_fails_after_data_stall_s(tmp_path):
    """A rank whose swap waits for a rank that never brings its shard fails after
    ``data.stall_s`` (the exchange's gloo group has that time limit), with an error naming the
    key, instead of waiting gloo's 30 minutes."""
    (error, waited), _ = run_ranks(tmp_path, 2, STALLED)
    assert "timed out" in error.lower() and "data.stall_s=2: no shard 0" in error
    assert waited < 15


@pytest.mark.parametrize("workers", WORKERS)
def test_a_rank_builds_only_its_own_shards(workers):
    """Rank 1 of 4 starting at shard 5 builds shards 6, 10, 14, … (its workers share them), and
    each is the shard one process builds."""
    task = task_from(*CASES["depo"][0])
    stream = ShardStream(task, "train", 3, start=5, packing="aligned", rank=1, ranks=4)
    loader = DataLoader(stream, batch_size=None, num_workers=workers,
                        prefetch_factor=2 if workers else None)
    got = list(itertools.islice(loader, 5))
    assert [s for s, *_ in got] == [6, 10, 14, 18, 22]
    one = ShardStream(task, "train", 3, packing="aligned")
    alone = {s: a for s, *a in itertools.islice(one, 23)}
    for shard, *arrays in got:
        assert all(a.numpy().tobytes() == b.numpy().tobytes() for a, b in zip(arrays, alone[shard]))


class _Mirror:
    """An exchange of ``size`` ranks in one process: every rank's shard is this one's."""

    def __init__(self, size: int):
        self.rank, self.size = 0, size

    def gather(self, shard):
        return [shard] * self.size


def test_a_round_built_ahead_hands_its_error_to_the_training_thread(monkeypatch):
    """The round built ahead is built in a thread; an error there is raised by the batch that
    needs the round, not lost with the thread."""
    import playground.data.loader as loader

    task = task_from(*CASES["depo"][0])
    real = loader.pack_shard

    def pack(task, split, shard, *args):
        if shard >= 2:
            raise RuntimeError(f"no shard {shard}")
        return real(task, split, shard, *args)

    monkeypatch.setattr(loader, "pack_shard", pack)
    b = Batches(task, 4, 3, packing="aligned", exchange=_Mirror(2))
    with pytest.raises(RuntimeError, match="no shard 2"):
        for _ in range(100):
            next(b)
    assert b.built == [0]  # round 0; round 2 failed in the thread, before it was built
    b.close()


def test_closed_batches_refuse_a_next_round():
    """After close() the loader is past the round built ahead: a batch that needs a new round
    is refused, not cut from the wrong shards."""
    task = task_from(*CASES["depo"][0])
    b = Batches(task, 4, 3, packing="aligned", exchange=_Mirror(2))
    next(b)
    b.close()
    with pytest.raises(RuntimeError, match="closed"):
        for _ in range(100):
            next(b)
