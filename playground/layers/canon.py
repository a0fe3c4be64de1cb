"""Canon layers: residual causal depthwise convolutions over the sequence axis.

``y = x + act(conv(x))`` (``residual: false`` gives ``y = act(conv(x))``), kernel 4 by default,
zero left padding, no bias by default. Insertion points (named as in the paper):
A after the mixer's input norm, B inside the mixer on its projected inputs, C after the MLP's
input norm, D inside the MLP on the concatenated gate/up projections. Configured by
``model.canon`` (``playground.config.CanonConfig``) for every backbone.

Static Canon (:class:`Canon`) has one K-tap filter per channel; dynamic Canon
(:class:`DynamicCanon`, "Dynamic Short Convolutions Improve Transformers") generates the filter
at each position from the block's post-norm activation h(t). Both share the decoding cache
(:func:`conv_input`) and the initialisation rule of their taps (:func:`init_taps`); the
original short convolutions of GLA and Mamba2 are a non-residual static layer
(:class:`ShortConv`). The plain torch convolutions here are the reference implementations; the
fused kernels in ``playground.kernels`` are tested equal to them.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from playground.config import EXTRA_POINTS, POINTS, CanonConfig
from playground.errors import ConfigError
from playground.kernels import (
    canon_glu_kernel,
    canon_kernel,
    canon_rope_kernel,
    causal_conv1d_kernel,
    dynamic_canon_kernel,
    fla_canon_kernel,
    norm_canon_kernel,
)
from playground.layers.norms import rms_scale

__all__ = ["Canon", "CanonConfig", "DynamicCanon", "NoCanon", "ShortConv", "canon_at"]


def init_taps(taps: torch.Tensor, axis: int, init: str, generator: torch.Generator | None,
              scale: float = 1.0, current: float = 0.0) -> None:
    """Initialise filter taps in place (K taps along ``axis``, the last one on the current
    token): ``zero``; ``past_average`` (the current token 0, each earlier one 1/(K-1)); else
    PyTorch's Conv1d default for a depthwise conv, U(-1/sqrt(K), 1/sqrt(K)), its bound ×
    ``scale``. Then ``current`` is added to the current token's tap (without an activation,
    ``x + conv_w(x)`` is ``conv_{w+1}(x)``: 1 starts a non-residual layer as a residual one)."""
    k = taps.shape[axis]
    with torch.no_grad():
        if init == "zero":
            taps.zero_()
        elif init == "past_average":
            taps.fill_(1.0 / max(k - 1, 1))
            taps.select(axis, k - 1).zero_()
        else:
            bound = scale / math.sqrt(k)
            taps.uniform_(-bound, bound, generator=generator)
        if current:
            taps.select(axis, k - 1).add_(current)


def conv_input(layer: nn.Module, x: torch.Tensor, seq,
               kernel: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The conv's input and the K-1 inputs before it: padding (``seq.valid``) enters as zeros;
    with a decoding cache the previous call's tail is read and this call's is kept."""
    inp, prev = x, None
    if seq is not None and seq.valid is not None:
        inp = x * seq.valid[..., None].to(x.dtype)
    if seq is not None and seq.cache is not None:
        prev = seq.cache.get(layer)
        if prev is None:
            prev = x.new_zeros(x.shape[0], kernel - 1, x.shape[-1])
        window = torch.cat([prev, inp], dim=1)
        prev = window[:, : kernel - 1]  # not the cached tensor: a fixed-shape cache overwrites that
        seq.cache.put(layer, window[:, x.shape[1]:])
    return inp, prev


def finish(cfg: CanonConfig, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Activation and residual around the conv output y."""
    if cfg.activation == "silu":
        y = F.silu(y)
    return x + y if cfg.residual else y


NAMED_BACKENDS = {"triton": "triton (the gpu extra)", "fused": "triton (the gpu extra)",
                  "causal_conv1d": "the causal-conv1d package (its extra: "
                                   "docs/usage.md#optional-packages)",
                  "fla": "fla-core (the gpu extra)"}
# The fused kernels (a Canon layer that also does its reader's or its feeder's work) each backend
# runs; the others run the plain Canon kernel. auto: Canon-B with the head split and RoPE where
# RoPE turns every dim of every head (``Rotary.whole``) — faster than the plain kernel with RoPE
# apart; with a partial rotation its backward is slower, without one it is not measured — and
# Canon-A/C with the RMSNorm before them (docs/PERFORMANCE.md). fused: every fusion (the least
# memory: Canon-D + SwiGLU keeps no output).
# The backends that run another project's kernel for the plain Canon layer (for comparison).
EXTERNAL = {"causal_conv1d": causal_conv1d_kernel, "fla": fla_canon_kernel}
FUSIONS = {"auto": ("rope", "norm"), "fused": ("rope", "rope_partial", "glu", "norm")}


def pick_kernel(cfg: CanonConfig, x: torch.Tensor, find, fusion: str | None = None):
    """The kernel (``find()``) for a plain full-sequence call, as ``backend`` asks; ``fusion``: the
    name of a kernel that also does the next layer's read (in :data:`FUSIONS`), which only some
    backends use."""
    if cfg.backend == "torch" or (fusion is not None
                                  and fusion not in FUSIONS.get(cfg.backend, ())):
        return None
    kernel = find() if x.is_cuda else None
    # asked for by name: never silently the reference
    if kernel is None and cfg.backend in NAMED_BACKENDS:
        raise RuntimeError(f"model.canon.backend={cfg.backend} needs {NAMED_BACKENDS[cfg.backend]} "
                           "and a CUDA device")
    return kernel


def causal_conv(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                prev: torch.Tensor | None = None) -> torch.Tensor:
    """Reference depthwise causal conv through ``F.conv1d``. x: [B, T, C]; weight: [C, K]
    (``weight[:, -1]`` multiplies the current token); prev: [B, K-1, C] inputs preceding x
    (zeros when None). Returns [B, T, C]."""
    k = weight.shape[1]
    xp = F.pad(x, (0, 0, k - 1, 0)) if prev is None else torch.cat([prev, x], dim=1)
    y = F.conv1d(xp.transpose(1, 2), weight.unsqueeze(1), bias, groups=x.shape[-1])
    return y.transpose(1, 2)


def causal_conv_shifted(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                        prev: torch.Tensor | None = None) -> torch.Tensor:
    """The same conv as a sum of K shifted, channel-scaled copies of x, in the [B, T, C] layout.
    Under ``torch.compile`` it fuses into a few kernels and beats cuDNN's depthwise conv1d by
    about 1.5× (docs/PERFORMANCE.md); in eager mode conv1d is faster, so :class:`Canon` picks
    this path only while compiling. Tested equal to :func:`causal_conv`."""
    k, t = weight.shape[1], x.shape[1]
    xp = F.pad(x, (0, 0, k - 1, 0)) if prev is None else torch.cat([prev, x], dim=1)
    y = xp[:, k - 1 :] * weight[:, k - 1]
    for j in range(k - 1):
        y = y + xp[:, j : j + t] * weight[:, j]
    return y if bias is None else y + bias


def causal_conv_segmented(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                          segments: torch.Tensor) -> torch.Tensor:
    """The causal conv where a token only sees earlier tokens of its own segment [B, T]."""
    k, t = weight.shape[1], x.shape[1]
    xp = F.pad(x, (0, 0, k - 1, 0))
    sp = F.pad(segments, (k - 1, 0), value=-2)
    y = sum(xp[:, j : j + t] * weight[:, j] * (sp[:, j : j + t] == segments)[..., None].to(x.dtype)
            for j in range(k))
    return y if bias is None else y + bias


class CanonReads:
    """How the layer after Canon-D or Canon-B reads its output, and how Canon-A or C reads the
    norm before it; a Canon layer with a kernel that fuses the read into its own pass overrides
    these."""

    def normed(self, norm: nn.Module, x: torch.Tensor, seq=None) -> torch.Tensor:
        """The layer on ``norm(x)`` (Canon-A and C on the block's pre-norm)."""
        return self(norm(x), seq)

    def glu(self, x: torch.Tensor, seq=None, h: torch.Tensor | None = None) -> torch.Tensor:
        """SwiGLU's silu(gate) · up of the output's two halves (the MLP reading Canon-D)."""
        gate, up = self(x, seq, h).chunk(2, dim=-1)
        return F.silu(gate) * up

    def rope_heads(self, x: torch.Tensor, rotary, n_heads: int) -> torch.Tensor | None:
        """The output of a full-sequence call as q, k, v heads [3, B, H, T, hd], q and k rotated
        at positions 0..T-1 (attention reading Canon-B) — where one kernel does it all; None:
        the caller composes it."""
        return None


class Canon(CanonReads, nn.Module):
    """A Canon layer of ``width`` channels. With a decoding cache it keeps the last K-1 inputs."""

    def __init__(self, width: int, cfg: CanonConfig):
        super().__init__()
        self.cfg = cfg
        frozen = cfg.init == "random_fixed"
        self.weight = nn.Parameter(torch.empty(width, cfg.kernel),
                                   requires_grad=not frozen)  # [C, K]
        self.bias = nn.Parameter(torch.zeros(width)) if cfg.bias else None
        self.reset_parameters()

    @property
    def width(self) -> int:
        """Its channels."""
        return self.weight.shape[0]

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        init_taps(self.weight, 1, self.cfg.init, generator, self.cfg.init_scale,
                  self.cfg.init_current)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, x: torch.Tensor, seq=None, h: torch.Tensor | None = None) -> torch.Tensor:
        """x: [B, T, C] -> [B, T, C] (``h`` is for dynamic Canon; a static layer ignores it)."""
        find = EXTERNAL.get(self.cfg.backend, canon_kernel)
        if seq is None and (kernel := pick_kernel(self.cfg, x, find)) is not None:
            return kernel(x.contiguous(), self.weight, self.bias, self.cfg.activation == "silu",
                          self.cfg.residual)
        bias = None if self.bias is None else self.bias.to(x.dtype)
        if seq is not None and seq.segments is not None:
            y = causal_conv_segmented(x, self.weight.to(x.dtype), bias, seq.segments)
            return finish(self.cfg, x, y)
        inp, prev = conv_input(self, x, seq, self.cfg.kernel)
        conv = causal_conv_shifted if torch.compiler.is_compiling() else causal_conv
        return finish(self.cfg, x, conv(inp, self.weight.to(x.dtype), bias, prev))

    def glu(self, x: torch.Tensor, seq=None, h: torch.Tensor | None = None) -> torch.Tensor:
        """silu(gate) · up of the output; on a full sequence the fused kernel does the layer and
        SwiGLU in one pass (its output is never written, the backward recomputes it)."""
        if (seq is None
                and (kernel := pick_kernel(self.cfg, x, canon_glu_kernel, "glu")) is not None):
            return kernel(x.contiguous(), self.weight, self.bias, self.cfg.activation == "silu",
                          self.cfg.residual)
        return super().glu(x, seq, h)

    def normed(self, norm: nn.Module, x: torch.Tensor, seq=None) -> torch.Tensor:
        """On a full sequence the fused kernel normalises x as it reads it (the norm's output is
        never written; its per-token scale comes from torch, which a compiled model computes in
        the kernel that writes x) and writes its output in the autocast dtype, which the
        projection reading it would cast to anyway."""
        if (seq is None
                and (kernel := pick_kernel(self.cfg, x, norm_canon_kernel, "norm")) is not None):
            device = x.device.type
            out = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else x.dtype
            return kernel(x.contiguous(), rms_scale(x, norm.eps), norm.weight, self.weight,
                          self.bias, self.cfg.activation == "silu", self.cfg.residual, out)
        return super().normed(norm, x, seq)

    def rope_heads(self, x: torch.Tensor, rotary, n_heads: int) -> torch.Tensor | None:
        if (kernel := pick_kernel(self.cfg, x, canon_rope_kernel,
                                  "rope" if rotary.whole else "rope_partial")) is None:
            return None
        # Rotary's tables at positions 0..T-1 ([T, 0] without rotated dims; no rotated heads:
        # none turn)
        cos, sin = rotary.angles(torch.arange(x.shape[1], device=x.device))
        return kernel(x.contiguous(), self.weight, self.bias, cos, sin,
                      self.cfg.activation == "silu", self.cfg.residual, n_heads, rotary.rot_heads)


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


class NoCanon(CanonReads, nn.Module):
    """Stands where a Canon layer is not configured, so call sites need no branches."""

    def forward(self, x: torch.Tensor, seq=None, h: torch.Tensor | None = None) -> torch.Tensor:
        return x


def canon_at(cfg: CanonConfig, point: str, width: int, source: int | None = None) -> nn.Module:
    """The Canon layer configured at ``point`` (static or dynamic), else a pass-through.
    ``source``: width of the post-norm activation h that dynamic filters are generated from
    (default ``width``: at A and C the layer's input is h itself). O and E (after the output /
    down projections) are on when ``cfg.after_every_linear``."""
    assert point in POINTS + EXTRA_POINTS
    on = point in cfg.positions or (point in EXTRA_POINTS and cfg.after_every_linear
                                    and cfg.positions)
    if not on:
        return NoCanon()
    if cfg.dynamic == "none":
        return Canon(width, cfg)
    return DynamicCanon(width, source or width, cfg)


def dynamic_conv(x: torch.Tensor, w: torch.Tensor, prev: torch.Tensor | None = None,
                 segments: torch.Tensor | None = None) -> torch.Tensor:
    """x: [B, T, C]; w: [B, T, C, K] per-position filters (``w[..., -1]`` on the current token);
    prev: [B, K-1, C] inputs before x; segments: [B, T] (no mixing across them)."""
    k, t = w.shape[-1], x.shape[1]
    xp = F.pad(x, (0, 0, k - 1, 0)) if prev is None else torch.cat([prev, x], dim=1)
    sp = None if segments is None else F.pad(segments, (k - 1, 0), value=-2)
    y = torch.zeros_like(x)
    for j in range(k):
        term = xp[:, j : j + t] * w[..., j]
        if sp is not None:
            term = term * (sp[:, j : j + t] == segments)[..., None].to(x.dtype)
        y = y + term
    return y


class DynamicCanon(CanonReads, nn.Module):
    """A dynamic Canon layer of ``width`` channels whose filters come from a ``source``-wide h."""

    def __init__(self, width: int, source: int, cfg: CanonConfig):
        super().__init__()
        self.cfg, self.width, k = cfg, width, cfg.kernel
        if cfg.dynamic == "lowrank":
            self.down = nn.Linear(source, cfg.rank, bias=False)  # W1
            self.up = nn.Linear(cfg.rank, k * width, bias=False)  # W2, rows ordered [K, C]
            self.bias = nn.Parameter(torch.empty(k, width))
        else:
            if width % cfg.group:
                raise ConfigError(f"model.canon.group={cfg.group} is invalid: expected a divisor "
                                  f"of every Canon width (here {width})")
            self.groups = width // cfg.group
            self.proj = nn.Linear(source, k * self.groups, bias=False)
            self.bias = nn.Parameter(torch.empty(k, self.groups))
        self.reset_parameters()

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        if self.cfg.dynamic == "lowrank":
            nn.init.normal_(self.down.weight, 0.0, 1.0 / math.sqrt(self.down.in_features),
                            generator=generator)
            nn.init.zeros_(self.up.weight)
        else:
            nn.init.zeros_(self.proj.weight)
        # static Canon's rule, taps first: [K, C]
        init_taps(self.bias, 0, self.cfg.init, generator, self.cfg.init_scale,
                  self.cfg.init_current)

    def filters(self, h: torch.Tensor) -> torch.Tensor:
        """Per-position filters [B, T, C, K] (the reference path materialises them)."""
        b, t, _ = h.shape
        k = self.cfg.kernel
        if self.cfg.dynamic == "lowrank":
            w = self.up(self.down(h)).view(b, t, k, self.width) + self.bias.to(h.dtype)
        else:
            g = self.proj(h).view(b, t, k, self.groups) + self.bias.to(h.dtype)
            w = g.repeat_interleave(self.cfg.group, dim=-1)
        return w.transpose(-1, -2)

    def forward(self, x: torch.Tensor, seq=None, h: torch.Tensor | None = None) -> torch.Tensor:
        """x: [B, T, C]; h: [B, T, source] the post-norm activation (default: x itself)."""
        h = x if h is None else h
        fused = self.cfg.dynamic == "lowrank" and self.cfg.activation == "none"
        if (seq is None and fused
                and (kernel := pick_kernel(self.cfg, x, dynamic_canon_kernel)) is not None):
            u = self.down(h)  # [B, T, R]
            w2 = self.up.weight.view(self.cfg.kernel, self.width, self.cfg.rank)  # [K, C, R]
            return kernel(x.contiguous(), u.contiguous(), w2, self.bias, self.cfg.residual)
        inp, prev = conv_input(self, x, seq, self.cfg.kernel)
        segments = None if seq is None else seq.segments
        return finish(self.cfg, x, dynamic_conv(inp, self.filters(h).to(x.dtype), prev, segments))
