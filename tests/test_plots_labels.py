"""The report's figures say what was run: heatmaps carry a colour bar, a title naming the learning
rate(s) and seed counts, per-cell seed counts and spreads, one-seed and not-run cells drawn apart,
a Depo caption, titles that never overlap; paper comparisons only difference cells of the same
difficulty; curves and length-generalisation lines that can be told apart."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from playground.report import plots
from playground.report.cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "results"


def cell(row, size, arch="llama_rope", canon="none", value=0.5, value2=np.nan, seeds=2, spread=0.05,
         lr=1e-3, panel="mano", status="finished", n_finished=None):
    return {"panel": panel, "row": row, "row_index": int(row.split("=")[-1]) if "=" in row else 0,
            "size": size, "architecture": arch, "canon": canon, "status": status, "value": value,
            "value2": value2, "spread": spread if seeds > 1 else np.nan, "seeds": seeds, "lr": lr,
            "n_finished": seeds if n_finished is None else n_finished}


def flat(text: str) -> str:
    """A title or caption as one line (figures wrap them to their width)."""
    return " ".join(text.split())


def texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def gids(ax, gid) -> list:
    return [p for p in ax.patches if p.get_gid() == gid]


def colorbars(fig) -> list:
    return [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]


def test_heatmap_has_a_colour_bar_and_says_what_a_cell_is():
    cells = pd.DataFrame([cell("L=3", "8L512D", seeds=2), cell("L=4", "8L512D", seeds=1),
                          cell("L=3", "8L512D", canon="abcd_res", seeds=3, value=0.9, spread=0.02),
                          cell("L=3", "12L768D", canon="abcd_res", seeds=2)])
    fig = plots.heatmap_figure(cells, "mano", agg="mean", lrs=[1e-3])
    assert len(colorbars(fig)) == 1
    title = flat(fig.get_suptitle())
    assert "mean over seeds, lr 1e-3" in title and "1–3 seeds per cell" in title
    assert "best learning rate" not in title and "best lr" not in title
    plain, canon = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert "Llama(RoPE)" in plain.get_title() and "lr 1e-3" in flat(plain.get_title())
    # rows L=3, L=4 × sizes 8L512D, 12L768D: the mean with ± and n, n=1 hatched, no run "not run"
    assert texts(plain) == ["50.0%\n±5.0 n=2", "not run", "50.0%\nn=1", "not run"]
    assert len(gids(plain, "one-seed")) == 1 and len(gids(plain, "not-run")) == 2
    assert gids(plain, "one-seed")[0].get_xy() == (-0.5, 0.5)  # the L=4, 8L512D cell
    assert (texts(canon)[:2] == ["90.0%\n±2.0 n=3", "50.0%\n±5.0 n=2"]
            and not gids(canon, "one-seed"))
    # sizes run only
    assert [t.get_text() for t in plain.get_xticklabels()] == ["8L512D", "12L768D"]


def test_heatmap_title_names_every_lr_when_cells_chose_between_them():
    cells = pd.DataFrame([cell("L=3", "8L512D", lr=5e-4, n_finished=4),
                          cell("L=4", "8L512D", lr=1e-3)])
    mean = flat(plots.heatmap_figure(cells, "mano", agg="mean", lrs=[5e-4, 1e-3]).get_suptitle())
    assert "best lr (lrs run: 5e-4, 1e-3)" in mean and "2 seeds per cell" in mean
    best = plots.heatmap_figure(cells, "mano", agg="best", lrs=[5e-4, 1e-3])
    assert "best run over seeds and lrs (lrs run: 5e-4, 1e-3)" in flat(best.get_suptitle())
    assert "best of n=2" in texts(best.axes[0])[0]



def test_the_title_says_which_sizes_chose_between_lrs_and_which_ran_one():
    """Where the sizes of a panel ran different learning rates (768D at two, 512D at one), the
    title lists the rates by size; where every size ran the same, it lists them once."""
    cells = pd.DataFrame([cell("L=3", "8L512D", lr=1e-3, seeds=1),
                          cell("L=3", "8L768D", lr=5e-4, seeds=1, n_finished=2),
                          cell("L=3", "12L768D", lr=1e-3, seeds=1, n_finished=2),
                          cell("L=3", "12L512D", lr=1e-3, seeds=1)])
    by_size = {"12L768D": [1e-3, 5e-4], "8L512D": [1e-3], "12L512D": [1e-3],
               "8L768D": [5e-4, 1e-3]}
    title = flat(plots.heatmap_figure(cells, "mano", agg="mean", lrs=by_size).get_suptitle())
    assert ("best lr (lrs run: 5e-4, 1e-3 at 8L768D, 12L768D; 1e-3 at 8L512D, 12L512D)"
            in title), title
    one = {"8L512D": [1e-3], "8L768D": [5e-4]}  # one rate a size, not the same
    assert ("each cell at the one lr it ran (lrs 1e-3 at 8L512D; 5e-4 at 8L768D)"
            in plots.describe_cells(cells[cells["n_finished"] == 1], "mean", one))
    same = {"8L512D": [1e-3], "12L512D": [1e-3]}
    assert "mean over seeds, lr 1e-3;" in plots.describe_cells(
        cells[cells["n_finished"] == 1], "mean", same)

def test_a_metric_other_than_accuracy_has_its_own_colour_scale():
    cells = pd.DataFrame([cell("cfg3f", "8L512D", value=0.02, spread=0.001),
                          cell("cfg3f", "8L512D", canon="abcd_res", value=0.04, spread=0.002)])
    fig = plots.heatmap_figure(cells, "lano: kl", percent=False, lower=True, agg="mean", lrs=[5e-4],
                               label="kl (lower is better)")
    (bar,) = colorbars(fig)
    assert bar.get_ylabel() == "kl (lower is better)" and bar.get_ylim() == (0.02, 0.04)
    assert bar.get_yscale() == "linear" and "log scale" not in fig.get_supxlabel()
    assert texts(fig.axes[0]) == ["0.0200\n±0.0010 n=2"]


def test_a_wide_positive_metric_is_shaded_on_a_log_scale_in_figure_and_site():
    """KL of 0.02 to 0.16 (one variant far above the rest, as NoPE at Lano): shades and colour
    bar on a log scale, said in the caption, so the geometric middle takes the middle shade; the
    results browser shades the same cells alike; a narrow span (2×) stays linear."""
    from playground.report.site import _shades

    values = [0.02, np.sqrt(0.02 * 0.16), 0.16]
    cells = pd.DataFrame([cell(f"cfg3{g}", "8L512D", value=v, canon=c) for g, v, c in
                          zip("fjk", values, ["none", "abcd_res", "none"])])
    fig = plots.heatmap_figure(cells, "lano: kl", percent=False, lower=True, agg="mean")
    (bar,) = colorbars(fig)
    assert bar.get_yscale() == "log"
    assert "Shades on a log scale." in flat(fig.get_supxlabel())
    shades = _shades(cells, percent=False, lower=True)
    assert shades == pytest.approx([1.0, 0.5, 0.0])
    assert list(plots.shade_of(values, plots.value_scale(values, False), lower=True)) == \
        pytest.approx(shades)
    narrow = plots.value_scale([0.02, 0.04], percent=False)
    assert narrow == (0.02, 0.04, False)
    assert plots.shade_of(0.03, narrow) == pytest.approx(0.5)


def test_depo_heatmap_explains_the_cell_format_and_chance():
    cells = pd.DataFrame([cell(f"N={n}", "8L512D", panel="depo1_K4", value=0.4, value2=0.8)
                          for n in (10, 20)])
    fig = plots.heatmap_figure(cells, "depo1_K4", agg="mean", lrs=[1e-3],
                               chance={"N=10": 0.1, "N=20": 0.05})
    caption = flat(fig.get_supxlabel())
    assert "a/b% = accuracy at k = K = 4 / accuracy at k = K/2 = 2" in caption
    assert "Chance (a uniform guess): N=10: 10%, N=20: 5%." in caption
    assert texts(fig.axes[0])[0].startswith("40/80%")
    mano = plots.heatmap_figure(pd.DataFrame([cell(f"L={n}", "8L512D") for n in (3, 4)]), "mano",
                                agg="mean", chance={"L=3": 1 / 23, "L=4": 1 / 23})
    caption = flat(mano.get_supxlabel())
    assert "a/b%" not in caption and "Chance (a uniform guess): 4.35%." in caption
    brevo = plots.heatmap_figure(pd.DataFrame([cell("N=20", "8L512D")]), "brevo1", agg="mean",
                                 chance={"N=20": 0.0})  # 0: nothing to say
    assert "Chance" not in brevo.get_supxlabel()


def test_heatmap_chance_comes_from_each_rows_task(tmp_path):
    """``cells.row_chances`` asks each row's task for its chance (``Task.chance``): 1/N at the
    Depo fixture's rows N = 8, 12, 16, 0 at Brevo's; none for a metric without a chance level
    (KL, losses)."""
    from playground.report.cells import annotate, row_chances
    from playground.report.table import load_runs

    chances = row_chances(annotate(load_runs(FIXTURES)))
    depo = {r: v for (p, r), v in chances.items() if p == "depo_K2"}
    assert depo == pytest.approx({"N=8": 1 / 8, "N=12": 1 / 12, "N=16": 1 / 16})
    assert chances[("brevo_tiny", "N=8")] == 0.0
    assert row_chances(annotate(load_runs(FIXTURES), "final_loss"), "final_loss") == {}


def test_column_titles_never_overlap():
    canons = ["none", "a_res", "b_res", "ab_res", "abcd_res", "abcd_nores", "abcd_res_dynlowrank"]
    cells = pd.DataFrame([cell("pairs=8", "1L64D", canon=c, panel="mqar") for c in canons])
    fig = plots.heatmap_figure(cells, "mqar", agg="mean", lrs=[1e-3])
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    heatmaps = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    boxes = [ax.title.get_window_extent(renderer) for ax in heatmaps]
    assert len(boxes) == 7
    for left, right in zip(boxes, boxes[1:]):
        assert left.x1 < right.x0, (left, right)


def versus(rows_ours, rows_paper, sizes=("8L512D", "8L768D")) -> pd.DataFrame:
    """A ``cells.versus_paper`` table of one variant: the paper's rows × sizes, ours at 8L512D."""
    out = []
    for i, (ours, paper) in enumerate(zip(rows_ours, rows_paper)):
        for size in sizes:
            mine = size == "8L512D"
            out.append({"figure": 7, "panel": "mano", "architecture": "llama_rope", "canon": "none",
                        "row_paper": paper, "size": size, "value_paper": 0.6,
                        "value2_paper": np.nan,
                        "row_index": i, "row_ours": ours if mine else np.nan,
                        "value_ours": 0.2 if mine else np.nan, "value2_ours": np.nan,
                        "status": "finished" if mine else "missing"})
    return pd.DataFrame(out)


def test_versus_paper_draws_no_difference_across_difficulties():
    fig = plots.versus_figure(versus(["L=3", "L=4"], ["L=10", "L=13"]), "Figure 7, mano")
    heatmaps = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert len(heatmaps) == 2 and not any("ours − paper" in ax.get_title() for ax in heatmaps)
    ours, paper = heatmaps
    assert [t.get_text() for t in ours.get_yticklabels()] == ["L=3", "L=4"]
    assert [t.get_text() for t in paper.get_yticklabels()] == ["L=10", "L=13"]
    assert [t.get_text() for t in ours.get_xticklabels()] == ["8L512D"]
    assert "other difficulties" in flat(fig.get_supxlabel()) and len(colorbars(fig)) == 1


def test_versus_paper_differences_only_cells_of_the_same_difficulty():
    fig = plots.versus_figure(versus(["cfg3f", "cfg3x"], ["cfg3f", "cfg3j"]), "Figure 7, lano")
    heatmaps = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert len(heatmaps) == 3 and heatmaps[2].get_title() == "ours − paper (pp)"
    assert texts(heatmaps[2]) == ["-40", "—"]  # cfg3f is the paper's cfg3f; cfg3x is no paper row
    assert len(colorbars(fig)) == 2


@pytest.mark.slow
def test_versus_paper_with_no_matching_run_draws_nothing(tmp_path, capsys):
    assert plots.versus_figure(versus(["L=3"], ["L=10"]).assign(status="missing"), "none") is None
    main(["heatmap", str(FIXTURES / "mixed_cpu"), "vs_paper=7", f"out={tmp_path}"])
    out = capsys.readouterr().out
    assert "vs_paper=7: no run here matches a cell of the paper's Figure 7" in out
    assert not list(tmp_path.glob("vs_paper_*.png")) and (tmp_path / "vs_paper_fig7.csv").exists()


def test_curves_of_one_eval_point_draw_markers():
    evals = pd.DataFrame([{"step": 5000, "acc_k1": 0.9, "acc_k2": 0.4}])
    fig = plots.curves_figure({"run": evals})
    lines = fig.axes[0].get_lines()
    assert [line.get_label() for line in lines] == ["k=1", "k=2"]
    assert all(line.get_marker() not in (None, "None", "") and len(line.get_xdata()) == 1
               for line in lines)


def test_lengthgen_lines_can_be_told_apart():
    rows = [{"variant": f"v{i}", "scale": s, "value": 1.0, "spread": 0.0}
            for i in range(7) for s in (1, 2, 4)]
    fig = plots.lengthgen_figure(pd.DataFrame(rows), "mqar", "acc")
    lines = [container.lines[0] for container in fig.axes[0].containers]  # errorbar's data lines
    assert len(lines) == 7
    assert len({line.get_marker() for line in lines}) == 7
    assert len({str(line._unscaled_dash_pattern) for line in lines}) == 7  # seven dash styles
    assert len({line.get_xdata()[0] for line in lines}) == 7  # offset at the same scale
    assert all(abs(np.log2(line.get_xdata()[0])) < 0.2 for line in lines)  # but still at 1×


def test_canon_labels_read_each_detail_once():
    """A Canon id's details become one legend item each, an init value with "_" included."""
    from playground.report.cells import canon_id

    run = pd.Series({"record.canon.positions": "DCBA", "record.canon.residual": False,
                     "record.canon.details": ["nores", "initrandom_fixed"]})
    assert canon_id(run) == "abcd_nores_initrandom-fixed"
    assert plots.canon_label(canon_id(run)) == "Canon-ABCD(no-res, init random-fixed)"
    assert plots.canon_label("abcd_res_initx4_silu") == "Canon-ABCD(res, init ×4, silu)"
    run = pd.Series({"record.canon.positions": "ABCD", "record.canon.residual": False,
                     "record.canon.details": ["nores", "initc+1"]})
    assert plots.canon_label(canon_id(run)) == "Canon-ABCD(no-res, init current +1)"
    assert plots.canon_label("abcd_res_initx4_initc-0.5") == (
        "Canon-ABCD(res, init ×4, init current -0.5)")
    assert plots.canon_label("ab_nores") == "Canon-AB(no-res)"
    assert plots.canon_label("conv1d") == "conv1d"
