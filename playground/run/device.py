"""Device and precision choices shared by training, evaluation and generation."""

from __future__ import annotations

import os

import torch


def pick_device(name: str) -> torch.device:
    """``auto`` = CUDA when available, else CPU; a named CUDA device must exist."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"train.device={name!r} but CUDA is not available; use train.device=cpu")
    return torch.device(name)


def device_for(train) -> torch.device:
    """The device of a ``TrainConfig`` (``train.device``), deterministic kernels switched on first
    when ``train.deterministic`` (process-wide, so in ``playground-bench --compare`` such configs
    go last)."""
    if train.deterministic:
        use_deterministic_kernels()
    return pick_device(train.device)


def autocast_for(device: torch.device, dtype: str = "auto"):
    """bf16 autocast for ``dtype="bfloat16"``, or ``"auto"`` on CUDA; otherwise a no-op."""
    enabled = dtype == "bfloat16" or (dtype == "auto" and device.type == "cuda")
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=enabled)


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
