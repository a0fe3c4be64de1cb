"""Findings: claims declared in a file (``sweeps/findings.yaml``), read from the run records.

A finding names a claim, the paper's result it tests, two sides (a variant of a sweep each:
``a`` the baseline, ``b`` the variant the claim is about), the cells it is read at (panel, size,
config values that pick the row) and the seeds each side needs. For each finding and cell,
:func:`evaluate` finds the runs of each side under a results folder (by what each run records of
itself: sweep, variant, panel, size, seed, config values; never by its name) and
:func:`compare` gives the margin of ``b`` over ``a``, a 95 % interval for it and a verdict by
the rule of ``docs/findings.md``:

- **holds** / **reversed**: ≥ 3 seeds a side and the interval excludes 0 (on the claimed side /
  the other side); for a claim of sameness, **holds** when the interval lies inside
  ±``tolerance`` and **differs** when it lies outside;
- **suggestive** (or **suggestive, reversed** / **suggestive, differs**): the same with fewer
  than 3 seeds on a side;
- **inconclusive**: the interval covers 0 (or the tolerance's edge);
- **at chance**: both sides' means inside the task's chance band (:func:`chance_band`);
- **untested**: a side has no finished run.

The interval is Welch's t-interval over seeds, with each side's per-seed variance floored at the
binomial variance of its eval (p(1 - p) / questions, from ``Task.question_counts``): with a few
seeds the sample variance can come out near 0 by luck, but no seed's score is more precise than
its eval. Metrics that are not a fraction of questions (KL) have no floor.

:func:`family_wise` reads the table as one family of tests: each interval again at 1 − 0.05 / m
(Bonferroni over the m cells that have one), and the verdict from it (``verdict_fw``), so that a
reader sees which verdicts survive the many comparisons of the table.

``needed_runs`` lists the sweep runs every finding still needs (``playground-sweep findings``
launches exactly those).
"""

from __future__ import annotations

import dataclasses
import math
import textwrap
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pandas as pd
from omegaconf import OmegaConf

from playground.config import shipped
from playground.errors import ConfigError

SPEC = shipped("sweeps") / "findings.yaml"
ENTRY_KEYS = {"id", "result", "paper", "claim", "sweep", "scale", "a", "b", "expect", "tolerance",
              "seeds", "cells", "note"}
CELL_KEYS = {"panel", "size", "where", "metric", "tolerance"}
FILE_KEYS = {"findings", "cells"}  # cells: named cells, for YAML anchors
EXPECT = ("better", "same")
MIN_SEEDS = 3  # seeds a side for a verdict beyond "suggestive"
FIGURE_COLUMNS = 4  # panels per row of a result's figure
# Student t's 97.5 % quantile by degrees of freedom; a fractional Welch df takes the entry at or
# below it (a wider interval); beyond 30, the normal 1.96.
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
        10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042}
COLUMNS = ["id", "result", "claim", "panel", "row", "size", "metric", "a", "b", "label_a",
           "label_b", "seeds_a", "seeds_b", "values_a", "values_b", "mean_a", "mean_b", "margin",
           "low", "high", "questions", "chance", "verdict", "missing", "se", "df",
           "seeds_to_decide", "projected", "low_fw", "high_fw", "verdict_fw"]
PROJECT_UP_TO = 20  # the most seeds a side the projection of an inconclusive cell tries
FAMILY_ALPHA = 0.05  # the family-wise error rate of ``verdict_fw``
NO_INTERVAL = ("untested", "at chance")  # verdicts read without an interval: not in the family


@dataclass(frozen=True)
class Side:
    sweep: str  # the sweep file's name (fig7); its runs record sweep=<sweep>_<scale>
    scale: str
    variant: str

    @property
    def folder(self) -> str:
        """The sweep its runs record, and their folder: ``fig7_mini``."""
        return f"{self.sweep}_{self.scale}"


@dataclass(frozen=True)
class Cell:
    panel: str
    size: str
    where: tuple[tuple[str, str], ...] = ()  # config key (task.N) -> value, as text
    metric: str = ""  # "": each run's stated primary metric
    tolerance: float | None = None  # expect: same -- this cell's own (metric units)


@dataclass(frozen=True)
class Finding:
    id: str
    result: str
    paper: str
    claim: str
    a: Side
    b: Side
    expect: str
    seeds: tuple[int, ...]
    cells: tuple[Cell, ...]
    tolerance: float = 0.0
    note: str = ""

    @property
    def sides(self) -> tuple[Side, Side]:
        return self.a, self.b


def load_findings(path: Path = SPEC, results: str = "") -> list[Finding]:
    """The findings of ``path`` (only those of ``results``, comma-separated, if given, in that
    order: a paper result picks all its findings, an id one); every problem is a ConfigError
    naming the entry and key."""
    spec = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    entries = spec.get("findings") if isinstance(spec, dict) else None
    if isinstance(spec, dict) and (unknown := set(spec) - FILE_KEYS):
        raise ConfigError(f"{path}: unknown top-level key(s) {sorted(unknown)}; allowed: "
                          f"{sorted(FILE_KEYS)}")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{path}: expected a top-level 'findings:' list")
    found, ids = [], set()
    for i, entry in enumerate(entries):
        where = f"{path}: findings[{i}]"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where} must be a mapping")
        if unknown := set(entry) - ENTRY_KEYS:
            raise ConfigError(f"{where} has unknown key(s) {sorted(unknown)}; allowed: "
                              f"{sorted(ENTRY_KEYS)}")
        for key in ("id", "result", "claim", "a", "b", "seeds", "cells", "sweep", "scale"):
            if entry.get(key) in (None, "", []):
                raise ConfigError(f"{where}.{key} is missing")
        where = f"{path}: finding {entry['id']}"
        if entry["id"] in ids:
            raise ConfigError(f"{where}: the id is used twice")
        ids.add(entry["id"])
        expect = entry.get("expect", "better")
        if expect not in EXPECT:
            raise ConfigError(f"{where}.expect={expect!r} is invalid: expected one of {EXPECT}")
        tolerance = float(entry.get("tolerance", 0.0))
        cells = tuple(_cell(c, f"{where}.cells[{j}]") for j, c in enumerate(entry["cells"]))
        if (expect == "same"
                and min(tolerance if c.tolerance is None else c.tolerance for c in cells) <= 0):
            raise ConfigError(f"{where}.tolerance must be > 0 for expect: "
                              "same (the finding's or each cell's)")
        seeds = entry["seeds"]
        if not isinstance(seeds, list) or not all(isinstance(s, int) for s in seeds):
            raise ConfigError(f"{where}.seeds={seeds!r} is invalid: expected a list of integers")
        sides = [_side(entry, key, where) for key in ("a", "b")]
        found.append(Finding(str(entry["id"]), str(entry["result"]), str(entry.get("paper", "")),
                             str(entry["claim"]), *sides, expect, tuple(seeds), cells, tolerance,
                             str(entry.get("note", ""))))
    if results:  # each a paper result (all its findings) or a finding's id
        wanted = results.split(",")
        if unknown := sorted(set(wanted) - {f.result for f in found} - ids):
            raise ConfigError(f"results={unknown} is invalid: the findings test results "
                              f"{sorted({f.result for f in found})}, or name a finding by its "
                              f"id ({', '.join(f.id for f in found)})")
        first = lambda f: min(wanted.index(k) for k in (f.result, f.id) if k in wanted)
        found = sorted((f for f in found if f.result in wanted or f.id in wanted),
                       key=first)  # in the order asked for
    return found


def _side(entry: dict, key: str, where: str) -> Side:
    value = entry[key]
    if isinstance(value, str):
        return Side(str(entry["sweep"]), str(entry["scale"]), value)
    if (isinstance(value, dict) and set(value) <= {"sweep", "scale", "variant"}
            and "variant" in value):
        return Side(str(value.get("sweep", entry["sweep"])),
                    str(value.get("scale", entry["scale"])), str(value["variant"]))
    raise ConfigError(f"{where}.{key}={value!r} is invalid: expected a variant name or "
                      "{sweep: NAME, variant: NAME}")


def _cell(cell, where: str) -> Cell:
    if not isinstance(cell, dict) or not {"panel", "size"} <= set(cell):
        raise ConfigError(f"{where} is invalid: expected {{panel: ..., size: ..., where: {{...}}}}")
    if unknown := set(cell) - CELL_KEYS:
        raise ConfigError(f"{where} has unknown key(s) {sorted(unknown)}; allowed: "
                          f"{sorted(CELL_KEYS)}")
    pairs = cell.get("where") or {}
    if not isinstance(pairs, dict):
        raise ConfigError(f"{where}.where must be a mapping of config key: value")
    tolerance = cell.get("tolerance")
    return Cell(str(cell["panel"]), str(cell["size"]), tuple((k, str(v)) for k, v in pairs.items()),
                str(cell.get("metric") or ""), None if tolerance is None else float(tolerance))


# -- which runs ------------------------------------------------------------------------------


def _same(value, wanted: str) -> bool:
    """A config value equals the finding's text (numbers compare as numbers: 1e-3 = 0.001)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return False
    try:
        return math.isclose(float(value), float(wanted), rel_tol=1e-9)
    except (TypeError, ValueError):
        return str(value) == wanted


def _variant_keys(side: Side) -> tuple[tuple[str, str], ...]:
    """The config keys and values that name ``side``'s runs: its sweep folder and variant."""
    return ("sweep", side.folder), ("variant", side.variant)


def _matching(frame: pd.DataFrame, pairs) -> pd.Series:
    """Which runs of a ``load_runs`` table have every config key of ``pairs`` at its value."""
    keep = pd.Series(True, index=frame.index)
    for key, value in pairs:
        column = frame.get(f"config.{key}", pd.Series(None, index=frame.index))
        keep &= column.map(lambda v, value=value: _same(v, value))
    return keep


def side_runs(frame: pd.DataFrame, side: Side, cell: Cell, seeds: tuple[int, ...]) -> pd.DataFrame:
    """The runs of ``side`` at ``cell`` with one of ``seeds``, from a ``load_runs`` table."""
    if frame.empty or "config.sweep" not in frame:
        return frame.iloc[0:0]
    runs = frame[frame["seed"].isin(seeds) & _matching(frame, (
        *_variant_keys(side), ("panel", cell.panel), ("model.size", cell.size), *cell.where))]
    if runs["seed"].duplicated().any():
        raise ConfigError(f"{side.variant} at {cell.panel} {cell.size} {dict(cell.where)}: "
                          f"several runs share a seed ({sorted(runs['run'])}); add the key that "
                          "tells them apart (e.g. train.lr) to the cell's where")
    return runs


def needed_runs_by_cell(findings: list[Finding], root: str
                        ) -> list[tuple[str, list[list[str]]]]:
    """Per finding and cell, in the findings' order: (``<id> at <panel> <size> <where>``, the
    override lists of the sweep runs it needs that have no finished summary under ``root``); a
    run two of them need is in both."""
    from playground.config import Composer
    from playground.run.train import finished_summary

    groups, compose, configs, todo_of = [], Composer(), {}, {}
    for finding in findings:
        for cell in finding.cells:
            todo, seen = [], set()
            for side in finding.sides:
                sweep = dataclasses.replace(_side_sweep(side, cell, finding.seeds), root=root)
                for overrides in sweep.runs():
                    key = tuple(overrides)
                    if key in seen:
                        continue
                    if key not in configs:
                        configs[key] = compose(overrides)
                    cfg = configs[key]
                    if all(_same(OmegaConf.select(cfg, key_), value) for key_, value in cell.where):
                        seen.add(key)
                        if key not in todo_of:
                            todo_of[key] = finished_summary(Path(cfg.out_dir)) is None
                        if todo_of[key]:
                            todo.append(overrides)
            where = " ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in cell.where)
            groups.append((f"{finding.id} at {cell.panel} {cell.size}" + (f" {where}" if where
                                                                         else ""), todo))
    return groups


def needed_runs(findings: list[Finding], root: str) -> list[list[str]]:
    """The override lists of every sweep run some finding needs that has no finished summary
    under ``root`` (each once, in the findings' order)."""
    todo, seen = [], set()
    for _, runs in needed_runs_by_cell(findings, root):
        for overrides in runs:
            if tuple(overrides) not in seen:
                seen.add(tuple(overrides))
                todo.append(overrides)
    return todo


# -- statistics ------------------------------------------------------------------------------


def t975(df: float | None) -> float:
    """Student t's two-sided 95 % quantile at ``df`` degrees of freedom (None: the normal's)."""
    if df is None or df > max(T975):
        return 1.96
    return T975[max(k for k in T975 if k <= max(df, 1) + 1e-9)]


def t_quantile(level: float, df: float | None) -> float:
    """Student t's two-sided ``level`` quantile (the t with P(|T| <= t) = ``level``) at the whole
    number of degrees of freedom at or below ``df``; the normal's when ``df`` is None or above
    the largest ``T975`` entry (as :func:`t975`)."""
    if df is None or df > max(T975):
        return NormalDist().inv_cdf(0.5 + level / 2)
    nu = max(int(df + 1e-9), 1)
    low, high = 0.0, 1.0
    while _t_central(high, nu) < level:
        high *= 2
    for _ in range(200):  # bisection to float precision
        mid = (low + high) / 2
        low, high = (mid, high) if _t_central(mid, nu) < level else (low, mid)
    return high


def _t_central(t: float, nu: int) -> float:
    """P(|T| <= t) for Student's t with a whole number ``nu`` of degrees of freedom, in closed
    form (a finite series in θ = atan(t / √ν): Abramowitz & Stegun 26.7.3-4)."""
    theta = math.atan(t / math.sqrt(nu))
    c2 = math.cos(theta) ** 2
    term, total = 1.0, 1.0
    if nu % 2:  # odd: (2/π)(θ + sinθ cosθ (1 + 2/3 cos²θ + 2·4/(3·5) cos⁴θ + …))
        if nu == 1:
            return 2 * theta / math.pi
        for k in range(1, (nu - 3) // 2 + 1):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        return 2 / math.pi * (theta + math.sin(theta) * math.cos(theta) * total)
    for k in range(1, (nu - 2) // 2 + 1):  # even: sinθ (1 + 1/2 cos²θ + 1·3/(2·4) cos⁴θ + …)
        term *= c2 * (2 * k - 1) / (2 * k)
        total += term
    return math.sin(theta) * total


def chance_band(chance: float | None) -> float | None:
    """The score below which a side counts as at chance: twice the uniform-guess rate (a model
    that learns the answers' marginal distribution beats a uniform guess without solving
    anything), or 2 % where that rate is about 0 (a whole generated answer must be exact)."""
    if chance is None:
        return None
    return 2 * chance if chance > 0 else 0.02


def compare(a: list[float], b: list[float], questions_a: float | None = None,
            questions_b: float | None = None, lower: bool = False, chance: float | None = None,
            expect: str = "better", tolerance: float = 0.0) -> dict:
    """The margin of side ``b`` over side ``a`` (positive: ``b`` does better; for a
    lower-is-better metric, ``a - b``), its 95 % interval and the verdict (module docstring).
    ``questions_*``: the eval's questions behind each side's metric (None: not a proportion)."""
    out = {"seeds_a": len(a), "seeds_b": len(b),
           "mean_a": float(np.mean(a)) if a else np.nan,
           "mean_b": float(np.mean(b)) if b else np.nan,
           "margin": np.nan, "low": np.nan, "high": np.nan, "se": np.nan, "df": np.nan,
           "seeds_to_decide": np.nan, "projected": ""}
    if not a or not b:  # the side that has runs still shows its mean
        return {**out, "verdict": "untested"}
    ma, mb = out["mean_a"], out["mean_b"]
    margin = (ma - mb) if lower else (mb - ma)
    variances = (_variance(a, ma, questions_a), _variance(b, mb, questions_b))
    proportions = bool(questions_a and questions_b)
    low, high, se, df = _welch_interval(margin, variances, (len(a), len(b)), proportions)
    out.update(mean_a=ma, mean_b=mb, margin=margin, low=low, high=high, se=se,
               df=np.nan if df is None else df)
    band = chance_band(chance)
    if band is not None and ma < band and mb < band:
        return {**out, "verdict": "at chance"}
    verdict = _verdict(low, high, expect, tolerance, min(len(a), len(b)))
    if verdict == "inconclusive":
        out.update(zip(("seeds_to_decide", "projected"),
                       projection(margin, variances, max(len(a), len(b)), expect, tolerance,
                                  proportions)))
    return {**out, "verdict": verdict}


def _welch_interval(margin: float, variances: tuple[float, float], ns: tuple[int, int],
                    proportions: bool) -> tuple[float, float, float, float | None]:
    """The 95 % Welch interval of ``margin`` from each side's per-seed variance and seed count:
    (low, high, standard error, degrees of freedom or None)."""
    parts = [v / n for v, n in zip(variances, ns)]
    df, se = _welch_df(parts, ns), math.sqrt(sum(parts))
    return (*_interval(margin, t975(df) * se, proportions), se, df)


def projection(margin: float, variances: tuple[float, float], seeds: int, expect: str,
               tolerance: float, proportions: bool) -> tuple[float, str]:
    """For an inconclusive cell: the fewest seeds a side (the same on both, more than ``seeds``,
    at most ``PROJECT_UP_TO``) at which the 95 % interval would decide, were the margin and each
    side's per-seed variance what they measure now, and the verdict it would then read; (NaN, "")
    where none would. A planning figure, not a prediction: three seeds measure a spread loosely,
    and a cell run on until it decides (rather than to a number fixed beforehand) reads "holds"
    more often than its 5 %."""
    for n in range(max(seeds, MIN_SEEDS - 1) + 1, PROJECT_UP_TO + 1):
        low, high, _, _ = _welch_interval(margin, variances, (n, n), proportions)
        verdict = _verdict(low, high, expect, tolerance, n)
        if verdict != "inconclusive":
            return float(n), verdict
    return np.nan, ""


def _interval(margin: float, half: float, proportions: bool) -> tuple[float, float]:
    """margin ± half; a difference of two proportions lies in [-1, 1]."""
    low, high = margin - half, margin + half
    return (max(low, -1.0), min(high, 1.0)) if proportions else (low, high)


def _verdict(low: float, high: float, expect: str, tolerance: float, seeds: int) -> str:
    """The verdict an interval gives (module docstring); ``seeds``: the fewer of the sides'."""
    if expect == "same":
        verdict = ("holds" if -tolerance <= low and high <= tolerance else
                   "differs" if low > tolerance or high < -tolerance else "inconclusive")
    else:
        verdict = "holds" if low > 0 else "reversed" if high < 0 else "inconclusive"
    if seeds < MIN_SEEDS and verdict != "inconclusive":
        verdict = "suggestive" if verdict == "holds" else f"suggestive, {verdict}"
    return verdict


def family_wise(table: pd.DataFrame, rules: list[tuple[str, float, bool]],
                alpha: float = FAMILY_ALPHA) -> pd.DataFrame:
    """``table`` (``evaluate``'s rows; ``rules``: each row's expectation, tolerance and whether
    its sides are proportions, so that the interval is clipped to [-1, 1]) with
    ``low_fw``, ``high_fw`` and ``verdict_fw``: each interval of the family (the rows with one:
    not untested, not at chance) at level 1 − ``alpha`` / m over the m rows of the family
    (Bonferroni), and the verdict it gives; empty outside the family."""
    m = _family_size(table)
    read = []
    for (_, r), (expect, tolerance, proportions) in zip(table.iterrows(), rules):
        if r["verdict"] in NO_INTERVAL:
            read.append((np.nan, np.nan, ""))
            continue
        df = None if pd.isna(r["df"]) else r["df"]
        low, high = _interval(r["margin"], t_quantile(1 - alpha / m, df) * r["se"], proportions)
        read.append((low, high,
                     _verdict(low, high, expect, tolerance, min(r["seeds_a"], r["seeds_b"]))))
    return table.assign(**dict(zip(("low_fw", "high_fw", "verdict_fw"),
                                   map(list, zip(*read)) if read else ([], [], []))))


def _variance(values: list[float], mean: float, questions: float | None) -> float:
    """A side's per-seed variance: the sample variance over seeds, at least the binomial
    variance of one eval of ``questions`` questions at the side's mean."""
    sample = float(np.var(values, ddof=1)) if len(values) > 1 else 0.0
    floor = mean * (1 - mean) / questions if questions else 0.0
    return max(sample, floor)


def _welch_df(parts: list[float], ns: tuple[int, int]) -> float | None:
    """Welch–Satterthwaite degrees of freedom of the margin; None (the normal quantile) when a
    side has a single seed (its variance is the eval's binomial one, known, not estimated)."""
    if min(ns) < 2:
        return None
    denominator = sum(p * p / (n - 1) for p, n in zip(parts, ns))
    return sum(parts) ** 2 / denominator if denominator > 0 else None


# -- the table -------------------------------------------------------------------------------


def evaluate(findings: list[Finding], frame: pd.DataFrame) -> pd.DataFrame:
    """One row per finding and cell (``COLUMNS``) from a ``load_runs`` table."""
    from playground.report.cells import lower_is_better

    counts = _Counts()
    rows, rules = [], []
    for finding in findings:
        labels = _labels(finding, frame)
        for cell in finding.cells:
            sides = [side_runs(frame, side, cell, finding.seeds) for side in finding.sides]
            done = [runs[runs["status"] == "finished"] for runs in sides]
            metric = cell.metric or _stated_metric(done)
            values = [_values(runs, metric) for runs in done]
            questions = [counts.mean(runs, metric) for runs in done]
            chance = counts.chance(done, metric)
            tolerance = finding.tolerance if cell.tolerance is None else cell.tolerance
            stats = compare(*values, *questions, lower=lower_is_better(metric), chance=chance,
                            expect=finding.expect, tolerance=tolerance)
            rules.append((finding.expect, tolerance, bool(questions[0] and questions[1])))
            missing = [f"{side.variant} seed {s}" for side, runs in zip(finding.sides, done)
                       for s in finding.seeds if s not in set(runs["seed"])]
            row_label = next((r["record.task.row"]
                              for runs in done for _, r in runs.iterrows()), "")
            rows.append({"id": finding.id, "result": finding.result, "claim": finding.claim,
                         "panel": cell.panel, "row": row_label or _where_text(cell),
                         "size": cell.size,
                         "metric": metric, "a": finding.a.variant, "b": finding.b.variant,
                         **dict(zip(("label_a", "label_b"), labels)),
                         "values_a": _join(values[0]), "values_b": _join(values[1]),
                         "questions": _join([q for q in questions if q]), "chance": chance,
                         "missing": "; ".join(missing), **stats})
    return family_wise(pd.DataFrame(rows, columns=COLUMNS), rules)


def _labels(finding: Finding, frame: pd.DataFrame) -> tuple[str, str]:
    """Each side's name in the paper's words (``Llama(RoPE) + Canon-ABCD(res)``, ``Llama(RoPE),
    GELU MLP``, ``Mamba2 + conv1d, mimetic init``): one name for a side in every cell of the
    finding, from the record of a finished run of its sweep and variant in any cell, or where it
    has none yet, from the record its first run would write (:func:`_planned_label`). The
    sweep's variant names where a side's sweep cannot be read or the two read alike."""
    labels = tuple(_label(runs.iloc[0]) if len(runs := _variant_runs(frame, side))
                   else _planned_label(side, finding.cells[0], finding.seeds[0])
                   for side in finding.sides)
    if "" in labels or labels[0] == labels[1]:
        return finding.a.variant, finding.b.variant
    return labels  # type: ignore[return-value]


def _planned_label(side: Side, cell: Cell, seed: int) -> str:
    """A side's name from the record of its run at ``cell`` and ``seed`` as its sweep composes
    it (no run needed); "" where no sweep file of that name exists."""
    from playground.report.table import planned_record
    from playground.sweep.spec import find_sweep_file

    try:
        find_sweep_file(side.sweep)
    except ConfigError:
        return ""
    overrides = next(iter(_side_sweep(side, cell, (seed,)).runs()), None)
    if overrides is None:
        return ""
    return _label(pd.Series(planned_record(overrides)))


def _side_sweep(side: Side, cell: Cell, seeds: tuple[int, ...]):
    """The sweep of ``side``'s variant at ``cell`` and ``seeds`` (``spec.load_sweep``)."""
    from playground.sweep.spec import find_sweep_file, load_sweep

    return load_sweep(find_sweep_file(side.sweep), side.scale, cell.panel,
                      [f"seed={','.join(map(str, seeds))}", f"size={cell.size}"], side.variant)


def _variant_runs(frame: pd.DataFrame, side: Side) -> pd.DataFrame:
    """The finished runs of ``side``'s sweep and variant, in any cell, from a ``load_runs``
    table."""
    if frame.empty or "config.sweep" not in frame:
        return frame.iloc[0:0]
    return frame[(frame["status"] == "finished") & _matching(frame, _variant_keys(side))]


def _label(run: pd.Series) -> str:
    from playground.report.cells import architecture, canon_id
    from playground.report.plots import variant_label

    facets = []
    if run.get("record.arch.mlp") not in ("swiglu", "none", None):
        facets.append(f"{str(run['record.arch.mlp']).upper()} MLP")
    if run.get("record.arch.mimetic") is True:
        facets.append("mimetic init")
    return ", ".join([variant_label(architecture(run), canon_id(run)), *facets])


def _stated_metric(done: list[pd.DataFrame]) -> str:
    for runs in done:
        if not runs.empty and "record.task.metric" in runs:
            return str(runs["record.task.metric"].iloc[0])
    return "primary"


def _values(runs: pd.DataFrame, metric: str) -> list[float]:
    column = f"metrics.{metric}" if f"metrics.{metric}" in runs else metric
    if runs.empty or column not in runs:
        return []
    return [float(v) for v in runs.sort_values("seed")[column] if pd.notna(v)]


def _join(values: list[float]) -> str:
    return ";".join(f"{v:.4g}" for v in values)


def _where_text(cell: Cell) -> str:
    """A row label from the cell's config values where no run records one (``N=15``, ``cfg3f``)."""
    return ",".join(v if k.endswith(("preset", "grammar")) else f"{k.rsplit('.', 1)[-1]}={v}"
                    for k, v in cell.where)


class _Counts:
    """Each run's eval questions and chance from its task (``Task.question_counts`` /
    ``Task.chance``), built once per task config."""

    def __init__(self):
        from playground.report.cells import RunTasks

        self.tasks = RunTasks()
        self.counts: dict[int, dict[str, int]] = {}

    def task(self, run: pd.Series):
        return self.tasks(run["run_dir"])

    def mean(self, runs: pd.DataFrame, metric: str) -> float | None:
        counts = [self.questions(self.task(r)).get(metric) for _, r in runs.iterrows()]
        return float(np.mean(counts)) if counts and all(counts) else None

    def questions(self, task) -> dict[str, int]:
        if id(task) not in self.counts:
            self.counts[id(task)] = task.question_counts()
        return self.counts[id(task)]

    def chance(self, done: list[pd.DataFrame], metric: str) -> float | None:
        for runs in done:
            for _, run in runs.iterrows():
                return self.task(run).chance(metric)
        return None


def markdown(table: pd.DataFrame, findings: list[Finding]) -> str:
    """The findings table in markdown: one line per finding and cell, grouped by result."""
    lines = ["| result | claim | cell | metric | A | B | margin B − A [95 % CI] | chance | "
             f"verdict | seeds a side to decide (projected) | family-wise ({family_text(table)}) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in table.iterrows():
        percent = "acc" in r["metric"]
        lines.append(f"| {r['result']} | {r['claim']} | {r['panel']} {r['row']} {r['size']} | "
                     f"{r['metric']} | {_side_text(r, 'a', percent)} | "
                     f"{_side_text(r, 'b', percent)} | {_margin_text(r, percent)} | "
                     f"{_number(r['chance'], percent)} | **{r['verdict']}** | "
                     f"{projection_text(r)} | {_family_cell(r, percent)} |")
    notes = [f"- **{f.id}** (Result {f.result}): {f.note}" for f in findings if f.note]
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def projection_text(row: pd.Series) -> str:
    """An inconclusive cell's projection (``projection``): ``5: holds``, or ``> 20`` where no
    count up to ``PROJECT_UP_TO`` would decide; "—" for a decided cell."""
    if row["verdict"] != "inconclusive":
        return "—"
    n = row.get("seeds_to_decide", np.nan)
    return f"> {PROJECT_UP_TO}" if pd.isna(n) else f"{int(n)}: {row['projected']}"


def summary(table: pd.DataFrame) -> str:
    """One line per finding, one column per cell (panel and row): the verdict with the seeds a
    side and the margin, e.g. ``holds +35.4 pt (seeds 3 + 3)``; ``—`` where the finding has no
    such cell."""
    cells = list(dict.fromkeys(_column(r) for _, r in table.iterrows()))
    metrics = {_column(r): r["metric"] for _, r in table.iloc[::-1].iterrows()
               if r["metric"] != "primary"}
    lines = ["| result | claim | "
             + " | ".join(f"{c} ({metrics.get(c, 'primary')})" for c in cells) + " |",
             "|---|---|" + "---|" * len(cells)]
    for _, block in table.groupby("id", sort=False):
        first = block.iloc[0]
        by_cell = {_column(r): _verdict_text(r) for _, r in block.iterrows()}
        lines.append(f"| {first['result']} | {first['claim']} | "
                     + " | ".join(by_cell.get(c, "—") for c in cells) + " |")
    if any(not_kept(r) for _, r in table.iterrows()):
        lines += ["", f"° inconclusive family-wise ({family_text(table)}): its interval then "
                      "covers 0 or the tolerance's edge."]
    return "\n".join(lines) + "\n"


def verdict_counts(table: pd.DataFrame) -> str:
    """How many cells have each verdict, most first: ``23 inconclusive, 18 holds, …``."""
    return ", ".join(f"{n} {verdict}" for verdict, n in table["verdict"].value_counts().items())


def family_text(table: pd.DataFrame) -> str:
    """How the family-wise verdicts were read, e.g. ``Bonferroni over 46 cells, each at
    99.89 %``."""
    m = _family_size(table)
    if not m:
        return "no cell has an interval yet"
    return f"Bonferroni over {m} cell{'s' * (m > 1)}, each at {100 * (1 - FAMILY_ALPHA / m):.4g} %"


def _family_size(table: pd.DataFrame) -> int:
    """m: the rows of the family, those with an interval (not untested, not at chance)."""
    return int((~table["verdict"].isin(NO_INTERVAL)).sum())


def not_kept(row: pd.Series) -> bool:
    """Whether the family-wise reading changes the row's verdict."""
    fw = row.get("verdict_fw", "")
    return bool(fw) and not pd.isna(fw) and fw != row["verdict"]


def _family_cell(row: pd.Series, percent: bool) -> str:
    if row["verdict"] in NO_INTERVAL:
        return "—"
    scale = 100 if percent else 1
    return (f"[{scale * row['low_fw']:+.3g}, {scale * row['high_fw']:+.3g}] "
            f"**{row['verdict_fw']}**")


BEGIN, END = "<!-- findings:begin -->\n", "<!-- findings:end -->"


def with_summary(text: str, table: str) -> str:
    """``text`` with ``table`` between its findings markers (a ConfigError if it has none)."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ConfigError(f"no '{BEGIN.strip()}' ... '{END}' block to update")
    return text[: start + len(BEGIN)] + table + text[end:]


def _verdict_text(row: pd.Series) -> str:
    if row["verdict"] == "untested":
        return "untested"
    margin = _margin_text(row, "acc" in row["metric"]).split(" [")[0]
    mark = "°" if not_kept(row) else ""
    return f"**{row['verdict']}**{mark} {margin} (seeds {row['seeds_a']} + {row['seeds_b']})"


def row_texts(row: pd.Series) -> dict[str, str]:
    """A finding cell's numbers as text, as the table writes them but without markdown: each
    side's mean and seeds (``a``, ``b``: ``96.8 % (n = 3)`` or ``no run``), its seeds' values
    (``values_a``, ``values_b``), the ``margin`` with its 95 % interval, ``chance`` and the
    ``family``-wise reading."""
    percent = "acc" in row["metric"]
    texts = {"margin": _margin_text(row, percent), "chance": _number(row["chance"], percent),
             "family": _family_cell(row, percent).replace("**", "")}
    for side in ("a", "b"):
        n = row[f"seeds_{side}"]
        texts[side] = f"{_number(row[f'mean_{side}'], percent)} (n = {n})" if n else "no run"
        values = _seed_values(row, side)
        texts[f"values_{side}"] = ", ".join(f"{100 * v:.1f}" if percent else f"{v:.3g}"
                                            for v in values) + (" %" if percent and values else "")
    return texts


def _number(value, percent: bool) -> str:
    if value is None or pd.isna(value):
        return "—"
    return f"{100 * value:.1f} %" if percent else f"{value:.3g}"


def _side_text(row: pd.Series, side: str, percent: bool) -> str:
    n = row[f"seeds_{side}"]
    if not n:
        return f"{row[side]}: no run"
    return f"{row[side]}: {_number(row[f'mean_{side}'], percent)} (n = {n})"


def _margin_text(row: pd.Series, percent: bool) -> str:
    if pd.isna(row["margin"]):
        return "—"
    scale, unit = (100, " pt") if percent else (1, "")
    return (f"{scale * row['margin']:+.3g}{unit} [{scale * row['low']:+.3g}, "
            f"{scale * row['high']:+.3g}]")


def figure(table: pd.DataFrame, result: str):
    """Result ``result``'s findings: one panel per finding and cell with runs (at most
    ``FIGURE_COLUMNS`` a row), each side's per-seed values as points over a bar of their mean,
    the chance level dashed, the verdict in the title (° where it is not kept family-wise),
    accuracies on one 0–100 % axis (a few points apart near chance look as small as they are);
    the cells without a run are counted in the figure's title, not drawn."""
    rows = table[table["result"] == result]
    drawn = [r for _, r in rows.iterrows() if _drawn(r)]
    fig, axes = _grid(len(drawn), 3.6)
    for ax, r in zip(axes, drawn):
        scale = _scale(r)
        for x, side in enumerate(("a", "b")):
            values = [scale * v for v in _seed_values(r, side)]
            if values:
                ax.bar(x, np.mean(values), width=0.6, color=SIDE_COLOURS[x], alpha=0.8)
                ax.scatter([x + 0.12 * (i - (len(values) - 1) / 2) for i in range(len(values))],
                           values, color="black", s=14, zorder=3, clip_on=False)  # 100 % whole
            else:
                ax.text(x, 0.5, "no run", ha="center", va="center", fontsize=7,
                        transform=ax.get_xaxis_transform())
        _value_axis(ax, r, scale)
        if pd.notna(r["chance"]) and r["chance"] is not None:
            ax.text(0.5, scale * r["chance"], "chance", color="#c53030", fontsize=6, ha="center",
                    va="bottom")  # between the bars, clear of both
        # a table without labels (written before they were): the variant names
        ax.set_xticks([0, 1], [_wrap(r.get(f"label_{s}", r[s])) for s in "ab"], fontsize=6)
        ax.set_xlim(-0.6, 1.6)  # both sides' places, also where one has no run
        _cell_title(ax, r)
    return _titled(fig, f"Result {result} (points: seeds; bar: mean)", len(rows), drawn)


def curves(findings: list[Finding], frame: pd.DataFrame, table: pd.DataFrame, result: str):
    """Result ``result``'s findings over training, the cells :func:`figure` draws: each side's
    metric at every evaluation of its finished runs (``metrics.jsonl``), a thin line per seed
    and a thick one for their mean at the steps every seed has, the chance level dashed. What a
    verdict at a small budget needs beside it: whether a side was still moving when training
    ended, which the final values alone do not show. ``table`` is :func:`evaluate`'s of
    ``findings`` on ``frame`` (its rows in the order of the findings' cells). None where no run
    has more than one evaluation (nothing to draw over training)."""
    from playground.report.plots import step_axis
    from playground.run.rundir import MetricsLog

    cells = _finding_cells(findings, table)
    rows = table[table["result"] == result]
    drawn = [(finding, cell, r) for (finding, cell), (_, r) in zip(cells, table.iterrows())
             if r["result"] == result and _drawn(r)]
    # per drawn cell, per side: each finished run's {step: metric at that evaluation}
    series = [[[{rec["step"]: rec[r["metric"]]
                 for rec in MetricsLog(Path(d) / "metrics.jsonl").records()
                 if rec.get("split") == "eval" and r["metric"] in rec}
                for d in runs[runs["status"] == "finished"].sort_values("seed")["run_dir"]]
               for runs in (side_runs(frame, side, cell, finding.seeds)
                            for side in finding.sides)]
              for finding, cell, r in drawn]
    if all(len(evals) < 2 for cell in series for side in cell for evals in side):
        return None
    fig, axes = _grid(len(drawn), 3.2)
    for ax, (finding, _, r), cell in zip(axes, drawn, series):
        scale = _scale(r)
        for x, (side, runs) in enumerate(zip(finding.sides, cell)):
            runs = [evals for evals in runs if evals]
            for evals in runs:
                steps = sorted(evals)
                ax.plot(steps, [scale * evals[t] for t in steps],
                        color=SIDE_COLOURS[x], lw=0.7, alpha=0.6, marker=".", ms=3)
            shared = sorted(set.intersection(*map(set, runs))) if runs else []
            ax.plot(shared, [scale * np.mean([evals[t] for evals in runs]) for t in shared],
                    color=SIDE_COLOURS[x], lw=2, marker="o", ms=3,
                    label=r.get(f"label_{'ab'[x]}", side.variant))
        _value_axis(ax, r, scale)
        ax.set_xlabel("step", fontsize=7)
        steps = sorted({t for runs in cell for evals in runs for t in evals})
        step_axis(ax, steps, few=6, most=5)
        ax.tick_params(axis="x", labelsize=7)
        ax.legend(fontsize=5, loc="best")
        _cell_title(ax, r)
    return _titled(fig, f"Result {result} over training (thin: seeds; thick: their mean; "
                        "dashed: chance)", len(rows), [r for _, _, r in drawn])


def _finding_cells(findings: list[Finding], table: pd.DataFrame) -> list[tuple[Finding, Cell]]:
    """Each row's finding and cell, in the order of ``table`` (:func:`evaluate`'s of ``findings``);
    a table of other findings is refused."""
    cells = [(finding, cell) for finding in findings for cell in finding.cells]
    if len(cells) != len(table):
        raise ValueError(f"{len(table)} rows for {len(cells)} finding cells: not evaluate's "
                         "table of these findings")
    return cells


def _column(row: pd.Series) -> str:
    """A finding cell's column in the summary and the forest: its panel and row (``mano L=4``)."""
    return f"{row['panel']} {row['row']}"


SIDE_COLOURS = ("#9aa5b1", "#2b6cb0")  # side A, side B
VERDICT_COLOURS = {"holds": "#2b6cb0", "reversed": "#c53030", "differs": "#dd6b20",
                   "suggestive": "#805ad5", "inconclusive": "#4a5568", "at chance": "#a0aec0"}


def forest(findings: list[Finding], table: pd.DataFrame):
    """Every finding cell in one figure: a line per finding, a column per cell (panel and row),
    the margin B − A in the claim's direction (accuracy points; KL for a KL metric) with its
    95 % interval, coloured by verdict, hollow where the verdict is not kept family-wise (°);
    a "same" claim's tolerance shaded around 0; "at chance" and "untested" written where they
    are. The claims' evidence side by side, for reading the table at a glance (the numbers:
    ``findings.md``). ``table`` is :func:`evaluate`'s of ``findings``."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    cells = _finding_cells(findings, table)
    columns = {}  # column -> its first row (its metric)
    for _, r in table.iterrows():
        columns.setdefault(_column(r), r)
    ids = list(dict.fromkeys(table["id"]))
    fig, axes = plt.subplots(1, len(columns), sharey=True, squeeze=False, layout="constrained",
                             figsize=(2.4 * len(columns) + 3.2, 0.32 * len(ids) + 1.6))
    axes = dict(zip(columns, axes.flat))
    for column, ax in axes.items():
        metric = columns[column]["metric"]
        ax.axvline(0, color="black", lw=0.7)
        ax.set_title(column, fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
        ax.set_xlabel("B − A, points" if _scale(columns[column]) == 100 else
                      f"A − B, {'KL' if metric == 'kl' else metric}", fontsize=7)
    for (finding, cell), (_, r) in zip(cells, table.iterrows()):
        ax, y = axes[_column(r)], ids.index(r["id"])
        scale = _scale(r)
        tolerance = finding.tolerance if cell.tolerance is None else cell.tolerance
        if finding.expect == "same":
            ax.fill_betweenx([y - 0.4, y + 0.4], -scale * tolerance, scale * tolerance,
                             color="#e2e8f0", lw=0)
        if r["verdict"] == "untested" or pd.isna(r["margin"]):
            ax.text(0, y, r["verdict"], fontsize=6, color="#a0aec0", ha="center", va="center")
            continue
        colour = VERDICT_COLOURS.get(r["verdict"], "#4a5568")
        if r["verdict"] == "at chance":
            ax.plot(scale * r["margin"], y, marker="x", color=colour, ms=5)
            continue
        ax.plot([scale * r["low"], scale * r["high"]], [y, y], color=colour, lw=1.5)
        ax.plot(scale * r["margin"], y, marker="o", ms=5, color=colour,
                markerfacecolor="white" if not_kept(r) else colour)
    claims = {r["id"]: f"{r['result']}: {r['claim']}" for _, r in table.iterrows()}
    first = next(iter(axes.values()))  # the axes share y: labels and limits on the first
    first.set_yticks(range(len(ids)), ["\n".join(textwrap.wrap(claims[i], 60)) for i in ids],
                     fontsize=5.5)
    first.set_ylim(len(ids) - 0.5, -0.5)  # the first finding on top
    present = set(table["verdict"])
    keys = [Line2D([], [], color=c, marker="x" if v == "at chance" else "o", lw=0 if
                   v == "at chance" else 1.5, label=v)
            for v, c in VERDICT_COLOURS.items() if v in present]
    if any(not_kept(r) for _, r in table.iterrows()):
        keys.append(Line2D([], [], color="#4a5568", marker="o", markerfacecolor="white", lw=1.5,
                           label="° not kept family-wise"))
    fig.legend(handles=keys, loc="outside lower center", ncol=len(keys), fontsize=6,
               frameon=False)
    title = ("Findings: margin in the claim's direction, 95 % interval; shaded: a \"same\" "
             f"claim's tolerance; family-wise: {family_text(table)}")
    fig.suptitle(textwrap.fill(title, int(14 * fig.get_figwidth())), fontsize=8)
    return fig


def _scale(r: pd.Series) -> int:
    """100 for an accuracy (drawn in percent), else 1."""
    return 100 if "acc" in r["metric"] else 1


def _value_axis(ax, r: pd.Series, scale: int) -> None:
    """A cell's value axis: the chance level dashed, the metric named, accuracies on 0–100 %."""
    if pd.notna(r["chance"]) and r["chance"] is not None:
        ax.axhline(scale * r["chance"], color="#c53030", ls="--", lw=1)
    ax.set_ylabel(f"{r['metric']} ({'%' if scale == 100 else 'lower is better'})", fontsize=7)
    ax.tick_params(axis="y", labelsize=7)
    if scale == 100:
        ax.set_ylim(0, 100)


def _drawn(row: pd.Series) -> bool:
    return bool(_seed_values(row, "a") or _seed_values(row, "b"))


def _grid(count: int, height: float):
    """A figure of ``count`` panels, at most ``FIGURE_COLUMNS`` a row, and its panels in order
    (the unused ones hidden; "no runs yet" where there are none)."""
    import matplotlib.pyplot as plt

    cols = min(max(count, 1), FIGURE_COLUMNS)
    lines = -(-max(count, 1) // cols)
    fig, axes = plt.subplots(lines, cols, figsize=(2.6 * cols, height * lines), squeeze=False,
                             layout="constrained")  # room for the suptitle at any height
    for ax in axes.flat[count:]:
        ax.axis("off")
    if not count:
        axes[0][0].text(0.5, 0.5, "no runs yet", ha="center", va="center", fontsize=8)
    return fig, list(axes.flat)


def _cell_title(ax, r: pd.Series) -> None:
    ax.set_title(f"{r['id']}: {r['panel']} {r['row']} {r['size']}\n{r['verdict']}"
                 f"{'°' if not_kept(r) else ''} (n = {r['seeds_a']} / {r['seeds_b']})",
                 fontsize=7)


def _titled(fig, title: str, cells: int, drawn: list[pd.Series]):
    """``fig`` with its title: ``title``, the cells without runs (of ``cells``) counted, ° noted."""
    untested = cells - len(drawn)
    title += (f"; {untested} cell{'s' * (untested != 1)} without runs not drawn" if untested
              else "") + ("; °\u00a0inconclusive family-wise" if any(not_kept(r) for r in drawn)
                       else "")
    fig.suptitle(textwrap.fill(title, int(14 * fig.get_figwidth())), fontsize=8)
    return fig


def _seed_values(row: pd.Series, side: str) -> list[float]:
    return [float(v) for v in str(row[f"values_{side}"]).split(";") if v not in ("", "nan")]


def _wrap(label: str) -> str:
    """A side's label on lines of about 16 characters (between words, or after ``_``)."""
    if " " not in label:
        return label.replace("_", "_\n", 2) if len(label) > 12 else label
    return "\n".join(textwrap.wrap(label, 16, break_long_words=False))
