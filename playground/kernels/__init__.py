"""Optional fast paths. Each is imported only where it can run and is tested equal to its plain
PyTorch reference (``tests/test_kernels.py``; GPU checks in ``tests/test_gpu.py``)."""

from __future__ import annotations

import functools


@functools.cache
def canon_triton():
    """The fused Triton Canon op (``playground::canon_conv``), or None without triton/CUDA."""
    try:
        import torch
        import triton  # noqa: F401

        if not torch.cuda.is_available():
            return None
        from playground.kernels.canon_triton import canon_conv
    except ImportError:
        return None
    return canon_conv
