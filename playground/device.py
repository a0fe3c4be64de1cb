"""Device and precision choices shared by training, evaluation and generation."""

from __future__ import annotations

import torch


def pick_device(name: str) -> torch.device:
    """``auto`` = CUDA when available, else CPU; a named CUDA device must exist."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"train.device={name!r} but CUDA is not available; use train.device=cpu")
    return torch.device(name)


def autocast_for(device: torch.device, dtype: str = "auto"):
    """bf16 autocast for ``dtype="bfloat16"``, or ``"auto"`` on CUDA; otherwise a no-op."""
    enabled = dtype == "bfloat16" or (dtype == "auto" and device.type == "cuda")
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=enabled)
