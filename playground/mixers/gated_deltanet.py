"""Gated DeltaNet (Yang, Kautz & Hatamizadeh 2024, "Gated Delta Networks: Improving Mamba2 with
Delta Rule"), laid out as flash-linear-attention's ``GatedDeltaNet`` layer; our own code.

Per token (x: [d]): q, k = x W_q, x W_k (width ``expand_k``·d), v = x W_v (width ``expand_v``·d);
the native short conv on q‖k‖v (depthwise, kernel 4, SiLU, no residual, no bias) with
``conv: conv1d``, a plain SiLU with ``conv: none`` (as fla's layer without its short conv); split
into ``heads`` heads; q and k L2-normalised per head (``x / sqrt(Σx² + 1e-6)``, fla's l2norm).
Per head, a decay ``α_t = exp(g_t)`` with ``g_t = -exp(A_log) · softplus(x W_a + dt_bias)``
(Mamba2's parameterisation of ``dt · A``) and a write strength ``β_t = sigmoid(x W_b)``. The
state S [K, V] per head follows the gated delta rule

    S_t = α_t (I - β_t k_t k_tᵀ) S_{t-1} + β_t k_t v_tᵀ,    o_t = S_tᵀ q_t / sqrt(K)

(``scan.gdn_*``; the scale is fla's default, ``head_k^-1/2``). The output is RMS-normed per head
(one weight shared by the heads), gated by ``silu(x W_g)`` and projected back (``out``), as fla's
``FusedRMSNormGated``.

Size. The published layer (fla's defaults: 6 heads of key width d/8 and value width 2·d/8 at
d = 2048) has about 6d² parameters; its models pair every such layer with an MLP and use fewer
layers than the Transformer they are compared with. Here a GDN block must match a Llama block
layer for layer, so we keep the published head shape (key width d/8, value width twice the key
width) and use 4 heads instead of 6: key width d/2, value width d (``expand_k`` 0.5, ``expand_v``
1, as GLA's), i.e. q, k, v, gate and out cost 0.5 + 0.5 + 1 + 1 + 1 = 4d², attention's q/k/v/o.
Besides those: W_a, W_b (d × heads each), A_log, dt_bias, the norm weight and the short conv
(2d channels × 4 taps), 4d² + 16.25d + 8 in all (8.25d + 8 without the conv). Whole models with
the Depo1 vocabulary (112): 8L512D 25,093,696 vs Llama's 25,027,072 (1.0027×); 12L768D
85,275,744 vs 85,125,888 (1.0018×); ``playground-bench params`` prints every size.

Initialisation (fla's): ``A ~ U(0, 16)`` (floored at 1e-4 so that A_log is finite), ``dt =
exp(U(log 1e-3, log 1e-1))`` floored at 1e-4 and stored as ``dt_bias = softplus⁻¹(dt)``; the
conv like ``nn.Conv1d``; Linear layers and norms by the model.

Variants (configuration): ``conv: conv1d`` (the published layer, default) or ``none``; Canon-B
(when ``model.canon.positions`` contains B) on the concatenated projected q‖k‖v (width 2d),
before the short conv if both are on; Canon-O after ``out`` with ``model.canon.after_every_linear``.

Paths: the chunked PyTorch form for whole sequences and the recurrent form for single-token
decoding (``scan.py``, tested equal); on CUDA with the ``gpu`` extra,
``fla.ops.gated_delta_rule.chunk_gated_delta_rule`` for whole sequences (``backend: auto``), see
``kernels/adapters.py``. Padding (``seq.valid``) gets ``g = 0`` and ``β = 0``: no decay, no write.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from playground.errors import check
from playground.kernels import adapters as fast
from playground.layers.canon import CanonConfig, canon_at
from playground.mixers import scan
from playground.mixers.gla import qkv_inputs

CONVS = ("conv1d", "none")
L2_EPS = 1e-6  # fla's l2norm: x / sqrt(Σx² + eps)


@dataclass
class GDNConfig:
    name: str = "gdn"
    heads: int = 4  # 4 heads of the published shape (key d/8, value d/4): attention's 4d²
    expand_k: float = 0.5  # key (and query) width = expand_k · d
    expand_v: float = 1.0  # value width = expand_v · d
    # conv1d (the published layer: short conv on q, k, v, SiLU) | none (SiLU only)
    conv: str = "conv1d"
    conv_kernel: int = 4
    chunk: int = 64  # chunk length of the PyTorch chunked form
    backend: str = "auto"  # auto (fla on CUDA if installed) | torch | fla
    autotune: str = "restricted"  # restricted | full: Triton autotune space of the fla kernels
    norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        for key in ("heads", "chunk", "conv_kernel"):
            check(getattr(self, key) >= 1, f"model.mixer.{key}", getattr(self, key),
                  "an integer >= 1")
        for key in ("expand_k", "expand_v", "norm_eps"):
            check(getattr(self, key) > 0, f"model.mixer.{key}", getattr(self, key), "a number > 0")
        check(self.conv in CONVS, "model.mixer.conv", self.conv, f"one of {CONVS}")
        check(self.backend in fast.BACKENDS_GDN, "model.mixer.backend", self.backend,
              f"one of {fast.BACKENDS_GDN}")
        check(self.autotune in fast.AUTOTUNE, "model.mixer.autotune", self.autotune,
              f"one of {fast.AUTOTUNE}")

    def tag(self) -> str:
        """``gdn``, ``gdn-noconv``, plus ``h<heads>`` / ``k<expand_k>`` / ``v<expand_v>`` when
        not the defaults (backend, chunk and autotune do not change the model)."""
        parts = ["gdn"] + ([] if self.conv == "conv1d" else ["noconv"])
        parts += [] if self.heads == 4 else [f"h{self.heads}"]
        parts += [] if self.expand_k == 0.5 else [f"k{self.expand_k:g}"]
        parts += [] if self.expand_v == 1.0 else [f"v{self.expand_v:g}"]
        return "-".join(parts)


def l2_normalize(x: torch.Tensor) -> torch.Tensor:
    """Unit length over the last axis (in float32), as fla's l2norm: keys of unit length keep
    ``I - β k kᵀ`` a contraction, so the state cannot blow up whatever β in [0, 1]."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.square().sum(-1, keepdim=True) + L2_EPS)).to(x.dtype)


class GDN(nn.Module):
    Config = GDNConfig

    def __init__(self, d_model: int, head_dim: int, cfg: GDNConfig, canon: CanonConfig):
        super().__init__()
        self.cfg = cfg
        qkv_inputs(self, d_model, cfg, canon)  # GLA's q‖k‖v layout, Canon-B and short conv
        self.a_proj = nn.Linear(d_model, cfg.heads, bias=False)  # decay input (Mamba2's dt)
        self.b_proj = nn.Linear(d_model, cfg.heads, bias=False)  # write strength β
        self.A_log = nn.Parameter(torch.empty(cfg.heads))
        self.dt_bias = nn.Parameter(torch.empty(cfg.heads))
        self.gate = nn.Linear(d_model, self.value, bias=False)
        self.g_norm = nn.RMSNorm(self.head_v, eps=cfg.norm_eps)
        self.out = nn.Linear(self.value, d_model, bias=False)
        self.canon_o = canon_at(canon, "O", d_model)  # only with model.canon.after_every_linear
        self.reset_parameters(torch.Generator().manual_seed(0))

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """A_log and dt_bias as fla's layer draws them (the model's seeded generator)."""
        h, device = self.heads, "cpu" if generator is None else generator.device
        a = (16 * torch.rand(h, generator=generator, device=device)).clamp(min=1e-4)  # A ~ U(0, 16)
        self.A_log.copy_(a.log())
        u = torch.rand(h, generator=generator, device=device)
        dt = torch.exp(u * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3)).clamp(min=1e-4)
        self.dt_bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus(dt_bias) = dt

    def forward(self, x: torch.Tensor, seq=None) -> torch.Tensor:  # [B, T, d] -> [B, T, d]
        b, t, _ = x.shape
        qkv = self.canon_b(self.qkv(x), seq, x)
        qkv = self.conv1d(qkv, seq) if self.cfg.conv == "conv1d" else F.silu(qkv)
        q, k, v = qkv.split([self.key, self.key, self.value], dim=-1)
        heads = lambda z, w: z.reshape(b, t, self.heads, w)  # [B, T, H, w]
        q, k = l2_normalize(heads(q, self.head_k)), l2_normalize(heads(k, self.head_k))
        g, beta = self._gates(x, seq)  # [B, T, H] float32
        o = self._mix(q, k, heads(v, self.head_v), g, beta, seq)  # [B, T, H, head_v]
        o = scan.silu_gate_norm(o, heads(self.gate(x), self.head_v), self.g_norm.weight,
                                self.cfg.norm_eps, gate_first=False)
        return self.canon_o(self.out(o.reshape(b, t, self.value)), seq, x)

    def _gates(self, x: torch.Tensor, seq) -> tuple[torch.Tensor, torch.Tensor]:
        """The log decay ``g = -exp(A_log)·softplus(x W_a + dt_bias)`` (<= 0) and the write
        strength ``β = sigmoid(x W_b)``, per head, in float32 (their sums set every decay).
        Padding decays nothing and writes nothing."""
        g = -self.A_log.float().exp() * F.softplus(self.a_proj(x).float() + self.dt_bias.float())
        beta = torch.sigmoid(self.b_proj(x).float())
        if seq is not None and seq.valid is not None:
            keep = seq.valid[..., None].float()
            g, beta = g * keep, beta * keep
        return g, beta

    def backend(self, on_cuda: bool, stateful: bool = False) -> str:
        """The recurrence's path for a pass (``torch`` or ``fla``); runs record it."""
        order = ("fla",) if fast.fla_gated_backward_ok() else ()
        return fast.pick_backend(self.cfg.backend, on_cuda, stateful, order)

    def _mix(self, q, k, v, g, beta, seq) -> torch.Tensor:
        """The recurrence over [B, T, H, ·] inputs: a kernel, or the reference with the cache."""
        scale = self.head_k ** -0.5
        cache = None if seq is None else seq.cache
        backend = self.backend(q.is_cuda, cache is not None)
        resets = scan.resets_from_segments(None if seq is None else seq.segments)
        if backend == "fla":
            return fast.gdn_fla(*(z.contiguous() for z in (q, k, v, g, beta)), scale,
                                self.cfg.autotune, resets)
        q, k, v, g, beta = (z.transpose(1, 2) for z in (q, k, v, g, beta))  # [B, H, T, ·]
        state = None if cache is None else cache.get(self)
        if state is not None and q.shape[2] == 1:
            o, state = scan.gdn_recurrent(q, k, v, g, beta, scale, state)
        else:
            o, state = scan.gdn_chunked(q, k, v, g, beta, scale, self.cfg.chunk, state, resets)
        if cache is not None:
            cache.put(self, state)
        return o.transpose(1, 2)
