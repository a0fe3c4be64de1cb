"""RMSNorm that keeps PyTorch's fused kernel under bf16 autocast.

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
