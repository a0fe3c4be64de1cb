"""Small modules shared by the linear mixers: the original short convolutions of GLA/Mamba2."""

from __future__ import annotations

import math

import torch
from torch import nn

from playground.layers.canon import Canon, CanonConfig


class ShortConv(Canon):
    """The short causal depthwise conv of the original GLA/Mamba2 code (no residual): a Canon
    layer with ``residual=False`` (so the cache keeps its tail and padding enters as zeros),
    initialised like ``nn.Conv1d`` (weight and bias U(-1/sqrt(K), 1/sqrt(K)))."""

    def __init__(self, width: int, kernel: int, activation: str, bias: bool):
        super().__init__(width, CanonConfig(kernel=kernel, residual=False, activation=activation,
                                            bias=bias))

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        bound = 1.0 / math.sqrt(self.cfg.kernel)
        nn.init.uniform_(self.weight, -bound, bound, generator=generator)
        if self.bias is not None:
            nn.init.uniform_(self.bias, -bound, bound, generator=generator)
