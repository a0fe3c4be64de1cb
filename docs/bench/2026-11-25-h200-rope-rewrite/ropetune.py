"""Time the rewritten Canon-B + q/k/v split + RoPE kernels against the plain Canon kernel on the
same input, forward and backward, at their default tiles and over their tile constants; JSON lines.

Run from the repository root on a GPU: python3 docs/bench/2026-11-25-h200-rope-rewrite/ropetune.py > ropetune.jsonl
Shapes: the mini recipe (64 × 512, d = 512, 8 heads of 64) and 12L768D at 16 × 2048 (d = 768,
12 heads); full RoPE (64 dims on every q and k head) and RoPE¼ (16 dims). Default Canon layer:
no bias, no activation, residual. triton.testing.do_bench (CUDA events, median), µs.
"""
import json

import torch
from triton.testing import do_bench

from playground.kernels import canon_triton as ct

NAMES = ("ROPE_BLOCK_T", "FWD_WARPS", "BWD_BLOCK_T", "BWD_WARPS", "BWD_PROGRAMS_PER_SM", "BWD_MIN_STRIP")
saved = {k: getattr(ct, k) for k in NAMES}
SHAPES = {"mini": (64, 512, 512), "12L768D": (16, 2048, 768)}
FWD = [(bt, w) for bt in (16, 32, 64) for w in (2, 4, 8)]
BWD = [(bt, w, per_sm) for bt in (4, 8, 16) for w in (2, 4) for per_sm in (1, 2)]


def timed(fn) -> float:
    return round(1e3 * do_bench(fn, warmup=10, rep=50), 1)


def restore():
    for k, v in saved.items():
        setattr(ct, k, v)


gen = torch.Generator(device="cuda").manual_seed(0)
for name, (b, t, d) in SHAPES.items():
    heads, c = d // 64, 3 * d
    u = torch.randn(b, t, c, device="cuda", dtype=torch.bfloat16, generator=gen)
    w = torch.randn(c, 4, device="cuda", dtype=torch.bfloat16, generator=gen)
    gu = torch.randn_like(u)
    plain = {"plain_fwd_us": timed(lambda: ct.canon_conv(u, w, None, False, True)),
             "plain_bwd_us": timed(lambda: ct.canon_conv_bwd(gu, u, w, None, False, True))}
    for rot in (64, 16):
        ang = torch.arange(t, device="cuda", dtype=torch.float32)[:, None] * torch.rand(rot // 2, device="cuda",
                                                                                          generator=gen)
        cos, sin = ang.cos(), ang.sin()
        g = torch.randn(3, b, heads, t, 64, device="cuda", dtype=torch.bfloat16, generator=gen)
        fwd = lambda: ct.canon_rope(u, w, None, cos, sin, False, True, heads, heads)  # noqa: E731
        bwd = lambda: ct.canon_rope_bwd(g, u, w, None, cos, sin, False, True, heads, heads)  # noqa: E731
        base = {"shape": name, "rot": rot, "channels": c, **plain, "default_fwd_us": timed(fwd),
                "default_bwd_us": timed(bwd), "floor_fwd_us": round(2 * u.numel() * 2 / 3.35e12 * 1e6, 1)}
        print(json.dumps(base), flush=True)
        for bt, warps in FWD:
            ct.ROPE_BLOCK_T, ct.FWD_WARPS = bt, warps
            print(json.dumps({**base, "pass": "fwd", "block_t": bt, "warps": warps, "us": timed(fwd)}), flush=True)
        restore()
        for bt, warps, per_sm in BWD:
            ct.BWD_BLOCK_T, ct.BWD_WARPS, ct.BWD_PROGRAMS_PER_SM, ct.BWD_MIN_STRIP = bt, warps, per_sm, 4 * bt
            print(json.dumps({**base, "pass": "bwd", "block_t": bt, "warps": warps, "per_sm": per_sm,
                              "us": timed(bwd)}), flush=True)
        restore()
