"""Data-parallel scaling: global training tokens/s of a config under ``torchrun`` with 1, 2, …
processes on one host (``playground-bench scaling``).

Each (variant, process count) is a short run of ``playground.run.train`` in processes of its own,
one after another, so the jobs never share the GPUs or the host's cores. Its figure is the median
of the run's own log intervals (tokens/s since the previous log line, ``metrics.jsonl``) after
step ``skip``, so the compilation and warm-up in the first intervals are left out. The global
batch is the config's (``per_rank=false``: the recipe's batch split over the ranks, strong
scaling) or the config's batch on every rank (``per_rank=true``: the global batch grows with the
processes, weak scaling). Scaling is each figure over the same variant's with one process.

Strong scaling also runs one process at each rank's batch (``rank_batch=true``, the default):
a GPU is less efficient at a smaller batch, so ``cap`` = processes × that rate over the one
process's at the full batch is the most any data parallel could reach, and ``dp_efficiency`` =
the measured rate over processes × that rate is data parallel's own cost apart from it.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from playground.config import compose
from playground.errors import ConfigError, check
from playground.run.loop import check_batch_split
from playground.run.rundir import MetricsLog, read_json

# what the measurement sets itself: the user's overrides may not
OWN = ("train.steps", "train.log_every", "train.eval_every", "train.ckpt_every", "out_dir",
       "train.progress", "wandb.mode")


def _run_args(overrides: list[str], steps: int, log_every: int, out: Path) -> list[str]:
    return [*overrides, f"train.steps={steps}", f"train.log_every={log_every}",
            "train.eval_every=0", f"train.ckpt_every={steps}", "train.progress=false",
            "wandb.mode=disabled", f"out_dir={out}"]


def check_request(variants: list[list[str]], procs: list[int], steps: int, skip: int,
                  log_every: int, per_rank: bool) -> list[int]:
    """Refuse what cannot be measured before anything runs; the variants' global batch sizes."""
    check(all(p >= 1 for p in procs) and procs, "procs", procs, "process counts >= 1, e.g. 1,2,4")
    check(log_every >= 1, "log_every", log_every, "an integer >= 1")
    check(0 <= skip <= steps - 2 * log_every, "skip", skip,
          f"an integer in [0, steps - 2 × log_every = {steps - 2 * log_every}]: at least two "
          "log intervals after it")
    batches = []
    for overrides in variants:
        for item in overrides:
            if item.partition("=")[0].lstrip("+~") in OWN:
                raise ConfigError(f"{item!r}: {item.partition('=')[0]} is set by the measurement "
                                  f"itself (steps=, log_every=); it sets {', '.join(OWN)}")
        t = compose(_run_args(overrides, steps, log_every, Path("unused"))).train
        for p in procs:
            check_batch_split(t.batch_size * p if per_rank else t.batch_size,
                              t.micro_batch_size, p)
        batches.append(t.batch_size)
    return batches


def run_one(overrides: list[str], procs: int, steps: int, skip: int, log_every: int) -> dict:
    """One run under torchrun with ``procs`` processes: its global tokens/s (the median of its
    intervals after ``skip``), every interval, its final loss and what torch.compile did in rank 0
    (``summary.json``'s ``compile``: CUDA graphs that did not run show there)."""
    with tempfile.TemporaryDirectory(prefix="scaling-") as tmp:
        out = Path(tmp) / "run"
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               f"--nproc_per_node={procs}", "-m", "playground.run.train",
               *_run_args(overrides, steps, log_every, out)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"torchrun with {procs} process(es) failed "
                               f"({' '.join(overrides)}):\n{proc.stderr[-3000:]}")
        train = [r for r in MetricsLog(out / "metrics.jsonl").records()
                 if r.get("split") == "train"]
        compiled = read_json(out / "summary.json").get("compile")
    rates = [r["tokens_per_s"] for r in train if r["step"] > skip]  # compilation, warm-up left out
    return {"tokens_per_s": statistics.median(rates), "intervals": [round(r) for r in rates],
            "final_loss": train[-1]["loss"], "compile": compiled}


def scaling(variants: list[list[str]], procs: list[int], steps: int, skip: int,
            log_every: int, per_rank: bool = False, show=print,
            rank_batch: bool = True) -> list[dict]:
    """Every variant at every process count (``procs``, one process first if not listed: the
    scaling's reference), one row each, shown as measured; strong scaling with ``rank_batch``:
    each row of several processes also with one process at its rank's batch (the module's
    docstring)."""
    batches = check_request(variants, procs, steps, skip, log_every, per_rank)
    counts = sorted(set(procs) | {1})
    results = []
    for overrides, batch in zip(variants, batches):
        one = None
        for p in counts:
            extra = [f"train.batch_size={batch * p}"] if per_rank and p > 1 else []
            row = {"overrides": overrides, "processes": p,
                   "global_batch": batch * p if per_rank else batch,
                   "batch_per_rank": batch if per_rank else batch // p,
                   **run_one([*overrides, *extra], p, steps, skip, log_every)}
            one = one or row["tokens_per_s"]
            row["scaling"] = row["tokens_per_s"] / one
            row["efficiency"] = row["scaling"] / p
            split = ""
            if rank_batch and not per_rank and p > 1:
                alone = run_one([*overrides, f"train.batch_size={batch // p}"], 1, steps, skip,
                                log_every)["tokens_per_s"]
                row.update(one_at_rank_batch=alone, cap=p * alone / one,
                           dp_efficiency=row["tokens_per_s"] / (p * alone))
                split = (f"  (one process at {batch // p}: {alone:,.0f}, cap ×{row['cap']:.2f}; "
                         f"data parallel's own {row['dp_efficiency']:.0%})")
            show(f"{' '.join(overrides) or '(config)':60s} {p} process(es), global batch "
                 f"{row['global_batch']:>4} ({row['batch_per_rank']} a rank): "
                 f"{row['tokens_per_s']:>12,.0f} tok/s  ×{row['scaling']:.2f} "
                 f"({row['efficiency']:.0%})  loss {row['final_loss']:.4f}" + split
                 + (f"  {skips} graph(s) without CUDA graphs"
                    if (skips := (row["compile"] or {}).get("cudagraph_skips")) else ""))
            results.append(row)
    return results
