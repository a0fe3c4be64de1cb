"""Mamba2's output norm in one Triton kernel each way (``playground::gated_norm``):

    out = RMSNorm((y + D·x) · silu(z)) · w

over the inner width C = H·P of each token: y the SSD's output, D·x its skip (D one value per
head of P channels), z the gate. Inductor splits this forward into a reduction and a pointwise
pass and reads each row several times in its backward (≈ 16 ms of a 12L768D step on an H200,
docs/PERFORMANCE.md). Here a program holds whole rows in registers: the forward reads y, x and z
once and writes out; the backward reads them and dout once, recomputes the row's scale, and
writes dy, dz and the skip's share of dx, with dw and dD summed over the program's rows into one
partial row each (summed after, in a fixed order: deterministic).

Inputs may be column slices of a wider tensor (z and x are slices of Mamba2's projection): rows
are read at their own stride. Tested equal to the PyTorch composition (``tests/test_kernels.py``).
Opt-in (``model.mixer.norm_backend=triton``): on an H200 its kernels took about 10 ms of a
12L768D Mamba2 step where inductor's took about 17, yet side-by-side steps were not faster
(docs/PERFORMANCE.md, 2026-11-26).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from playground.kernels.canon_triton import _num_sms

FWD_WARPS, BWD_WARPS = 4, 8
BWD_PROGRAMS_PER_SM = 2  # the backward: this many programs per multiprocessor, each a run of rows


@triton.jit
def _row(Y, X, Z, D, row, SY, SX, SZ, c, m, P):
    """One row: (y + D·x, silu's sigmoid and z) in fp32; zeros where ``m`` is false."""
    y = tl.load(Y + row * SY + c, mask=m, other=0.0).to(tl.float32)
    x = tl.load(X + row * SX + c, mask=m, other=0.0).to(tl.float32)
    z = tl.load(Z + row * SZ + c, mask=m, other=0.0).to(tl.float32)
    d = tl.load(D + c // P, mask=m, other=0.0).to(tl.float32)
    return y + x * d, x, z, tl.sigmoid(z), d


@triton.jit
def _fwd_kernel(Y, X, Z, D, W, OUT, SY, SX, SZ, C, P, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    c = tl.arange(0, BLOCK)
    m = c < C
    s, _, z, sig, _ = _row(Y, X, Z, D, row, SY, SX, SZ, c, m, P)
    u = s * z * sig
    r = 1.0 / tl.sqrt(tl.sum(u * u, axis=0) / C + eps)
    w = tl.load(W + c, mask=m, other=0.0).to(tl.float32)
    tl.store(OUT + row * C + c, (u * r * w).to(OUT.dtype.element_ty), mask=m)


@triton.jit
def _bwd_kernel(Y, X, Z, D, W, DOUT, DY, DX, DZ, DW, DD, SY, SX, SZ, C, P, ROWS, PER, eps,
                BLOCK: tl.constexpr):
    """Rows [pid·PER, (pid+1)·PER). With u = s·silu(z), r = (mean(u²) + eps)^-½, a = dout·w:
    du = r·a − u·r³·mean(u·a); ds = du·silu(z) (= dy; dx gets ds·D); dz = du·s·silu'(z);
    dw += dout·u·r and dD += ds·x, per channel."""
    pid = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    m = c < C
    w = tl.load(W + c, mask=m, other=0.0).to(tl.float32)
    acc_w = tl.zeros((BLOCK,), dtype=tl.float32)
    acc_d = tl.zeros((BLOCK,), dtype=tl.float32)
    start = (pid * PER).to(tl.int64)
    for row in range(start, tl.minimum(start + PER, ROWS)):
        s, x, z, sig, d = _row(Y, X, Z, D, row, SY, SX, SZ, c, m, P)
        gate = z * sig
        u = s * gate
        r = 1.0 / tl.sqrt(tl.sum(u * u, axis=0) / C + eps)
        g = tl.load(DOUT + row * C + c, mask=m, other=0.0).to(tl.float32)
        a = g * w
        du = r * a - u * (r * r * r) * (tl.sum(u * a, axis=0) / C)
        ds = du * gate
        acc_w += g * u * r
        acc_d += ds * x
        tl.store(DY + row * C + c, ds.to(DY.dtype.element_ty), mask=m)
        tl.store(DX + row * C + c, (ds * d).to(DX.dtype.element_ty), mask=m)
        tl.store(DZ + row * C + c,
                 (du * s * sig * (1.0 + z * (1.0 - sig))).to(DZ.dtype.element_ty), mask=m)
    tl.store(DW + pid * C + c, acc_w, mask=m)
    tl.store(DD + pid * C + c, acc_d, mask=m)


def _programs(rows: int, device: torch.device) -> int:
    """How many programs share the backward's rows (each a run of whole rows)."""
    return max(1, min(rows, BWD_PROGRAMS_PER_SM * _num_sms(device)))


def _row_stride(t: torch.Tensor) -> tuple[torch.Tensor, int]:
    """``t`` [B, T, C] as rows at one stride (a column slice of a contiguous tensor already is),
    and that stride."""
    b, n, c = t.shape
    if t.stride(2) != 1 or (b > 1 and t.stride(0) != n * t.stride(1)):
        t = t.contiguous()
    return t, t.stride(1) if n > 1 else (t.stride(0) if b > 1 else c)


def _strides(y, x, z):
    (y, sy), (x, sx), (z, sz) = (_row_stride(v) for v in (y, x, z))
    return y, x, z, sy, sx, sz


@torch.library.custom_op("playground::gated_norm", mutates_args=())
def gated_norm(y: torch.Tensor, x: torch.Tensor, d: torch.Tensor, z: torch.Tensor, w: torch.Tensor,
               eps: float) -> torch.Tensor:
    """y, x, z: [B, T, C] of one dtype (x and z may be column slices); d: [H] with H | C;
    w: [C]. Returns RMSNorm((y + D·x) · silu(z)) · w, contiguous, in y's dtype."""
    b, n, c = y.shape
    y, x, z, sy, sx, sz = _strides(y, x, z)
    out = torch.empty(b, n, c, dtype=y.dtype, device=y.device)
    if b * n:
        _fwd_kernel[(b * n,)](y, x, z, d, w, out, sy, sx, sz, c, c // d.shape[0], eps,
                              BLOCK=triton.next_power_of_2(c), num_warps=FWD_WARPS)
    return out


@gated_norm.register_fake
def _(y, x, d, z, w, eps):
    return torch.empty(y.shape, dtype=y.dtype, device=y.device)


@torch.library.custom_op("playground::gated_norm_bwd", mutates_args=())
def gated_norm_bwd(dout: torch.Tensor, y: torch.Tensor, x: torch.Tensor, d: torch.Tensor,
                   z: torch.Tensor,
                   w: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                                                         torch.Tensor, torch.Tensor]:
    """Gradients (dy, dx, dd, dz, dw) of :func:`gated_norm`; dx is the skip's share only."""
    b, n, c = y.shape
    y, x, z, sy, sx, sz = _strides(y, x, z)
    rows = b * n
    per = triton.cdiv(rows, _programs(rows, y.device)) if rows else 1
    programs = triton.cdiv(rows, per) if rows else 1
    dy, dx, dz = (torch.empty(b, n, c, dtype=v.dtype, device=y.device) for v in (y, x, z))
    dw_part = torch.zeros(programs, c, dtype=torch.float32, device=y.device)
    dd_part = torch.zeros(programs, c, dtype=torch.float32, device=y.device)
    if rows:
        _bwd_kernel[(programs,)](y, x, z, d, w, dout, dy, dx, dz, dw_part, dd_part, sy, sx, sz, c,
                                 c // d.shape[0], rows, per, eps, BLOCK=triton.next_power_of_2(c),
                                 num_warps=BWD_WARPS)
    dd = dd_part.sum(0).view(d.shape[0], -1).sum(1)
    return dy, dx, dd.to(d.dtype), dz, dw_part.sum(0).to(w.dtype)


@gated_norm_bwd.register_fake
def _(dout, y, x, d, z, w, eps):
    new = lambda v: torch.empty(v.shape, dtype=v.dtype, device=v.device)
    return new(y), new(x), torch.empty_like(d), new(z), torch.empty_like(w)


def _setup(ctx, inputs, output) -> None:
    y, x, d, z, w, eps = inputs
    ctx.save_for_backward(y, x, d, z, w)
    ctx.eps = eps


def _backward(ctx, dout):
    y, x, d, z, w = ctx.saved_tensors
    dy, dx, dd, dz, dw = gated_norm_bwd(dout.contiguous(), y, x, d, z, w, ctx.eps)
    return dy, dx, dd, dz, dw, None


gated_norm.register_autograd(_backward, setup_context=_setup)
