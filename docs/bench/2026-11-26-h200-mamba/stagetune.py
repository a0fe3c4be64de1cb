"""Time every Canon backward kernel over BWD_STAGES (software pipelining of the strip loop), with
the chunk height and warps it may want with it; JSON lines. Written on
2026-11-25; run in a first hold on 2026-11-26 (stagetune.jsonl).

Run from the repository root on a GPU: python3 docs/bench/2026-11-26-h200-mamba/stagetune.py > stagetune.jsonl
Shapes: the mini recipe (64 × 512) and 12L768D at 16 × 2048: the plain kernel at Canon-A/C, B and
D's widths, Canon-D + SwiGLU, Canon-B + full RoPE, and Mamba2's short conv (bias, no residual).
Default Canon layer: no bias, no activation, residual; bf16 activations, fp32 taps (as in a model).
triton.testing.do_bench (CUDA events, median), µs, with the memory floor at the device's bandwidth.
"""
import itertools
import json

import torch
from triton.testing import do_bench

from playground.kernels import canon_triton as ct

NAMES = ("BWD_STAGES", "FUSED_BWD_STAGES", "BWD_BLOCK_T", "BWD_WARPS", "BWD_MIN_STRIP")
saved = {k: getattr(ct, k) for k in NAMES}
SHAPES = {"mini": (64, 512, 512), "12L768D": (16, 2048, 768)}
GRID = list(itertools.product((1, 2, 3, 4), (8, 16), (4, 8)))  # stages, chunk rows, warps
BANDWIDTH = 4.8e12 if "H200" in torch.cuda.get_device_name() else 3.35e12


def timed(fn) -> float:
    return round(1e3 * do_bench(fn, warmup=10, rep=40), 1)


gen = torch.Generator(device="cuda").manual_seed(0)
for name, (b, t, d) in SHAPES.items():
    heads, ff2 = d // 64, 2 * 64 * round(8 * d / 3 / 64)
    ang = torch.arange(t, device="cuda", dtype=torch.float32)[:, None] * torch.rand(32, device="cuda", generator=gen)
    cos, sin = ang.cos(), ang.sin()
    # Mamba2's short conv (x, B, C of 2d + 2·64 channels; bias, no residual, SiLU after it, apart)
    c = 2 * d + 128
    u = torch.randn(b, t, c, device="cuda", dtype=torch.bfloat16, generator=gen)
    w, bias = torch.randn(c, 4, device="cuda", generator=gen), torch.randn(c, device="cuda", generator=gen)
    cases = [(f"shortconv_{c}", 3 * u.numel(),
              lambda u=u, w=w, bias=bias, g=torch.randn_like(u): ct.canon_conv_bwd(g, u, w, bias, False, False))]
    for c in (d, 3 * d, ff2):
        u = torch.randn(b, t, c, device="cuda", dtype=torch.bfloat16, generator=gen)
        w = torch.randn(c, 4, device="cuda", generator=gen)  # fp32, as the layer's parameter
        g = torch.randn_like(u)
        cases.append((f"plain_{c}", 3 * u.numel(), lambda u=u, w=w, g=g: ct.canon_conv_bwd(g, u, w, None, False, True)))
        if c == 3 * d:
            go = torch.randn(3, b, heads, t, 64, device="cuda", dtype=torch.bfloat16, generator=gen)
            cases.append((f"rope_{c}", 3 * u.numel(), lambda u=u, w=w, go=go: ct.canon_rope_bwd(
                go, u, w, None, cos, sin, False, True, heads, heads)))
        if c == ff2:
            gh = torch.randn(b, t, c // 2, device="cuda", dtype=torch.bfloat16, generator=gen)
            cases.append((f"glu_{c}", 2.5 * u.numel(), lambda u=u, w=w, gh=gh: ct.canon_glu_bwd(gh, u, w, None, False, True)))
    for kind, elems, fn in cases:
        floor = round(2 * elems / BANDWIDTH * 1e6, 1)
        for stages, rows, warps in GRID:
            ct.BWD_BLOCK_T, ct.BWD_WARPS, ct.BWD_MIN_STRIP = rows, warps, 4 * rows
            ct.BWD_STAGES = ct.FUSED_BWD_STAGES = stages  # one constant for all three when it ran
            try:
                us = timed(fn)
            except Exception as e:  # a launch that does not fit (shared memory): say so, go on
                us = f"failed: {type(e).__name__}: {str(e)[:120]}"
            print(json.dumps({"shape": name, "kernel": kind, "stages": stages, "block_t": rows, "warps": warps,
                              "us": us, "floor_us": floor}), flush=True)
        for k, v in saved.items():
            setattr(ct, k, v)
