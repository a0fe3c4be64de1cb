"""Rotary position embedding on a configurable fraction of each head's dims and of the heads.

``dim_fraction`` rotates the first ``r`` dims of a head (``r`` = fraction × head_dim, rounded to
an even number; the rest are position-free), ``head_fraction`` picks how many heads (the first
ones) get RoPE at all. ``dim_fraction = 0`` or ``head_fraction = 0`` is NoPE. Within the rotated
dims the two halves are paired (GPT-NeoX layout) with frequencies ``base^(-2i/r)``.
"""

from __future__ import annotations

import torch
from torch import nn


class Rotary(nn.Module):
    def __init__(self, n_heads: int, head_dim: int, dim_fraction: float, head_fraction: float,
                 base: float = 10000.0):
        super().__init__()
        self.rot_dims = 2 * round(dim_fraction * head_dim / 2)
        self.rot_heads = round(head_fraction * n_heads)
        self.enabled = self.rot_dims > 0 and self.rot_heads > 0
        # every dim of every head turns
        self.whole = self.rot_dims == head_dim and self.rot_heads == n_heads
        self.key = (self.rot_dims, base)  # layers with equal keys share one angle table per call
        half = self.rot_dims // 2
        inv_freq = base ** (-torch.arange(half, dtype=torch.float64) / max(half, 1))
        self.register_buffer("inv_freq", inv_freq.float(), persistent=False)

    def angles(self, positions: torch.Tensor):
        """cos, sin of shape [..., rot_dims/2] for integer positions of any shape."""
        freqs = positions.to(torch.float32)[..., None] * self.inv_freq.to(positions.device)
        return freqs.cos(), freqs.sin()


    def table(self, positions: int | torch.Tensor, t: int, device: torch.device):
        """(cos, ±sin) over the rotated dims, broadcastable to [..., B, H, T, r] for ``t`` tokens
        at ``positions``: out = x·cos + swap_halves(x)·sin (one multiply-add per element)."""
        if isinstance(positions, int):
            cos, sin = self.angles(torch.arange(positions, positions + t, device=device))
        else:
            cos, sin = (a[:, None] for a in self.angles(positions))  # [B, 1, T, r/2]
        return torch.cat([cos, cos], dim=-1), torch.cat([-sin, sin], dim=-1)

    def forward(self, x: torch.Tensor, positions: int | torch.Tensor, angles=None) -> torch.Tensor:
        """x: [..., B, H, T, hd] (q and k may be stacked in front); positions: the first
        position (int, rows aligned) or [B, T]; ``angles``: a precomputed ``table``."""
        if not self.enabled:
            return x
        cos, sin = angles if angles is not None else self.table(positions, x.shape[-2], x.device)
        h, r = self.rot_heads, self.rot_dims
        part = x[..., :h, :, :r].float()
        x1, x2 = part.chunk(2, dim=-1)
        rotated = (part * cos + torch.cat([x2, x1], dim=-1) * sin).to(x.dtype)
        if h == x.shape[-3] and r == x.shape[-1]:
            return rotated
        out = x.clone()
        out[..., :h, :, :r] = rotated
        return out
