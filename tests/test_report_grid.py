"""``playground-report heatmap grid=SWEEP:SCALE``: the whole grid of a sweep, its cells without a
run shown as "not run" (a 3×4 panel stays 3×4 while its runs come in), and the cells that have
runs exactly as without it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from playground.errors import ConfigError
from playground.report import cells as aggregate
from playground.report import plots
from playground.report.cli import main
from playground.report.table import NOT_RUN, load_runs, planned_runs

RESULTS = Path(__file__).parent / "fixtures" / "results" / "fig7_cpu"  # RoPE ± Canon-ABCD, 4 sizes
# fig7's cpu rows of Depo1 with a third variant that has no run; rows without a panel label, as
# the fixture runs were made (their records name the panel from the task: depo_K2)
SWEEP = """
variants:
  llama_rope: {mixer: rope, canon: none}
  llama_rope_canon: {mixer: rope, canon: ABCD}
  llama_nope: {mixer: nope, canon: none}
grid: {size: [2L64D, 2L128D, 4L64D, 4L128D], train.lr: [3.0e-3], seed: [0]}
scales:
  cpu:
    overrides: {train: cpu, train.steps: 30, train.warmup_steps: 3, train.batch_size: 8,
                train.eval_every: 0, train.log_every: 10, task.eval_size: 32}
    rows:
      - {task: depo_tiny, task.K: 2, task.N: 8}
      - {task: depo_tiny, task.K: 2, task.N: 12}
      - {task: depo_tiny, task.K: 2, task.N: 16}
"""


@pytest.fixture(scope="module")
def sweep_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sweeps") / "grid3.yaml"
    path.write_text(SWEEP)
    return path


def test_a_grid_lays_out_every_cell_of_the_sweep_and_leaves_the_run_cells_as_they_were(
        sweep_file, tmp_path):
    main(["heatmap", str(RESULTS), f"out={tmp_path / 'runs'}", "figures=false"])
    main(["heatmap", str(RESULTS), f"grid={sweep_file}:cpu", f"out={tmp_path / 'grid'}",
          "figures=false"])
    alone = pd.read_csv(tmp_path / "runs" / "cells.csv")
    grid = pd.read_csv(tmp_path / "grid" / "cells.csv")
    keys = ["row", "size", "architecture", "canon"]
    assert not grid.duplicated(keys).any()
    # 3 rows × 4 sizes × 3 variants, the runs' 24 cells among them, as they were without the grid
    assert len(grid) == 36 and len(alone) == 24
    ran = grid[grid["status"] != NOT_RUN].reset_index(drop=True)
    # the grid's NaN seeds make that column float
    pd.testing.assert_frame_equal(ran, alone.reset_index(drop=True), check_dtype=False)
    planned = grid[grid["status"] == NOT_RUN]
    assert set(planned["architecture"]) == {"llama_nope"} and len(planned) == 12
    assert (planned["n_runs"] == 0).all() and planned["value"].isna().all()
    assert "not run" in (tmp_path / "grid" / "cells.md").read_text()


@pytest.mark.slow
def test_a_grid_keeps_to_the_row_and_size_asked_for(sweep_file, tmp_path):
    main(["heatmap", str(RESULTS), f"grid={sweep_file}:cpu", "row=N=12", "size=4L64D",
          f"out={tmp_path}", "figures=false"])
    cells = pd.read_csv(tmp_path / "cells.csv")
    assert len(cells) == 3 and set(cells["row"]) == {"N=12"} and set(cells["size"]) == {"4L64D"}
    assert list(cells["status"]).count(NOT_RUN) == 1


def test_a_grids_not_run_cells_are_drawn_as_not_run(sweep_file):
    frame = pd.concat([load_runs(RESULTS), planned_runs(f"{sweep_file}:cpu")], ignore_index=True)
    cells = aggregate.cells(aggregate.annotate(frame), "mean")
    fig = plots.heatmap_figure(cells, "depo", agg="mean")
    not_run = [p for ax in fig.axes for p in ax.patches if p.get_gid() == "not-run"]
    assert len(fig.axes) == 4 and len(not_run) == 12  # three variants and the colour bar


@pytest.mark.parametrize("grid, says", [("fig7", "expected SWEEP:SCALE"),
                                        ("fig7:huge", "scale='huge' is invalid"),
                                        ("nosuch:mini", "no sweep named 'nosuch'")])
def test_a_bad_grid_is_refused_before_anything_is_written(grid, says, tmp_path):
    with pytest.raises(ConfigError, match=says):
        planned_runs(grid)
    with pytest.raises(SystemExit):
        main(["heatmap", str(RESULTS), f"grid={grid}", f"out={tmp_path}", "figures=false"])
    assert not list(tmp_path.iterdir())



@pytest.mark.slow
def test_gaps_lay_out_the_sizes_a_grid_has_without_runs(sweep_file, tmp_path):
    table = aggregate.gaps(aggregate.annotate(load_runs(RESULTS)))
    fig = plots.gaps_figure(table, "depo", "gain", sizes=["12L768D", "16L64D"],
                            params={"16L64D": 2.4e6, "2L64D": 9e9})
    ticks = [t.get_text().split("\n") for t in fig.axes[0].get_xticklabels()]
    assert [t[0] for t in ticks] == ["2L64D", "2L128D", "4L64D", "4L128D", "12L768D", "16L64D"]
    # a size without a gain cell takes its count from params=, a gain cell's own count wins
    assert ticks[4] == ["12L768D"] and ticks[5] == ["16L64D", "2M"]
    assert ticks[0][1] == "110k"  # its runs' 109,632 parameters
    # the grid's planned runs change the axis only, not a gain
    for name, grid in (("runs", []), ("grid", [f"grid={sweep_file}:cpu"])):
        main(["gaps", str(RESULTS), *grid, f"out={tmp_path / name}", "figures=false"])
    assert ((tmp_path / "runs" / "gaps.csv").read_bytes()
            == (tmp_path / "grid" / "gaps.csv").read_bytes())
