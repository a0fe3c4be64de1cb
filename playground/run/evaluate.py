"""``playground-eval``: evaluate a run's checkpoint on its task's fixed eval set.

    playground-eval results/default/<run>                     # latest checkpoint, task's eval_size
    playground-eval results/default/<run> eval_size=2000 checkpoint=PATH device=cpu out=FILE.json

The eval set is the task's eval split (a seed stream disjoint from training) at its hardest
setting; metrics are printed and written to ``<run>/eval.json`` (or ``out=``), atomically.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from omegaconf import OmegaConf

from playground.cli import fail, int_arg, parse_args
from playground.config import from_container
from playground.errors import ConfigError
from playground.model import build_model
from playground.run import rundir as runs
from playground.run.device import pick_device
from playground.tasks import build_task

USAGE = __doc__
KNOWN = {"checkpoint": "", "eval_size": "0", "batch_size": "64", "device": "auto", "out": ""}


def evaluate_run(run_dir: Path, checkpoint: str = "", eval_size: int = 0, batch_size: int = 64,
                 device: str = "auto") -> dict:
    """Metrics of a run's checkpoint (the latest unless ``checkpoint`` is given)."""
    cfg = from_container(OmegaConf.to_container(OmegaConf.load(run_dir / "config.yaml")))
    if eval_size:
        cfg.task = dataclasses.replace(cfg.task, eval_size=eval_size)
    paths = runs.checkpoint_paths(run_dir / "checkpoints")
    path = Path(checkpoint) if checkpoint else (paths[-1] if paths else None)
    if path is None or not path.exists():
        raise FileNotFoundError(f"no checkpoint in {run_dir / 'checkpoints'}" if not checkpoint
                                else f"checkpoint={checkpoint} does not exist")
    task = build_task(cfg.task)
    model = build_model(cfg.model, len(task.vocab))
    state = runs.load_checkpoint(path)
    model.load_state_dict(state["model"])
    model.to(pick_device(device))
    metrics = task.evaluate(model, task.eval_examples(), batch_size)
    return {"checkpoint": str(path), "step": state["step"], "eval_size": cfg.task.eval_size,
            "primary_metric": task.primary_metric, "metrics": metrics}


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help") or "=" in argv[0]:
        print(USAGE)
        raise SystemExit(0 if argv and argv[0] in ("-h", "--help") else 2)
    run_dir = Path(argv[0])
    args, extra = parse_args(argv[1:], KNOWN)
    if extra:
        fail(f"unknown argument(s) {extra}; known: {sorted(KNOWN)}")
    if not (run_dir / "config.yaml").exists():
        fail(f"{run_dir} is not a run directory (no config.yaml)")
    try:
        result = evaluate_run(run_dir, args["checkpoint"], int_arg(args, "eval_size"),
                              int_arg(args, "batch_size", 1), args["device"])
    except (ConfigError, FileNotFoundError) as err:
        fail(str(err))
    for key, value in result["metrics"].items():
        print(f"{key:>16s}  {value:.4f}")
    out = Path(args["out"]) if args["out"] else run_dir / "eval.json"
    runs.write_json(out, result)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
