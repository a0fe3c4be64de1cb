"""``playground-sweep``: run a declarative figure sweep (``sweeps/<name>.yaml``) at a scale.

    playground-sweep fig7 scale=mini                      # Hydra multirun, one row after another
    playground-sweep fig7 scale=mini launcher=local gpus=8  # one run per GPU on this host
    playground-sweep mqar scale=mini launcher=local per_gpu=8  # tiny models: 8 runs share each GPU
    playground-sweep fig7 scale=paper launcher=slurm hydra.launcher.partition=gpu
    playground-sweep fig7 scale=cpu panels=depo1 dry_run=true  # list the runs, launch nothing

A sweep file names its grid: ``rows`` per scale (task and difficulty, with that row's recipe,
zipped), ``variants`` (named architecture/Canon settings, zipped) and ``grid`` (crossed: sizes,
learning rates, seeds). Every run lands in ``results/<name>_<scale>/<run_name>/``; a rerun skips
finished runs and resumes interrupted ones. Other ``key=value`` arguments go to every run; one
that names a grid axis (``seed=0,1``, ``size=8L512D``) replaces that axis instead. The local
launcher starts the costliest runs first, so that a sweep of mixed sizes ends with its slots full.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from omegaconf import OmegaConf

from playground.cli import fail, int_arg, parse_args

SWEEPS_DIR = Path(__file__).resolve().parents[2] / "sweeps"
KNOWN = {"scale": "mini", "launcher": "basic", "gpus": "0", "per_gpu": "1", "dry_run": "false",
         "panels": "", "variants": ""}
FILE_KEYS = {"name", "description", "figure", "metric", "grid", "variants", "scales"}
SCALE_KEYS = {"overrides", "grid", "rows", "cost"}
LAUNCHERS = ("basic", "local", "slurm")


@dataclass
class Sweep:
    name: str
    scale: str
    common: list[str]  # overrides of every run
    rows: list[tuple[str, list[str], dict[str, list[str]]]]  # (panel, overrides, row's own grid)
    variants: dict[str, list[str]]
    grid: dict[str, list[str]]

    @property
    def sweep_dir(self) -> str:
        return f"{self.name}_{self.scale}"

    def runs(self) -> list[list[str]]:
        """Every run's full override list: rows × variants × grid product."""
        out = []
        for _, row, row_grid in self.rows:
            grid = {**self.grid, **row_grid}
            for variant in self.variants.values():
                for values in itertools.product(*grid.values()):
                    point = [f"{k}={v}" for k, v in zip(grid, values)]
                    out.append([*self.common, *row, *variant, *point, f"sweep={self.sweep_dir}"])
        return out


def _pairs(mapping, where: str) -> list[str]:
    if mapping is None:
        return []
    if not isinstance(mapping, dict):
        fail(f"{where} must be a mapping of key: value")
    return [f"{k}={_text(v)}" for k, v in mapping.items() if k not in ("panel", "grid")]


def _grid(mapping) -> dict[str, list[str]]:
    """A grid mapping (key: value or list of values) as lists of override strings."""
    return {k: [_text(v) for v in (vals if isinstance(vals, list) else [vals])]
            for k, vals in (mapping or {}).items()}


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
        fail(f"no sweep named {name!r}; known sweeps: {known}")
    return path


def load_sweep(path: Path, scale: str, panels: str = "", extra: list[str] = (),
               only_variants: str = "") -> Sweep:
    spec = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    unknown = set(spec) - FILE_KEYS
    if unknown:
        fail(f"{path}: unknown key(s) {sorted(unknown)}; allowed: {sorted(FILE_KEYS)}")
    scales = spec.get("scales") or {}
    if scale not in scales:
        fail(f"scale={scale!r} is invalid for {path.name}: expected one of {sorted(scales)}")
    sc = scales[scale]
    bad = set(sc) - SCALE_KEYS
    if bad:
        fail(f"{path}: scales.{scale} has unknown key(s) {sorted(bad)}; allowed: {sorted(SCALE_KEYS)}")
    grid = {**_grid(spec.get("grid")), **_grid(sc.get("grid"))}
    wanted = set(panels.split(",")) if panels else None
    rows = [(row.get("panel", "all"), _pairs(row, f"scales.{scale}.rows"), _grid(row.get("grid")))
            for row in sc.get("rows") or []]
    rows = [r for r in rows if wanted is None or r[0] in wanted]
    if not rows:
        fail(f"{path}: no rows for scale={scale} and panels={panels or 'all'}")
    variants = {n: _pairs(v, f"variants.{n}") for n, v in (spec.get("variants") or {"default": {}}).items()}
    if only_variants:
        names = only_variants.split(",")
        if unknown := [n for n in names if n not in variants]:
            fail(f"variants={unknown} not in {path.name}; known: {sorted(variants)}")
        variants = {n: variants[n] for n in names}
    axes = set(grid).union(*(r[2] for r in rows))
    for item in extra:  # an extra argument naming a grid axis replaces the axis
        key, _, value = item.partition("=")
        if key in axes:
            grid[key] = value.split(",")
            rows = [(panel, row, {k: v for k, v in row_grid.items() if k != key}) for panel, row, row_grid in rows]
    extra = [item for item in extra if item.partition("=")[0] not in axes]
    common = _pairs(sc.get("overrides"), f"scales.{scale}.overrides") + list(extra)
    return Sweep(spec.get("name", path.stem), scale, common, rows, variants, grid)


def multirun_commands(sweep: Sweep, launcher: str) -> list[list[str]]:
    """One Hydra multirun per (row, variant); the grid becomes Hydra's comma sweeps."""
    extra = ["hydra/launcher=slurm"] if launcher == "slurm" else []
    commands = []
    for _, row, row_grid in sweep.rows:
        grid = [f"{k}={','.join(v)}" for k, v in {**sweep.grid, **row_grid}.items()]
        for variant in sweep.variants.values():
            commands.append([sys.executable, "-m", "playground.run.train", "-m", *sweep.common, *row,
                             *variant, *grid, f"sweep={sweep.sweep_dir}", *extra])
    return commands


def run_local(runs: list[list[str]], gpus: int, log_dir: Path, per_gpu: int = 1) -> int:
    """Run each run in its own process, ``per_gpu`` runs on each of ``gpus`` GPUs at a time;
    returns the number of failed runs."""
    log_dir.mkdir(parents=True, exist_ok=True)
    devices = _device_ids(gpus)
    free, active, failures = [d for _ in range(per_gpu) for d in devices], {}, 0
    queue = [(i, runs[i]) for i in longest_first(runs)] if len(runs) > len(free) else list(enumerate(runs))
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        while queue or active:
            while queue and free:
                index, overrides = queue.pop(0)
                gpu = free.pop(0)
                env = {**os.environ, **({"CUDA_VISIBLE_DEVICES": gpu} if gpus else {})}
                log = open(log_dir / f"run{index:04d}.log", "w")  # noqa: SIM115 - closed when it ends
                proc = subprocess.Popen([sys.executable, "-m", "playground.run.train", *overrides],
                                        stdout=log, stderr=subprocess.STDOUT, env=env)
                active[proc] = (gpu, log, index)
            for proc in [p for p in active if p.poll() is not None]:
                gpu, log, index = active.pop(proc)
                log.close()
                free.append(gpu)
                failures += proc.returncode != 0
                print(f"run {index}: exit {proc.returncode} (log {log.name})", flush=True)
            time.sleep(0.2)
    except KeyboardInterrupt:  # SIGTERM/Ctrl-C: each run checkpoints as preempted; wait for them
        for proc in active:
            proc.send_signal(signal.SIGTERM)
        for proc, (_, log, _) in active.items():
            proc.wait()
            log.close()
        print(f"sweep interrupted: {len(active)} run(s) stopped resumably, {len(queue)} not started", flush=True)
        raise SystemExit(130) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    return failures


def longest_first(runs: list[list[str]]) -> list[int]:
    """The runs' indices, costliest first (layers × width² × training tokens of each composed
    config; ties keep the sweep's order). With more runs than slots, starting the long runs first
    keeps every slot busy to the end instead of leaving the longest runs alone at the tail."""
    from playground.config import compose

    def cost(overrides: list[str]) -> int:
        c = compose(overrides)
        return c.model.n_layers * c.model.d_model**2 * c.train.steps * c.train.batch_size * c.task.context

    costs = [cost(r) for r in runs]
    return sorted(range(len(runs)), key=costs.__getitem__, reverse=True)  # stable: ties keep order


def _device_ids(gpus: int) -> list[str]:
    """The ``gpus`` device ids the runs go to: the first of those this process may see
    (``CUDA_VISIBLE_DEVICES=2,3 playground-sweep … gpus=2`` uses GPUs 2 and 3), else 0…gpus-1."""
    if not gpus:
        return [""]
    visible = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    if not visible:
        return [str(g) for g in range(gpus)]
    if gpus > len(visible):
        fail(f"gpus={gpus} is more than the {len(visible)} device(s) in CUDA_VISIBLE_DEVICES={','.join(visible)}")
    return visible[:gpus]


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help") or "=" in argv[0]:
        print(__doc__)
        raise SystemExit(0 if argv and argv[0] in ("-h", "--help") else 2)
    args, extra = parse_args(argv[1:], KNOWN)
    if args["launcher"] not in LAUNCHERS:
        fail(f"launcher={args['launcher']!r} is invalid: expected one of {LAUNCHERS}")
    sweep = load_sweep(find_sweep_file(argv[0]), args["scale"], args["panels"], extra, args["variants"])
    runs = sweep.runs()
    print(f"sweep {sweep.name} at scale={sweep.scale}: {len(runs)} runs -> results/{sweep.sweep_dir}/")
    if args["dry_run"].lower() in ("true", "1", "yes"):
        dry_run(sweep, runs, args["launcher"])
        return
    if args["launcher"] == "local":
        gpus, per_gpu = int_arg(args, "gpus") or _gpu_count(), int_arg(args, "per_gpu", minimum=1)
        failures = run_local(runs, gpus, Path("results") / sweep.sweep_dir / ".logs", per_gpu)
    else:
        failures = sum(subprocess.run(cmd).returncode != 0 for cmd in multirun_commands(sweep, args["launcher"]))
    print(f"sweep {sweep.name}: done ({failures} launcher failures; see each run's summary.json)")
    raise SystemExit(1 if failures else 0)


def dry_run(sweep: Sweep, runs: list[list[str]], launcher: str) -> None:
    for overrides in runs:
        print("  playground-train " + " ".join(overrides))
    if launcher == "slurm":  # show what submitit would be given, without submitting anything
        cmd = [sys.executable, "-m", "playground.run.train", *runs[0], "hydra/launcher=slurm", "--cfg", "hydra",
               "--package", "hydra.launcher"]
        print(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)


def _gpu_count() -> int:
    try:
        import torch

        return torch.cuda.device_count()
    except ImportError:  # pragma: no cover - torch is a dependency
        return 0


if __name__ == "__main__":
    main()
