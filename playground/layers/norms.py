"""RMSNorm that keeps PyTorch's fused kernel under bf16 autocast, and its per-token scale.

``nn.RMSNorm`` falls back to several unfused ops when its fp32 weight meets a bf16 input; casting
the weight to the input's dtype first keeps the single fused kernel (it still normalises in
fp32). On fp32 inputs this is exactly ``nn.RMSNorm``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.RMSNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight.to(x.dtype), self.eps)


def rms_scale(x: torch.Tensor, eps: float | None) -> torch.Tensor:
    """RMSNorm's scale (mean of x² over the last dim + eps)^-½, one fp32 value per token (x's
    shape without its last dim): what a fused kernel that normalises its input as it loads it
    (``playground::norm_canon``) is given; eps None: x's dtype's, as ``nn.RMSNorm``."""
    eps = torch.finfo(x.dtype).eps if eps is None else eps
    return torch.rsqrt(x.float().square().mean(-1) + eps)
