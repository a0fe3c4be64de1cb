"""Optional fast paths. Each is imported only where it can run and is tested equal to its plain
PyTorch reference (``tests/test_kernels.py``; GPU checks in ``tests/test_gpu.py``).

The ops are looked up once, when this package is imported, so that a compiled forward reads a
plain module attribute: a cached lookup function called inside it would be traced by dynamo
(which warns that it ignores the cache wrapper).
"""

from __future__ import annotations

import importlib


def _triton_on_cuda() -> bool:
    try:
        import torch
        import triton  # noqa: F401
    except ImportError:
        return False
    return torch.cuda.is_available()


def _load(module: str, name: str):
    """``playground.kernels.<module>.<name>`` where triton and CUDA are there, else None."""
    return (getattr(importlib.import_module(f"playground.kernels.{module}"), name)
            if _triton_on_cuda() else None)


_CANON = _load("canon_triton", "canon_conv")
_CANON_GLU = _load("canon_triton", "canon_glu")
_CANON_ROPE = _load("canon_triton", "canon_rope")
_NORM_CANON = _load("norm_canon_triton", "norm_canon")


def _adapter(package: str, name: str):
    """``adapters.<name>`` where ``package`` imports and CUDA is there, else None."""
    import torch

    from playground.kernels import adapters

    return (getattr(adapters, name)
            if torch.cuda.is_available() and adapters.available(package) else None)


_CAUSAL_CONV1D = _adapter("causal_conv1d", "causal_conv1d_canon")
_FLA_CANON = _adapter("fla", "fla_canon")
_DYNAMIC_CANON = _load("dynamic_canon_triton", "dynamic_canon")


def canon_kernel():
    """The fused Triton Canon op (``playground::canon_conv``), or None without triton/CUDA."""
    return _CANON


def canon_glu_kernel():
    """Canon fused with SwiGLU (``playground::canon_glu``: Canon-D then silu(gate)·up), or None."""
    return _CANON_GLU


def canon_rope_kernel():
    """Canon-B fused with the q/k/v head split and RoPE (``playground::canon_rope``), or None."""
    return _CANON_ROPE


def norm_canon_kernel():
    """Canon-A/C fused with the RMSNorm before them (``playground::norm_canon``), or None."""
    return _NORM_CANON


def causal_conv1d_kernel():
    """Canon through causal-conv1d (``model.canon.backend=causal_conv1d``), or None."""
    return _CAUSAL_CONV1D


def fla_canon_kernel():
    """Canon through fla's ``ShortConvolution`` kernel (``model.canon.backend=fla``), or None."""
    return _FLA_CANON


def dynamic_canon_kernel():
    """The fused low-rank dynamic Canon op (``playground::dynamic_canon``), or None."""
    return _DYNAMIC_CANON
