"""``playground-train``: the one training loop for every task and backbone (Hydra entry point).

    playground-train                                   # the embedded default (small CPU Depo run)
    playground-train task=depo1 size=12L768D canon=ABCD train.lr=1e-3
    playground-train -m size=8L512D,12L768D canon=none,ABCD   # a Hydra multirun

AdamW (β=(0.9, 0.98), ε=1e-6), warmup then cosine-to-10% / linear / constant, gradient clipping,
gradient accumulation, bf16 autocast on CUDA and fp32 on CPU, optional ``torch.compile``,
periodic evaluation, atomic checkpoints and exact resume (model, optimizer, data position).
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import hydra
import torch
import torch.nn.functional as F
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from playground import runs
from playground.config import CONF_DIR, Config, TrainConfig, register, to_objects
from playground.data.loader import Batches
from playground.device import autocast_for, pick_device
from playground.errors import ConfigError
from playground.model import LM, build_model
from playground.tasks import Task, build_task


def lr_at(step: int, t: TrainConfig) -> float:
    """Learning rate of update ``step`` (1-based): linear warmup, then the decay schedule."""
    if step <= t.warmup_steps:
        return t.lr * step / t.warmup_steps
    progress = (step - t.warmup_steps) / max(1, t.steps - t.warmup_steps)
    if t.schedule == "cosine":
        decay = 0.5 * (1 + math.cos(math.pi * progress))
    elif t.schedule == "linear":
        decay = 1 - progress
    else:
        decay = 1.0
    return t.lr * (t.min_lr_ratio + (1 - t.min_lr_ratio) * decay)


def make_optimizer(model: LM, t: TrainConfig, device: torch.device) -> torch.optim.AdamW:
    """AdamW; weight decay on matrices (and Canon kernels), not on norms or biases."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": t.weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=t.lr, betas=(t.beta1, t.beta2), eps=t.eps,
                             fused=device.type == "cuda")


def masked_loss_sum(model, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Sum of next-token cross-entropy over positions whose target is marked in ``mask``."""
    logits = model(tokens)  # [B, T, V]
    targets = tokens[:, 1:].masked_fill(~mask[:, 1:], -100)
    return F.cross_entropy(logits[:, :-1].flatten(0, 1), targets.flatten(), reduction="sum")


def train_step(model, opt, tokens, mask, cfg: Config, device: torch.device) -> torch.Tensor:
    """One optimizer update over the global batch (split into micro-batches). Returns the mean
    loss per target token as a device tensor (no host sync)."""
    t = cfg.train
    micro = t.micro_batch_size or t.batch_size
    n_targets = mask[:, 1:].sum().clamp(min=1).to(device)
    total = torch.zeros((), device=device)
    for lo in range(0, t.batch_size, micro):
        tok = tokens[lo : lo + micro].to(device, non_blocking=True)
        msk = mask[lo : lo + micro].to(device, non_blocking=True)
        with autocast_for(device, t.dtype):
            loss = masked_loss_sum(model, tok, msk) / n_targets
        loss.backward()
        total += loss.detach()
    if t.grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), t.grad_clip)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return total


class Trainer:
    def __init__(self, cfg: Config):
        self.cfg, self.out = cfg, Path(cfg.out_dir)
        self.device = pick_device(cfg.train.device)
        self.task: Task = build_task(cfg.task)
        self.model = build_model(cfg.model, len(self.task.vocab), seed=cfg.seed).to(self.device)
        self.step_fn = torch.compile(self.model) if cfg.train.compile else self.model
        self.opt = make_optimizer(self.model, cfg.train, self.device)
        self.log = runs.MetricsLog(self.out / "metrics.jsonl")
        self.step, self.data_state, self.tokens_seen, self.train_time = 0, None, 0, 0.0
        self.loss_acc = torch.zeros((), device=self.device)
        self.last_eval: dict = {}

    # -- checkpoints -------------------------------------------------------------------------

    def state_dict(self, batches: Batches) -> dict:
        return {"step": self.step, "model": self.model.state_dict(), "optimizer": self.opt.state_dict(),
                "data": batches.state_dict(), "loss_acc": self.loss_acc.cpu(),
                "tokens_seen": self.tokens_seen, "train_time": self.train_time,
                "last_eval": self.last_eval}

    def save(self, batches: Batches) -> None:
        runs.save_checkpoint(self.out / "checkpoints", self.step, self.state_dict(batches),
                             keep=self.cfg.train.keep_checkpoints)

    def restore(self) -> bool:
        paths = runs.checkpoint_paths(self.out / "checkpoints")
        if self.cfg.train.resume == "never" or not paths:
            self.log.path.unlink(missing_ok=True)
            for p in paths:
                p.unlink()
            return False
        state = runs.load_checkpoint(paths[-1])
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["optimizer"])
        self.step, self.data_state = state["step"], state["data"]
        self.loss_acc = state["loss_acc"].to(self.device)
        self.tokens_seen, self.train_time = state["tokens_seen"], state["train_time"]
        self.last_eval = state["last_eval"]
        self.log.truncate_after(self.step)
        return True

    # -- the loop ------------------------------------------------------------------------------

    def evaluate(self, examples) -> dict:
        metrics = self.task.evaluate(self.model, examples, self.cfg.train.eval_batch_size)
        self.last_eval = metrics
        self.log.append({"step": self.step, "split": "eval", **metrics})
        return metrics

    def fit(self, mirror) -> dict:
        t = self.cfg.train
        resumed = self.restore()
        batches = Batches(self.task, t.batch_size, self.cfg.data.shard_examples, self.cfg.data.num_workers,
                          self.cfg.data.prefetch, state=self.data_state)
        examples = self.task.eval_examples()
        bar = tqdm(total=t.steps, initial=self.step, file=sys.stdout, desc=self.cfg.model.size,
                   disable=not (t.progress and sys.stdout.isatty()), dynamic_ncols=True)
        if resumed:
            bar.write(f"resumed from step {self.step}")
        self._tic, self._mark = time.perf_counter(), (self.tokens_seen, self.train_time)
        while self.step < t.steps:
            self.step += 1
            for group in self.opt.param_groups:
                group["lr"] = lr_at(self.step, t)
            tokens, mask = next(batches)
            self.loss_acc += train_step(self.step_fn, self.opt, tokens, mask, self.cfg, self.device)
            self.tokens_seen += tokens.numel()
            bar.update(1)
            last = self.step == t.steps
            if self.step % t.log_every == 0 or last:
                self.log_train(bar, mirror)
            if last or (t.eval_every and self.step % t.eval_every == 0):
                self._lap()
                metrics = self.evaluate(examples)
                mirror.log({f"eval/{k}": v for k, v in metrics.items()}, self.step)
                self.show_eval(bar, metrics)
                self._tic = time.perf_counter()
            if last or self.step % t.ckpt_every == 0:
                self._lap()
                self.save(batches)
                self._tic = time.perf_counter()
        bar.close()
        return self.last_eval

    def _lap(self) -> None:
        """Add the time since the last lap to the training time (evals/checkpoints excluded)."""
        now = time.perf_counter()
        self.train_time += now - self._tic
        self._tic = now

    def log_train(self, bar, mirror) -> None:
        t = self.cfg.train
        since = (self.step - 1) % t.log_every + 1  # updates accumulated in loss_acc
        loss = self.loss_acc.item() / since  # the only host sync of the loop
        self._lap()
        self.loss_acc.zero_()
        tokens, seconds = self.tokens_seen - self._mark[0], self.train_time - self._mark[1]
        self._mark = (self.tokens_seen, self.train_time)
        tok_s = tokens / max(seconds, 1e-9)  # since the previous log line
        record = {"step": self.step, "split": "train", "loss": loss, "lr": lr_at(self.step, t),
                  "tokens": self.tokens_seen, "tokens_per_s": tok_s, "train_time_s": self.train_time}
        self.log.append(record)
        mirror.log({f"train/{k}": v for k, v in record.items() if k != "split"}, self.step)
        bar.set_postfix(loss=f"{loss:.4f}", acc=self._acc_text(), tok_s=f"{tok_s:,.0f}")
        if bar.disable and t.progress:
            print(f"step {self.step}/{t.steps} loss {loss:.4f} lr {record['lr']:.2e} "
                  f"tok/s {tok_s:,.0f}", flush=True)

    def _acc_text(self) -> str:
        value = self.last_eval.get(self.task.primary_metric)
        return "-" if value is None else f"{value:.3f}"

    def show_eval(self, bar, metrics: dict) -> None:
        keys = [k for k in metrics if not k.startswith("tok_acc_")]
        text = " ".join(f"{k}={metrics[k]:.3f}" for k in keys)
        tqdm.write(f"[eval step {self.step}] {text}", file=sys.stdout)
        bar.set_postfix(acc=self._acc_text())


# ----------------------------------------------------------------------------------------------


class Mirror:
    """Optional Weights & Biases mirror (offline by default). Reports never read from it."""

    def __init__(self, cfg: Config, container: dict):
        self.run = None
        if cfg.wandb.mode == "disabled":
            return
        try:
            import wandb
        except ImportError:
            print("wandb is not installed; continuing without the mirror", file=sys.stderr)
            return
        self.run = wandb.init(project=cfg.wandb.project, name=cfg.run_name, dir=cfg.out_dir,
                              mode=cfg.wandb.mode, config=container)

    def log(self, record: dict, step: int) -> None:
        if self.run is not None:
            self.run.log(record, step=step)

    def finish(self) -> None:
        if self.run is not None:
            self.run.finish()


def describe(cfg: Config, model: LM) -> dict:
    """The facts of a run that reports group by."""
    task = cfg.task
    keys = type(task).difficulty_keys
    return {
        "task": task.preset, "task_name": task.name, "difficulty": {k: getattr(task, k) for k in keys},
        "size": cfg.model.size, "mixer": cfg.model.mixer.name, "mixer_tag": cfg.model.mixer.tag(),
        "canon": cfg.model.canon.tag(), "lr": cfg.train.lr, "seed": cfg.seed, "data_seed": task.seed,
        "steps": cfg.train.steps, "params": model.param_counts(),
    }


# Keys that may differ between a run and its resumption: they do not change the numbers.
VOLATILE = ("hydra", "out_dir", "run_name", "sweep", "wandb", "train.progress", "train.resume",
            "train.device", "train.eval_batch_size", "data.num_workers", "data.prefetch")


def _flatten(tree: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def config_differences(old: dict, new: dict) -> list[str]:
    """Keys whose values differ between two resolved configs, ignoring VOLATILE keys."""
    a, b = _flatten(old), _flatten(new)
    keep = [k for k in sorted(set(a) | set(b)) if not k.startswith(VOLATILE)]
    return [f"{k}: {a.get(k)!r} -> {b.get(k)!r}" for k in keep if a.get(k) != b.get(k)]


def check_same_run(out: Path, container: dict) -> None:
    """Refuse to resume or skip a run directory that holds a different configuration."""
    path = out / "config.yaml"
    if not path.exists():
        return
    diff = config_differences(OmegaConf.to_container(OmegaConf.load(path)), container)
    if diff:
        raise ConfigError(f"{out} already holds a run with a different config ({'; '.join(diff)}). "
                          "Choose another run_name= or sweep=, or pass train.resume=never to replace it.")


def resolve_steps(cfg: Config) -> Config:
    """``train.steps=0`` asks the task for its step count (e.g. Capo: N·E biographies)."""
    if cfg.train.steps:
        return cfg
    steps = build_task(cfg.task).train_steps(cfg.train.batch_size)
    if not steps:
        raise ConfigError(f"train.steps=0 is invalid for task {cfg.task.name!r}: it prescribes no "
                          "step count; set train.steps")
    print(f"train.steps=0: the task prescribes {steps} steps at batch size {cfg.train.batch_size}")
    cfg.train = dataclasses.replace(cfg.train, steps=steps)
    return cfg


def run(dcfg: DictConfig) -> dict:
    """Train one run described by a composed config; returns its summary."""
    cfg = resolve_steps(to_objects(dcfg))
    out = Path(cfg.out_dir)
    container = OmegaConf.to_container(dcfg, resolve=True)
    summary_path = out / "summary.json"
    if cfg.train.resume == "auto":
        check_same_run(out, container)
        if summary_path.exists() and runs.read_json(summary_path).get("status") == "finished":
            summary = runs.read_json(summary_path)
            print(f"{out}: already finished ({summary.get('primary_metric')}="
                  f"{summary.get('primary')}); skipping. Use train.resume=never to start it again.")
            return summary
    out.mkdir(parents=True, exist_ok=True)
    runs.atomic_write(out / "config.yaml", OmegaConf.to_yaml(container).encode())
    trainer = Trainer(cfg)
    base = {**describe(cfg, trainer.model), "git_sha": runs.git_sha(), "device": str(trainer.device),
            "torch": torch.__version__, "started": datetime.now(timezone.utc).isoformat()}
    runs.write_json(summary_path, {**base, "status": "running"})
    mirror = Mirror(cfg, container)
    try:
        metrics = trainer.fit(mirror)
    except BaseException as err:
        status = "interrupted" if isinstance(err, KeyboardInterrupt) else "failed"
        runs.write_json(summary_path, {**base, "status": status, "step": trainer.step,
                                       "error": f"{type(err).__name__}: {err}"})
        raise
    finally:
        mirror.finish()
    summary = {**base, **finish_facts(trainer), "status": "finished", "metrics": metrics,
               "primary_metric": trainer.task.primary_metric,
               "primary": metrics.get(trainer.task.primary_metric)}
    runs.write_json(summary_path, summary)
    print(f"{out}: finished; {summary['primary_metric']}={summary['primary']:.4f}")
    return summary


def finish_facts(trainer: Trainer) -> dict:
    peak = torch.cuda.max_memory_allocated(trainer.device) if trainer.device.type == "cuda" else None
    train_logs = [r for r in trainer.log.records() if r.get("split") == "train"]
    return {"step": trainer.step, "tokens": trainer.tokens_seen, "wall_time_s": trainer.train_time,
            "tokens_per_s": trainer.tokens_seen / max(trainer.train_time, 1e-9),
            "peak_memory_bytes": peak, "final_loss": train_logs[-1]["loss"] if train_logs else None,
            "finished": datetime.now(timezone.utc).isoformat()}


@hydra.main(config_path=str(CONF_DIR), config_name="config", version_base=None)
def _hydra_main(cfg: DictConfig) -> float | None:
    try:
        summary = run(cfg)
    except ConfigError:
        out = Path(cfg.out_dir)
        if out.is_dir() and not any(out.iterdir()):
            out.rmdir()  # Hydra made it before the config was checked; leave nothing behind
        raise
    return summary.get("primary")


def main() -> None:
    register()
    _hydra_main()


if __name__ == "__main__":
    main()
