"""``playground-report``: tables and figures from run directories (the only source of truth).

Every command reads the run directories under RESULTS (any depth) into one table
(``playground.report.table``), from the fields each run records of itself, and writes its
outputs (PNG, SVG, CSV, markdown) to ``RESULTS/report/`` unless ``out=`` says otherwise,
atomically. ``playground.report.cells`` turns the table into heatmap cells, ``plots`` draws them.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from playground.cli import Args, Command, atomic_write, check_writable
from playground.cli import main as cli_main
from playground.errors import ConfigError
from playground.report import cells as aggregate
from playground.report import plots, site
from playground.report.cells import capo_table
from playground.report.plots import plot_capo, save_figure
from playground.report.table import check_integrity, load_runs, planned_runs, run_dirs
from playground.run.rundir import MetricsLog, read_json
from playground.sweep.spec import find_sweep_file, read_sweep_file, report_metrics

OUT = {"out": ("", "output folder (default: RESULTS/report)"),
       "figures": ("true",
                   "draw the PNG/SVG figures (false: the CSV and markdown only, much faster)"),
       "panel": ("", "only the runs of this panel (e.g. depo1_K4), when a folder holds several"),
       "row": ("", "only the runs of this difficulty row (e.g. N=15, cfg3f)"),
       "size": ("", "only the runs of this model size (e.g. 8L512D)"),
       "strict": ("false", "stop at a run whose summary.json or config.yaml is damaged (default: "
                           "skip it, with a warning naming it)")}


def _suffix(metric: str) -> str:
    """The file-name suffix of outputs for ``metric=`` (none for the task's own metric)."""
    return f"_{metric}" if metric else ""


def _describe(metric: str, lower: bool) -> str:
    return f"{metric} ({'lower' if lower else 'higher'} is better)"


def _out(args: Args) -> Path:
    return Path(args["out"]) if args["out"] else Path(args.positional[0]) / "report"


# the options that keep some runs (``OUT``), each with the column of the run table it reads
FILTERS = (("panel", "record.task.panel"), ("row", "record.task.row"),
           ("size", "record.size.label"))


def _results(args: Args) -> Path:
    results = Path(args.positional[0])
    if not results.is_dir():
        raise ConfigError(f"RESULTS={results} is invalid: expected a folder of run directories")
    return results


def _runs(args: Args) -> pd.DataFrame:
    check_writable(_out(args), "out")
    results = _results(args)
    frame = load_runs(results, args.flag("strict"))
    if frame.empty:
        print(f"playground-report: no run directory under {results}", file=sys.stderr)
        raise SystemExit(1)
    frame, refused = check_integrity(frame)
    for message in refused:
        print(f"refused: {message}", file=sys.stderr)
    for key, column in FILTERS:
        if wanted := args[key]:
            values = frame[column] if column in frame else pd.Series(dtype=object)
            if wanted not in set(values.dropna()):
                raise ConfigError(f"{key}={wanted} is invalid: expected one of the {key}s under "
                                  f"{results}: {sorted(values.dropna().unique())}")
            frame = frame[values == wanted]
    return frame


def _tables(table: pd.DataFrame, keys: list[str], title, text) -> str:
    """One markdown table per group of ``keys`` (headed ``title(key)``): rows = difficulty,
    columns = sizes, each cell ``text(row of table)``, "—" where the table has none."""
    parts = []
    for key, block in table.groupby(keys, sort=False):
        sizes = sorted(block["size"].unique(), key=aggregate.size_order)
        parts.append(f"### {title(key)}\n")
        parts.append("| | " + " | ".join(sizes) + " |\n|---" + "|---" * len(sizes) + "|")
        for row, rb in block.sort_values("row_index").groupby("row", sort=False):
            by_size = {c["size"]: text(c) for _, c in rb.iterrows()}
            parts.append(f"| {row} | " + " | ".join(by_size.get(sz, "—") for sz in sizes) + " |")
        parts.append("")
    return "\n".join(parts)


def markdown(cells: pd.DataFrame, percent: bool = True) -> str:
    """One markdown table per (panel, variant): rows = difficulty, columns = sizes; a cell that
    averages several seeds shows their spread (± one standard deviation)."""
    return _tables(cells, ["panel", "architecture", "canon"],
                   lambda key: f"{key[0]}: {plots.variant_label(key[1], key[2])}",
                   lambda c: plots.cell_text(c["value"], c["value2"], c["status"], percent)
                             + _spread(c, percent))


def _spread(cell: pd.Series, percent: bool) -> str:
    spread = cell.get("spread", np.nan)
    if cell["status"] != "finished" or cell.get("seeds", 1) < 2 or pd.isna(spread):
        return ""
    if percent:
        return f" ± {100 * spread:.1f}"
    decimals = max(0, 2 - int(np.floor(np.log10(abs(cell["value"]))))) if cell["value"] else 3
    return f" ± {spread:.{decimals}f}"  # as many decimals as the value's 3 significant digits


def _grid_runs(args: Args, frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """The runs under RESULTS (``frame``, else ``_runs``); with ``grid=`` (``SWEEP:SCALE``), also
    the runs that sweep plans (of ``panel=``, ``row=`` and ``size=``, where given), as rows of
    status ``not run``, so that its every cell shows."""
    frame = _runs(args) if frame is None else frame
    if args["grid"]:
        planned = planned_runs(args["grid"], args["panel"])  # composes the panel's runs alone
        for key, column in FILTERS[1:]:  # the rest as _runs keeps the runs
            if args[key]:
                planned = planned[planned[column] == args[key]]
        frame = pd.concat([frame, planned], ignore_index=True)
    return frame


def _heatmap_runs(args: Args, frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """The runs of the tasks that make heatmaps (``frame``, else ``_grid_runs``), annotated with
    the value of ``metric=`` or each task's own."""
    frame = _with_metric(_grid_runs(args) if frame is None else frame, args)
    return frame[frame["record.task.heatmap"] == True]  # noqa: E712 - NaN (no record) is not True


def _with_metric(frame: pd.DataFrame, args: Args) -> pd.DataFrame:
    """``aggregate.annotate`` with ``metric=``, refused where no finished run of the selection
    (``panel=``, ``row=``, ``size=``) records it, though runs elsewhere under RESULTS do."""
    metric = args["metric"]
    frame = aggregate.annotate(frame, metric)
    done = frame[frame["status"] == "finished"] if "status" in frame else frame
    if metric and len(done) and done["value"].isna().all():
        known = site.metric_names(done)
        chosen = " ".join(f"{k}={args[k]}" for k, _ in FILTERS if args[k])
        raise ConfigError(f"metric={metric!r} is invalid: no finished run"
                          f"{' of ' + chosen if chosen else ''} records it; they record {known}")
    return frame


def _lrs_run(frame: pd.DataFrame, panel: str) -> dict[str, list[float]]:
    """The learning rates of the panel's finished runs that have a value, per model size."""
    done = frame[(frame["panel"] == panel) & (frame["status"] == "finished")
                 & frame["value"].notna()]
    return {size: sorted(block["lr"].dropna().unique()) for size, block in done.groupby("size")}


def cmd_heatmap(args: Args, runs: pd.DataFrame | None = None) -> int:
    metric, agg = args["metric"], args.choice("agg", ("best", "mean"))
    figure = args.int("vs_paper", minimum=0) if args["vs_paper"] else None
    if metric and figure:
        raise ConfigError("vs_paper compares the paper's accuracies; drop metric=")
    lower = aggregate.lower_is_better(metric)
    runs = _heatmap_runs(args) if runs is None else runs  # panel's: _heatmap_runs of its frame
    cells = aggregate.cells(runs, agg, lower)
    percent = aggregate.is_accuracy(metric)
    out, suffix = _out(args), _suffix(metric)
    atomic_write(out / f"cells{suffix}.csv", cells.to_csv(index=False).encode())
    atomic_write(out / f"cells{suffix}.md", markdown(cells, percent).encode())
    what = f": {_describe(metric, lower)}" if metric else ""
    label = "" if percent else _describe(metric, lower)
    chances = aggregate.row_chances(runs, metric) if args.flag("figures") and percent else {}
    for panel, block in cells.groupby("panel") if args.flag("figures") else ():
        fig = plots.heatmap_figure(block, f"{panel}{what}", percent, lower, agg,
                                   _lrs_run(runs, panel), label,
                                   {row: c for (p, row), c in chances.items() if p == panel})
        save_figure(fig, out / f"heatmap_{panel}{suffix}.png")
    if figure:
        versus = aggregate.versus_paper(cells, figure)
        if args["panel"]:  # the paper's other panels are not asked for
            versus = versus[versus["panel"] == args["panel"]]
        atomic_write(out / f"vs_paper_fig{figure}.csv", versus.to_csv(index=False).encode())
        matched = set(versus.loc[versus["status"] == "finished", "panel"])
        if not matched:
            print(f"vs_paper={figure}: no run here matches a cell of the paper's Figure {figure} "
                  "(same panel, variant, row position and size); no comparison drawn")
        elif unmatched := sorted(set(versus["panel"]) - matched):
            print(f"vs_paper={figure}: no run here matches the paper's {', '.join(unmatched)}; "
                  "not drawn")
        for panel, block in versus.groupby("panel") if args.flag("figures") else ():
            if panel not in matched:
                continue
            how = plots.describe_cells(cells[cells["panel"] == panel], agg, _lrs_run(runs, panel))
            fig = plots.versus_figure(block, f"Figure {figure}, {panel}: ours ({how}) vs the paper")
            save_figure(fig, out / f"vs_paper_fig{figure}_{panel}.png")
    failed, pending = (int((cells["status"] == "failed").sum()),
                       int((cells["status"] == "pending").sum()))
    print(markdown(cells, percent))
    print(f"wrote {out}/cells{suffix}.csv, "
          f"cells{suffix}.md and {cells['panel'].nunique()} heatmap(s)"
          + (f"; {failed} cell(s) failed (see the failures column)" if failed else "")
          + (f"; {pending} cell(s) pending (runs not finished: rerun the sweep)"
             if pending else ""))
    return 0


def cmd_curves(args: Args) -> int:
    frame, limit = _runs(args), args.int("limit", minimum=1)
    records = {}
    for _, run in frame.iterrows():
        if args["match"] and args["match"] not in run["run"]:
            continue
        evals = [r for r in MetricsLog(Path(run["run_dir"]) / "metrics.jsonl").records()
                 if r.get("split") == "eval"]
        if evals:
            records[str(run["run"])[-60:]] = pd.DataFrame(evals)
    if not records:
        print("playground-report: no run with evaluations matches", file=sys.stderr)
        return 1
    out = _out(args)
    if args.flag("figures"):
        save_figure(plots.curves_figure(dict(list(records.items())[:limit])), out / "curves.png")
    print(f"wrote {out}/curves.png ({min(len(records), limit)} runs)")
    return 0


def depth_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Accuracy by depth (the per-depth metric its task states: Brevo's dependency depth,
    Depo's hop count k), one row per cell, variant and depth: the mean and spread over seeds at
    the learning rate ``bars`` picks for the cell (``aggregate.cells(…, "mean")``); the column
    ``depth_metric`` names it."""
    frame = aggregate.annotate(frame)
    frame = frame[frame["record.task.depth_metric"].notna() & (frame["status"] == "finished")]
    columns = [*aggregate.CELL_KEYS, "variant", "lr", "depth", "acc", "spread", "seeds",
               "depth_metric"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    cells = aggregate.cells(frame, "mean")
    keys = [*aggregate.CELL_KEYS, "lr"]
    # each cell's runs at that lr
    chosen = frame.merge(cells.loc[cells["status"] == "finished", keys], on=keys)
    rows = []
    for key, at_lr in chosen.groupby(keys, dropna=False):
        name = at_lr["record.task.depth_metric"].iloc[0]
        prefix = f"metrics.{name}"
        depths = sorted(int(c[len(prefix):]) for c in at_lr
                        if c.startswith(prefix) and c[len(prefix):].isdigit())
        for depth in depths:
            acc = pd.to_numeric(at_lr[f"{prefix}{depth}"], errors="coerce").dropna()
            if len(acc):
                rows.append({**dict(zip(keys, key)), "depth": depth, "acc": acc.mean(),
                             "spread": acc.std(), "seeds": len(acc),
                             "variant": plots.variant_label(key[4], key[5]), "depth_metric": name})
    return pd.DataFrame(rows, columns=columns)


def cmd_depth(args: Args) -> int:
    table = depth_table(_runs(args))
    if table.empty:
        print("playground-report: no finished run of a task with accuracy by depth (Brevo, Depo)",
              file=sys.stderr)
        return 1
    out = _out(args)
    atomic_write(out / "depth.csv", table.drop(columns="depth_metric").to_csv(index=False).encode())
    groups = table.groupby(["panel", "row", "size", "depth_metric"]) if args.flag("figures") else ()
    for (panel, row, size, name), block in groups:
        fig = plots.bars_figure(block, "depth", "variant", "acc",
                                f"{panel} {row} {size}: accuracy by depth ({name}<d>)",
                                "accuracy (%)")
        save_figure(fig, out / f"depth_{panel}_{row.replace('=', '')}_{size}.png")
    print(f"wrote {out}/depth.csv and figures ({len(table)} bars)")
    return 0


def cmd_bars(args: Args) -> int:
    metric = args["metric"]
    lower, percent = aggregate.lower_is_better(metric), aggregate.is_accuracy(metric)
    cells = aggregate.cells(_with_metric(_runs(args), args), "mean", lower)
    # tasks without the metric drop out
    cells = cells[(cells["status"] == "finished") & cells["value"].notna()].copy()
    cells["variant"] = [plots.variant_label(a, c)
                        for a, c in zip(cells["architecture"], cells["canon"])]
    out, suffix = _out(args), _suffix(metric)
    atomic_write(out / f"bars{suffix}.csv", cells.to_csv(index=False).encode())
    ylabel = "accuracy (%)" if percent else _describe(metric, lower)
    for (panel, row), block in cells.groupby(["panel", "row"]) if args.flag("figures") else ():
        fig = plots.bars_figure(block, "size", "variant", "value", f"{panel} {row}",
                                ylabel, percent)
        save_figure(fig, out / f"bars_{panel}_{row.replace('=', '')}{suffix}.png")
    print(cells[["panel", "row", "size", "variant", "value", "spread", "seeds"]]
          .to_string(index=False))
    return 0


def gaps_markdown(table: pd.DataFrame, percent: bool) -> str:
    """One markdown table per (panel, architecture): rows = difficulty, columns = sizes, each
    cell Canon's mean gain with the seeds of each side (without + with), and where the table's
    cells ran more than one learning rate, the cell's (``lr 5e-4``; ``lr 1e-3 / 5e-4`` where
    the sides' best rates differ, without / with)."""
    scale, unit = (100, " pt") if percent else (1, "")
    sides = ("lr_without", "lr_with")
    several = len({lr for side in sides for lr in table[side].dropna()}) > 1

    def text(g: pd.Series) -> str:
        rates = dict.fromkeys(plots.lr_text(g[s]) for s in sides if not pd.isna(g[s]))
        lr = f", lr {' / '.join(rates)}" if several and rates else ""
        return f"{scale * g['gain']:+#.3g}{unit} ({g['seeds_without']} + {g['seeds_with']}{lr})"

    return _tables(table, ["panel", "architecture", "canon"],
                   lambda key: f"{key[0]}: {plots.gap_label(key[1], key[2])}", text)


def cmd_gaps(args: Args) -> int:
    runs = _heatmap_runs(args)
    if write_gaps(args, runs).empty:
        ids = sorted(set(runs["canon"]) - {"none"})
        raise ConfigError(f"canon={args['canon']} is invalid: no architecture under "
                          f"{args.positional[0]} has finished runs of one cell both with it and "
                          f"without Canon; the Canon ids there: {ids}")
    return 0


def _metric_name(runs: pd.DataFrame, metric: str) -> str:
    """What ``runs``' values are, for a title or axis: ``metric``, else the metrics their tasks
    state (``acc_at_K``), else "accuracy"."""
    stated = runs.get("record.task.metric", pd.Series(dtype=object)).dropna().unique()
    return metric or ", ".join(sorted(map(str, stated))) or "accuracy"


def write_gaps(args: Args, runs: pd.DataFrame) -> pd.DataFrame:
    """``gaps``' outputs for ``runs`` (``_heatmap_runs``), and its table; nothing written where
    the table is empty (no architecture has a cell run both with ``canon=`` and without)."""
    metric, canon = args["metric"], args["canon"]
    lower, percent = aggregate.lower_is_better(metric), aggregate.is_accuracy(metric)
    table = aggregate.gaps(runs, canon, lower)
    if table.empty:
        return table
    out, suffix = _out(args), _suffix(metric)
    atomic_write(out / f"gaps{suffix}.csv", table.to_csv(index=False).encode())
    atomic_write(out / f"gaps{suffix}.md", gaps_markdown(table, percent).encode())
    what = _metric_name(runs, metric)
    ylabel = (f"Canon's gain in {what} (points)" if percent
              else f"Canon's gain in {what} ({'without − with' if lower else 'with − without'})")
    for panel, block in table.groupby("panel") if args.flag("figures") else ():
        mine = runs[(runs["panel"] == panel) & (runs["status"] == "finished")]
        fig = plots.gaps_figure(block, f"{panel}: {plots.canon_label(canon)} minus no Canon, "
                                f"mean over seeds (line) and per seed (points)\neach side at its "
                                f"best lr of those run: {plots.lrs_text(_lrs_run(runs, panel))}",
                                ylabel, percent,
                                runs.loc[runs["panel"] == panel, "size"].dropna(),
                                mine.groupby("size")["params.non_embedding"].median()
                                if "params.non_embedding" in mine else None)
        save_figure(fig, out / f"gaps_{panel}{suffix}.png")
    print(gaps_markdown(table, percent))
    print(f"wrote {out}/gaps{suffix}.csv, gaps{suffix}.md and {table['panel'].nunique()} "
          "figure(s); cells: the mean gain (seeds without + with Canon)")
    return table


def cmd_table(args: Args) -> int:
    frame = aggregate.annotate(_runs(args))
    print(frame[_table_columns(frame)].to_string(index=False))
    write_table(frame, _out(args))
    return 0


def training_facts(run: pd.Series, from_step: int, spike: float) -> dict:
    """What a dated record's run table gives of one run (a ``load_runs`` row): when it ran, its
    training rate over the log intervals from ``from_step`` on (median and range: the first
    intervals hold compilation), its peak memory, its last loss and the intervals whose largest
    gradient norm passed ``spike``."""
    rows = [r for r in MetricsLog(Path(run["run_dir"]) / "metrics.jsonl").records()
            if r.get("split") == "train"]
    rates = [r["tokens_per_s"] for r in rows if r["step"] >= from_step and "tokens_per_s" in r]
    norms = [r["grad_norm_max"] for r in rows if r.get("grad_norm_max") is not None]

    def gb(key: str) -> str:
        value = run.get(key)
        return "" if value is None or pd.isna(value) else f"{value / 1e9:.1f}"

    def at(key: str, date: bool = False) -> str:  # ISO time -> "2026-12-05 05:35:34" (or the time)
        value = run.get(key)
        return (value[:19].replace("T", " ") if date else value[11:19]) \
            if isinstance(value, str) else ""

    return {
        "run": run["run"], "status": run.get("status"), "device": run.get("device_name", ""),
        "started": at("started", date=True), "finished": at("finished"),
        "wall_s": round(run["wall_time_s"]) if pd.notna(run.get("wall_time_s")) else None,
        "tokens_per_s": f"{np.median(rates) / 1e3:,.0f}k ({min(rates) / 1e3:,.0f}–"
                        f"{max(rates) / 1e3:,.0f}k)" if rates else "",
        "peak_gb": gb("peak_memory_bytes"), "reserved_gb": gb("peak_reserved_bytes"),
        "final_loss": f"{rows[-1]['loss']:.3f}" if rows else "",
        "spikes": f"{sum(n > spike for n in norms)} of {len(norms)} (max {max(norms):.0f})"
                  if norms else "",
        "value": run.get("value"),
    }


def cmd_record(args: Args) -> int:
    """Per run, the facts of a dated bench record's run table (:func:`training_facts`), printed
    as a markdown table and written to ``record.md``."""
    from_step = args.int("from_step", minimum=0)
    spike = args.float("spike")
    if not spike > 0:
        raise ConfigError(f"spike={args['spike']} is invalid: expected a gradient norm > 0")
    frame = aggregate.annotate(_runs(args))
    facts = pd.DataFrame([training_facts(run, from_step, spike) for _, run in frame.iterrows()])
    header = {"run": "run", "status": "status", "device": "device", "started": "started (UTC)",
              "finished": "finished", "wall_s": "training s",
              "tokens_per_s": f"tokens/s (median of log intervals from step {from_step}; range)",
              "peak_gb": "peak GB", "reserved_gb": "reserved GB", "final_loss": "final loss",
              "spikes": f"intervals with grad norm > {spike:g}", "value": "primary"}
    lines = ["| " + " | ".join(header.values()) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join("" if pd.isna(v) else str(v) for v in row) + " |"
              for row in facts[list(header)].itertuples(index=False)]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    atomic_write(_out(args) / "record.md", text.encode())
    print(f"wrote {_out(args) / 'record.md'}")
    return 0


def _table_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in ("run", "status", "panel", "row", "size", "architecture", "canon", "lr",
                        "seed", "value", "value2", "error") if c in frame]


def write_table(frame: pd.DataFrame, out: Path) -> None:
    """``runs.csv``: every run of ``frame`` (``annotate``d) with every metric it records."""
    metrics = sorted(c for c in frame if c.startswith("metrics."))
    extra = [c for c in ("step", "final_loss", "tokens_per_s", "wall_time_s", "params.total")
             if c in frame]
    atomic_write(out / "runs.csv",
                 frame[_table_columns(frame) + metrics + extra].to_csv(index=False).encode())
    print(f"wrote {out / 'runs.csv'} (every metric of every run)")


def cmd_panel(args: Args) -> int:
    """One panel of a sweep, whole, in one folder: what ``heatmap`` (``grid=``; with the paper's
    figure where the paper has this panel at the same rows), ``gaps`` and ``table`` write, the
    panel over training (:func:`write_panel_curves`), each again for every metric of ``metrics=``
    (else of the sweep file's ``report`` for the panel), and the sweep file the grid comes from
    (``sweep.yaml``)."""
    panel, grid = args["panel"], args["grid"]
    if not panel:
        raise ConfigError("panel= is required: the panel to draw (e.g. panel=depo1_K4)")
    if not grid:
        raise ConfigError("grid= is required: the sweep and scale of the panel "
                          "(SWEEP:SCALE, e.g. grid=fig7:mini)")
    ran = _runs(args)  # refuses a panel without runs here
    frame = _grid_runs(args, ran)  # and a malformed grid=
    sweep_file = find_sweep_file(grid.rpartition(":")[0])
    figure = read_sweep_file(sweep_file).get("figure")
    # like with like only: the paper has this panel at the same difficulty rows (not by position)
    paper = figure is not None and _same_rows(aggregate.paper_cells(int(figure)), frame, panel)
    out = _out(args)
    metrics = ([] if args["metrics"] == "none" else args.list("metrics") if args["metrics"]
               else report_metrics(sweep_file, panel))
    for metric in ["", *metrics]:
        vs_paper = str(figure) if paper and not metric else ""
        sub = dataclasses.replace(args, options={**args.options, "metric": metric,
                                                 "vs_paper": vs_paper})
        runs = _heatmap_runs(sub, frame)
        cmd_heatmap(sub, runs)
        if write_gaps(sub, runs).empty:
            print(f"no gaps{_suffix(metric)}: no architecture has a cell run both with "
                  f"canon={args['canon']} and without")
        write_panel_curves(sub, runs)
    write_table(aggregate.annotate(ran), out)
    atomic_write(out / "sweep.yaml", sweep_file.read_bytes())
    print(f"wrote {out / 'sweep.yaml'} (the sweep file of grid={grid})")
    return 0


def _same_rows(paper: pd.DataFrame, frame: pd.DataFrame, panel: str) -> bool:
    """Whether the paper's cells (``cells.paper_cells``) of ``panel`` are at the rows of the
    runs in ``frame`` (their difficulty labels, ``N=225``, ``cfg3f``, all among the paper's)."""
    ours = set(frame["record.task.row"].dropna())
    return bool(ours) and ours <= set(paper.loc[paper["panel"] == panel, "row"])


def write_panel_curves(args: Args, runs: pd.DataFrame) -> None:
    """``curves_<panel>[_<metric>].png``: each cell's runs at the cell's learning rate (``agg=``,
    as its heatmap cell) over training, ``metric=`` or the task's own at every evaluation of
    their ``metrics.jsonl`` (:func:`plots.panel_curves_figure`)."""
    if not args.flag("figures"):
        return
    metric, panel = args["metric"], args["panel"]
    lower, percent = aggregate.lower_is_better(metric), aggregate.is_accuracy(metric)
    cells = aggregate.cells(runs, args["agg"], lower)
    keys = [*aggregate.CELL_KEYS, "lr"]
    done = runs[(runs["status"] == "finished") & runs["value"].notna()]
    chosen = done.merge(cells.loc[cells["status"] == "finished", keys], on=keys)
    series = pd.DataFrame(
        [{"row": run["row"], "size": run["size"], "architecture": run["architecture"],
          "canon": run["canon"], "seed": run["seed"], "step": rec["step"], "value": rec[name]}
         for _, run in chosen.iterrows()
         for name in [metric or run["record.task.metric"]]
         for rec in MetricsLog(Path(run["run_dir"]) / "metrics.jsonl").records()
         if rec.get("split") == "eval" and rec.get(name) is not None],
        columns=["row", "size", "architecture", "canon", "seed", "step", "value"])
    if series.empty:
        return
    what = _metric_name(runs, metric)
    chance = ({row: c for (p, row), c in aggregate.row_chances(runs, metric).items() if p == panel}
              if percent else {})
    fig = plots.panel_curves_figure(
        series, list(runs.sort_values("row_index")["row"].unique()),
        sorted(runs["size"].dropna().unique(), key=aggregate.size_order),
        aggregate.variant_order(runs),
        f"{panel} over training: {what} at each evaluation, each cell's runs at its learning "
        f"rate ({args['agg']}); thin: seeds, thick: their mean" + ("; dashed: chance" if chance
                                                                    else ""),
        f"{what} (%)" if percent else _describe(what, lower), percent, chance)
    save_figure(fig, _out(args) / f"curves_{panel}{_suffix(metric)}.png")
    print(f"wrote {_out(args)}/curves_{panel}{_suffix(metric)}.png")


def cmd_capo(args: Args) -> int:
    table = capo_table(_runs(args))
    if table.empty:
        print(f"playground-report: no finished Capo run under {args.positional[0]}",
              file=sys.stderr)
        return 1
    out = _out(args)
    atomic_write(out / "capo_bits.csv", table.to_csv(index=False).encode())
    if args.flag("figures"):
        save_figure(plot_capo(table), out / "capo_bits.png")
    dropped = int((table["bits"] <= 0).sum())
    print(table.to_string(index=False))
    print(f"wrote {out / 'capo_bits.png'}, .svg and .csv ({len(table)} runs"
          + (f"; {dropped} with bits <= 0 are in the CSV only)" if dropped else ")"))
    return 0


def lengthgen_table(frame: pd.DataFrame, metric: str = "") -> pd.DataFrame:
    """The runs' ``length_gen.csv`` rows (``playground-eval RUN eval.length_scales=…``) of
    ``metric`` (default: each task's primary): mean and spread over seeds per panel, row, size,
    variant and scale, at each cell's learning rate that is best on average over the scales."""
    frame = aggregate.annotate(frame)
    keys = ["panel", "row", "size", "variant", "scale"]
    parts = []
    for _, run in frame.iterrows():
        path = Path(run["run_dir"]) / "length_gen.csv"
        name = metric or run.get("record.task.metric")
        if not path.exists() or not isinstance(name, str):
            continue
        rows = pd.read_csv(path)
        rows = rows[rows["metric"] == name]
        parts.append(rows.assign(panel=run["panel"], row=run["row"], size=run["size"], lr=run["lr"],
                                 variant=plots.variant_label(run["architecture"], run["canon"])))
    if not parts:
        return pd.DataFrame(columns=[*keys, "context", "metric", "value", "spread", "seeds", "lr"])
    rows = pd.concat(parts, ignore_index=True)
    lower = aggregate.lower_is_better(metric)
    by_lr = rows.groupby(keys[:4] + ["lr"], dropna=False)["value"].mean().reset_index()
    best = by_lr.loc[(by_lr.groupby(keys[:4], dropna=False)["value"]
                      .idxmin() if lower
                      else by_lr.groupby(keys[:4], dropna=False)["value"].idxmax())]
    rows = rows.merge(best[keys[:4] + ["lr"]], on=keys[:4] + ["lr"])
    table = rows.groupby(keys + ["lr", "metric"], dropna=False).agg(
        context=("context", "first"), value=("value", "mean"), spread=("value", "std"),
        seeds=("value", "size")).reset_index()
    return table[[*keys, "context", "metric", "value", "spread", "seeds", "lr"]]


def cmd_lengthgen(args: Args) -> int:
    table = lengthgen_table(_runs(args), args["metric"])
    if table.empty:
        print("playground-report: no run with a length_gen.csv (playground-eval RUN "
              "eval.length_scales=1,2,4)", file=sys.stderr)
        return 1
    out = _out(args)
    atomic_write(out / "lengthgen.csv", table.to_csv(index=False).encode())
    for (panel, row, size, metric), block in (table.groupby(["panel", "row", "size", "metric"])
                                              if args.flag("figures") else ()):
        fig = plots.lengthgen_figure(block, f"{panel} {row} {size}: length generalisation", metric,
                                     aggregate.is_accuracy(metric))
        save_figure(fig, out / f"lengthgen_{panel}_{str(row).replace('=', '')}_{size}.png")
    print(table.to_string(index=False))
    print(f"wrote {out / 'lengthgen.csv'} and figures ({len(table)} points)")
    return 0


def cmd_site(args: Args) -> int:
    roots = [Path(p) for p in args.positional]
    if not args["out"]:
        raise ConfigError("out= is required: the folder to write the site into (e.g. out=site)")
    out = Path(args["out"])
    counts = site.build(roots, out, Path(args["findings"]) if args["findings"] else None)
    print(f"wrote {out}/index.html: {counts['panels']} panel page(s) from {counts['runs']} run(s)"
          + (f"; findings.html: {counts['findings']} finding cells" if counts["findings"] else "")
          + (f"; {counts['refused']} refused" if counts["refused"] else "")
          + (f"; {counts['unplaced']} without a record" if counts["unplaced"] else ""))
    return 0


def cmd_findings(args: Args) -> int:
    """The findings of sweeps/findings.yaml (or spec=) read from the runs under RESULTS:
    findings.csv, findings.md, every cell's margin and interval in one figure
    (findings_forest.png) and two figures per paper result: the final values
    (findings_<result>.png) and the values over training (findings_<result>_curves.png, where
    a run was evaluated more than once)."""
    from playground.report import findings as fnd

    spec = fnd.load_findings(Path(args["spec"]) if args["spec"] else fnd.SPEC, args["results"])
    check_writable(_out(args), "out")
    frame, refused = check_integrity(load_runs(Path(args.positional[0]), args.flag("strict")))
    for message in refused:
        print(f"refused: {message}", file=sys.stderr)
    table = fnd.evaluate(spec, frame)
    out = _out(args)
    atomic_write(out / "findings.csv", table.to_csv(index=False).encode())
    atomic_write(out / "findings.md", fnd.markdown(table, spec).encode())
    atomic_write(out / "summary.md", fnd.summary(table).encode())
    for readme in filter(None, args["update"].split(",")):
        atomic_write(Path(readme),
                     fnd.with_summary(Path(readme).read_text(), fnd.summary(table)).encode())
        print(f"updated the findings block of {readme}")
    if args.flag("figures"):
        import matplotlib.pyplot as plt

        for result in table["result"].unique():
            figures = {"": fnd.figure(table, result),
                       "_curves": fnd.curves(spec, frame, table, result)}  # None: nothing to draw
            for name, fig in figures.items():
                if fig is not None:
                    save_figure(fig, out / f"findings_{result}{name}")
                    plt.close(fig)
        fig = fnd.forest(spec, table)
        save_figure(fig, out / "findings_forest")
        plt.close(fig)
    decided = table[(table["verdict_fw"] != "") & (table["verdict"] != "inconclusive")]
    kept = int((decided["verdict_fw"] == decided["verdict"]).sum())
    print(f"{len(table)} finding cells -> {out}/findings.md: {fnd.verdict_counts(table)}"
          + f"; family-wise ({fnd.family_text(table)}): {kept} of the {len(decided)} verdicts "
          "other than inconclusive kept")
    return 0


def cmd_pack(args: Args) -> int:
    """Pack the ``metrics.jsonl`` of every finished run under RESULTS (``MetricsLog.pack``);
    runs not finished keep theirs as they are."""
    root = _results(args)
    packed, before, after, left, already = 0, 0, 0, [], 0
    for d in run_dirs(root):
        try:
            finished = read_json(d / "summary.json").get("status") == "finished"
        except (OSError, ValueError, AttributeError):
            finished = False
        if not finished:
            left.append(d)
            continue
        if (sizes := MetricsLog(d / "metrics.jsonl").pack()) is None:
            already += 1
        else:
            packed, before, after = packed + 1, before + sizes[0], after + sizes[1]
    print(f"packed the metrics.jsonl of {packed} finished run(s) under {root}"
          + (f": {before / 1e6:.2f} MB -> {after / 1e6:.2f} MB" if packed else "")
          + (f"; {already} packed already (or without a log)" if already else "")
          + (f"; {len(left)} not finished, left as they are" if left else ""))
    return 0


R = ("RESULTS",)
COMMANDS = [
    Command("heatmap", "3×4 heatmaps per task panel and variant (best over lr and seeds)",
            cmd_heatmap,
            {"agg": ("best", "best: the best run over lr and seeds (the paper); mean: "
                             "best lr by the seed mean"),
             "metric": ("", "show this metric instead of the task's (kl, acc_k1, final_loss…; "
                            "kl and losses: lower is better); outputs get the suffix _NAME"),
             "vs_paper": ("", "also compare with the paper's Figure N "
                              "(report/data/paper_heatmaps.csv)"),
             "grid": ("", "lay out the whole grid of this sweep at this scale (SWEEP:SCALE, e.g. "
                          "fig7:mini): its cells without a run show as \"not run\""), **OUT},
            R, examples=("playground-report heatmap results/fig7_mini vs_paper=7",
                         "playground-report heatmap results/mini/runs/fig7_mini panel=mano "
                         "agg=mean grid=fig7:mini out=results/mini/fig7_mano",
                         "playground-report heatmap results/fig7_mini metric=kl agg=mean "
                         "out=results/mini/fig7_lano")),
    Command("curves", "accuracy per depth (Depo k, Brevo depth, Mano l) over training steps "
                      "(Figure 8/16 style)", cmd_curves,
            {"match": ("", "only runs whose path contains this text"),
             "limit": ("12", "at most this many runs"),
             **OUT}, R, examples=("playground-report curves results/fig7_mini match=depo1",)),
    Command("depth",
            "accuracy by Brevo dependency depth or Depo hop count k, mean ± spread over seeds",
            cmd_depth, dict(OUT), R, examples=("playground-report depth results/gla_canon_mini",)),
    Command("bars", "accuracy (or metric=) by size and variant, mean ± spread over seeds", cmd_bars,
            {"metric": ("", "this metric instead of the task's (kl: lower is better); "
                            "outputs get the suffix _NAME"),
             **OUT}, R,
            examples=("playground-report bars results/mqar_mini out=results/mini/mqar",
                      "playground-report bars results/mini/runs/gdn_mini panel=lano metric=kl "
                      "out=results/mini/gdn")),
    Command("gaps", "Canon's gain (with minus without, per architecture) against model size, "
                    "one panel per difficulty row, mean and per seed", cmd_gaps,
            {"canon": ("abcd_res", "the Canon variant compared with none (a canon id of the "
                                   "heatmap cells: abcd_res, ab_nores…)"),
             "metric": ("", "this metric instead of the task's (kl: lower is better, the gain "
                            "is without − with); outputs get the suffix _NAME"),
             "grid": ("", "size axis of this sweep at this scale (SWEEP:SCALE, e.g. fig7:mini): "
                          "its sizes without runs shown too"),
             **OUT}, R,
            examples=("playground-report gaps results/mini/runs/fig7_mini panel=lano metric=kl "
                      "out=results/mini/fig7_lano",
                      "playground-report gaps results/mini/runs/fig7_mini panel=mano "
                      "grid=fig7:mini out=results/mini/fig7_mano")),
    Command("panel", "one panel of a sweep, whole, in one folder: its heatmap (every cell of "
                     "grid=, \"not run\" where none), the paper's figure beside it where the "
                     "paper has the panel at the same rows, Canon's gain against size, the panel "
                     "over training, the run table and the sweep file; again for each of "
                     "metrics=", cmd_panel,
            {"grid": ("", "the sweep and scale of the panel (SWEEP:SCALE, e.g. fig7:mini); "
                          "required"),
             "metrics": ("", "also these metrics' heatmap, gains and curves (comma-separated, "
                             "e.g. depth_reached or kl; outputs get the suffix _NAME); default: "
                             "those the sweep file's report names for the panel; none: no other"),
             "agg": ("mean", "best: the best run over lr and seeds; mean: best lr by the seed "
                             "mean"),
             "canon": ("abcd_res", "the Canon variant whose gain over none is drawn"),
             **OUT}, R,
            examples=("playground-report panel results/mini/runs/fig7_mini panel=depo1_K4 "
                      "grid=fig7:mini out=results/mini/fig7_depo1_K4",
                      "playground-report panel results/mini/runs/fig7_mini panel=lano "
                      "grid=fig7:mini metrics=none out=/tmp/lano")),
    Command("capo", "learned bits vs parameters (Capo capacity), one series per N", cmd_capo,
            dict(OUT), R, examples=("playground-report capo results/capo",)),
    Command("lengthgen", "metric vs eval length (× training context), one line per variant",
            cmd_lengthgen,
            {"metric": ("", "this metric instead of the task's primary (kl, acc_k1…)"), **OUT}, R,
            examples=("playground-report lengthgen results/length_gen_cpu",)),
    Command("findings", "the declared findings (sweeps/findings.yaml): per finding and cell, each "
            "side's seeds and values, the margin, its 95 % interval and the verdict "
            "(docs/findings.md)", cmd_findings,
            {"spec": ("", "a findings file (default: the shipped sweeps/findings.yaml)"),
             "results": ("",
                         "only the findings of these paper results or ids (comma-separated, "
                         "e.g. 2,3a or R10-mamba2)"),
             "update": ("", "also put the summary table into these markdown files, between their "
                            "<!-- findings:begin --> and <!-- findings:end --> lines "
                            "(comma-separated)"),
             "out": OUT["out"], "figures": OUT["figures"], "strict": OUT["strict"]}, R,
            examples=("playground-report findings results/mini/runs out=results/mini/findings",
                      "playground-report findings results/mini/runs out=results/mini/findings "
                      "update=README.md,results/mini/README.md")),
    Command("table", "every run, one line each (and runs.csv with all its metrics)", cmd_table,
            dict(OUT), R, examples=("playground-report table results/fig7_mini",)),
    Command("record", "per run, what a dated bench record's run table gives: device, start and "
                      "end, tokens/s over the log intervals (median and range), peak memory, last "
                      "loss, gradient-norm spikes, primary metric (record.md)", cmd_record,
            {**OUT, "from_step": ("200", "the first step whose log interval counts for tokens/s "
                                         "(the first intervals hold compilation)"),
             "spike": ("10", "a log interval whose largest gradient norm passes this counts")},
            R, examples=("playground-report record results/mini/runs size=8L768D out=/tmp/rec",)),
    Command("pack", "keep each finished run's metrics.jsonl as metrics.jsonl.gz, about a quarter "
                    "of the bytes (every command reads either; a resumed run unpacks it)",
            cmd_pack, {}, R, examples=("playground-report pack results/mini/runs",)),
    Command("site", "a static results browser (HTML + one JS + CSS + SVG; "
                    "opens from index.html, no server)",
            cmd_site,
            {"out": ("", "output folder (required); links are relative, publish it as is"),
             "findings": ("", "a findings file (e.g. sweeps/findings.yaml): also findings.html, "
                              "its verdicts read from these runs")},
            ("RESULTS...",), examples=("playground-report site results/fig7_mini out=site",
                                        "playground-report site results/fig7_mini "
                                        "results/mqar_mini out=site",
                                        "playground-report site results/mini/runs out=docs/site "
                                        "findings=sweeps/findings.yaml")),
]


def main(argv: list[str] | None = None) -> None:
    cli_main("playground-report", "tables and figures from run directories", COMMANDS, argv)


if __name__ == "__main__":
    main()
