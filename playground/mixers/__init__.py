"""Sequence mixers. ``MIXERS`` maps ``model.mixer.name`` to the mixer's module class.

Mixers are plug-ins: each is registered under the entry-point group ``playground.mixers`` (ours
in ``pyproject.toml``), and its class carries its config dataclass as ``Config`` (whose ``name``
is the entry-point name). A mixer module is built as ``Mixer(d_model, head_dim, mixer_cfg,
canon_cfg)`` and called as ``mixer(x, seq)`` with x: [B, T, d] and ``seq`` a
``playground.layers.seq.Seq`` or None; it places Canon-B on its own projected inputs and keeps
its decoding state in ``seq.cache`` (docs/models.md). A mixer in the checkout needs no entry
point (nor a reinstall): a dotted path names it, ``model.mixer.name=my_pkg.my_mixer:MyMixer``
(``playground.config.import_plugin``).
"""

from __future__ import annotations

from torch import nn

from playground.config import plugins

MIXERS: dict[str, type[nn.Module]] = plugins("playground.mixers", nn.Module)
