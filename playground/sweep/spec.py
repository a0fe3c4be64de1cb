"""Sweep files (``sweeps/<name>.yaml``): a declarative grid of runs, expanded into each run's
Hydra overrides.

A sweep file names its grid: ``rows`` per scale (task and difficulty, with that row's recipe,
zipped; a row's ``panel`` names the heatmap it belongs to), ``variants`` (named
architecture/Canon settings, zipped) and ``grid`` (crossed: sizes, learning rates, seeds; an
axis given as a mapping from size to values, e.g. ``train.lr: {8L512D: 1.0e-3, 8L768D: [5.0e-4,
1.0e-3]}``, takes each size's own values). Every run lands in
``results/<name>_<scale>/<run_name>/`` (``root=`` replaces ``results``) and records its panel
and variant (``panel=`` / ``variant=``). Extra ``key=value`` arguments go to every run, after the
rows' recipes (so ``task.K=4`` replaces a row's ``task.K``); one that names a grid axis
(``seed=0,1``, ``size=8L512D``) replaces that axis instead; one that names a variant's key is
refused (choose the variants with ``variants=``).
"""

from __future__ import annotations

import copy
import functools
import itertools
from dataclasses import dataclass, field
from pathlib import Path

from omegaconf import OmegaConf

from playground.config import shipped
from playground.errors import ConfigError

SWEEPS_DIR = shipped("sweeps")
FILE_KEYS = {"name", "description", "figure", "metric", "grid", "variants", "scales", "report"}
SCALE_KEYS = {"overrides", "grid", "rows", "cost"}
# a grid: axis -> its values, or (an axis by size) size label -> that size's values
Grid = dict[str, "list[str] | dict[str, list[str]]"]


@dataclass
class Sweep:
    name: str
    scale: str
    common: list[str]  # the scale's overrides of every run (the rows' recipes come after them)
    # (panel or "", overrides, row's own grid)
    rows: list[tuple[str, list[str], Grid]]
    variants: dict[str, list[str]]
    grid: Grid
    root: str = "results"  # the runs land in <root>/<name>_<scale>/<run_name>/
    # the command line's overrides of every run: last
    extra: list[str] = field(default_factory=list)

    @property
    def sweep_dir(self) -> str:
        return f"{self.name}_{self.scale}"

    @property
    def folder(self) -> Path:
        return Path(self.root) / self.sweep_dir

    def blocks(self, row_grid: Grid, panel: str = "") -> list[dict[str, list[str]]]:
        """A row's grid (the sweep's, its own over it) as crossed blocks: the grid itself, or,
        where an axis is given by size, one block per size with that size's values (refused
        where the grid has no size axis, or the axis no value for one of its sizes)."""
        grid = {**self.grid, **row_grid}
        by_size = {k: v for k, v in grid.items() if isinstance(v, dict)}
        if not by_size:
            return [grid]
        for key, values in by_size.items():
            where = f"sweep {self.name}: scales.{self.scale}, panel {panel or '(none)'}: {key}"
            if key == "size" or "size" not in grid or "size" in by_size:
                raise ConfigError(f"{where} is given by size, but the grid has no size axis of "
                                  "its own to take it from")
            if missing := [size for size in grid["size"] if size not in values]:
                raise ConfigError(f"{where} has no value for size(s) {missing}; it lists "
                                  f"{sorted(values)} (add them, or pass {key}=... for every size)")
        return [{k: [size] if k == "size" else by_size[k][size] if k in by_size else v
                 for k, v in grid.items()} for size in grid["size"]]

    def runs(self) -> list[list[str]]:
        """Every run's full override list: rows × variants × grid product."""
        out = []
        for panel, row, row_grid in self.rows:
            for name, variant in self.variants.items():
                for grid in self.blocks(row_grid, panel):
                    for values in itertools.product(*grid.values()):
                        point = [f"{k}={v}" for k, v in zip(grid, values)]
                        out.append([*self.common, *row, *variant, *self.labels(panel, name),
                                    *point, *self.extra, f"sweep={self.sweep_dir}",
                                    f"out_dir={self.folder}/${{run_name}}"])
        return out

    @staticmethod
    def labels(panel: str, variant: str) -> list[str]:
        """What a run records of its place in the sweep (``panel=``, ``variant=``)."""
        return ([f"panel={panel}"] if panel else []) + [f"variant={variant}"]


def _pairs(mapping, where: str) -> list[str]:
    if mapping is None:
        return []
    if not isinstance(mapping, dict):
        raise ConfigError(f"{where} must be a mapping of key: value")
    return [f"{k}={_text(v)}" for k, v in mapping.items() if k not in ("panel", "grid")]


def _grid(mapping) -> Grid:
    """A grid mapping (key: value or list of values, or a mapping from size to either) as lists
    of override strings."""
    def values(vals) -> list[str]:
        return [_text(v) for v in (vals if isinstance(vals, list) else [vals])]

    return {k: {str(size): values(v) for size, v in vals.items()} if isinstance(vals, dict)
            else values(vals) for k, vals in (mapping or {}).items()}


def _text(value) -> str:
    if isinstance(value, list):
        return "[" + ",".join(_text(v) for v in value) + "]"
    return str(value)


def find_sweep_file(name: str) -> Path:
    path = Path(name)
    if path.suffix in (".yaml", ".yml") and path.exists():
        return path
    path = SWEEPS_DIR / f"{name}.yaml"
    if not path.exists():
        known = sorted(p.stem for p in SWEEPS_DIR.glob("*.yaml"))
        raise ConfigError(f"no sweep named {name!r}; known sweeps: {known}")
    return path


@functools.lru_cache(maxsize=32)
def _read(path: str, mtime_ns: int, size: int) -> dict:
    """A sweep file's content, parsed once per version of the file (parsing one takes ~0.2 s;
    the findings load each sweep file for every finding, cell and side)."""
    return OmegaConf.to_container(OmegaConf.load(path), resolve=True)


def read_sweep_file(path: Path) -> dict:
    """A sweep file's content, parsed (a copy: the caller may change it)."""
    stat = Path(path).stat()
    return copy.deepcopy(_read(str(path), stat.st_mtime_ns, stat.st_size))


def report_metrics(path: Path, panel: str) -> list[str]:
    """The metrics ``playground-report panel`` draws for ``panel`` beside the task's own: the
    file's ``report`` (panel -> metric names, e.g. ``report: {lano: [kl]}``); none unless
    named there."""
    spec = read_sweep_file(path)
    report = spec.get("report") or {}
    if not isinstance(report, dict) or not all(
            isinstance(names, list) and all(isinstance(n, str) for n in names)
            for names in report.values()):
        raise ConfigError(f"{path}: report={report!r} is invalid: expected panels mapped to "
                          "lists of metric names, e.g. report: {lano: [kl]}")
    panels = {row.get("panel") for sc in (spec.get("scales") or {}).values()
              for row in sc.get("rows") or []}
    if unknown := sorted(set(report) - panels):
        raise ConfigError(f"{path}: report names panel(s) {unknown} that no row of the file has; "
                          f"its panels: {sorted(p for p in panels if p)}")
    return list(report.get(panel, []))


def load_sweep(path: Path, scale: str, panels: str = "", extra: list[str] = (),
               only_variants: str = "") -> Sweep:
    spec = read_sweep_file(path)
    unknown = set(spec) - FILE_KEYS
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {sorted(unknown)}; allowed: {sorted(FILE_KEYS)}")
    scales = spec.get("scales") or {}
    if scale not in scales:
        raise ConfigError(f"scale={scale!r} is invalid for {path.name}: "
                          f"expected one of {sorted(scales)}")
    sc = scales[scale]
    bad = set(sc) - SCALE_KEYS
    if bad:
        raise ConfigError(f"{path}: scales.{scale} has unknown key(s) {sorted(bad)}; allowed: "
                          f"{sorted(SCALE_KEYS)}")
    grid = {**_grid(spec.get("grid")), **_grid(sc.get("grid"))}
    wanted = set(panels.split(",")) if panels else None
    rows = [(row.get("panel", ""), _pairs(row, f"scales.{scale}.rows"), _grid(row.get("grid")))
            for row in sc.get("rows") or []]
    rows = [r for r in rows if wanted is None or r[0] in wanted]
    if not rows:
        raise ConfigError(f"{path}: no rows for scale={scale} and panels={panels or 'all'}")
    variants = {n: _pairs(v, f"variants.{n}")
                for n, v in (spec.get("variants") or {"default": {}}).items()}
    if only_variants:
        names = only_variants.split(",")
        if unknown := [n for n in names if n not in variants]:
            raise ConfigError(f"variants={unknown} not in {path.name}; known: {sorted(variants)}")
        variants = {n: variants[n] for n in names}
    axes = set(grid).union(*(r[2] for r in rows))
    own = {item.partition("=")[0] for v in variants.values() for item in v}  # and the labels below
    if clash := [item for item in extra
                 if item.partition("=")[0] in own | {"panel", "variant", "sweep", "out_dir"}]:
        raise ConfigError(f"{clash[0]!r}: {clash[0].partition('=')[0]} is set by the sweep itself "
                          "(its variants or labels); choose variants with variants=..., and the "
                          "runs' folder with root=...")
    for item in extra:  # an extra argument naming a grid axis replaces the axis
        key, _, value = item.partition("=")
        if key in axes:
            grid[key] = value.split(",")
            rows = [(panel, row, {k: v for k, v in row_grid.items() if k != key})
                    for panel, row, row_grid in rows]
    extra = [item for item in extra if item.partition("=")[0] not in axes]
    common = _pairs(sc.get("overrides"), f"scales.{scale}.overrides")
    sweep = Sweep(spec.get("name", path.stem), scale, common, rows, variants, grid,
                  extra=list(extra))
    for panel, _, row_grid in rows:  # an axis given by size is checked before any run
        sweep.blocks(row_grid, panel)
    return sweep
