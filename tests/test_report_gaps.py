"""``playground-report gaps``: Canon's gain against model size, on synthetic run records with
known answers (paired seeds, each side's best learning rate, the sign of a lower-is-better
metric), and the command's outputs and refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from omegaconf import OmegaConf

from playground.config import compose
from playground.report import cells as aggregate
from playground.report.cli import main
from playground.report.table import check_integrity, load_runs
from playground.run.rundir import config_hash


def _write_run(root: Path, size: str, canon: str, seed: int, lr: float, acc: float) -> None:
    """A finished Depo1 (K = 4, N = 15) run: config.yaml and summary.json as training writes
    them."""
    config = OmegaConf.to_container(compose([
        "task=depo1_K4", "task.N=15", f"size={size}", "mixer=rope", f"canon={canon}",
        f"seed={seed}", f"train.lr={lr}", "sweep=syn_cpu", "panel=depo1_K4"]), resolve=True)
    config.pop("hydra", None)
    name = f"{size}_{canon}_lr{lr}_s{seed}"
    config.update(run_name=name, out_dir=str(root / name))
    d = root / name
    d.mkdir(parents=True)
    (d / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    summary = {"status": "finished", "config_hash": config_hash(config),
               "metrics": {"acc_at_K": acc, "acc_at_K2": acc}, "final_loss": 1 - acc,
               "params": {"non_embedding": {"2L64D": 100_000, "4L64D": 200_000}[size]}}
    (d / "summary.json").write_text(json.dumps(summary))


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """2L64D: without Canon seeds 0, 1 (0.10, 0.20), with Canon-ABCD seeds 0, 1, 2 (0.60, 0.80,
    0.70) at lr 1e-3, and at lr 2e-3 a worse mean on each side; 4L64D: one seed a side."""
    root = tmp_path_factory.mktemp("gaps")
    for seed, acc in enumerate([0.10, 0.20]):
        _write_run(root, "2L64D", "none", seed, 1e-3, acc)
        _write_run(root, "2L64D", "none", seed, 2e-3, acc - 0.05)
    for seed, acc in enumerate([0.60, 0.80, 0.70]):
        _write_run(root, "2L64D", "ABCD", seed, 1e-3, acc)
    _write_run(root, "2L64D", "ABCD", 0, 2e-3, 0.30)
    _write_run(root, "4L64D", "none", 0, 1e-3, 0.40)
    _write_run(root, "4L64D", "ABCD", 0, 1e-3, 0.35)
    return root


def _table(root: Path, metric: str = "") -> pd.DataFrame:
    frame, refused = check_integrity(load_runs(root))
    assert not refused
    lower = aggregate.lower_is_better(metric)
    return aggregate.gaps(aggregate.annotate(frame, metric), "abcd_res", lower).set_index("size")


def test_the_gain_is_the_difference_of_the_means_at_each_sides_best_lr(runs):
    table = _table(runs)
    small = table.loc["2L64D"]
    assert small["gain"] == pytest.approx(0.70 - 0.15)
    assert (small["seeds_without"], small["seeds_with"]) == (2, 3)
    assert (small["lr_without"], small["lr_with"]) == (1e-3, 1e-3)
    # the per-seed gains pair only the seeds both sides ran
    assert small["paired_seeds"] == "0;1"
    assert [float(g) for g in small["seed_gains"].split(";")] == pytest.approx([0.50, 0.60])
    assert small["params"] == 100_000
    # a loss by Canon reads negative
    assert table.loc["4L64D", "gain"] == pytest.approx(-0.05)
    assert list(table.index) == ["2L64D", "4L64D"]  # the paper's column order


def test_a_lower_is_better_metric_counts_without_minus_with(runs):
    table = _table(runs, "final_loss")
    # final_loss = 1 - acc: the same gains, measured the other way round
    assert table.loc["2L64D", "gain"] == pytest.approx(0.55)
    assert table.loc["4L64D", "gain"] == pytest.approx(-0.05)


def test_the_command_writes_the_table_markdown_and_figure(runs, tmp_path, capsys):
    main(["gaps", str(runs), f"out={tmp_path}"])
    assert {p.name for p in tmp_path.iterdir()} == {"gaps.csv", "gaps.md", "gaps_depo1_K4.png",
                                                    "gaps_depo1_K4.svg"}
    md = (tmp_path / "gaps.md").read_text()
    assert "| N=15 | +55.0 pt (2 + 3) | -5.00 pt (1 + 1) |" in md
    assert "Llama(RoPE) + Canon-ABCD(res) − Llama(RoPE)" in capsys.readouterr().out


def test_the_markdown_names_each_cells_lr_where_the_cells_ran_more_than_one(runs, monkeypatch,
                                                                          tmp_path):
    """One rate over the table: no lr in a cell (above). Sizes at other rates: each cell's, and
    both sides' where their best rates differ; the figure's title lists the rates by size."""
    from playground.report import cli, plots

    table = _table(runs).reset_index()
    table.loc[table["size"] == "4L64D", ["lr_without", "lr_with"]] = [5e-4, 1e-3]
    md = cli.gaps_markdown(table, percent=True)
    assert "| N=15 | +55.0 pt (2 + 3, lr 1e-3) | -5.00 pt (1 + 1, lr 5e-4 / 1e-3) |" in md
    titles = []
    monkeypatch.setattr(plots, "gaps_figure", lambda block, title, *a, **k: titles.append(title))
    monkeypatch.setattr(cli, "save_figure", lambda fig, path: None)
    main(["gaps", str(runs), f"out={tmp_path}"])
    assert titles == ["depo1_K4: Canon-ABCD(res) minus no Canon, mean over seeds (line) and per "
                      "seed (points)\neach side at its best lr of those run: 1e-3, 2e-3 at 2L64D; "
                      "1e-3 at 4L64D"]


def test_a_canon_variant_without_a_pair_is_refused_by_name(runs, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["gaps", str(runs), "canon=ab_nores", f"out={tmp_path}"])
    err = capsys.readouterr().err
    assert "canon=ab_nores is invalid" in err and "the Canon ids there: ['abcd_res']" in err
    assert not list(tmp_path.iterdir())
