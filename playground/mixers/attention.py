"""Multi-head causal self-attention (Llama style) through ``scaled_dot_product_attention``.

Position encoding is configuration: RoPE on a fraction of each head's dims and/or of the heads
(full RoPE, NoPE, the paper's reduced RoPE). Canon-B acts on the concatenated q, k, v
projections before RoPE. With a decoding cache the keys/values of earlier tokens are kept.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from playground.errors import check
from playground.layers.canon import CanonConfig, canon_at
from playground.layers.rotary import Rotary


@dataclass
class AttentionConfig:
    name: str = "attention"
    rope_fraction: float = 1.0  # fraction of each head's dims that get RoPE (0 = NoPE)
    rope_heads: float = 1.0  # fraction of heads that get RoPE
    rope_base: float = 10000.0

    def __post_init__(self) -> None:
        for key in ("rope_fraction", "rope_heads"):
            value = getattr(self, key)
            check(0.0 <= value <= 1.0, f"model.mixer.{key}", value, "a number in [0, 1]")
        check(self.rope_base > 1.0, "model.mixer.rope_base", self.rope_base, "a number > 1")

    def tag(self) -> str:
        """``rope``, ``nope``, or e.g. ``rope0.25`` / ``rope0.25h0.5`` for reduced RoPE."""
        if self.rope_fraction == 0 or self.rope_heads == 0:
            return "nope"
        tag = "rope" if self.rope_fraction == 1 else f"rope{self.rope_fraction:g}"
        return tag if self.rope_heads == 1 else f"{tag}h{self.rope_heads:g}"


class Attention(nn.Module):
    def __init__(self, d_model: int, head_dim: int, cfg: AttentionConfig, canon: CanonConfig):
        super().__init__()
        self.n_heads, self.head_dim = d_model // head_dim, head_dim
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.canon_b = canon_at(canon, "B", 3 * d_model)
        self.rotary = Rotary(self.n_heads, head_dim, cfg.rope_fraction, cfg.rope_heads, cfg.rope_base)
        self.out = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x: torch.Tensor, cache=None) -> torch.Tensor:  # [B, T, d] -> [B, T, d]
        b, t, d = x.shape
        qkv = self.canon_b(self.qkv(x), cache)
        q, k, v = qkv.view(b, t, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)  # [B, H, T, hd]
        start = 0 if cache is None else cache.pos
        q, k = self.rotary(q, start), self.rotary(k, start)
        if cache is not None:
            past = cache.get(self)
            if past is not None:
                k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
            cache.put(self, (k, v))
        y = F.scaled_dot_product_attention(q, k, v, **causal_mask(t, k.shape[2], x.device))
        return self.out(y.transpose(1, 2).reshape(b, t, d))


def causal_mask(t_q: int, t_k: int, device: torch.device) -> dict:
    """SDPA arguments for queries that are the last ``t_q`` of ``t_k`` positions."""
    if t_q == t_k:
        return {"is_causal": True}
    if t_q == 1:
        return {}
    offset = t_k - t_q
    q_pos = torch.arange(t_q, device=device)[:, None] + offset
    return {"attn_mask": torch.arange(t_k, device=device)[None, :] <= q_pos}
