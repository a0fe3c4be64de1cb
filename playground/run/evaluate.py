"""``playground-eval``: evaluate a run's checkpoint on its task's fixed eval set.

    playground-eval results/default/<run>                     # latest checkpoint, task's eval_size
    playground-eval results/default/<run> eval_size=2000 checkpoint=PATH device=cpu out=FILE.json

The eval set is the task's eval split (a seed stream disjoint from training) at its hardest
setting; metrics are printed and written to ``<run>/eval.json`` (or ``out=``), atomically.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from omegaconf import OmegaConf

from playground.cli import Args, Command, write_json
from playground.cli import main as cli_main
from playground.config import from_container
from playground.errors import ConfigError
from playground.model import build_model
from playground.run import rundir as runs
from playground.run.device import pick_device
from playground.tasks import build_task


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


def cmd_eval(args: Args) -> None:
    run_dir = Path(args.positional[0])
    if not (run_dir / "config.yaml").exists():
        raise ConfigError(f"RUN_DIR={run_dir} is invalid: not a run directory (no config.yaml)")
    try:
        result = evaluate_run(run_dir, args["checkpoint"], args.int("eval_size"), args.int("batch_size", 1),
                              args["device"])
    except FileNotFoundError as err:
        raise ConfigError(str(err)) from None
    for key, value in result["metrics"].items():
        print(f"{key:>16s}  {value:.4f}")
    out = Path(args["out"]) if args["out"] else run_dir / "eval.json"
    write_json(out, result)
    print(f"wrote {out}")


COMMAND = Command(
    "", "evaluate a run's checkpoint on its task's fixed eval set; metrics go to RUN_DIR/eval.json", cmd_eval,
    {"checkpoint": ("", "a checkpoint file (default: the run's latest)"),
     "eval_size": ("0", "eval examples (0: the run's task.eval_size)"),
     "batch_size": ("64", "examples per batch"), "device": ("auto", "auto, cpu, cuda or cuda:N"),
     "out": ("", "the JSON file to write (default: RUN_DIR/eval.json)")},
    ("RUN_DIR",), examples=("playground-eval results/default/<run>",
                            "playground-eval results/default/<run> eval_size=2000 device=cpu out=eval.json"))


def main(argv: list[str] | None = None) -> None:
    cli_main("playground-eval", "re-evaluate a trained run", [COMMAND], argv)


if __name__ == "__main__":
    main()
