"""Fused Triton kernels for the static Canon layer in the [B, T, C] layout:

    y = x + act(conv(x) + bias)        (``residual=False``: y = act(conv(x) + bias))

where conv is the depthwise causal conv of ``playground.layers.canon.causal_conv`` (the
reference they are tested against). The forward is one pass over [BLOCK_T, BLOCK_C] tiles: it
reads x once (the K shifted tiles hit the cache) and writes y.

The backward is one pass too. Each program takes one block of channels of one sequence and
walks a strip of its rows in chunks, reading dy and x once and writing dx; with SiLU it
recomputes z from x in the chunk rather than reading a stored dz. dw and db build up
elementwise in fp32 registers over the whole strip, and are summed across rows once at the
end, into one partial row per (sequence, strip) that torch sums: deterministic, no atomics.
Sequences are split into strips only as far as needed to fill the GPU (``_strips``).

Exposed as the custom op ``playground::canon_conv`` with a fake implementation and an autograd
formula (the op ``playground::canon_conv_bwd``), so ``torch.compile`` traces it without a graph
break. Importing this module needs triton; ``playground.kernels.canon_kernel()`` returns the op
where it can run (triton and CUDA).
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

# Block sizes are pinned: no autotuning on a fresh machine (docs/PERFORMANCE.md).
# Forward tile: 16 rows × 128 channels, 4 warps — the fastest of 32 tiles at all six shapes of
# docs/bench/2026-11-25-canon-tiles/ (10–15 % below a 64-row tile).
BLOCK_T, BLOCK_C, FWD_WARPS = 16, 128, 4
# Backward: chunks of BWD_BLOCK_T rows × BWD_BLOCK_C channels, small enough that the fp32
# accumulators (K, +1 with a bias) and the shifted tiles stay in registers: 8 values of each per
# thread (K=4, bf16, sm_90, Triton 3.6: 128 registers without SiLU, 168 with; no spills).
BWD_BLOCK_T, BWD_BLOCK_C, BWD_WARPS = 8, 128, 4
# Split sequences into strips until there is one program per SM (the best overall of 500 launch
# configurations timed on an H200, docs/bench/2026-11-24-h200-canon-strips/; none wins everywhere),
BWD_PROGRAMS_PER_SM = 1
BWD_MIN_STRIP = 4 * BWD_BLOCK_T  # but keep every strip at least this many rows long
# Software pipelining of the strip loop: with more than 1 stage Triton copies the rows of the next
# chunks asynchronously (cp.async through shared memory) while a chunk computes. The plain
# backward is bound by load latency (2–5× its memory floor whatever the tile): 4 stages cut it by
# 9–37 % at the widths of the paper's models and Mamba2's short conv on an H200 (3 about as much);
# the fused SwiGLU and RoPE backwards get slower with any pipelining
# (docs/bench/2026-11-26-h200-mamba/).
BWD_STAGES, FUSED_BWD_STAGES = 4, 1


@triton.jit
def _silu_grad(z):
    s = tl.sigmoid(z)
    return s * (1.0 + z * (1.0 - s))


@triton.jit
def _conv_tile(X, W, Bias, base, t, c, cm, T, C, K: tl.constexpr, HAS_BIAS: tl.constexpr,
               BT: tl.constexpr, BC: tl.constexpr):
    """conv(x)[t, c] + bias for a [BT, BC] tile of the channels c where ``cm``, in fp32; also
    returns x[t, c]. (c an offset plus an arange, so that the loads stay contiguous: vectorised.)"""
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
def _finish_tile(z, x, ACT: tl.constexpr, RESIDUAL: tl.constexpr):
    """The layer's output from conv + bias z and its input x: [x +] [silu](z)."""
    y = z * tl.sigmoid(z) if ACT else z
    if RESIDUAL:
        y += x
    return y


@triton.jit
def _fwd_kernel(X, W, Bias, Y, T, C, K: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr,
                RESIDUAL: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr):
    pid_t, pid_c, b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    t = pid_t * BT + tl.arange(0, BT)
    c = pid_c * BC + tl.arange(0, BC)
    base = b.to(tl.int64) * T * C
    z, x = _conv_tile(X, W, Bias, base, t, c, c < C, T, C, K, HAS_BIAS, BT, BC)
    y = _finish_tile(z, x, ACT, RESIDUAL)
    m = (t < T)[:, None] & (c < C)[None, :]
    tl.store(Y + base + t[:, None] * C + c[None, :], y.to(Y.dtype.element_ty), mask=m)


@triton.jit
def _taps(W, Bias, c, cm, K: tl.constexpr, HAS_BIAS: tl.constexpr, BT: tl.constexpr,
          BC: tl.constexpr):
    """A channel block's K taps and bias (fp32 [BC] vectors) and zeroed accumulators: one [BT, BC]
    per tap for Σ dz · x shifted, one for Σ dz (db)."""
    w = ()
    acc_w = ()
    for j in tl.static_range(K):
        w = w + (tl.load(W + c * K + j, mask=cm, other=0.0).to(tl.float32),)
        acc_w = acc_w + (tl.zeros((BT, BC), dtype=tl.float32),)
    bias = tl.zeros((BC,), dtype=tl.float32)
    if HAS_BIAS:
        bias = tl.load(Bias + c, mask=cm, other=0.0).to(tl.float32)
    return w, acc_w, tl.zeros((BT, BC), dtype=tl.float32), bias


@triton.jit
def _rows(X, base, t, c, cm, T, C, N: tl.constexpr, K: tl.constexpr):
    """x at rows t-(K-1) .. t-(K-1)+N-1 of channels c (zero outside 0..T-1): N fp32 tiles."""
    xs = ()
    for o in tl.static_range(N):
        r = t - (K - 1) + o
        m = ((r >= 0) & (r < T))[:, None] & cm[None, :]
        xs = xs + (tl.load(X + base + r[:, None] * C + c[None, :], mask=m,
                           other=0.0).to(tl.float32),)
    return xs


@triton.jit
def _act_grad(g, xs, w, bias, d, K: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr,
              BT: tl.constexpr, BC: tl.constexpr):
    """dz at rows t+d from dy there: times silu'(z) with the activation, z recomputed from x."""
    if ACT:
        z = tl.zeros((BT, BC), dtype=tl.float32)
        for j in tl.static_range(K):
            z += xs[d + j] * w[j][None, :]
        if HAS_BIAS:
            z += bias[None, :]
        g = g * _silu_grad(z)
    return g


@triton.jit
def _chunk(dy, dz, xs, w, acc_w, acc_b, K: tl.constexpr, HAS_BIAS: tl.constexpr,
           RESIDUAL: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr):
    """dx at the chunk's rows, [dy] + Σ_j w_j dz[t+K-1-j], and the accumulators with this chunk."""
    dx = dy if RESIDUAL else tl.zeros((BT, BC), dtype=tl.float32)
    acc = ()
    for j in tl.static_range(K):
        dx += w[j][None, :] * dz[K - 1 - j]
        acc = acc + (acc_w[j] + dz[0] * xs[j],)
    if HAS_BIAS:
        acc_b += dz[0]
    return dx, acc, acc_b


@triton.jit
def _partials(DW, DB, part, c, cm, acc_w, acc_b, K: tl.constexpr, HAS_BIAS: tl.constexpr):
    """The strip's dw / db summed over its rows, into the program's partial row ``part``."""
    for j in tl.static_range(K):
        tl.store(DW + (part + c) * K + j, tl.sum(acc_w[j], axis=0), mask=cm)
    if HAS_BIAS:
        tl.store(DB + part + c, tl.sum(acc_b, axis=0), mask=cm)


@triton.jit
def _strip(X, W, Bias, DY, DX, DW, DB, base, c, cm, gbase, gc, GS, part, start, end, T, C,
           K: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr, RESIDUAL: tl.constexpr,
           BT: tl.constexpr, BC: tl.constexpr, STAGES: tl.constexpr):
    """The backward of channels c (where ``cm``) of x ([T, C] rows at X + base) over rows
    [start, end) in chunks of BT; dy of row r at DY + gbase + r·GS + gc, dx written like x.

    dz = dy · silu'(z) with the activation (z recomputed from x), else dy; dx = [dy] +
    Σ_j w_j dz[t+K-1-j], where the K-1 rows of dz past a chunk (or the strip) are recomputed
    from dy and x, so programs share nothing.
    dw_j = Σ_t dz[t] x[t-(K-1)+j] and db = Σ_t dz[t] build up elementwise in fp32 over the
    strip; the rows are summed once at the end, into partial row ``part``."""
    w, acc_w, acc_b, bias = _taps(W, Bias, c, cm, K, HAS_BIAS, BT, BC)
    for t0 in tl.range(start, end, BT, num_stages=STAGES):
        t = t0 + tl.arange(0, BT)
        # x at rows t-(K-1) .. t (the taps' inputs); with the activation also up to t+K-1
        xs = _rows(X, base, t, c, cm, T, C, 2 * K - 1 if ACT else K, K)
        dy = tl.zeros((BT, BC), dtype=tl.float32)
        dz = ()  # dz at rows t+d, d = 0..K-1 (zero past T)
        for d in tl.static_range(K):
            r = t + d
            m = (r < T)[:, None] & cm[None, :]
            g = tl.load(DY + gbase + r[:, None] * GS + gc[None, :], mask=m,
                        other=0.0).to(tl.float32)
            if d == 0:
                dy = g  # dy at the chunk's own rows, for the residual
            dz = dz + (_act_grad(g, xs, w, bias, d, K, HAS_BIAS, ACT, BT, BC),)
        dx, acc_w, acc_b = _chunk(dy, dz, xs, w, acc_w, acc_b, K, HAS_BIAS, RESIDUAL, BT, BC)
        m = (t < T)[:, None] & cm[None, :]
        tl.store(DX + base + t[:, None] * C + c[None, :], dx.to(DX.dtype.element_ty), mask=m)
    _partials(DW, DB, part, c, cm, acc_w, acc_b, K, HAS_BIAS)


@triton.jit
def _bwd_kernel(X, W, Bias, DY, DX, DW, DB, T, C, SPLITS, STRIP, K: tl.constexpr,
                HAS_BIAS: tl.constexpr, ACT: tl.constexpr, RESIDUAL: tl.constexpr,
                BT: tl.constexpr, BC: tl.constexpr, STAGES: tl.constexpr):
    """One program: channels c of sequence b, rows [s·STRIP, (s+1)·STRIP) (:func:`_strip`)."""
    pid_c, pid = tl.program_id(0), tl.program_id(1)
    b, s = pid // SPLITS, pid % SPLITS
    c = pid_c * BC + tl.arange(0, BC)
    base = b.to(tl.int64) * T * C
    start = s * STRIP
    _strip(X, W, Bias, DY, DX, DW, DB, base, c, c < C, base, c, C, pid.to(tl.int64) * C, start,
           tl.minimum(start + STRIP, T), T, C, K, HAS_BIAS, ACT, RESIDUAL, BT, BC, STAGES)


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
                                BT=BLOCK_T, BC=BLOCK_C, num_warps=FWD_WARPS)
    return y


@canon_conv.register_fake
def _(x, w, bias, act, residual):
    return torch.empty_like(x)


@functools.cache
def _num_sms(device: torch.device) -> int:
    """Multiprocessors of a CUDA device; elsewhere (Triton's interpreter) an H100's 132. Cached:
    the backward asks on every call, and the query costs host time."""
    if device.type != "cuda":
        return 132
    return torch.cuda.get_device_properties(device).multi_processor_count


def _strips(b: int, t: int, c: int, device: torch.device,
            block_c: int = BWD_BLOCK_C) -> tuple[int, int]:
    """(strips per sequence, rows per strip) for the backward: as many strips as it takes to
    give BWD_PROGRAMS_PER_SM programs per multiprocessor, but none shorter than BWD_MIN_STRIP
    rows; a strip is a whole number of chunks. Long sequences and wide layers stay whole."""
    programs = triton.cdiv(c, block_c) * b
    want = triton.cdiv(BWD_PROGRAMS_PER_SM * _num_sms(device), programs)
    rows = max(triton.cdiv(t, want), BWD_MIN_STRIP)
    rows = triton.cdiv(rows, BWD_BLOCK_T) * BWD_BLOCK_T
    return triton.cdiv(t, rows), rows


@torch.library.custom_op("playground::canon_conv_bwd", mutates_args=())
def canon_conv_bwd(dy: torch.Tensor, x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None,
                   act: bool, residual: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients (dx, dw, db) of :func:`canon_conv` (db is zeros when there is no bias)."""
    c = x.shape[2]
    return _strip_backward(_bwd_kernel, dy, x, w, bias, act, residual, triton.cdiv(c, BWD_BLOCK_C),
                           c, BWD_BLOCK_C, BC=BWD_BLOCK_C, STAGES=BWD_STAGES)


def _strip_backward(kernel, grad, x, w, bias, act, residual, programs: int, size: int, block_c: int,
                    extra=(), partials: int = 0, **meta):
    """Launch a strip backward kernel — ``programs`` channel blocks of ``block_c`` × strips of each
    sequence; ``size`` its channel-count argument, ``extra`` its own arguments after the strip's,
    then ``partials`` more fp32 buffers of one partial row [C] per program (a kernel's own
    per-channel sums), ``meta`` its block sizes — and sum its partial rows: (dx, dw, db, then
    the ``partials`` sums)."""
    b, t, c = x.shape
    k = w.shape[1]
    splits, strip = _strips(b, t, programs * block_c, x.device, block_c)
    dx = torch.empty_like(x)
    dw_part = torch.empty(b * splits, c, k, dtype=torch.float32, device=x.device)
    db_part = dw_part  # a placeholder, not written, without a bias
    if bias is not None:
        db_part = torch.empty(b * splits, c, dtype=torch.float32, device=x.device)
    own = [torch.empty(b * splits, c, dtype=torch.float32, device=x.device)
           for _ in range(partials)]
    kernel[(programs, b * splits)](x, w, bias if bias is not None else w, grad, dx, dw_part,
                                   db_part, t, size, splits, strip, *extra, *own, K=k,
                                   HAS_BIAS=bias is not None, ACT=act,
                                   RESIDUAL=residual, BT=BWD_BLOCK_T, num_warps=BWD_WARPS, **meta)
    db = db_part.sum(0) if bias is not None else x.new_zeros(c, dtype=torch.float32)
    return dx, dw_part.sum(0).to(w.dtype), db, *(part.sum(0) for part in own)


@canon_conv_bwd.register_fake
def _(dy, x, w, bias, act, residual):
    return torch.empty_like(x), torch.empty_like(w), x.new_empty(w.shape[0], dtype=torch.float32)


def _setup(ctx, inputs, output) -> None:
    x, w, bias, act, residual = inputs
    ctx.save_for_backward(x, w, bias)
    ctx.act, ctx.residual = act, residual


def _autograd(bwd_op):
    """The autograd formula of a Canon op from its backward op (gradients of x, w, bias)."""
    def backward(ctx, grad):
        x, w, bias = ctx.saved_tensors
        dx, dw, db = bwd_op(grad.contiguous(), x, w, bias, ctx.act, ctx.residual)
        return dx, dw, (db.to(bias.dtype) if bias is not None else None), None, None

    return backward


canon_conv.register_autograd(_autograd(canon_conv_bwd), setup_context=_setup)


# -- Canon-D fused with SwiGLU ------------------------------------------------------------------
# h = silu(y[..., :H]) · y[..., H:] with y = Canon(u), u = [gate ‖ up]: [B, T, 2H] -> [B, T, H].
# The forward never writes y; the backward recomputes it from u (with the K-1 rows before) and
# goes from dh to du, dw, db in one pass, so y is neither stored for the backward nor read back.
# One program covers the same channel block of both halves, hence narrower blocks. Forward: 16
# rows × 64 channels on 2 warps, the fastest of 27 tiles at both shapes of docs/bench/
# 2026-11-25-h200-rope-rewrite/ (mini: 126 µs against 203 with the plain kernel's tile, 12L768D:
# 189 against 306). Backward: 32 channels, the best width at both (−2 % and −9 % against 64);
# 16-row chunks would gain 1–5 % more, but the chunk height is the plain backward's too.
GLU_BLOCK_T, GLU_BLOCK_C, GLU_FWD_WARPS = 16, 64, 2
GLU_BWD_BLOCK_C = 32


@triton.jit
def _glu_fwd_kernel(U, W, Bias, H_out, T, H, K: tl.constexpr, HAS_BIAS: tl.constexpr,
                    ACT: tl.constexpr, RESIDUAL: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr):
    pid_t, pid_c, b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    t = pid_t * BT + tl.arange(0, BT)
    c = pid_c * BC + tl.arange(0, BC)
    C = 2 * H
    zg, ug = _conv_tile(U, W, Bias, b.to(tl.int64) * T * C, t, c, c < H, T, C, K, HAS_BIAS, BT, BC)
    zu, uu = _conv_tile(U, W, Bias, b.to(tl.int64) * T * C, t, c + H, c < H, T, C, K,
                        HAS_BIAS, BT, BC)
    yg = _finish_tile(zg, ug, ACT, RESIDUAL)
    yu = _finish_tile(zu, uu, ACT, RESIDUAL)
    h = yg * tl.sigmoid(yg) * yu
    m = (t < T)[:, None] & (c < H)[None, :]
    tl.store(H_out + b.to(tl.int64) * T * H + t[:, None] * H + c[None, :],
             h.to(H_out.dtype.element_ty), mask=m)


@triton.jit
def _glu_dy(DH, xs, w, bias, d, t, c, hbase, T, H, K: tl.constexpr, HAS_BIAS: tl.constexpr,
            ACT: tl.constexpr, RESIDUAL: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr):
    """For both halves at rows t+d: (dz_gate, dz_up, dy_gate, dy_up), from dh and y recomputed
    from u. xs: the (gate tiles, up tiles) of u at rows t-(K-1) .. t+K-1."""
    xg, xu = xs
    wg, wu = w
    zg = tl.zeros((BT, BC), dtype=tl.float32)
    zu = tl.zeros((BT, BC), dtype=tl.float32)
    for j in tl.static_range(K):
        zg += xg[d + j] * wg[j][None, :]
        zu += xu[d + j] * wu[j][None, :]
    if HAS_BIAS:
        zg += bias[0][None, :]
        zu += bias[1][None, :]
    yg = _finish_tile(zg, xg[d + K - 1], ACT, RESIDUAL)
    yu = _finish_tile(zu, xu[d + K - 1], ACT, RESIDUAL)
    r = t + d
    m = (r < T)[:, None] & (c < H)[None, :]
    dh = tl.load(DH + hbase + r[:, None] * H + c[None, :], mask=m, other=0.0).to(tl.float32)
    dyg = dh * yu * _silu_grad(yg)
    dyu = dh * yg * tl.sigmoid(yg)
    dzg = dyg * _silu_grad(zg) if ACT else dyg
    dzu = dyu * _silu_grad(zu) if ACT else dyu
    return dzg, dzu, dyg, dyu


@triton.jit
def _glu_bwd_kernel(U, W, Bias, DH, DU, DW, DB, T, H, SPLITS, STRIP, K: tl.constexpr,
                    HAS_BIAS: tl.constexpr, ACT: tl.constexpr, RESIDUAL: tl.constexpr,
                    BT: tl.constexpr, BC: tl.constexpr, STAGES: tl.constexpr):
    """One program: channels c of both halves of sequence b, rows [s·STRIP, (s+1)·STRIP) in
    chunks of BT — :func:`_bwd_kernel`'s scheme, with dy at rows t..t+K-1 recomputed from dh and
    u instead of read. Partial rows of dw / db: [program, 2H, K] / [program, 2H]."""
    pid_c, pid = tl.program_id(0), tl.program_id(1)
    b, s = pid // SPLITS, pid % SPLITS
    c = pid_c * BC + tl.arange(0, BC)
    cm = c < H
    C = 2 * H
    base = b.to(tl.int64) * T * C
    hbase = b.to(tl.int64) * T * H
    wg, acc_g, acc_bg, bg = _taps(W, Bias, c, cm, K, HAS_BIAS, BT, BC)  # gate half
    wu, acc_u, acc_bu, bu = _taps(W, Bias, c + H, cm, K, HAS_BIAS, BT, BC)  # up half
    start = s * STRIP
    for t0 in tl.range(start, tl.minimum(start + STRIP, T), BT, num_stages=STAGES):
        t = t0 + tl.arange(0, BT)
        xg = _rows(U, base, t, c, cm, T, C, 2 * K - 1, K)  # u at rows t-(K-1) .. t+K-1
        xu = _rows(U, base, t, c + H, cm, T, C, 2 * K - 1, K)
        dzg = ()
        dzu = ()
        dyg = tl.zeros((BT, BC), dtype=tl.float32)
        dyu = tl.zeros((BT, BC), dtype=tl.float32)
        for d in tl.static_range(K):
            g0, u0, g1, u1 = _glu_dy(DH, (xg, xu), (wg, wu), (bg, bu), d, t, c, hbase, T, H, K,
                                     HAS_BIAS, ACT, RESIDUAL, BT, BC)
            dzg = dzg + (g0,)
            dzu = dzu + (u0,)
            if d == 0:
                dyg = g1  # dy at the chunk's own rows, for the residual
                dyu = u1
        dxg, acc_g, acc_bg = _chunk(dyg, dzg, xg, wg, acc_g, acc_bg, K, HAS_BIAS, RESIDUAL, BT, BC)
        dxu, acc_u, acc_bu = _chunk(dyu, dzu, xu, wu, acc_u, acc_bu, K, HAS_BIAS, RESIDUAL, BT, BC)
        m = (t < T)[:, None] & cm[None, :]
        tl.store(DU + base + t[:, None] * C + c[None, :], dxg.to(DU.dtype.element_ty), mask=m)
        tl.store(DU + base + t[:, None] * C + (c + H)[None, :], dxu.to(DU.dtype.element_ty), mask=m)
    part = pid.to(tl.int64) * C  # this program's partial row
    _partials(DW, DB, part, c, cm, acc_g, acc_bg, K, HAS_BIAS)
    _partials(DW, DB, part, c + H, cm, acc_u, acc_bu, K, HAS_BIAS)


@torch.library.custom_op("playground::canon_glu", mutates_args=())
def canon_glu(u: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None, act: bool,
              residual: bool) -> torch.Tensor:
    """u: [B, T, 2H] contiguous (gate ‖ up); w: [2H, K]; bias: [2H] or None. Returns
    silu(y_gate) · y_up, [B, T, H], where y = canon_conv(u, w, bias, act, residual)."""
    b, t, c = u.shape
    h = c // 2
    out = u.new_empty(b, t, h)
    grid = (triton.cdiv(t, GLU_BLOCK_T), triton.cdiv(h, GLU_BLOCK_C), b)
    _glu_fwd_kernel[grid](u, w, bias if bias is not None else w, out, t, h, K=w.shape[1],
                          HAS_BIAS=bias is not None, ACT=act, RESIDUAL=residual,
                          BT=GLU_BLOCK_T, BC=GLU_BLOCK_C, num_warps=GLU_FWD_WARPS)
    return out


@canon_glu.register_fake
def _(u, w, bias, act, residual):
    return u.new_empty(*u.shape[:-1], u.shape[-1] // 2)


@torch.library.custom_op("playground::canon_glu_bwd", mutates_args=())
def canon_glu_bwd(dh: torch.Tensor, u: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None,
                  act: bool, residual: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients (du, dw, db) of :func:`canon_glu` (db is zeros when there is no bias)."""
    h = u.shape[2] // 2
    return _strip_backward(_glu_bwd_kernel, dh, u, w, bias, act, residual,
                           triton.cdiv(h, GLU_BWD_BLOCK_C), h,
                           GLU_BWD_BLOCK_C, BC=GLU_BWD_BLOCK_C, STAGES=FUSED_BWD_STAGES)


@canon_glu_bwd.register_fake
def _(dh, u, w, bias, act, residual):
    return torch.empty_like(u), torch.empty_like(w), u.new_empty(w.shape[0], dtype=torch.float32)


canon_glu.register_autograd(_autograd(canon_glu_bwd), setup_context=_setup)


# -- Canon-B fused with the q/k/v split and RoPE -----------------------------------------------
# u = x·W_qkv: [B, T, 3d] (q ‖ k ‖ v, each H heads of hd). out[s, b, h] = rope(Canon(u))[b, :, s·d +
# h·hd : … + hd] for s = q, k, v: [3, B, H, T, hd], the layout attention reads, written once. RoPE
# (GPT-NeoX halves, angle t·f_i, f = inv_freq) on the first ROT dims of the first ROT_HEADS heads of
# q and k: lanes j and ROT/2 + j (j < ROT/2) turn together, out_j = y_j cos − y_{ROT/2+j} sin,
# out_{ROT/2+j} = y_{ROT/2+j} cos + y_j sin. A program takes a head as three contiguous groups of
# lanes — the two halves of the turning dims, whose pairs it holds side by side in registers, and
# the dims past ROT — so every load and store is contiguous (vectorised) and each lane's Canon
# output is computed once; a head that does not turn (v, heads past ROT_HEADS) takes cos 1, sin 0.
# The backward un-rotates the incoming gradient (dy_j = g_j cos + g_{ROT/2+j} sin, dy_{ROT/2+j} =
# g_{ROT/2+j} cos − g_j sin) and runs the Canon backward on it, so neither Canon's output nor the
# rotated copy is stored.
@triton.jit
def _rope_coeffs(Cos, Sin, t, j, T, HALF: tl.constexpr, turns):
    """cos and sin [BT, BH] at rows t of the pairs j (< HALF) from the [T, HALF] tables; 1 and 0
    where the head does not turn (``turns`` false)."""
    m = ((t < T)[:, None] & (j < HALF)[None, :]) & turns
    at = t[:, None] * HALF + j[None, :]
    return tl.load(Cos + at, mask=m, other=1.0), tl.load(Sin + at, mask=m, other=0.0)


@triton.jit
def _rope_fwd_kernel(U, W, Bias, Cos, Sin, OUT, T, NH, ROT_HEADS, K: tl.constexpr,
                     HAS_BIAS: tl.constexpr,
                     ACT: tl.constexpr, RESIDUAL: tl.constexpr, HD: tl.constexpr, ROT: tl.constexpr,
                     BT: tl.constexpr, BH: tl.constexpr, BR: tl.constexpr):
    """One program: rows t of head h of section s (q, k, v) of sequence b. BH ≥ ROT/2 and
    BR ≥ HD − ROT: the power-of-two blocks of the two lane groups."""
    pid_t, pid_h, b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    s, h = pid_h // NH, pid_h % NH
    C = 3 * NH * HD
    t = pid_t * BT + tl.arange(0, BT)
    head = s * NH * HD + h * HD
    base = b.to(tl.int64) * T * C
    out = OUT + ((s * tl.num_programs(2) + b).to(tl.int64) * NH + h) * T * HD + t[:, None] * HD
    if ROT > 0:  # the turning pairs: lanes j and ROT/2 + j
        j = tl.arange(0, BH)
        jm = j < ROT // 2
        z1, x1 = _conv_tile(U, W, Bias, base, t, head + j, jm, T, C, K, HAS_BIAS, BT, BH)
        z2, x2 = _conv_tile(U, W, Bias, base, t, head + ROT // 2 + j, jm, T, C, K, HAS_BIAS, BT, BH)
        y1 = _finish_tile(z1, x1, ACT, RESIDUAL)
        y2 = _finish_tile(z2, x2, ACT, RESIDUAL)
        cos, sin = _rope_coeffs(Cos, Sin, t, j, T, ROT // 2, (s < 2) & (h < ROT_HEADS))
        m = (t < T)[:, None] & jm[None, :]
        tl.store(out + j[None, :], (y1 * cos - y2 * sin).to(OUT.dtype.element_ty), mask=m)
        tl.store(out + ROT // 2 + j[None, :],
                 (y2 * cos + y1 * sin).to(OUT.dtype.element_ty), mask=m)
    if ROT < HD:  # the lanes past the turning dims
        r = ROT + tl.arange(0, BR)
        rm = r < HD
        z, x = _conv_tile(U, W, Bias, base, t, head + r, rm, T, C, K, HAS_BIAS, BT, BR)
        tl.store(out + r[None, :], _finish_tile(z, x, ACT, RESIDUAL).to(OUT.dtype.element_ty),
                 mask=(t < T)[:, None] & rm[None, :])


@triton.jit
def _pair_strip(X, W, Bias, DY, DX, DW, DB, Cos, Sin, turns, base, head, gbase, part, start, end, T,
                C, HD: tl.constexpr, HALF: tl.constexpr, K: tl.constexpr, HAS_BIAS: tl.constexpr,
                ACT: tl.constexpr, RESIDUAL: tl.constexpr, BT: tl.constexpr, BH: tl.constexpr,
                STAGES: tl.constexpr):
    """:func:`_strip` for a head's turning pairs, lanes j and HALF + j at once: dy of each from
    the rotated gradient at DY + gbase + row·HD + lane (un-rotated where ``turns``)."""
    j = tl.arange(0, BH)
    jm = j < HALF
    c1 = head + j
    c2 = head + HALF + j
    w1, acc1, accb1, bias1 = _taps(W, Bias, c1, jm, K, HAS_BIAS, BT, BH)
    w2, acc2, accb2, bias2 = _taps(W, Bias, c2, jm, K, HAS_BIAS, BT, BH)
    for t0 in tl.range(start, end, BT, num_stages=STAGES):
        t = t0 + tl.arange(0, BT)
        xs1 = _rows(X, base, t, c1, jm, T, C, 2 * K - 1 if ACT else K, K)
        xs2 = _rows(X, base, t, c2, jm, T, C, 2 * K - 1 if ACT else K, K)
        dy1 = tl.zeros((BT, BH), dtype=tl.float32)
        dy2 = tl.zeros((BT, BH), dtype=tl.float32)
        dz1 = ()
        dz2 = ()
        for d in tl.static_range(K):
            r = t + d
            m = (r < T)[:, None] & jm[None, :]
            g1 = tl.load(DY + gbase + r[:, None] * HD + j[None, :], mask=m,
                         other=0.0).to(tl.float32)
            g2 = tl.load(DY + gbase + r[:, None] * HD + HALF + j[None, :], mask=m,
                         other=0.0).to(tl.float32)
            cos, sin = _rope_coeffs(Cos, Sin, r, j, T, HALF, turns)
            e1 = g1 * cos + g2 * sin
            e2 = g2 * cos - g1 * sin
            if d == 0:
                dy1 = e1
                dy2 = e2
            dz1 = dz1 + (_act_grad(e1, xs1, w1, bias1, d, K, HAS_BIAS, ACT, BT, BH),)
            dz2 = dz2 + (_act_grad(e2, xs2, w2, bias2, d, K, HAS_BIAS, ACT, BT, BH),)
        dx1, acc1, accb1 = _chunk(dy1, dz1, xs1, w1, acc1, accb1, K, HAS_BIAS, RESIDUAL, BT, BH)
        dx2, acc2, accb2 = _chunk(dy2, dz2, xs2, w2, acc2, accb2, K, HAS_BIAS, RESIDUAL, BT, BH)
        m = (t < T)[:, None] & jm[None, :]
        tl.store(DX + base + t[:, None] * C + c1[None, :], dx1.to(DX.dtype.element_ty), mask=m)
        tl.store(DX + base + t[:, None] * C + c2[None, :], dx2.to(DX.dtype.element_ty), mask=m)
    _partials(DW, DB, part, c1, jm, acc1, accb1, K, HAS_BIAS)
    _partials(DW, DB, part, c2, jm, acc2, accb2, K, HAS_BIAS)


@triton.jit
def _rope_bwd_kernel(U, W, Bias, DOUT, DU, DW, DB, T, NH, SPLITS, STRIP, Cos, Sin, ROT_HEADS, B,
                     K: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr,
                     RESIDUAL: tl.constexpr, HD: tl.constexpr, ROT: tl.constexpr, BT: tl.constexpr,
                     BH: tl.constexpr, BR: tl.constexpr, STAGES: tl.constexpr):
    """One program: head h of section s of sequence b, rows [s·STRIP, (s+1)·STRIP) — the turning
    pairs (:func:`_pair_strip`), then the lanes past them (:func:`_strip`), dy read from the
    [3, B, H, T, hd] gradient. Partial rows of dw / db: [program, 3d, K] / [program, 3d]."""
    pid_h, pid = tl.program_id(0), tl.program_id(1)
    b, sp = pid // SPLITS, pid % SPLITS
    s, h = pid_h // NH, pid_h % NH
    C = 3 * NH * HD
    head = s * NH * HD + h * HD
    base = b.to(tl.int64) * T * C
    gbase = ((s * B + b).to(tl.int64) * NH + h) * T * HD
    part = pid.to(tl.int64) * C
    start = sp * STRIP
    end = tl.minimum(start + STRIP, T)
    if ROT > 0:
        _pair_strip(U, W, Bias, DOUT, DU, DW, DB, Cos, Sin, (s < 2) & (h < ROT_HEADS), base, head,
                    gbase, part, start, end, T, C, HD, ROT // 2, K, HAS_BIAS, ACT, RESIDUAL,
                    BT, BH, STAGES)
    if ROT < HD:
        r = ROT + tl.arange(0, BR)
        _strip(U, W, Bias, DOUT, DU, DW, DB, base, head + r, r < HD, gbase, r, HD, part, start,
               end, T, C, K, HAS_BIAS, ACT, RESIDUAL, BT, BR, STAGES)


# The rope forward's tile: its lane groups are half a head or less wide, so taller tiles than the
# plain kernel's, on fewer warps, keep many elements per thread (wide loads): 64 rows on 2 warps
# were the fastest of 9 tiles for full RoPE at both shapes of
# docs/bench/2026-11-25-h200-rope-rewrite/ (82 µs against 110 at 32 rows on 4 warps, mini; 122
# against 163, 12L768D) and even for RoPE¼.
ROPE_BLOCK_T, ROPE_FWD_WARPS = 64, 2


def _rope_blocks(u: torch.Tensor, n_heads: int, rot: int) -> dict:
    """The rope kernels' lane blocks for head width hd and ``rot`` turning dims: HD, ROT, and
    the power-of-two blocks BH (≥ rot/2) and BR (≥ hd − rot)."""
    hd = u.shape[2] // (3 * n_heads)
    return {"HD": hd, "ROT": rot, "BH": triton.next_power_of_2(max(rot // 2, 1)),
            "BR": triton.next_power_of_2(max(hd - rot, 1))}


@torch.library.custom_op("playground::canon_rope", mutates_args=())
def canon_rope(u: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None, cos: torch.Tensor,
               sin: torch.Tensor,
               act: bool, residual: bool, n_heads: int, rot_heads: int) -> torch.Tensor:
    """u: [B, T, 3d] contiguous (q ‖ k ‖ v); w: [3d, K]; cos, sin: [T, r/2] fp32, the angles of
    positions 0..T-1 (RoPE on the first r dims of the first ``rot_heads`` heads of q and k; r = 0:
    none). Returns [3, B, H, T, hd]: q, k, v of canon_conv(u, w, bias, act, residual),
    q and k rotated."""
    b, t, c = u.shape
    blocks = _rope_blocks(u, n_heads, 2 * cos.shape[1])
    out = u.new_empty(3, b, n_heads, t, blocks["HD"])
    grid = (triton.cdiv(t, ROPE_BLOCK_T), 3 * n_heads, b)
    _rope_fwd_kernel[grid](u, w, bias if bias is not None else w, cos, sin, out, t,
                           n_heads, rot_heads,
                           K=w.shape[1], HAS_BIAS=bias is not None, ACT=act, RESIDUAL=residual,
                           BT=ROPE_BLOCK_T, num_warps=ROPE_FWD_WARPS, **blocks)
    return out


@canon_rope.register_fake
def _(u, w, bias, cos, sin, act, residual, n_heads, rot_heads):
    return u.new_empty(3, u.shape[0], n_heads, u.shape[1], u.shape[2] // (3 * n_heads))


@torch.library.custom_op("playground::canon_rope_bwd", mutates_args=())
def canon_rope_bwd(dout: torch.Tensor, u: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None,
                   cos: torch.Tensor, sin: torch.Tensor, act: bool, residual: bool, n_heads: int,
                   rot_heads: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients (du, dw, db) of :func:`canon_rope` (db is zeros when there is no bias)."""
    blocks = _rope_blocks(u, n_heads, 2 * cos.shape[1])
    return _strip_backward(_rope_bwd_kernel, dout, u, w, bias, act, residual, 3 * n_heads, n_heads,
                           triton.next_power_of_2(blocks["HD"]),
                           extra=(cos, sin, rot_heads, u.shape[0]),
                           STAGES=FUSED_BWD_STAGES, **blocks)


@canon_rope_bwd.register_fake
def _(dout, u, w, bias, cos, sin, act, residual, n_heads, rot_heads):
    return torch.empty_like(u), torch.empty_like(w), u.new_empty(w.shape[0], dtype=torch.float32)


def _rope_setup(ctx, inputs, output) -> None:
    u, w, bias, cos, sin, act, residual, n_heads, rot_heads = inputs
    ctx.save_for_backward(u, w, bias, cos, sin)
    ctx.args = act, residual, n_heads, rot_heads


def _rope_backward(ctx, dout):
    u, w, bias, cos, sin = ctx.saved_tensors
    du, dw, db = canon_rope_bwd(dout.contiguous(), u, w, bias, cos, sin, *ctx.args)
    return du, dw, (db.to(bias.dtype) if bias is not None else None), *([None] * 6)


canon_rope.register_autograd(_rope_backward, setup_context=_rope_setup)
