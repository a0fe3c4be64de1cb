"""Feed-forward layers: SwiGLU (Llama) and GELU (GPT-2), with the Canon-D hook.

Canon-D sits on the up-projection output: the concatenated gate/up for SwiGLU, the 4d hidden
for GELU.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from playground.layers.canon import CanonConfig, canon_at

MLPS = ("swiglu", "gelu", "none")


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
        self.canon_d = canon_at(canon, "D", up_width)
        self.down = nn.Linear(hidden, d_model, bias=False)

    def forward(self, x: torch.Tensor, seq=None) -> torch.Tensor:  # [B, T, d] -> [B, T, d]
        h = self.canon_d(self.up(x), seq)
        if self.kind == "swiglu":
            gate, up = h.chunk(2, dim=-1)
            h = F.silu(gate) * up
        else:
            h = F.gelu(h)
        return self.down(h)
