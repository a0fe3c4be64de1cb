"""``playground-report panel``: one panel of a sweep, whole, in one folder (heatmap of the grid,
gains against size, the panel over training, the run table, the sweep file; again for each of the
sweep file's ``report`` metrics), and the figure of the panel over training."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from test_report_grid import RESULTS
from test_report_grid import SWEEP as GRID_SWEEP

from playground.errors import ConfigError
from playground.report import plots
from playground.report.cli import main
from playground.report.table import NOT_RUN
from playground.sweep.spec import find_sweep_file, report_metrics

# test_report_grid's sweep (fig7's cpu rows of Depo1 with a third variant that has no run), its
# rows labelled with the fixture runs' panel (their task's, depo_K2), the paper's figure and a
# report metric for the panel
SWEEP = ("figure: 7\nreport: {depo_K2: [acc_k1]}\n"
         + GRID_SWEEP.replace("- {task: depo_tiny", "- {panel: depo_K2, task: depo_tiny"))


@pytest.fixture(scope="module")
def sweep_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sweeps") / "panel3.yaml"
    path.write_text(SWEEP)
    return path


def test_the_panel_command_writes_the_whole_panel_and_its_report_metrics(sweep_file, tmp_path,
                                                                         capsys):
    main(["panel", str(RESULTS), "panel=depo_K2", f"grid={sweep_file}:cpu", f"out={tmp_path}"])
    names = {p.name for p in tmp_path.iterdir()}
    for suffix in ("", "_acc_k1"):  # the task's own metric, then the sweep file's report metric
        assert {f"cells{suffix}.csv", f"cells{suffix}.md", f"gaps{suffix}.csv",
                f"gaps{suffix}.md"} <= names
        for figure in ("heatmap", "gaps", "curves"):
            assert {f"{figure}_depo_K2{suffix}.png", f"{figure}_depo_K2{suffix}.svg"} <= names
    assert {"runs.csv", "sweep.yaml"} <= names
    # the paper has no depo_K2 panel: no comparison with its Figure 7
    assert not [n for n in names if n.startswith("vs_paper")]
    assert (tmp_path / "sweep.yaml").read_bytes() == sweep_file.read_bytes()
    cells = pd.read_csv(tmp_path / "cells.csv")
    assert len(cells) == 36 and (cells["status"] == NOT_RUN).sum() == 12  # 3 × 4 × 3 variants
    runs = pd.read_csv(tmp_path / "runs.csv")
    assert NOT_RUN not in set(runs["status"]) and len(runs) == 48  # the runs, not the grid
    k1 = pd.read_csv(tmp_path / "cells_acc_k1.csv")
    assert (k1["status"] == "finished").sum() == 24
    assert "curves_depo_K2_acc_k1.png" in capsys.readouterr().out


def test_metrics_replaces_the_sweep_files_report_list(sweep_file, tmp_path):
    main(["panel", str(RESULTS), "panel=depo_K2", f"grid={sweep_file}:cpu", "metrics=none",
          "figures=false", f"out={tmp_path}"])
    assert not [p for p in tmp_path.iterdir() if "acc_k1" in p.name]
    main(["panel", str(RESULTS), "panel=depo_K2", f"grid={sweep_file}:cpu", "metrics=acc_k2",
          "figures=false", f"out={tmp_path}"])
    assert (tmp_path / "cells_acc_k2.csv").exists()
    assert not [p for p in tmp_path.iterdir() if "acc_k1" in p.name]


@pytest.mark.parametrize("missing", ["panel", "grid"])
def test_the_panel_and_its_grid_are_required(sweep_file, tmp_path, capsys, missing):
    given = {"panel": "panel=depo_K2", "grid": f"grid={sweep_file}:cpu"}
    given.pop(missing)
    with pytest.raises(SystemExit):
        main(["panel", str(RESULTS), *given.values(), f"out={tmp_path}"])
    assert f"{missing}= is required" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_a_sweep_files_report_names_panels_of_its_rows(tmp_path):
    assert report_metrics(find_sweep_file("fig7"), "depo1_K4") == ["depth_reached"]
    assert report_metrics(find_sweep_file("fig7"), "mano") == []
    path = tmp_path / "s.yaml"
    path.write_text(SWEEP.replace("report: {depo_K2: [acc_k1]}", "report: {depo_K3: [acc_k1]}"))
    with pytest.raises(ConfigError, match=r"report names panel\(s\) \['depo_K3'\].*'depo_K2'"):
        report_metrics(path, "depo_K2")
    path.write_text(SWEEP.replace("report: {depo_K2: [acc_k1]}", "report: {depo_K2: acc_k1}"))
    with pytest.raises(ConfigError, match="report=.* is invalid"):
        report_metrics(path, "depo_K2")


def _series() -> pd.DataFrame:
    """Two variants at N=8 2L64D: RoPE seeds 0 (steps 10, 20, 30) and 1 (10, 20); RoPE + Canon
    seed 0 at N=8 4L64D only."""
    rows = [("N=8", "2L64D", "llama_rope", "none", 0, 10, 0.1),
            ("N=8", "2L64D", "llama_rope", "none", 0, 20, 0.3),
            ("N=8", "2L64D", "llama_rope", "none", 0, 30, 0.5),
            ("N=8", "2L64D", "llama_rope", "none", 1, 10, 0.3),
            ("N=8", "2L64D", "llama_rope", "none", 1, 20, 0.5),
            ("N=8", "4L64D", "llama_rope", "abcd_res", 0, 10, 0.9)]
    return pd.DataFrame(rows, columns=["row", "size", "architecture", "canon", "seed", "step",
                                       "value"])


def test_the_panel_over_training_draws_each_seed_and_their_mean_where_all_seeds_are():
    variants = [("llama_rope", "none"), ("llama_rope", "abcd_res")]
    fig = plots.panel_curves_figure(_series(), ["N=8", "N=12"], ["2L64D", "4L64D"], variants,
                                    "t", "acc (%)", chance={"N=8": 0.125})
    axes = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in axes] == ["N=8 · 2L64D", "N=8 · 4L64D", "N=12 · 2L64D",
                                               "N=12 · 4L64D"]
    mean = [line for line in axes[0].get_lines() if line.get_gid() == "mean:llama_rope:none"]
    assert len(mean) == 1
    # step 30 has one seed of two: not in the mean
    assert list(mean[0].get_xdata()) == [10, 20]
    assert list(mean[0].get_ydata()) == pytest.approx([20.0, 40.0])
    seeds = {line.get_gid(): len(line.get_xdata()) for line in axes[0].get_lines()
             if str(line.get_gid()).startswith("seed:")}
    assert seeds == {"seed:llama_rope:none:0": 3, "seed:llama_rope:none:1": 2}
    # chance dashed on the N=8 row only; the N=12 cells say "not run"
    chance = [[line.get_ydata() for line in ax.get_lines() if line.get_gid() == "chance"]
              for ax in axes]
    assert [len(c) for c in chance] == [1, 1, 0, 0] and list(chance[0][0]) == [12.5, 12.5]
    assert [t.get_text() for t in axes[2].texts] == [NOT_RUN]
    assert not axes[0].texts
    legend = fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == ["Llama(RoPE)",
                                                          "Llama(RoPE) + Canon-ABCD(res)"]


RESULTS_MINI = Path(__file__).resolve().parents[1] / "results" / "mini"


@pytest.mark.slow
@pytest.mark.parametrize("panel", ["depo1_K4", "mano", "lano", "brevo1"])
def test_the_committed_fig7_folders_are_what_the_panel_command_writes(panel, tmp_path):
    """``results/mini/fig7_<panel>/`` as ``playground-report panel`` writes it from the run
    records beside it (the tables; the figures are drawn from the same tables)."""
    main(["panel", str(RESULTS_MINI / "runs" / "fig7_mini"), f"panel={panel}", "grid=fig7:mini",
          "figures=false", f"out={tmp_path}"])
    committed = RESULTS_MINI / f"fig7_{panel}"
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written and set(written) <= {p.name for p in committed.iterdir()}
    for name in written:
        assert (tmp_path / name).read_bytes() == (committed / name).read_bytes(), name


def test_the_record_command_gives_a_dated_records_run_facts(tmp_path, capsys):
    """``playground-report record`` on the lr check's two committed runs (runs/fig7_mini, lr
    5e-4) gives what its dated record (docs/bench/2026-12-05-h200-lr-check-depo1-8l768d)
    states: 467k tokens/s each (median of the log intervals from step 200), 9.3 GB peak, final
    losses 0.126 and 0.555, one interval in 200 with a gradient norm above 10 (max 46 and 45);
    a spike of 0 is refused."""
    root = Path(__file__).resolve().parents[1] / "results/mini/runs"
    main(["record", str(root), f"out={tmp_path}", "panel=depo1_K4", "size=8L768D"])
    lines = (tmp_path / "record.md").read_text().splitlines()
    assert sum(line.startswith("| fig7_mini/") for line in lines) >= 3  # the 1e-3 run too
    rows = [line for line in lines if line.startswith("| fig7_mini/") and "_lr0.0005_" in line]
    assert len(rows) == 2
    n10, n15 = ([c.strip() for c in row.strip("|").split("|")] for row in rows)
    assert n10[0].startswith("fig7_mini/depo1_N10") and n10[3] == "2026-12-05 05:35:34"
    assert n10[6].startswith("467k (465–") and n10[7] == "9.3" and n10[9] == "0.126"
    assert n10[10] == "1 of 200 (max 46)" and n15[10] == "1 of 200 (max 45)"
    assert n15[9] == "0.555" and capsys.readouterr().out.count("| fig7_mini/") == len(
        [line for line in lines if line.startswith("| fig7_mini/")])
    with pytest.raises(SystemExit):
        main(["record", str(root), f"out={tmp_path}", "spike=0"])
