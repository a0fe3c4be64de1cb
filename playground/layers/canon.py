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
from playground.kernels import canon_kernel

POINTS = "ABCD"
EXTRA_POINTS = "OE"  # after the mixer's output / the MLP's down projection (after_every_linear)
DYNAMIC = ("none", "lowrank", "headwise")
ACTIVATIONS = ("none", "silu")
INITS = ("default", "zero", "past_average", "random_fixed")
BACKENDS = ("auto", "torch", "triton")


@dataclass
class CanonConfig:
    positions: str = ""  # any subset of "ABCD", e.g. "", "AC", "ABCD"
    kernel: int = 4
    residual: bool = True
    activation: str = "none"  # none | silu
    bias: bool = False
    # default (PyTorch conv init) | zero (identity at step 0 with residual) | past_average
    # (current token 0, each of the K-1 previous 1/(K-1)) | random_fixed (default init, frozen:
    # the paper's "Canon(cst)")
    init: str = "default"
    backend: str = "auto"  # auto: the fused Triton kernel on CUDA when available | torch | triton
    dynamic: str = "none"  # none | lowrank | headwise: input-dependent filters (layers/dynamic_canon.py)
    rank: int = 8  # lowrank: rank R of the filter generator
    group: int = 64  # headwise: channels sharing one filter
    after_every_linear: bool = False  # also after the mixer's output and the MLP's down projection

    def __post_init__(self) -> None:
        p = self.positions
        check(set(p) <= set(POINTS) and len(set(p)) == len(p), "model.canon.positions", p,
              'distinct letters from "ABCD" (e.g. "", "AC", "ABCD")')
        check(1 <= self.kernel <= 8, "model.canon.kernel", self.kernel, "an integer in 1..8")
        check(self.activation in ACTIVATIONS, "model.canon.activation", self.activation,
              f"one of {ACTIVATIONS}")
        check(self.init in INITS, "model.canon.init", self.init, f"one of {INITS}")
        check(self.backend in BACKENDS, "model.canon.backend", self.backend, f"one of {BACKENDS}")
        check(self.dynamic in DYNAMIC, "model.canon.dynamic", self.dynamic, f"one of {DYNAMIC}")
        check(self.rank >= 1, "model.canon.rank", self.rank, "an integer >= 1")
        check(self.group >= 1, "model.canon.group", self.group, "an integer >= 1")

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
        parts += [] if self.dynamic == "none" else [f"dyn{self.dynamic}"]
        parts += ["alllinear"] if self.after_every_linear else []
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


def causal_conv_segmented(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                          segments: torch.Tensor) -> torch.Tensor:
    """The causal conv where a token only sees earlier tokens of its own segment [B, T]."""
    k, t = weight.shape[1], x.shape[1]
    xp = F.pad(x, (0, 0, k - 1, 0))
    sp = F.pad(segments, (k - 1, 0), value=-2)
    y = sum(xp[:, j : j + t] * weight[:, j] * (sp[:, j : j + t] == segments)[..., None].to(x.dtype)
            for j in range(k))
    return y if bias is None else y + bias


class Canon(nn.Module):
    """A Canon layer of ``width`` channels. With a decoding cache it keeps the last K-1 inputs."""

    def __init__(self, width: int, cfg: CanonConfig):
        super().__init__()
        self.cfg = cfg
        frozen = cfg.init == "random_fixed"
        self.weight = nn.Parameter(torch.empty(width, cfg.kernel), requires_grad=not frozen)  # [C, K]
        self.bias = nn.Parameter(torch.zeros(width)) if cfg.bias else None
        self.reset_parameters()

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        k = self.cfg.kernel
        if self.cfg.init == "zero":
            nn.init.zeros_(self.weight)
        elif self.cfg.init == "past_average":
            with torch.no_grad():
                self.weight.fill_(1.0 / max(k - 1, 1))
                self.weight[:, -1] = 0.0
        else:  # PyTorch's Conv1d default for a depthwise conv: U(-1/sqrt(K), 1/sqrt(K))
            bound = 1.0 / math.sqrt(self.cfg.kernel)
            nn.init.uniform_(self.weight, -bound, bound, generator=generator)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, x: torch.Tensor, seq=None, h: torch.Tensor | None = None) -> torch.Tensor:
        """x: [B, T, C] -> [B, T, C] (``h`` is for dynamic Canon; a static layer ignores it)."""
        if seq is None and (kernel := self._kernel(x)) is not None:
            return kernel(x.contiguous(), self.weight, self.bias, self.cfg.activation == "silu",
                          self.cfg.residual)
        bias = None if self.bias is None else self.bias.to(x.dtype)
        if seq is not None and seq.segments is not None:
            y = causal_conv_segmented(x, self.weight.to(x.dtype), bias, seq.segments)
            return self._finish(x, y)
        inp, prev = x, None
        if seq is not None and seq.valid is not None:
            inp = x * seq.valid[..., None].to(x.dtype)  # padding enters the conv as zeros
        if seq is not None and seq.cache is not None:
            prev = seq.cache.get(self)
            if prev is None:
                prev = x.new_zeros(x.shape[0], self.cfg.kernel - 1, x.shape[-1])
            seq.cache.put(self, torch.cat([prev, inp], dim=1)[:, x.shape[1]:])
        conv = causal_conv_shifted if torch.compiler.is_compiling() else causal_conv
        return self._finish(x, conv(inp, self.weight.to(x.dtype), bias, prev))

    def _finish(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Activation and residual around the conv output y."""
        if self.cfg.activation == "silu":
            y = F.silu(y)
        return x + y if self.cfg.residual else y

    def _kernel(self, x: torch.Tensor):
        """The fused kernel for a plain full-sequence call, per ``backend``."""
        if self.cfg.backend == "torch" or not x.is_cuda:
            return None
        kernel = canon_kernel()
        if kernel is None and self.cfg.backend == "triton":
            raise RuntimeError("model.canon.backend=triton needs triton and a CUDA device")
        return kernel


class NoCanon(nn.Module):
    """Stands where a Canon layer is not configured, so call sites need no branches."""

    def forward(self, x: torch.Tensor, seq=None, h: torch.Tensor | None = None) -> torch.Tensor:
        return x


def canon_at(cfg: CanonConfig, point: str, width: int, source: int | None = None) -> nn.Module:
    """The Canon layer configured at ``point`` (static or dynamic), else a pass-through.
    ``source``: width of the post-norm activation h that dynamic filters are generated from
    (default ``width``: at A and C the layer's input is h itself). O and E (after the output /
    down projections) are on when ``cfg.after_every_linear``."""
    assert point in POINTS + EXTRA_POINTS
    on = point in cfg.positions or (point in EXTRA_POINTS and cfg.after_every_linear and cfg.positions)
    if not on:
        return NoCanon()
    if cfg.dynamic == "none":
        return Canon(width, cfg)
    from playground.layers.dynamic_canon import DynamicCanon

    return DynamicCanon(width, source or width, cfg)
