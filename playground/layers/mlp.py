"""Feed-forward layers: SwiGLU (Llama), GELU 4d (GPT-2, "standard MLP") and a top-1
mixture of SwiGLU experts (Switch-style, with a load-balancing loss), with the Canon-D hook.

Canon-D sits on the up-projection output: the concatenated gate/up for SwiGLU, the 4d hidden
for GELU; it has no single place in a mixture of experts and is refused there.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from playground.layers.canon import CanonConfig, canon_at


def swiglu_width(d_model: int) -> int:
    """Llama's intermediate width: 8/3·d rounded to the nearest multiple of 64 (at least 64)."""
    return max(64, 64 * round(8 * d_model / 3 / 64))


class MLP(nn.Module):
    def __init__(self, d_model: int, kind: str, canon: CanonConfig):
        super().__init__()
        self.kind = kind
        hidden = swiglu_width(d_model) if kind == "swiglu" else 4 * d_model
        up_width = 2 * hidden if kind == "swiglu" else hidden
        self.up = nn.Linear(d_model, up_width, bias=False)
        self.canon_d = canon_at(canon, "D", up_width, source=d_model)
        self.down = nn.Linear(hidden, d_model, bias=False)
        self.canon_e = canon_at(canon, "E", d_model)

    def forward(self, x: torch.Tensor, seq=None) -> torch.Tensor:  # [B, T, d] -> [B, T, d]
        u = self.up(x)
        # SwiGLU reads Canon-D's output through ``glu``: one fused kernel where there is one
        h = (self.canon_d.glu(u, seq, x) if self.kind == "swiglu"
             else F.gelu(self.canon_d(u, seq, x)))
        return self.canon_e(self.down(h), seq, x)


class MoE(nn.Module):
    """Top-1 routing over ``experts`` SwiGLU experts. The chosen expert's output is scaled by its
    router probability (so the router learns); ``aux_loss`` after a forward pass is the
    load-balancing loss E · Σ_e f_e · P_e (f: fraction of tokens sent to e, P: mean router
    probability of e), 1 when perfectly balanced. Routing indexes tokens per expert, which
    costs a host sync per expert: an option for capacity studies, not the fast path."""

    def __init__(self, d_model: int, experts: int):
        super().__init__()
        self.router = nn.Linear(d_model, experts, bias=False)
        self.experts = nn.ModuleList(MLP(d_model, "swiglu", CanonConfig()) for _ in range(experts))
        self.aux_loss: torch.Tensor | None = None

    def route(self, flat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Router probabilities [N, E], the chosen expert [N] and its probability [N]."""
        probs = torch.softmax(self.router(flat).float(), dim=-1)
        top_p, top_i = probs.max(dim=-1)
        return probs, top_i, top_p

    def forward(self, x: torch.Tensor, seq=None) -> torch.Tensor:  # [B, T, d] -> [B, T, d]
        flat = x.reshape(-1, x.shape[-1])
        probs, top_i, top_p = self.route(flat)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            idx = (top_i == e).nonzero().squeeze(1)
            if idx.numel():
                out[idx] = (expert(flat[idx]) * top_p[idx, None]).to(out.dtype)
        share = torch.bincount(top_i, minlength=len(self.experts)).float() / len(top_i)
        self.aux_loss = len(self.experts) * (share * probs.mean(0)).sum()
        return out.view_as(x)
