"""Sequence mixers. ``MIXERS`` maps ``model.mixer.name`` to (config class, module class).

A mixer module is built as ``Mixer(d_model, head_dim, mixer_cfg, canon_cfg)`` and called as
``mixer(x, seq)`` with x: [B, T, d] and ``seq`` a ``playground.layers.seq.Seq`` or None; it
places Canon-B on its own projected inputs and keeps its decoding state in ``seq.cache``.
"""

from __future__ import annotations

from playground.mixers.attention import Attention, AttentionConfig
from playground.mixers.gla import GLA, GLAConfig
from playground.mixers.mamba2 import Mamba2, Mamba2Config

MIXERS: dict[str, tuple[type, type]] = {
    "attention": (AttentionConfig, Attention),
    "gla": (GLAConfig, GLA),
    "mamba2": (Mamba2Config, Mamba2),
}
