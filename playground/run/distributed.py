"""Data-parallel training across processes (``torchrun --nproc_per_node=N -m playground.run.train``).

Every process reads the same global batch from its own loader (the stream is a function of the
config alone) and trains on its contiguous slice of it, so a run sees the same examples in the
same order whatever the world size; DDP sums the gradients. Only rank 0 writes the run
directory, logs and evaluates.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist


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
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo", rank=rank, world_size=size)
    return device


def all_sum(tensor: torch.Tensor) -> torch.Tensor:
    if dist.is_initialized() and world()[1] > 1:
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor


def barrier() -> None:
    if dist.is_initialized() and world()[1] > 1:
        dist.barrier()


def teardown() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()
