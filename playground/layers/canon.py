"""Canon layers: residual causal depthwise convolutions over the sequence axis.

``y = x + act(conv(x))`` (``residual: false`` gives ``y = act(conv(x))``), kernel 4 by default,
zero left padding, no bias by default. Insertion points (named as in the paper):
A after the mixer's input norm, B inside the mixer on its projected inputs, C after the MLP's
input norm, D inside the MLP on the concatenated gate/up projections.

The plain torch convolution here is the reference implementation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from playground.errors import check
from playground.kernels import canon_triton

POINTS = "ABCD"
ACTIVATIONS = ("none", "silu")
INITS = ("default", "zero")
BACKENDS = ("auto", "torch", "triton")


@dataclass
class CanonConfig:
    positions: str = ""  # any subset of "ABCD", e.g. "", "AC", "ABCD"
    kernel: int = 4
    residual: bool = True
    activation: str = "none"  # none | silu
    bias: bool = False
    init: str = "default"  # default (PyTorch conv init) | zero (identity at step 0 with residual)
    backend: str = "auto"  # auto: the fused Triton kernel on CUDA when available | torch | triton

    def __post_init__(self) -> None:
        p = self.positions
        check(set(p) <= set(POINTS) and len(set(p)) == len(p), "model.canon.positions", p,
              'distinct letters from "ABCD" (e.g. "", "AC", "ABCD")')
        check(1 <= self.kernel <= 8, "model.canon.kernel", self.kernel, "an integer in 1..8")
        check(self.activation in ACTIVATIONS, "model.canon.activation", self.activation,
              f"one of {ACTIVATIONS}")
        check(self.init in INITS, "model.canon.init", self.init, f"one of {INITS}")
        check(self.backend in BACKENDS, "model.canon.backend", self.backend, f"one of {BACKENDS}")

    def tag(self) -> str:
        """Short label for run names, e.g. ``ABCD``, ``AC-nores-silu``, ``none``."""
        if not self.positions:
            return "none"
        parts = ["".join(sorted(self.positions))]
        parts += [] if self.residual else ["nores"]
        parts += [] if self.activation == "none" else [self.activation]
        parts += [] if self.kernel == 4 else [f"k{self.kernel}"]
        parts += ["bias"] if self.bias else []
        parts += [] if self.init == "default" else [f"init{self.init}"]
        return "-".join(parts)


def causal_conv(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                prev: torch.Tensor | None = None) -> torch.Tensor:
    """Reference depthwise causal conv through ``F.conv1d``. x: [B, T, C]; weight: [C, K]
    (``weight[:, -1]`` multiplies the current token); prev: [B, K-1, C] inputs preceding x
    (zeros when None). Returns [B, T, C]."""
    k = weight.shape[1]
    xp = F.pad(x, (0, 0, k - 1, 0)) if prev is None else torch.cat([prev, x], dim=1)
    y = F.conv1d(xp.transpose(1, 2), weight.unsqueeze(1), bias, groups=x.shape[-1])
    return y.transpose(1, 2)


def causal_conv_shifted(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                        prev: torch.Tensor | None = None) -> torch.Tensor:
    """The same conv as a sum of K shifted, channel-scaled copies of x, in the [B, T, C] layout.
    Under ``torch.compile`` it fuses into a few kernels and beats cuDNN's depthwise conv1d by
    about 1.5× (docs/PERFORMANCE.md); in eager mode conv1d is faster, so :class:`Canon` picks
    this path only while compiling. Tested equal to :func:`causal_conv`."""
    k, t = weight.shape[1], x.shape[1]
    xp = F.pad(x, (0, 0, k - 1, 0)) if prev is None else torch.cat([prev, x], dim=1)
    y = xp[:, k - 1 :] * weight[:, k - 1]
    for j in range(k - 1):
        y = y + xp[:, j : j + t] * weight[:, j]
    return y if bias is None else y + bias


class Canon(nn.Module):
    """A Canon layer of ``width`` channels. With a decoding cache it keeps the last K-1 inputs."""

    def __init__(self, width: int, cfg: CanonConfig):
        super().__init__()
        self.cfg = cfg
        self.weight = nn.Parameter(torch.empty(width, cfg.kernel))  # [C, K]
        self.bias = nn.Parameter(torch.zeros(width)) if cfg.bias else None
        self.reset_parameters()

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        if self.cfg.init == "zero":
            nn.init.zeros_(self.weight)
        else:  # PyTorch's Conv1d default for a depthwise conv: U(-1/sqrt(K), 1/sqrt(K))
            bound = 1.0 / math.sqrt(self.cfg.kernel)
            nn.init.uniform_(self.weight, -bound, bound, generator=generator)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, x: torch.Tensor, seq=None) -> torch.Tensor:  # [B, T, C] -> [B, T, C]
        if seq is None and (kernel := self._kernel(x)) is not None:
            return kernel(x.contiguous(), self.weight, self.bias, self.cfg.activation == "silu",
                          self.cfg.residual)
        inp, prev = x, None
        if seq is not None and seq.valid is not None:
            inp = x * seq.valid[..., None].to(x.dtype)  # padding enters the conv as zeros
        if seq is not None and seq.cache is not None:
            prev = seq.cache.get(self)
            if prev is None:
                prev = x.new_zeros(x.shape[0], self.cfg.kernel - 1, x.shape[-1])
            seq.cache.put(self, torch.cat([prev, inp], dim=1)[:, x.shape[1]:])
        bias = None if self.bias is None else self.bias.to(x.dtype)
        conv = causal_conv_shifted if torch.compiler.is_compiling() else causal_conv
        y = conv(inp, self.weight.to(x.dtype), bias, prev)
        if self.cfg.activation == "silu":
            y = F.silu(y)
        return x + y if self.cfg.residual else y

    def _kernel(self, x: torch.Tensor):
        """The fused kernel for a plain full-sequence call, per ``backend``."""
        if self.cfg.backend == "torch" or not x.is_cuda:
            return None
        kernel = canon_triton()
        if kernel is None and self.cfg.backend == "triton":
            raise RuntimeError("model.canon.backend=triton needs triton and a CUDA device")
        return kernel


class NoCanon(nn.Module):
    """Stands where a Canon layer is not configured, so call sites need no branches."""

    def forward(self, x: torch.Tensor, seq=None) -> torch.Tensor:
        return x


def canon_at(cfg: CanonConfig, point: str, width: int) -> nn.Module:
    """A Canon layer if ``point`` is among ``cfg.positions``, else a pass-through."""
    assert point in POINTS
    return Canon(width, cfg) if point in cfg.positions else NoCanon()
