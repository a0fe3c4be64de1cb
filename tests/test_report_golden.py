"""The report's outputs are byte-identical to tests/fixtures/report_golden: every CSV and
markdown table of every report command, for runs of every backbone, Canon variant and task family
the report tells apart. The golden files are the output, on the same run directories, of the
report's code before its restructuring into packages and structured run records, with two
deliberate differences: ALiBi's display label is ``Llama(ALiBi)`` (there ``llama_alibi``), and
with ``agg=mean`` the second metric (Depo's accuracy at K/2) is the seed mean like the first
(there the best seed's: one cell of ``heatmap_mean`` and ``bars``). The fixture runs have no run
records, so this also checks that such runs are read through their config.yaml."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from playground.report.cli import main

FIXTURES = Path(__file__).parent / "fixtures"
GOLDEN = FIXTURES / "report_golden"
CALLS = {  # golden folder: the report command that made it
    "heatmap_best": ["heatmap", "mixed_cpu"],
    "heatmap_mean": ["heatmap", "mixed_cpu", "agg=mean"],
    "heatmap_kl": ["heatmap", "mixed_cpu", "agg=mean", "metric=kl"],
    "heatmap_fig7": ["heatmap", "fig7_cpu", "vs_paper=7"],
    "depth_mixed": ["depth", "mixed_cpu"],
    "depth_fig7": ["depth", "fig7_cpu"],
    "bars": ["bars", "mixed_cpu"],
    "table": ["table", "mixed_cpu"],
    "capo": ["capo", "mixed_cpu"],
}


def test_golden_covers_every_folder():
    assert {p.name for p in GOLDEN.iterdir() if p.is_dir()} == set(CALLS)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CALLS))
def test_report_output_is_byte_identical(name, tmp_path):
    command, results, *options = CALLS[name]
    main([command, str(FIXTURES / "results" / results), *options, f"out={tmp_path}",
          "figures=false"])
    expected = sorted(p.name for p in (GOLDEN / name).iterdir())
    written = sorted(p.name for p in tmp_path.iterdir() if p.suffix in (".csv", ".md"))
    assert written == expected
    for file in expected:
        assert (tmp_path / file).read_bytes() == (GOLDEN / name / file).read_bytes(), file


def test_bars_of_a_chosen_metric_are_the_runs_own_values(tmp_path):
    """``bars metric=kl``: one bar per run that measured KL (tasks without it drop out), its value
    the run's own final KL read here from its summary, and the figure in KL, not in %."""
    results = FIXTURES / "results" / "mixed_cpu"
    kl = {d.name: json.loads((d / "summary.json").read_text())["metrics"]["kl"]
          for d in results.iterdir()
          if "kl" in json.loads((d / "summary.json").read_text()).get("metrics", {})}
    assert len(kl) >= 2
    main(["bars", str(results), "metric=kl", f"out={tmp_path}"])
    bars = pd.read_csv(tmp_path / "bars_kl.csv")
    assert dict(zip(bars["best_run"], bars["value"])) == pytest.approx(kl)
    assert (tmp_path / "bars_lano_cfg3f_kl.png").stat().st_size > 0


@pytest.mark.slow
def test_size_keeps_one_model_size_and_names_the_sizes_there(tmp_path, capsys):
    results = FIXTURES / "results" / "mixed_cpu"
    main(["bars", str(results), "size=2L128D", f"out={tmp_path}", "figures=false"])
    bars = pd.read_csv(tmp_path / "bars.csv")
    assert len(bars) >= 1 and set(bars["size"]) == {"2L128D"}
    with pytest.raises(SystemExit):
        main(["bars", str(results), "size=9L9D", f"out={tmp_path}"])
    err = capsys.readouterr().err
    assert "size=9L9D is invalid" in err and "2L64D" in err


@pytest.mark.parametrize("command", ["heatmap", "gaps"])
def test_a_metric_the_chosen_panel_does_not_record_is_refused(command, tmp_path, capsys):
    """``metric=kl`` for Mano's panel of the committed fig7 runs: refused, naming the panel and
    the metrics its runs record, though the Lano runs beside them record KL; nothing written."""
    results = Path(__file__).parent.parent / "results" / "mini" / "runs" / "fig7_mini"
    with pytest.raises(SystemExit):
        main([command, str(results), "panel=mano", "metric=kl", f"out={tmp_path}/o"])
    err = capsys.readouterr().err
    assert "metric='kl' is invalid: no finished run of panel=mano records it" in err, err
    assert "acc_l4" in err and not (tmp_path / "o").exists()
