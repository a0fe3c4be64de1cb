"""Multi-head causal self-attention (Llama style) through ``scaled_dot_product_attention``.

Position encoding is configuration: RoPE on a fraction of each head's dims and/or of the heads
(full RoPE, NoPE, the paper's reduced RoPE, "half the heads at half their dims"), and/or a
distance bias (ALiBi, Hard-ALiBi; ``layers/alibi.py``). Canon-B acts on the concatenated q, k, v
projections before RoPE. With a decoding cache the keys/values of earlier tokens are kept.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from playground.errors import check
from playground.layers.alibi import distances, with_distance_bias
from playground.layers.canon import CanonConfig, canon_at
from playground.layers.rotary import Rotary

BIASES = ("none", "alibi", "hard_alibi")


@dataclass
class AttentionConfig:
    name: str = "attention"
    rope_fraction: float = 1.0  # fraction of each head's dims that get RoPE (0 = NoPE)
    rope_heads: float = 1.0  # fraction of heads that get RoPE
    rope_base: float = 10000.0
    bias: str = "none"  # none | alibi | hard_alibi (head h sees distance <= h)

    def __post_init__(self) -> None:
        check(self.bias in BIASES, "model.mixer.bias", self.bias, f"one of {BIASES}")
        for key in ("rope_fraction", "rope_heads"):
            value = getattr(self, key)
            check(0.0 <= value <= 1.0, f"model.mixer.{key}", value, "a number in [0, 1]")
        check(self.rope_base > 1.0, "model.mixer.rope_base", self.rope_base, "a number > 1")

    def tag(self) -> str:
        """``rope``, ``nope``, ``alibi``, ``hard_alibi``, or e.g. ``rope0.25`` / ``rope0.5h0.5``
        for reduced RoPE (``+alibi`` when combined)."""
        if self.rope_fraction == 0 or self.rope_heads == 0:
            tag = "nope"
        else:
            tag = "rope" if self.rope_fraction == 1 else f"rope{self.rope_fraction:g}"
            tag = tag if self.rope_heads == 1 else f"{tag}h{self.rope_heads:g}"
        if self.bias == "none":
            return tag
        return self.bias if tag == "nope" else f"{tag}+{self.bias}"

    def position(self) -> str:
        """The position encoding: ``rope``, ``nope``, ``rope0.25``, ``alibi``, … (the tag)."""
        return self.tag()


class Attention(nn.Module):
    Config = AttentionConfig

    def __init__(self, d_model: int, head_dim: int, cfg: AttentionConfig, canon: CanonConfig):
        super().__init__()
        self.n_heads, self.head_dim = d_model // head_dim, head_dim
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.canon_b = canon_at(canon, "B", 3 * d_model, source=d_model)
        self.canon_o = canon_at(canon, "O", d_model)
        self.rotary = Rotary(self.n_heads, head_dim, cfg.rope_fraction, cfg.rope_heads,
                             cfg.rope_base)
        self.out = nn.Linear(d_model, d_model, bias=False)
        self.bias = cfg.bias

    def forward(self, x: torch.Tensor, seq=None) -> torch.Tensor:  # [B, T, d] -> [B, T, d]
        b, t, d = x.shape
        u = self.qkv(x)
        fused = self.canon_b.rope_heads(u, self.rotary, self.n_heads) if seq is None else None
        if fused is not None:  # Canon-B, the head split and RoPE in one kernel pass
            q, k, v = fused
        else:
            qkv = self.canon_b(u, seq, x)
            # [3, B, H, T, hd]
            qkv = qkv.view(b, t, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
            positions = 0 if seq is None else (seq.offset if seq.positions is None
                                               else seq.positions)
            angles = None if seq is None else seq.shared(
                ("rope", self.rotary.key), lambda: self.rotary.table(positions, t, x.device))
            q, k = self.rotary(qkv[:2], positions, angles)  # q and k rotated together
            v = qkv[2]
        if seq is not None and seq.cache is not None:
            k, v = self._extend_cache(seq, k, v)
        t_k = k.shape[2]
        mask = self._mask(seq, t, t_k, x.device) if seq is None else \
            seq.shared(("mask", self.bias, self.n_heads, t, t_k),
                       lambda: self._mask(seq, t, t_k, x.device))
        y = F.scaled_dot_product_attention(q, k, v, **mask)
        return self.canon_o(self.out(y.transpose(1, 2).reshape(b, t, d)), seq, x)

    def _mask(self, seq, t_q: int, t_k: int, device: torch.device) -> dict:
        mask = attention_mask(seq, t_q, t_k, device)
        if self.bias == "none":
            return mask
        allowed = mask.get("attn_mask")
        if allowed is None:  # plain causal (or a single query, which may see every key)
            allowed = torch.ones(t_q, t_k, dtype=torch.bool, device=device).tril(t_k - t_q)
        while allowed.dim() < 4:
            allowed = allowed[None]
        dist = distances(seq, t_q, t_k, device)
        return {"attn_mask": with_distance_bias(self.bias, allowed, dist, self.n_heads)}

    def _extend_cache(self, seq, k: torch.Tensor, v: torch.Tensor):
        """Write this call's keys/values at slots [offset, offset+T) of a buffer allocated at the
        cache's capacity when it has one, else grown by doubling, so a decoding step costs no
        copy of the whole history."""
        buf = seq.cache.get(self)
        # fixed shapes: write at the device-side slot, attend over all
        if seq.cache.slot is not None:
            buf[0].index_copy_(2, seq.cache.slot, k)
            buf[1].index_copy_(2, seq.cache.slot, v)
            return buf[0], buf[1]
        end = seq.offset + k.shape[2]
        if buf is None or buf.shape[3] < end:
            size = max(end, seq.cache.capacity or 0) if buf is None else max(end, 2 * buf.shape[3])
            grown = k.new_zeros(2, *k.shape[:2], size, k.shape[3])
            if buf is not None:
                grown[:, :, :, : seq.offset] = buf[:, :, :, : seq.offset]
            buf = grown
            seq.cache.put(self, buf)
        buf[0, :, :, seq.offset : end] = k
        buf[1, :, :, seq.offset : end] = v
        return buf[0, :, :, :end], buf[1, :, :, :end]


def attention_mask(seq, t_q: int, t_k: int, device: torch.device) -> dict:
    """SDPA arguments: causal over the timeline (queries are its last ``t_q`` slots) and, with
    padding, no real token attends a padded key (a padded query sees itself, to stay finite)."""
    if seq is not None and seq.cache is not None and seq.cache.slot is not None:
        return {"attn_mask": seq.key_valid[:, None, None, :]}  # fixed shapes: every filled slot
    if seq is not None and seq.segments is not None:  # isolated examples: block-diagonal causal
        same = seq.segments[:, :, None] == seq.segments[:, None, :]
        return {"attn_mask": (same & torch.ones(t_q, t_k, dtype=torch.bool,
                                                device=device).tril())[:, None]}
    if seq is None or seq.key_valid is None:
        if t_q == t_k:
            return {"is_causal": True}
        if t_q == 1:
            return {}
    q_slot = torch.arange(t_k - t_q, t_k, device=device)[:, None]
    k_slot = torch.arange(t_k, device=device)[None, :]
    allowed = k_slot <= q_slot  # [Tq, Tk]
    if seq is not None and seq.key_valid is not None:
        allowed = (allowed & seq.key_valid[:, None, :]) | (k_slot == q_slot)  # [B, Tq, Tk]
        allowed = allowed[:, None]
    return {"attn_mask": allowed}
