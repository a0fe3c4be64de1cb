"""Optional fast paths. Each is imported only where it can run and is tested equal to its plain
PyTorch reference (``tests/test_kernels.py``; GPU checks in ``tests/test_gpu.py``)."""

from __future__ import annotations

import functools


def _triton_on_cuda() -> bool:
    try:
        import torch
        import triton  # noqa: F401
    except ImportError:
        return False
    return torch.cuda.is_available()


@functools.cache
def dynamic_canon_kernel():
    """The fused low-rank dynamic Canon op (``playground::dynamic_canon``), or None."""
    if not _triton_on_cuda():
        return None
    from playground.kernels.dynamic_canon_triton import dynamic_canon

    return dynamic_canon


@functools.cache
def canon_kernel():
    """The fused Triton Canon op (``playground::canon_conv``), or None without triton/CUDA."""
    if not _triton_on_cuda():
        return None
    from playground.kernels.canon_triton import canon_conv

    return canon_conv
