"""Figures of ``playground-report``: 3×4 heatmaps in the paper's layout, paper-vs-ours panels,
training curves, Brevo accuracy by depth, MQAR bars, Capo bits. Matplotlib (Agg) only."""

from __future__ import annotations

import io
import itertools
import re
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.cm import ScalarMappable  # noqa: E402
from matplotlib.colors import LinearSegmentedColormap, LogNorm, Normalize  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from playground.cli import atomic_write  # noqa: E402
from playground.report.cells import size_order, variant_order  # noqa: E402
from playground.report.table import NOT_RUN  # noqa: E402

# white (0%) → deep green (100%), like the paper's accuracy heatmaps
CMAP = LinearSegmentedColormap.from_list("acc", ["#ffffff", "#c7e9c0", "#41ab5d", "#005a32"])
FAILED = "#bdbdbd"
LOG_SPAN = 3.0  # a positive metric whose panel spans this factor or more is shaded on a log scale


def value_scale(done, percent: bool) -> tuple[float, float, bool]:
    """The values a panel's shades span, lowest and highest, and whether on a log scale: an
    accuracy spans 0–1 (its own shade); another metric its finished values ``done``, on a log
    scale where all are positive and the highest is ``LOG_SPAN`` times the lowest or more (a KL
    of one variant far above the rest then leaves the rest their own shades)."""
    done = np.asarray(done, dtype=float)
    done = done[~np.isnan(done)]
    if percent or not done.size:
        return 0.0, 1.0, False
    lo, hi = float(done.min()), float(done.max())
    if hi <= lo:  # one value: the middle shade
        return lo - (abs(lo) or 1) * 0.05, hi + (abs(hi) or 1) * 0.05, False
    return lo, hi, bool(lo > 0 and hi >= LOG_SPAN * lo)


def shade_of(values, scale: tuple[float, float, bool], lower: bool = False):
    """``values`` as shades in [0, 1] on ``scale`` (:func:`value_scale`), NaN kept; the best
    value the darkest (the lowest with ``lower``)."""
    lo, hi, log = scale
    values = np.asarray(values, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        shade = ((np.log(values) - np.log(lo)) / (np.log(hi) - np.log(lo)) if log
                 else (values - lo) / (hi - lo))
    shade = np.clip(shade, 0.0, 1.0)
    return 1.0 - shade if lower else shade


def figure_bytes(fig: Figure, fmt: str, **savefig) -> bytes:
    """``fig`` as ``fmt`` (png, svg), byte-identical for the same figure (no date, a fixed SVG
    id salt); ``savefig``: more of matplotlib's options (``dpi``)."""
    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "canon-playground"}):
        fig.savefig(buf, format=fmt, bbox_inches="tight",
                    metadata={"Date": None} if fmt == "svg" else None, **savefig)
    return buf.getvalue()


def save_figure(fig: Figure, path: Path) -> None:
    """PNG and SVG, both byte-identical for the same figure (:func:`figure_bytes`)."""
    for fmt in ("png", "svg"):
        atomic_write(path.with_suffix(f".{fmt}"), figure_bytes(fig, fmt, dpi=200))


def cell_text(value: float, value2: float, status: str, percent: bool = True) -> str:
    """The paper's cell format: ``x.x%``, or ``acc(K)/acc(K/2)%`` where the task states a
    second metric (Depo); a metric that is not an accuracy (``percent=False``: KL, a loss) with
    3 significant digits."""
    if status in ("failed", "pending", NOT_RUN):
        return status
    if status != "finished" or np.isnan(value):
        return "—"
    if percent and not np.isnan(value2):
        return f"{100 * value:.0f}/{100 * value2:.0f}%"
    return f"{100 * value:.1f}%" if percent else f"{value:#.3g}"


ARCH_NAMES = {"llama_rope": "Llama(RoPE)", "llama_nope": "Llama(NoPE)",
              "llama_rope_quarter": "Llama(RoPE¼)", "llama_rope0.5": "Llama(RoPE½)",
              "llama_alibi": "Llama(ALiBi)", "llama_hard_alibi": "Llama(Hard-ALiBi)",
              "gla": "GLA", "gdn": "GDN", "mamba2": "Mamba2", "mamba2_mlp": "Mamba2-MLP"}


def canon_label(canon: str) -> str:
    """``abcd_res`` -> ``Canon-ABCD(res)``, ``ab_nores`` -> ``Canon-AB(no-res)``,
    ``abcd_nores_initrandom-fixed`` -> ``Canon-ABCD(no-res, init random-fixed)``,
    ``abcd_res_initx4`` -> ``Canon-ABCD(res, init ×4)``, ``abcd_nores_initc+1`` ->
    ``Canon-ABCD(no-res, init current +1)``; conv names stay."""
    parts = canon.split("_")
    if canon in ("none", "conv1d", "noconv1d") or parts[0].strip("abcd"):
        return canon
    extra = "".join(f", {detail_label(p)}" for p in parts[2:])
    return f"Canon-{parts[0].upper()}({'no-res' if parts[1] == 'nores' else 'res'}{extra})"


# a Canon detail's prefix in run names -> its words in legends, the longer prefixes first
DETAIL_WORDS = (("initx", "init ×"), ("initc", "init current "), ("init", "init "))


def detail_label(detail: str) -> str:
    """A Canon detail of a run name as a legend reads it (``initzero`` -> ``init zero``,
    ``initx4`` -> ``init ×4``, ``initc+1`` -> ``init current +1``)."""
    for prefix, words in DETAIL_WORDS:
        if detail.startswith(prefix):
            return words + detail[len(prefix):]
    return detail


def variant_label(architecture: str, canon: str) -> str:
    arch = ARCH_NAMES.get(architecture, architecture)
    return arch if canon == "none" else f"{arch} + {canon_label(canon)}"


NOT_RUN_SHADE = "#ececec"  # a size or row a variant has no run of
ONE_SEED = "///"  # hatch of a cell that rests on one seed (no spread)


def lr_text(lr: float) -> str:
    """A learning rate as the paper writes it: 1e-3, 5e-4, 2.5e-4."""
    mantissa, exponent = f"{float(lr):.2e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def seeds_text(counts) -> str:
    """``2 seeds``, ``1–3 seeds``: the seed counts of some cells."""
    counts = sorted({int(c) for c in counts if not pd.isna(c)})
    if not counts:
        return "no finished run"
    n = str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    return f"{n} seed{'s' if counts[-1] > 1 else ''}"


def lrs_text(lrs) -> str:
    """Learning rates as the paper writes them, ``5e-4, 1e-3``; a dict of size -> rates whose
    sizes ran different ones, by size: ``5e-4, 1e-3 at 8L768D, 12L768D; 1e-3 at 8L512D`` (one
    list where every size ran the same)."""
    lrs = _one_list_if_alike(lrs)
    if not isinstance(lrs, dict):
        return ", ".join(lr_text(lr) for lr in lrs) or "unknown"
    groups: dict[tuple, list[str]] = {}
    for size in sorted(lrs, key=size_order):
        groups.setdefault(tuple(lrs[size]), []).append(size)
    return "; ".join(f"{lrs_text(rates)} at {', '.join(sizes)}"
                     for rates, sizes in sorted(groups.items(), key=lambda g: -len(g[0])))


def _one_list_if_alike(lrs):
    """``lrs`` (a list, or a dict of size -> rates) as one list where every size ran the same."""
    if isinstance(lrs, dict) and len({tuple(rates) for rates in lrs.values()}) <= 1:
        return next(iter(lrs.values()), [])
    return lrs


def describe_cells(cells: pd.DataFrame, agg: str = "best", lrs=None) -> str:
    """What a heatmap cell's value is, with the learning rate(s) run (``lrs``: those of the
    panel's finished runs, a list, or a dict of size -> rates where sizes ran different ones;
    default: the cells' own) and the seed counts: e.g. ``mean over seeds, lr 1e-3; 2 seeds per
    cell``."""
    done = cells[cells["status"] == "finished"]
    if lrs is None:
        lrs = done["lr"] if "lr" in done else []
    if isinstance(lrs, dict):
        lrs = _one_list_if_alike({size: sorted({float(lr) for lr in rates if not pd.isna(lr)})
                                  for size, rates in lrs.items()})
    if not isinstance(lrs, dict):
        lrs = sorted({float(lr) for lr in lrs if not pd.isna(lr)})
    listed = lrs_text(lrs)
    # a cell chose between learning rates when it has finished runs beyond its seeds at one lr
    chose = ("n_finished" in done and "seeds" in done
             and bool((done["n_finished"] > done["seeds"]).any()))
    what = "mean over seeds" if agg == "mean" else "best seed"
    if chose:
        what = ("mean over seeds at each cell's best lr" if agg == "mean"
                else "best run over seeds and lrs") + f" (lrs run: {listed})"
    elif len(lrs) == 1:
        what += f", lr {listed}"
    else:
        what += f", each cell at the one lr it ran (lrs {listed})"
    return f"{what}; {seeds_text(done.get('seeds', []))} per cell"


def _spread_text(value: float, spread: float, percent: bool) -> str:
    if percent:
        return f"±{100 * spread:.1f}"
    digits = max(0, 2 - int(np.floor(np.log10(abs(value))))) if value else 3
    return f"±{spread:.{digits}f}"


def _grid(block: pd.DataFrame, rows: list[str], sizes: list[str], percent: bool = True,
          agg: str = "mean"):
    """Shade values, texts and seed counts of one variant's cells; a (row, size) without a cell
    is "not run". A finished cell's text: its value, then ``±std n=k`` (the mean of k ≥ 2 seeds),
    ``n=1``, or ``best of n=k`` (``agg='best'``)."""
    values = np.full((len(rows), len(sizes)), np.nan)
    seeds = np.full((len(rows), len(sizes)), np.nan)
    texts = [[NOT_RUN] * len(sizes) for _ in rows]
    for _, c in block.iterrows():
        i, j = rows.index(c["row"]), sizes.index(c["size"])
        text = cell_text(c["value"], c.get("value2", np.nan), c["status"], percent)
        if c["status"] == "finished":
            values[i, j] = c["value"]
            n = c.get("seeds", np.nan)
            seeds[i, j] = n
            spread = c.get("spread", np.nan)
            if pd.isna(n):
                pass
            elif agg == "best" and n > 1:
                text += f"\nbest of n={int(n)}"
            elif n > 1 and not pd.isna(spread):
                text += f"\n{_spread_text(c['value'], spread, percent)} n={int(n)}"
            else:
                text += f"\nn={int(n)}"
        texts[i][j] = text
    return values, texts, seeds


def _wrap(text: str, inches: float, fontsize: float = 8) -> str:
    """``text`` broken into lines that fit ``inches`` at ``fontsize`` (about 0.6 em a character)."""
    width = max(8, int(inches * 72 / (0.6 * fontsize)))
    return "\n".join(textwrap.fill(line, width, break_on_hyphens=False)
                     for line in text.split("\n"))


def _draw(ax, values, texts, rows, sizes, title: str, seeds=None) -> None:
    """``values`` are shades in [0, 1] (an accuracy is its own shade); NaN is white. Failed cells
    are grey, cells without a run light grey ("not run"), and cells of one seed (``seeds``)
    hatched."""
    ax.imshow(np.nan_to_num(values, nan=0.0), cmap=CMAP, vmin=0.0, vmax=1.0, aspect="auto")
    for i in range(len(rows)):
        for j in range(len(sizes)):
            text = texts[i][j]
            corner = (j - 0.5, i - 0.5)
            if text == "failed":
                ax.add_patch(Rectangle(corner, 1, 1, color=FAILED, gid="failed"))
            elif text == NOT_RUN:
                ax.add_patch(Rectangle(corner, 1, 1, color=NOT_RUN_SHADE, gid="not-run"))
            one_seed = seeds is not None and seeds[i, j] == 1
            if one_seed:
                ax.add_patch(Rectangle(corner, 1, 1, fill=False, hatch=ONE_SEED, lw=0,
                                       edgecolor="0.6", gid="one-seed"))
            dark = not np.isnan(values[i, j]) and values[i, j] > 0.6
            color = "white" if dark else "0.45" if text == NOT_RUN else "black"
            box = ({"boxstyle": "round,pad=0.2", "lw": 0, "facecolor": CMAP(values[i, j])}
                   if one_seed else None)  # the text stays legible over the hatch
            ax.text(j, i, text, ha="center", va="center", fontsize=7.5, color=color, bbox=box,
                    style="italic" if text == NOT_RUN else "normal", linespacing=1.3)
    ax.set_xticks(range(len(sizes)), sizes, fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.set_title(title, fontsize=8)
    ax.tick_params(length=0)


def _label_bar(bar, label: str) -> None:
    bar.set_label(label, fontsize=8)
    bar.ax.tick_params(labelsize=7)


def depo_caption(panel: str) -> str:
    """How to read a Depo cell (``a/b%``)."""
    k = re.search(r"K(\d+)", str(panel))
    big_k = f"K = {k.group(1)}" if k else "K"
    half = f"K/2 = {int(k.group(1)) // 2}" if k else "K/2"
    return f"a/b% = accuracy at k = {big_k} / accuracy at k = {half} (the shade is a); ± is a's."


def chance_caption(chance: dict, rows: list[str]) -> str:
    """The uniform guess's score (``Task.chance``) of the rows that have one above 0, in
    percent: one figure where the rows share it, else per row."""
    known = [(row, chance[row]) for row in rows if chance.get(row)]
    if not known:
        return ""
    if len({c for _, c in known}) == 1:
        return f"Chance (a uniform guess): {100 * known[0][1]:.3g}%."
    return "Chance (a uniform guess): " + ", ".join(f"{r}: {100 * c:.3g}%" for r, c in known) + "."


def _caption(percent: bool, agg: str, seeds: np.ndarray, extra: str = "") -> str:
    parts = [extra] if extra else []
    if agg == "mean":
        parts.append("Second line: ± one standard deviation over seeds"
                     + (" (percentage points)" if percent else "") + " and n, the seed count.")
    else:
        parts.append("Second line: n, the seeds the best one is chosen from.")
    if (seeds == 1).any():
        parts.append("Hatched: one seed, no spread.")
    return " ".join(parts)


def heatmap_figure(panel_cells: pd.DataFrame, title: str, percent: bool = True, lower: bool = False,
                   agg: str = "best", lrs=None, label: str = "", chance=None) -> Figure:
    """One panel (task): a heatmap per variant, side by side (rows: difficulty, columns: the
    model sizes that have runs), cells in the paper's format with the seed count and spread;
    failed cells grey, sizes a variant has no run of marked "not run", one-seed cells hatched.
    Accuracies shade from 0 to 100 %; another metric (``percent=False``) from the panel's worst
    value to its best (the lowest with ``lower``), on one scale for all variants, shown by the
    colour bar (``label``). The title says what a cell is (``describe_cells``: ``agg``, the
    learning rates ``lrs`` run, the seed counts); the caption gives the chance level of each row
    (``chance``: row -> ``Task.chance``; ``cells.row_chances``), and for Depo how to read
    ``a/b%``."""
    sizes = sorted(panel_cells["size"].unique(), key=size_order)
    rows = list(panel_cells.sort_values("row_index")["row"].unique())
    variants = variant_order(panel_cells)
    done = panel_cells[panel_cells["status"] == "finished"]
    scale = value_scale(done["value"], percent)
    panel_w = max(1.05 * len(sizes), 2.5)
    width = panel_w * len(variants) + 1.3
    fig = Figure(figsize=(width, 1.9 + 0.6 * len(rows)), layout="constrained")
    axes = fig.subplots(1, len(variants), squeeze=False)[0]
    all_seeds = []
    for ax, (arch, canon) in zip(axes, variants):
        block = panel_cells[(panel_cells["architecture"] == arch) & (panel_cells["canon"] == canon)]
        values, texts, seeds = _grid(block, rows, sizes, percent, agg)
        all_seeds.append(seeds)
        ran = block.loc[block["status"] == "finished"]
        lr = ", ".join(lr_text(x) for x in sorted(ran["lr"].unique())) if "lr" in ran else ""
        sub = seeds_text(ran.get("seeds", [])) + (f" · lr {lr}" if lr else "")
        _draw(ax, shade_of(values, scale, lower), texts, rows, sizes,
              _wrap(f"{variant_label(arch, canon)}\n{sub}", panel_w), seeds)
    for ax in axes[1:]:
        ax.set_yticklabels([])
    lo, hi, log = scale
    norm = Normalize(100 * lo, 100 * hi) if percent else (LogNorm if log else Normalize)(lo, hi)
    depo = percent and done.get("value2", pd.Series(dtype=float)).notna().any()
    label = label or ("accuracy at k = K (%)" if depo else "accuracy (%)" if percent else "value")
    bar = fig.colorbar(ScalarMappable(norm, CMAP.reversed() if lower else CMAP), ax=list(axes),
                       fraction=0.04, pad=0.02)
    _label_bar(bar, label)
    fig.suptitle(_wrap(f"{title}\n{describe_cells(panel_cells, agg, lrs)}", width, 10), fontsize=10)
    extra = " ".join(t for t in (depo_caption(str(panel_cells["panel"].iloc[0])) if depo else "",
                                 chance_caption(chance or {}, rows) if percent else "",
                                 "Shades on a log scale." if log else "") if t)
    fig.supxlabel(_wrap(_caption(percent, agg, np.concatenate(all_seeds, axis=None), extra),
                        width, 7.5), fontsize=7.5)
    return fig


def versus_figure(table: pd.DataFrame, title: str) -> Figure | None:
    """Per variant that has runs here: ours | paper, and ours − paper (percentage points) only
    for cells of the same difficulty (row label) and size. Where our rows are other difficulties
    than the paper's (mini scale), the two are drawn side by side, each with its own row labels,
    and no difference. None when no run of ours matches a cell of the paper."""
    ours = table[table["status"] == "finished"]
    if ours.empty:
        return None
    variants = list(dict.fromkeys(zip(ours["architecture"], ours["canon"])))
    everything = dict.fromkeys(zip(table["architecture"], table["canon"]))
    skipped = [variant_label(a, c) for a, c in everything if (a, c) not in variants]
    laid = table[table["row_ours"].notna()]  # our cells, run or not (a grid's "not run" too)
    our_rows = list(laid.sort_values("row_index")["row_ours"].unique())
    our_sizes = sorted(laid["size"].unique(), key=size_order)
    paper_rows = list(table.sort_values("row_index")["row_paper"].unique())
    paper_sizes = sorted(table["size"].unique(), key=size_order)
    same = set(zip(ours["row_ours"], ours["size"])) & set(zip(table["row_paper"], table["size"]))
    cols = 3 if same else 2
    ours_w = max(len(our_sizes), 1.6)
    ratios = [ours_w, len(paper_sizes)] + ([ours_w] if same else [])
    fig = Figure(figsize=(1.3 * sum(ratios) + 1.8, 1.6 + 1.5 * len(variants)), layout="constrained")
    axes = fig.subplots(len(variants), cols, squeeze=False, gridspec_kw={"width_ratios": ratios})
    for r, (arch, canon) in enumerate(variants):
        block = table[(table["architecture"] == arch) & (table["canon"] == canon)]
        mine = block[block["status"] == "finished"]
        paper = {(c["row_paper"], c["size"]): c for _, c in block.iterrows()}
        grids = {"ours": np.full((len(our_rows), len(our_sizes)), np.nan),
                 "paper": np.full((len(paper_rows), len(paper_sizes)), np.nan)}
        texts = {"ours": [[NOT_RUN] * len(our_sizes) for _ in our_rows],
                 "paper": [["—"] * len(paper_sizes) for _ in paper_rows],
                 "diff": [["—"] * len(our_sizes) for _ in our_rows]}
        diff = np.full((len(our_rows), len(our_sizes)), np.nan)
        for (row, size), c in paper.items():
            i, j = paper_rows.index(row), paper_sizes.index(size)
            grids["paper"][i, j] = c["value_paper"]
            texts["paper"][i][j] = cell_text(c["value_paper"], c["value2_paper"], "finished")
        for _, c in mine.iterrows():
            i, j = our_rows.index(c["row_ours"]), our_sizes.index(c["size"])
            grids["ours"][i, j] = c["value_ours"]
            texts["ours"][i][j] = cell_text(c["value_ours"], c["value2_ours"], c["status"])
            if (c["row_ours"], c["size"]) in paper:  # the same difficulty and size in the paper
                delta = c["value_ours"] - paper[(c["row_ours"], c["size"])]["value_paper"]
                diff[i, j] = abs(delta)
                texts["diff"][i][j] = f"{100 * delta:+.0f}"
        label = variant_label(arch, canon)
        _draw(axes[r, 0], grids["ours"], texts["ours"], our_rows, our_sizes,
              _wrap(f"ours: {label}", 2.6))
        _draw(axes[r, 1], grids["paper"], texts["paper"], paper_rows, paper_sizes,
              _wrap(f"paper: {label}", 2.6))
        if same:
            _draw(axes[r, 2], diff, texts["diff"], our_rows, our_sizes, "ours − paper (pp)")
    bar = fig.colorbar(ScalarMappable(Normalize(0, 100), CMAP), ax=list(axes[:, :2].ravel()),
                       fraction=0.03, pad=0.02)
    _label_bar(bar, "accuracy (%)")
    if same:
        bar = fig.colorbar(ScalarMappable(Normalize(0, 100), CMAP), ax=list(axes[:, 2]),
                           fraction=0.06, pad=0.02)
        _label_bar(bar, "|ours − paper| (pp)")
        note = "ours − paper only where the row (difficulty) and size are the same."
    else:
        note = (f"Our rows ({', '.join(map(str, our_rows))}) are other difficulties than the "
                f"paper's ({', '.join(map(str, paper_rows))}): side by side, no difference.")
    if skipped:
        note += f" Not run here: {'; '.join(skipped)}."
    width = 1.3 * sum(ratios) + 1.8
    fig.suptitle(_wrap(title, width, 10), fontsize=10)
    fig.supxlabel(_wrap(note, width, 7.5), fontsize=7.5)
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
        for col in cols:  # markers: a run evaluated once is a point, not an empty panel
            ax.plot(evals["step"], 100 * evals[col], marker="o", ms=3,
                    label=PER_DEPTH[prefix].format(col[len(prefix):]))
        ax.set_title(name, fontsize=8)
        ax.set_xlabel("step", fontsize=8)
        ax.set_ylabel("accuracy (%)", fontsize=8)
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        if cols:
            ax.legend(fontsize=7, ncol=2)
        else:
            ax.text(0.5, 0.5, "no per-depth accuracy in its evals", transform=ax.transAxes,
                    ha="center", va="center", fontsize=8, color="0.4")
    for ax in axes[len(records):]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig


def step_axis(ax, steps, few: int, most: int) -> None:
    """A training-step x axis: ticks at the evaluations' own ``steps`` where they are ``few`` or
    fewer (Lano: 2.5k, 5k), else about ``most``; labelled in thousands (``2.5k``)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator

    ax.xaxis.set_major_locator(FixedLocator(steps) if len(steps) <= few else MaxNLocator(most))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1000:g}k"))


def panel_curves_figure(series: pd.DataFrame, rows: list[str], sizes: list[str],
                        variants: list[tuple[str, str]], title: str, ylabel: str,
                        percent: bool = True, chance=None) -> Figure:
    """A panel over training, in the heatmap's layout: an axis per cell (rows: difficulty,
    columns: the sizes in the paper's order), per variant a thin line per seed and a thick one
    for their mean at the steps every seed has, one colour a variant in every cell; "not run"
    where a cell has no evaluation; ``chance`` (row -> ``Task.chance``) dashed. ``series``: one
    row per evaluation (``row``, ``size``, ``architecture``, ``canon``, ``seed``, ``step``,
    ``value``)."""
    scale = 100 if percent else 1
    steps = sorted(series["step"].unique())
    fig = Figure(figsize=(1.0 + 2.4 * len(sizes), 1.0 + 1.9 * len(rows)), layout="constrained")
    axes = fig.subplots(len(rows), len(sizes), squeeze=False, sharex=True,
                        sharey=percent)  # other metrics keep each cell's own range
    legend = {}  # variant index -> its mean line, for one legend entry a variant
    for (i, row), (j, size) in itertools.product(enumerate(rows), enumerate(sizes)):
        ax = axes[i][j]
        cell = series[(series["row"] == row) & (series["size"] == size)]
        for k, variant in enumerate(variants):
            part = cell[(cell["architecture"] == variant[0]) & (cell["canon"] == variant[1])]
            if part.empty:
                continue
            color = f"C{k % 10}"
            for s, seed in part.groupby("seed"):
                seed = seed.sort_values("step")
                ax.plot(seed["step"], scale * seed["value"], color=color, lw=0.6, alpha=0.45,
                        gid=f"seed:{variant[0]}:{variant[1]}:{s}")
            seeds = part["seed"].nunique()
            counts = part.groupby("step")["seed"].nunique()
            mean = part.groupby("step")["value"].mean()[counts == seeds]
            (legend[k],) = ax.plot(mean.index, scale * mean, color=color, lw=1.6,
                                   ls=DASHES[k % len(DASHES)], marker=MARKERS[k % len(MARKERS)],
                                   ms=3, gid=f"mean:{variant[0]}:{variant[1]}")
        if chance and chance.get(row):
            ax.axhline(scale * chance[row], color="#c53030", ls="--", lw=0.8, gid="chance")
        if cell.empty:
            ax.text(0.5, 0.5, NOT_RUN, transform=ax.transAxes, ha="center", va="center",
                    fontsize=8, color="0.45", style="italic")
        if percent:
            ax.set_ylim(0, 100)
        elif value_scale(cell["value"], percent)[2]:  # a spread of LOG_SPAN or more: log scale
            ax.set_yscale("log")
        ax.set_title(f"{row} · {size}", fontsize=8)
        ax.grid(alpha=0.3)
        ax.tick_params(which="both", labelsize=7)
        step_axis(ax, steps, few=5, most=4)
        if i == len(rows) - 1:
            ax.set_xlabel("step", fontsize=8)
        if j == 0:
            ax.set_ylabel(ylabel, fontsize=8)
    fig.legend([legend[k] for k in sorted(legend)],
               [variant_label(*variants[k]) for k in sorted(legend)], fontsize=7,
               loc="outside lower center", ncol=min(len(legend), 3) or 1, frameon=False)
    fig.suptitle(title, fontsize=9)
    return fig


def bars_figure(table: pd.DataFrame, x: str, group: str, value: str, title: str, ylabel: str,
                percent: bool = True) -> Figure:
    """Grouped bars of ``value`` by ``x`` (e.g. Brevo depth, MQAR width) and ``group`` (variant),
    with the seed spread as error bars when present; ``percent``:
    a fraction shown in %, on 0–105."""
    xs = sorted(dict.fromkeys(table[x]), key=size_order)
    # baseline first
    groups = sorted(dict.fromkeys(table[group]), key=lambda name: (len(str(name)), str(name)))
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
    bound), and the 2 / 1 / 0.5 / 0.25 bits-per-parameter reference lines. Points with bits <= 0
    cannot sit on a log axis and are left out of the figure (they stay in the CSV)."""
    fig = Figure(figsize=(6.4, 4.8))
    ax = fig.add_subplot()
    shown = table[table["bits"] > 0]
    lo, hi = (shown["params"].min() / 2, shown["params"].max() * 2) if not shown.empty else (1, 2)
    for label, group in _series(shown) if not shown.empty else []:
        (line,) = ax.plot(group["params"], group["bits"], marker="o", label=label,
                          gid=f"series:{label}")
        upper = group["bits_upper"].max()  # all the knowledge in the data: a dotted ceiling
        ax.plot([lo, hi], [upper, upper], ls=":", lw=1, color=line.get_color(),
                gid=f"upper:{label}")
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


MARKERS = ("o", "s", "^", "v", "D", "P", "X", "<", ">", "*")
DASHES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (8, 2)), (0, (1, 3)),
          (0, (4, 1, 1, 1, 1, 1, 1, 1)), (0, (10, 2, 2, 2)), (0, (2, 4, 6, 4)))


def lengthgen_figure(table: pd.DataFrame, title: str, ylabel: str, accuracy: bool = True) -> Figure:
    """``value`` against ``scale`` (× the training context, log 2 axis), one line per variant,
    each with its own marker, dash style and small horizontal offset, with the seed spread as
    error bars when present (``playground-report lengthgen``)."""
    fig = Figure(figsize=(5.6, 4.0))
    ax = fig.add_subplot()
    variants = sorted(dict.fromkeys(table["variant"]), key=lambda name: (len(str(name)), str(name)))
    for i, name in enumerate(variants):
        part = table[table["variant"] == name].sort_values("scale")
        # lines that coincide (e.g. several at 100 %) stay apart: each its own marker and dashes,
        # and a small horizontal offset (a factor on the log axis; the ticks stay at the scales)
        shift = 2.0 ** (0.035 * (i - (len(variants) - 1) / 2))
        ax.errorbar(part["scale"] * shift, part["value"], yerr=part["spread"].fillna(0),
                    marker=MARKERS[i % len(MARKERS)], ms=4.5, ls=DASHES[i % len(DASHES)], lw=1.2,
                    mfc="none" if i % 2 else None, capsize=2, label=str(name), gid=f"series:{name}")
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


def gap_label(architecture: str, canon: str) -> str:
    """What a gain of ``playground-report gaps`` compares: ``Llama(RoPE) + Canon-ABCD(res) −
    Llama(RoPE)``."""
    return f"{variant_label(architecture, canon)} − {ARCH_NAMES.get(architecture, architecture)}"


def count_text(n: float) -> str:
    """A parameter count as ``25M`` or, below a million, ``383k``."""
    return f"{n / 1e6:.0f}M" if n >= 1e6 else f"{n / 1e3:.0f}k"


def gaps_figure(table: pd.DataFrame, title: str, ylabel: str, percent: bool = True,
                sizes=(), params=None) -> Figure:
    """Canon's gain against model size (``playground-report gaps``): one panel per difficulty
    row, the sizes in the paper's column order (with their parameter counts where recorded:
    the gain cells', else ``params``, size -> count, e.g. of the panel's other runs; ``sizes``:
    more to lay out, e.g. a sweep's without runs yet); per architecture its mean gain as a line
    and each paired seed's gain as a point, zero dashed."""
    rows = list(dict.fromkeys(table.sort_values("row_index")["row"]))
    sizes = sorted(dict.fromkeys([*table["size"], *sizes]), key=size_order)
    archs = sorted(dict.fromkeys(table["architecture"]))
    scale = 100 if percent else 1
    fig = Figure(figsize=(1.2 + 2.4 * len(rows) * max(1, len(sizes) / 4), 3.6))
    axes = fig.subplots(1, len(rows), sharey=True, squeeze=False)[0]
    counts = table.groupby("size")["params"].median()
    if params is not None:
        counts = counts.combine_first(pd.Series(params, dtype=float))
    ticks = [s + (f"\n{count_text(counts[s])}" if not pd.isna(counts.get(s, np.nan)) else "")
             for s in sizes]
    labelled: set[str] = set()
    for ax, row in zip(axes, rows):
        for i, arch in enumerate(archs):
            part = table[(table["row"] == row) & (table["architecture"] == arch)]
            if part.empty:
                continue
            x = np.array([sizes.index(s) for s in part["size"]]) + 0.08 * (i - (len(archs) - 1) / 2)
            color = f"C{i % 10}"  # an architecture keeps its colour in every row's panel
            # one legend entry an architecture
            label = gap_label(arch, part["canon"].iloc[0]) if arch not in labelled else None
            labelled.add(arch)
            ax.plot(x, scale * part["gain"], marker=MARKERS[i % len(MARKERS)], ms=5, color=color,
                    lw=1.2, ls=DASHES[i % len(DASHES)], gid=f"series:{arch}", label=label)
            for xi, gains in zip(x, part["seed_gains"]):
                values = [scale * float(g) for g in str(gains).split(";") if g not in ("", "nan")]
                ax.scatter([xi] * len(values), values, s=12, color=color, alpha=0.55,
                           linewidths=0)
        ax.axhline(0, color="#555555", lw=0.8, ls="--")
        ax.set_xticks(range(len(sizes)), ticks, fontsize=7)
        ax.set_xlim(-0.5, len(sizes) - 0.5)
        ax.set_title(str(row), fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel(ylabel)
    fig.suptitle(title, fontsize=10)
    fig.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, -0.06), ncol=2,
               frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig
