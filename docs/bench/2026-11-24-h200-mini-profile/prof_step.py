"""Where does a mini-recipe training step spend its time? Wall per step against GPU kernel time
per step, the top kernels (PyTorch profiler), and the same step compiled with
``mode="reduce-overhead"`` (CUDA graphs). One pre-made batch, so the loader is out of the picture.

usage (repository root, on a GPU): python3 docs/bench/2026-11-24-h200-mini-profile/prof_step.py none ABCD

``profile.txt`` beside it is the output of ``prof_step.py ABCD`` on an H200 (2026-11-24). Its "GPU
kernel time" line summed every kernel twice (once more under the custom op that launched it); the
right figure is the table's "Self CUDA time total" / 10 steps, and this script now counts kernel
events only.
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

RECIPE = ["task=depo1", "task.K=4", "task.N=25", "task.context=512", "size=8L512D", "train=paper",
          "train.batch_size=64"]


def measure(canon: str, mode: str) -> None:
    cfg = to_objects(compose([*BENCH_DEFAULTS, *RECIPE, f"canon={canon}"]))
    device, task = device_for(cfg.train), build_task(cfg.task)
    model = build_model(cfg.model, len(task.vocab), seed=0).to(device)
    compiled, opt = torch.compile(model, mode=mode), make_optimizer(model, cfg.train)
    batch = next(Batches(task, 64, shard_size(task, cfg.data.shard_examples), 0, 2, packing=cfg.data.packing))

    def step():
        train_step(compiled, opt, batch.tokens, batch.mask, None, cfg.train, device)

    def timed(n: int) -> float:
        tic = time.perf_counter()
        for _ in range(n):
            step()
        torch.cuda.synchronize()
        return time.perf_counter() - tic

    warm, wall = timed(15), timed(30) / 30
    print(f"== canon={canon} mode={mode}: warm-up {warm:.0f} s, {wall * 1e3:.2f} ms/step, "
          f"{64 * 512 / wall:,.0f} tokens/s", flush=True)
    if mode == "default":
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            timed(10)
        events = prof.key_averages()
        gpu = sum(e.self_device_time_total for e in events if e.device_type == torch.autograd.DeviceType.CUDA) / 10
        print(f"   GPU kernel time {gpu / 1e3:.2f} ms/step (busy {gpu / 1e3 / (wall * 1e3):.0%} of the wall)")
        print(events.table(sort_by="self_device_time_total", row_limit=14, max_name_column_width=60))
        print(events.table(sort_by="self_cpu_time_total", row_limit=10, max_name_column_width=60))


if __name__ == "__main__":
    for canon in sys.argv[1:]:
        for mode in ("default", "reduce-overhead"):
            measure(canon, mode)
