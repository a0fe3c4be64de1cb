"""Figures of ``playground-report``: 3×4 heatmaps in the paper's layout, paper-vs-ours panels,
training curves, Brevo accuracy by depth, MQAR bars, Capo bits. Matplotlib (Agg) only."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import LinearSegmentedColormap  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from playground.cli import atomic_write  # noqa: E402
from playground.report.cells import size_order  # noqa: E402

# white (0%) → deep green (100%), like the paper's accuracy heatmaps
CMAP = LinearSegmentedColormap.from_list("acc", ["#ffffff", "#c7e9c0", "#41ab5d", "#005a32"])
FAILED = "#bdbdbd"


def save_figure(fig: Figure, path: Path) -> None:
    """PNG and SVG, both byte-identical for the same figure (no date, fixed SVG id salt)."""
    for fmt in ("png", "svg"):
        buf = io.BytesIO()
        with matplotlib.rc_context({"svg.hashsalt": "canon-playground"}):
            fig.savefig(buf, format=fmt, dpi=200, bbox_inches="tight",
                        metadata={"Date": None} if fmt == "svg" else None)
        atomic_write(path.with_suffix(f".{fmt}"), buf.getvalue())


def cell_text(value: float, value2: float, status: str, percent: bool = True) -> str:
    """The paper's cell format: ``x.x%``, or ``acc(K)/acc(K/2)%`` where the task states a
    second metric (Depo); a metric that is not an accuracy (``percent=False``: KL, a loss) with
    3 significant digits."""
    if status in ("failed", "pending"):
        return status
    if status != "finished" or np.isnan(value):
        return "—"
    if percent and not np.isnan(value2):
        return f"{100 * value:.0f}/{100 * value2:.0f}%"
    return f"{100 * value:.1f}%" if percent else f"{value:#.3g}"


ARCH_NAMES = {"llama_rope": "Llama(RoPE)", "llama_nope": "Llama(NoPE)", "llama_rope_quarter": "Llama(RoPE¼)",
              "llama_rope0.5": "Llama(RoPE½)", "llama_alibi": "Llama(ALiBi)", "llama_hard_alibi": "Llama(Hard-ALiBi)",
              "gla": "GLA", "gdn": "GDN", "mamba2": "Mamba2", "mamba2_mlp": "Mamba2-MLP"}


def canon_label(canon: str) -> str:
    """``abcd_res`` -> ``Canon-ABCD(res)``, ``ab_nores`` -> ``Canon-AB(no-res)``; conv names stay."""
    parts = canon.split("_")
    if canon in ("none", "conv1d", "noconv1d") or parts[0].strip("abcd"):
        return canon
    extra = "".join(f", {p}" for p in parts[2:])
    return f"Canon-{parts[0].upper()}({'no-res' if parts[1] == 'nores' else 'res'}{extra})"


def variant_label(architecture: str, canon: str) -> str:
    arch = ARCH_NAMES.get(architecture, architecture)
    return arch if canon == "none" else f"{arch} + {canon_label(canon)}"


def _grid(block: pd.DataFrame, rows: list[str], sizes: list[str], percent: bool = True):
    values = np.full((len(rows), len(sizes)), np.nan)
    texts = [["—"] * len(sizes) for _ in rows]
    for _, c in block.iterrows():
        i, j = rows.index(c["row"]), sizes.index(c["size"])
        values[i, j] = c["value"] if c["status"] == "finished" else np.nan
        texts[i][j] = cell_text(c["value"], c.get("value2", np.nan), c["status"], percent)
    return values, texts


def _draw(ax, values, texts, rows, sizes, title: str) -> None:
    """``values`` are shades in [0, 1] (an accuracy is its own shade); NaN is white."""
    ax.imshow(np.nan_to_num(values, nan=0.0), cmap=CMAP, vmin=0.0, vmax=1.0, aspect="auto")
    for i in range(len(rows)):
        for j in range(len(sizes)):
            text = texts[i][j]
            if text == "failed":
                ax.add_patch(matplotlib.patches.Rectangle((j - 0.5, i - 0.5), 1, 1, color=FAILED))
            dark = not np.isnan(values[i, j]) and values[i, j] > 0.6
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color="white" if dark else "black")
    ax.set_xticks(range(len(sizes)), sizes, fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.tick_params(length=0)


def heatmap_figure(panel_cells: pd.DataFrame, title: str, percent: bool = True, lower: bool = False) -> Figure:
    """One panel (task): a 3×4 heatmap per variant, side by side (rows: difficulty, columns:
    model size), cells in the paper's format; failed cells grey, missing ones '—'. Accuracies
    shade from 0 to 100 %; another metric (``percent=False``) from the panel's worst value to
    its best (the lowest with ``lower``), on one scale for all variants."""
    sizes = sorted(panel_cells["size"].unique(), key=size_order)
    rows = list(panel_cells.sort_values("row_index")["row"].unique())
    variants = sorted(dict.fromkeys(zip(panel_cells["architecture"], panel_cells["canon"])),
                      key=lambda v: (v[0], v[1] != "none", v[1]))
    done = panel_cells.loc[panel_cells["status"] == "finished", "value"].astype(float)
    lo, hi = (0.0, 1.0) if percent or done.empty else (done.min(), done.max())
    fig = Figure(figsize=(0.35 + 3.3 * len(variants) * max(len(sizes), 2) / 4, 0.9 + 0.42 * len(rows)))
    axes = fig.subplots(1, len(variants), squeeze=False)[0]
    for ax, (arch, canon) in zip(axes, variants):
        block = panel_cells[(panel_cells["architecture"] == arch) & (panel_cells["canon"] == canon)]
        values, texts = _grid(block, rows, sizes, percent)
        shade = (values - lo) / (hi - lo) if hi > lo else np.where(np.isnan(values), np.nan, 0.5)
        _draw(ax, 1.0 - shade if lower else shade, texts, rows, sizes, variant_label(arch, canon))
    for ax in axes[1:]:
        ax.set_yticklabels([])
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def versus_figure(table: pd.DataFrame, title: str) -> Figure:
    """Per variant: ours | paper | ours − paper (percentage points), 3×4 each."""
    variants = list(dict.fromkeys(zip(table["architecture"], table["canon"])))
    fig = Figure(figsize=(10.5, 1.1 + 1.45 * len(variants)))
    axes = fig.subplots(len(variants), 3, squeeze=False)
    for r, (arch, canon) in enumerate(variants):
        block = table[(table["architecture"] == arch) & (table["canon"] == canon)]
        rows = list(block.sort_values("row_index")["row_paper"].unique())
        sizes = sorted(block["size"].unique(), key=size_order)
        grids = {k: np.full((len(rows), len(sizes)), np.nan) for k in ("ours", "paper")}
        texts = {k: [["—"] * len(sizes) for _ in rows] for k in ("ours", "paper", "diff")}
        for _, c in block.iterrows():
            i, j = rows.index(c["row_paper"]), sizes.index(c["size"])
            grids["paper"][i, j] = c["value_paper"]
            texts["paper"][i][j] = cell_text(c["value_paper"], c["value2_paper"], "finished")
            grids["ours"][i, j] = c["value_ours"]
            texts["ours"][i][j] = cell_text(c["value_ours"], c["value2_ours"], c["status"])
            if not np.isnan(c["diff"]):
                texts["diff"][i][j] = f"{100 * c['diff']:+.0f}"
        label = variant_label(arch, canon)
        _draw(axes[r, 0], grids["ours"], texts["ours"], rows, sizes, f"ours: {label}")
        _draw(axes[r, 1], grids["paper"], texts["paper"], rows, sizes, f"paper: {label}")
        _draw(axes[r, 2], np.abs(grids["ours"] - grids["paper"]), texts["diff"], rows, sizes, "ours − paper (pp)")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


# the per-depth accuracies a task logs (Depo's hop count k, Brevo's dependency depth, Mano's
# expression length l) and how a curve of each is labelled
PER_DEPTH = {"acc_k": "k={}", "acc_depth": "depth {}", "acc_l": "l={}"}


def curves_figure(records: dict[str, pd.DataFrame]) -> Figure:
    """Accuracy per depth over training steps (k for Depo, dependency depth for Brevo, l for
    Mano), one subplot per run (the paper's Figure 8/16 style)."""
    fig = Figure(figsize=(4.2 * min(len(records), 3), 3.2 * ((len(records) + 2) // 3)))
    axes = fig.subplots((len(records) + 2) // 3, min(len(records), 3), squeeze=False).ravel()
    for ax, (name, evals) in zip(axes, records.items()):
        for prefix in PER_DEPTH:
            cols = sorted((c for c in evals if c.startswith(prefix) and c[len(prefix):].isdigit()),
                          key=lambda c: int(c[len(prefix):]))
            if cols:
                break
        for col in cols:
            ax.plot(evals["step"], 100 * evals[col], label=PER_DEPTH[prefix].format(col[len(prefix):]))
        ax.set_title(name, fontsize=8)
        ax.set_xlabel("step", fontsize=8)
        ax.set_ylabel("accuracy (%)", fontsize=8)
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
    for ax in axes[len(records):]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig


def bars_figure(table: pd.DataFrame, x: str, group: str, value: str, title: str, ylabel: str,
                percent: bool = True) -> Figure:
    """Grouped bars of ``value`` by ``x`` (e.g. Brevo depth, MQAR width) and ``group`` (variant),
    with the seed spread as error bars when present; ``percent``: a fraction shown in %, on 0–105."""
    xs = sorted(dict.fromkeys(table[x]), key=size_order)
    groups = sorted(dict.fromkeys(table[group]), key=lambda name: (len(str(name)), str(name)))  # baseline first
    rows = -(-len(groups) // 2)
    fig = Figure(figsize=(1.4 + 0.9 * len(xs) * max(1, len(groups) / 2), 3.0 + 0.22 * rows))
    ax = fig.add_subplot()
    width = 0.8 / max(len(groups), 1)
    scale = 100 if percent else 1
    for g, name in enumerate(groups):
        part = table[table[group] == name].set_index(x).reindex(xs)
        err = part["spread"] * scale if "spread" in part else None
        ax.bar(np.arange(len(xs)) + (g - (len(groups) - 1) / 2) * width, scale * part[value], width,
               yerr=err, label=str(name), capsize=2)
    ax.set_xticks(range(len(xs)), [str(v) for v in xs], fontsize=8)
    ax.set_ylabel(ylabel)
    if percent:
        ax.set_ylim(0, 105)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


CAPO_REFERENCE = (2.0, 1.0, 0.5, 0.25)  # bits per parameter: the paper's reference lines


def _series(table: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """One series per N; E and architecture join the label only where they vary."""
    keys = ["N"] + [k for k in ("E", "arch") if table[k].nunique() > 1]
    out = []
    for values, group in table.groupby(keys, sort=True):
        values = values if isinstance(values, tuple) else (values,)
        parts = [f"N={int(v):,}" if k == "N" else f"E={int(v)}" if k == "E" else str(v)
                 for k, v in zip(keys, values)]
        out.append((", ".join(parts), group.sort_values("params")))
    return out


def plot_capo(table: pd.DataFrame) -> Figure:
    """Learned bits vs parameters, log-log, one series per N (with a dotted line at its upper
    bound), and the 2 / 1 / 0.5 / 0.25 bits-per-parameter reference lines. Points with bits <= 0 cannot sit on a log axis and are
    left out of the figure (they stay in the CSV)."""
    fig = Figure(figsize=(6.4, 4.8))
    ax = fig.add_subplot()
    shown = table[table["bits"] > 0]
    lo, hi = (shown["params"].min() / 2, shown["params"].max() * 2) if not shown.empty else (1, 2)
    for label, group in _series(shown) if not shown.empty else []:
        (line,) = ax.plot(group["params"], group["bits"], marker="o", label=label, gid=f"series:{label}")
        upper = group["bits_upper"].max()  # all the knowledge in the data: a dotted ceiling
        ax.plot([lo, hi], [upper, upper], ls=":", lw=1, color=line.get_color(), gid=f"upper:{label}")
    if not shown.empty:
        for c in CAPO_REFERENCE:
            ax.plot([lo, hi], [c * lo, c * hi], ls="--", lw=0.8, color="0.6", gid=f"ref:{c:g}")
            ax.annotate(f"{c:g} bit/param", (hi, c * hi), fontsize=7, color="0.4", ha="right",
                        va="bottom")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("parameters (non-embedding + used embedding rows)")
    ax.set_ylabel("learned knowledge (bits)")
    ax.set_title("Capo: knowledge capacity")
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    if not shown.empty:
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def lengthgen_figure(table: pd.DataFrame, title: str, ylabel: str, accuracy: bool = True) -> Figure:
    """``value`` against ``scale`` (× the training context, log 2 axis), one line per variant,
    with the seed spread as error bars when present (``playground-report lengthgen``)."""
    fig = Figure(figsize=(5.0, 3.4))
    ax = fig.add_subplot()
    variants = sorted(dict.fromkeys(table["variant"]), key=lambda name: (len(str(name)), str(name)))
    for name in variants:
        part = table[table["variant"] == name].sort_values("scale")
        ax.errorbar(part["scale"], part["value"], yerr=part["spread"].fillna(0), marker="o", ms=3,
                    capsize=2, label=str(name))
    scales = sorted(table["scale"].unique())
    ax.set_xscale("log", base=2)
    ax.set_xticks(scales, [f"{s:g}×" for s in scales], fontsize=8)
    ax.set_xlabel("eval length (× training context)")
    ax.set_ylabel(ylabel)
    if accuracy:
        ax.set_ylim(-0.02, 1.02)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
