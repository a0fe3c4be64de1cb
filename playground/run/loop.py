"""The one training loop for every task and backbone (``playground.run.train`` is its entry point).

AdamW (fused; β, ε from the config), warmup then cosine / linear / constant, gradient clipping,
gradient accumulation, bf16 autocast on CUDA, optional ``torch.compile``, periodic evaluation,
verified atomic checkpoints with exact resume (model, optimizer, RNG, data position, loss
accumulator, clock). Non-finite steps are skipped on the device (the fused optimizer's
``found_inf``) and noticed at logging time, without a host sync per step. SIGTERM / SIGUSR1
(a cluster's preemption notice) checkpoint and stop the run as resumable.

What rank 0 prints: a banner before the first step (``runlog.banner``) and, after the first log
interval, an ETA line; with ``train.progress``, a tqdm bar on a terminal, else a line per log
interval with the elapsed time and ETA (:meth:`Trainer.eta_s`), and the progress of an
evaluation's generation (``runlog.EvalProgress``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import sys
import threading
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from playground.config import CUDAGRAPH_MODES, Config, TrainConfig, autocast_for
from playground.data.loader import Batches, ShardExchange
from playground.data.packing import shard_size
from playground.errors import ConfigError
from playground.model import LM, build_model, decoding_graphs, generation_progress
from playground.run import rundir as runs
from playground.run.budget import duration_text
from playground.run.device import (
    FlatGradSync,
    all_sum,
    barrier,
    device_for,
    is_main,
    loader_workers,
    setup,
    world,
)
from playground.run.runlog import EvalProgress, banner
from playground.tasks import Task

# SLURM's preemption notice (SIGTERM), a user's (SIGUSR1), submitit's timeout notice (SIGUSR2),
# Ctrl-C (SIGINT: a second one stops at once, without a checkpoint) and a closed terminal (SIGHUP)
PREEMPT_SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2, signal.SIGINT, signal.SIGHUP)


class Diverged(RuntimeError):
    """The loss or gradient went non-finite under the ``stop`` policy (or too often)."""


class Preempted(RuntimeError):
    """A preemption signal arrived; a checkpoint was written and the run can resume."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by signal {signal.Signals(signum).name}; checkpoint written, "
                         "resumable")
        self.signum = signum


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


def evals_left(step: int, t: TrainConfig) -> int:
    """The evaluations at steps ``step`` … ``train.steps``: every ``eval_every``-th, the last."""
    if step > t.steps:
        return 0
    periodic = t.steps // t.eval_every - (step - 1) // t.eval_every if t.eval_every else 0
    return periodic + (not t.eval_every or t.steps % t.eval_every != 0)


def compiled(model, t: TrainConfig):
    """The model as the training step calls it: itself (``train.compile=false``), compiled whole
    (``compile_scope=model``: one graph) or with each of its blocks compiled in place
    (``blocks``: the blocks share one graph where they are alike; embedding, head and loss eager),
    in ``train.compile_mode``."""
    if not t.compile:
        return model
    if t.compile_scope == "model":
        return torch.compile(model, mode=t.compile_mode)
    inner = model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model
    for block in inner.blocks:
        block.compile(mode=t.compile_mode)
    return model


def make_optimizer(model: LM, t: TrainConfig) -> torch.optim.AdamW:
    """Fused AdamW (CPU and CUDA); weight decay on matrices (and Canon kernels), not on norms
    or biases. Fused, because it can skip a step on the device when told ``found_inf``."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": t.weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=t.lr, betas=(t.beta1, t.beta2), eps=t.eps, fused=True)


def masked_loss_sum(model, tokens: torch.Tensor, mask: torch.Tensor,
                    segments: torch.Tensor | None = None) -> torch.Tensor:
    """Sum of next-token cross-entropy over positions whose target is marked in ``mask``
    (``segments``: keep the packed examples apart, ``data.isolate_examples``)."""
    logits = model(tokens) if segments is None else model(tokens, segments=segments)  # [B, T, V]
    targets = tokens[:, 1:].masked_fill(~mask[:, 1:], -100)
    return F.cross_entropy(logits[:, :-1].flatten(0, 1), targets.flatten(), reduction="sum")


def check_batch_split(batch_size: int, micro_batch_size: int, size: int) -> None:
    """Refuse a global batch that ``size`` data-parallel ranks cannot share equally (in whole
    micro-batches when ``micro_batch_size`` is set)."""
    if batch_size % size or (micro_batch_size and (batch_size // size) % micro_batch_size):
        raise ConfigError(f"train.batch_size={batch_size} is invalid: expected a multiple of the "
                          f"world size {size} (times train.micro_batch_size when set)")


def train_step(model, opt, tokens, mask, segments, t: TrainConfig, device: torch.device,
               grad_sync: FlatGradSync | None = None):
    """One optimizer update over the global batch: this process's slice of it (data parallel:
    DDP's ``model`` sums the ranks' gradients, else ``grad_sync`` after the backward), in
    micro-batches. Returns device tensors: this slice's share of the mean loss per target token,
    whether the step was non-finite (then skipped), and the global gradient norm before
    clipping."""
    rank, size, _ = world()
    share = t.batch_size // size
    micro = min(t.micro_batch_size or share, share)
    # over the global batch: same on all ranks; a host number, so no copy waits on the device
    n_targets = max(int(mask[:, 1:].sum()), 1)
    # this rank's share in page-locked memory: its copies to the GPU do not wait for the steps
    # queued before them, so the host prepares the next step while the GPU runs this one
    mine = [None if x is None else x[rank * share : (rank + 1) * share]
            for x in (tokens, mask, segments)]
    if device.type == "cuda":
        mine = [None if x is None else x.pin_memory() for x in mine]
    total = torch.zeros((), device=device)
    ddp = hasattr(model, "no_sync")
    # the loss is this rank's part of a sum over the ranks; DDP averages their gradients
    scale = size if ddp else 1
    starts = range(0, share, micro)
    for lo in starts:
        tok, msk, seg = (None if x is None else x[lo : lo + micro].to(device, non_blocking=True)
                         for x in mine)
        sync = lo == starts[-1] or not ddp  # DDP: all-reduce once per step
        with autocast_for(device, t.dtype), (contextlib.nullcontext() if sync else model.no_sync()):
            ce = masked_loss_sum(model, tok, msk, seg) / n_targets
            loss = ce
            if (aux := model.aux_loss()) is not None:  # MoE load balancing, per micro-batch
                loss = ce + model.cfg.moe_aux_weight * aux * msk.shape[0] / t.batch_size
            (loss * scale).backward()
        total += ce.detach()
    if grad_sync is not None:
        grad_sync()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), t.grad_clip or math.inf)
    bad = ~(torch.isfinite(total) & torch.isfinite(norm))  # the norm is global: all ranks agree
    opt.found_inf = bad.float()  # the fused kernel leaves weights and moments untouched if set
    opt.step()
    opt.zero_grad(set_to_none=True)
    return total, bad, norm


def compile_counts() -> dict[str, int]:
    """What torch.compile has done in this process so far: distinct graphs compiled, graph
    breaks, and compiled graphs that run without CUDA graphs (on CPU, or for a reason that
    ``TORCH_LOGS=cudagraphs`` prints) where the mode asks for them."""
    from torch._dynamo.utils import counters

    return {"graphs": int(counters["stats"]["unique_graphs"]),
            "graph_breaks": int(sum(counters["graph_break"].values())),
            "cudagraph_skips": int(counters["inductor"]["cudagraph_skips"])}


class Trainer:
    # device tensors summed over a log interval (the loss, finite steps, gradient norms; the
    # non-finite steps of the whole run), kept in checkpoints for a resume inside an interval
    ACCUMULATORS = ("loss_acc", "good_acc", "bad_total", "norm_acc", "norm_max")

    def __init__(self, cfg: Config, task: Task, config: dict | None = None):
        """``config``: the run's resolved config (``config.yaml``), kept in every checkpoint so
        that one file loads alone (``playground.run.evaluate.load_model``)."""
        self.cfg, self.out, self.task, self.config = cfg, Path(cfg.out_dir), task, config
        self.device = setup(device_for(cfg.train))
        self.workers = loader_workers(cfg.data.num_workers, self.device)
        if self.device.type == "cuda":  # few CPU ops here: leave the cores to the loader workers
            torch.set_num_threads(max(1, min(4, (os.cpu_count() or 1) - self.workers)))
        self.main = is_main()
        self.model = build_model(cfg.model, len(self.task.vocab), seed=cfg.seed).to(self.device)
        self.step_fn, self.grad_sync = self._wrap(self.model, cfg)
        self.opt = make_optimizer(self.model, cfg.train)
        self.log = runs.MetricsLog(self.out / "metrics.jsonl")
        self.step, self.data_state, self.tokens_seen, self.train_time = 0, None, 0, 0.0
        # norm_acc, norm_max: the gradient norms of the interval's finite steps, summed and largest
        for key in self.ACCUMULATORS:
            setattr(self, key, torch.zeros((), device=self.device))
        self.skipped = 0  # non-finite steps seen at the last check
        self.last_eval: dict = {}
        self.eval_s: list[float] = []  # this process's evaluations: seconds each
        self._signal: int | None = None
        self._compiled_before = compile_counts() if cfg.train.compile else None

    def compile_facts(self) -> dict[str, int] | None:
        """``compile_counts`` since this trainer began (None without ``train.compile``)."""
        if self._compiled_before is None:
            return None
        return {k: v - self._compiled_before[k] for k, v in compile_counts().items()}

    @staticmethod
    def _wrap(model: LM, cfg: Config) -> tuple:
        """The module the training step calls (DDP across processes with
        ``train.grad_sync=ddp``, then torch.compile) and, with ``flat``, the sum of the ranks'
        gradients the step calls after the backward (else None)."""
        size, t = world()[1], cfg.train
        if size > 1:
            check_batch_split(t.batch_size, t.micro_batch_size, size)
        if size > 1 and t.grad_sync == "flat":
            grad_sync = FlatGradSync(model.parameters())
            grad_sync.broadcast()
            return compiled(model, t), grad_sync
        if size > 1:
            # the only buffers (rotary frequencies) are the same constants on every rank: no
            # broadcast before each forward; the gradients live in DDP's all-reduce buckets (no
            # copy into them and back each step)
            model = torch.nn.parallel.DistributedDataParallel(model, broadcast_buffers=False,
                                                              gradient_as_bucket_view=True)
            model.cfg, model.aux_loss = model.module.cfg, model.module.aux_loss
            if t.compile:
                # default: one graph, the gradients' all-reduce after the backward, instead of a
                # graph at each DDP bucket: 0.82-0.90 M tokens/s instead of 0.70-0.76 M on 2 H200s
                # in the default compile mode (Depo1 mini, 8L512D; docs/PERFORMANCE.md), where
                # the all-reduce takes 0.5 ms of a ~40 ms step
                torch._dynamo.config.optimize_ddp = t.ddp_bucket_graphs
        return compiled(model, t), None

    # -- checkpoints -------------------------------------------------------------------------

    def state_dict(self, batches: Batches) -> dict:
        rng = {"cpu": torch.get_rng_state()}
        if self.device.type == "cuda":
            rng["cuda"] = torch.cuda.get_rng_state(self.device)
        return {"step": self.step, "model": self.model.state_dict(),
                "optimizer": self.opt.state_dict(), "data": batches.state_dict(),
                **{key: getattr(self, key).cpu() for key in self.ACCUMULATORS},
                "tokens_seen": self.tokens_seen,
                "train_time": self.train_time, "last_eval": self.last_eval, "rng": rng,
                "config": self.config}

    def save(self, batches: Batches) -> None:
        if self.main:
            runs.save_checkpoint(self.out / "checkpoints", self.step, self.state_dict(batches),
                                 keep=self.cfg.train.keep_checkpoints)
        barrier()

    def restore(self) -> bool:
        ckpt_dir = self.out / "checkpoints"
        found = runs.load_latest_checkpoint(ckpt_dir) if self.cfg.train.resume == "auto" else None
        if found is None:
            barrier()  # every rank has looked before rank 0 clears anything
            if self.main:
                self.log.clear()
                for p in ckpt_dir.glob("step_*") if ckpt_dir.is_dir() else []:
                    p.unlink()
            return False
        state = found[1]
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["optimizer"])
        self.step, self.data_state = state["step"], state["data"]
        for key in self.ACCUMULATORS:
            # checkpoints written before the gradient norm was logged have no norms: from zero
            setattr(self, key, state.get(key, torch.zeros(())).to(self.device))
        self.skipped = int(self.bad_total)
        self.tokens_seen, self.train_time = state["tokens_seen"], state["train_time"]
        self.last_eval = state["last_eval"]
        torch.set_rng_state(state["rng"]["cpu"])
        if "cuda" in state["rng"] and self.device.type == "cuda":
            torch.cuda.set_rng_state(state["rng"]["cuda"], self.device)
        if self.main:
            self.log.truncate_after(self.step)
        return True

    @contextlib.contextmanager
    def preemption_signals(self):
        """While training, a preemption signal only sets a flag; the loop then checkpoints and
        hands the signal to the handler that was there before (e.g. submitit's requeue), or
        stops the run as resumable."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        self._previous = {s: signal.signal(s, self._on_signal) for s in PREEMPT_SIGNALS}
        try:
            yield
        finally:
            for s, handler in self._previous.items():
                signal.signal(s, handler)

    def _on_signal(self, signum: int, _frame) -> None:
        if signum == signal.SIGINT and self._signal == signal.SIGINT:
            raise KeyboardInterrupt  # Ctrl-C twice: stop now (the last checkpoint stays)
        self._signal = signum

    def _agree_on_signal(self) -> None:
        """Data parallel: a signal seen by any rank stops every rank at this log step."""
        if world()[1] > 1:
            flag = torch.tensor(float(self._signal or 0), device=self.device)
            seen = int(all_sum(flag).item())
            if seen and self._signal is None:
                self._signal = signal.SIGTERM

    def _after_preemption_checkpoint(self) -> None:
        previous = getattr(self, "_previous", {}).get(self._signal)
        if callable(previous) and previous is not signal.default_int_handler:
            previous(self._signal, None)  # e.g. submitit's requeue
        raise Preempted(self._signal)

    # -- the loop ------------------------------------------------------------------------------

    def evaluate(self, examples) -> dict:
        """Rank 0 evaluates (the others wait), showing its generation's progress with
        ``train.progress``; metrics are its."""
        if self.main:
            tic = time.perf_counter()
            shown = EvalProgress(f"eval step {self.step}") if self.cfg.train.progress else None
            with (generation_progress(shown) if shown else contextlib.nullcontext(),
                  decoding_graphs(self.cfg.train.eval_graphs)):
                metrics = self.task.evaluate(self.model, examples, self.cfg.train.eval_batch_size)
            self.eval_s.append(time.perf_counter() - tic)
            self.last_eval = metrics
            self.log.append({"step": self.step, "split": "eval", **metrics})
            if self.cfg.train.save_samples:
                rows = [{"step": self.step, **r} for r in self.task.eval_records()]
                runs.atomic_write(self.out / "eval_samples.jsonl",
                                  "".join(json.dumps(r) + "\n" for r in rows).encode())
        barrier()
        return self.last_eval

    def fit(self, mirror) -> dict:
        t = self.cfg.train
        resumed = self.restore()
        if self.main:  # before the loader and the eval set are made, which can take a while
            print(banner(self.cfg, self.model.param_counts(), self.device, world()[1]), flush=True)
        shard = shard_size(self.task, self.cfg.data.shard_examples)
        data = self.cfg.data
        # data parallel: the ranks share the shards
        exchange = ShardExchange.join(*world()[:2], stall_s=data.stall_s)
        batches = Batches(self.task, t.batch_size, shard, self.workers, data.prefetch,
                          state=self.data_state, ignore_signals=PREEMPT_SIGNALS,
                          packing=data.packing, exchange=exchange, stall_s=data.stall_s)
        examples = self.task.eval_examples()
        bar = tqdm(total=t.steps, initial=self.step, file=sys.stdout, desc=self.cfg.model.size,
                   disable=not (t.progress and sys.stdout.isatty() and self.main),
                   dynamic_ncols=True)
        if resumed:
            tqdm.write(f"resumed from step {self.step}", file=sys.stdout)
        self._tic, self._mark = time.perf_counter(), (self.tokens_seen, self.train_time)
        self._start, self._since = self._tic, [(self.step, self.train_time)]
        with self.preemption_signals(), batches:  # batches: closed at the end (data parallel)
            while self.step < t.steps:
                self.one_step(batches, bar, mirror, examples)
        bar.close()
        return self.last_eval

    def one_step(self, batches: Batches, bar, mirror, examples) -> None:
        t = self.cfg.train
        self.step += 1
        for group in self.opt.param_groups:
            group["lr"] = lr_at(self.step, t)
        batch = next(batches)
        segments = batch.segments if self.cfg.data.isolate_examples else None
        loss, bad, norm = train_step(self.step_fn, self.opt, batch.tokens, batch.mask, segments,
                                     t, self.device, self.grad_sync)
        self.loss_acc += torch.where(bad, 0.0, loss)
        self.good_acc += (~bad).float()
        norm = torch.where(bad, 0.0, norm)
        self.norm_acc += norm
        torch.maximum(self.norm_max, norm, out=self.norm_max)
        self.bad_total += bad.float()
        self.tokens_seen += batch.tokens.numel()
        bar.update(1)
        last = self.step == t.steps
        if self.step % t.log_every == 0 or last:
            self.log_train(bar, mirror)
        if last or (t.eval_every and self.step % t.eval_every == 0):
            self._lap()
            metrics = self.evaluate(examples)
            mirror.log({f"eval/{k}": v for k, v in metrics.items()}, self.step)
            if self.main:
                self.show_eval(metrics)
            self._tic = time.perf_counter()
        # data parallel: a preemption is honoured at a log step, where every rank agrees on it
        stop = self._signal is not None and (world()[1] == 1 or self.step % t.log_every == 0)
        if last or self.step % t.ckpt_every == 0 or stop:
            self._lap()
            self.save(batches)
            self._tic = time.perf_counter()
        if stop:
            self._after_preemption_checkpoint()

    def _lap(self) -> None:
        """Add the time since the last lap to the training time (evals/checkpoints excluded)."""
        now = time.perf_counter()
        self.train_time += now - self._tic
        self._tic = now

    def check_finite(self) -> int:
        """Non-finite steps since the last check; raises Diverged as the policy says."""
        t = self.cfg.train
        total = int(self.bad_total)  # synced with the loss at log time
        new, self.skipped = total - self.skipped, total
        if new and t.on_nonfinite == "stop":
            raise Diverged(f"non-finite loss or gradient at a step in ({self.step - t.log_every}, "
                           f"{self.step}] (train.on_nonfinite=stop)")
        if total > t.max_skipped:
            raise Diverged(f"{total} non-finite steps skipped, more than "
                           f"train.max_skipped={t.max_skipped}")
        return new

    def log_train(self, bar, mirror) -> None:
        t = self.cfg.train
        good = float(self.good_acc)  # the host sync of the loop, once per log interval
        loss = float(all_sum(self.loss_acc)) / good if good else math.nan
        # the norm is global (after the ranks' sum): every rank has the same
        grad_norm = float(self.norm_acc) / good if good else math.nan
        grad_norm_max = float(self.norm_max) if good else math.nan
        self._agree_on_signal()
        self._lap()
        self.check_finite()
        for acc in (self.loss_acc, self.good_acc, self.norm_acc, self.norm_max):
            acc.zero_()
        tokens, seconds = self.tokens_seen - self._mark[0], self.train_time - self._mark[1]
        self._mark = (self.tokens_seen, self.train_time)
        tok_s = tokens / max(seconds, 1e-9)  # since the previous log line
        record = {"step": self.step, "split": "train", "loss": loss, "lr": lr_at(self.step, t),
                  "tokens": self.tokens_seen, "tokens_per_s": tok_s,
                  "train_time_s": self.train_time, "skipped_steps": self.skipped,
                  "grad_norm": grad_norm, "grad_norm_max": grad_norm_max}
        if self.main:
            self.log.append(record)
        mirror.log({f"train/{k}": v for k, v in record.items() if k != "split"}, self.step)
        bar.set_postfix(loss=f"{loss:.4f}", acc=self._acc_text(), tok_s=f"{tok_s:,.0f}")
        eta = self.eta_s()
        if len(self._since) == 1:  # the first log interval of this process: the rate is known
            self._since.append((self.step, self.train_time))
            if self.main and eta is not None and self.step < t.steps:
                tqdm.write(self.eta_line(eta), file=sys.stdout)
            skips = (self.compile_facts() or {}).get("cudagraph_skips", 0)
            if self.main and skips and t.compile_mode in CUDAGRAPH_MODES:
                print(f"warning: {skips} compiled graph(s) run without CUDA graphs although "
                      f"train.compile_mode={t.compile_mode} asks for them (on CUDA, "
                      "TORCH_LOGS=cudagraphs says why)", file=sys.stderr, flush=True)
        if bar.disable and t.progress and self.main:
            elapsed = duration_text(time.perf_counter() - self._start)
            print(f"step {self.step}/{t.steps} loss {loss:.4f} lr {record['lr']:.2e} "
                  f"tok/s {tok_s:,.0f} elapsed {elapsed} eta {duration_text(eta or 0)}", flush=True)

    def eta_s(self) -> float | None:
        """Seconds left: the steps to go at the training time per step (evaluations and
        checkpoints excluded) measured by this process since its first log line (until then,
        since it started: that first interval holds compilation and warm-up), plus the
        evaluations to go at the mean time of this process's evaluations, once there is one.
        None before any step."""
        t = self.cfg.train
        base = self._since[-1] if self._since[-1][0] < self.step else self._since[0]
        if base[0] >= self.step:
            return None
        per_step = (self.train_time - base[1]) / (self.step - base[0])
        mean_eval = sum(self.eval_s) / len(self.eval_s) if self.eval_s else 0.0
        evals = mean_eval * evals_left(self.step, t)
        return (t.steps - self.step) * per_step + evals

    def eta_line(self, eta: float) -> str:
        """The banner's last line, once the first log interval has measured the rate."""
        t = self.cfg.train
        done = self.step - self._since[0][0]
        per_step = (self.train_time - self._since[0][1]) / max(done, 1)
        evals = "" if self.eval_s else "; evaluations not yet counted"
        return (f"  ETA {duration_text(eta)}: {t.steps - self.step:,} steps to go at "
                f"{per_step:.3g} s a step (measured over {done} steps{evals})")

    def _acc_text(self) -> str:
        value = self.last_eval.get(self.task.primary_metric)
        return "-" if value is None else f"{value:.3f}"

    def show_eval(self, metrics: dict) -> None:
        keys = [k for k in metrics if not k.startswith("tok_acc_")]
        text = " ".join(f"{k}={metrics[k]:.3f}" for k in keys)
        took = f" ({duration_text(self.eval_s[-1])})" if self.eval_s else ""
        tqdm.write(f"[eval step {self.step}] {text}{took}", file=sys.stdout)
