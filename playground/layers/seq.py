"""What layers know about the tokens of one forward call besides their values.

Training calls pass no context (``seq=None``): tokens sit at positions 0..T-1, all real. A
decoding cache or padding (prompts of different lengths, left-padded into one batch) needs more:

- ``offset``: cache slots filled before this call (the attention timeline);
- ``positions`` [B, T]: position of each token within its own row (padding does not count);
- ``valid`` [B, T]: False at padding; layers must keep padding out of every real token's output
  (attention masks it as a key, convolutions and recurrences see zeros there);
- ``key_valid`` [B, offset + T]: ``valid`` over the whole timeline, for attention;
- ``segments`` [B, T]: with ``data.isolate_examples``, the packed example each token belongs to
  (-1 on padding); no layer may mix different segments, and positions restart in each one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn


class Cache:
    """Decoding state of every stateful layer (KV cache, conv tails, recurrent state), keyed by
    the layer itself, plus the timeline length, each row's next position and the valid mask.
    ``capacity``: the timeline length the decoding will reach, when known — key/value buffers are
    then allocated once at that size instead of growing by doubling (less memory at the peak)."""

    def __init__(self, capacity: int | None = None) -> None:
        self.capacity = capacity
        self.length = 0
        self.next_pos: torch.Tensor | None = None  # [B]
        self.key_valid: torch.Tensor | None = None  # [B, length]
        self._state: dict[int, object] = {}

    def get(self, layer: nn.Module):
        return self._state.get(id(layer))

    def put(self, layer: nn.Module, value) -> None:
        self._state[id(layer)] = value


@dataclass
class Seq:
    offset: int = 0
    positions: torch.Tensor | None = None
    valid: torch.Tensor | None = None
    key_valid: torch.Tensor | None = None
    next_pos: torch.Tensor | None = None  # [B] position of each row's next token
    segments: torch.Tensor | None = None
    cache: Cache | None = field(default=None, repr=False)
    memo: dict = field(default_factory=dict, repr=False)  # per-call values shared by all layers

    def shared(self, key, make):
        """``make()`` once per forward call (e.g. the attention mask, RoPE angles): every layer
        needs the same, and decoding steps are dominated by such small per-layer work."""
        if key not in self.memo:
            self.memo[key] = make()
        return self.memo[key]

    @staticmethod
    def build(ids: torch.Tensor, cache: Cache | None, valid: torch.Tensor | None,
              segments: torch.Tensor | None = None) -> Seq | None:
        if segments is not None:
            if cache is not None or valid is not None:
                raise ValueError("segments (isolated examples) are for training calls only")
            return Seq(positions=segment_positions(segments), segments=segments)
        if cache is None and valid is None:
            return None
        offset = cache.length if cache is not None else 0
        padded = valid is not None or (cache is not None and cache.key_valid is not None)
        if not padded:
            return Seq(offset=offset, cache=cache)
        b, t = ids.shape
        v = valid if valid is not None else torch.ones(b, t, dtype=torch.bool, device=ids.device)
        if cache is not None and cache.next_pos is not None:
            start = cache.next_pos
        else:
            start = torch.full((b,), offset, dtype=torch.long, device=ids.device)
        counts = v.long().cumsum(1)
        positions = (start[:, None] + counts - 1).clamp(min=0)
        past = cache.key_valid if cache is not None and cache.key_valid is not None else \
            torch.ones(b, offset, dtype=torch.bool, device=ids.device)
        return Seq(offset=offset, positions=positions, valid=v, key_valid=torch.cat([past, v], dim=1),
                   next_pos=start + counts[:, -1], cache=cache)

    def advance(self, t: int) -> None:
        """Record in the cache that this call's ``t`` tokens were processed."""
        cache = self.cache
        if cache is None:
            return
        cache.length += t
        if self.valid is not None:
            cache.key_valid, cache.next_pos = self.key_valid, self.next_pos


def segment_positions(segments: torch.Tensor) -> torch.Tensor:
    """Position of every token within its segment: [B, T] -> [B, T]."""
    t = torch.arange(segments.shape[1], device=segments.device).expand_as(segments)
    starts = torch.ones_like(segments, dtype=torch.bool)
    starts[:, 1:] = segments[:, 1:] != segments[:, :-1]
    first = torch.where(starts, t, torch.zeros_like(t)).cummax(dim=1).values
    return t - first
