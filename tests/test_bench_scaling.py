"""``playground-bench scaling``: global tokens/s under torchrun with 1 and 2 processes (CPU,
gloo), the scaling over one process, one process at the rank's batch (the cap and data
parallel's own efficiency), and bad requests refused before anything runs."""

from __future__ import annotations

import json

import pytest

from playground.bench import scaling as sc
from playground.bench.cli import main
from playground.errors import ConfigError

TINY = ["train.device=cpu", "task.N=8", "task.V=8", "task.context=96", "task.eval_size=16",
        "size=2L64D", "train.batch_size=8", "train.warmup_steps=2"]


@pytest.mark.slow
def test_one_and_two_processes_are_measured_with_their_scaling(tmp_path, capsys):
    out = tmp_path / "s.json"
    main(["scaling", *TINY, "procs=2", "steps=8", "skip=2", "log_every=2", f"json={out}"])
    rows = json.loads(out.read_text())
    assert [r["processes"] for r in rows] == [1, 2]  # one process is always the reference
    assert [(r["global_batch"], r["batch_per_rank"]) for r in rows] == [(8, 8), (8, 4)]
    for r in rows:
        assert r["tokens_per_s"] > 0 and len(r["intervals"]) == 3  # steps 4, 6, 8
        assert round(r["tokens_per_s"]) == sorted(r["intervals"])[1]  # their median
        assert r["efficiency"] == pytest.approx(r["scaling"] / r["processes"])
    assert rows[0]["scaling"] == 1.0
    assert rows[1]["scaling"] == pytest.approx(rows[1]["tokens_per_s"] / rows[0]["tokens_per_s"])
    # the same data and model: the two losses agree (test_distributed.py checks this closely)
    assert rows[0]["final_loss"] == pytest.approx(rows[1]["final_loss"], rel=1e-3)
    assert [r["compile"] for r in rows] == [None, None]  # not compiled: nothing to record
    # one process at the rank's batch (4): the cap and data parallel's own efficiency
    two, alone = rows[1], rows[1]["one_at_rank_batch"]
    assert alone > 0 and "one_at_rank_batch" not in rows[0]
    assert two["cap"] == pytest.approx(2 * alone / rows[0]["tokens_per_s"])
    assert two["dp_efficiency"] == pytest.approx(two["tokens_per_s"] / (2 * alone))
    assert two["efficiency"] == pytest.approx(two["cap"] / 2 * two["dp_efficiency"])
    said = capsys.readouterr().out
    assert "2 process(es), global batch    8 (4 a rank)" in said and "one process at 4:" in said


@pytest.mark.slow
def test_per_rank_keeps_each_ranks_batch(tmp_path):
    rows = sc.scaling([TINY], [2], steps=6, skip=2, log_every=2, per_rank=True,
                      show=lambda _: None)
    assert [(r["global_batch"], r["batch_per_rank"]) for r in rows] == [(8, 8), (16, 8)]
    assert not any("cap" in r for r in rows)  # the rank's batch is the config's: no cap


@pytest.mark.parametrize("request_, key", [
    ({"procs": [3]}, "train.batch_size=8"),      # 8 windows do not split over 3 processes
    ({"procs": [0]}, "procs"),
    ({"skip": 5}, "skip"),                        # fewer than two intervals after it
    ({"variants": [[*TINY, "train.steps=9"]]}, "train.steps"),  # the measurement's own key
])
def test_bad_requests_are_refused_before_anything_runs(request_, key, monkeypatch):
    monkeypatch.setattr(sc, "run_one", lambda *a, **k: pytest.fail("ran"))
    args = {"variants": [TINY], "procs": [2], "steps": 8, "skip": 2, "log_every": 2,
            "per_rank": False, **request_}
    with pytest.raises(ConfigError, match=key):
        sc.scaling(args["variants"], args["procs"], args["steps"], args["skip"],
                   args["log_every"], args["per_rank"], show=lambda _: None)
