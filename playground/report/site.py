"""``playground-report site``: a static results browser built from run directories.

The site is plain files that open from ``index.html`` without a server or network: one HTML
page per (sweep, panel), an index with a thumbnail of each panel's heatmap (matplotlib SVG,
``plots.heatmap_figure``), and the two shared assets of ``playground/report/site/``
(``app.js``, ``style.css``). Each page carries its data as JSON inside the page (a
``<script type="application/json" id="site-data">`` element: browsers refuse ``fetch`` on
``file://``), and ``app.js`` draws from it: the heatmaps of every recorded metric, ours beside
the paper's and the difference, the runs of a clicked cell (lr and seed, loss and eval curves,
config.yaml, status and error, wall time and tokens/s), filters and a two-variant comparison.
With a findings file (``findings=``, e.g. ``sweeps/findings.yaml``) also ``findings.html``: the
verdict of every finding cell (``playground.report.findings``, the report's own numbers) grouped by
the paper's result, each side linked to the panel page of its runs, under the forest figure.

All numbers shown are formed here, by the report's own code: cells by ``cells.cells``, the
comparison with the paper by ``cells.versus_paper``, cell texts by ``plots.cell_text``. NaN and
infinities are written as ``null`` (never as a number), and every file is written through
``playground.cli.atomic_write``. Links are relative, so the output folder can be published as is.
"""

from __future__ import annotations

import html
import json
import math
import re
from importlib.resources import files
from pathlib import Path

import numpy as np
import pandas as pd
from omegaconf import OmegaConf

from playground.cli import atomic_write, json_safe
from playground.errors import ConfigError
from playground.report import cells as aggregate
from playground.report import plots
from playground.report.table import check_integrity, flatten, load_runs, run_dirs
from playground.run.rundir import MetricsLog, record_of

ASSETS = ("app.js", "style.css")
MAX_POINTS = 400  # curve points kept per series (evenly thinned; the last point always kept)
DEFAULT = ""  # the metric key of "the task's own metric(s)" (cells.annotate with metric=None)


# -- reading ---------------------------------------------------------------------------------


def _pending_rows(root: Path) -> list[dict]:
    """Run directories that have a config.yaml but no summary.json yet (a run that has not
    started its loop): rows with status ``pending`` and the record derived from the config."""
    rows = []
    with_summary = set(run_dirs(root))
    for config_path in sorted(root.rglob("config.yaml")):
        d = config_path.parent
        if d in with_summary or "checkpoints" in d.parts or ".hydra" in d.parts:
            continue
        try:
            config = OmegaConf.to_container(OmegaConf.load(config_path))
            record = record_of({}, config) or {}
        except Exception:  # noqa: BLE001 - a config we cannot read is not a run we can place
            continue
        row = {"status": "pending", "error": "no summary.json yet (not started or just starting)"}
        row.update(flatten(record, "record."))
        row.update(size=record.get("size", {}).get("label"), lr=record.get("lr"),
                   seed=record.get("seed"))
        row["run_dir"], row["run"] = str(d), str(d.relative_to(root)) if d != root else d.name
        rows.append(row)
    return rows


def read_results(roots: list[Path]) -> tuple[pd.DataFrame, list[str]]:
    """Every run under ``roots`` (finished, failed, running, and config-only ones as pending)
    as one ``load_runs``-style table with a ``sweep`` column (the record's sweep name, else the
    folder's name) and ``run`` made unique across folders; also the messages of refused runs."""
    frames, refused = [], []
    for root in roots:
        frame = pd.concat([load_runs(root), pd.DataFrame(_pending_rows(root))], ignore_index=True)
        if frame.empty:
            continue
        frame, bad = check_integrity(frame)
        refused += bad
        frame = frame.copy()
        frame["run"] = [f"{root.name}/{r}" for r in frame["run"]]
        names = (frame["record.sweep.name"] if "record.sweep.name" in frame
                 else pd.Series(None, index=frame.index))
        frame["sweep"] = [n if isinstance(n, str) and n else root.name for n in names]
        frames.append(frame)
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()), refused


# -- values ----------------------------------------------------------------------------------


def _num(value) -> float | None:
    """A finite float, or None (NaN, inf, missing, not a number)."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _text(value) -> str | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def slug(*parts: str) -> str:
    """A file-name-safe name for a page (letters, digits, ``-``, ``_``, ``.``)."""
    return "__".join(re.sub(r"[^A-Za-z0-9_.-]+", "-", str(p)).strip("-") or "x" for p in parts)


def metric_names(frame: pd.DataFrame) -> list[str]:
    """The metrics the runs of ``frame`` record (``metrics.*`` with a value, and final_loss)."""
    names = sorted(c.split(".", 1)[1] for c in frame
                   if c.startswith("metrics.") and frame[c].notna().any())
    return names + (["final_loss"]
                    if "final_loss" in frame and frame["final_loss"].notna().any() else [])


def _shades(cells: pd.DataFrame, percent: bool, lower: bool) -> list[float | None]:
    """Each cell's shade in [0, 1], as ``plots.heatmap_figure`` shades (``plots.value_scale``:
    accuracy is its own shade; another metric spans the panel's worst to best value, on a log
    scale where that is wide)."""
    done = [_num(v) for s, v in zip(cells["status"], cells["value"]) if s == "finished"]
    scale = plots.value_scale([v for v in done if v is not None], percent)
    out = []
    for status, value in zip(cells["status"], cells["value"]):
        value = _num(value)
        out.append(None if status != "finished" or value is None
                   else float(plots.shade_of(value, scale, lower)))
    return out


def panel_cells(frame: pd.DataFrame, metric: str) -> list[dict]:
    """The cells of one panel for ``metric`` (DEFAULT: the task's own), best run over lr and
    seeds (``cells.cells``), as JSON-ready dicts with the text ``plots.cell_text`` gives."""
    lower, percent = aggregate.lower_is_better(metric), aggregate.is_accuracy(metric)
    block = aggregate.cells(aggregate.annotate(frame, metric or None), "best", lower)
    out = []
    for (_, c), shade in zip(block.iterrows(), _shades(block, percent, lower)):
        value, value2, spread = _num(c["value"]), _num(c.get("value2")), _num(c.get("spread"))
        text = plots.cell_text(value if value is not None else np.nan,
                               value2 if value2 is not None else np.nan, c["status"], percent)
        seeds = int(c["seeds"]) if _num(c.get("seeds")) is not None else 0
        if c["status"] == "finished" and seeds > 1 and spread is not None:
            text += f" ± {100 * spread:.1f}" if percent else f" ± {spread:#.2g}"
        out.append({"variant": f"{c['architecture']}|{c['canon']}", "row": c["row"],
                    "size": c["size"], "status": c["status"], "value": value, "value2": value2,
                    "spread": spread, "seeds": seeds, "lr": _num(c.get("lr")),
                    "best_run": _text(c.get("best_run")), "text": text, "shade": shade,
                    "n_runs": int(c["n_runs"]), "n_failed": int(c["n_failed"]),
                    "n_pending": int(c["n_pending"]), "failures": _text(c.get("failures")) or ""})
    return out


def paper_comparison(frame: pd.DataFrame, panel: str) -> list[dict]:
    """Ours beside the paper's cells for every figure that has this panel and one of our
    variants (``cells.versus_paper``), with the difference in percentage points."""
    ours = aggregate.cells(aggregate.annotate(frame), "best")
    ref = aggregate.paper_cells()
    have = set(zip(ours["architecture"], ours["canon"]))
    out = []
    for figure in sorted(ref.loc[ref["panel"] == panel, "figure"].unique()):
        versus = aggregate.versus_paper(ours, int(figure))
        versus = versus[versus["panel"] == panel]
        versus = versus[[v in have for v in zip(versus["architecture"], versus["canon"])]]
        for _, c in versus.iterrows():
            diff = _num(c["diff"])
            out.append({"figure": int(figure), "variant": f"{c['architecture']}|{c['canon']}",
                        "row_index": int(c["row_index"]), "row_paper": c["row_paper"],
                        "row": _text(c["row_ours"]), "size": c["size"], "status": c["status"],
                        "paper": plots.cell_text(c["value_paper"], c["value2_paper"], "finished"),
                        "paper_value": _num(c["value_paper"]),
                        "ours": plots.cell_text(c["value_ours"], c["value2_ours"], c["status"]),
                        "ours_value": _num(c["value_ours"]),
                        "diff": None if diff is None else f"{100 * diff:+.0f}", "diff_value": diff})
    return out


def _thin(rows: list[dict]) -> list[dict]:
    if len(rows) <= MAX_POINTS:
        return rows
    keep = sorted(set(np.linspace(0, len(rows) - 1, MAX_POINTS).round().astype(int).tolist()))
    return [rows[i] for i in keep]


def run_detail(run: pd.Series) -> dict:
    """What the page shows of one run: status and error, lr and seed, wall time, tokens/s,
    final metrics, the loss and eval curves (metrics.jsonl) and the resolved config.yaml."""
    d = Path(run["run_dir"])
    log = MetricsLog(d / "metrics.jsonl").records()
    train = _thin([r for r in log if r.get("split") == "train" and _num(r.get("loss")) is not None])
    evals = _thin([r for r in log if r.get("split") == "eval"])
    eval_names = sorted({k for r in evals for k, v in r.items()
                         if k not in ("split", "step") and isinstance(v, (int, float))
                                                 and not isinstance(v, bool)})
    depth = run.get("record.task.depth_metric")
    family = [n for n in eval_names
              if isinstance(depth, str) and n.startswith(depth) and n[len(depth):].isdigit()]
    family.sort(key=lambda n: int(n[len(depth):]))
    metrics = {c.split(".", 1)[1]: _num(run[c]) for c in run.index if c.startswith("metrics.")}
    config = d / "config.yaml"
    return {
        "run": run["run"], "status": str(run.get("status")), "error": _text(run.get("error")) or "",
        "lr": _num(run.get("lr")), "seed": _num(run.get("seed")), "value": _num(run.get("value")),
        "wall_time_s": _num(run.get("wall_time_s")), "tokens_per_s": _num(run.get("tokens_per_s")),
        "step": _num(run.get("step")), "steps": _num(run.get("steps")),
        "params": _num(run.get("params.total")),
        "metrics": {k: v for k, v in metrics.items() if v is not None},
        "loss": [[_num(r["step"]), _num(r["loss"])] for r in train],
        "eval": {n: [[_num(r.get("step")), _num(r.get(n))] for r in evals
                     if _num(r.get(n)) is not None]
                 for n in eval_names},
        "depth_family": family,
        "config": config.read_text() if config.exists() else "(no config.yaml)",
    }


def panel_data(sweep: str, panel: str, frame: pd.DataFrame) -> dict:
    """Everything one panel page shows, JSON-ready."""
    annotated = aggregate.annotate(frame)
    sizes = sorted(annotated["size"].dropna().unique(), key=aggregate.size_order)
    rows = list(annotated.sort_values("row_index")["row"].drop_duplicates())
    variants = aggregate.variant_order(annotated)
    stated = [m for m in (annotated.get("record.task.metric"), annotated.get("record.task.metric2"))
              if m is not None]
    stated = " / ".join(str(m.dropna().iloc[0]) for m in stated if m.notna().any())
    metrics = [{"name": DEFAULT, "label": f"task metric ({stated or 'primary'})", "percent": True,
                "lower": False}]
    metrics += [{"name": m, "label": m, "percent": aggregate.is_accuracy(m),
                 "lower": aggregate.lower_is_better(m)}
                for m in metric_names(frame)]
    members: dict[str, list[str]] = {}
    for key, group in annotated.groupby(["architecture", "canon", "row", "size"]):
        members["|".join(map(str, key))] = list(group.sort_values(["lr", "seed"])["run"])
    return {
        "page": "panel", "sweep": sweep, "panel": panel, "rows": rows, "sizes": sizes,
        "family": str(annotated["record.task.family"].dropna().iloc[0])
                  if annotated["record.task.family"].notna().any() else "",
        "variants": [{"id": f"{a}|{c}", "architecture": a, "canon": c,
                      "label": plots.variant_label(a, c)}
                     for a, c in variants],
        "metrics": metrics,
        "cells": {m["name"]: panel_cells(frame, m["name"]) for m in metrics},
        "members": members,
        "paper": paper_comparison(frame, panel),
        "runs": {r["run"]: run_detail(r) for _, r in annotated.iterrows()},
    }


# -- writing ---------------------------------------------------------------------------------


def _json_for_html(obj) -> str:
    """JSON that is safe inside a <script> element and never holds NaN (``allow_nan=False``)."""
    text = json.dumps(json_safe(obj), allow_nan=False, sort_keys=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def page(title: str, body: str, data: dict) -> bytes:
    """One HTML page: the shared stylesheet and script, ``body``, and ``data`` for app.js."""
    return (f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<link rel="stylesheet" href="style.css">
</head>
<body>
{body}
<script type="application/json" id="site-data">{_json_for_html(data)}</script>
<script src="app.js"></script>
</body>
</html>
""").encode()


def svg(fig) -> bytes:
    """``fig`` as SVG (``plots.figure_bytes``), then closed."""
    import matplotlib.pyplot as plt

    data = plots.figure_bytes(fig, "svg")
    plt.close(fig)
    return data


def thumbnail(frame: pd.DataFrame, title: str) -> bytes:
    """The panel's heatmaps of its task metric, drawn by ``plots.heatmap_figure`` as SVG."""
    block = aggregate.cells(aggregate.annotate(frame), "best")
    return svg(plots.heatmap_figure(block, title))


def _filters(options: dict[str, list[str]]) -> str:
    parts = ['<div class="filters">']
    for key, values in options.items():
        choices = "".join(f'<option value="{html.escape(v)}">{html.escape(v)}</option>'
                          for v in values)
        parts.append(f'<label>{key} <select data-filter="{key}">'
                     f'<option value="">all</option>{choices}</select></label>')
    return "".join(parts) + "</div>"


def index_page(panels: list[dict], refused: list[str], unplaced: list[str],
               findings: str = "") -> bytes:
    """The index: sweeps, each with its panels (thumbnail, counts), and the filters; a link to
    the findings page with its verdict counts (``findings``) where the site has one."""
    opts = {k: sorted({v for p in panels for v in p[k]}) for k in ("task", "backbone", "canon")}
    body = ["<header><h1>Results</h1><p>Sweeps and heatmap panels; click a panel for its heatmaps "
            "and runs.</p></header>", _filters(opts)]
    if findings:
        body.insert(1, f'<p class="findings-link"><a href="findings.html">Findings</a>: '
                       f'{html.escape(findings)}</p>')
    for sweep in sorted({p["sweep"] for p in panels}):
        body.append(f'<section class="sweep"><h2>{html.escape(sweep)}</h2><div class="cards">')
        for p in (p for p in panels if p["sweep"] == sweep):
            attrs = " ".join(f'data-{k}="{html.escape(",".join(p[k]))}"'
                             for k in ("task", "backbone", "canon"))
            counts = ", ".join(f"{n} {s}" for s, n in p["counts"].items() if n)
            body.append(f'<a class="card" href="{p["href"]}" {attrs}><img src="{p["thumb"]}" '
                        f'alt="heatmaps of {html.escape(p["panel"])}">'
                        f'<span class="name">{html.escape(p["panel"])}</span>'
                        f'<span class="counts">{html.escape(counts)}</span></a>')
        body.append("</div></section>")
    for title, items in (("Refused runs (config does not match its record)", refused),
                         ("Runs without a panel (no readable record)", unplaced)):
        if items:
            body.append(f"<section><h2>{title}</h2><ul>"
                        + "".join(f"<li>{html.escape(str(i))}</li>" for i in items)
                        + "</ul></section>")
    return page("Results", "\n".join(body), {"page": "index"})


PANEL_BODY = """<header><a href="index.html">&larr; all panels</a><h1>{title}</h1></header>
<div class="controls">
<label>metric <select id="metric"></select></label>
<label>backbone <select id="f-backbone"><option value="">all</option></select></label>
<label>Canon <select id="f-canon"><option value="">all</option></select></label>
</div>
<section><h2>Heatmaps</h2><p class="hint">\
Best run over learning rates and seeds; click a cell for its runs.</p>
<div id="heatmaps"></div></section>
<section id="cell"><h2>Cell</h2><p class="hint">No cell selected.</p></section>
<section id="paper-section"><h2>Ours vs the paper</h2><div id="paper"></div></section>
<section><h2>Compare two variants</h2>
<div class="controls"><label>A <select id="cmp-a"></select></label>
<label>B <select id="cmp-b"></select></label></div><div id="compare"></div></section>"""


def build(roots: list[Path], out: Path, findings: Path | None = None) -> dict:
    """Build the site from the run directories under ``roots`` into ``out`` (with ``findings``,
    a findings file, also its findings page); return counts. Every input is checked
    (ConfigError naming it) before anything is written."""
    from playground.report import findings as fnd
    from playground.report.findings_page import counts_text, findings_body

    for root in roots:
        if not root.is_dir():
            raise ConfigError(f"RESULTS={root} is invalid: expected a folder of run directories")
    if out.exists() and not out.is_dir():
        raise ConfigError(f"out={out} is invalid: it is a file, expected a folder")
    if findings is not None and not findings.is_file():
        raise ConfigError(f"findings={findings} is invalid: no such file (a findings file, e.g. "
                          "sweeps/findings.yaml)")
    spec = fnd.load_findings(findings) if findings is not None else []
    frame, refused = read_results(roots)
    if frame.empty:
        raise ConfigError(f"RESULTS={','.join(map(str, roots))} is invalid: no run directory "
                          "(summary.json or config.yaml) under it")
    placed = (frame["record.task.panel"].notna() if "record.task.panel" in frame
              else pd.Series(False, frame.index))
    unplaced = sorted(frame.loc[~placed, "run"])
    if not placed.any():
        raise ConfigError(f"RESULTS={','.join(map(str, roots))} is invalid: "
                          "no run has a readable record")
    table = fnd.evaluate(spec, frame) if spec else None  # before the panel filter: every run
    pages = []
    for (sweep, panel), block in frame[placed].groupby(["sweep", "record.task.panel"], sort=True):
        data = panel_data(sweep, panel, block)
        name = slug(sweep, panel)
        atomic_write(out / f"{name}.html", page(f"{sweep}: {panel}", PANEL_BODY.format(
            title=html.escape(f"{sweep}: {panel}")), data))
        atomic_write(out / "img" / f"{name}.svg", thumbnail(block, f"{panel} ({sweep})"))
        annotated = aggregate.annotate(block)
        counts = {s: int(n) for s, n in annotated["status"].value_counts().items()}
        pages.append({"sweep": sweep, "panel": panel, "href": f"{name}.html",
                      "thumb": f"img/{name}.svg",
                      "task": sorted({data["family"]} - {""}), "counts": counts,
                      "backbone": sorted(set(annotated["architecture"])),
                      "canon": sorted(set(annotated["canon"]))})
    if table is not None:
        atomic_write(out / "img" / "findings_forest.svg", svg(fnd.forest(spec, table)))
        links = {p["href"] for p in pages}

        def href(side, panel: str) -> str | None:  # the page of a side's runs at a panel
            link = f"{slug(side.folder, panel)}.html"
            return link if link in links else None

        atomic_write(out / "findings.html", page("Findings", findings_body(table, spec, href),
                                                 {"page": "findings"}))
    atomic_write(out / "index.html", index_page(pages, refused, unplaced,
                                                counts_text(table) if table is not None else ""))
    assets = files("playground.report") / "site"
    for asset in ASSETS:
        atomic_write(out / asset, (assets / asset).read_bytes())
    return {"panels": len(pages), "runs": int(placed.sum()), "refused": len(refused),
            "unplaced": len(unplaced), "findings": 0 if table is None else len(table)}

