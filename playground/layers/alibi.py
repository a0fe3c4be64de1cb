"""Distance-based attention biases: ALiBi (Press et al. 2022) and Hard-ALiBi.

ALiBi adds ``-slope_h · (i - j)`` to the score of query i and key j (i, j: positions); the head
slopes are the geometric sequence of Press et al. (for a head count that is not a power of two,
the power of two below it plus every other slope of the next one). Hard-ALiBi lets head h
(h = 1..H) attend only to keys within distance h: itself and the h tokens before it.
"""

from __future__ import annotations

import math

import torch


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """[H] slopes: 2^(-8/n · i) for i = 1..n when n is a power of two."""
    def power_of_two(n: int) -> list[float]:
        return [2 ** (-8 * (i + 1) / n) for i in range(n)]

    below = 2 ** math.floor(math.log2(n_heads))
    slopes = power_of_two(below)
    if below < n_heads:
        slopes += power_of_two(2 * below)[0::2][: n_heads - below]
    return torch.tensor(slopes)


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


def with_distance_bias(kind: str, allowed: torch.Tensor, dist: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Fold the bias into an attention mask. allowed: bool [B or 1, 1, Tq, Tk]; dist:
    [B or 1, Tq, Tk]. Returns a float bias (``alibi``) or a bool mask (``hard_alibi``),
    [B or 1, H, Tq, Tk]."""
    dist = dist[:, None]  # [B, 1, Tq, Tk]
    if kind == "hard_alibi":
        window = torch.arange(1, n_heads + 1, device=dist.device)[None, :, None, None]
        return allowed & (dist <= window)
    slopes = alibi_slopes(n_heads).to(dist.device)[None, :, None, None]
    bias = -slopes * dist.float()
    return bias.masked_fill(~allowed, float("-inf"))
