"""The dry run's GPU-hour estimate (playground.sweep.cost): the throughput table, its lookup
(exact and nearest rows), the arithmetic, the stated fallbacks, and the dry run's lines."""

import re
from pathlib import Path

import pytest

from playground.config import compose
from playground.sweep.cost import (
    THROUGHPUT_CSV,
    Row,
    Shape,
    compute_rate,
    estimate,
    floor_step,
    flops_per_token,
    load_rows,
    provenance,
)

ROOT = Path(__file__).resolve().parents[1]
H200, NOW = ("default", "H200", "2026-11-26"), "a/t.json"
ROWS = (  # a small table of our own, so that the arithmetic does not move with the shipped one
    Row("llama", True, "8L512D", 512, 64, 1_000_000, "compute", *H200, NOW),
    Row("llama", True, "12L768D", 2048, 16, 400_000, "compute", *H200, NOW),
    Row("llama", False, "8L512D", 512, 64, 2_000_000, "compute", *H200, NOW),
    Row("llama", True, "8L512D", 512, 16, 256_000, "floor", "default", "H100", "2026-11-24", "b"),
    Row("mamba2", True, "8L512D", 512, 64, 500_000, "compute", "reduce-overhead", *H200[1:], NOW),
)


def shape(**kw) -> Shape:
    base = dict(backbone="attention", canon=True, layers=8, width=512, blocks=8, context=512,
                batch=64, steps=1000, compiled=True, compile_mode="default", evals=2, task="depo")
    return Shape(**{**base, **kw})


def test_shipped_table_reads_and_every_row_names_an_existing_record():
    rows = load_rows()
    assert len(rows) >= 40 and {r.backbone for r in rows} == {"llama", "gla", "mamba2", "gdn"}
    assert {r.kind for r in rows} == {"compute", "floor"}
    for r in rows:
        assert r.tokens_per_s > 0 and r.device in ("H100", "H200") and len(r.date) == 10
        assert (ROOT / r.record).exists(), r.source
    assert THROUGHPUT_CSV.parent.name == "sweep"  # shipped as package data (playground/**/*.csv)


def test_exact_row_is_used_as_measured():
    paper = shape(layers=12, width=768, blocks=12, context=2048, batch=16)
    rate, row, notes = compute_rate(paper, ROWS)
    assert rate == 400_000 and row.size == "12L768D" and notes == []
    rate, row, notes = compute_rate(paper)  # the shipped table: the H200 table of 2026-11-26
    assert rate == 497_768 and row.device == "H200" and "h200-table-blocks" in row.source
    assert not notes


def test_nearest_row_is_scaled_by_flops_per_token_and_said():
    rate, row, notes = compute_rate(shape(layers=12, width=768, blocks=12, batch=16), ROWS)
    assert row.size == "12L768D" and row.context == 2048  # the same size beats the same context
    scale = flops_per_token(12, 768, 2048, True) / flops_per_token(12, 768, 512, True)
    assert rate == pytest.approx(400_000 * scale) and rate > 400_000
    assert notes == ["llama at 12L768D context 512: scaled by FLOPs per token from its row at "
                     "12L768D context 2048"]
    rate, row, notes = compute_rate(shape(layers=4, width=128, blocks=4), ROWS)  # below any size
    assert row.size == "8L512D" and rate == 1_000_000 and "no faster" in notes[0]


def test_a_later_row_of_the_same_date_replaces_an_earlier_one():
    """Rows tie on distance and date: the one further down the table (the later measurement of
    that day) is read, so a row added after a change of the code replaces the one before it."""
    later = Row("llama", True, "8L512D", 512, 64, 1_500_000, "compute", *H200, "c")
    rate, row, _ = compute_rate(shape(), ROWS + (later,))
    assert rate == 1_500_000 and row.source == "c"
    rate, row, _ = compute_rate(shape(), (later,) + ROWS)
    assert rate == 1_000_000 and row.source == NOW


def test_estimate_arithmetic_with_floor_and_sharing():
    s = shape(batch=16, steps=1000, evals=2)  # 8,192 tokens a step: floor-bound alone
    floor = 16 * 512 / 256_000  # the floor row's step, 8 blocks as the run
    assert floor_step(s, ROWS)[0] == pytest.approx(floor)
    alone = estimate(s, 1, ROWS)
    assert alone.train_s == pytest.approx(1000 * floor)
    assert alone.overhead_s == pytest.approx(30 + 2 * 5)
    assert alone.gpu_s == pytest.approx(1000 * floor + 40)
    assert [r.kind for r in alone.rows] == ["compute", "floor"]
    shared = estimate(s, 8, ROWS)  # eight runs overlap their floors: compute-bound
    assert shared.train_s == pytest.approx(1000 * 16 * 512 / 1_000_000)
    assert shared.overhead_s == pytest.approx(40 / 8)
    assert [r.kind for r in shared.rows] == ["compute"]
    big = estimate(shape(batch=64, steps=100, evals=1, task="lano"), 1, ROWS)  # compute-bound
    assert big.gpu_s == pytest.approx(100 * 64 * 512 / 1_000_000 + 30 + 45)


def test_the_floor_is_the_tightest_row_per_block_for_every_size():
    """Every floor row bounds the host-bound step from above (a compute-bound run or runs sharing
    a GPU only over-state it), so the smallest step per block holds at every size: the row
    nearest an 8L768D run must not give it a floor below an 8L512D run's."""
    loose = Row("llama", False, "8L512D", 512, 64, 1_000_000, "floor", *H200, "a")  # 4.1 ms a block
    tight = Row("llama", False, "12L512D", 512, 64, 1_500_000, "floor", *H200, "b")  # 1.8 ms
    rows = ROWS + (loose, tight)
    per_block = 64 * 512 / 1_500_000 / 12
    for size in (dict(layers=8, width=512, blocks=8), dict(layers=8, width=768, blocks=8)):
        step, row, _ = floor_step(shape(canon=False, **size), rows)
        assert row is tight and step == pytest.approx(8 * per_block)
    step, row, _ = floor_step(shape(canon=False, layers=12, width=768, blocks=12), rows)
    assert step == pytest.approx(12 * per_block)
    # a floor measured with CUDA graphs is not one without them, however tight
    graphs = Row("llama", False, "8L512D", 512, 64, 9_000_000, "floor", "reduce-overhead",
                 "H200", "2026-11-26", "c")
    assert floor_step(shape(canon=False), rows + (graphs,))[1] is tight


def test_fallbacks_are_stated_never_silent():
    unknown = estimate(shape(backbone="scan"), 1, ROWS)
    assert unknown.tokens_per_s == 1_000_000  # Llama's row
    assert any("'scan' has no measured throughput: Llama's assumed" in n for n in unknown.notes)
    no_floor = estimate(shape(canon=False), 1, ROWS)
    assert "llama without Canon has no measured small-step floor: with Canon's assumed" in \
        no_floor.notes
    mode = estimate(shape(backbone="mamba2", blocks=16), 1, ROWS)
    assert any("no throughput measured with compile_mode=default" in n for n in mode.notes)
    assert any("no small-step floor measured for mamba2" in n for n in mode.notes)
    graphs = estimate(shape(batch=16, compile_mode="reduce-overhead"), 1, ROWS)
    # the only floor was measured without CUDA graphs: it does not bound a step with them
    assert graphs.train_s == pytest.approx(1000 * 16 * 512 / 1_000_000)
    assert any("no small-step floor measured for attention with CUDA graphs" in n
               for n in graphs.notes)
    eager = estimate(shape(compiled=False), 1, ROWS)
    assert any("train.compile=false" in n for n in eager.notes)
    assert estimate(shape(), 1, ROWS).notes == []  # an exact row with a floor: nothing assumed


def test_shape_of_a_composed_config():
    cfg = compose(["task=cfg3f", "size=12L768D", "model=mamba2", "mixer=mamba2_noconv1d",
                   "canon=AB_nores", "train=paper", "train.batch_size=16", "train.steps=5000",
                   "train.eval_every=2500", "train.compile=true"])
    s = Shape.of(cfg)
    assert (s.backbone, s.canon, s.layers, s.width, s.blocks) == ("mamba2", True, 12, 768, 24)
    assert (s.context, s.batch, s.steps, s.evals, s.task) == (512, 16, 5000, 2, "lano")
    est = estimate(cfg)  # 8,192 tokens a step of 24 Mamba2 blocks: the floor (H100 runs) binds
    assert est.gpu_s == pytest.approx(est.train_s + 30 + 2 * 45)
    assert est.train_s == pytest.approx(5000 * 16 * 512 / 64_911 / 16 * 24)
    assert provenance(est.rows) == ("H200/H100 throughput from docs/bench/2026-11-26-h200-table-"
                                    "blocks, docs/bench/2026-11-26-x2-probe-campaign")


def test_mamba2_in_one_compiled_graph_is_compute_bound_alone():
    """The shipped rows against the Depo1 (N = 15, K = 4) Mamba2 + Canon-AB 8L512D run on an H200
    in one compiled graph (mamba_ssm's SSD as custom ops; docs/bench/2026-12-03-h200-mamba2-one-
    graph): 617k tokens/s alone, the GPU 97-100 % busy. Before (5 graph breaks,
    docs/bench/2026-12-03-h200-r10-mamba2) alone 393k with the GPU 55-87 % busy and two at once
    531k together: those rows, of the same day, stay in the table above the new ones, which the
    lookup reads; in the estimate a second run on the GPU then gains nothing (not measured)."""
    cfg = compose(["task=depo1", "task.K=4", "task.N=15", "task.context=512", "size=8L512D",
                   "model=mamba2", "mixer=mamba2_noconv1d", "canon=AB_nores", "train=paper",
                   "train.batch_size=64", "train.steps=10000", "train.eval_every=2000",
                   "train.length_scales=[1,2,4]", "train.compile=true",
                   "train.compile_mode=reduce-overhead"])
    alone, shared = estimate(cfg, 1), estimate(cfg, 2)
    assert alone.train_s == pytest.approx(10_000 * 64 * 512 / 616_895)
    assert all("one-graph" in r.source for r in alone.rows)
    assert 2 * shared.train_s == pytest.approx(2 * alone.train_s)  # the GPU is full with one


def test_llama_at_manos_short_context_is_estimated_from_its_own_row():
    """Llama + Canon-ABCD 8L768D at Mano (64 × 256) on an H200 (docs/bench/2026-12-03-h200-r10-
    mamba2): two runs at once 349k and 351k tokens/s, 587k alone. Scaled by FLOPs per token from
    context 2048 the estimate had two at once at 512k each; from the row at context 256 that the
    pair gave, 350k each, and alone no faster than measured."""
    cfg = compose(["task=mano", "task.L=3", "task.context=256", "size=8L768D", "mixer=rope",
                   "canon=ABCD", "train=paper", "train.batch_size=64", "train.steps=10000",
                   "train.eval_every=2000", "train.compile=true"])
    tokens = 10_000 * 64 * 256
    assert tokens / (2 * estimate(cfg, 2).train_s) == pytest.approx(350_000, rel=0.03)
    assert tokens / estimate(cfg, 1).train_s <= 587_000


def test_dry_run_prints_the_estimate(tmp_path, monkeypatch, capsys):
    from playground.sweep.cli import main

    monkeypatch.chdir(tmp_path)
    main(["fig7", "scale=cpu", "panels=depo1_K8", "variants=llama_rope", "size=2L64D",
          "train.lr=3e-3", "dry_run=true"])
    out = capsys.readouterr().out
    assert "3 of 3 runs to do (0 finished)" in out
    assert "estimated GPU-hours per panel, to do of all (one run per GPU):\n  depo1_K8: " in out
    assert "assumed (3 runs): train.compile=false" in out
    total = re.search(r"estimated GPU-hours to do: ([\d.]+) \(of ([\d.]+) for the runs "
                      r"listed\), at (H[0-9/H]+) throughput from docs/bench/", out)
    assert total and float(total[1]) == float(total[2]) > 0, out
    assert not (tmp_path / "results").exists()  # nothing launched


def test_a_dry_run_with_a_deadline_says_what_a_launch_would_start(tmp_path, monkeypatch, capsys):
    """``deadline=`` in a dry run: how many runs a local launch would start if each took its
    estimate, on the GPUs asked for (here none is visible: one, and it says so)."""
    from playground.sweep import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "_gpu_count", lambda: 0)
    argv = ["fig7", "scale=cpu", "panels=depo1_K8", "variants=llama_rope", "size=2L64D",
            "train.lr=3e-3", "dry_run=true", "launcher=local", "per_gpu=2"]
    cli.main([*argv, "deadline=1000000"])
    out = capsys.readouterr().out
    assert ("with deadline=1e+06 on 1 GPU (none visible: gpus= sets how many), 2 a GPU, if each "
            "run took its estimate: 3 of 3 runs would start, the last ending at ") in out
    cli.main([*argv, "deadline=1", "gpus=3"])
    out = capsys.readouterr().out
    assert "on 3 GPUs, 2 a GPU, if each run took its estimate: 0 of 3 runs would start" in out
    assert re.search(r"would start; left for a later launch: (depo_tiny_\S+, ){2}depo_tiny_\S+$",
                     out, re.M), out
    assert not (tmp_path / "results").exists()
    # a margin below 1 lets a launch start runs whose plain estimate ends past the deadline
    monkeypatch.setattr(cli, "simulate", lambda *a, **k: ([(None, 0.0, 1200.0)], []))
    cli.plan_hold([None], 1, 1, 1100, margin=0.9)
    assert capsys.readouterr().out.endswith(
        "1 of 1 runs would start, the last ending at 1,200 s (past the deadline: margin=0.9 "
        "holds each run to its estimate × 0.9, 1,080 s)\n")


# -- the GPU time finished runs took (playground.sweep.measured) ------------------------------

T0 = "2026-12-05T10:00:00+00:00"


def _record(root: Path, name: str, start: float, end: float, **fields) -> Path:
    """A finished run's summary at ``root/s/name``, started and finished ``start`` and ``end``
    seconds after T0."""
    import json
    from datetime import datetime, timedelta

    at = datetime.fromisoformat(T0)
    folder = root / "s" / name
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps({
        "status": "finished", "started": (at + timedelta(seconds=start)).isoformat(),
        "finished": (at + timedelta(seconds=end)).isoformat(), **fields}))
    return folder


def test_measured_shares_a_gpu_among_the_runs_on_it(tmp_path):
    """Records that name host and GPU: the runs on one GPU split it moment by moment; those
    without: the group's GPUs (gpus.csv, else 1) split among its runs; a run's runs per GPU:
    their average over its life; a run not finished does not count."""
    from playground.sweep.measured import measured

    known = {"host": "h", "device_name": "NVIDIA H200"}
    a = _record(tmp_path, "a", 0, 100, cuda_visible_devices="0", **known)
    b = _record(tmp_path, "b", 0, 200, cuda_visible_devices="0", **known)
    c = _record(tmp_path, "c", 10, 110, cuda_visible_devices="1", **known)
    # a second group, 1,000 s later, whose records do not say where they ran: 2 GPUs (gpus.csv)
    d = _record(tmp_path, "d", 1000, 1100)
    e = _record(tmp_path, "e", 1000, 1100)
    f = _record(tmp_path, "f", 1050, 1150)
    trio = [_record(tmp_path, f"t{i}", 2000, 2300) for i in range(3)]  # not in gpus.csv: 1 GPU
    for name, text in (("g", '{"status": "running"}'), ("h", "{damaged"),
                       ("i", '{"status": "finished"}')):  # not finished, unreadable, no times
        (tmp_path / "s" / name).mkdir()
        (tmp_path / "s" / name / "summary.json").write_text(text)
    (tmp_path / "gpus.csv").write_text("# typed in\nfirst_start,gpus,device\n"
                                       "2026-12-05T10:16,2,2xH100\n")
    got = measured(tmp_path)
    assert set(got) == {a, b, c, d, e, f, *trio}
    assert [got[x].gpu_s for x in (a, b, c)] == pytest.approx([50, 150, 100])
    assert [got[x].per_gpu for x in (a, b, c)] == [2, 1, 1]  # b: 200 s for 150 GPU-s
    assert {got[x].device for x in (a, b, c)} == {"H200"} and got[a].group == "2026-12-05T10:00"
    # d, e alone for 50 s (2 GPUs: one each), then d, e, f share them (2/3 each), f alone 50 s
    assert [got[x].gpu_s for x in (d, e, f)] == pytest.approx([50 + 100 / 3] * 2 + [100 / 3 + 50])
    assert [got[x].per_gpu for x in (d, e, f)] == [1, 1, 1]  # 100 s for 83 GPU-s each
    assert got[d].device == "2xH100" and got[d].group == "2026-12-05T10:16"
    assert [(got[t].gpu_s, got[t].per_gpu, got[t].device) for t in trio] == [
        (pytest.approx(100), 3, "?")] * 3


def test_the_dry_run_sets_finished_runs_estimate_beside_their_measured_time(tmp_path, capsys):
    from types import SimpleNamespace

    from playground.sweep.cli import print_measured

    cfg = compose(["task=depo1", "size=8L512D", "train.compile=true", "train.steps=1000"])
    where = {"host": "h", "cuda_visible_devices": "0", "device_name": "NVIDIA H200"}
    runs = [SimpleNamespace(out=_record(tmp_path, name, 0, 3600, **where), config=cfg,
                            overrides=["panel=p"]) for name in ("a", "b")]
    print_measured(runs)
    out = capsys.readouterr().out
    est = 2 * estimate(cfg, 2).gpu_s / 3600
    assert out.endswith(f"  p: {est:.2f} estimated, 1.00 measured (×{est:.2f}; 2 runs on H200)\n"
                        f"  all: {est:.2f} estimated, 1.00 measured (×{est:.2f}; 2 runs on H200)\n")
    print_measured([SimpleNamespace(out=tmp_path / "none", config=cfg, overrides=[])])
    assert capsys.readouterr().out == ""  # no record: nothing to set beside the estimate
    # a run of another GPU model, hours later (a group of its own, alone on its GPU): the ratio
    # on each model beside the panel's; "2xH100" (gpus.csv) is the model H100
    (tmp_path / "gpus.csv").write_text("first_start,gpus,device\n2026-12-05T15:00,2,2xH100\n")
    runs.append(SimpleNamespace(out=_record(tmp_path, "c", 5 * 3600, 5 * 3600 + 1800),
                                config=cfg, overrides=["panel=q"]))
    print_measured(runs)
    out = capsys.readouterr().out
    one = estimate(cfg, 1).gpu_s / 3600
    assert f"  q: {one:.2f} estimated, 0.50 measured (×{one / 0.5:.2f}; 1 run on H100)\n" in out
    assert out.endswith(
        f"  all: {est + one:.2f} estimated, 1.50 measured (×{(est + one) / 1.5:.2f}; 3 runs: "
        f"H100 ×{one / 0.5:.2f} of 1, H200 ×{est:.2f} of 2)\n"), out
