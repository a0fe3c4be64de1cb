"""Run directories → one tidy table (a pandas DataFrame, one row per run).

Each row is the run's flattened ``summary.json`` (``status``, ``metrics.*``, ``params.*``,
``tokens_per_s``…), its record (``record.task.family``, ``record.task.panel``,
``record.arch.mixer``, ``record.canon.positions``, ``record.size.width``…: what the run *is*,
``playground.run.rundir.run_record``), its flattened resolved config (``config.task.N``…), and
``run_dir`` / ``run`` (the directory, and its path relative to the folder read). ``size``,
``lr`` and ``seed`` are the record's, as columns of their own for grouping. Runs written before
records existed get theirs from their ``config.yaml`` by the same function; nothing is read from
a run's name.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
from omegaconf import OmegaConf

from playground.cli import read_json
from playground.errors import ConfigError
from playground.run.rundir import hash_mismatch, record_of

NOT_RUN = "not run"  # the status of a run a sweep plans that has no run directory (planned_runs)
# summary keys of runs written without a record (their values come from the record or config.yaml)
LEGACY = ("task", "task_name", "difficulty", "size", "mixer", "mixer_tag", "mlp", "layers",
          "canon", "lr", "seed", "data_seed")


def flatten(tree: dict, prefix: str = "") -> dict:
    """{"a": {"b": 1}} -> {"a.b": 1}; lists stay values."""
    flat: dict = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def results_folder(text: str | Path, start: Path | None = None) -> Path:
    """The results folder ``text`` names (e.g. ``PLAYGROUND_RESULTS``): as given if absolute;
    else under the working directory ``start`` if it is there, else under the repository root
    (the nearest folder at or above ``start`` with a ``pyproject.toml``; a notebook's kernel
    works in ``notebooks/``); else under ``start``, where :func:`load_runs` finds no runs."""
    path = Path(text).expanduser()
    if path.is_absolute():
        return path
    start = Path(start or Path.cwd()).resolve()
    root = next((d for d in (start, *start.parents) if (d / "pyproject.toml").is_file()), start)
    return next((base / path for base in (start, root) if (base / path).exists()), start / path)


def run_dirs(root: Path) -> list[Path]:
    """Every directory under ``root`` (or ``root`` itself) holding a summary.json."""
    root = Path(root)
    return sorted(p.parent for p in root.rglob("summary.json") if "checkpoints" not in p.parts)


def load_run(d: Path, root: Path) -> dict:
    """One run's row; ``refused`` says why the run cannot be trusted (see ``check_integrity``)."""
    summary = read_json(d / "summary.json")
    config = (OmegaConf.to_container(OmegaConf.load(d / "config.yaml"))
              if (d / "config.yaml").exists() else None)
    try:
        record = record_of(summary, config) or {}
    except (ConfigError, KeyError, ValueError) as err:  # a config the current schema cannot read
        print(f"{d}: no record ({err})", file=sys.stderr)
        record = {}
    row = flatten({k: v for k, v in summary.items() if k not in LEGACY and k != "record"})
    row.update(flatten(record, "record."))
    row.update(size=record.get("size", {}).get("label"), lr=record.get("lr"),
               seed=record.get("seed"))
    row["refused"] = refusal(d, summary, config)
    if config is not None:
        row.update(flatten({k: v for k, v in config.items() if k != "hydra"}, "config."))
    row["run_dir"], row["run"] = str(d), str(d.relative_to(root)) if d != root else d.name
    return row


def refusal(d: Path, summary: dict, config: dict | None) -> str | None:
    """Why a finished run cannot be trusted: its config.yaml does not match the config hash in
    its summary, or declares another run directory (``out_dir``); None when it can."""
    if summary.get("status") != "finished" or config is None:
        return None
    if hash_mismatch(summary, config):
        return f"{d}: config.yaml does not match the config hash in summary.json"
    if config.get("out_dir") and Path(config["out_dir"]).name != d.name:
        return f"{d}: its config declares another run directory ({config['out_dir']})"
    return None


def load_runs(path: str | Path, strict: bool = False) -> pd.DataFrame:
    """One row per run directory under ``path`` (any depth); see the module docstring. A run
    whose summary.json or config.yaml cannot be read is skipped with a warning naming it (with
    ``strict``, a ConfigError)."""
    root = Path(path)
    rows = []
    for d in run_dirs(root):
        try:
            rows.append(load_run(d, root))
        except Exception as err:  # noqa: BLE001 - JSON, YAML, encoding or OmegaConf errors alike
            message = (f"{d}: a damaged summary.json or config.yaml ({type(err).__name__}: "
                       f"{str(err)[:80]})")
            if strict:
                raise ConfigError(message) from None
            print(f"skipped {message}; the report goes on without it (strict=true stops instead)",
                  file=sys.stderr)
    return pd.DataFrame(rows)


def planned_record(overrides: list[str], compose=None) -> dict:
    """The flattened record (``record.*``) of the run that a sweep's ``overrides`` compose (with
    ``compose``, e.g. a ``config.Composer``), as the run would write it: no run needed."""
    from playground.config import compose as compose_one
    from playground.config import from_container
    from playground.run.rundir import run_record

    config = (compose or compose_one)(overrides)
    return flatten(run_record(from_container(OmegaConf.to_container(config, resolve=True))),
                   "record.")


def planned_runs(grid: str, panel: str = "") -> pd.DataFrame:
    """One row per run of the sweep ``grid`` names (``NAME:SCALE``, e.g. ``fig7:mini``; ``panel``'s
    runs only, when given), with the record the run will have and the status ``not run``: the
    cells a report lays out before (or without) their runs."""
    from playground.config import Composer
    from playground.sweep.spec import find_sweep_file, load_sweep

    name, _, scale = grid.rpartition(":")
    if not name or not scale:
        raise ConfigError(f"grid={grid!r} is invalid: expected SWEEP:SCALE, e.g. fig7:mini")
    sweep, compose, rows = load_sweep(find_sweep_file(name), scale, panel), Composer(), []
    for overrides in sweep.runs():
        record = planned_record(overrides, compose)
        rows.append({**record, "status": NOT_RUN, "size": record.get("record.size.label"),
                     "lr": record.get("record.lr"), "seed": record.get("record.seed"),
                     "run_dir": "", "run": ""})
    return pd.DataFrame(rows)


def check_integrity(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Keep runs whose recorded config hash matches their config.yaml and whose directory is
    the one their config declares (``out_dir``); return the rest as messages (refused)."""
    refused = (frame["refused"].notna() if "refused" in frame
               else pd.Series(False, index=frame.index))
    return (frame.loc[~refused].drop(columns="refused", errors="ignore"),
            frame.loc[refused, "refused"].tolist())
