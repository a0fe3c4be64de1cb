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
    then allocated once at that size instead of growing by doubling (less memory at the peak).

    :meth:`fix_shapes` (after the prefill) turns the following one-token steps into calls whose
    every tensor has a fixed shape and address — what a CUDA graph replays: the timeline slot
    and the positions live on the device, the valid mask spans the whole capacity, and a state
    put back is copied into the old one's storage."""

    def __init__(self, capacity: int | None = None) -> None:
        self.capacity = capacity
        self.length = 0
        self.next_pos: torch.Tensor | None = None  # [B]
        self.key_valid: torch.Tensor | None = None  # [B, length]; fixed shapes: [B, capacity]
        self.slot: torch.Tensor | None = None  # fixed shapes: [1], the slot of the next token
        self._state: dict[int, object] = {}

    def get(self, layer: nn.Module):
        return self._state.get(id(layer))

    def put(self, layer: nn.Module, value) -> None:
        """Keep ``value`` as the layer's state. With fixed shapes it is copied into the old
        state's storage: a layer reads what it needs of its old state before putting the new."""
        old = self._state.get(id(layer))
        if self.slot is not None and old is not None:
            _copy_into(old, value)
        else:
            self._state[id(layer)] = value

    def fix_shapes(self, batch: int, device: torch.device) -> None:
        """From now on every call is one token per row at fixed shapes (see the class)."""
        if self.capacity is None or self.length >= self.capacity:
            raise ValueError("fixed-shape decoding needs room in the cache: "
                             f"capacity {self.capacity}, length {self.length}")
        kv = torch.zeros(batch, self.capacity, dtype=torch.bool, device=device)
        kv[:, : self.length] = True if self.key_valid is None else self.key_valid
        self.key_valid = kv
        if self.next_pos is None:
            self.next_pos = torch.full((batch,), self.length, dtype=torch.long, device=device)
        self.slot = torch.full((1,), self.length, dtype=torch.long, device=device)


def _copy_into(old, new) -> None:
    if isinstance(old, torch.Tensor):
        old.copy_(new)
    else:
        for a, b in zip(old, new, strict=True):
            _copy_into(a, b)


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
        if cache is not None and cache.slot is not None:
            return Seq._fixed_step(ids, cache)
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
        return Seq(offset=offset, positions=positions, valid=v,
                   key_valid=torch.cat([past, v], dim=1),
                   next_pos=start + counts[:, -1], cache=cache)

    @staticmethod
    def _fixed_step(ids: torch.Tensor, cache: Cache) -> Seq:
        """A one-token step of a fixed-shape cache: slot, positions and the valid mask are
        device tensors updated in place (here and in :meth:`advance`)."""
        if ids.shape[1] != 1:
            raise ValueError("a fixed-shape decoding step takes one token per row, "
                             f"got {ids.shape[1]}")
        cache.key_valid.index_fill_(1, cache.slot, True)
        return Seq(offset=cache.length, positions=cache.next_pos[:, None],
                   valid=torch.ones_like(ids, dtype=torch.bool),
                   key_valid=cache.key_valid, next_pos=cache.next_pos, cache=cache)

    def advance(self, t: int) -> None:
        """Record in the cache that this call's ``t`` tokens were processed."""
        cache = self.cache
        if cache is None:
            return
        cache.length += t
        if cache.slot is not None:
            cache.slot.add_(t)
            cache.next_pos.add_(t)
        elif self.valid is not None:
            cache.key_valid, cache.next_pos = self.key_valid, self.next_pos


def segment_positions(segments: torch.Tensor) -> torch.Tensor:
    """Position of every token within its segment: [B, T] -> [B, T]."""
    t = torch.arange(segments.shape[1], device=segments.device).expand_as(segments)
    starts = torch.ones_like(segments, dtype=torch.bool)
    starts[:, 1:] = segments[:, 1:] != segments[:, :-1]
    first = torch.where(starts, t, torch.zeros_like(t)).cummax(dim=1).values
    return t - first
