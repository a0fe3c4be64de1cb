"""``playground-report capo``: run loading, best-over-lr selection, the files, and that the
plotted numbers are the summaries' numbers."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from playground.report.cells import capo_table
from playground.report.cli import main
from playground.report.plots import plot_capo
from playground.report.table import load_runs
from playground.run import rundir as runs
from playground.run.train import run

# (N, size, lr, params, bits): N=1000 2-2 has two learning rates, the better one must win
CAPO = [(100, "capo/1-1", 1e-3, 1.2e5, 1.5e3), (100, "capo/2-2", 1e-3, 4.0e5, 3.0e3),
        (1000, "capo/1-1", 1e-3, 2.0e5, 9.0e3), (1000, "capo/2-2", 1e-3, 6.0e5, 2.5e4),
        (1000, "capo/2-2", 5e-4, 6.0e5, 2.0e4), (1000, "capo/4-4", 1e-3, 3.2e6, 6.1e4),
        (1000, "capo/8-8", 1e-3, 2.5e7, -5.0)]


def write_run(d, summary: dict, config: dict) -> None:
    d.mkdir(parents=True)
    (d / "summary.json").write_text(json.dumps(summary))
    (d / "config.yaml").write_text(yaml.safe_dump(config))


def capo_summary(N, size, lr, params, bits, status="finished") -> dict:
    metrics = {"bits": bits, "params_used": params, "bits_per_param": bits / params,
               "bits_upper": 1e6, "p1": 5.0, "p2": 30.0}
    record = {"task": {"family": "capo", "preset": "capo_tiny", "difficulty": {"N": N, "E": 100},
                       "heatmap": False, "metric": "bits"},
              "arch": {"mixer": "attention", "label": "rope"},
              "canon": {"label": "none", "positions": ""},
              "size": {"label": size}, "lr": lr, "seed": 0}
    return {"record": record, "step": 300, "status": status, "params": {"total": int(params) + 7},
            **({"metrics": metrics} if status == "finished" else {"error": "boom"})}


@pytest.fixture
def results(tmp_path):
    root = tmp_path / "results"
    for i, row in enumerate(CAPO):  # sizes hold a '/', so run dirs nest like real ones
        N, size, lr, *_ = row
        write_run(root / f"capo_N{N}_{size}_lr{lr:g}_{i}", capo_summary(*row),
                  {"task": {"name": "capo", "N": N, "E": 100}, "train": {"lr": lr},
                   "hydra": {"x": 1}})
    write_run(root / "failed", capo_summary(100, "capo/4-4", 1e-3, 1, 0, status="failed"),
              {"task": {"name": "capo", "N": 100}})
    write_run(root / "depo", {"record": {"task": {"family": "depo"}}, "status": "finished",
                              "metrics": {"acc": 1.0}},
              {"task": {"name": "depo", "N": 8}})
    return root


def test_load_runs_flattens_summary_and_config(results):
    df = load_runs(results)
    assert len(df) == len(CAPO) + 2
    assert {"status", "metrics.bits", "params.total", "record.task.difficulty.N", "config.task.N",
            "config.train.lr", "run_dir", "run"} <= set(df.columns)
    assert not any(c.startswith("config.hydra") for c in df.columns)
    row = df[df["run"] == "capo_N100_capo/2-2_lr0.001_1"].iloc[0]
    assert (row["metrics.bits"] == 3.0e3 and row["config.task.N"] == 100
            and row["params.total"] == 4e5 + 7)


def test_capo_table_keeps_the_best_lr(results):
    table = capo_table(load_runs(results))
    assert len(table) == len(CAPO) - 1 and set(table["N"]) == {100, 1000}
    best = table[(table["N"] == 1000) & (table["size"] == "capo/2-2")]
    assert best["bits"].tolist() == [2.5e4] and best["lr"].tolist() == [1e-3]
    assert capo_table(load_runs(results), best=False).shape[0] == len(CAPO)


def test_plotted_numbers_are_the_summaries(results):
    fig = plot_capo(capo_table(load_runs(results)))
    lines = {line.get_gid(): line for line in fig.axes[0].get_lines()}
    for N in (100, 1000):
        expect = sorted((p, b) for n, _, lr, p, b in CAPO
                        if n == N and b > 0 and not (N == 1000 and lr == 5e-4))
        line = lines[f"series:N={N:,}"]
        assert list(zip(line.get_xdata(), line.get_ydata())) == expect
        assert set(lines[f"upper:N={N:,}"].get_ydata()) == {1e6}  # the summaries' bits_upper
    for c in (2, 1, 0.5, 0.25):  # reference lines: bits = c * params
        x, y = lines[f"ref:{c:g}"].get_data()
        assert np.allclose(np.asarray(y) / np.asarray(x), c)
    assert fig.axes[0].get_xscale() == "log" and fig.axes[0].get_yscale() == "log"


def test_cli_writes_png_svg_csv(results, tmp_path, capsys):
    out = tmp_path / "out"
    main(["capo", str(results), f"out={out}"])
    assert (out / "capo_bits.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in (out / "capo_bits.svg").read_bytes()
    csv = pd.read_csv(out / "capo_bits.csv")
    records = [(runs.read_json(p)["record"], runs.read_json(p))
               for p in results.rglob("summary.json")]
    summaries = {(r["task"]["difficulty"]["N"], r["size"]["label"], r["lr"]): s["metrics"]
                 for r, s in records if "metrics" in s and r["task"]["family"] == "capo"}
    assert len(csv) == len(CAPO) - 1
    for r in csv.itertuples():
        m = summaries[(r.N, r.size, r.lr)]
        assert (r.bits, r.params, r.bits_per_param) == (m["bits"], m["params_used"],
                                                        m["bits_per_param"])
    assert "bits <= 0" in capsys.readouterr().out  # the 8-8 run with negative bits: CSV only
    with pytest.raises(SystemExit) as empty:
        main(["capo", str(tmp_path / "out")])
    assert empty.value.code == 1


def test_report_from_real_runs(make_cfg, tmp_path):
    """Two tiny trainings, then the report: its table is their summaries."""
    common = ["task=capo_tiny", "task.N=8", "task.E=1", "task.eval_size=8", "canon=none",
              "train.steps=0", "train.batch_size=1", "train.warmup_steps=0", "train.eval_every=0"]
    for size in ("1-1", "2-1"):
        run(make_cfg(*common, f"size=capo/{size}", run=f"runs/{size}"))
    main(["capo", str(tmp_path / "runs"), f"out={tmp_path / 'rep'}"])
    csv = pd.read_csv(tmp_path / "rep" / "capo_bits.csv")
    assert sorted(csv["size"]) == ["capo/1-1", "capo/2-1"]
    for r in csv.itertuples():
        summary = runs.read_json(tmp_path / "runs" / r.size.split("/")[1] / "summary.json")
        assert summary["status"] == "finished" and summary["step"] == r.step
        assert (r.bits == summary["metrics"]["bits"]
                and r.params == summary["metrics"]["params_used"])
