"""Dynamic Canon ("Dynamic Short Convolutions Improve Transformers"): a causal depthwise conv
whose K-tap filter at position t is generated from the block's post-norm activation h(t).

    y[t, c] = x[t, c] + Σ_j w(t)[c, j] · x[t - (K-1) + j, c]

- ``lowrank``: w(t) = W2 (W1 h(t)) + b, rank R; W2 starts at zero and b like the static kernel,
  so at step 0 the layer equals a static Canon with weight b.
- ``headwise``: one filter per group of ``group`` channels, w(t) = W h(t) + b (W zero at init).

This file is the PyTorch reference (it materialises the [B, T, C, K] filters); on CUDA the
low-rank form runs through ``playground.kernels.dynamic_canon_triton``, which never does.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from playground.errors import ConfigError
from playground.kernels import dynamic_canon_kernel


def dynamic_conv(x: torch.Tensor, w: torch.Tensor, prev: torch.Tensor | None = None,
                 segments: torch.Tensor | None = None) -> torch.Tensor:
    """x: [B, T, C]; w: [B, T, C, K] per-position filters (``w[..., -1]`` on the current token);
    prev: [B, K-1, C] inputs before x; segments: [B, T] (no mixing across them)."""
    k, t = w.shape[-1], x.shape[1]
    xp = F.pad(x, (0, 0, k - 1, 0)) if prev is None else torch.cat([prev, x], dim=1)
    sp = None if segments is None else F.pad(segments, (k - 1, 0), value=-2)
    y = torch.zeros_like(x)
    for j in range(k):
        term = xp[:, j : j + t] * w[..., j]
        if sp is not None:
            term = term * (sp[:, j : j + t] == segments)[..., None].to(x.dtype)
        y = y + term
    return y


class DynamicCanon(nn.Module):
    """A dynamic Canon layer of ``width`` channels whose filters come from a ``source``-wide h."""

    def __init__(self, width: int, source: int, cfg):
        super().__init__()
        self.cfg, self.width, k = cfg, width, cfg.kernel
        if cfg.dynamic == "lowrank":
            self.down = nn.Linear(source, cfg.rank, bias=False)  # W1
            self.up = nn.Linear(cfg.rank, k * width, bias=False)  # W2, rows ordered [K, C]
            self.bias = nn.Parameter(torch.empty(k, width))
        else:
            if width % cfg.group:
                raise ConfigError(f"model.canon.group={cfg.group} is invalid: expected a divisor of "
                                  f"every Canon width (here {width})")
            self.groups = width // cfg.group
            self.proj = nn.Linear(source, k * self.groups, bias=False)
            self.bias = nn.Parameter(torch.empty(k, self.groups))
        self.reset_parameters()

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        k = self.cfg.kernel
        if self.cfg.dynamic == "lowrank":
            nn.init.normal_(self.down.weight, 0.0, 1.0 / math.sqrt(self.down.in_features), generator=generator)
            nn.init.zeros_(self.up.weight)
        else:
            nn.init.zeros_(self.proj.weight)
        with torch.no_grad():  # like the static kernel (Canon's own init rule), transposed to [K, C]
            if self.cfg.init == "zero":
                self.bias.zero_()
            elif self.cfg.init == "past_average":
                self.bias.fill_(1.0 / max(k - 1, 1))
                self.bias[-1] = 0.0
            else:
                bound = 1.0 / math.sqrt(k)
                self.bias.uniform_(-bound, bound, generator=generator)

    def filters(self, h: torch.Tensor) -> torch.Tensor:
        """Per-position filters [B, T, C, K] (the reference path materialises them)."""
        b, t, _ = h.shape
        k = self.cfg.kernel
        if self.cfg.dynamic == "lowrank":
            w = self.up(self.down(h)).view(b, t, k, self.width) + self.bias.to(h.dtype)
        else:
            g = self.proj(h).view(b, t, k, self.groups) + self.bias.to(h.dtype)
            w = g.repeat_interleave(self.cfg.group, dim=-1)
        return w.transpose(-1, -2)

    def forward(self, x: torch.Tensor, seq=None, h: torch.Tensor | None = None) -> torch.Tensor:
        """x: [B, T, C]; h: [B, T, source] the post-norm activation (default: x itself)."""
        h = x if h is None else h
        if seq is None and self.cfg.dynamic == "lowrank" and (kernel := self._kernel(x)) is not None:
            u = self.down(h)  # [B, T, R]
            w2 = self.up.weight.view(self.cfg.kernel, self.width, self.cfg.rank)  # [K, C, R]
            return kernel(x.contiguous(), u.contiguous(), w2, self.bias, self.cfg.residual)
        inp, prev = x, None
        if seq is not None and seq.valid is not None:
            inp = x * seq.valid[..., None].to(x.dtype)
        if seq is not None and seq.cache is not None:
            prev = seq.cache.get(self)
            if prev is None:
                prev = x.new_zeros(x.shape[0], self.cfg.kernel - 1, x.shape[-1])
            seq.cache.put(self, torch.cat([prev, inp], dim=1)[:, x.shape[1]:])
        segments = None if seq is None else seq.segments
        y = dynamic_conv(inp, self.filters(h).to(x.dtype), prev, segments)
        if self.cfg.activation == "silu":
            y = F.silu(y)
        return x + y if self.cfg.residual else y

    def _kernel(self, x: torch.Tensor):
        if self.cfg.backend == "torch" or not x.is_cuda or self.cfg.activation != "none":
            return None
        kernel = dynamic_canon_kernel()
        if kernel is None and self.cfg.backend == "triton":
            raise RuntimeError("model.canon.backend=triton needs triton and a CUDA device")
        return kernel
