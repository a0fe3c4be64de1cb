"""``playground-eval``: evaluate a run's checkpoint on its task's fixed eval set.

    playground-eval results/default/<run>                     # latest checkpoint, task's eval_size
    playground-eval results/default/<run> eval_size=2000 checkpoint=PATH device=cpu out=FILE.json
    playground-eval results/default/<run> eval.length_scales=1,2,4   # length generalisation
    playground-eval step_00000300.pt                          # one checkpoint file, alone

The eval set is the task's eval split (a seed stream disjoint from training) at its hardest
setting; metrics are printed and written to ``<run>/eval.json`` (or ``out=``), atomically.
Every checkpoint holds its run's resolved config, so one file loads alone (:func:`load_model`;
given a file, ``playground-eval`` writes ``<file stem>_eval.json`` beside it). In a run
directory the run's ``config.yaml`` is the config, and a checkpoint trained under another one is
refused.

Length generalisation (``eval.length_scales``, ``[1,2,4]`` or ``1,2,4``): the same checkpoint on
the task's s × longer variant for each scale s (``Task.at_length``: the context × s and the
task's own difficulty knob scaled, same seed and vocabulary; scale 1 is the task as trained).
Every scale's task is built before any model runs, so a bad scale or a task without a longer
form fails at once. The rows (scale, context, metric, value) go to ``<run>/length_gen.csv`` (or
``out=``), atomically; ``playground-report lengthgen`` draws them. Nothing in the models limits
the length: RoPE angles and ALiBi distances are computed for the positions at hand and the
recurrent mixers carry a state, and no backbone has learned absolute positions.
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

from omegaconf import OmegaConf

from playground.cli import Args, Command, atomic_write, check_writable, write_json
from playground.cli import main as cli_main
from playground.config import Config, from_container, upgrade
from playground.errors import ConfigError
from playground.model import LM, build_model, decoding_graphs
from playground.run import rundir as runs
from playground.run.device import check_device, pick_device
from playground.tasks import Task, build_task

LENGTH_GEN_COLUMNS = ("scale", "context", "metric", "value")


def parse_scales(text: str) -> list[float]:
    """``[1,2,4]`` or ``1,2,4`` -> [1.0, 2.0, 4.0]; ConfigError naming eval.length_scales."""
    parts = [p.strip() for p in text.strip().strip("[]").split(",") if p.strip()]
    try:
        scales = [float(p) for p in parts]
    except ValueError:
        scales = []
    if not scales or any(not s > 0 for s in scales):  # not s > 0: NaN too
        raise ConfigError(f"eval.length_scales={text!r} is invalid: expected numbers > 0, "
                          "e.g. 1,2,4")
    return scales


def longer_tasks(task: Task, scales: list[float], key: str = "eval.length_scales") -> list[Task]:
    """The task at each scale, all built (and their configs checked) before any compute."""
    tasks = []
    for scale in scales:
        try:
            tasks.append(task.at_length(scale))
        except ConfigError as err:
            raise ConfigError(f"{key}: the {scale:g}x variant of task "
                              f"{task.cfg.preset!r} is invalid: {err}") from None
    return tasks


def checkpoint_config(state: dict, path: Path) -> dict:
    """The resolved config a checkpoint holds (``Trainer`` keeps it in every checkpoint)."""
    if not state.get("config"):
        raise ConfigError(f"checkpoint={path} holds no config (written before checkpoints held "
                          "one): evaluate it through its run directory, beside its config.yaml")
    return state["config"]


def load_model(path: Path, device: str = "cpu") -> tuple[LM, Config, dict]:
    """The model of checkpoint file ``path`` from that file alone: built from the config it
    holds, with its weights, on ``device``; with the typed config and the checkpoint's state."""
    state = runs.load_checkpoint(Path(path))
    cfg = from_container(checkpoint_config(state, Path(path)))
    model, _ = _model(cfg, build_task(cfg.task), state, device)
    return model, cfg, state


def _same_config(path: Path, state: dict, container: dict, config_path: Path) -> None:
    """Refuse a checkpoint trained under another config than the run's ``config.yaml``."""
    if state.get("config") and (diff := runs.config_differences(upgrade(state["config"]),
                                                                upgrade(container))):
        raise ConfigError(f"checkpoint={path} was trained under another config than {config_path} "
                          f"({'; '.join(diff)})")


def _load(run_dir: Path, checkpoint: str, eval_size: int):
    """The run's config (``eval_size`` applied), its checkpoint's path and state: the one named,
    else the newest that verifies (a corrupt one is skipped with a warning, as training's resume
    skips it). A config.yaml that does not match the config hash its summary.json records (edited
    after the run) is refused, as the reports refuse it. ``run_dir`` may be a checkpoint file
    alone: then its own config is the config."""
    if run_dir.is_file():
        state = runs.load_checkpoint(run_dir)
        return _sized(from_container(checkpoint_config(state, run_dir)), eval_size), run_dir, state
    container = OmegaConf.to_container(OmegaConf.load(run_dir / "config.yaml"))
    summary = run_dir / "summary.json"
    if summary.exists() and runs.hash_mismatch(runs.read_json(summary), container):
        raise ConfigError(f"{run_dir / 'config.yaml'} does not match the config hash in {summary}: "
                          "it was changed after the run; restore it (its checkpoints hold the "
                          "weights of the recorded config)")
    cfg = _sized(from_container(container), eval_size)
    if checkpoint:
        if not Path(checkpoint).exists():
            raise FileNotFoundError(f"checkpoint={checkpoint} does not exist")
        found = Path(checkpoint), runs.load_checkpoint(Path(checkpoint))
    else:
        found = runs.load_latest_checkpoint(run_dir / "checkpoints")
    if found is None:
        raise FileNotFoundError(f"no intact checkpoint in {run_dir / 'checkpoints'}")
    _same_config(*found, container, run_dir / "config.yaml")
    return cfg, *found


def _sized(cfg: Config, eval_size: int) -> Config:
    if eval_size:
        cfg.task = dataclasses.replace(cfg.task, eval_size=eval_size)
    return cfg


def _model(cfg, task: Task, state: dict, device: str):
    """The run's model with the checkpoint's weights, on ``device``, and the checkpoint's step."""
    model = build_model(cfg.model, len(task.vocab))
    model.load_state_dict(state["model"])
    return model.to(pick_device(device)), state["step"]


def length_gen_run(run_dir: Path, scales: list[float], checkpoint: str = "", eval_size: int = 0,
                   batch_size: int = 64, device: str = "auto") -> list[dict]:
    """Rows (scale, context, metric, value) of a run's checkpoint on its task at each scale."""
    cfg, _, state = _load(run_dir, checkpoint, eval_size)
    task = build_task(cfg.task)
    tasks = longer_tasks(task, scales)
    model, _ = _model(cfg, task, state, device)
    return length_gen_rows(model, scales, tasks, batch_size)


def length_gen_rows(model, scales: list[float], tasks: list[Task], batch_size: int) -> list[dict]:
    """Rows (scale, context, metric, value) of ``model`` on each longer task (``longer_tasks``)."""
    rows = []
    for scale, longer in zip(scales, tasks):
        metrics = longer.evaluate(model, longer.eval_examples(), batch_size)
        rows += [{"scale": scale, "context": longer.cfg.context, "metric": k, "value": float(v)}
                 for k, v in metrics.items()]
    return rows


def write_length_gen(path: Path, rows: list[dict]) -> None:
    """``rows`` as CSV with the columns LENGTH_GEN_COLUMNS, atomically."""
    buf = io.StringIO()
    buf.write(",".join(LENGTH_GEN_COLUMNS) + "\n")
    for r in rows:
        buf.write(f"{r['scale']:g},{r['context']},{r['metric']},{r['value']!r}\n")
    atomic_write(path, buf.getvalue().encode())


def evaluate_run(run_dir: Path, checkpoint: str = "", eval_size: int = 0, batch_size: int = 64,
                 device: str = "auto") -> dict:
    """Metrics of a run's checkpoint (the latest unless ``checkpoint`` is given), generation
    decoded as the run's evaluations were (``train.eval_graphs``)."""
    cfg, path, state = _load(run_dir, checkpoint, eval_size)
    task = build_task(cfg.task)
    model, step = _model(cfg, task, state, device)
    with decoding_graphs(cfg.train.eval_graphs):
        metrics = task.evaluate(model, task.eval_examples(), batch_size)
    return {"checkpoint": str(path), "step": step, "eval_size": cfg.task.eval_size,
            "primary_metric": task.primary_metric, "metrics": metrics}


def default_out(target: Path, name: str) -> Path:
    """Where ``playground-eval`` writes ``name`` for a run directory (inside it) or a checkpoint
    file (beside it, after its stem: ``step_00000300_eval.json``)."""
    return target.with_name(f"{target.stem}_{name}") if target.is_file() else target / name


def cmd_eval(args: Args) -> None:
    run_dir = Path(args.positional[0])
    if not (run_dir.is_file() or (run_dir / "config.yaml").exists()):
        raise ConfigError(f"RUN_DIR={run_dir} is invalid: not a run directory (no config.yaml) "
                          "nor a checkpoint file")
    if args["out"]:
        check_writable(Path(args["out"]).parent, "out")
    check_device(args["device"], "device")  # before any checkpoint is read
    if args["eval.length_scales"]:
        scales = parse_scales(args["eval.length_scales"])
        try:
            rows = length_gen_run(run_dir, scales, args["checkpoint"], args.int("eval_size"),
                                  args.int("batch_size", 1), args["device"])
        except FileNotFoundError as err:
            raise ConfigError(str(err)) from None
        for r in rows:
            print(f"{r['scale']:>5g}x {r['context']:>7d} {r['metric']:>16s}  {r['value']:.4f}")
        out = Path(args["out"]) if args["out"] else default_out(run_dir, "length_gen.csv")
        write_length_gen(out, rows)
        print(f"wrote {out}")
        return
    try:
        result = evaluate_run(run_dir, args["checkpoint"], args.int("eval_size"),
                              args.int("batch_size", 1), args["device"])
    except FileNotFoundError as err:
        raise ConfigError(str(err)) from None
    for key, value in result["metrics"].items():
        print(f"{key:>16s}  {value:.4f}")
    out = Path(args["out"]) if args["out"] else default_out(run_dir, "eval.json")
    write_json(out, result)
    print(f"wrote {out}")


COMMAND = Command(
    "", "evaluate a run's checkpoint on its task's fixed eval set; metrics go to RUN_DIR/eval.json "
    "(RUN_DIR may be one checkpoint file: it holds its config)", cmd_eval,
    {"checkpoint": ("", "a checkpoint file (default: the run's latest)"),
     "eval_size": ("0", "eval examples (0: the run's task.eval_size)"),
     "batch_size": ("64", "examples per batch"), "device": ("auto", "auto, cpu, cuda or cuda:N"),
     "eval.length_scales": ("", "length generalisation: scales of the training context, e.g. 1,2,4 "
                                "or [1,2,4]; writes RUN_DIR/length_gen.csv instead of eval.json"),
     "out": ("", "the file to write (default: RUN_DIR/eval.json, or RUN_DIR/length_gen.csv)")},
    ("RUN_DIR",), examples=("playground-eval results/default/<run>",
                            "playground-eval results/default/<run>/checkpoints/step_00000300.pt",
                            "playground-eval results/default/<run> eval_size=2000 device=cpu "
                            "out=eval.json",
                            "playground-eval results/default/<run> eval.length_scales=1,2,4"))


def main(argv: list[str] | None = None) -> None:
    cli_main("playground-eval", "re-evaluate a trained run", [COMMAND], argv)


if __name__ == "__main__":
    main()
