"""A stand-in model for testing generative evaluation end to end: it answers each known prompt
with a scripted continuation, through the same (cache, valid) interface as the real model."""

from __future__ import annotations

import torch
from torch import nn

from playground.layers.seq import Cache


class ScriptedModel(nn.Module):
    """``script[tuple(prompt)] = continuation``; after the prompt it emits the continuation token
    by token (then ``fallback``). Unknown prompts also get ``fallback``."""

    def __init__(self, vocab_size: int, script: dict[tuple[int, ...], list[int]], fallback: int):
        super().__init__()
        self.anchor = nn.Parameter(torch.zeros(1))
        self.vocab_size, self.script, self.fallback = vocab_size, script, fallback

    def new_cache(self, capacity: int | None = None) -> Cache:
        cache = Cache(capacity)
        cache.prompts, cache.produced = None, None  # type: ignore[attr-defined]
        return cache

    def forward(self, ids: torch.Tensor, cache: Cache | None = None, valid=None) -> torch.Tensor:
        mask = valid if valid is not None else torch.ones_like(ids, dtype=torch.bool)
        rows = [tuple(t for t, ok in zip(r, v) if ok) for r, v in zip(ids.tolist(), mask.tolist())]
        logits = torch.full((ids.shape[0], ids.shape[1], self.vocab_size), -1e4)
        if cache is None or cache.prompts is None:  # a whole prompt: answer its first token
            if cache is not None:
                cache.prompts, cache.produced = rows, [0] * len(rows)
            steps = [0] * len(rows)
        else:  # one more token per row
            cache.produced = [n + 1 for n in cache.produced]
            steps, rows = cache.produced, cache.prompts
        for r, (prompt, step) in enumerate(zip(rows, steps)):
            cont = self.script.get(prompt, [])
            logits[r, -1, cont[step] if step < len(cont) else self.fallback] = 0.0
        return logits
