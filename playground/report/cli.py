"""``playground-report``: tables and figures from run directories (the only source of truth).

    playground-report heatmap RESULTS [--agg best|mean] [--vs-paper FIG | --metric NAME] [--out DIR]
    playground-report curves RESULTS [--match TEXT]       # accuracy per k over training steps
    playground-report depth RESULTS                        # accuracy by Brevo depth / Depo hop count k
    playground-report bars RESULTS                         # MQAR accuracy by width and variant
    playground-report capo RESULTS                         # Capo learned bits vs parameters
    playground-report table RESULTS                        # every run, one line each

:func:`load_runs` reads every run directory under a folder (any depth) into one DataFrame;
``playground.report.cells`` turns it into cells (best over learning rates and seeds, or mean ±
spread), ``playground.report.plots`` draws them. Outputs (PNG, SVG, CSV, markdown) go to
``RESULTS/report/`` unless ``--out`` says otherwise, written atomically.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from omegaconf import OmegaConf

from playground.errors import ConfigError
from playground.report import cells as aggregate
from playground.report import plots
from playground.report.cells import capo_table  # noqa: F401 - part of this module's API
from playground.report.plots import plot_capo, save_figure  # noqa: F401
from playground.run.rundir import MetricsLog, atomic_write, read_json


def flatten(tree: dict, prefix: str = "") -> dict:
    """{"a": {"b": 1}} -> {"a.b": 1}; lists stay values."""
    flat: dict = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def run_dirs(root: Path) -> list[Path]:
    """Every directory under ``root`` (or ``root`` itself) holding a summary.json."""
    root = Path(root)
    return sorted(p.parent for p in root.rglob("summary.json") if "checkpoints" not in p.parts)


def load_runs(path: str | Path) -> pd.DataFrame:
    """One row per run directory under ``path``: the flattened summary.json (``status``,
    ``metrics.*``, ``params.*``, ``difficulty.*``, ``size``, ``lr``, …), the flattened resolved
    config under ``config.`` (``config.task.N``, ``config.model.d_model``, …), and ``run_dir``
    / ``run`` (the directory, and its path relative to ``path``)."""
    root = Path(path)
    rows = []
    for d in run_dirs(root):
        row = flatten(read_json(d / "summary.json"))
        if (d / "config.yaml").exists():
            config = OmegaConf.to_container(OmegaConf.load(d / "config.yaml"))
            config.pop("hydra", None)
            row.update(flatten(config, "config."))
        row["run_dir"], row["run"] = str(d), str(d.relative_to(root)) if d != root else d.name
        rows.append(row)
    return pd.DataFrame(rows)


def _out(args: argparse.Namespace) -> Path:
    return Path(args.out) if args.out else Path(args.results) / "report"


def _runs(args: argparse.Namespace) -> pd.DataFrame:
    results = Path(args.results)
    if not results.is_dir():
        print(f"playground-report: {results} is not a directory", file=sys.stderr)
        raise SystemExit(2)
    frame = load_runs(results)
    if frame.empty:
        print(f"playground-report: no run directory under {results}", file=sys.stderr)
        raise SystemExit(1)
    frame, refused = aggregate.check_integrity(frame)
    for message in refused:
        print(f"refused: {message}", file=sys.stderr)
    return frame


def markdown(cells: pd.DataFrame, percent: bool = True) -> str:
    """One markdown table per (panel, variant): rows = difficulty, columns = sizes; a cell that
    averages several seeds shows their spread (± one standard deviation)."""
    parts = []
    for (panel, arch, canon), block in cells.groupby(["panel", "architecture", "canon"], sort=False):
        sizes = sorted(block["size"].unique(), key=aggregate.size_order)
        parts.append(f"### {panel}: {plots.variant_label(arch, canon)}\n")
        parts.append("| | " + " | ".join(sizes) + " |\n|---" * 1 + "|---" * len(sizes) + "|")
        depo = percent and "_K" in panel
        for row, rb in block.sort_values("row_index").groupby("row", sort=False):
            by_size = {c["size"]: plots.cell_text(c["value"], c["value2"], c["status"], depo, percent)
                       + _spread(c, percent) for _, c in rb.iterrows()}
            parts.append(f"| {row} | " + " | ".join(by_size.get(sz, "—") for sz in sizes) + " |")
        parts.append("")
    return "\n".join(parts)


def _spread(cell: pd.Series, percent: bool) -> str:
    spread = cell.get("spread", np.nan)
    if cell["status"] != "finished" or cell.get("seeds", 1) < 2 or pd.isna(spread):
        return ""
    if percent:
        return f" ± {100 * spread:.1f}"
    decimals = max(0, 2 - int(np.floor(np.log10(abs(cell["value"]))))) if cell["value"] else 3
    return f" ± {spread:.{decimals}f}"  # as many decimals as the value's 3 significant digits


def cmd_heatmap(args: argparse.Namespace) -> int:
    if args.metric and args.vs_paper:
        print("playground-report: --vs-paper compares the paper's accuracies; drop --metric", file=sys.stderr)
        return 2
    frame = aggregate.annotate(_runs(args), args.metric)
    frame = frame[frame["task_name"].isin(["depo", "brevo", "mano", "lano", "mqar", "reverse"])]
    lower = aggregate.lower_is_better(args.metric)
    percent = aggregate.is_accuracy(args.metric)
    cells = aggregate.cells(frame, args.agg, lower)
    out, suffix = _out(args), f"_{args.metric}" if args.metric else ""
    atomic_write(out / f"cells{suffix}.csv", cells.to_csv(index=False).encode())
    atomic_write(out / f"cells{suffix}.md", markdown(cells, percent).encode())
    what = f"{args.metric} ({'lower' if lower else 'higher'} is better), " if args.metric else ""
    how = "best run over learning rates and seeds" if args.agg == "best" else "seed mean at the best learning rate"
    for panel, block in cells.groupby("panel"):
        save_figure(plots.heatmap_figure(block, f"{panel}: {what}{how}", percent, lower),
                    out / f"heatmap_{panel}{suffix}.png")
    if args.vs_paper:
        versus = aggregate.versus_paper(cells, args.vs_paper)
        atomic_write(out / f"vs_paper_fig{args.vs_paper}.csv", versus.to_csv(index=False).encode())
        for panel, block in versus.groupby("panel"):
            save_figure(plots.versus_figure(block, f"Figure {args.vs_paper}, {panel}: ours vs the paper"),
                        out / f"vs_paper_fig{args.vs_paper}_{panel}.png")
    failed, pending = int((cells["status"] == "failed").sum()), int((cells["status"] == "pending").sum())
    print(markdown(cells, percent))
    print(f"wrote {out}/cells{suffix}.csv, cells{suffix}.md and {cells['panel'].nunique()} heatmap(s)"
          + (f"; {failed} cell(s) failed (see the failures column)" if failed else "")
          + (f"; {pending} cell(s) pending (runs not finished: rerun the sweep)" if pending else ""))
    return 0


def cmd_curves(args: argparse.Namespace) -> int:
    frame = _runs(args)
    records = {}
    for _, run in frame.iterrows():
        if args.match and args.match not in run["run"]:
            continue
        evals = [r for r in MetricsLog(Path(run["run_dir"]) / "metrics.jsonl").records() if r.get("split") == "eval"]
        if evals:
            records[str(run["run"])[-60:]] = pd.DataFrame(evals)
    if not records:
        print("playground-report: no run with evaluations matches", file=sys.stderr)
        return 1
    out = _out(args)
    save_figure(plots.curves_figure(dict(list(records.items())[: args.limit])), out / "curves.png")
    print(f"wrote {out}/curves.png ({min(len(records), args.limit)} runs)")
    return 0


DEPTH_METRICS = {"brevo": "metrics.acc_depth", "depo": "metrics.acc_k"}  # ...<d>: accuracy at depth / hop d


def depth_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Accuracy by depth (Brevo: dependency depth; Depo: hop count k), one row per cell, variant
    and depth: the mean and spread over seeds at the learning rate ``bars`` picks for the cell
    (``aggregate.cells(…, "mean")``)."""
    frame = aggregate.annotate(frame)
    frame = frame[frame["task_name"].isin(DEPTH_METRICS) & (frame["status"] == "finished")]
    columns = [*aggregate.CELL_KEYS, "variant", "lr", "depth", "acc", "spread", "seeds"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    cells = aggregate.cells(frame, "mean")
    keys = [*aggregate.CELL_KEYS, "lr"]
    chosen = frame.merge(cells.loc[cells["status"] == "finished", keys], on=keys)  # each cell's runs at that lr
    rows = []
    for key, at_lr in chosen.groupby(keys, dropna=False):
        prefix = DEPTH_METRICS[at_lr["task_name"].iloc[0]]
        depths = sorted(int(c[len(prefix):]) for c in at_lr if c.startswith(prefix) and c[len(prefix):].isdigit())
        for depth in depths:
            acc = pd.to_numeric(at_lr[f"{prefix}{depth}"], errors="coerce").dropna()
            if len(acc):
                rows.append({**dict(zip(keys, key)), "depth": depth, "acc": acc.mean(),
                             "spread": acc.std(), "seeds": len(acc), "variant": plots.variant_label(key[4], key[5])})
    return pd.DataFrame(rows, columns=columns)


def cmd_depth(args: argparse.Namespace) -> int:
    table = depth_table(_runs(args))
    if table.empty:
        print("playground-report: no finished Brevo or Depo run with accuracy by depth", file=sys.stderr)
        return 1
    out = _out(args)
    atomic_write(out / "depth.csv", table.to_csv(index=False).encode())
    for (panel, row, size), block in table.groupby(["panel", "row", "size"]):
        axis = "k (hops)" if block["panel"].iloc[0].startswith("depo") else "dependency depth"
        fig = plots.bars_figure(block, "depth", "variant", "acc", f"{panel} {row} {size}: accuracy by {axis}",
                                "accuracy (%)")
        save_figure(fig, out / f"depth_{panel}_{row.replace('=', '')}_{size}.png")
    print(f"wrote {out}/depth.csv and figures ({len(table)} bars)")
    return 0


def cmd_bars(args: argparse.Namespace) -> int:
    cells = aggregate.cells(aggregate.annotate(_runs(args)), "mean")
    cells = cells[cells["status"] == "finished"].copy()
    cells["variant"] = [plots.variant_label(a, c) for a, c in zip(cells["architecture"], cells["canon"])]
    out = _out(args)
    atomic_write(out / "bars.csv", cells.to_csv(index=False).encode())
    for (panel, row), block in cells.groupby(["panel", "row"]):
        fig = plots.bars_figure(block, "size", "variant", "value", f"{panel} {row}", "accuracy (%)")
        save_figure(fig, out / f"bars_{panel}_{row.replace('=', '')}.png")
    print(cells[["panel", "row", "size", "variant", "value", "spread", "seeds"]].to_string(index=False))
    return 0


def cmd_table(args: argparse.Namespace) -> int:
    frame = aggregate.annotate(_runs(args))
    cols = [c for c in ("run", "status", "panel", "row", "size", "architecture", "canon", "lr", "seed",
                        "value", "value2", "error") if c in frame]
    print(frame[cols].to_string(index=False))
    metrics = sorted(c for c in frame if c.startswith("metrics."))
    extra = [c for c in ("step", "final_loss", "tokens_per_s", "wall_time_s", "params.total") if c in frame]
    out = _out(args)
    atomic_write(out / "runs.csv", frame[cols + metrics + extra].to_csv(index=False).encode())
    print(f"wrote {out / 'runs.csv'} (every metric of every run)")
    return 0


def cmd_capo(args: argparse.Namespace) -> int:
    table = capo_table(_runs(args))
    if table.empty:
        print(f"playground-report: no finished Capo run under {args.results}", file=sys.stderr)
        return 1
    out = _out(args)
    atomic_write(out / "capo_bits.csv", table.to_csv(index=False).encode())
    save_figure(plot_capo(table), out / "capo_bits.png")
    dropped = int((table["bits"] <= 0).sum())
    print(table.to_string(index=False))
    print(f"wrote {out / 'capo_bits.png'}, .svg and .csv ({len(table)} runs"
          + (f"; {dropped} with bits <= 0 are in the CSV only)" if dropped else ")"))
    return 0


COMMANDS = {
    "heatmap": (cmd_heatmap, "3×4 heatmaps per task panel and variant (best over lr and seeds)"),
    "curves": (cmd_curves, "accuracy per k over training steps (Figure 8/16 style)"),
    "depth": (cmd_depth, "accuracy by Brevo dependency depth or Depo hop count k, mean ± spread over seeds"),
    "bars": (cmd_bars, "accuracy by size and variant, mean ± spread over seeds (MQAR)"),
    "capo": (cmd_capo, "learned bits vs parameters (Capo capacity), one series per N"),
    "table": (cmd_table, "every run, one line each (and runs.csv with all its metrics)"),
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="playground-report", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (func, help_text) in COMMANDS.items():
        cmd = sub.add_parser(name, help=help_text)
        cmd.add_argument("results", help="a folder of run directories (searched at any depth)")
        cmd.add_argument("--out", help="output folder (default: RESULTS/report)")
        cmd.set_defaults(func=func)
        if name == "heatmap":
            cmd.add_argument("--agg", choices=("best", "mean"), default="best",
                             help="best run over lr and seeds (the paper), or best lr by the seed mean")
            cmd.add_argument("--vs-paper", type=int, metavar="FIG",
                             help="also compare with the paper's Figure FIG (results/paper/heatmaps.csv)")
            cmd.add_argument("--metric", metavar="NAME",
                             help="show this metric instead of the paper's (kl, acc_k1, final_loss…; "
                                  "kl and losses: lower is better); outputs get the suffix _NAME")
        if name == "curves":
            cmd.add_argument("--match", default="", help="only runs whose path contains this text")
            cmd.add_argument("--limit", type=int, default=12, help="at most this many runs")
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
    except ConfigError as err:  # a bad argument found in the runs (e.g. --metric no run records)
        print(f"playground-report: {err}", file=sys.stderr)
        code = 2
    raise SystemExit(code)


if __name__ == "__main__":
    main()
