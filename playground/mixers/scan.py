"""Pure-PyTorch linear recurrences shared by GLA, Mamba2 and Gated DeltaNet: the references every
fast kernel is tested against.

The mixers run a recurrence on a matrix state ``S`` per head:

- GLA (Yang et al. 2024): ``S_t = diag(exp(g_t)) S_{t-1} + k_t^T v_t``, ``o_t = scale · q_t S_t``
  with a data-dependent log decay ``g_t <= 0`` per key dimension; ``S``: [K, V].
- SSD (Mamba2, Dao & Gu 2024): ``S_t = exp(a_t) S_{t-1} + (dt_t x_t) ⊗ B_t``, ``y_t = S_t C_t``
  with a scalar log decay ``a_t = dt_t · A <= 0`` per head; ``S``: [P, N].
- The gated delta rule (Gated DeltaNet, Yang, Kautz & Hatamizadeh 2024):
  ``S_t = exp(g_t) (I - β_t k_t k_t^T) S_{t-1} + β_t k_t v_t^T``, ``o_t = scale · q_t S_t`` with a
  scalar log decay ``g_t <= 0`` and a write strength ``β_t`` in [0, 1] per head; ``S``: [K, V].
  Not linear in its inputs (the erase term reads the state), so its chunked form solves a small
  triangular system per chunk (below, :func:`gdn_chunked`).

Each has a recurrent form (one step per token; decoding) and a chunked-parallel form (training):
within a chunk of ``chunk`` tokens the output is a masked attention-like product, across chunks
the state is carried by :func:`carry_states`. Exponents are always differences ``b_t - b_s`` with
``t >= s`` of within-chunk cumulative log decays, so they are <= 0 and nothing overflows however
strong the decay; masked entries get ``-inf`` before ``exp`` so their gradients are exactly zero.

Isolated examples (``Seq.segments``): ``resets`` [B, T] marks the first token of each packed
example; the state is dropped before that token's update (``S_t = k_t^T v_t`` there), so no
token sees another example. In the chunked forms this is three masks per chunk: pairs (t, s)
from different segments, the carried-in state for tokens after a reset in the chunk, and the
tokens that do not reach the chunk's last segment.

Memory: the GLA intra-chunk decay is a [B, H, T/C, C, C, K] tensor (its gates differ per key
dimension), so GLA uses small chunks (16); SSD's decay is scalar per head, so its intra-chunk
tensor is [B, H, T/C, C, C] with no state axis and chunks can be large (64); so are the gated
delta rule's (its decay is scalar per head too). Everything is
computed in at least float32 (float64 inputs stay float64), autocast off, outputs cast back.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

LOG_FLOOR = -80.0  # gated delta rule: decays below exp(LOG_FLOOR) count as 0 (_exp_normal)


def _compute_dtype(x: torch.Tensor) -> torch.dtype:
    """float32, or float64 for float64 inputs (the exactness tests)."""
    return torch.promote_types(torch.float32, x.dtype)


def _pad_time(x: torch.Tensor, dim: int, pad: int) -> torch.Tensor:
    """Zero-pad ``pad`` steps at the end of axis ``dim`` (zeros: no input, no decay)."""
    if pad == 0:
        return x
    shape = list(x.shape)
    shape[dim] = pad
    return torch.cat([x, x.new_zeros(shape)], dim=dim)


def carry_states(decay: torch.Tensor, local: torch.Tensor, state: torch.Tensor | None):
    """Chunk-level scan ``S_n = decay_n · S_{n-1} + local_n`` over axis 2.

    decay: broadcastable to ``local`` with the chunk axis at 2; local: [B, H, n, ...] (each chunk's
    own contribution); state: [B, H, ...] before the first chunk (zeros when None).
    Returns (states before each chunk [B, H, n, ...], final state [B, H, ...])."""
    s = local.new_zeros(local[:, :, 0].shape) if state is None else state.to(local.dtype)
    before = []
    for i in range(local.shape[2]):
        before.append(s)
        s = decay[:, :, i] * s + local[:, :, i]
    return torch.stack(before, dim=2), s


def _causal_log_decay(cum: torch.Tensor, apart: torch.Tensor | None) -> torch.Tensor:
    """exp(cum_t - cum_s) for t >= s, 0 above the diagonal and where ``apart`` [..., C, C] is
    True. cum: [..., C, X] (X may be a trailing singleton) -> [..., C, C, X]."""
    c = cum.shape[-2]
    diff = cum[..., :, None, :] - cum[..., None, :, :]  # [..., t, s, X]
    hidden = torch.ones(c, c, dtype=torch.bool, device=cum.device).triu(1)
    if apart is not None:
        hidden = hidden | apart
    return diff.masked_fill(hidden[..., None], float("-inf")).exp()


def _segment_masks(resets: torch.Tensor | None, pad: int, n: int, chunk: int):
    """Per-chunk masks from ``resets`` [B, T]: ``apart`` [B, 1, n, C, C] (pairs in different
    segments), ``alive`` [B, 1, n, C] (no reset yet in the chunk: sees the carried state) and
    ``tail`` [B, 1, n, C] (in the chunk's last segment: reaches the next chunk); None if no
    resets."""
    if resets is None:
        return None, None, None
    seg = _pad_time(resets.long(), 1, pad).unflatten(1, (n, chunk)).cumsum(-1)[:, None]
    apart = seg[..., :, None] != seg[..., None, :]
    return apart, (seg == 0), (seg == seg[..., -1:])


def gla_chunked(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, scale: float,
                chunk: int = 16, state: torch.Tensor | None = None,
                resets: torch.Tensor | None = None):
    """Chunked-parallel GLA. q, k, g: [B, H, T, K]; v: [B, H, T, V]; state: [B, H, K, V] or None;
    resets: [B, T] bool or None. Returns (o [B, H, T, V] in v's dtype, final state [B, H, K, V]
    in float32 or wider)."""
    out_dtype, dt = v.dtype, _compute_dtype(v)
    with torch.autocast(q.device.type, enabled=False):
        t = q.shape[2]
        pad = (-t) % chunk
        n = (t + pad) // chunk
        q, k, v, g = (_pad_time(x.to(dt), 2, pad).unflatten(2, (n, chunk)) for x in (q, k, v, g))
        apart, alive, tail = _segment_masks(resets, pad, n, chunk)
        cum = g.cumsum(-2)  # [B, H, n, C, K] within-chunk cumulative log decay (inclusive)
        decay = _causal_log_decay(cum, apart)  # [B, H, n, C, C, K]
        scores = torch.einsum("bhntk,bhntsk,bhnsk->bhnts", q, decay, k) * scale
        o = scores @ v  # [B, H, n, C, V]
        last = cum[..., -1:, :]  # [B, H, n, 1, K]
        kw = k * (last - cum).exp()  # [B, H, n, C, K]
        carry = last.squeeze(-2).exp()  # [B, H, n, K]
        qw = q * cum.exp()
        if resets is not None:
            kw, qw = kw * tail[..., None], qw * alive[..., None]
            carry = carry * alive[..., -1:]
        before, final = carry_states(carry[..., None], kw.transpose(-1, -2) @ v, state)
        o = o + (qw @ before) * scale
        o = o.flatten(2, 3)[:, :, :t]
    return o.to(out_dtype), final


def gla_recurrent(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
                  scale: float, state: torch.Tensor | None = None,
                  resets: torch.Tensor | None = None):
    """Token-by-token GLA (the decoding form); same arguments and results as :func:`gla_chunked`."""
    out_dtype, dt = v.dtype, _compute_dtype(v)
    with torch.autocast(q.device.type, enabled=False):
        q, k, v, g = (x.to(dt) for x in (q, k, v, g))
        b, h, t, kd = q.shape
        s = q.new_zeros(b, h, kd, v.shape[-1]) if state is None else state.to(dt)
        keep = _keep_state(resets, b, t, dt, q.device)  # [B, T, 1, 1, 1]
        outs = []
        for i in range(t):
            s = (keep[:, i] * g[:, :, i, :, None].exp() * s
                 + k[:, :, i, :, None] * v[:, :, i, None, :])
            outs.append((q[:, :, i, None, :] @ s).squeeze(-2) * scale)
        o = torch.stack(outs, dim=2)
    return o.to(out_dtype), s


def ssd_chunked(x: torch.Tensor, dt: torch.Tensor, a: torch.Tensor, bm: torch.Tensor,
                cm: torch.Tensor, chunk: int = 64, state: torch.Tensor | None = None,
                resets: torch.Tensor | None = None):
    """Chunked SSD (Mamba2's state-space dual form), one group of B/C shared by all heads.

    x: [B, T, H, P]; dt: [B, T, H] (after softplus); a: [H] (negative); bm, cm: [B, T, N];
    state: [B, H, P, N] or None; resets: [B, T] bool or None. Returns (y [B, T, H, P] in x's
    dtype, final state [B, H, P, N]). Largest intermediates: [B, H, T/C, C, C] decays and
    [B, H, T/C, P, N] chunk states."""
    out_dtype, ct = x.dtype, _compute_dtype(x)
    with torch.autocast(x.device.type, enabled=False):
        t = x.shape[1]
        pad = (-t) % chunk
        n = (t + pad) // chunk
        xdt = (x.to(ct) * dt.to(ct)[..., None])  # [B, T, H, P]
        la = dt.to(ct) * a.to(ct)  # [B, T, H] log decay per step
        xdt, la, bm, cm = (_pad_time(z, 1, pad).unflatten(1, (n, chunk))
                           for z in (xdt, la, bm.to(ct), cm.to(ct)))
        apart, alive, tail = _segment_masks(resets, pad, n, chunk)
        cum = la.permute(0, 3, 1, 2).cumsum(-1)  # [B, H, n, C]
        decay = _causal_log_decay(cum[..., None], apart).squeeze(-1)  # [B, H, n, C, C]
        cb = cm @ bm.transpose(-1, -2)  # [B, n, C, C] shared by all heads
        y = torch.einsum("bnts,bhnts,bnshp->bnthp", cb, decay, xdt)
        w = (cum[..., -1:] - cum).exp()  # [B, H, n, C] decay from each step to the chunk end
        carry, seen = cum[..., -1].exp(), cum.exp()  # [B, H, n], [B, H, n, C]
        if resets is not None:
            w, seen, carry = w * tail, seen * alive, carry * alive[..., -1]
        local = torch.einsum("bhns,bnshp,bnsk->bhnpk", w, xdt, bm)  # [B, H, n, P, N]
        before, final = carry_states(carry[..., None, None], local, state)
        y = y + torch.einsum("bntk,bhnpk,bhnt->bnthp", cm, before, seen)
        y = y.flatten(1, 2)[:, :t]
    return y.to(out_dtype), final


def ssd_recurrent(x: torch.Tensor, dt: torch.Tensor, a: torch.Tensor, bm: torch.Tensor,
                  cm: torch.Tensor, state: torch.Tensor | None = None,
                  resets: torch.Tensor | None = None):
    """Token-by-token SSD (the decoding form); same arguments and results as :func:`ssd_chunked`."""
    out_dtype, ct = x.dtype, _compute_dtype(x)
    with torch.autocast(x.device.type, enabled=False):
        x, dt, a, bm, cm = (z.to(ct) for z in (x, dt, a, bm, cm))
        b, t, h, p = x.shape
        s = x.new_zeros(b, h, p, bm.shape[-1]) if state is None else state.to(ct)
        keep = _keep_state(resets, b, t, ct, x.device)  # [B, T, 1, 1, 1]
        outs = []
        for i in range(t):
            decay = keep[:, i] * (dt[:, i] * a).exp()[..., None, None]  # [B, H, 1, 1]
            s = decay * s + (dt[:, i, :, None] * x[:, i])[..., None] * bm[:, i, None, None, :]
            outs.append(s @ cm[:, i, None, :, None])  # [B, H, P, 1]
        y = torch.stack(outs, dim=1).squeeze(-1)  # [B, T, H, P]
    return y.to(out_dtype), s


def gdn_chunked(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
                beta: torch.Tensor, scale: float, chunk: int = 64,
                state: torch.Tensor | None = None, resets: torch.Tensor | None = None):
    """Chunked gated delta rule. q, k: [B, H, T, K] (k L2-normalised by the caller); v:
    [B, H, T, V]; g (log decay <= 0), beta: [B, H, T]; state: [B, H, K, V] or None; resets:
    [B, T] bool or None. Returns (o [B, H, T, V] in v's dtype, final state [B, H, K, V] in
    float32 or wider).

    Why a solve: with ``γ_t = exp(Σ_{r<=t} g_r)`` inside a chunk that starts from ``S_0``, the
    update is ``S_t = γ_t S_0 + Σ_{s<=t} (γ_t/γ_s) k_s u_s^T`` with the written values
    ``u_t = β_t (v_t - γ_t S_0^T k_t - Σ_{s<t} (γ_t/γ_s)(k_t·k_s) u_s)``: a unit lower-triangular
    system ``(I + A) U = diag(β)(V - diag(γ) K S_0)``. Its solution is ``U = Ũ - W S_0`` with
    ``Ũ, W`` from one triangular solve per chunk (all chunks at once); only the cheap
    ``S_0``-dependent products run chunk after chunk."""
    out_dtype, dt = v.dtype, _compute_dtype(v)
    with torch.autocast(q.device.type, enabled=False):
        t, kd = q.shape[2], q.shape[-1]
        pad = (-t) % chunk  # padded steps: g = 0 (no decay), beta = 0 (no write)
        n = (t + pad) // chunk
        q, k, v = (_pad_time(x.to(dt), 2, pad).unflatten(2, (n, chunk)) for x in (q, k, v))
        g, beta = (_pad_time(x.to(dt), 2, pad).unflatten(2, (n, chunk)) for x in (g, beta))
        apart, alive, tail = _segment_masks(resets, pad, n, chunk)
        cum = g.cumsum(-1)  # [B, H, n, C] within-chunk cumulative log decay (inclusive)
        diff = cum[..., :, None] - cum[..., None, :]  # [B, H, n, t, s]
        hidden = torch.ones(chunk, chunk, dtype=torch.bool, device=q.device).triu(1)
        decay = _exp_normal(diff, hidden if apart is None else hidden | apart)  # γ_t/γ_s, t >= s
        seen = _exp_normal(cum)  # [B, H, n, C] γ_t: S_0's decay up to t
        reach = _exp_normal(cum[..., -1:] - cum)  # [B, H, n, C] decay from t to the chunk end
        carry = _exp_normal(cum[..., -1])  # [B, H, n]
        if resets is not None:
            seen, reach, carry = seen * alive, reach * tail, carry * alive[..., -1]
        w, u0 = _gdn_solve(k, v, beta, seen, decay)  # [B, H, n, C, K], [B, H, n, C, V]
        scores = (q @ k.transpose(-1, -2)) * decay * scale  # [B, H, n, C, C], zero above diagonal
        qs = q * (seen * scale)[..., None]  # [B, H, n, C, K]
        kr = (k * reach[..., None]).transpose(-1, -2)  # [B, H, n, K, C]
        s = q.new_zeros(*q.shape[:2], kd, v.shape[-1]) if state is None else state.to(dt)
        outs = []
        for i in range(n):  # [B, H, K, V] state carried chunk to chunk
            u = u0[:, :, i] - w[:, :, i] @ s  # [B, H, C, V] the values actually written
            outs.append(qs[:, :, i] @ s + scores[:, :, i] @ u)
            s = carry[:, :, i, None, None] * s + kr[:, :, i] @ u
        o = torch.stack(outs, dim=2).flatten(2, 3)[:, :, :t]
    return o.to(out_dtype), s


def _exp_normal(x: torch.Tensor, hidden: torch.Tensor | None = None) -> torch.Tensor:
    """exp(x) with exact zeros where ``hidden`` and where x < ``LOG_FLOOR``: decays below e^-80
    (1.8e-35, a subnormal-prone range in float32) are dropped rather than carried as subnormal
    numbers, which make the CPU's triangular solve and products several times slower."""
    drop = x < LOG_FLOOR
    return x.masked_fill(drop if hidden is None else drop | hidden, float("-inf")).exp()


def _gdn_solve(k, v, beta, seen, decay):
    """Each chunk's ``W = (I + A)^-1 diag(β γ) K`` and ``Ũ = (I + A)^-1 diag(β) V`` with
    ``A[t, s] = β_t (γ_t/γ_s) k_t·k_s`` for s < t (0 across segments, through ``decay``).
    k: [B, H, n, C, K]; v: [B, H, n, C, V]; beta, seen: [B, H, n, C]; decay: [B, H, n, C, C]."""
    c, kd = k.shape[-2], k.shape[-1]
    strict = torch.ones(c, c, dtype=torch.bool, device=k.device).tril(-1)
    a = (k @ k.transpose(-1, -2)) * decay * beta[..., None] * strict  # [B, H, n, C, C]
    eye = torch.eye(c, dtype=k.dtype, device=k.device)
    rhs = torch.cat([k * (beta * seen)[..., None], v * beta[..., None]], dim=-1)
    sol = torch.linalg.solve_triangular(eye + a, rhs, upper=False, unitriangular=True)
    return sol.split([kd, v.shape[-1]], dim=-1)


def gdn_recurrent(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
                  beta: torch.Tensor, scale: float, state: torch.Tensor | None = None,
                  resets: torch.Tensor | None = None):
    """Token-by-token gated delta rule (the decoding form): decay, then write
    ``β_t (v_t - S^T k_t)`` along k_t, then read with q_t. Same arguments and results as
    :func:`gdn_chunked`."""
    out_dtype, dt = v.dtype, _compute_dtype(v)
    with torch.autocast(q.device.type, enabled=False):
        q, k, v, g, beta = (x.to(dt) for x in (q, k, v, g, beta))
        b, h, t, kd = q.shape
        s = q.new_zeros(b, h, kd, v.shape[-1]) if state is None else state.to(dt)
        keep = _keep_state(resets, b, t, dt, q.device)  # [B, T, 1, 1, 1]
        outs = []
        for i in range(t):
            s = keep[:, i] * g[:, :, i, None, None].exp() * s  # [B, H, K, V]
            ki = k[:, :, i]  # [B, H, K]
            old = (ki[..., None, :] @ s).squeeze(-2)  # [B, H, V] what the state holds at k_t
            u = beta[:, :, i, None] * (v[:, :, i] - old)
            s = s + ki[..., :, None] * u[..., None, :]
            outs.append((q[:, :, i, None, :] @ s).squeeze(-2) * scale)
        o = torch.stack(outs, dim=2)
    return o.to(out_dtype), s


def _keep_state(resets: torch.Tensor | None, b: int, t: int, dtype, device) -> torch.Tensor:
    """1 where the previous state carries on, 0 where a segment starts: [B, T, 1, 1, 1]."""
    if resets is None:
        return torch.ones(b, t, 1, 1, 1, dtype=dtype, device=device)
    return (~resets).to(dtype)[:, :, None, None, None]


def resets_from_segments(segments: torch.Tensor | None) -> torch.Tensor | None:
    """[B, T] segment ids -> [B, T] bool, True where a token starts a new segment (the first
    token of a row needs no reset: the state starts empty)."""
    if segments is None:
        return None
    resets = torch.zeros_like(segments, dtype=torch.bool)
    resets[:, 1:] = segments[:, 1:] != segments[:, :-1]
    return resets


def silu_gate_norm(y: torch.Tensor, gate: torch.Tensor, weight: torch.Tensor, eps: float,
                   gate_first: bool) -> torch.Tensor:
    """RMSNorm over the last axis combined with a SiLU gate: ``norm(y · silu(gate))`` (Mamba2's
    gated norm, ``gate_first``) or ``norm(y) · silu(gate)`` (GLA's output gate). The weight
    takes the input's dtype, which keeps PyTorch's fused kernel under bf16 autocast (as in
    :mod:`playground.layers.norms`)."""
    x = y * F.silu(gate) if gate_first else y
    out = F.rms_norm(x, (x.shape[-1],), weight.to(x.dtype), eps)
    return out if gate_first else out * F.silu(gate)
