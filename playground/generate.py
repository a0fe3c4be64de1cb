"""Batched generation with the model's decoding cache, shared by tasks that decode (Brevo, Lano).

Prompts of different lengths are sorted by length, left-padded into batches (``valid`` masks
the padding) and prefilled once; every further token costs one single-token forward pass that
reads the cache (no re-running of the prefix).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from playground.run.device import autocast_for


@dataclass
class Generation:
    tokens: np.ndarray  # int32[n]: generated tokens, the stop token excluded
    stopped: bool  # True if a stop token ended it (False: it hit max_new)


@torch.no_grad()
def generate(model, prompts: Sequence[Sequence[int]], max_new: int, stop: Sequence[int] = (),
             temperature: float = 0.0, batch_size: int = 64, seed: int = 0,
             pad_id: int = 0, use_cache: bool = True) -> list[Generation]:
    """Continue each prompt by up to ``max_new`` tokens: greedy (``temperature=0``) or sampled
    at ``temperature`` from a generator seeded with ``seed`` (same seed, same samples).
    ``use_cache=False`` re-runs the whole prefix for every token (a baseline for benchmarks)."""
    device = next(model.parameters()).device
    gen = torch.Generator(device=device).manual_seed(seed)
    stop_ids = torch.tensor(sorted(set(stop)), dtype=torch.long, device=device)
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    out: list[Generation | None] = [None] * len(prompts)
    was_training = model.training
    model.eval()
    for lo in range(0, len(order), batch_size):
        idx = order[lo : lo + batch_size]
        rows = _generate_batch(model, [prompts[i] for i in idx], max_new, stop_ids, temperature,
                               gen, pad_id, device, use_cache)
        for i, row in zip(idx, rows):
            out[i] = row
    model.train(was_training)
    return out  # type: ignore[return-value]


def _left_pad(prompts: Sequence[Sequence[int]], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    valid = torch.zeros(len(prompts), width, dtype=torch.bool)
    for r, p in enumerate(prompts):
        if len(p):
            ids[r, width - len(p):] = torch.as_tensor(np.asarray(p), dtype=torch.long)
            valid[r, width - len(p):] = True
    return ids.to(device), valid.to(device)


def _pick(logits: torch.Tensor, temperature: float, gen: torch.Generator) -> torch.Tensor:
    """Next token per row from the last position's logits [B, V]."""
    if temperature <= 0:
        return logits.argmax(-1)
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    return torch.multinomial(probs, 1, generator=gen).squeeze(1)


def _generate_batch(model, prompts, max_new, stop_ids, temperature, gen, pad_id, device,
                    use_cache: bool) -> list[Generation]:
    # one autocast region for the whole decode: weights are cast to bf16 once, not every step
    with autocast_for(device):
        return _decode(model, prompts, max_new, stop_ids, temperature, gen, pad_id, device, use_cache)


def _decode(model, prompts, max_new, stop_ids, temperature, gen, pad_id, device, use_cache) -> list[Generation]:
    ids, valid = _left_pad(prompts, pad_id, device)
    cache = model.new_cache() if use_cache else None
    padded = not bool(valid.all())
    logits = model(ids, cache, valid if padded else None)[:, -1]
    b = len(prompts)
    produced = torch.empty(b, max_new, dtype=torch.long, device=device)
    done = torch.zeros(b, dtype=torch.bool, device=device)
    length = torch.full((b,), max_new, dtype=torch.long, device=device)
    for step in range(max_new):
        nxt = _pick(logits, temperature, gen)
        produced[:, step] = nxt
        hit = torch.isin(nxt, stop_ids) & ~done
        length = torch.where(hit, torch.full_like(length, step), length)
        done |= hit
        if step % 16 == 15 and bool(done.all()):  # a host sync only every 16 tokens
            break
        if step + 1 < max_new:
            if use_cache:
                logits = model(nxt[:, None], cache)[:, -1]
            else:
                ids = torch.cat([ids, nxt[:, None]], dim=1)
                valid = torch.cat([valid, torch.ones_like(valid[:, :1])], dim=1)
                logits = model(ids, None, valid if padded else None)[:, -1]
    produced, length, done = produced.cpu().numpy(), length.cpu().numpy(), done.cpu().numpy()
    return [Generation(produced[r, : length[r]].astype(np.int32), bool(done[r])) for r in range(b)]
