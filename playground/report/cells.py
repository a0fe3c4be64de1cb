"""From the run table to heatmap cells: the data side of ``playground-report``.

Every run is named in the paper's vocabulary (panel ``depo1_K8``, row ``N=225``, architecture
``llama_nope``, canon ``abcd_res``, size ``12L768D``) from the fields of its record, so our cells
line up with the paper's (``data/paper_heatmaps.csv``). A cell is the best finished run over
learning rates and seeds (the paper's choice), optionally the mean ± spread over seeds at the
best learning rate. Runs that failed, diverged or are missing are shown as such and never mixed
into a value.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from playground.errors import ConfigError
from playground.report.table import NOT_RUN

# unfinished but resumable: not failures ("pending": a run directory with a config.yaml and no
# summary.json yet, as the results browser reads it, report/site.py)
PENDING = ("running", "preempted", "interrupted", "pending")
LOWER_IS_BETTER = ("kl", "mass_outside", "loss", "ppl")  # and every *_loss
ROPE_NAMES = {"rope": "llama_rope", "nope": "llama_nope", "rope0.25": "llama_rope_quarter"}
CELL_KEYS = ["panel", "row", "row_index", "size", "architecture", "canon"]
PAPER_CSV = Path(__file__).resolve().parent / "data" / "paper_heatmaps.csv"


class RunTasks:
    """The task of each run (built from its ``config.yaml``), once per task config: what
    the reports ask of a task without a model (``Task.chance``, ``Task.question_counts``)."""

    def __init__(self):
        self.tasks: dict[str, object] = {}

    def __call__(self, run_dir) -> object:
        from omegaconf import OmegaConf

        from playground.config import from_container
        from playground.tasks import build_task

        config = OmegaConf.to_container(OmegaConf.load(Path(run_dir) / "config.yaml"))
        key = repr(sorted(config["task"].items()))
        if key not in self.tasks:
            self.tasks[key] = build_task(from_container(config).task)
        return self.tasks[key]


def row_chances(frame: pd.DataFrame, metric: str | None = None) -> dict:
    """(panel, row) -> the chance level of the value an ``annotate``d frame's cells show there
    (``metric``, else the task's own; ``Task.chance`` of a finished run's task), where the
    task gives one."""
    tasks, out = RunTasks(), {}
    done = frame[frame["status"] == "finished"] if "status" in frame else frame
    for (panel, row), runs in done.groupby(["panel", "row"]):
        run = runs.iloc[0]
        name = metric or run.get("record.task.metric")
        if isinstance(name, str) and (chance := tasks(run["run_dir"]).chance(name)) is not None:
            out[(panel, row)] = chance
    return out


def size_order(size: str) -> tuple:
    """Sizes in the paper's column order: by layers, then width (8L512D, 8L768D, 12L512D, …)."""
    m = re.match(r"(\d+)L(\d+)D", str(size))
    return (0, int(m.group(1)), int(m.group(2)), "") if m else (1, 0, 0, str(size))


def variant_order(frame: pd.DataFrame) -> list[tuple[str, str]]:
    """The (architecture, canon) pairs of ``frame``, in the order the panels lay them out: by
    architecture, each one's no-Canon variant first."""
    return sorted(dict.fromkeys(zip(frame["architecture"], frame["canon"])),
                  key=lambda v: (v[0], v[1] != "none", v[1]))


def architecture(run: pd.Series) -> str:
    """``llama_rope``, ``llama_nope``, ``llama_rope_quarter``, ``gla``, ``mamba2``,
    ``mamba2_mlp``… from the record's mixer, its position encoding and the MLP."""
    mixer = run.get("record.arch.mixer")
    if mixer == "attention":
        position = str(run.get("record.arch.position"))
        return ROPE_NAMES.get(position, f"llama_{position}")
    if mixer == "mamba2":
        return "mamba2" if run.get("record.arch.mlp") == "none" else "mamba2_mlp"
    return str(mixer)


def canon_id(run: pd.Series) -> str:
    """``abcd_res``, ``ab_nores``, ``conv1d``, ``noconv1d``, ``none``… as in the paper's figures,
    from the record's Canon fields and the mixer's own short convolution (``conv``)."""
    positions = run.get("record.canon.positions")
    if isinstance(positions, str) and positions:
        # one "_"-free word a detail (``initrandom_fixed`` -> ``initrandom-fixed``)
        details = [d.replace("_", "-") for d in run.get("record.canon.details") if d != "nores"]
        residual = "res" if run.get("record.canon.residual") else "nores"
        return "_".join(["".join(sorted(positions)).lower(), residual, *details])
    if run.get("record.arch.conv") == "conv1d":
        return "conv1d"
    return "noconv1d" if run.get("record.arch.mixer") == "mamba2" else "none"



def lower_is_better(metric: str | None) -> bool:
    """Whether the best run of a cell is the one with the lowest ``metric`` (KL, losses)."""
    return bool(metric) and (metric in LOWER_IS_BETTER or metric.endswith("_loss"))


def is_accuracy(metric: str | None) -> bool:
    """Whether ``metric`` (None: the paper's) is an accuracy,
    shown in percent on a 0–100 % scale."""
    return not metric or "acc" in metric


def metric_column(frame: pd.DataFrame, metric: str) -> str:
    """The column holding ``metric``: a task metric (``metrics.<metric>``) or a summary field."""
    for column in (f"metrics.{metric}", metric):
        if column in frame:
            return column
    known = sorted(c.split(".", 1)[1] for c in frame if c.startswith("metrics."))
    raise ConfigError(f"metric={metric!r} is invalid: no run records it; the runs record {known}")


def annotate(frame: pd.DataFrame, metric: str | None = None) -> pd.DataFrame:
    """Add the paper-vocabulary columns and each run's value(s) to a ``load_runs`` frame: the
    metrics its task states (the primary, and the secondary where there is one: Depo's accuracy
    at k = K and K/2), or ``metric`` when given (``kl``, ``acc_k1``, ``final_loss``…)."""
    frame = frame.copy()
    if frame.empty:
        return frame.assign(**{k: [] for k in CELL_KEYS + ["value", "value2"]})
    frame["panel"], frame["row"] = frame["record.task.panel"], frame["record.task.row"]
    frame["row_order"] = pd.to_numeric(frame["record.task.row_order"], errors="coerce")
    frame["architecture"] = frame.apply(architecture, axis=1)
    frame["canon"] = frame.apply(canon_id, axis=1)
    if metric:
        frame["value"], frame["value2"] = pd.to_numeric(frame[metric_column(frame, metric)],
                                                        errors="coerce"), np.nan
    else:
        frame["value"] = _stated(frame, "record.task.metric")
        frame["value2"] = _stated(frame, "record.task.metric2")
    order = frame.groupby("panel")["row_order"].rank(method="dense").astype(int) - 1
    frame["row_index"] = order
    return frame


def _stated(frame: pd.DataFrame, column: str) -> pd.Series:
    """Each run's value of the metric named in its ``column`` (NaN where none is named)."""
    names = frame.get(column, pd.Series(None, index=frame.index))
    return pd.Series([pd.to_numeric(run.get(f"metrics.{name}"), errors="coerce")
                      if isinstance(name, str) else np.nan
                      for name, (_, run) in zip(names, frame.iterrows())],
                     index=frame.index, dtype=float)


def best_mean_lr(done: pd.DataFrame, lower: bool) -> float:
    """The learning rate whose runs (finished, with a value) have the best mean value."""
    means = done.groupby("lr")["value"].mean()
    return means.idxmin() if lower else means.idxmax()


def _cell(group: pd.DataFrame, agg: str, lower: bool) -> dict:
    group = group[group["status"] != NOT_RUN]  # a sweep's planned runs (table.planned_runs)
    if group.empty:
        return {"n_runs": 0, "n_finished": 0, "n_failed": 0, "n_pending": 0, "failures": "",
                "status": NOT_RUN, "value": np.nan, "value2": np.nan}
    finished, pending = group["status"] == "finished", group["status"].isin(PENDING)
    done = group[finished & group["value"].notna()]
    failed = group[~finished & ~pending]
    out = {"n_runs": len(group), "n_finished": len(done), "n_failed": len(failed),
           "n_pending": int(pending.sum()),
           "failures": "; ".join(sorted(
               {f"{s}: {str(e)[:80]}" for s, e in zip(failed["status"], failed.get("error", ""))}))}
    if done.empty:
        status = "failed" if len(failed) else "pending" if pending.any() else "missing"
        return {**out, "status": status, "value": np.nan, "value2": np.nan}
    by_lr = done.groupby("lr")["value"].agg(["mean", "std", "count"])
    best = done.sort_values(["value", "value2"], ascending=lower).iloc[0]
    lr = best_mean_lr(done, lower) if agg == "mean" else best["lr"]
    value = by_lr.loc[lr, "mean"] if agg == "mean" else best["value"]
    runs_at_lr = done[done["lr"] == lr]
    at_lr = runs_at_lr.sort_values("value", ascending=lower).iloc[0]
    value2 = runs_at_lr["value2"].mean() if agg == "mean" else at_lr["value2"]
    return {**out, "status": "finished", "value": value, "value2": value2,
            "spread": by_lr.loc[lr, "std"], "seeds": int(by_lr.loc[lr, "count"]), "lr": lr,
            "best_run": at_lr["run"]}


def cells(frame: pd.DataFrame, agg: str = "best", lower: bool = False) -> pd.DataFrame:
    """One row per heatmap cell: ``agg='best'`` (the best run over lr and seed) or ``'mean'``
    (best lr by the mean over seeds, ``value2`` the mean of the second metric there too;
    ``spread`` is the first metric's standard deviation). Best is the
    highest value, or the lowest with ``lower`` (KL, losses). A cell whose runs are all still
    running or preempted is ``pending``, not ``failed``; a cell of only planned runs (rows of
    ``table.planned_runs``, there to lay out a sweep's whole grid) is ``not run``."""
    if frame.empty:
        return pd.DataFrame(columns=CELL_KEYS + ["status", "value", "value2"])
    rows = [{**dict(zip(CELL_KEYS, key)), **_cell(group, agg, lower)}
            for key, group in frame.groupby(CELL_KEYS, dropna=False)]
    return pd.DataFrame(rows).sort_values(["panel", "architecture", "canon", "row_index", "size"])


GAP_KEYS = ["panel", "row", "row_index", "architecture", "size"]


def gaps(frame: pd.DataFrame, canon: str = "abcd_res", lower: bool = False) -> pd.DataFrame:
    """Canon's gain per (panel, row, architecture, size): the runs with Canon ``canon`` against
    the same architecture's runs without Canon (``none``), each side at its learning rate of the
    best mean over seeds. ``gain`` is the mean with Canon minus the mean without (for a
    lower-is-better metric, without minus with), so it is positive where Canon does better;
    ``seed_gains`` are the same difference per seed that both sides ran (``paired_seeds``).
    ``params``: the runs' median non-embedding parameter count, where recorded."""
    done = frame[(frame["status"] == "finished") & frame["value"].notna()]
    sign = -1.0 if lower else 1.0
    rows = []
    for key, group in done.groupby(GAP_KEYS, dropna=False):
        sides = [group[group["canon"] == c] for c in ("none", canon)]
        if any(side.empty for side in sides):
            continue
        sides = [side[side["lr"] == best_mean_lr(side, lower)] for side in sides]
        without, with_ = (side.groupby("seed")["value"].mean() for side in sides)
        paired = sorted(set(without.index) & set(with_.index))
        params = group.get("params.non_embedding", pd.Series(dtype=float)).dropna()
        rows.append({**dict(zip(GAP_KEYS, key)), "canon": canon,
                     "gain": sign * (with_.mean() - without.mean()),
                     "value_without": without.mean(), "value_with": with_.mean(),
                     "seeds_without": len(without), "seeds_with": len(with_),
                     "lr_without": sides[0]["lr"].iloc[0], "lr_with": sides[1]["lr"].iloc[0],
                     "paired_seeds": ";".join(str(int(s)) for s in paired),
                     "seed_gains": ";".join(f"{sign * (with_[s] - without[s]):.6g}"
                                            for s in paired),
                     "params": params.median() if len(params) else np.nan})
    columns = [*GAP_KEYS, "canon", "gain", "value_without", "value_with", "seeds_without",
               "seeds_with", "lr_without", "lr_with", "paired_seeds", "seed_gains", "params"]
    if not rows:
        return pd.DataFrame(columns=columns)
    table = pd.DataFrame(rows, columns=columns)
    table["size_rank"] = table["size"].map(size_order)
    return (table.sort_values(["panel", "architecture", "row_index", "size_rank"])
            .drop(columns="size_rank").reset_index(drop=True))


def paper_cells(figure: int | None = None, path: Path = PAPER_CSV) -> pd.DataFrame:
    """The transcribed paper cells as (panel, row, row_index, size, architecture, canon, value,
    value2) in the same units as ours (fractions)."""
    ref = pd.read_csv(path)
    if figure is not None:
        ref = ref[ref["figure"] == figure]
    ref = ref.rename(columns={"task": "panel", "row_label": "row"})
    ref["value"] = ref["value"] / 100.0
    key = ["figure", "panel", "architecture", "canon", "row", "size"]
    wide = ref.pivot_table(index=key, columns="metric", values="value",
                           aggfunc="first").reset_index()
    wide["value"] = wide.get("acc_k_K", pd.Series(np.nan, index=wide.index)).fillna(wide.get("acc"))
    wide["value2"] = wide.get("acc_k_K2", pd.Series(np.nan, index=wide.index))
    wide["row_order"] = wide["row"].str.extract(r"(\d+)$")[0].astype(float).fillna(
        wide["row"].map(lambda r: float(sum(map(ord, r)))))
    wide["row_index"] = (wide.groupby(["figure", "panel"])["row_order"].rank(method="dense")
                         .astype(int) - 1)
    return wide.drop(columns=[c for c in ("acc_k_K", "acc_k_K2", "acc") if c in wide])


def versus_paper(ours: pd.DataFrame, figure: int) -> pd.DataFrame:
    """Every transcribed cell of ``figure`` next to ours (matched by panel, architecture, canon,
    row position and size; rows differ in difficulty at mini scale, so both labels are kept)."""
    ref = paper_cells(figure)
    mine = ours[["panel", "architecture", "canon", "row_index", "size", "row", "value",
                 "value2", "status"]]
    merged = ref.merge(mine, on=["panel", "architecture", "canon", "row_index", "size"], how="left",
                       suffixes=("_paper", "_ours"))
    merged["status"] = merged["status"].fillna("missing")
    merged["diff"] = merged["value_ours"] - merged["value_paper"]
    return merged.sort_values(["panel", "architecture", "canon", "row_index",
                               "size"]).reset_index(drop=True)


# -- Capo ------------------------------------------------------------------------------------


CAPO_COLUMNS = {"record.task.difficulty.N": "N", "record.task.difficulty.E": "E", "size": "size",
                "arch": "arch", "metrics.params_used": "params", "metrics.bits": "bits",
                "metrics.bits_per_param": "bits_per_param", "metrics.bits_upper": "bits_upper",
                "lr": "lr", "seed": "seed", "step": "step", "run": "run"}


def capo_table(runs: pd.DataFrame, best: bool = True) -> pd.DataFrame:
    """Finished Capo runs as rows (N, E, size, arch, params, bits, …); with ``best``, only the
    run with the most bits per (N, E, arch, size): the paper's best over a learning-rate grid."""
    if runs.empty or "record.task.family" not in runs or "metrics.bits" not in runs:
        return pd.DataFrame(columns=list(CAPO_COLUMNS.values()))
    keep = ((runs["record.task.family"] == "capo") & (runs["status"] == "finished")
            & runs["metrics.bits"].notna())
    df = runs[keep].copy()
    df["arch"] = (df["record.arch.label"].astype(str) + " canon-"
                  + df["record.canon.label"].astype(str))
    df = df[[c for c in CAPO_COLUMNS if c in df]].rename(columns=CAPO_COLUMNS)
    if best and not df.empty:
        df = df.loc[df.groupby(["N", "E", "arch", "size"])["bits"].idxmax()]
    return df.sort_values(["N", "E", "arch", "params"]).reset_index(drop=True)
