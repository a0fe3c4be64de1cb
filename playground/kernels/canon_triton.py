"""Fused Triton kernels for the static Canon layer in the [B, T, C] layout:

    y = x + act(conv(x) + bias)        (``residual=False``: y = act(conv(x) + bias))

where conv is the depthwise causal conv of ``playground.layers.canon.causal_conv`` (the
reference they are tested against). One pass reads x once (the K shifted tiles hit the cache)
and writes y; the backward writes dx and per-block partial sums of dw / db that torch reduces
(deterministic, no atomics). Exposed as the custom op ``playground::canon_conv`` with a fake
implementation and an autograd formula, so ``torch.compile`` traces it without a graph break.

Importing this module needs triton; ``available()`` says whether it can run here.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK_T, BLOCK_C = 64, 128  # pinned: no autotuning on a fresh machine (docs/PERFORMANCE.md)


@triton.jit
def _silu_grad(z):
    s = tl.sigmoid(z)
    return s * (1.0 + z * (1.0 - s))


@triton.jit
def _conv_tile(X, W, Bias, base, t, c, T, C, K: tl.constexpr, HAS_BIAS: tl.constexpr,
               BT: tl.constexpr, BC: tl.constexpr):
    """conv(x)[t, c] + bias for a [BT, BC] tile, in fp32; also returns x[t, c]."""
    cm = c < C
    acc = tl.zeros((BT, BC), dtype=tl.float32)
    xv = acc
    for j in tl.static_range(K):
        src = t - (K - 1) + j
        m = ((src >= 0) & (src < T))[:, None] & cm[None, :]
        xv = tl.load(X + base + src[:, None] * C + c[None, :], mask=m, other=0.0).to(tl.float32)
        wv = tl.load(W + c * K + j, mask=cm, other=0.0).to(tl.float32)
        acc += xv * wv[None, :]
    if HAS_BIAS:
        acc += tl.load(Bias + c, mask=cm, other=0.0).to(tl.float32)[None, :]
    return acc, xv  # the last loaded tile (j = K-1) is x itself


@triton.jit
def _fwd_kernel(X, W, Bias, Y, T, C, K: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr,
                RESIDUAL: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr):
    pid_t, pid_c, b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    t = pid_t * BT + tl.arange(0, BT)
    c = pid_c * BC + tl.arange(0, BC)
    base = b.to(tl.int64) * T * C
    z, x = _conv_tile(X, W, Bias, base, t, c, T, C, K, HAS_BIAS, BT, BC)
    y = z * tl.sigmoid(z) if ACT else z
    if RESIDUAL:
        y += x
    m = (t < T)[:, None] & (c < C)[None, :]
    tl.store(Y + base + t[:, None] * C + c[None, :], y.to(Y.dtype.element_ty), mask=m)


@triton.jit
def _dz_kernel(X, W, Bias, DY, DZ, T, C, K: tl.constexpr, HAS_BIAS: tl.constexpr,
               BT: tl.constexpr, BC: tl.constexpr):
    """dz = dy · silu'(z), z recomputed (only when the activation is SiLU)."""
    pid_t, pid_c, b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    t = pid_t * BT + tl.arange(0, BT)
    c = pid_c * BC + tl.arange(0, BC)
    base = b.to(tl.int64) * T * C
    z, _ = _conv_tile(X, W, Bias, base, t, c, T, C, K, HAS_BIAS, BT, BC)
    m = (t < T)[:, None] & (c < C)[None, :]
    dy = tl.load(DY + base + t[:, None] * C + c[None, :], mask=m, other=0.0).to(tl.float32)
    tl.store(DZ + base + t[:, None] * C + c[None, :], dy * _silu_grad(z), mask=m)


@triton.jit
def _bwd_kernel(X, W, DY, DZ, DX, DW, DB, T, C, NT, K: tl.constexpr, RESIDUAL: tl.constexpr,
                BT: tl.constexpr, BC: tl.constexpr):
    """dx = [dy] + Σ_j w_j dz[t + K-1-j]; partial dw_j = Σ_t dz[t] x[t-(K-1)+j], db = Σ_t dz[t]."""
    pid_t, pid_c, b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    t = pid_t * BT + tl.arange(0, BT)
    c = pid_c * BC + tl.arange(0, BC)
    cm = c < C
    base = b.to(tl.int64) * T * C
    m = (t < T)[:, None] & cm[None, :]
    dz = tl.load(DZ + base + t[:, None] * C + c[None, :], mask=m, other=0.0).to(tl.float32)
    dx = tl.zeros((BT, BC), dtype=tl.float32)
    if RESIDUAL:
        dx += tl.load(DY + base + t[:, None] * C + c[None, :], mask=m, other=0.0).to(tl.float32)
    part = (b * NT + pid_t).to(tl.int64) * C
    for j in tl.static_range(K):
        wv = tl.load(W + c * K + j, mask=cm, other=0.0).to(tl.float32)
        dst = t + (K - 1) - j
        md = (dst < T)[:, None] & cm[None, :]
        dx += wv[None, :] * tl.load(DZ + base + dst[:, None] * C + c[None, :], mask=md, other=0.0).to(tl.float32)
        src = t - (K - 1) + j
        ms = ((src >= 0) & (src < T))[:, None] & cm[None, :]
        xs = tl.load(X + base + src[:, None] * C + c[None, :], mask=ms, other=0.0).to(tl.float32)
        tl.store(DW + (part + c) * K + j, tl.sum(dz * xs, axis=0), mask=cm)
    tl.store(DB + part + c, tl.sum(dz, axis=0), mask=cm)
    tl.store(DX + base + t[:, None] * C + c[None, :], dx.to(DX.dtype.element_ty), mask=m)


def _grid(b: int, t: int, c: int) -> tuple[int, int, int]:
    return (triton.cdiv(t, BLOCK_T), triton.cdiv(c, BLOCK_C), b)


@torch.library.custom_op("playground::canon_conv", mutates_args=())
def canon_conv(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None, act: bool,
               residual: bool) -> torch.Tensor:
    """x: [B, T, C] contiguous; w: [C, K]; bias: [C] or None. Returns y like x."""
    b, t, c = x.shape
    y = torch.empty_like(x)
    _fwd_kernel[_grid(b, t, c)](x, w, bias if bias is not None else w, y, t, c, K=w.shape[1],
                                HAS_BIAS=bias is not None, ACT=act, RESIDUAL=residual,
                                BT=BLOCK_T, BC=BLOCK_C)
    return y


@canon_conv.register_fake
def _(x, w, bias, act, residual):
    return torch.empty_like(x)


@torch.library.custom_op("playground::canon_conv_bwd", mutates_args=())
def canon_conv_bwd(dy: torch.Tensor, x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None,
                   act: bool, residual: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients (dx, dw, db) of :func:`canon_conv` (db is zeros when there is no bias)."""
    b, t, c = x.shape
    k = w.shape[1]
    grid = _grid(b, t, c)
    dz = dy
    if act:
        dz = torch.empty(x.shape, dtype=torch.float32, device=x.device)
        _dz_kernel[grid](x, w, bias if bias is not None else w, dy, dz, t, c, K=k,
                         HAS_BIAS=bias is not None, BT=BLOCK_T, BC=BLOCK_C)
    nt = grid[0]
    dw_part = torch.empty(b * nt, c, k, dtype=torch.float32, device=x.device)
    db_part = torch.empty(b * nt, c, dtype=torch.float32, device=x.device)
    dx = torch.empty_like(x)
    _bwd_kernel[grid](x, w, dy, dz, dx, dw_part, db_part, t, c, nt, K=k, RESIDUAL=residual,
                      BT=BLOCK_T, BC=BLOCK_C)
    return dx, dw_part.sum(0).to(w.dtype), db_part.sum(0)


@canon_conv_bwd.register_fake
def _(dy, x, w, bias, act, residual):
    return torch.empty_like(x), torch.empty_like(w), x.new_empty(w.shape[0], dtype=torch.float32)


def _setup(ctx, inputs, output) -> None:
    x, w, bias, act, residual = inputs
    ctx.save_for_backward(x, w, bias)
    ctx.act, ctx.residual = act, residual


def _backward(ctx, dy):
    x, w, bias = ctx.saved_tensors
    dx, dw, db = canon_conv_bwd(dy.contiguous(), x, w, bias, ctx.act, ctx.residual)
    return dx, dw, (db.to(bias.dtype) if bias is not None else None), None, None


canon_conv.register_autograd(_backward, setup_context=_setup)
