"""playground.run.train with the PyTorch profiler around PROF_STEPS training steps from step
PROF_FROM (env), on every rank: OUT_DIR/profile_rank<R>.json (wall per step, GPU kernel time per
step, busy = kernels / wall, the top kernels and the top CPU operators by their own time) and a
gzipped Chrome trace of each rank in PROF_TRACE_RANKS (env, comma-separated; default every
rank). Run as the module would be: torchrun ... prof_train.py OVERRIDES."""
import gzip
import json
import os
import runpy
import shutil
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

import playground.run.loop as loop

FROM, N = int(os.environ["PROF_FROM"]), int(os.environ.get("PROF_STEPS", "20"))
inner = loop.train_step
state = {"n": 0}


def top(prof, device: bool, k: int = 25) -> list[dict]:
    kind = torch.autograd.DeviceType.CUDA if device else torch.autograd.DeviceType.CPU
    events = [e for e in prof.key_averages() if e.device_type == kind or not device]
    own = (lambda e: e.self_device_time_total) if device else (lambda e: e.self_cpu_time_total)
    return [{"name": e.key[:120], "ms_per_step": own(e) / N / 1e3, "calls_per_step": e.count / N}
            for e in sorted(events, key=own, reverse=True)[:k]]


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def step(model, *args, **kwargs):
    state["n"] += 1
    n = state["n"]
    if n == FROM:
        sync()
        state["prof"] = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        state["prof"].__enter__()
        state["t"] = time.perf_counter()
    out = inner(model, *args, **kwargs)
    if n == FROM + N - 1:
        sync()
        wall = (time.perf_counter() - state["t"]) / N
        prof = state.pop("prof")
        prof.__exit__(None, None, None)
        kernels = top(prof, True, 10_000)
        gpu = sum(r["ms_per_step"] for r in kernels) / 1e3
        rank = int(os.environ.get("RANK", 0))
        out_dir = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("out_dir="))
        os.makedirs(out_dir, exist_ok=True)
        row = {"rank": rank, "world": int(os.environ.get("WORLD_SIZE", 1)), "from_step": FROM,
               "steps": N, "wall_ms_per_step": wall * 1e3, "gpu_kernel_ms_per_step": gpu * 1e3,
               "busy": gpu / wall, "kernels_per_step": sum(r["calls_per_step"] for r in kernels),
               "top_kernels": kernels[:25], "top_cpu_ops": top(prof, False)}
        with open(f"{out_dir}/profile_rank{rank}.json", "w") as f:
            json.dump(row, f, indent=1)
        if str(rank) not in os.environ.get("PROF_TRACE_RANKS", str(rank)).split(","):
            return out
        trace = f"{out_dir}/trace_rank{rank}.json"
        prof.export_chrome_trace(trace)
        with open(trace, "rb") as src, gzip.open(trace + ".gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.remove(trace)
    return out


loop.train_step = step
sys.argv = ["playground-train", *sys.argv[1:]]
runpy.run_module("playground.run.train", run_name="__main__", alter_sys=True)
