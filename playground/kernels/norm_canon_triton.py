"""Canon-A and Canon-C fused with the RMSNorm that feeds them (``playground::norm_canon``):

    n = x · rstd · g        y = n + act(conv(n) + bias)        (``residual=False``: no n +)

x the residual stream [B, T, C], rstd = (mean_c x² + eps)^-½ per token, g the norm's weight, conv
the depthwise causal conv of ``playground.layers.canon.causal_conv``. rstd is an input: the
caller computes it with torch (under ``torch.compile`` inductor folds that row reduction into the
kernel that writes x, the residual add), and autograd takes its gradient back to x. So the
kernels stay the plain Canon kernels' tiles of [rows × channel blocks] (``canon_triton``), each
normalising its x on load:

- forward: reads x once (the K shifted tiles hit the cache) and writes y — n is never written;
- backward: reads dy and x once, recomputes n, writes dx_n = dn · rstd · g (the gradient of x
  at fixed rstd), one partial row sum of dn · x · g per channel block (rstd's gradient, summed
  after), and per strip partial rows of the taps', bias's and g's gradients (deterministic).

Unfused, the norm wrote n, Canon read it, wrote its output and a cast wrote that in bf16 for the
projection after it — all in fp32, since under bf16 autocast the residual stream is fp32. Here the
output is written in ``out_dtype`` (the autocast dtype: the projection's own rounding, half the
bytes); the arithmetic stays fp32. Only x and rstd are kept for the backward. Tested equal to
RMSNorm then Canon (``tests/test_kernels.py``).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from playground.kernels import canon_triton as ct
from playground.kernels.canon_triton import _act_grad, _chunk, _finish_tile, _partials, _taps

# The plain Canon kernels' tiles and pipeline depth (canon_triton), named here so that they can be
# tuned apart: the rows are fp32 and each is normalised on load.
BLOCK_T, BLOCK_C, FWD_WARPS, BWD_STAGES = ct.BLOCK_T, ct.BLOCK_C, ct.FWD_WARPS, ct.BWD_STAGES


@triton.jit
def _normed(X, R, G, base, rbase, r, c, cm, T, C):
    """x at rows r of channels c (fp32, zero outside 0..T-1) and n = x · rstd · g in x's dtype."""
    rm = (r >= 0) & (r < T)
    x = tl.load(X + base + r[:, None] * C + c[None, :], mask=rm[:, None] & cm[None, :],
                other=0.0).to(tl.float32)
    rstd = tl.load(R + rbase + r, mask=rm, other=0.0)
    g = tl.load(G + c, mask=cm, other=0.0).to(tl.float32)
    return x, (x * rstd[:, None] * g[None, :]).to(X.dtype.element_ty).to(tl.float32)


@triton.jit
def _fwd_kernel(X, R, G, W, Bias, Y, T, C, K: tl.constexpr, HAS_BIAS: tl.constexpr,
                ACT: tl.constexpr, RESIDUAL: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr):
    pid_t, pid_c, b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    t = pid_t * BT + tl.arange(0, BT)
    c = pid_c * BC + tl.arange(0, BC)
    cm = c < C
    base = b.to(tl.int64) * T * C
    z = tl.zeros((BT, BC), dtype=tl.float32)
    n = z
    for j in tl.static_range(K):
        _, n = _normed(X, R, G, base, b.to(tl.int64) * T, t - (K - 1) + j, c, cm, T, C)
        z += n * tl.load(W + c * K + j, mask=cm, other=0.0).to(tl.float32)[None, :]
    if HAS_BIAS:
        z += tl.load(Bias + c, mask=cm, other=0.0).to(tl.float32)[None, :]
    y = _finish_tile(z, n, ACT, RESIDUAL)  # the last n (j = K-1) is the tile's own rows
    tl.store(Y + base + t[:, None] * C + c[None, :], y.to(Y.dtype.element_ty),
             mask=(t < T)[:, None] & cm[None, :])


@triton.jit
def _bwd_kernel(X, W, Bias, DY, DX, DW, DB, T, C, SPLITS, STRIP, R, G, DR, DG, K: tl.constexpr,
                HAS_BIAS: tl.constexpr, ACT: tl.constexpr, RESIDUAL: tl.constexpr, BT: tl.constexpr,
                BC: tl.constexpr, STAGES: tl.constexpr):
    """One program: channels c of sequence b, rows [s·STRIP, (s+1)·STRIP) in chunks of BT — the
    plain backward (``canon_triton._strip``) on n recomputed from x, then the norm's share:
    dx_n = dn · rstd · g; DR[channel block, row] = Σ_c dn · x · g; dg = Σ_t dn · x · rstd."""
    pid_c, pid = tl.program_id(0), tl.program_id(1)
    b, s = pid // SPLITS, pid % SPLITS
    c = pid_c * BC + tl.arange(0, BC)
    cm = c < C
    base = b.to(tl.int64) * T * C
    rbase = b.to(tl.int64) * T
    w, acc_w, acc_b, bias = _taps(W, Bias, c, cm, K, HAS_BIAS, BT, BC)
    g = tl.load(G + c, mask=cm, other=0.0).to(tl.float32)
    acc_g = tl.zeros((BT, BC), dtype=tl.float32)
    start = s * STRIP
    for t0 in tl.range(start, tl.minimum(start + STRIP, T), BT, num_stages=STAGES):
        t = t0 + tl.arange(0, BT)
        ns = ()  # n at rows t-(K-1) .. t (the taps' inputs); with the activation also up to t+K-1
        x = tl.zeros((BT, BC), dtype=tl.float32)
        for o in tl.static_range(2 * K - 1 if ACT else K):
            xo, no = _normed(X, R, G, base, rbase, t - (K - 1) + o, c, cm, T, C)
            ns = ns + (no,)
            if o == K - 1:
                x = xo
        dy = tl.zeros((BT, BC), dtype=tl.float32)
        dz = ()  # dz at rows t+d, d = 0..K-1 (zero past T)
        for d in tl.static_range(K):
            r = t + d
            gd = tl.load(DY + base + r[:, None] * C + c[None, :],
                         mask=(r < T)[:, None] & cm[None, :], other=0.0).to(tl.float32)
            if d == 0:
                dy = gd
            dz = dz + (_act_grad(gd, ns, w, bias, d, K, HAS_BIAS, ACT, BT, BC),)
        dn, acc_w, acc_b = _chunk(dy, dz, ns, w, acc_w, acc_b, K, HAS_BIAS, RESIDUAL, BT, BC)
        tm = t < T
        rstd = tl.load(R + rbase + t, mask=tm, other=0.0)
        dnx = dn * x
        acc_g += dnx * rstd[:, None]
        # [channel block, b, t]
        dr = DR + pid_c.to(tl.int64) * (tl.num_programs(1) // SPLITS) * T + rbase
        tl.store(dr + t, tl.sum(dnx * g[None, :], axis=1), mask=tm)
        tl.store(DX + base + t[:, None] * C + c[None, :],
                 (dn * rstd[:, None] * g[None, :]).to(DX.dtype.element_ty),
                 mask=tm[:, None] & cm[None, :])
    _partials(DW, DB, pid.to(tl.int64) * C, c, cm, acc_w, acc_b, K, HAS_BIAS)
    tl.store(DG + pid.to(tl.int64) * C + c, tl.sum(acc_g, axis=0), mask=cm)


@torch.library.custom_op("playground::norm_canon", mutates_args=())
def norm_canon(x: torch.Tensor, rstd: torch.Tensor, g: torch.Tensor, w: torch.Tensor,
               bias: torch.Tensor | None,
               act: bool, residual: bool, out_dtype: torch.dtype) -> torch.Tensor:
    """x: [B, T, C] contiguous; rstd: [B, T] fp32, (mean_c x² + eps)^-½; g: [C] the norm's weight;
    w: [C, K]; bias: [C] or None. Returns Canon(x · rstd · g) (as ``canon_conv``) in
    ``out_dtype``."""
    b, t, c = x.shape
    y = torch.empty(b, t, c, dtype=out_dtype, device=x.device)
    grid = (triton.cdiv(t, BLOCK_T), triton.cdiv(c, BLOCK_C), b)
    _fwd_kernel[grid](x, rstd.contiguous(), g, w, bias if bias is not None else w, y, t, c,
                      K=w.shape[1], HAS_BIAS=bias is not None,
                      ACT=act, RESIDUAL=residual, BT=BLOCK_T, BC=BLOCK_C, num_warps=FWD_WARPS)
    return y


@norm_canon.register_fake
def _(x, rstd, g, w, bias, act, residual, out_dtype):
    return torch.empty(x.shape, dtype=out_dtype, device=x.device)


@torch.library.custom_op("playground::norm_canon_bwd", mutates_args=())
def norm_canon_bwd(dy: torch.Tensor, x: torch.Tensor, rstd: torch.Tensor, g: torch.Tensor,
                   w: torch.Tensor, bias: torch.Tensor | None, act: bool, residual: bool
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients (dx at fixed rstd, drstd, dg, dw, db) of :func:`norm_canon`
    (db: zeros without a bias)."""
    b, t, c = x.shape
    blocks = triton.cdiv(c, ct.BWD_BLOCK_C)
    dr_part = torch.empty(blocks, b, t, dtype=torch.float32, device=x.device)
    dx, dw, db, dg = ct._strip_backward(_bwd_kernel, dy, x, w, bias, act, residual, blocks, c,
                                        ct.BWD_BLOCK_C, extra=(rstd.contiguous(), g, dr_part),
                                        partials=1, BC=ct.BWD_BLOCK_C, STAGES=BWD_STAGES)
    return dx, dr_part.sum(0), dg.to(g.dtype), dw, db


@norm_canon_bwd.register_fake
def _(dy, x, rstd, g, w, bias, act, residual):
    return (torch.empty_like(x), torch.empty_like(rstd), torch.empty_like(g), torch.empty_like(w),
            x.new_empty(w.shape[0], dtype=torch.float32))


def _setup(ctx, inputs, output) -> None:
    x, rstd, g, w, bias, act, residual, _ = inputs
    ctx.save_for_backward(x, rstd, g, w, bias)
    ctx.args = act, residual


def _backward(ctx, dy):
    x, rstd, g, w, bias = ctx.saved_tensors
    dx, dr, dg, dw, db = norm_canon_bwd(dy.contiguous(), x, rstd, g, w, bias, *ctx.args)
    return dx, dr, dg, dw, (db.to(bias.dtype) if bias is not None else None), None, None, None


norm_canon.register_autograd(_backward, setup_context=_setup)
