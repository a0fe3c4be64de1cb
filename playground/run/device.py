"""Where a run computes: the device (and deterministic kernels), and data-parallel training
across processes (``torchrun --nproc_per_node=N -m playground.run.train``).

Data parallel: every process cuts the same global batches from the stream (a function of the
config alone; its loader builds one shard in N and the ranks swap them,
``playground.data.loader.ShardExchange``) and trains on its contiguous slice of each, so a run
sees the same examples in the same order whatever the world size; DDP (``train.grad_sync=ddp``)
or one flat all-reduce (``flat``, :class:`FlatGradSync`) sums the gradients. Only rank 0 writes
the run directory, logs and evaluates.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
import torch.distributed as dist

from playground.errors import ConfigError

# The elementwise ops whose CPU kernels PyTorch hands to MKL's vector math (VML) where its build
# has MKL (ATen's cpu/vml.h), for float32 and float64.
VML_OPS = (torch.acos, torch.asin, torch.atan, torch.cos, torch.erf, torch.erfc, torch.erfinv,
           torch.exp, torch.log, torch.log10, torch.log2, torch.sin, torch.sqrt, torch.tan,
           torch.tanh, torch.trunc)


def warm_vector_math() -> None:
    """Call each of :data:`VML_OPS` once, on one element, in this thread. A CPU run's first call
    of such an op on a tensor large enough for two threads could, on a loaded machine, come out
    different in its last bits (a fixed alternative; cos of RoPE's angle table was seen, and the
    whole run then drifted: docs/runs.md, "Repeatability"); after one single-threaded call first,
    no such run was seen. Cheap (about 6 ms the first time, far less after) and harmless to
    repeat."""
    for dtype in (torch.float32, torch.float64):
        x = torch.full((1,), 0.5, dtype=dtype)
        for op in VML_OPS:
            op(x)


def pick_device(name: str, key: str = "train.device") -> torch.device:
    """``auto`` = CUDA when available, else CPU; a named CUDA device must exist
    (:func:`check_device`, naming ``key``). Warms the CPU's vector math first
    (:func:`warm_vector_math`), so that CPU runs repeat bit for bit."""
    warm_vector_math()
    return check_device(name, key)


def check_device(name: str, key: str = "train.device") -> torch.device:
    """The device ``name`` (``auto``, ``cpu``, ``cuda``, ``cuda:N``) stands for on this machine, or
    a ConfigError naming ``key`` when it has no such device (no CUDA, or fewer GPUs than N + 1).
    Computes nothing: callable before anything is written."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ConfigError(f"{key}={name!r} is invalid: expected auto, cpu, cuda or cuda:N") \
            from None
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if not count:
            raise ConfigError(f"{key}={name!r} is invalid: CUDA is not available on this machine; "
                              f"use {key}=cpu (or auto)")
        if device.index is not None and device.index >= count:
            raise ConfigError(f"{key}={name!r} is invalid: this machine has {count} CUDA "
                              f"device(s), cuda:0..cuda:{count - 1}")
    return device


def memory_of(device: torch.device) -> tuple[int, int]:
    """(available, total) bytes of memory on ``device``: the GPU's free and total memory
    (``torch.cuda.mem_get_info``), else the host's available and total RAM (``/proc/meminfo``,
    else ``os.sysconf``)."""
    if device.type == "cuda":
        free, total = torch.cuda.mem_get_info(device)
        return int(free), int(total)
    try:
        lines = Path("/proc/meminfo").read_text().splitlines()
        info = dict(line.split(":", 1) for line in lines if ":" in line)
        return tuple(int(info[k].split()[0]) * 1024 for k in ("MemAvailable", "MemTotal"))
    except (OSError, KeyError, ValueError):
        page = os.sysconf("SC_PAGE_SIZE")
        return os.sysconf("SC_AVPHYS_PAGES") * page, os.sysconf("SC_PHYS_PAGES") * page


def device_for(train) -> torch.device:
    """The device of a ``TrainConfig`` (``train.device``), deterministic kernels switched on first
    when ``train.deterministic`` (process-wide, so in ``playground-bench train compare=`` such
    configs go last)."""
    if train.deterministic:
        use_deterministic_kernels()
    return pick_device(train.device)


HOST_RUNS = "PLAYGROUND_HOST_RUNS"  # set by a local sweep: how many runs share this host at once
# The loader workers a sweep's run keeps however many runs share its host: a mini run alone trained
# at 0.38-0.51 M tokens/s with one worker and 0.93-1.23 M with three (Depo1 K=4 N=15), Mano GLA at
# 0.31-0.41 / 0.66-0.76 M (H200, 2026-11-28: docs/bench/2026-11-28-h200-findings). Idle while the
# GPU is the bottleneck.
SOLO_WORKERS = 3


def loader_workers(requested: int, device: torch.device) -> int:
    """Loader processes for ``data.num_workers`` (-1 = auto). Auto: none on CPU (the examples
    are made in the training process); on CUDA, the cores this process may use, shared with the
    other runs of a local sweep (``PLAYGROUND_HOST_RUNS``) and the data-parallel ranks on this
    host, less one for the training process itself; but never fewer than a run would have alone
    up to ``SOLO_WORKERS`` (the runs of a sweep end at different times, and the last ones on a GPU
    must not stay starved of data); at least 1, at most 16. The data stream is the same whatever
    the count."""
    if requested >= 0:
        return requested
    if device.type != "cuda":
        return 0
    cores = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
             else (os.cpu_count() or 1))
    ranks = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
    share = int(os.environ.get(HOST_RUNS, 1)) * ranks
    alone = min(SOLO_WORKERS, cores // max(1, ranks) - 1)
    return max(1, min(16, max(alone, cores // max(1, share) - 1)))


def use_deterministic_kernels() -> None:
    """Make this process's CUDA runs repeat bit for bit (``train.deterministic=true``): PyTorch's
    deterministic kernels only (an op without one raises, naming itself), cuBLAS with a fixed
    workspace, no cuDNN autotuning, and Inductor without on-device benchmarking. Call before
    the first CUDA operation. CPU runs repeat without it. Process-wide and not undone."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    import torch._inductor.config as inductor  # loaded only when asked for

    inductor.deterministic = True


# -- data parallel ---------------------------------------------------------------------------


def world() -> tuple[int, int, int]:
    """(rank, world size, local rank) from torchrun's environment; (0, 1, 0) otherwise."""
    return (int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)),
            int(os.environ.get("LOCAL_RANK", 0)))


def is_main() -> bool:
    return world()[0] == 0


def setup(device: torch.device) -> torch.device:
    """Join the process group (NCCL on CUDA, gloo on CPU); each process takes its local GPU."""
    rank, size, local = world()
    if size == 1:
        return device
    if device.type == "cuda":
        device = torch.device("cuda", local)
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo", rank=rank,
                                world_size=size)
    return device


def all_sum(tensor: torch.Tensor) -> torch.Tensor:
    if dist.is_initialized() and world()[1] > 1:
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor


class FlatGradSync:
    """Data parallel without DDP (``train.grad_sync=flat``): after the backward, every gradient
    is copied into one buffer per dtype, summed over the ranks by one all-reduce, and each
    parameter's ``.grad`` becomes its view of the sum. A few operations a step, where DDP's
    per-parameter hooks launch one or two each; DDP's one advantage, the all-reduce overlapping
    the backward, is lost where a compiled backward hands over all its gradients at once.
    The ranks must start from the same weights: :meth:`broadcast` copies rank 0's."""

    def __init__(self, params):
        self.params = [p for p in params if p.requires_grad]
        self.groups: dict[torch.dtype, tuple[list, torch.Tensor, list]] = {}
        for dtype in dict.fromkeys(p.dtype for p in self.params):
            group = [p for p in self.params if p.dtype == dtype]
            flat = torch.empty(sum(p.numel() for p in group), dtype=dtype,
                               device=group[0].device)
            views = [v.view_as(p) for v, p in zip(flat.split([p.numel() for p in group]), group)]
            self.groups[dtype] = (group, flat, views)

    def broadcast(self) -> None:
        with torch.no_grad():
            for p in self.params:
                dist.broadcast(p, 0)

    def __call__(self) -> None:
        for group, flat, views in self.groups.values():
            torch.cat([(torch.zeros_like(p) if p.grad is None else p.grad).reshape(-1)
                       for p in group], out=flat)
            dist.all_reduce(flat, op=dist.ReduceOp.SUM)
            for p, view in zip(group, views):
                p.grad = view


def barrier() -> None:
    if dist.is_initialized() and world()[1] > 1:
        dist.barrier()


def teardown() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()
