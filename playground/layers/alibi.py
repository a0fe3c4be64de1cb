"""Distance-based attention biases: ALiBi (Press et al. 2022) and Hard-ALiBi.

ALiBi adds ``-slope_h · (i - j)`` to the score of query i and key j (i, j: positions); the head
slopes are the geometric sequence of Press et al. (for a head count that is not a power of two,
the power of two below it plus every other slope of the next one). Hard-ALiBi lets head h
(h = 1..H) attend only to keys within distance h: itself and the h tokens before it.
"""

from __future__ import annotations

import math

import torch


def alibi_slopes(n_heads: int, device: torch.device | None = None) -> torch.Tensor:
    """[H] slopes: 2^(-8/n · i) for i = 1..n when n is a power of two; otherwise the ``below``
    slopes of the power of two below n, then every other slope of the next one,
    2^(-8/(2·below) · (2j + 1)). Made on ``device`` by kernels, without a host-to-device copy (so
    a CUDA graph can capture a decoding step that builds them)."""
    below = 2 ** math.floor(math.log2(n_heads))
    i = torch.arange(n_heads, device=device, dtype=torch.float64)
    exponent = torch.where(i < below, -8 * (i + 1) / below, -4 * (2 * (i - below) + 1) / below)
    return torch.exp2(exponent).float()


def distances(seq, t_q: int, t_k: int, device: torch.device) -> torch.Tensor:
    """Position of each query minus position of each key: [B or 1, Tq, Tk]."""
    if seq is None or seq.positions is None:
        offset = t_k - t_q
        q = torch.arange(offset, t_k, device=device)[None]
        k = torch.arange(t_k, device=device)[None]
    elif seq.segments is not None:  # no cache: keys are the queries
        q = k = seq.positions
    else:  # padding: a key's position counts the real tokens before it in its row
        q = seq.positions
        k = (seq.key_valid.long().cumsum(1) - 1).clamp(min=0)
    return q[:, :, None] - k[:, None, :]


def with_distance_bias(kind: str, allowed: torch.Tensor, dist: torch.Tensor,
                       n_heads: int) -> torch.Tensor:
    """Fold the bias into an attention mask. allowed: bool [B or 1, 1, Tq, Tk]; dist:
    [B or 1, Tq, Tk]. Returns a float bias (``alibi``) or a bool mask (``hard_alibi``),
    [B or 1, H, Tq, Tk]."""
    dist = dist[:, None]  # [B, 1, Tq, Tk]
    if kind == "hard_alibi":
        window = torch.arange(1, n_heads + 1, device=dist.device)[None, :, None, None]
        return allowed & (dist <= window)
    slopes = alibi_slopes(n_heads, dist.device)[None, :, None, None]
    bias = -slopes * dist.float()
    return bias.masked_fill(~allowed, float("-inf"))
