"""Fused Triton kernels for the low-rank dynamic Canon layer (``DynamicCanon`` in
``layers/canon.py``):

    y[t, c] = [x[t, c]] + Σ_j (u[t] · W2[j, c] + b[j, c]) · x[t - (K-1) + j, c]

with u = W1 h (rank R, computed by torch). The [B, T, C, K] filters are never stored: each tile
rebuilds its filters from u with a small matrix product. The backward returns dx, du (torch
carries it on to W1 and h), dW2 and db; it loops over T inside each program so that the dW2 /
db partial sums are per batch row only (deterministic, no atomics). Exposed as the custom op
``playground::dynamic_canon`` (fake + autograd registered) for ``torch.compile``.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK_T, BLOCK_C = 64, 64


@triton.jit
def _filter(U, W2, Bias, ubase, rows, c, r, T, C, R, j, BT: tl.constexpr, BC: tl.constexpr,
            RP: tl.constexpr):
    """w_j at the given rows: u[rows] @ W2[j]^T + b[j] -> [BT, BC] fp32 (rows out of range: 0)."""
    mu = ((rows >= 0) & (rows < T))[:, None] & (r < R)[None, :]
    u = tl.load(U + ubase + rows[:, None] * R + r[None, :], mask=mu, other=0.0).to(tl.float32)
    mw = (r < R)[:, None] & (c < C)[None, :]
    w = tl.load(W2 + j * C * R + c[None, :] * R + r[:, None], mask=mw, other=0.0).to(tl.float32)
    b = tl.load(Bias + j * C + c, mask=c < C, other=0.0).to(tl.float32)
    return tl.dot(u, w, input_precision="ieee") + b[None, :]


@triton.jit
def _fwd_kernel(X, U, W2, Bias, Y, T, C, R, K: tl.constexpr, RESIDUAL: tl.constexpr,
                BT: tl.constexpr, BC: tl.constexpr, RP: tl.constexpr):
    pid_t, pid_c, b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    t = pid_t * BT + tl.arange(0, BT)
    c = pid_c * BC + tl.arange(0, BC)
    r = tl.arange(0, RP)
    base, ubase = b.to(tl.int64) * T * C, b.to(tl.int64) * T * R
    acc = tl.zeros((BT, BC), dtype=tl.float32)
    xv = acc
    for j in tl.static_range(K):
        src = t - (K - 1) + j
        m = ((src >= 0) & (src < T))[:, None] & (c < C)[None, :]
        xv = tl.load(X + base + src[:, None] * C + c[None, :], mask=m, other=0.0).to(tl.float32)
        acc += _filter(U, W2, Bias, ubase, t, c, r, T, C, R, j, BT, BC, RP) * xv
    if RESIDUAL:
        acc += xv
    m = (t < T)[:, None] & (c < C)[None, :]
    tl.store(Y + base + t[:, None] * C + c[None, :], acc.to(Y.dtype.element_ty), mask=m)


@triton.jit
def _bwd_kernel(X, U, W2, Bias, DY, DX, DU, DW2, DB, B, T, C, R, K: tl.constexpr,
                RESIDUAL: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr, RP: tl.constexpr):
    pid_c, b = tl.program_id(0), tl.program_id(1)
    c = pid_c * BC + tl.arange(0, BC)
    r = tl.arange(0, RP)
    cm = c < C
    base, ubase = b.to(tl.int64) * T * C, b.to(tl.int64) * T * R
    dubase = (pid_c.to(tl.int64) * B + b) * T * R
    for j in tl.static_range(K):
        dw2 = tl.zeros((RP, BC), dtype=tl.float32)
        db = tl.zeros((BC,), dtype=tl.float32)
        mw = (r < R)[:, None] & cm[None, :]
        w_t = tl.load(W2 + j * C * R + c[None, :] * R + r[:, None], mask=mw,
                      other=0.0).to(tl.float32)
        for t0 in range(0, T, BT):
            t = t0 + tl.arange(0, BT)
            m = (t < T)[:, None] & cm[None, :]
            dy = tl.load(DY + base + t[:, None] * C + c[None, :], mask=m, other=0.0).to(tl.float32)
            src = t - (K - 1) + j
            ms = ((src >= 0) & (src < T))[:, None] & cm[None, :]
            xs = tl.load(X + base + src[:, None] * C + c[None, :], mask=ms,
                         other=0.0).to(tl.float32)
            g = dy * xs  # d w_j(t)
            mu = (t < T)[:, None] & (r < R)[None, :]
            u = tl.load(U + ubase + t[:, None] * R + r[None, :], mask=mu, other=0.0).to(tl.float32)
            dw2 += tl.dot(tl.trans(u), g, input_precision="ieee")
            db += tl.sum(g, axis=0)
            du = tl.dot(g, tl.trans(w_t), input_precision="ieee")  # [BT, RP]
            old = (tl.load(DU + dubase + t[:, None] * R + r[None, :], mask=mu, other=0.0) if j > 0
                   else du * 0)
            tl.store(DU + dubase + t[:, None] * R + r[None, :], old + du, mask=mu)
            # dx[t] gets w_j(t') dy[t'] from the output row t' = t + K-1-j that read x[t]
            dst = t + (K - 1) - j
            md = (dst < T)[:, None] & cm[None, :]
            dyd = tl.load(DY + base + dst[:, None] * C + c[None, :], mask=md,
                          other=0.0).to(tl.float32)
            contrib = _filter(U, W2, Bias, ubase, dst, c, r, T, C, R, j, BT, BC, RP) * dyd
            prev = tl.load(DX + base + t[:, None] * C + c[None, :], mask=m,
                           other=0.0).to(tl.float32) \
                if j > 0 else (dy if RESIDUAL else dy * 0)
            tl.store(DX + base + t[:, None] * C + c[None, :],
                     (prev + contrib).to(DX.dtype.element_ty), mask=m)
        part = b.to(tl.int64) * K * C + j * C
        tl.store(DB + part + c, db, mask=cm)
        tl.store(DW2 + (part + c[None, :]) * R + r[:, None], dw2, mask=mw)


def _rank_pad(r: int) -> int:
    return max(16, triton.next_power_of_2(r))


@torch.library.custom_op("playground::dynamic_canon", mutates_args=())
def dynamic_canon(x: torch.Tensor, u: torch.Tensor, w2: torch.Tensor, bias: torch.Tensor,
                  residual: bool) -> torch.Tensor:
    """x: [B, T, C]; u: [B, T, R]; w2: [K, C, R]; bias: [K, C]. Returns y like x."""
    b, t, c = x.shape
    k, _, r = w2.shape
    y = torch.empty_like(x)
    grid = (triton.cdiv(t, BLOCK_T), triton.cdiv(c, BLOCK_C), b)
    _fwd_kernel[grid](x, u, w2.contiguous(), bias.contiguous(), y, t, c, r, K=k, RESIDUAL=residual,
                      BT=BLOCK_T, BC=BLOCK_C, RP=_rank_pad(r))
    return y


@dynamic_canon.register_fake
def _(x, u, w2, bias, residual):
    return torch.empty_like(x)


@torch.library.custom_op("playground::dynamic_canon_bwd", mutates_args=())
def dynamic_canon_bwd(dy: torch.Tensor, x: torch.Tensor, u: torch.Tensor, w2: torch.Tensor,
                      bias: torch.Tensor, residual: bool
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dx, du, dw2, db) of :func:`dynamic_canon`."""
    b, t, c = x.shape
    k, _, r = w2.shape
    nc = triton.cdiv(c, BLOCK_C)
    dx = torch.empty(x.shape, dtype=torch.float32, device=x.device)
    du = torch.empty(nc, b, t, r, dtype=torch.float32, device=x.device)
    dw2 = torch.empty(b, k, c, r, dtype=torch.float32, device=x.device)
    db = torch.empty(b, k, c, dtype=torch.float32, device=x.device)
    _bwd_kernel[(nc, b)](x, u, w2.contiguous(), bias.contiguous(), dy, dx, du, dw2, db, b, t, c, r,
                         K=k, RESIDUAL=residual, BT=BLOCK_T, BC=BLOCK_C, RP=_rank_pad(r))
    return dx.to(x.dtype), du.sum(0).to(u.dtype), dw2.sum(0).to(w2.dtype), db.sum(0).to(bias.dtype)


@dynamic_canon_bwd.register_fake
def _(dy, x, u, w2, bias, residual):
    return torch.empty_like(x), torch.empty_like(u), torch.empty_like(w2), torch.empty_like(bias)


def _setup(ctx, inputs, output) -> None:
    x, u, w2, bias, residual = inputs
    ctx.save_for_backward(x, u, w2, bias)
    ctx.residual = residual


def _backward(ctx, dy):
    x, u, w2, bias = ctx.saved_tensors
    dx, du, dw2, db = dynamic_canon_bwd(dy.contiguous(), x, u, w2, bias, ctx.residual)
    return dx, du, dw2, db, None


dynamic_canon.register_autograd(_backward, setup_context=_setup)
