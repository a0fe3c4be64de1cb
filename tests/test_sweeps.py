"""Sweeps and reports end to end on CPU: one command runs a 3×4 tiny Depo panel, a killed sweep
finishes only its missing runs, the heatmap CSV is the best over learning rates recomputed from
the summaries, the paper comparison lists every transcribed cell, SLURM is dry-run."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from playground.config import compose
from playground.errors import ConfigError
from playground.report.cells import PAPER_CSV
from playground.report.table import NOT_RUN
from playground.run import rundir as runs
from playground.sweep.spec import find_sweep_file, load_sweep

SWEEP = [sys.executable, "-m", "playground.sweep.cli", "fig7", "scale=cpu", "panels=depo1_K8",
         "variants=llama_rope_canon", "train.steps=6", "train.log_every=3", "task.eval_size=16"]


FIXTURE = Path(__file__).parent / "fixtures" / "results" / "fig7_cpu"  # a finished CPU fig7 panel


def copy_fixture(tmp_path: Path, **cut) -> tuple[Path, list[Path]]:
    """A copy of FIXTURE; with ``cut``, the runs of one cell (2L64D, N=8, Canon-ABCD) get their
    summary's metrics and final loss removed and ``cut`` (status, error) written instead."""
    import shutil

    dst = tmp_path / "res"
    shutil.copytree(FIXTURE, dst)
    victims = [d for d in dst.iterdir()
               if "2L64D" in d.name and "N8_" in d.name and "canon-ABCD" in d.name] if cut else []
    for d in victims:
        s = runs.read_json(d / "summary.json")
        runs.write_json(d / "summary.json",
                        {k: v for k, v in s.items() if k not in ("metrics", "final_loss")} | cut)
    return dst, victims


def summaries(root: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in root.rglob("summary.json")}


def sweep_files() -> list[tuple[Path, list[str]]]:
    """Every sweep file but the findings files (tests/test_findings.py), with its scales."""
    specs = [(path, yaml.safe_load(path.read_text()))
             for path in sorted(Path(find_sweep_file("fig7")).parent.glob("*.yaml"))]
    return [(path, list(spec["scales"])) for path, spec in specs if "findings" not in spec]


def test_every_sweep_file_expands_at_every_scale():
    """Each sweep file expands at each of its scales, and every run's options pass the check
    each run makes of its command line first (``size=mqar/w64``: an option in a sub-folder)."""
    from playground.config import check_group_options

    args = set()
    for path, scales in sweep_files():
        scales = set(scales)
        assert (scales == {"paper", "mini", "cpu"} if path.stem.startswith(("fig", "mqar"))
                else {"mini", "cpu"} <= scales)
        for scale in scales:
            sweep = load_sweep(path, scale)
            assert sweep.runs() and all(r[-2:] == [f"sweep={path.stem}_{scale}",
                                                   f"out_dir=results/{path.stem}_{scale}/"
                                                   "${run_name}"]
                                        for r in sweep.runs())
            args.update(arg for run in sweep.runs() for arg in run)
    check_group_options(sorted(args))


@pytest.mark.slow
def test_a_sweep_composes_each_run_as_composing_it_whole():
    """Each sweep file's runs as a sweep composes them (``config.Composer``: runs that differ
    only in plain values share one composition) are, resolved, what composing each whole gives:
    the first two runs and the last of every file at every scale (most of them share)."""
    from omegaconf import OmegaConf

    from playground.config import Composer

    files, reused = 0, 0
    for path, scales in sweep_files():
        for scale in scales:
            runs, composer = load_sweep(path, scale).runs(), Composer()
            for overrides in [*runs[:2], runs[-1]]:
                assert (OmegaConf.to_container(composer(overrides), resolve=True)
                        == OmegaConf.to_container(compose(overrides), resolve=True)), overrides
            files, reused = files + 1, reused + 3 - len(composer._shared)
    assert files > 20 and reused > 10, (files, reused)


@pytest.mark.slow
def test_every_sweep_files_runs_pass_the_checks_a_launch_makes_of_each_run():
    """Every sweep file's runs at every scale pass the checks a launch makes of each run before
    it starts any (``train.checked_config``: values, the task's longest example against
    ``task.context``): one run for each distinct task and data setting of a file (what the fit of
    examples depends on), with the rest of its first run's overrides."""
    from playground.config import Composer
    from playground.run.train import checked_config

    checked = 0
    for path, scales in sweep_files():
        for scale in scales:
            seen, composer = set(), Composer()
            for run in load_sweep(path, scale).runs():
                key = tuple(o for o in run if o.startswith(("task", "data", "train.length")))
                if key not in seen:
                    seen.add(key)
                    try:
                        checked_config(composer(run))
                    except ConfigError as err:
                        raise AssertionError(f"{path.name} scale={scale}: {' '.join(run)}: "
                                             f"{err}") from None
                    checked += 1
    assert checked > 100, checked


@pytest.mark.slow
def test_cpu_sweep_kill_rerun_and_heatmap(tmp_path):
    proc = subprocess.Popen(SWEEP, cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    root = tmp_path / "results" / "fig7_cpu"
    # the kill comes at the fifth finished run; a loaded machine is slower
    deadline = time.time() + 900
    while (time.time() < deadline
           and sum(s.get("status") == "finished" for s in summaries(root).values()) < 5):
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)  # kill the whole sweep half way
    proc.wait()
    before = {k: v["finished"] for k, v in summaries(root).items() if v.get("status") == "finished"}
    assert 5 <= len(before) < 24
    subprocess.run(SWEEP, cwd=tmp_path, check=True, capture_output=True)
    after = summaries(root)
    assert len(after) == 24 and all(s["status"] == "finished" for s in after.values())
    assert all(after[k]["finished"] == t for k, t in before.items())  # finished runs were skipped

    report = subprocess.run([sys.executable, "-m", "playground.report.cli", "heatmap", str(root),
                             "vs_paper=7"],
                            cwd=tmp_path, capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    out = root / "report"
    cells = pd.read_csv(out / "cells.csv")
    assert len(cells) == 12 and (cells["status"] == "finished").all()
    for cell in cells.itertuples():  # recompute best over learning rates from the summaries
        mine = [s["record"] | s for s in after.values()
                if s["record"]["size"]["label"] == cell.size
                and s["record"]["task"]["row"] == cell.row]
        key = lambda s: (s["metrics"]["acc_at_K"], s["metrics"]["acc_at_K2"])  # noqa: E731
        best = max(map(key, mine))
        assert len(mine) == 2 and (cell.value, cell.value2) == best
        assert cell.lr in {s["lr"] for s in mine if key(s) == best}
    # the runs record the sweep's panel, so the CPU rows sit in fig7's depo1_K8 panel
    assert set(cells["panel"]) == {"depo1_K8"} and all(
        s["record"]["sweep"]["variant"] == "llama_rope_canon" for s in after.values())
    assert ((out / "heatmap_depo1_K8.png").stat().st_size > 10_000
            and (out / "heatmap_depo1_K8.svg").exists())
    assert "| N=8 |" in (out / "cells.md").read_text()
    versus = pd.read_csv(out / "vs_paper_fig7.csv")
    paper = pd.read_csv(PAPER_CSV)
    for panel in ("depo1_K8", "depo2_K16"):  # every transcribed Depo cell of Figure 7 is there
        ref = paper[(paper["figure"] == 7) & (paper["task"] == panel)]
        cells_ref = ref.drop_duplicates(["architecture", "canon", "row_label", "size"])
        assert len(versus[versus["panel"] == panel]) == len(cells_ref) > 0
        assert not (out / f"vs_paper_fig7_{panel}.png").exists()  # no tiny run matches a paper cell
    assert "no run here matches" in report.stdout + report.stderr

    depth = subprocess.run([sys.executable, "-m", "playground.report.cli", "depth", str(root)],
                           cwd=tmp_path, capture_output=True, text=True)
    assert depth.returncode == 0, depth.stderr
    table = pd.read_csv(out / "depth.csv")  # one seed: accuracy at each k of the cell's best-lr run
    assert len(table) == 12 * 2 and set(table["depth"]) == {1, 2}
    for bar in table.itertuples():
        mine = [s for s in after.values() if s["record"]["size"]["label"] == bar.size
                and s["record"]["task"]["row"] == bar.row and s["record"]["lr"] == bar.lr]
        assert len(mine) == 1 and bar.acc == pytest.approx(mine[0]["metrics"][f"acc_k{bar.depth}"])
    assert (out / "depth_depo1_K8_N8_2L64D.png").exists()


def test_failed_runs_are_shown_as_failed(tmp_path):
    """A cell whose only runs failed is 'failed' with the reason, never a number."""
    from playground.report.cells import annotate, cells
    from playground.report.table import load_runs

    dst, _ = copy_fixture(tmp_path, status="diverged", error="Diverged: non-finite loss")
    table = cells(annotate(load_runs(dst)))
    cell = table[(table["size"] == "2L64D") & (table["row"] == "N=8")
                 & (table["canon"] == "abcd_res")].iloc[0]
    assert (cell["status"] == "failed" and "non-finite" in cell["failures"]
            and pd.isna(cell["value"]))


@pytest.mark.slow
def test_heatmap_of_another_metric_and_pending_cells(tmp_path, capsys):
    """``metric=``: cells hold that metric, the lowest value wins for a loss (the highest for an
    accuracy); a cell whose runs are all still running is 'pending', not 'failed'."""
    from playground.report.cli import main

    dst, victims = copy_fixture(tmp_path, status="running")  # killed mid-run: no metrics yet
    done = {d.name: runs.read_json(d / "summary.json") for d in dst.iterdir() if d not in victims}
    for metric, pick in (("final_loss", min), ("acc_k1", max)):
        main(["heatmap", str(dst), f"metric={metric}", f"out={tmp_path / 'out'}"])
        cells = pd.read_csv(tmp_path / "out" / f"cells_{metric}.csv")
        assert len(cells) == 24 and (tmp_path / "out" / f"heatmap_depo_K2_{metric}.png").exists()
        for cell in cells.itertuples():
            mine = [s for s in done.values()
                    if s["size"] == cell.size and f"N={s['difficulty']['N']}" == cell.row
                    and (s["canon"] == "ABCD") == (cell.canon == "abcd_res")]
            if not mine:
                assert cell.status == "pending" and cell.n_pending == 2 and cell.n_failed == 0
                continue
            values = [s["final_loss"] if metric == "final_loss" else s["metrics"][metric]
                      for s in mine]
            assert cell.status == "finished" and cell.value == pytest.approx(pick(values))
    assert "pending" in (tmp_path / "out" / "cells_final_loss.md").read_text()
    assert "1 cell(s) pending" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        main(["heatmap", str(dst), "metric=no_such_metric", f"out={tmp_path / 'out'}"])
    assert exit_.value.code == 2 and "metric='no_such_metric' is invalid" in capsys.readouterr().err


@pytest.mark.slow
def test_report_panel_filter_and_per_depth_curves(tmp_path, capsys):
    """panel= keeps one panel of a folder that holds several (results/mini/runs/fig7_mini) and
    names the panels there when it matches none; curves plot each task's per-depth accuracies."""
    from playground.report import plots
    from playground.report.cli import main

    kept = Path(__file__).resolve().parent.parent / "results" / "mini" / "runs" / "fig7_mini"
    main(["heatmap", str(kept), "panel=mano", "figures=false", f"out={tmp_path}"])
    assert set(pd.read_csv(tmp_path / "cells.csv")["panel"]) == {"mano"}
    with pytest.raises(SystemExit) as exit_:
        main(["table", str(kept), "panel=mano_L9", f"out={tmp_path}"])
    assert exit_.value.code == 2 and "panel=mano_L9 is invalid" in capsys.readouterr().err
    mano = pd.DataFrame([{"step": 1, "acc": 0.5, "acc_l2": 0.2, "acc_l1": 1.0, "acc_all_l": 0.6}])
    brevo = mano.rename(columns={"acc_l1": "acc_depth1", "acc_l2": "acc_depth2"})
    fig = plots.curves_figure({"mano": mano, "brevo": brevo})
    assert ([[line.get_label() for line in ax.get_lines()] for ax in fig.axes[:2]]
            == [["l=1", "l=2"], ["depth 1", "depth 2"]])


@pytest.mark.slow
def test_report_figures_are_byte_identical(tmp_path):
    from playground.report.cli import main

    for out in ("a", "b"):
        main(["heatmap", str(FIXTURE), "metric=final_loss", f"out={tmp_path / out}"])
    for name in ("heatmap_depo_K2_final_loss.svg", "heatmap_depo_K2_final_loss.png",
                 "cells_final_loss.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


@pytest.mark.slow
def test_report_refuses_tampered_runs(tmp_path, capsys):
    from playground.report.cli import main

    dst, _ = copy_fixture(tmp_path)
    victim = next(dst.iterdir())
    cfg = (victim / "config.yaml").read_text()
    # config no longer matches
    (victim / "config.yaml").write_text(cfg.replace("lr: 0.", "lr: 0.0"))
    main(["table", str(dst)])
    assert f"refused: {victim}" in capsys.readouterr().err


@pytest.mark.slow
def test_slurm_launcher_dry_run(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    out = subprocess.run([*SWEEP[:4], "scale=cpu", "panels=depo1_K8", "variants=llama_rope",
                          "launcher=slurm", "dry_run=true"], cwd=tmp_path, capture_output=True,
                         text=True, check=True).stdout
    assert ("submitit_launcher.SlurmLauncher" in out and "gpus_per_node: 1" in out
            and "max_num_timeout: 10" in out)
    assert not (tmp_path / "results").exists()  # nothing launched


def test_extra_argument_replaces_a_grid_axis():
    path = find_sweep_file("mqar")
    full = load_sweep(path, "mini").runs()
    sweep = load_sweep(path, "mini", extra=["seed=7", "train.lr=1e-3,2e-3", "train.steps=3"])
    runs = sweep.runs()
    assert len(runs) == len(full) // 2  # seeds 0,1 -> 7; learning rates 1e-3,3e-3 -> 1e-3,2e-3
    assert all(r.count("seed=7") == 1
               and not any(x.startswith("seed=") and x != "seed=7" for x in r) for r in runs)
    assert ({x for r in runs for x in r if x.startswith("train.lr=")}
            == {"train.lr=1e-3", "train.lr=2e-3"})
    assert sweep.extra == ["train.steps=3"] and all(r.index("train.steps=3") > r.index("seed=7")
                                                    for r in runs)


def test_an_axis_given_by_size_takes_each_sizes_values(tmp_path):
    """A grid axis given as a mapping from size to values (fig7's mini rates: one at 512D, two at
    768D) crosses each size with its own values: in the runs, in the Hydra multiruns (one per
    size, their indices those of ``runs()``) and under ``size=``; ``train.lr=`` on the command
    line replaces it for every size; a size it has no value for is refused, naming it."""
    from playground.sweep.launch import multirun_commands

    sweep = load_sweep(find_sweep_file("fig7"), "mini", "mano", only_variants="llama_rope")
    runs = sweep.runs()
    point = [(next(x for x in r if x.startswith("size=")), next(
        x for x in reversed(r) if x.startswith("train.lr="))) for r in runs]
    assert len(runs) == 3 * 6 and len(set(point)) == 6
    assert sorted(set(point)) == sorted([("size=8L512D", "train.lr=0.001"),
                                         ("size=12L512D", "train.lr=0.001"),
                                         *((f"size={s}", f"train.lr={lr}") for s in
                                           ("8L768D", "12L768D") for lr in ("0.0005", "0.001"))])
    commands = multirun_commands(sweep, "basic")
    assert len(commands) == 3 * 4 and sorted(i for _, _, ix in commands for i in ix) == list(
        range(len(runs)))
    for label, command, indices in commands:
        size = label.rsplit("_", 1)[-1]
        assert f"size={size}" in command and all(f"size={size}" in runs[i] for i in indices)
        rates = next(x for x in command if x.startswith("train.lr=")).split("=")[1].split(",")
        assert len(rates) == len(indices) == (2 if "768D" in size else 1)
    one = load_sweep(find_sweep_file("fig7"), "mini", "mano", ["size=8L768D"], "llama_rope")
    assert len(one.runs()) == 3 * 2
    fixed = load_sweep(find_sweep_file("fig7"), "mini", "mano", ["train.lr=3e-4"], "llama_rope")
    assert len(fixed.runs()) == 3 * 4 and all("train.lr=3e-4" in r for r in fixed.runs())
    with pytest.raises(ConfigError, match=r"train.lr has no value for size\(s\) \['2L64D'\]"):
        load_sweep(find_sweep_file("fig7"), "mini", "mano", ["size=2L64D"])
    own = tmp_path / "mine.yaml"
    own.write_text("name: mine\nscales: {cpu: {grid: {train.lr: {2L64D: 0.01}}, "
                   "rows: [{task: depo_tiny}]}}\n")
    with pytest.raises(ConfigError, match="no size axis"):
        load_sweep(own, "cpu")


def test_extra_argument_wins_over_a_rows_recipe_and_may_not_name_a_variants_key():
    """A row's recipe sets task.K=4; task.K=3 on the command line must reach every run (Hydra takes
    the last value, so it goes after the rows), never be silently outvoted. canon= belongs to the
    variants: refused, naming it."""
    path = find_sweep_file("fig7")
    runs = load_sweep(path, "mini", "depo2_K4", extra=["task.K=3", "train.steps=7"]).runs()
    for run in runs:
        assert [x for x in run if x.startswith("task.K=")][-1] == "task.K=3"
        assert [x for x in run if x.startswith("train.steps=")][-1] == "train.steps=7"
    cfg = compose(runs[0][:-2])  # without sweep= and out_dir=
    assert cfg.task.K == 3 and cfg.train.steps == 7
    for bad in ("canon=none", "mixer=nope", "variant=x", "out_dir=/tmp/x"):
        with pytest.raises(ConfigError, match=bad.partition("=")[0]):
            load_sweep(path, "mini", extra=[bad])


@pytest.mark.slow
def test_root_puts_the_runs_and_skips_the_finished_ones_there(tmp_path):
    """root=DIR: every run's out_dir is DIR/<name>_<scale>/<run>; a finished run there (a record
    kept in the repository, without checkpoints) is skipped, not trained again."""
    sweep = dataclasses.replace(load_sweep(find_sweep_file("fig7"), "cpu", "depo1_K8",
                                           ["size=2L64D", "train.lr=3e-3"],
                                           "llama_rope"), root=str(tmp_path / "keep"))
    assert all(r[-1] == f"out_dir={tmp_path}/keep/fig7_cpu/${{run_name}}" for r in sweep.runs())
    cmd = [*SWEEP[:4], "scale=cpu", "panels=depo1_K8", "variants=llama_rope", "size=2L64D",
           "train.lr=3e-3", "train.steps=3", "root=keep", "launcher=local"]
    subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, check=True)
    summaries = sorted((tmp_path / "keep" / "fig7_cpu").glob("*/summary.json"))
    assert len(summaries) == 3 and not (tmp_path / "results").exists()
    for path in summaries:  # keep only the records, as results/mini/runs does
        shutil.rmtree(path.parent / "checkpoints")
    before = [p.read_text() for p in summaries]
    again = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, check=True)
    assert [p.read_text() for p in summaries] == before
    assert "3 of 3 run(s) finished already" in again.stdout  # none started: the launch skips them
    assert "launching" not in again.stdout and not any((p.parent / "checkpoints").exists()
                                                       for p in summaries)
    (summaries[0].parent / "summary.json").unlink()  # as if that run had been interrupted
    listed = subprocess.run([*cmd, "dry_run=true"], cwd=tmp_path, capture_output=True, text=True,
                            check=True).stdout
    assert "1 of 3 runs to do (2 finished)" in listed
    assert [line[:7] for line in listed.splitlines()
            if "playground-train" in line].count("  done ") == 2


@pytest.mark.slow
def test_local_launcher_shares_a_device_and_stops_runs_resumably(tmp_path):
    """per_gpu=2 runs both runs at once; SIGTERM to the sweep alone reaches every run, which
    checkpoints as preempted (resumable)."""
    cmd = [sys.executable, "-m", "playground.sweep.cli", "nope", "scale=cpu", "launcher=local",
           "per_gpu=2", "train.log_every=1", "train.ckpt_every=100000"]
    proc = subprocess.Popen([*cmd, "train.steps=100000"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    root = tmp_path / "results" / "nope_cpu"
    deadline = time.time() + 120
    while time.time() < deadline and sum(
            p.exists() and p.stat().st_size > 0 for p in root.glob("*/metrics.jsonl")) < 2:
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "2 run(s) stopped resumably" in out, out
    states = summaries(root)
    assert len(states) == 2 and all(s["status"] == "preempted" for s in states.values())
    assert all(list((root / name / "checkpoints").glob("*")) for name in states)


@pytest.mark.slow
def test_local_launcher_starts_the_costliest_runs_first():
    """fig7's Lano panel: the 12L768D runs at context 1536 first, the 8L512D cfg3f runs last; runs
    of equal cost keep the sweep's order."""
    from playground.sweep.launch import longest_first

    runs = load_sweep(find_sweep_file("fig7"), "mini", "lano", ["train.lr=5e-4", "seed=0,1"],
                     "llama_rope,llama_rope_canon").runs()
    order = longest_first(runs)
    assert sorted(order) == list(range(len(runs))) == list(range(48))
    first, last = " ".join(runs[order[0]]), " ".join(runs[order[-1]])
    assert "size=12L768D" in first and "task=cfg3f" not in first
    assert "size=8L512D" in last and "task=cfg3f" in last
    ties = [i for i in order if runs[i][:-3] == runs[order[0]][:-3]]  # same run but for lr, seed
    assert ties == sorted(ties)


def test_a_launch_takes_a_cells_variants_together():
    """fig7's Mano 8L768D column at one rate: its three cells (L = 3, 4, 5) are of one size, so
    they keep the sweep's order, and each cell's five variants come together, the Canon variants
    (costlier) first: a launch cut after the first runs leaves every variant of L = 3 and its twin
    rather than the Canon variants of all three rows."""
    from playground.sweep.launch import cell_of, longest_first

    runs = load_sweep(find_sweep_file("fig7"), "mini", "mano", ["size=8L768D", "train.lr=5e-4"],
                      None).runs()
    configs = [compose(r) for r in runs]
    order = longest_first(runs, configs)
    assert sorted(order) == list(range(15))
    rows = [configs[i].task.L for i in order]
    assert rows == [3] * 5 + [4] * 5 + [5] * 5, rows
    canon = [configs[i].model.canon.positions != "" for i in order]
    assert canon == ([True] * 3 + [False] * 2) * 3, canon
    assert len({cell_of(configs[i]) for i in order[:5]}) == 1
    assert cell_of(configs[order[0]]) != cell_of(configs[order[5]])


def test_the_costliest_first_knows_a_slow_mixer():
    """Two runs of one shape: the GLA run's estimate is longer than the Llama run's, so it starts
    first although their layers, widths and tokens are the same."""
    from playground.sweep.cost import estimate
    from playground.sweep.launch import longest_first

    runs = [["task=mano", "size=8L512D", "train.compile=true"],
            ["task=mano", "size=8L512D", "train.compile=true", "mixer=gla"]]
    configs = [compose(r) for r in runs]
    assert estimate(configs[1], 1).gpu_s > estimate(configs[0], 1).gpu_s
    assert longest_first(runs, configs) == [1, 0]


def test_local_launcher_uses_the_devices_it_was_given(monkeypatch):
    """A sweep started with CUDA_VISIBLE_DEVICES=2,3 sends its runs to GPUs 2 and 3 (several
    sweeps can share one host side by side), and refuses more GPUs than it may see."""
    from playground.sweep.launch import _device_ids

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert _device_ids(0) == [""] and _device_ids(3) == ["0", "1", "2"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2, 3")
    assert _device_ids(2) == ["2", "3"] and _device_ids(1) == ["2"]
    with pytest.raises(ConfigError, match="gpus=3"):
        _device_ids(3)


@pytest.mark.parametrize("option", ["gpus=2", "per_gpu=4"])
@pytest.mark.parametrize("launcher", ["basic", "slurm"])
def test_gpu_placement_is_refused_for_hydras_launchers(option, launcher, capsys, tmp_path):
    """gpus= and per_gpu= place runs on the local launcher's GPUs: with Hydra's launchers (their
    resources are hydra.launcher.*) they are refused, not ignored, a dry run too."""
    from playground.sweep.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["mqar", "scale=cpu", option, f"launcher={launcher}", "dry_run=true",
              f"root={tmp_path}"])
    err = capsys.readouterr().err
    assert stop.value.code != 0 and f"{option} is invalid with launcher={launcher}" in err, err


@pytest.mark.parametrize("name",
                         ["mqar", "mamba2_conv", "nope", "gla_canon", "rope_depth", "lano_canon"])
def test_committed_mini_results_agree_with_their_runs(name):
    """results/mini: every bar is the seed mean at the best learning rate of the committed runs,
    and the sweep.yaml beside them is the sweep file as it stands."""
    folder = Path(__file__).resolve().parent.parent / "results" / "mini" / name
    bars, runs_ = pd.read_csv(folder / "bars.csv"), pd.read_csv(folder / "runs.csv")
    assert (runs_["status"] == "finished").all()
    per_lr = (runs_.groupby(["row", "size", "architecture", "canon", "lr"])["value"]
              .agg(["mean", "std", "count"]))
    best = per_lr.loc[per_lr.groupby(level=[0, 1, 2, 3])["mean"].idxmax()].droplevel("lr")
    assert len(best) == len(bars)
    for bar in bars.itertuples():
        cell = best.loc[(bar.row, bar.size, bar.architecture, bar.canon)]
        assert cell["mean"] == pytest.approx(bar.value) and cell["std"] == pytest.approx(bar.spread)
        assert cell["count"] == bar.seeds == 2
    assert (folder / "sweep.yaml").read_text() == find_sweep_file(name).read_text()
    if (folder / "depth.csv").exists():  # Depo: accuracy per k, seed mean at the cell's best lr
        depth = pd.read_csv(folder / "depth.csv")
        for bar in depth.itertuples():
            cell = best.loc[(bar.row, bar.size, bar.architecture, bar.canon)]
            at = runs_[(runs_["architecture"] == bar.architecture) & (runs_["canon"] == bar.canon)
                       & (runs_["lr"] == bar.lr) & (runs_["row"] == bar.row)
                       & (runs_["size"] == bar.size)]
            assert (bar.seeds == len(at) == 2
                    and bar.acc == pytest.approx(at[f"metrics.acc_k{bar.depth}"].mean()))
            assert at["value"].mean() == pytest.approx(cell["mean"])  # the lr the bars chose
        assert len(depth) == len(best) * runs_.filter(regex=r"^metrics\.acc_k\d+$").shape[1]


def test_committed_mini_heatmap_agrees_with_its_runs():
    """results/mini/fig7_lano_aligned (the Lano panel on aligned windows): all 48 runs finished,
    and every heatmap cell (generation accuracy, and KL where the lowest wins) is the seed mean
    at the best learning rate of its runs."""
    folder = Path(__file__).resolve().parent.parent / "results" / "mini" / "fig7_lano_aligned"
    runs_ = pd.read_csv(folder / "runs.csv")
    assert len(runs_) == 48 and set(runs_["status"]) == {"finished"}
    keys = ["row", "size", "architecture", "canon"]
    for table, column, lower in (("cells.csv", "value", False),
                                 ("cells_kl.csv", "metrics.kl", True)):
        cells = pd.read_csv(folder / table)
        assert len(cells) == 24
        for cell in cells.itertuples():
            mine = runs_[(runs_[keys] == [cell.row, cell.size, cell.architecture,
                                          cell.canon]).all(axis=1)]
            per_lr = mine.groupby("lr")[column].agg(["mean", "std", "count"])
            best = per_lr.loc[per_lr["mean"].idxmin() if lower else per_lr["mean"].idxmax()]
            assert cell.status == "finished" and cell.value == pytest.approx(best["mean"])
            assert cell.seeds == best["count"] == 2 and cell.spread == pytest.approx(best["std"])
    versus = pd.read_csv(folder / "vs_paper_fig7_lano.csv")
    ours = pd.read_csv(folder / "cells.csv").set_index(["row", "size", "canon"])["value"]
    assert len(versus) == 24
    for row in versus.itertuples():
        assert row.value_ours == pytest.approx(ours[(row.row_paper, row.size, row.canon)])
    # the sweep file as run: its Lano rows are those of sweeps/fig7.yaml (its other panels differ)
    # but for the lr grid: sweeps/fig7.yaml lists the one lr the panel ran at, the file as run two
    # (the command chose 5e-4); the runs' configs have no data.packing (read as aligned), so a rerun
    # trains the stream-window panel, results/mini/fig7_lano, instead of resuming them
    as_run, now = (yaml.safe_load(f.read_text())["scales"]["mini"]
                   for f in (folder / "sweep.yaml", find_sweep_file("fig7")))
    assert as_run["overrides"] == now["overrides"]
    lano = [[r for r in scale["rows"] if r["panel"] == "lano"] for scale in (as_run, now)]
    assert len(lano[0]) == len(lano[1]) == 3
    for before, today in zip(*lano):
        assert ({k: v for k, v in before.items() if k != "grid"}
                == {k: v for k, v in today.items() if k != "grid"})
        assert today["grid"] == {"train.lr": sorted(runs_["lr"].unique())}


def _seed_summaries(runs: Path, best_run: str) -> list[dict]:
    """The summaries of a cell's runs: ``best_run`` and its other seeds (names end in _s<seed>)."""
    stem = best_run.rsplit("_s", 1)[0]
    return [json.loads((d / "summary.json").read_text()) for d in sorted(runs.glob(f"{stem}_s*"))]


@pytest.mark.parametrize("panel,metrics", [("depo1_K4", ("",)), ("brevo1", ("",)), ("mano", ("",)),
                                           ("lano", ("", "kl"))])
def test_committed_fig7_panel_agrees_with_its_run_records(panel, metrics):
    """results/mini/fig7_<panel>: every cell of the committed heatmaps (the task's metric, and KL
    for Lano) is the seed mean of its runs' summaries, whose records (kept in
    results/mini/runs/fig7_mini) a rerun of the sweep skips as finished, and every finished record
    of the panel, of any lr, is in a cell (a report older than its records fails); the heatmaps
    lay out the sweep's whole grid, cells without a run "not run"; the panel's rows as run are
    the rows of sweeps/fig7.yaml."""
    root = Path(__file__).resolve().parent.parent / "results" / "mini"
    summaries = {d.name: json.loads((d / "summary.json").read_text())
                 for d in (root / "runs" / "fig7_mini").iterdir() if (d / "summary.json").is_file()}
    records = {name for name, s in summaries.items()
               if s["status"] == "finished" and s["record"]["task"]["panel"] == panel}
    for metric in metrics:
        suffix = f"_{metric}" if metric else ""
        laid = pd.read_csv(root / f"fig7_{panel}" / f"cells{suffix}.csv")
        # laid out on fig7's whole mini grid (grid=fig7:mini): 3 rows × 4 sizes × 5 variants
        assert len(laid) == 3 * 4 * 5 and set(laid["status"]) == {"finished", NOT_RUN}
        cells = laid[laid["status"] == "finished"]
        assert len(cells) >= 2
        # a cell holds its runs of every lr (its value: the best lr's seed mean)
        stems = {run.rsplit("/", 1)[-1].rsplit("_lr", 1)[0] for run in cells["best_run"]}
        assert {r for r in records if r.rsplit("_lr", 1)[0] not in stems} == set()
        assert cells["n_finished"].sum() == len(records)
        for cell in cells.itertuples():
            summaries = _seed_summaries(root / "runs" / "fig7_mini", cell.best_run)
            assert len(summaries) == cell.seeds
            for summary in summaries:
                task = summary["record"]["task"]
                assert (summary["status"] == "finished"
                        and summary["step"] == summary["steps"] >= 5000)
                assert ((task["panel"], task["row"], summary["record"]["size"]["label"])
                        == (cell.panel, cell.row, cell.size))
            task = summaries[0]["record"]["task"]
            for name, value in ((metric or task["metric"], cell.value),
                                (not metric and task["metric2"], cell.value2)):
                if name:
                    assert np.mean([s["metrics"][name] for s in summaries]) == pytest.approx(value)
    cells = pd.read_csv(root / f"fig7_{panel}" / "cells.csv").query("status == 'finished'")
    if panel == "lano":  # the paper has the panel at its rows (cfg3f/j/k; the others easier)
        versus = pd.read_csv(root / f"fig7_{panel}" / "vs_paper_fig7.csv")
        assert set(versus["panel"]) == {panel} and len(versus) == 5 * 3 * 4
        ours = cells.set_index(["row", "size", "architecture", "canon"])["value"]
        mine = versus[versus["status"] == "finished"]
        assert len(mine) == len(cells)
        for row in mine.itertuples():
            assert (row.value_ours
                    == pytest.approx(ours[(row.row_ours, row.size, row.architecture, row.canon)]))
    as_run, now = (yaml.safe_load(f.read_text())["scales"]["mini"]
                   for f in (root / f"fig7_{panel}" / "sweep.yaml", find_sweep_file("fig7")))
    rows = [[r for r in scale["rows"] if r["panel"] == panel] for scale in (as_run, now)]
    no_grid = [[{k: v for k, v in r.items() if k != "grid"} for r in panel_rows]
               for panel_rows in rows]
    assert (no_grid[0] == no_grid[1] and len(rows[0]) == 3
            and as_run["overrides"] == now["overrides"])
    # sweeps/fig7.yaml's lr grid may be narrower than the file as run's (Lano: the one lr its panel
    # ran at), but it holds the cells' lr (at their size, where the rates are given by size)
    for cell in cells.itertuples():
        lrs = rows[1][cell.row_index].get("grid", now["grid"])["train.lr"]
        lrs = lrs[cell.size] if isinstance(lrs, dict) else lrs
        assert cell.lr in (lrs if isinstance(lrs, list) else [lrs]), (cell, lrs)
