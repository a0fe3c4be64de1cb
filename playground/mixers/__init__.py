"""Sequence mixers. ``MIXERS`` maps ``model.mixer.name`` to (config class, module class).

A mixer module is built as ``Mixer(d_model, head_dim, mixer_cfg, canon_cfg)`` and called as
``mixer(x, cache)`` with x: [B, T, d]; it places Canon-B on its own projected inputs.
"""

from __future__ import annotations

from playground.mixers.attention import Attention, AttentionConfig

MIXERS: dict[str, tuple[type, type]] = {
    "attention": (AttentionConfig, Attention),
}
