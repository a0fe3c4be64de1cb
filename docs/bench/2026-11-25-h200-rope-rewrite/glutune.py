"""Time the Canon-D + SwiGLU kernels against the plain Canon kernel on the same input, forward and
backward, at their default tiles and over their tile constants; JSON lines.

Run from the repository root on a GPU: python3 docs/bench/2026-11-25-h200-rope-rewrite/glutune.py > glutune.jsonl
Shapes: the mini recipe (64 × 512, 2·ff = 2,688) and 12L768D at 16 × 2048 (2·ff = 4,096). Default
Canon layer: no bias, no activation, residual. triton.testing.do_bench (CUDA events, median), µs.
"""
import itertools
import json

import torch
from triton.testing import do_bench

from playground.kernels import canon_triton as ct

NAMES = ("BLOCK_T", "FWD_WARPS", "GLU_BLOCK_C", "BWD_BLOCK_T", "BWD_WARPS", "BWD_PROGRAMS_PER_SM", "BWD_MIN_STRIP")
saved = {k: getattr(ct, k) for k in NAMES}
SHAPES = {"mini": (64, 512, 2688), "12L768D": (16, 2048, 4096)}
FWD = list(itertools.product((16, 32, 64), (2, 4, 8), (32, 64, 128)))
BWD = list(itertools.product((4, 8, 16), (2, 4), (1, 2), (32, 64, 128)))


def timed(fn) -> float:
    return round(1e3 * do_bench(fn, warmup=10, rep=40), 1)


def restore():
    for k, v in saved.items():
        setattr(ct, k, v)


gen = torch.Generator(device="cuda").manual_seed(0)
for name, (b, t, c) in SHAPES.items():
    u = torch.randn(b, t, c, device="cuda", dtype=torch.bfloat16, generator=gen)
    w = torch.randn(c, 4, device="cuda", dtype=torch.bfloat16, generator=gen)
    gu = torch.randn_like(u)
    g = torch.randn(b, t, c // 2, device="cuda", dtype=torch.bfloat16, generator=gen)
    fwd = lambda: ct.canon_glu(u, w, None, False, True)  # noqa: E731
    bwd = lambda: ct.canon_glu_bwd(g, u, w, None, False, True)  # noqa: E731
    base = {"shape": name, "channels": c, "plain_fwd_us": timed(lambda: ct.canon_conv(u, w, None, False, True)),
            "plain_bwd_us": timed(lambda: ct.canon_conv_bwd(gu, u, w, None, False, True)),
            "default_fwd_us": timed(fwd), "default_bwd_us": timed(bwd)}
    print(json.dumps(base), flush=True)
    for bt, warps, bc in FWD:
        ct.BLOCK_T, ct.FWD_WARPS, ct.GLU_BLOCK_C = bt, warps, bc
        print(json.dumps({**base, "pass": "fwd", "block_t": bt, "warps": warps, "block_c": bc, "us": timed(fwd)}),
              flush=True)
    restore()
    for bt, warps, per_sm, bc in BWD:
        ct.BWD_BLOCK_T, ct.BWD_WARPS, ct.BWD_PROGRAMS_PER_SM, ct.BWD_MIN_STRIP = bt, warps, per_sm, 4 * bt
        ct.GLU_BLOCK_C = bc
        print(json.dumps({**base, "pass": "bwd", "block_t": bt, "warps": warps, "per_sm": per_sm, "block_c": bc,
                          "us": timed(bwd)}), flush=True)
    restore()
