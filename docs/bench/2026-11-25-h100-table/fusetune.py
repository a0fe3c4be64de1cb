"""Time the fused Canon kernels (Canon-B + q/k/v split + RoPE, Canon-D + SwiGLU) against the plain
Canon kernel on the same input, forward and backward, and over their tile constants; JSON lines.

Run from the repository root on a GPU: python3 docs/bench/2026-11-25-h100-table/fusetune.py > fusetune.jsonl
Shapes: the mini recipe (64 × 512, d = 512, 8 heads of 64, 2·ff = 2,688) and 12L768D at 16 × 2048
(d = 768, 12 heads, 2·ff = 4,096). Default Canon layer: no bias, no activation, residual; full
RoPE (64 dims) on every q and k head. triton.testing.do_bench (CUDA events, median).
"""
import itertools
import json

import torch
from triton.testing import do_bench

from playground.kernels import canon_triton as ct

NAMES = ("BLOCK_T", "FWD_WARPS", "GLU_BLOCK_C", "BWD_BLOCK_T", "BWD_WARPS", "BWD_PROGRAMS_PER_SM", "BWD_MIN_STRIP")
saved = {k: getattr(ct, k) for k in NAMES}
SHAPES = {"mini": (64, 512, 512), "12L768D": (16, 2048, 768)}
FWD = [(bt, w) for bt in (8, 16, 32, 64) for w in (2, 4, 8)]
BWD = [(bt, w, per_sm) for bt in (4, 8, 16) for w in (2, 4, 8) for per_sm in (1, 2)]


def timed(fn) -> float:
    return round(1e3 * do_bench(fn, warmup=10, rep=50), 1)


def restore():
    for k, v in saved.items():
        setattr(ct, k, v)


gen = torch.Generator(device="cuda").manual_seed(0)
for name, (b, t, d) in SHAPES.items():
    heads, ff2 = d // 64, 2 * max(64, 64 * round(8 * d / 3 / 64))
    ang = torch.arange(t, device="cuda", dtype=torch.float32)[:, None] * torch.rand(32, device="cuda", generator=gen)
    cos, sin = ang.cos(), ang.sin()
    for kind, c in (("rope", 3 * d), ("glu", ff2), ("plain_d", d)):
        u = torch.randn(b, t, c, device="cuda", dtype=torch.bfloat16, generator=gen)
        w = torch.randn(c, 4, device="cuda", dtype=torch.bfloat16, generator=gen)
        if kind == "rope":
            out = ct.canon_rope(u, w, None, cos, sin, False, True, heads, heads)
            g = torch.randn_like(out)
            fwd = lambda: ct.canon_rope(u, w, None, cos, sin, False, True, heads, heads)  # noqa: E731
            bwd = lambda: ct.canon_rope_bwd(g, u, w, None, cos, sin, False, True, heads, heads)  # noqa: E731
        elif kind == "glu":
            g = torch.randn(b, t, c // 2, device="cuda", dtype=torch.bfloat16, generator=gen)
            fwd = lambda: ct.canon_glu(u, w, None, False, True)  # noqa: E731
            bwd = lambda: ct.canon_glu_bwd(g, u, w, None, False, True)  # noqa: E731
        else:
            g = torch.randn_like(u)
            fwd = lambda: ct.canon_conv(u, w, None, False, True)  # noqa: E731
            bwd = lambda: ct.canon_conv_bwd(g, u, w, None, False, True)  # noqa: E731
        gu = torch.randn_like(u)
        plain = {"plain_fwd_us": timed(lambda: ct.canon_conv(u, w, None, False, True)),
                 "plain_bwd_us": timed(lambda: ct.canon_conv_bwd(gu, u, w, None, False, True))}
        base = {"shape": name, "kind": kind, "channels": c, **plain,
                "default_fwd_us": timed(fwd), "default_bwd_us": timed(bwd),
                "floor_fwd_us": round((u.numel() + g.numel()) * 2 / 3.35e12 * 1e6, 1)}
        print(json.dumps(base), flush=True)
        if kind == "plain_d":
            continue
        for bt, warps in FWD:
            ct.BLOCK_T, ct.FWD_WARPS = bt, warps
            for bc in ((32, 64, 128) if kind == "glu" else (None,)):
                if bc:
                    ct.GLU_BLOCK_C = bc
                print(json.dumps({**base, "pass": "fwd", "block_t": bt, "warps": warps, "block_c": bc,
                                  "us": timed(fwd)}), flush=True)
        restore()
        for (bt, warps, per_sm), bc in itertools.product(BWD, (32, 64, 128) if kind == "glu" else (None,)):
            ct.BWD_BLOCK_T, ct.BWD_WARPS, ct.BWD_PROGRAMS_PER_SM, ct.BWD_MIN_STRIP = bt, warps, per_sm, 4 * bt
            if bc:
                ct.GLU_BLOCK_C = bc
            print(json.dumps({**base, "pass": "bwd", "block_t": bt, "warps": warps, "per_sm": per_sm,
                              "block_c": bc, "us": timed(bwd)}), flush=True)
        restore()
