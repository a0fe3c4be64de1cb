"""Findings (playground.report.findings): the verdict rule on synthetic numbers and on synthetic
run records with known answers, the shipped findings file, the probe sweep's rows, the runs a
finding still needs, and the generated tables in the READMEs."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from playground.config import compose
from playground.errors import ConfigError
from playground.report import findings as fnd
from playground.report.table import check_integrity, load_runs
from tests.conftest import task_from

ROOT = Path(__file__).resolve().parents[1]


# -- the rule on numbers ---------------------------------------------------------------------


def test_a_true_effect_with_three_seeds_holds():
    out = fnd.compare([0.10, 0.12, 0.08], [0.60, 0.55, 0.65], 512, 512)
    assert out["verdict"] == "holds" and out["low"] > 0 and out["margin"] == pytest.approx(0.5)


def test_a_reversed_effect_reads_reversed():
    assert fnd.compare([0.60, 0.55, 0.65], [0.10, 0.12, 0.08], 512, 512)["verdict"] == "reversed"


def test_one_seed_is_at_most_suggestive():
    one = fnd.compare([0.10], [0.90], 512, 512)
    assert one["verdict"] == "suggestive" and one["low"] > 0  # binomial noise alone excludes 0
    assert fnd.compare([0.90], [0.10], 512, 512)["verdict"] == "suggestive, reversed"
    assert fnd.compare([0.1, 0.1], [0.9, 0.9], 512, 512)["verdict"] == "suggestive"


def test_an_effect_within_binomial_noise_is_inconclusive():
    # identical seeds (sample variance 0) but 64 questions: the binomial floor keeps it open
    out = fnd.compare([0.50, 0.50, 0.50], [0.53, 0.53, 0.53], 64, 64)
    assert out["verdict"] == "inconclusive" and out["low"] < 0 < out["high"]
    # the same margin with 100,000 questions a seed is beyond the eval's noise
    assert fnd.compare([0.50, 0.50, 0.50], [0.53, 0.53, 0.53], 100_000,
                       100_000)["verdict"] == "holds"


def test_a_seed_spread_wider_than_the_margin_is_inconclusive():
    assert fnd.compare([0.1, 0.5, 0.9], [0.2, 0.6, 0.95], 512, 512)["verdict"] == "inconclusive"


def test_both_sides_at_chance():
    out = fnd.compare([0.05, 0.06, 0.07], [0.08, 0.075, 0.085], 512, 512, chance=1 / 23)
    assert out["verdict"] == "at chance"
    # one side above the band is not at chance
    assert fnd.compare([0.05, 0.06, 0.07], [0.4, 0.5, 0.45], 512, 512,
                       chance=1 / 23)["verdict"] == "holds"


def test_lower_is_better_turns_the_margin():
    out = fnd.compare([0.15, 0.14, 0.16], [0.036, 0.037, 0.035], lower=True)
    assert out["margin"] == pytest.approx(0.114, abs=1e-3) and out["verdict"] == "holds"


def test_sameness_within_and_beyond_the_tolerance():
    same = fnd.compare([0.96, 0.97, 0.965], [0.97, 0.965, 0.968], 1280, 1280, expect="same",
                       tolerance=0.05)
    assert same["verdict"] == "holds"
    far = fnd.compare([0.41, 0.45, 0.43], [0.07, 0.07, 0.071], 512, 512, expect="same",
                      tolerance=0.05)
    assert far["verdict"] == "differs"


def _seeds_like(mean: float, sd: float, n: int) -> list[float]:
    """n values whose mean and sample standard deviation are exactly ``mean`` and ``sd``."""
    z = np.linspace(-1, 1, n)
    return list(mean + sd * z / z.std(ddof=1))


@pytest.mark.parametrize("expect, tolerance, means, sds, projected", [
    ("better", 0.0, (0.02, 0.03), (0.004, 0.010), "holds"),
    ("better", 0.0, (0.03, 0.02), (0.010, 0.004), "reversed"),
    ("same", 0.005, (0.0300, 0.0320), (0.002, 0.002), "holds"),
    ("same", 0.005, (0.0300, 0.0380), (0.003, 0.003), "differs")])
def test_an_inconclusive_cells_projection_is_where_such_seeds_would_decide(
        expect, tolerance, means, sds, projected):
    """The projection is the fewest seeds a side at which seeds of the measured means and spreads
    would get a verdict, read by compare itself (a metric without a binomial floor, as KL)."""
    def read(n):
        return fnd.compare(*(_seeds_like(m, sd, n) for m, sd in zip(means, sds)), expect=expect,
                           tolerance=tolerance)
    now = read(3)
    assert now["verdict"] == "inconclusive"
    n = int(now["seeds_to_decide"])
    assert 3 < n <= fnd.PROJECT_UP_TO and now["projected"] == projected
    assert read(n)["verdict"] == projected and read(n - 1)["verdict"] == "inconclusive"


def test_a_cell_no_count_of_seeds_would_decide_has_no_projection():
    out = fnd.compare([0.1, 0.5, 0.9], [0.1, 0.5, 0.9], 512, 512)  # the same seeds both sides
    assert out["verdict"] == "inconclusive" and math.isnan(out["seeds_to_decide"])
    assert fnd.projection_text(pd.Series(out)) == f"> {fnd.PROJECT_UP_TO}"
    decided = fnd.compare([0.05, 0.06, 0.07], [0.4, 0.5, 0.45], 512, 512)
    assert decided["verdict"] == "holds" and math.isnan(decided["seeds_to_decide"])
    assert fnd.projection_text(pd.Series(decided)) == "—"


def test_no_run_on_a_side_is_untested():
    stats = fnd.compare([], [0.5, 0.6, 0.7])
    assert stats["verdict"] == "untested" and stats["seeds_b"] == 3
    assert math.isnan(stats["mean_a"]) and stats["mean_b"] == pytest.approx(0.6)  # still shown


def test_the_t_quantiles():
    assert fnd.t975(2) == pytest.approx(4.303) and fnd.t975(2.7) == pytest.approx(4.303)
    assert fnd.t975(None) == 1.96 and fnd.t975(500) == 1.96
    # the Welch interval with equal variances and n = 3 a side has 4 degrees of freedom
    a, b = [0.1, 0.2, 0.3], [0.6, 0.7, 0.8]
    out = fnd.compare(a, b)
    half = 2.776 * np.sqrt(2 * 0.01 / 3)
    assert out["high"] - out["margin"] == pytest.approx(half, rel=1e-3)


def test_t_quantiles_at_any_level_match_the_tables_and_the_closed_forms():
    for df, value in fnd.T975.items():  # the printed table, at its three decimals
        assert fnd.t_quantile(0.95, df) == pytest.approx(value, abs=6e-4)
    assert fnd.t_quantile(0.99, 5) == pytest.approx(4.032, abs=6e-4)
    assert fnd.t_quantile(0.999, 3) == pytest.approx(12.924, abs=6e-4)
    for level in (0.5, 0.95, 0.999):
        # one degree of freedom: Cauchy; two: P(|T| <= t) = t / sqrt(2 + t²)
        assert fnd.t_quantile(level, 1) == pytest.approx(math.tan(math.pi * level / 2))
        assert fnd.t_quantile(level, 2) == pytest.approx(level * math.sqrt(2 / (1 - level ** 2)))
    assert fnd.t_quantile(0.999, 2.9) == fnd.t_quantile(0.999, 2)  # the whole df at or below
    assert fnd.t_quantile(0.95, None) == pytest.approx(1.959964)  # a one-seed side: normal
    assert fnd.t_quantile(0.999, 31) == pytest.approx(3.290527)


def _row(margin: float, se: float, df: float, verdict: str, metric: str = "acc") -> dict:
    return {"verdict": verdict, "margin": margin, "se": se, "df": df, "metric": metric,
            "seeds_a": 3, "seeds_b": 3, "chance": 0.1}


def test_family_wise_reads_every_interval_at_the_bonferroni_level():
    table = pd.DataFrame([_row(0.50, 0.02, 4, "holds"), _row(0.10, 0.03, 4, "holds"),
                          _row(0.01, 0.02, 4, "inconclusive"), _row(0.02, 0.004, 4, "holds"),
                          _row(np.nan, np.nan, np.nan, "untested"),
                          _row(0.0, 0.01, 4, "at chance")])
    rules = [("better", 0.0, True)] * 3 + [("same", 0.05, True)] + [("better", 0.0, True)] * 2
    out = fnd.family_wise(table, rules)
    t = fnd.t_quantile(1 - 0.05 / 4, 4)  # four rows have an interval
    theta = math.atan(t / 2)  # four df: P(|T| <= t) = sin θ (1 + cos² θ / 2), θ = atan(t / 2)
    assert math.sin(theta) * (1 + math.cos(theta) ** 2 / 2) == pytest.approx(1 - 0.05 / 4)
    assert out.loc[0, "low_fw"] == pytest.approx(0.50 - t * 0.02)
    assert list(out["verdict_fw"]) == ["holds", "inconclusive", "inconclusive", "holds", "", ""]
    assert out["low_fw"].iloc[4:].isna().all()
    # a family of one reads each interval as the cell does
    one = fnd.family_wise(table.iloc[[1]].reset_index(drop=True), rules[1:2])
    assert one.loc[0, "low_fw"] == pytest.approx(0.10 - fnd.t975(4) * 0.03, abs=1e-4)
    assert one.loc[0, "verdict_fw"] == "holds"


def test_the_summary_marks_the_verdicts_not_kept_family_wise(synthetic):
    _, _, table = synthetic
    kept = table.reset_index()
    family = kept[~kept["verdict"].isin(fnd.NO_INTERVAL)]
    assert (family["verdict_fw"] != "").all() and (kept.loc[kept.index.difference(
        family.index), "verdict_fw"] == "").all()
    changed = kept.assign(verdict_fw=np.where(kept["verdict"] == "holds", "inconclusive",
                                              kept["verdict_fw"]))
    text = fnd.summary(changed)
    assert "**holds**° " in text and "° inconclusive family-wise (Bonferroni over" in text
    assert "°" not in fnd.summary(kept.assign(verdict_fw=kept["verdict"]))


# -- synthetic run records, end to end (the fixture `synthetic`: tests/conftest.py) ---------------


def test_synthetic_records_give_the_known_verdicts(synthetic):
    _, _, table = synthetic
    assert table.loc["F-good", "verdict"] == "holds"
    assert table.loc["F-bad", "verdict"] == "reversed"
    assert table.loc["F-same", "verdict"] == "inconclusive"
    # both below 2 × chance (mqar_tiny: 1/value_vocab)
    assert table.loc["F-low2", "verdict"] == "at chance"
    assert table.loc["F-one", "verdict"] == "suggestive"
    assert table.loc["F-missing", "verdict"] == "untested"
    assert table.loc["F-missing", "missing"] == "missing seed 0; missing seed 1; missing seed 2"


def test_sides_are_named_from_their_records_unless_they_read_alike(synthetic):
    _, _, table = synthetic
    # every synthetic variant is the same model: the labels would read alike
    assert (table.loc["F-good", "label_a"], table.loc["F-good", "label_b"]) == ("base", "good")
    run = pd.Series({"record.arch.mixer": "attention", "record.arch.position": "rope",
                     "record.arch.mlp": "gelu", "record.canon.positions": "ABCD",
                     "record.canon.details": [], "record.canon.residual": True})
    assert fnd._label(run) == "Llama(RoPE) + Canon-ABCD(res), GELU MLP"
    mimetic = pd.Series({"record.arch.mixer": "mamba2", "record.arch.mlp": "none",
                         "record.arch.conv": "conv1d", "record.arch.mimetic": True})
    assert fnd._label(mimetic) == "Mamba2 + conv1d, mimetic init"


def test_a_side_is_named_from_its_runs_in_any_cell():
    """One name a side in every cell of a finding: side b has a run in another panel only; a
    side without runs is named from its sweep."""
    arch = {"record.arch.mixer": "attention", "record.arch.position": "rope",
            "record.canon.details": [], "record.canon.residual": True}
    frame = pd.DataFrame([
        {"config.sweep": "s_mini", "config.variant": "plain", "config.panel": "p",
         "status": "finished", "seed": 0, **arch, "record.canon.positions": ""},
        {"config.sweep": "s_mini", "config.variant": "canon", "config.panel": "q",
         "status": "finished", "seed": 0, **arch, "record.canon.positions": "ABCD"},
        {"config.sweep": "s_mini", "config.variant": "other", "config.panel": "p",
         "status": "failed", "seed": 0, **arch, "record.canon.positions": "A"}])
    finding = fnd.Finding("F", "2", "", "c", fnd.Side("s", "mini", "plain"),
                          fnd.Side("s", "mini", "canon"), "better", (0,),
                          (fnd.Cell("p", "8L512D"),))
    assert fnd._labels(finding, frame) == ("Llama(RoPE)", "Llama(RoPE) + Canon-ABCD(res)")
    # a side with no finished run anywhere: named from the record its sweep's run would write
    planned = dataclasses.replace(finding, b=fnd.Side("probe", "mini", "mamba2_noconv1d"),
                                  cells=(fnd.Cell("mano", "8L512D"),))
    assert fnd._labels(planned, frame) == ("Llama(RoPE)", "Mamba2 + noconv1d")
    # ... or where its sweep cannot be read, both by the sweep's variant names
    other = dataclasses.replace(finding, b=fnd.Side("s", "mini", "other"))
    assert fnd._labels(other, frame) == ("plain", "other")


def test_synthetic_records_carry_seeds_values_and_questions(synthetic):
    _, _, table = synthetic
    good = table.loc["F-good"]
    assert (good["seeds_a"], good["seeds_b"]) == (3, 3)
    assert good["values_b"] == "0.9;0.85;0.88"
    n = task_from("task=mqar_tiny", "task.eval_size=32").question_counts()["acc"]
    assert good["questions"] == f"{n:.4g};{n:.4g}"
    assert good["chance"] == pytest.approx(1 / task_from("task=mqar_tiny").cfg.value_vocab)


def test_the_report_command_writes_the_table_and_a_figure(synthetic, tmp_path):
    from playground.report.cli import main

    root, spec, _ = synthetic
    main(["findings", str(root), f"spec={spec}", f"out={tmp_path}"])
    assert (tmp_path / "findings_1.png").exists() and (tmp_path / "findings_1_curves.png").exists()
    assert all((tmp_path / f"findings_forest.{fmt}").exists() for fmt in ("png", "svg"))
    md = (tmp_path / "findings.md").read_text()
    assert "| 1 | good beats base | p " in md and "**holds**" in md and "**untested**" in md


def test_the_site_shows_each_finding_cell_with_its_verdict_and_its_runs(synthetic, tmp_path):
    """``playground-report site … findings=``: findings.html has a line per finding cell with the
    report's own texts (verdict, margin, each side's seeds and values, the runs still to do), each
    side linked to the page of its runs' panel, the forest figure, and the index links to it."""
    from playground.report import site
    from playground.report.cli import main

    root, spec, table = synthetic
    with pytest.raises(ConfigError, match="findings=.*nowhere.yaml.*no such file"):
        site.build([root], tmp_path / "bad", tmp_path / "nowhere.yaml")
    assert not (tmp_path / "bad").exists()  # refused before anything is written
    out = tmp_path / "site"
    main(["site", str(root), f"out={out}", f"findings={spec}"])
    page = (out / "findings.html").read_text()
    rows = re.findall(r"<tr><td>(.*?)</tr>", page, re.S)
    assert len(rows) == len(table) == 6
    for (finding, row), text in zip(table.iterrows(), rows):
        texts = fnd.row_texts(row)
        assert f"({finding})" in text and f">{row['verdict']}</span>" in text
        assert texts["margin"] in text and texts["values_a"] in text
    good = rows[list(table.index).index("F-good")]
    assert "90.0, 85.0, 88.0 %" in good and "87.7 % (n = 3)" in good
    assert "to run: one seed 1; one seed 2" in rows[list(table.index).index("F-one")]
    links = set(re.findall(r'(?:href|src)="([^"]+)"', page))
    assert {"syn_cpu__p.html", "img/findings_forest.svg", "index.html"} <= links
    assert all((out / link).is_file() for link in links)
    index = (out / "index.html").read_text()
    assert '<a href="findings.html">Findings</a>: 6 finding cells: 1 holds' in index


def test_the_curves_draw_each_seed_and_the_mean_at_the_steps_all_seeds_share(synthetic):
    """F-good's panel: per side a thin line per seed (seed 0 to step 300) and a thick line of
    the mean at steps 100 and 200 only, in percent; a table of other findings is refused."""
    root, spec, table = synthetic
    frame, _ = check_integrity(load_runs(root))
    findings, table = fnd.load_findings(spec), table.reset_index()
    fig = fnd.curves(findings, frame, table, "1")
    ax = fig.axes[0]
    assert ax.get_title().startswith("F-good")
    assert list(ax.get_xticks()) == [100, 200, 300]  # few evaluations: ticks at their steps
    thick = {line.get_label(): line for line in ax.get_lines() if line.get_linewidth() == 2}
    assert list(thick["good"].get_xdata()) == [100, 200]
    assert list(thick["good"].get_ydata()) == pytest.approx([100 * 0.8767 / 2, 100 * 0.8767],
                                                            abs=0.01)
    thin = [line for line in ax.get_lines() if line.get_linewidth() == 0.7]
    assert sorted(len(line.get_xdata()) for line in thin) == [2, 2, 2, 2, 3, 3]
    title = fig.get_suptitle()
    assert title.startswith("Result 1 over training") and "without runs" not in title
    with pytest.raises(ValueError, match="not evaluate's table"):
        fnd.curves(findings[:2], frame, table, "1")


def test_the_forest_draws_each_cell_by_its_verdict(synthetic):
    """One column per cell, a line per finding: an interval and a point at the margin coloured
    by verdict (in points), "x" at chance, the word where untested; another table is refused."""
    _, spec, table = synthetic
    findings, table = fnd.load_findings(spec), table.reset_index()
    fig = fnd.forest(findings, table)
    (ax,) = [a for a in fig.axes if a.get_title()]
    assert ax.get_title() == f"p {table.loc[0, 'row']}"
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == "1: good beats base" and len(labels) == len(table)
    good = table.set_index("id").loc["F-good"]
    points = {round(line.get_ydata()[0]): line for line in ax.get_lines()
              if line.get_marker() == "o"}
    assert points[0].get_xdata()[0] == pytest.approx(100 * good["margin"])
    assert points[0].get_color() == fnd.VERDICT_COLOURS["holds"]
    interval = [line for line in ax.get_lines() if line.get_marker() in ("None", "")
                and list(line.get_ydata()) == [0, 0]]
    assert list(interval[0].get_xdata()) == pytest.approx([100 * good["low"], 100 * good["high"]])
    assert points[1].get_color() == fnd.VERDICT_COLOURS["reversed"]
    chance = [line for line in ax.get_lines() if line.get_marker() == "x"]
    assert [round(line.get_ydata()[0]) for line in chance] == [4]  # F-low2
    assert [t.get_text() for t in ax.texts] == ["untested"]  # F-missing
    fig.canvas.draw()  # the title above the column titles, the legend below the x labels
    assert ax.title.get_window_extent().y1 <= fig._suptitle.get_window_extent().y0
    legend = fig.legends[0].get_window_extent()
    assert legend.y1 <= ax.xaxis.label.get_window_extent().y0 and legend.y0 >= 0
    with pytest.raises(ValueError, match="not evaluate's table"):
        fnd.forest(findings[:2], table)


def test_several_runs_of_one_seed_are_refused(synthetic, tmp_path):
    root, spec, _ = synthetic
    frame, _ = check_integrity(load_runs(root))
    twice = frame.copy()
    twice["config.train.lr"] = 1.0
    both = pd.concat([twice, frame.assign(**{"config.train.lr": 2.0})], ignore_index=True)
    with pytest.raises(ConfigError, match="share a seed"):
        fnd.evaluate(fnd.load_findings(spec), both)


def test_bad_findings_files_are_refused_by_name(tmp_path):
    path = tmp_path / "f.yaml"
    good = {"id": "x", "result": "1", "claim": "c", "sweep": "fig7", "scale": "mini",
            "a": "llama_rope",
            "b": "llama_rope_canon", "seeds": [0], "cells": [{"panel": "mano", "size": "8L512D"}]}
    for change, message in (({"expect": "worse"}, "expect"), ({"seeds": "0,1"}, "seeds"),
                            ({"cells": [{"panel": "mano"}]}, "cells"), ({"colour": 1}, "colour"),
                            ({"expect": "same"}, "tolerance")):
        path.write_text(yaml.safe_dump({"findings": [{**good, **change}]}))
        with pytest.raises(ConfigError, match=message):
            fnd.load_findings(path)
    path.write_text(yaml.safe_dump({"findings": [good, good]}))
    with pytest.raises(ConfigError, match="twice"):
        fnd.load_findings(path)


# -- the shipped files -----------------------------------------------------------------------


def test_the_shipped_findings_load_and_name_real_variants_and_panels():
    findings = fnd.load_findings()
    assert {f.result for f in findings} >= {"2", "3a", "3b", "3c", "4", "5", "6", "7",
                                            "8", "9", "10"}
    for finding in findings:
        for side in finding.sides:
            sweep = yaml.safe_load((ROOT / "sweeps" / f"{side.sweep}.yaml").read_text())
            assert side.variant in sweep["variants"], (finding.id, side)
            panels = {row["panel"] for row in sweep["scales"][side.scale]["rows"]}
            assert {c.panel for c in finding.cells} <= panels, finding.id


def test_results_pick_findings_in_the_order_asked():
    assert [f.result for f in fnd.load_findings(results="7,2")][:3] == ["7", "7", "2"]


def test_results_pick_a_finding_by_its_id_beside_whole_results():
    picked = [f.id for f in fnd.load_findings(results="R10-mamba2,2,R8-canon")]
    assert picked == ["R10-mamba2", "R2", "R8-canon"]
    with pytest.raises(ConfigError, match=r"results=\['R99'\].*R10-mamba2"):
        fnd.load_findings(results="2,R99")


def test_the_probe_rows_are_fig7s_mini_rows():
    fig7 = yaml.safe_load((ROOT / "sweeps" / "fig7.yaml").read_text())["scales"]["mini"]
    probe = yaml.safe_load((ROOT / "sweeps" / "probe.yaml").read_text())["scales"]["mini"]
    assert probe["overrides"] == fig7["overrides"]
    for row in probe["rows"]:
        assert row in fig7["rows"], row


@pytest.mark.slow
def test_needed_runs_are_the_unfinished_runs_of_each_side(tmp_path):
    """A finding over fig7's mini Mano cell: runs whose summary is finished under root are not
    needed again; the rest are, each once, with the fig7 recipe."""
    spec = tmp_path / "f.yaml"
    spec.write_text(yaml.safe_dump({"findings": [
        {"id": "x", "result": "2", "claim": "c", "sweep": "fig7", "scale": "mini",
         "a": "llama_rope",
         "b": "llama_rope_canon", "seeds": [0, 1], "cells": [{"panel": "mano", "size": "8L512D",
                                                              "where": {"task.L": 4}}]},
        {"id": "y", "result": "2", "claim": "c", "sweep": "fig7", "scale": "mini",
         "a": "llama_rope",
         "b": "llama_rope_canon", "seeds": [0], "cells": [{"panel": "mano", "size": "8L512D",
                                                           "where": {"task.L": 4}}]}]}))
    runs = fnd.needed_runs(fnd.load_findings(spec), str(tmp_path / "root"))
    assert len(runs) == 4  # 2 variants × 2 seeds, finding y's runs counted once
    groups = fnd.needed_runs_by_cell(fnd.load_findings(spec), str(tmp_path / "root"))
    assert [(label, len(g)) for label, g in groups] == [("x at mano 8L512D L=4", 4),
                                                        ("y at mano 8L512D L=4", 2)]
    assert all(r in runs for r in groups[1][1])  # y's runs are x's
    assert all("task.L=4" in r and "sweep=fig7_mini" in r for r in runs)
    first = compose(runs[0])
    Path(first.out_dir).mkdir(parents=True)
    (Path(first.out_dir) / "summary.json").write_text(json.dumps({"status": "finished"}))
    assert len(fnd.needed_runs(fnd.load_findings(spec), str(tmp_path / "root"))) == 3


@pytest.mark.slow
def test_the_readme_findings_tables_are_the_reports_output():
    """results/mini/findings/ holds what `playground-report findings results/mini/runs` writes,
    and README.md and results/mini/README.md show its summary (between the findings markers),
    unedited."""
    frame, _ = check_integrity(load_runs(ROOT / "results" / "mini" / "runs"))
    findings = fnd.load_findings()
    table = fnd.evaluate(findings, frame)
    out = ROOT / "results" / "mini" / "findings"
    assert (out / "findings.md").read_text() == fnd.markdown(table, findings)
    summary = fnd.summary(table)
    assert (out / "summary.md").read_text() == summary
    for readme in (ROOT / "README.md", ROOT / "results" / "mini" / "README.md"):
        text = readme.read_text()
        block = re.search(r"<!-- findings:begin -->\n(.*?)<!-- findings:end -->", text, re.S)
        assert block, f"{readme} has no findings block"
        assert block.group(1) == summary, f"{readme}: regenerate with playground-report findings"


@pytest.mark.slow
def test_the_findings_dry_run_lists_the_runs_and_their_cost(tmp_path, capsys):
    """``playground-sweep findings … dry_run=true``: every needed run marked todo, then the
    estimated GPU-hours per panel, as a sweep's dry run prints them."""
    from playground.sweep.cli import main

    spec = tmp_path / "f.yaml"
    spec.write_text(yaml.safe_dump({"findings": [
        {"id": "x", "result": "2", "claim": "c", "sweep": "fig7", "scale": "mini",
         "a": "llama_rope", "b": "llama_rope_canon", "seeds": [0],
         "cells": [{"panel": "mano", "size": "8L512D", "where": {"task.L": 4}}]}]}))
    main([str(spec), f"root={tmp_path / 'root'}", "launcher=local", "dry_run=true", "per_gpu=4"])
    out = capsys.readouterr().out
    assert out.count("  todo playground-train ") == 2
    assert "2 of 2 runs to do" in out
    assert "estimated GPU-hours per panel, to do of all (4 runs sharing a GPU):" in out
    assert "  mano: " in out
    main([str(spec), f"root={tmp_path / 'root'}", "dry_run=true"])  # any launcher lists them
    assert "2 of 2 runs to do" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main([str(spec), f"root={tmp_path / 'root'}"])  # but only the local one runs them
    assert "launcher=basic is invalid for findings" in capsys.readouterr().err


def test_a_result_figure_draws_the_cells_with_runs_in_rows_of_four():
    def row(i, a, b):
        return {"id": f"R{i}", "result": "4", "metric": "acc", "values_a": a, "values_b": b,
                "chance": 0.05, "a": "base", "b": f"variant_{i}", "panel": "mano", "row": "L=4",
                "size": "8L512D", "verdict": "holds" if a else "untested", "seeds_a": 3,
                "seeds_b": 3}
    table = pd.DataFrame([row(i, "0.1;0.2;0.1", "0.9;0.8;0.9") for i in range(6)]
                         + [row(6, "", ""), row(7, "nan", "")]
                         + [{**row(8, "0.5", "0.6"), "result": "5"}])
    fig = fnd.figure(table, "4")
    shown = [ax for ax in fig.axes if ax.axison]
    assert len(fig.axes) == 8 and len(shown) == 6  # 2 rows of 4, the last 2 blank
    assert [ax.get_title().split(":")[0] for ax in shown] == [f"R{i}" for i in range(6)]
    assert "2 cells without runs not drawn" in fig._suptitle.get_text()
    assert all(ax.get_ylim() == (0, 100) for ax in shown)  # accuracies share one axis
    assert not any(c.get_clip_on() for c in shown[0].collections)  # a seed at 100 % drawn whole
    label = next(t for t in shown[0].texts if t.get_text() == "chance")
    assert 0.3 < label.get_position()[0] < 0.7  # between the bars: never over a bar at chance
    tall = fnd.figure(pd.DataFrame([row(i, "0.1;0.2", "0.9;0.8") for i in range(18)]), "4")
    tall.canvas.draw()  # five rows: the title stays above the first row's panel titles
    assert max(ax.title.get_window_extent().y1 for ax in tall.axes) <= (
        tall._suptitle.get_window_extent().y0)
    assert fnd.figure(table, "5").axes[0].get_title().startswith("R8")
    assert [t.get_text() for t in shown[0].get_xticklabels()] == ["base", "variant_0"]
    named = fnd.figure(table.assign(label_a="Llama(NoPE)", label_b="Llama(NoPE) + Canon-A(res)"),
                       "4")
    assert [t.get_text() for t in named.axes[0].get_xticklabels()] == [
        "Llama(NoPE)", "Llama(NoPE) +\nCanon-A(res)"]
    assert "family-wise" not in fig._suptitle.get_text()  # a table without verdict_fw
    fw = fnd.figure(table.assign(verdict_fw=["inconclusive"] + ["holds"] * 5 + [""] * 3), "4")
    assert fw.axes[0].get_title().split("\n")[1].startswith("holds° ")
    assert fw.axes[1].get_title().split("\n")[1].startswith("holds ")
    assert "; °\u00a0inconclusive family-wise" in fw._suptitle.get_text()
    empty = fnd.figure(table[table["id"] == "R6"], "4")
    assert [t.get_text() for t in empty.axes[0].texts] == ["no runs yet"]


def test_the_paper_cell_findings_are_the_reports_output():
    """sweeps/findings_paper.yaml finds the committed paper-recipe record by its labels
    (sweep=lano_paper from the experiment, panel=lano, variant=llama_rope_canon), and
    results/paper/findings/ and results/paper/README.md hold what the report writes from it."""
    frame, refused = check_integrity(load_runs(ROOT / "results" / "paper"))
    assert not refused
    findings = fnd.load_findings(fnd.SPEC.with_name("findings_paper.yaml"))
    table = fnd.evaluate(findings, frame)
    row = table.set_index("id").loc["P2-cfg3f"]
    assert row["seeds_b"] == 1 and row["mean_b"] == pytest.approx(0.9765)
    assert row["verdict"] == "untested" if row["seeds_a"] == 0 else row["seeds_a"] == 1
    out = ROOT / "results" / "paper" / "findings"
    assert (out / "findings.md").read_text() == fnd.markdown(table, findings)
    block = re.search(r"<!-- findings:begin -->\n(.*?)<!-- findings:end -->",
                      (ROOT / "results" / "paper" / "README.md").read_text(), re.S)
    assert block and block.group(1) == fnd.summary(table), "regenerate with playground-report"
    # one evaluation a run (at the end): nothing to draw over training
    assert fnd.curves(findings, frame, table, "2") is None
