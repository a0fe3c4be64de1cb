"""Gated Linear Attention (Yang et al. 2024, "Gated Linear Attention Transformers with
Hardware-Efficient Training"), laid out as flash-linear-attention's ``GatedLinearAttention``
layer; our own code.

Per token (x: [d]): q, k = x W_q, x W_k (width ``expand_k``·d), v = x W_v (width ``expand_v``·d),
split into ``heads`` heads; a data-dependent forget gate per key dimension from a low-rank
projection, ``g = logsigmoid(x W_down W_up + b) / gate_normalizer`` (rank 16, normaliser 16);
the recurrence of ``scan.gla_*`` with ``scale = head_k_dim^-1/2``; the output is RMS-normed per
head (one weight shared by the heads), gated by ``silu(x W_g)`` and projected back (``out``).
Parameters: 4d² + O(d), the same as attention's q/k/v/o, so a GLA block matches a Llama block.

Variants (configuration): ``conv: none`` (the paper's GLA) or ``conv1d`` (the GLA codebase's
short conv on q, k, v: depthwise, kernel 4, SiLU, no residual, no bias); Canon-B (when
``model.canon.positions`` contains B) on the concatenated projected q‖k‖v (width 2d), before the
short conv if both are on; Canon-O after ``out`` with ``model.canon.after_every_linear``. Canon
layers come from ``canon_at``, so static and dynamic Canon both work (filters from the mixer
input x).

Paths: the chunked PyTorch form for whole sequences and the recurrent form for single-token
decoding (``scan.py``, tested equal); on CUDA with the ``gpu`` extra, ``fla.ops.gla.chunk_gla``
for whole sequences (``backend: auto``), see ``kernels/adapters.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from playground.errors import check
from playground.kernels import adapters as fast
from playground.layers.canon import CanonConfig, NoCanon, ShortConv, canon_at
from playground.mixers import scan

CONVS = ("none", "conv1d")


@dataclass
class GLAConfig:
    name: str = "gla"
    heads: int = 4  # fla's default (and the GLA paper's)
    expand_k: float = 0.5  # key (and query) width = expand_k · d
    expand_v: float = 1.0  # value width = expand_v · d
    gate_rank: int = 16  # low-rank dim of the forget-gate projection
    gate_normalizer: float = 16.0  # g = logsigmoid(·) / gate_normalizer
    conv: str = "none"  # none | conv1d (short conv on q, k, v: SiLU, no residual)
    conv_kernel: int = 4
    chunk: int = 16  # chunk length of the PyTorch chunked form
    backend: str = "auto"  # auto (fla on CUDA if installed) | torch | fla
    autotune: str = "restricted"  # restricted | full: Triton autotune space of the fla kernels
    norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        for key in ("heads", "gate_rank", "chunk", "conv_kernel"):
            check(getattr(self, key) >= 1, f"model.mixer.{key}", getattr(self, key),
                  "an integer >= 1")
        for key in ("expand_k", "expand_v", "gate_normalizer", "norm_eps"):
            check(getattr(self, key) > 0, f"model.mixer.{key}", getattr(self, key), "a number > 0")
        check(self.conv in CONVS, "model.mixer.conv", self.conv, f"one of {CONVS}")
        check(self.backend in fast.BACKENDS_GLA, "model.mixer.backend", self.backend,
              f"one of {fast.BACKENDS_GLA}")
        check(self.autotune in fast.AUTOTUNE, "model.mixer.autotune", self.autotune,
              f"one of {fast.AUTOTUNE}")

    def tag(self) -> str:
        """``gla``, ``gla-conv1d``, plus ``h<heads>`` / ``k<expand_k>`` / ``v<expand_v>`` when
        not the defaults (backend, chunk and autotune do not change the model)."""
        parts = ["gla"] + ([] if self.conv == "none" else [self.conv])
        parts += [] if self.heads == 4 else [f"h{self.heads}"]
        parts += [] if self.expand_k == 0.5 else [f"k{self.expand_k:g}"]
        parts += [] if self.expand_v == 1.0 else [f"v{self.expand_v:g}"]
        return "-".join(parts)


def qkv_inputs(mixer: nn.Module, d_model: int, cfg, canon: CanonConfig) -> None:
    """The q‖k‖v inputs that GLA and Gated DeltaNet share, set up on ``mixer``: widths (key =
    ``expand_k``·d, value = ``expand_v``·d, each split into ``heads`` heads), the projection
    ``qkv``, Canon-B on it, and the short conv ``conv1d`` (SiLU, no residual, no bias) when
    ``conv=conv1d``."""
    mixer.key, mixer.value = int(d_model * cfg.expand_k), int(d_model * cfg.expand_v)
    for key, width in (("expand_k", mixer.key), ("expand_v", mixer.value)):
        check(width % cfg.heads == 0 and width > 0, f"model.mixer.{key}", getattr(cfg, key),
              f"a ratio whose width ({width} at d={d_model}) divides into {cfg.heads} heads")
    mixer.heads = cfg.heads
    mixer.head_k, mixer.head_v = mixer.key // cfg.heads, mixer.value // cfg.heads
    qkv = 2 * mixer.key + mixer.value
    mixer.qkv = nn.Linear(d_model, qkv, bias=False)
    mixer.canon_b = canon_at(canon, "B", qkv, source=d_model)
    mixer.conv1d = (ShortConv(qkv, cfg.conv_kernel, "silu", bias=False)
                    if cfg.conv == "conv1d" else NoCanon())


class GLA(nn.Module):
    Config = GLAConfig

    def __init__(self, d_model: int, head_dim: int, cfg: GLAConfig, canon: CanonConfig):
        super().__init__()
        self.cfg = cfg
        qkv_inputs(self, d_model, cfg, canon)
        self.gk_down = nn.Linear(d_model, cfg.gate_rank, bias=False)
        self.gk_up = nn.Linear(cfg.gate_rank, self.key, bias=True)
        self.gate = nn.Linear(d_model, self.value, bias=False)
        self.g_norm = nn.RMSNorm(self.head_v, eps=cfg.norm_eps)
        self.out = nn.Linear(self.value, d_model, bias=False)
        self.canon_o = canon_at(canon, "O", d_model)  # only with model.canon.after_every_linear
        nn.init.zeros_(self.gk_up.bias)  # fla zeroes every Linear bias; the model leaves biases

    def forward(self, x: torch.Tensor, seq=None) -> torch.Tensor:  # [B, T, d] -> [B, T, d]
        b, t, _ = x.shape
        qkv = self.conv1d(self.canon_b(self.qkv(x), seq, x), seq)
        q, k, v = qkv.split([self.key, self.key, self.value], dim=-1)
        # float32 gates: their cumulative sums set every decay (cheap: one [B, T, key] tensor)
        g = F.logsigmoid(self.gk_up(self.gk_down(x)).float()) / self.cfg.gate_normalizer
        if seq is not None and seq.valid is not None:
            keep = seq.valid[..., None].to(k.dtype)
            k, g = k * keep, g * keep  # padding adds nothing and decays nothing
        heads = lambda z, w: z.reshape(b, t, self.heads, w)  # [B, T, H, w]
        o = self._mix(heads(q, self.head_k), heads(k, self.head_k), heads(v, self.head_v),
                      heads(g, self.head_k), seq)  # [B, T, H, head_v]
        o = scan.silu_gate_norm(o, heads(self.gate(x), self.head_v), self.g_norm.weight,
                                self.cfg.norm_eps, gate_first=False)
        return self.canon_o(self.out(o.reshape(b, t, self.value)), seq, x)

    def backend(self, on_cuda: bool, stateful: bool = False) -> str:
        """The recurrence's path for a pass (``torch`` or ``fla``); runs record it."""
        return fast.pick_backend(self.cfg.backend, on_cuda, stateful, ("fla",))

    def _mix(self, q, k, v, g, seq) -> torch.Tensor:
        """The recurrence over [B, T, H, ·] inputs: a kernel, or the reference with the cache."""
        scale = self.head_k ** -0.5
        cache = None if seq is None else seq.cache
        backend = self.backend(q.is_cuda, cache is not None)
        resets = scan.resets_from_segments(None if seq is None else seq.segments)
        if backend == "fla":
            return fast.gla_fla(*(z.contiguous() for z in (q, k, v, g)), scale, self.cfg.autotune,
                                resets)
        q, k, v, g = (z.transpose(1, 2) for z in (q, k, v, g))  # [B, H, T, ·]
        state = None if cache is None else cache.get(self)
        if state is not None and q.shape[2] == 1:
            o, state = scan.gla_recurrent(q, k, v, g, scale, state)
        else:
            o, state = scan.gla_chunked(q, k, v, g, scale, self.cfg.chunk, state, resets)
        if cache is not None:
            cache.put(self, state)
        return o.transpose(1, 2)
