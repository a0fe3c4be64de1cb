"""Canon-A and Canon-C fused with the RMSNorm that feeds them (``playground::norm_canon``):

    n = RMSNorm(x) · g        y = n + act(conv(n) + bias)        (``residual=False``: no n +)

over the model width C of each token, x the residual stream, g the norm's weight and conv the
depthwise causal conv of ``playground.layers.canon.causal_conv``. Unfused, the norm writes n,
the Canon kernel reads it and writes y, the backward reads both again and the norm's input is
kept beside Canon's. Here a program holds whole rows in registers: the forward reads x once
(the K-1 rows before a tile are re-read from the cache and normalised again) and writes y; the
backward reads x and dy once, recomputes n, and writes dx, with the taps', bias's and norm
weight's gradients summed over the program's strip of rows into one partial row each (summed
after, in a fixed order: deterministic). Only x is kept for the backward.

Under bf16 autocast the residual stream is fp32, so unfused the norm and Canon-A/C ran in fp32
and the mixer's (or MLP's) first projection cast Canon's output to bf16; here the output is
written in ``out_dtype`` (the autocast dtype: the same rounding, half the bytes), the arithmetic
stays fp32. Tested equal to the PyTorch composition (``tests/test_kernels.py``).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from playground.kernels.canon_triton import _act_grad, _finish_tile, _num_sms

# Whole rows of C channels (padded to a power of two) in registers: a forward tile holds
# FWD_ELEMS values, a backward chunk BWD_ELEMS (its shifted tiles, dy rows and the norm's terms
# live together), at least one row each.
FWD_ELEMS, FWD_WARPS = 4096, 4
BWD_ELEMS, BWD_WARPS, BWD_STAGES = 2048, 8, 1


MAX_ROWS = 16


def _rows_per(elems: int, block: int) -> int:
    """Rows of a tile of ``elems`` values ``block`` wide: 1 to MAX_ROWS."""
    return max(1, min(MAX_ROWS, elems // block))


def _strips(b: int, t: int, rows: int, device: torch.device) -> tuple[int, int]:
    """(strips per sequence, rows per strip, a whole number of ``rows``-row chunks) for the backward."""
    want = triton.cdiv(BWD_PROGRAMS_PER_SM * _num_sms(device), max(b, 1))
    strip = triton.cdiv(max(triton.cdiv(t, want), BWD_MIN_STRIP), rows) * rows
    return max(triton.cdiv(t, strip), 1), strip


@triton.jit
def _normed(X, NW, base, r, c, cm, T, C, eps):
    """Rows r of x (fp32, zero outside 0..T-1), their n = x · rstd · g in x's dtype as fp32, and
    rstd."""
    m = ((r >= 0) & (r < T))[:, None] & cm[None, :]
    x = tl.load(X + base + r[:, None] * C + c[None, :], mask=m, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / C + eps)
    g = tl.load(NW + c, mask=cm, other=0.0).to(tl.float32)
    n = (x * rstd[:, None] * g[None, :]).to(X.dtype.element_ty).to(tl.float32)
    return x, n, rstd


@triton.jit
def _fwd_kernel(X, NW, W, Bias, Y, T, C, eps, K: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr,
                RESIDUAL: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr):
    pid_t, b = tl.program_id(0), tl.program_id(1)
    t = pid_t * BT + tl.arange(0, BT)
    c = tl.arange(0, BC)
    cm = c < C
    base = b.to(tl.int64) * T * C
    z = tl.zeros((BT, BC), dtype=tl.float32)
    n = z
    for j in tl.static_range(K):
        _, n, _ = _normed(X, NW, base, t - (K - 1) + j, c, cm, T, C, eps)
        z += n * tl.load(W + c * K + j, mask=cm, other=0.0).to(tl.float32)[None, :]
    if HAS_BIAS:
        z += tl.load(Bias + c, mask=cm, other=0.0).to(tl.float32)[None, :]
    y = _finish_tile(z, n, ACT, RESIDUAL)  # the last n (j = K-1) is the tile's own rows
    tl.store(Y + base + t[:, None] * C + c[None, :], y.to(Y.dtype.element_ty), mask=(t < T)[:, None] & cm[None, :])


@triton.jit
def _bwd_kernel(X, NW, W, Bias, DY, DX, DNW, DW, DB, T, C, SPLITS, STRIP, eps, K: tl.constexpr,
                HAS_BIAS: tl.constexpr, ACT: tl.constexpr, RESIDUAL: tl.constexpr, BT: tl.constexpr,
                BC: tl.constexpr, STAGES: tl.constexpr):
    """One program: sequence b, rows [s·STRIP, (s+1)·STRIP) in chunks of BT whole rows. Canon's
    backward as in ``canon_triton._strip`` (dz = dy · silu'(z) with the activation, dn = [dy] +
    Σ_j w_j dz[t+K-1-j], dw_j = Σ_t dz[t] n[t-(K-1)+j], db = Σ_t dz[t]) on n recomputed from x, then
    the norm's: with a = dn · g, dx = rstd · a − x · rstd³ · mean(x · a) and dg = Σ_t dn · x · rstd.
    The sums over rows go into this program's partial rows of DW [., C, K], DB and DNW [., C]."""
    pid = tl.program_id(0)
    b, s = pid // SPLITS, pid % SPLITS
    c = tl.arange(0, BC)
    cm = c < C
    base = b.to(tl.int64) * T * C
    g = tl.load(NW + c, mask=cm, other=0.0).to(tl.float32)
    w = ()
    acc_w = ()
    for j in tl.static_range(K):
        w = w + (tl.load(W + c * K + j, mask=cm, other=0.0).to(tl.float32),)
        acc_w = acc_w + (tl.zeros((BC,), dtype=tl.float32),)
    bias = tl.zeros((BC,), dtype=tl.float32)
    if HAS_BIAS:
        bias = tl.load(Bias + c, mask=cm, other=0.0).to(tl.float32)
    acc_b = tl.zeros((BC,), dtype=tl.float32)
    acc_g = tl.zeros((BC,), dtype=tl.float32)
    start = s * STRIP
    for t0 in tl.range(start, tl.minimum(start + STRIP, T), BT, num_stages=STAGES):
        t = t0 + tl.arange(0, BT)
        ns = ()  # n at rows t-(K-1) .. t (the taps' inputs); with the activation also up to t+K-1
        x = tl.zeros((BT, BC), dtype=tl.float32)
        rstd = tl.zeros((BT,), dtype=tl.float32)
        for o in tl.static_range(2 * K - 1 if ACT else K):
            xo, no, ro = _normed(X, NW, base, t - (K - 1) + o, c, cm, T, C, eps)
            ns = ns + (no,)
            if o == K - 1:
                x = xo
                rstd = ro
        dy = tl.zeros((BT, BC), dtype=tl.float32)
        dz = ()  # dz at rows t+d, d = 0..K-1 (zero past T)
        for d in tl.static_range(K):
            r = t + d
            gd = tl.load(DY + base + r[:, None] * C + c[None, :], mask=(r < T)[:, None] & cm[None, :],
                         other=0.0).to(tl.float32)
            if d == 0:
                dy = gd
            dz = dz + (_act_grad(gd, ns, w, bias, d, K, HAS_BIAS, ACT, BT, BC),)
        dn = dy if RESIDUAL else tl.zeros((BT, BC), dtype=tl.float32)
        sums = ()
        for j in tl.static_range(K):
            dn += w[j][None, :] * dz[K - 1 - j]
            sums = sums + (acc_w[j] + tl.sum(dz[0] * ns[j], axis=0),)
        acc_w = sums
        if HAS_BIAS:
            acc_b += tl.sum(dz[0], axis=0)
        a = dn * g[None, :]
        xhat = x * rstd[:, None]
        dx = rstd[:, None] * (a - xhat * (tl.sum(xhat * a, axis=1) / C)[:, None])
        acc_g += tl.sum(dn * xhat, axis=0)
        tl.store(DX + base + t[:, None] * C + c[None, :], dx.to(DX.dtype.element_ty),
                 mask=(t < T)[:, None] & cm[None, :])
    part = pid.to(tl.int64) * C
    for j in tl.static_range(K):
        tl.store(DW + (part + c) * K + j, acc_w[j], mask=cm)
    if HAS_BIAS:
        tl.store(DB + part + c, acc_b, mask=cm)
    tl.store(DNW + part + c, acc_g, mask=cm)


@torch.library.custom_op("playground::norm_canon", mutates_args=())
def norm_canon(x: torch.Tensor, nw: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None, eps: float,
               act: bool, residual: bool, out_dtype: torch.dtype) -> torch.Tensor:
    """x: [B, T, C] contiguous; nw: [C] the norm's weight; w: [C, K]; bias: [C] or None. Returns
    Canon(RMSNorm(x) · nw) in ``out_dtype``, [B, T, C] (the Canon layer as ``canon_conv``)."""
    b, t, c = x.shape
    y = torch.empty(b, t, c, dtype=out_dtype, device=x.device)
    block = triton.next_power_of_2(c)
    rows = _rows_per(FWD_ELEMS, block)
    if b * t:
        _fwd_kernel[(triton.cdiv(t, rows), b)](x, nw, w, bias if bias is not None else w, y, t, c, eps, K=w.shape[1],
                                               HAS_BIAS=bias is not None, ACT=act, RESIDUAL=residual,
                                               BT=rows, BC=block, num_warps=FWD_WARPS)
    return y


@norm_canon.register_fake
def _(x, nw, w, bias, eps, act, residual, out_dtype):
    return torch.empty(x.shape, dtype=out_dtype, device=x.device)


@torch.library.custom_op("playground::norm_canon_bwd", mutates_args=())
def norm_canon_bwd(dy: torch.Tensor, x: torch.Tensor, nw: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None,
                   eps: float, act: bool, residual: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                                                                   torch.Tensor]:
    """Gradients (dx, dnw, dw, db) of :func:`norm_canon` (db is zeros when there is no bias)."""
    b, t, c = x.shape
    k = w.shape[1]
    block = triton.next_power_of_2(c)
    rows = _rows_per(BWD_ELEMS, block)
    splits, strip = _strips(b, t, rows, x.device)
    programs = b * splits
    dx = torch.empty_like(x)
    dw_part = torch.zeros(programs, c, k, dtype=torch.float32, device=x.device)
    dnw_part = torch.zeros(programs, c, dtype=torch.float32, device=x.device)
    db_part = torch.zeros(programs, c, dtype=torch.float32, device=x.device) if bias is not None else dnw_part
    if b * t:
        _bwd_kernel[(programs,)](x, nw, w, bias if bias is not None else w, dy, dx, dnw_part, dw_part, db_part,
                                 t, c, splits, strip, eps, K=k, HAS_BIAS=bias is not None, ACT=act,
                                 RESIDUAL=residual, BT=rows, BC=block, STAGES=BWD_STAGES,
                                 num_warps=BWD_WARPS)
    db = db_part.sum(0) if bias is not None else x.new_zeros(c, dtype=torch.float32)
    return dx, dnw_part.sum(0).to(nw.dtype), dw_part.sum(0).to(w.dtype), db


@norm_canon_bwd.register_fake
def _(dy, x, nw, w, bias, eps, act, residual):
    return (torch.empty_like(x), torch.empty_like(nw), torch.empty_like(w),
            x.new_empty(w.shape[0], dtype=torch.float32))


def _setup(ctx, inputs, output) -> None:
    x, nw, w, bias, eps, act, residual, _ = inputs
    ctx.save_for_backward(x, nw, w, bias)
    ctx.args = eps, act, residual


def _backward(ctx, dy):
    x, nw, w, bias = ctx.saved_tensors
    dx, dnw, dw, db = norm_canon_bwd(dy.contiguous(), x, nw, w, bias, *ctx.args)
    return dx, dnw, dw, (db.to(bias.dtype) if bias is not None else None), None, None, None, None


norm_canon.register_autograd(_backward, setup_context=_setup)
