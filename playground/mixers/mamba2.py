"""Mamba2 (Dao & Gu 2024, "Transformers are SSMs"), laid out as ``mamba_ssm``'s ``Mamba2``
layer with one group of B/C (ngroups=1); our own code.

``in_proj`` maps x [d] to z ‖ x ‖ B ‖ C ‖ dt (widths e·d, e·d, N, N, H; e = ``expand`` = 2,
N = ``state`` = 64, H = ``heads`` = 16, so 4d + 144 in all); a depthwise causal conv (kernel 4,
bias) on x‖B‖C followed by SiLU; ``dt = softplus(dt + dt_bias)``, ``A = -exp(A_log)`` per head;
the SSD recurrence of ``scan.ssd_*`` over heads of width P = e·d/H; the skip ``D·x`` per head;
the gated RMSNorm ``norm(y · silu(z))``; ``out`` back to d. Parameters ≈ 6d² (a Llama layer is
≈ 12d², hence pure Mamba2 presets use twice the layers).

Initialisation (mamba_ssm's): ``A ~ U(1, 16)``; ``dt = exp(U(log 1e-3, log 1e-1))`` floored at
1e-4 and stored as ``dt_bias = softplus⁻¹(dt)``; ``D = 1``; the conv like ``nn.Conv1d``; the
Linear layers by the model (normal, std 0.02, ``out`` scaled by 1/sqrt(2·blocks)).
``mimetic: true`` (Trockman et al. 2024, "Mimetic initialization helps state space models learn
to recall") instead starts the layer close to linear attention: ``A = 1e-3`` so that
``exp(dt·A) ≈ 1`` (no forgetting at step 0, as its analysis of attention-like SSM maps asks),
and the C projection equal to the B projection (so ``C_t·B_s = (W x_t)·(W x_s)`` mimics the
correlated query/key weights of attention), including the C channels of the conv / Canon-B.

Variants, named as in the Canon paper: its own short convolution is a mixer option, ``conv``
(``conv1d``: the original, on x‖B‖C; ``none``: the paper's "noconv1d", the SiLU stays); Canon
layers come from ``model.canon`` alone, as for every backbone: Canon-B sits on the whole in_proj
output (width 4d + 144), Canon-A on the block's mixer input. So the paper's "Mamba2 +
Canon-AB(no-res)" is ``mixer=mamba2_noconv1d canon=AB_nores`` (the paper recommends no residual
for Mamba2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from playground.errors import check
from playground.kernels import adapters as fast
from playground.layers.canon import Canon, CanonConfig, NoCanon, ShortConv, canon_at
from playground.mixers import scan

CONVS = ("conv1d", "none")


@dataclass
class Mamba2Config:
    name: str = "mamba2"
    conv: str = "conv1d"  # conv1d (the published Mamba2) | none (the Canon paper's noconv1d)
    mimetic: bool = False  # mimetic initialisation (Trockman et al. 2024)
    heads: int = 16
    state: int = 64  # N, the state size per head
    expand: float = 2.0  # inner width = expand · d
    conv_kernel: int = 4
    chunk: int = 64  # chunk length of the chunked SSD (the PyTorch path and mamba_ssm's kernel)
    backend: str = "auto"  # auto (mamba_ssm, else fla, on CUDA) | torch | fla | mamba_ssm
    autotune: str = "restricted"  # restricted | full: Triton autotune space of the kernels
    norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        check(self.conv in CONVS, "model.mixer.conv", self.conv, f"one of {CONVS}")
        for key in ("heads", "state", "conv_kernel", "chunk"):
            check(getattr(self, key) >= 1, f"model.mixer.{key}", getattr(self, key),
                  "an integer >= 1")
        for key in ("expand", "norm_eps"):
            check(getattr(self, key) > 0, f"model.mixer.{key}", getattr(self, key), "a number > 0")
        check(self.backend in fast.BACKENDS_SSD, "model.mixer.backend", self.backend,
              f"one of {fast.BACKENDS_SSD}")
        check(self.autotune in fast.AUTOTUNE, "model.mixer.autotune", self.autotune,
              f"one of {fast.AUTOTUNE}")

    def tag(self) -> str:
        """``mamba2``, ``mamba2-noconv1d``, plus ``mimetic`` and ``h``/``s``/``e`` for
        non-default heads/state/expand (written for raw configs too)."""
        conv = ([] if self.conv == "conv1d"
                else [f"no{'conv1d' if self.conv == 'none' else self.conv}"])
        parts = ["mamba2", *conv] + (["mimetic"] if self.mimetic else [])
        parts += [] if self.heads == 16 else [f"h{self.heads}"]
        parts += [] if self.state == 64 else [f"s{self.state}"]
        parts += [] if self.expand == 2 else [f"e{self.expand:g}"]
        return "-".join(parts)


class Mamba2(nn.Module):
    Config = Mamba2Config

    def __init__(self, d_model: int, head_dim: int, cfg: Mamba2Config, canon: CanonConfig):
        super().__init__()
        self.cfg = cfg
        inner = int(cfg.expand * d_model)
        check(inner % cfg.heads == 0, "model.mixer.heads", cfg.heads,
              f"a divisor of the inner width expand·d = {inner}")
        self.inner, self.heads, self.n = inner, cfg.heads, cfg.state
        self.head_p = inner // cfg.heads
        width = 2 * inner + 2 * cfg.state + cfg.heads  # z, x, B, C, dt
        self.in_proj = nn.Linear(d_model, width, bias=False)
        self.canon_b = canon_at(canon, "B", width, source=d_model)
        self.conv1d = (ShortConv(inner + 2 * cfg.state, cfg.conv_kernel, "none", bias=True)
                       if cfg.conv == "conv1d" else NoCanon())
        self.dt_bias = nn.Parameter(torch.empty(cfg.heads))
        self.A_log = nn.Parameter(torch.empty(cfg.heads))
        self.D = nn.Parameter(torch.empty(cfg.heads))
        self.norm = nn.RMSNorm(inner, eps=cfg.norm_eps)
        self.out = nn.Linear(inner, d_model, bias=False)
        self.canon_o = canon_at(canon, "O", d_model)  # only with model.canon.after_every_linear
        self.reset_parameters(torch.Generator().manual_seed(0))

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Mamba2's own parameters (A_log, dt_bias, D) and, with ``mimetic``, the structure it
        imposes on the already-initialised projections and convs."""
        h, device = self.heads, "cpu" if generator is None else generator.device
        u = torch.rand(h, generator=generator, device=device)
        dt = torch.exp(u * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3)).clamp(min=1e-4)
        self.dt_bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus(dt_bias) = dt
        a = (torch.full((h,), 1e-3, device=device) if self.cfg.mimetic
             else 1 + 15 * torch.rand(h, generator=generator, device=device))  # A = exp(A_log)
        self.A_log.copy_(a.log())
        self.D.fill_(1.0)
        if self.cfg.mimetic:
            self._tie_c_to_b()

    def _tie_c_to_b(self) -> None:
        """Mimetic: C's projection rows (and conv / Canon-B channels) copied from B's."""
        b0 = 2 * self.inner
        rows = lambda w, start: w[start : start + self.n]
        rows(self.in_proj.weight, b0 + self.n).copy_(rows(self.in_proj.weight, b0))
        for conv, start in ((self.canon_b, b0), (self.conv1d, self.inner)):
            if not isinstance(conv, Canon):  # none, or dynamic (filters generated per token)
                continue
            for p in (conv.weight, conv.bias):
                if p is not None:
                    rows(p, start + self.n).copy_(rows(p, start))

    def forward(self, x: torch.Tensor, seq=None) -> torch.Tensor:  # [B, T, d] -> [B, T, d]
        b, t, _ = x.shape
        zxbcdt = self.canon_b(self.in_proj(x), seq, x)
        z, xbc, dt = zxbcdt.split([self.inner, self.inner + 2 * self.n, self.heads], dim=-1)
        # the SiLU apart: inside the conv's kernel its backward took twice as long
        # (docs/PERFORMANCE.md)
        xbc = F.silu(self.conv1d(xbc, seq))
        xs, bm, cm = xbc.split([self.inner, self.n, self.n], dim=-1)
        dt = F.softplus(dt.float() + self.dt_bias)  # [B, T, H]
        if seq is not None and seq.valid is not None:
            dt = dt * seq.valid[..., None]  # padding: no input, no decay
        xs = xs.reshape(b, t, self.heads, self.head_p)  # [B, T, H, P]
        y = self._ssd(xs, dt, bm, cm, seq)
        y = y + xs * self.D[:, None].to(xs.dtype)
        y = scan.silu_gate_norm(y.reshape(b, t, self.inner), z, self.norm.weight,
                                self.cfg.norm_eps, gate_first=True)
        return self.canon_o(self.out(y), seq, x)

    def backend(self, on_cuda: bool, stateful: bool = False) -> str:
        """The SSD's path for a pass (``torch``, ``mamba_ssm`` or ``fla``); runs record it."""
        order = ("mamba_ssm", "fla") if fast.fla_gated_backward_ok() else ("mamba_ssm",)
        return fast.pick_backend(self.cfg.backend, on_cuda, stateful, order)

    def _ssd(self, xs, dt, bm, cm, seq) -> torch.Tensor:
        """The SSD over [B, T, H, P] inputs: a kernel, or the reference with the cache."""
        a = -self.A_log.float().exp()  # [H]
        cache = None if seq is None else seq.cache
        backend = self.backend(xs.is_cuda, cache is not None)
        resets = scan.resets_from_segments(None if seq is None else seq.segments)
        if backend == "mamba_ssm":
            return fast.ssd_mamba(xs, dt, a, bm, cm, self.cfg.chunk, self.cfg.autotune, resets)
        if backend == "fla":
            return fast.ssd_fla(xs, dt, a, bm, cm, self.cfg.autotune, resets)
        state = None if cache is None else cache.get(self)
        if state is not None and xs.shape[1] == 1:
            y, state = scan.ssd_recurrent(xs, dt, a, bm, cm, state)
        else:
            y, state = scan.ssd_chunked(xs, dt, a, bm, cm, self.cfg.chunk, state, resets)
        if cache is not None:
            cache.put(self, state)
        return y
