"""Where does a training step spend its time? Wall per step against GPU kernel time per step and
the top kernels (PyTorch profiler), compiled as runs are, one pre-made batch (the loader out of
the picture). Two recipes: the mini recipe and the 12L768D / context 2048 bench config.

usage (repository root, on a GPU):
  python3 docs/bench/2026-11-25-h100-table/prof_step.py mini:none mini:ABCD mini:ABCD:model.canon.backend=fused
(recipe:canon[:more overrides, comma-separated]). ``profile.txt`` beside it ran at commit 8436b04,
when ``auto`` meant the fused kernels and ``unfused`` the plain Canon kernel (today's ``auto``).
"""

import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

from playground.bench.measure import BENCH_DEFAULTS
from playground.config import compose, to_objects
from playground.data.loader import Batches
from playground.data.packing import shard_size
from playground.model import build_model
from playground.run.device import device_for
from playground.run.loop import make_optimizer, train_step
from playground.tasks import build_task

RECIPES = {"mini": ["task=depo1", "task.K=4", "task.N=25", "task.context=512", "size=8L512D", "train=paper",
                    "train.batch_size=64"],
           "12L768D": ["task=depo1", "size=12L768D", "train.batch_size=16"]}


def measure(recipe: str, canon: str, extra: list[str]) -> None:
    cfg = to_objects(compose([*BENCH_DEFAULTS, *RECIPES[recipe], f"canon={canon}", "train.compile=true", *extra]))
    device, task = device_for(cfg.train), build_task(cfg.task)
    model = build_model(cfg.model, len(task.vocab), seed=0).to(device)
    compiled, opt = torch.compile(model), make_optimizer(model, cfg.train)
    b = cfg.train.batch_size
    batch = next(Batches(task, b, shard_size(task, cfg.data.shard_examples), 0, 2, packing=cfg.data.packing))

    def timed(n: int) -> float:
        tic = time.perf_counter()
        for _ in range(n):
            train_step(compiled, opt, batch.tokens, batch.mask, None, cfg.train, device)
        torch.cuda.synchronize()
        return time.perf_counter() - tic

    warm, wall = timed(10), timed(20) / 20
    print(f"== {recipe} canon={canon} {' '.join(extra)}: warm-up {warm:.0f} s, {wall * 1e3:.2f} ms/step, "
          f"{b * cfg.task.context / wall:,.0f} tokens/s", flush=True)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        timed(10)
    events = prof.key_averages()
    kernels = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA]
    gpu = sum(e.self_device_time_total for e in kernels) / 10
    print(f"   GPU kernel time {gpu / 1e3:.2f} ms/step (busy {gpu / 1e3 / (wall * 1e3):.0%} of the wall)")
    print(f"   {'kernel':70s} {'ms/step':>8s} {'calls':>6s} {'share':>6s}")
    for e in sorted(kernels, key=lambda e: -e.self_device_time_total)[:18]:
        ms = e.self_device_time_total / 10 / 1e3
        print(f"   {e.key[:70]:70s} {ms:8.3f} {e.count // 10:6d} {ms / (gpu / 1e3):6.1%}")
    torch._dynamo.reset()


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        recipe, canon, *extra = arg.split(":")
        measure(recipe, canon, extra[0].split(",") if extra else [])
